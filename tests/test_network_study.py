"""The fat-tree paper's network study on the flow model (fattorus.app.network_study)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fattorus import topology
from fattorus.app import network_study as ns

ROOT = Path(__file__).resolve().parents[1]


def test_ta_packing_is_disjoint_in_range_and_leaves_no_room():
    ft = topology.load("ft6x6")
    allocs = ns.pack(ft, 4, 20, np.random.default_rng(0))
    nodes = np.concatenate(allocs)
    assert len(nodes) == len(set(nodes.tolist())) and all(4 <= len(a) <= 20 for a in allocs)
    assert len(nodes) > ft.n_nodes // 2  # packed until ta turned down 20 draws in a row


def test_rows_follow_the_run_time_formula(ft6x6):
    for c in (1.0, 0.3):
        rows = pl.DataFrame(ns.workload_rows(ft6x6, "t", 0, 4, 30, c, seed=1))
        ratio = rows["step_to"] / rows["step_ta"]
        expect = ratio if c == 1.0 else (1 - c) + c * ratio  # compute = (1 - c) / c of the ta step
        assert np.allclose(rows["speedup"], expect)
        assert set(rows["pattern"]) <= set(ns.LABELS.values())


def _cli(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fattorus.app.network_study", *args], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("args, words", [
    (["--sizes", "abc"], "--sizes"),
    (["--sizes", "10,5"], "min <= max"),
    (["--machine", "ft6", "--sizes", "4,100"], "do not fit"),
    (["--machine", "ft6", "--sizes", "2,4", "--name", "../x"], "--name"),
    (["--machine", "ft6", "--sizes", "2,4", "--seed", "-1"], "--seed"),
    (["--machine", "torus4", "--sizes", "2,4"], "does not support"),
    (["--paper", "--machine", "ft6"], "drop --machine"),
])
def test_mistakes_are_one_line(tmp_path, args, words):
    out = _cli(tmp_path, *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_an_unwritable_results_directory_is_one_line(tmp_path):
    (tmp_path / "results").write_text("")  # a file where the directory should be
    out = _cli(tmp_path, "--machine", "ft6", "--sizes", "2,4", "--workloads", "1", "--name", "ro")
    assert out.returncode == 1 and "cannot write" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 2  # the progress line and the error


def test_a_small_study_writes_its_tables_under_results(tmp_path):
    out = _cli(tmp_path, "--machine", "ft6x6", "--sizes", "4,30", "--workloads", "2", "--name", "small")
    assert out.returncode == 0, out.stderr[-2000:]
    base = tmp_path / "results" / "network_study" / "small"
    jobs = pl.read_parquet(base / "jobs.parquet")
    summary = json.loads((base / "summary.json").read_text())
    assert set(jobs["workload"]) == {0, 1}
    overall = summary["cases"]["ft6x6_4-30"]["all"]
    assert overall["jobs"] == len(jobs) and overall["mean"] == pytest.approx(jobs["speedup"].mean())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


@pytest.mark.parametrize("args, given", [
    (["--paper", "--workloads", "1", "--comm-fraction", "0.5"], "drop --workloads and --comm-fraction"),
    (["--paper", "--sizes", ns.DEFAULT_SIZES], "drop --sizes"),  # given, even if it equals the default
    (["--paper", "--comm-fraction", "1"], "drop --comm-fraction"),
])
def test_paper_refuses_the_case_options_it_would_ignore(args, given):
    with pytest.raises(ValueError, match=given):
        ns.cases(ns.parse_args(args))


def test_paper_with_case_options_is_one_line_before_any_work(tmp_path):
    out = _cli(tmp_path, "--paper", "--workloads", "1", "--comm-fraction", "0.5")
    assert out.returncode == 2 and "drop --workloads and --comm-fraction" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_the_case_options_keep_their_defaults_without_paper():
    assert ns.cases(ns.parse_args(["--machine", "ft6x6"])) == [("ft6x6_512-4096", "ft6x6", 512, 4096, 15, 1.0)]


def test_a_folder_with_results_of_other_settings_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "1", "--name", "s"]
    assert ns.main(small) == 0
    base = tmp_path / "results" / "network_study" / "s"
    before = {p.name: p.read_bytes() for p in base.iterdir()}
    capsys.readouterr()
    for other, words in ((["--seed", "1"], "seed: 0 there, 1 now"), (["--oblivious", "to_random"], "oblivious"),
                         (["--workloads", "2"], "2 workloads")):
        assert ns.main([*small, *other]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("network_study: error:") and words in err[0] and "--name" in err[0]
        assert {p.name: p.read_bytes() for p in base.iterdir()} == before  # the earlier results are intact
    assert ns.main(small) == 0  # the same settings again: same results, rewritten
    assert json.loads((base / "summary.json").read_text())["runs"][0]["workloads"] == 1


def test_results_written_before_settings_were_recorded_are_compared_on_what_they_hold(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "results" / "network_study" / "s"
    base.mkdir(parents=True)
    legacy = {"seed": 0, "oblivious": "to", "cases": {"ft6x6_4-30": {"all": {"jobs": 1, "mean": 1.0, "max": 1.0}}}}
    (base / "summary.json").write_text(json.dumps(legacy))
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "1", "--name", "s"]
    assert ns.main([*small, "--seed", "2"]) == 2 and "seed: 0 there, 2 now" in capsys.readouterr().err
    assert ns.main([*small[:3], "4,20", *small[4:]]) == 2 and "cases:" in capsys.readouterr().err
    assert json.loads((base / "summary.json").read_text()) == legacy
    assert ns.main(small) == 0 and "runs" in json.loads((base / "summary.json").read_text())
