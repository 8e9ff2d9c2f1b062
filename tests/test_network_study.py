"""The fat-tree paper's network study on the flow model (fattorus.app.network_study)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import forkcli
from fattorus import provenance, topology
from fattorus.app import network_study as ns

REPO = Path(__file__).resolve().parents[1]


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
        # Interference-only: the same formula with the time alone in the oblivious placement.
        compute = rows["step_ta"] * (1 - c) / c
        assert np.allclose(rows["interference"], (compute + rows["step_to"]) / (compute + rows["step_to_alone"]))
        assert (rows["step_to_alone"] > 0).all()


def test_a_job_alone_on_the_machine_meets_no_interference(ft6x6, on_cpu):
    """Jobs of 32 nodes on the 54-node ft6x6: the second never fits, so the workload is one job.
    Together is then alone in the same placement, whatever its routes: interference exactly 1
    (on the CPU device, conftest.on_cpu: a GPU's atomic sums may round the two solves apart)."""
    rows = pl.DataFrame(ns.workload_rows(ft6x6, "t", 0, 32, 32, 1.0, seed=1))
    assert rows.height == 1
    assert rows["step_to_alone"][0] == rows["step_to"][0] and rows["interference"][0] == 1.0


def test_fluid_steps_on_a_small_study(ft6x6, tmp_path, monkeypatch, on_cpu):
    """``--completion fluid``: recorded with the results; a job alone still meets no
    interference (exactly, on the CPU device, conftest.on_cpu: on an H200 the two drains' atomic
    sums rounded it to 0.9999999999999998); the same jobs and placements as the steady study,
    other step times."""
    rows = pl.DataFrame(ns.workload_rows(ft6x6, "t", 0, 32, 32, 1.0, seed=1, completion="fluid"))
    assert rows.height == 1 and rows["interference"][0] == 1.0
    monkeypatch.chdir(tmp_path)
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "1"]
    assert ns.main([*small, "--name", "steady"]) == 0 and ns.main([*small, "--completion", "fluid", "--name", "fluid"]) == 0
    base = tmp_path / "results" / "network_study"
    assert json.loads((base / "fluid" / "summary.json").read_text())["completion"] == "fluid"
    steady, fluid = (pl.read_parquet(base / name / "jobs.parquet") for name in ("steady", "fluid"))
    assert steady.select("nodes", "pattern", "aph_ta", "aph_to").equals(fluid.select("nodes", "pattern", "aph_ta", "aph_to"))
    assert not np.allclose(steady["step_to"], fluid["step_to"])
    # A finished study of the other completion is refused; one from before completions were
    # recorded (no key) holds steady steps.
    assert ns.main([*small, "--name", "fluid"]) == 2
    old = json.loads((base / "steady" / "summary.json").read_text())
    del old["completion"]
    (base / "steady" / "summary.json").write_text(json.dumps(old))
    assert ns.main([*small, "--completion", "fluid", "--name", "steady"]) == 2


def test_each_case_keeps_its_own_workloads(tmp_path, monkeypatch):
    # Two cases of one workload each on ft6x6 (as --paper runs its four): each draws its own
    # jobs, in its own size range.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ns, "PAPER_CASES", (("a", "ft6x6", 4, 12, 1, 1.0, 2), ("b", "ft6x6", 16, 30, 1, 1.0, 2)))
    assert ns.main(["--paper", "--name", "two"]) == 0
    jobs = pl.read_parquet(tmp_path / "results" / "network_study" / "two" / "jobs.parquet")
    assert jobs["case"].unique().sort().to_list() == ["a", "b"]
    for case, lo, hi in (("a", 4, 12), ("b", 16, 30)):
        nodes = jobs.filter(pl.col("case") == case)["nodes"]
        assert nodes.min() >= lo and nodes.max() <= hi


def test_an_interrupted_study_resumes_after_its_last_finished_workload(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "2"]
    assert ns.main([*small, "--name", "whole"]) == 0
    real, calls = ns.workload_rows, []

    def interrupted_at_the_second(*args, **kwargs):
        calls.append(args[2])  # the workload
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(ns, "workload_rows", interrupted_at_the_second)
    capsys.readouterr()
    assert ns.main([*small, "--name", "cut"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fattorus.app.network_study: interrupted; 1 of 2 workloads kept") and "re-run" in err[-1]
    base = tmp_path / "results" / "network_study"
    assert not (base / "cut" / "jobs.parquet").exists()
    # Other settings may not finish it (its first workload was drawn with seed 0 ...) ...
    for other, key in ((["--seed", "1"], "seed:"), (["--completion", "fluid"], "completion:"),
                       (["--churn", "0"], "churn:"), (["--oblivious", "to_random"], "oblivious:"),
                       (["--comm-fraction", "0.3"], "runs:"), (["--workloads", "3"], "runs:"),
                       (["--a2a-dims", "3"], "a2a dims 3)] now")):  # it read the same on both sides
        assert ns.main([*small, "--name", "cut", *other]) == 2, other
        err = capsys.readouterr().err
        assert "unfinished study" in err and key in err, (other, err)
    # ... the same command does, drawing only the workload that was cut (a damaged file in its
    # place, say copied half, is reported and drawn again).
    (base / "cut" / "workloads" / "ft6x6_4-30_w1.parquet").write_bytes(b"PAR1 half a file")
    # Kept parts made by other code are kept, and named (the settings record the source).
    settings = base / "cut" / "workloads" / "settings.json"
    record = json.loads(settings.read_text())
    assert record["fattorus"] == provenance.stamp()
    settings.write_text(json.dumps({**record, "fattorus": {"version": "0.0.1", "source": "000000000000"}}))
    calls.clear()
    monkeypatch.setattr(ns, "workload_rows", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    assert ns.main([*small, "--name", "cut"]) == 0
    err = capsys.readouterr().err
    assert calls == [1] and "kept from an earlier run" in err and "w1.parquet cannot be read" in err
    assert "its kept parts were made by another fattorus source (000000000000" in err, err
    assert pl.read_parquet(base / "cut" / "jobs.parquet").equals(pl.read_parquet(base / "whole" / "jobs.parquet"))
    assert sorted(p.name for p in (base / "cut").iterdir()) == ["jobs.parquet", "summary.json"]


def _cli(tmp_path, *args):
    env = dict(os.environ)  # PYTHONPATH: the checkout first (tests/conftest.py)
    return forkcli.run("fattorus.app.network_study", args, cwd=tmp_path, env=env, timeout=600)


@pytest.mark.parametrize("args, words", [
    (["--sizes", "abc"], "--sizes"),
    (["--sizes", "10,5"], "min <= max"),
    (["--machine", "ft6", "--sizes", "4,100"], "do not fit"),
    (["--machine", "ft6", "--sizes", "2,4", "--name", "../x"], "--name"),
    # '...' holds only allowed characters: the message states the leading-dot rule too
    (["--machine", "ft6", "--sizes", "2,4", "--name", "..."], "'...': letters, digits, '.', '_' and '-' only, "
                                                              "not starting with '.'"),
    (["--machine", "ft6", "--sizes", "2,4", "--seed", "-1"], "--seed"),
    (["--machine", "torus4", "--sizes", "2,4"], "fat-trees only"),
    (["--paper", "--machine", "ft6"], "drop --machine"),
    (["--machine", "ft6", "--sizes", "5,5"], "near-cubic"),
    (["--machine", "ft6", "--sizes", "2,4", "--churn", "-1"], "--churn"),
    (["--paper", "--a2a-dims", "3"], "drop --a2a-dims"),
])
def test_mistakes_are_one_line(tmp_path, args, words):
    out = _cli(tmp_path, *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


HUGE = str(10**23)  # --churn of it ran silently for ever; --sizes up to it never ended factorising sizes


@pytest.mark.parametrize("args, words", [
    (["--churn", HUGE], f"--churn must be from 0 to 1,000, got {HUGE}"),
    (["--churn", "1001"], "--churn must be from 0 to 1,000, got 1001"),
    (["--workloads", HUGE], f"--workloads {HUGE}: need 1 to 10,000"),
    (["--workloads", "10001"], "--workloads 10001: need 1 to 10,000"),
    (["--seed", HUGE], f"--seed must be from 0 to 4294967295, got {HUGE}"),
    (["--seed", str(2**32)], "--seed must be from 0 to 4294967295"),
    (["--sizes", f"1,{HUGE}"], f"jobs of up to {HUGE} nodes do not fit ft6"),
    (["--comm-fraction", "nan"], "--comm-fraction nan: must be in (0, 1]"),
    (["--comm-fraction", "inf"], "--comm-fraction inf: must be in (0, 1]"),
    # A value that starts with a minus reaches the option's own check (argparse said "expected
    # one argument" for anything but a plain negative number; session 43).
    (["--sizes", "-1,4"], "--sizes '-1,4': need 1 <= min <= max"),
    (["--comm-fraction", "-1e-3"], "--comm-fraction -0.001: must be in (0, 1]"),
])
def test_counts_past_what_a_study_can_want_are_one_line_before_any_work(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    assert ns.main(["--machine", "ft6", "--sizes", "2,4", "--workloads", "1", *args]) == 2  # the last given counts
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fattorus.app.network_study: error:") and words in lines[0], err
    assert "Traceback" not in err and not any(tmp_path.iterdir())


def test_the_largest_counts_allowed_pass_the_checks(tmp_path, monkeypatch):
    """At the caps the checks let the study through (stopped at its first workload)."""
    monkeypatch.chdir(tmp_path)

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(ns, "workload_rows", stop)
    assert ns.main(["--machine", "ft6", "--sizes", "2,4", "--workloads", str(ns.WORKLOADS_MAX),
                    "--churn", str(ns.CHURN_MAX), "--seed", str(2**32 - 1)]) == 130


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


def test_a_machine_given_as_a_yaml_path_writes_only_under_results(tmp_path):
    """``--machine conf/topo/ft6.yaml``: the case was named after the path, so each workload's
    part file went beside the YAML (``ft6.yaml_2-4_w0.parquet``), outside the results (a
    session-46 exploratory run). The case takes the file's stem; the YAML's folder is left as
    it was."""
    mine = tmp_path / "machines" / "my_ft6.yaml"
    mine.parent.mkdir()
    mine.write_text((REPO / "conf" / "topo" / "ft6.yaml").read_text())
    out = _cli(tmp_path, "--machine", str(mine), "--sizes", "2,4", "--workloads", "1", "--name", "yaml")
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(p.name for p in mine.parent.iterdir()) == ["my_ft6.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["machines", "results"]
    summary = json.loads((tmp_path / "results" / "network_study" / "yaml" / "summary.json").read_text())
    assert list(summary["cases"]) == ["my_ft6_2-4"]


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
    assert ns.cases(ns.parse_args(["--machine", "ft6x6"])) == [("ft6x6_512-4096", "ft6x6", 512, 4096, 15, 1.0, 2)]


def test_job_sizes_are_near_cubic_and_log_uniform():
    # By hand for 4-20: 5, 7, 11, 13, 17, 19 are primes (one long grid line); 10 = 5 x 2 x 1
    # (5 > 2 * 10^(1/3) = 4.31), 14 = 7 x 2 x 1, 15 = 5 x 3 x 1 (5 > 4.93); 20's 4D grid is
    # 5 x 2 x 2 x 1 (5 > 2 * 20^(1/4) = 4.23). The rest have near-cubic 3D and 4D grids.
    sizes, prob = ns.job_sizes(4, 20)
    assert sizes.tolist() == [4, 6, 8, 9, 12, 16, 18]
    # A log-uniform draw over [4, 20] rounded in log scale: cells cut at geometric means.
    cuts = [4, 24 ** 0.5, 48 ** 0.5, 72 ** 0.5, 108 ** 0.5, 192 ** 0.5, 288 ** 0.5, 20]
    assert np.allclose(prob, [np.log(b / a) / np.log(5) for a, b in zip(cuts, cuts[1:])])
    assert len(ns.job_sizes(5, 5)[0]) == 0 and ns.job_sizes(8, 8)[1].tolist() == [1.0]


def test_churn_spreads_first_fit_and_keeps_the_jobs():
    """Without churn the oblivious placement is first fit on the empty machine (consecutive
    node ids in job order); on a machine in steady state every job keeps its size, no node is
    used twice, and the jobs touch far more leaves than the blocks of the empty machine."""
    cab = topology.load("cab")
    sizes = [len(a) for a in ns.pack(cab, 4, 128, np.random.default_rng(3))]
    plain = ns.oblivious(cab, sizes, "to", seed=1, churn=0)
    assert np.array_equal(np.concatenate(plain), np.arange(sum(sizes)))
    churned = ns.oblivious(cab, sizes, "to", seed=1, churn=5, pool=ns.job_sizes(4, 128))
    nodes = np.concatenate(churned)
    assert [len(a) for a in churned] == sizes and len(np.unique(nodes)) == len(nodes)

    def leaves(allocs):
        return sum(len(np.unique(np.asarray(a) // cab.nodes_per_leaf)) for a in allocs)

    assert leaves(churned) > 1.5 * leaves(plain)
    again = ns.oblivious(cab, sizes, "to", seed=1, churn=5, pool=ns.job_sizes(4, 128))
    assert all(np.array_equal(a, b) for a, b in zip(churned, again))  # seeded


def test_a_folder_with_results_of_other_settings_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "1", "--name", "s"]
    assert ns.main(small) == 0
    base = tmp_path / "results" / "network_study" / "s"
    before = {p.name: p.read_bytes() for p in base.iterdir()}
    capsys.readouterr()
    for other, words in ((["--seed", "1"], "seed: 0 there, 1 now"), (["--oblivious", "to_random"], "oblivious"),
                         (["--workloads", "2"], "2 workloads"), (["--churn", "0"], "churn: 5 there, 0 now"),
                         (["--completion", "fluid"], "completion: 'steady' there, 'fluid' now")):
        assert ns.main([*small, *other]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("fattorus.app.network_study: error:") and words in err[0] and "--name" in err[0]
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
    # The same seed, policy and cases, but drawn before session 19's workload model (version 2:
    # other sizes, Sub-a2a and oblivious placements): refused too, the folder untouched.
    assert ns.main(small) == 2 and "workload_model: 1 there, 2 now" in capsys.readouterr().err
    assert json.loads((base / "summary.json").read_text()) == legacy


def test_a_finished_study_run_again_is_reported_not_redone(tmp_path, monkeypatch, capsys):
    """The same command on a finished study of the same settings prints its table again and
    draws no workload (it redid every one: ~70 minutes for a fluid ft44 study; session 27
    review); a damaged table runs it again."""
    monkeypatch.chdir(tmp_path)
    args = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "2", "--name", "again"]
    assert ns.main(args) == 0
    first = capsys.readouterr().out
    real = ns.workload_rows

    def no_work(*a, **k):
        raise AssertionError("a finished study was drawn again")

    monkeypatch.setattr(ns, "workload_rows", no_work)
    assert ns.main(args) == 0
    again = capsys.readouterr().out
    assert "finished earlier with these settings, nothing run" in again
    summary = tmp_path / "results" / "network_study" / "again" / "summary.json"
    assert json.loads(summary.read_text())["fattorus"] == provenance.stamp()
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "fattorus": {"source": "000000000000"}}))
    assert ns.main(args) == 0  # made by other code: reported with its source, not redone
    assert "finished earlier with these settings (made by another fattorus source (000000000000" in \
        capsys.readouterr().out
    assert again.split("\n-> ")[0] == first.split("\n-> ")[0]  # the same table, from the stored jobs
    (tmp_path / "results" / "network_study" / "again" / "jobs.parquet").write_text("damaged")
    monkeypatch.setattr(ns, "workload_rows", real)
    assert ns.main(args) == 0 and "finished earlier" not in capsys.readouterr().out


def _paper_columns(lines: list[str], case: str, pattern: str) -> tuple[str, str]:
    """The paper mean and max printed on ``case``'s ``pattern`` row ('' where none)."""
    header = lines[0]
    row = next(line for line in lines if line.split()[:2] == [case, pattern])
    start = header.index(" paper")
    return row[start:start + 7].strip(), row[start + 7:start + 14].strip()


def test_the_paper_s_figures_are_shown_only_beside_a_run_of_the_paper_s_settings():
    """Issue 14 audit: the figures were looked up by case name, ``{machine}_{lo}-{hi}``, whatever
    the communication share or Sub-a2a dimensions, so a 30 % run on Cab 4-128 was printed
    beside the paper's 100 % figures. They follow the settings now (the paper, Section V-B: Cab
    4-128, Sub-a2a along all three dimensions: mean 1.35 over all jobs; with 30 %
    communication mean 1.08 and max 1.31)."""
    summary = {"cab_4-128": {"Stencil": {"jobs": 3, "mean": 1.2, "max": 1.4, "interference": 1.1},
                             "all": {"jobs": 9, "mean": 1.1, "max": 1.5, "interference": 1.05}}}

    def run(c: float, dims: int) -> list[dict]:
        args = ["--machine", "cab", "--sizes", "4,128", "--comm-fraction", str(c), "--a2a-dims", str(dims)]
        return ns.settings(ns.parse_args(args), ns.cases(ns.parse_args(args)))["runs"]

    assert run(0.3, 3)[0]["case"] == "cab_4-128"  # the name says nothing of the share
    lines = ns.report(summary, run(0.3, 3))
    assert _paper_columns(lines, "cab_4-128", "all") == ("1.08", "1.31")
    assert _paper_columns(lines, "cab_4-128", "Stencil") == ("", "")  # the paper gives no 30 % figure per pattern
    lines = ns.report(summary, run(1.0, 3))
    assert _paper_columns(lines, "cab_4-128", "all") == ("1.35", "")
    assert _paper_columns(lines, "cab_4-128", "Stencil") == ("1.32", "")
    for c, dims in ((0.3, 2), (1.0, 2), (0.5, 3)):  # Sub-a2a along two dimensions, or another share: not the paper's
        lines = ns.report(summary, run(c, dims))
        assert _paper_columns(lines, "cab_4-128", "all") == ("", "") and "not one of the paper's cases" in lines[-1]
    assert ns.paper_case("cab", 4, 512, 1.0, 3) == "cab_4-512" and ns.paper_case("ft44", 512, 4096, 1.0, 2)
    assert ns.paper_case("ft44", 512, 4096, 1.0, 3) is None and ns.paper_case("pinot", 4, 128, 0.3, 3) is None


def test_a_study_prints_the_paper_s_figures_for_its_settings_only(tmp_path, monkeypatch, capsys):
    """End to end, in-process, on ft6x6 made a paper case: the run of its settings prints the
    paper's figures (and so does the same command on the finished study); the same sizes with
    another communication share print none."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ns, "PAPER_CASES", (("small_c30", "ft6x6", 4, 30, 1, 0.3, 3),))
    monkeypatch.setitem(ns.PAPER, "small_c30", {"all": (1.08, 1.31)})
    small = ["--machine", "ft6x6", "--sizes", "4,30", "--workloads", "1", "--a2a-dims", "3"]
    for again in (False, True):
        assert ns.main([*small, "--comm-fraction", "0.3", "--name", "c30"]) == 0
        lines = capsys.readouterr().out.splitlines()
        table = lines[lines.index(next(line for line in lines if line.startswith("case"))):]
        assert _paper_columns(table, "ft6x6_4-30", "all") == ("1.08", "1.31"), (again, table)
    assert ns.main([*small, "--comm-fraction", "1", "--name", "c100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert _paper_columns(lines, "ft6x6_4-30", "all") == ("", "")
