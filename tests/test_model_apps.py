"""``speedup=model`` with each job's pattern from its application (``app_patterns``,
``conf/speedup/model_apps.yaml``): the mapping takes effect, unmapped applications keep their
draw, pattern parameters reach the traffic, bad mappings are one line, and the run's tables
carry each job's application, pattern and slowdown."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import polars as pl
import pytest

import forkcli
from fattorus import paths, topology, workload
from fattorus.analysis import commtime
from fattorus.sched import replay
from fattorus.workload import waves

APPS = [{"name": "Lattice", "nodes": [16, 32], "time_limit_min": 30, "instances": 2},
        {"name": "FFT", "nodes": [64], "time_limit_min": 20},
        {"name": "Other", "nodes": [8, 24], "time_limit_min": 30, "instances": 2}]
MIX = {"stencil4d": 1.0, "random_pairs": 1.0, "subcomm_a2a": 1.0}


@pytest.fixture(scope="module")
def torus8():
    return topology.load("torus8")


@pytest.fixture(scope="module")
def table():
    wl = waves.generate({"seed": 3, "n_waves": 3, "wave_interval_s": 600, "apps": APPS})
    return workload.with_estimate(wl.jobs)


def _run(topo, table, mix, app_patterns=None):
    model = commtime.ModelRuntimes(topo, mix, 0.5, 0, app_patterns=app_patterns)
    return replay.replay(table, topo, "first_fit", "easy", runtime_model=model), model


def test_a_pattern_named_for_every_application_is_that_pattern_for_every_job(torus8, table):
    """Reference: the same replay whose mix is that one pattern alone (every job draws it)."""
    by_app = commtime.parse_app_patterns({app["name"]: "random_pairs" for app in APPS})
    mapped, m1 = _run(torus8, table, MIX, by_app)
    plain, m2 = _run(torus8, table, {"random_pairs": 1.0})
    assert m1.job_patterns() == ["random_pairs"] * len(m1.slowdown)
    assert np.array_equal(m1.slowdown, m2.slowdown, equal_nan=True)
    assert np.array_equal(mapped.jobs["end_s"].to_numpy(), plain.jobs["end_s"].to_numpy())
    assert np.nanmax(m1.slowdown) > 1  # first fit on a small torus: jobs do share links


def test_unmapped_applications_keep_their_draw_and_the_tables_say_which(torus8, table):
    mapped, m1 = _run(torus8, table, MIX, commtime.parse_app_patterns({"Lattice": "stencil2d"}))
    prepared = replay.prepare(table, torus8.n_nodes)[0]
    m2 = commtime.ModelRuntimes(torus8, MIX, 0.5, 0)
    m2.bind(prepared)  # the patterns are drawn at bind, as the replay binds its model: no run needed
    apps = prepared["app"].to_list()
    drawn, named = m2.job_patterns(), m1.job_patterns()
    assert [p for a, p in zip(apps, named) if a != "Lattice"] == [p for a, p in zip(apps, drawn) if a != "Lattice"]
    assert {p for a, p in zip(apps, named) if a == "Lattice"} == {"stencil2d"}
    assert set(drawn) <= set(MIX) and len(set(drawn)) > 1  # the mix really is drawn from
    jobs = mapped.jobs
    assert jobs.columns[-4:] == ["app", "pattern", "slowdown", "comm_fraction"]
    by_id = dict(zip(table["job_id"].to_list(), table["app"].to_list()))
    assert jobs["app"].to_list() == [by_id[j] for j in jobs["job_id"].to_list()]
    assert jobs["pattern"].to_list() == named
    assert np.all(jobs["slowdown"].to_numpy() > 0)
    model = mapped.summary["runtime_model"]
    assert model["app_patterns"] == {"Lattice": "stencil2d"} and model["jobs_by_app"] == apps.count("Lattice")


def test_pattern_parameters_reach_the_traffic(torus8, table):
    """FFT on a 2D process grid with all-to-all along both dimensions: 64 ranks on an 8 x 8 grid
    send to the 7 others of their row and the 7 of their column (by hand: 64 x 14 flows); the
    pattern's default (a 4 x 4 x 4 grid, two dimensions) would give 64 x 6."""
    spec = {"FFT": {"pattern": "grid_a2a", "ndim": 2, "along": 2}}
    model = commtime.ModelRuntimes(torus8, MIX, 0.5, 0, app_patterns=commtime.parse_app_patterns(spec))
    prepared = replay.prepare(table, torus8.n_nodes)[0]
    model.bind(prepared)
    j = prepared["app"].to_list().index("FFT")
    traffic = model._traffic(j, 64)
    assert len(traffic.src) == 64 * 14
    rows, cols = np.asarray(traffic.src) // 8, np.asarray(traffic.src) % 8
    prow, pcol = np.asarray(traffic.dst) // 8, np.asarray(traffic.dst) % 8
    assert np.all((rows == prow) ^ (cols == pcol))  # same row or same column, never both
    assert model.job_patterns()[j] == "grid_a2a(along=2, ndim=2)"


@pytest.mark.parametrize("spec, words", [
    ({"A": "no_such"}, "app_patterns.A: unknown pattern 'no_such'"),
    ({"B": {"pattern": "stencil2d", "colour": 3}}, "app_patterns.B: pattern 'stencil2d'"),
    ({"C": {"pattern": "grid_a2a", "ndim": 2, "along": 5}}, "app_patterns.C: pattern 'grid_a2a'"),
    ({"D": ["stencil2d"]}, "app_patterns.D: give a pattern name"),
    ({"E": {"ndim": 2}}, "app_patterns.E: give a pattern name"),
])
def test_bad_mappings_are_one_line_naming_the_application(spec, words):
    with pytest.raises(ValueError) as err:
        commtime.parse_app_patterns(spec)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_workload_without_applications_is_refused(torus8, table):
    model = commtime.ModelRuntimes(torus8, MIX, 0.5, 0, app_patterns=commtime.parse_app_patterns({"X": "stencil2d"}))
    with pytest.raises(ValueError, match="app column"):
        replay.replay(table.drop("app"), torus8, "first_fit", "easy", runtime_model=model)


def _sweep(*args: str) -> subprocess.CompletedProcess:
    return forkcli.run("fattorus.sweep", args, cwd=paths.repo_root(), timeout=600)


def test_the_app_runs_table_ii_with_its_applications_patterns_and_refuses_a_log_without_them(results_path):
    small = ["+topo=torus4", "policy=first_fit", "progress=false", "+speedup=model_apps"]
    # One wave of Table II at an eighth of its node counts on the 128-node torus: the same
    # applications run as unscaled on torus8 (Changa, DNS-DISTUF, MILC, NAMD, NWChem, WRF), in
    # smaller jobs (fewer and smaller flow buckets for the solver to compile).
    out = _sweep(f"hydra.run.dir={results_path / 'run'}", *small, "workload=bluewaters_table2", "workload.synthetic.n_waves=1",
                 "workload.scale=0.125")
    assert out.returncode == 0, out.stderr[-3000:]
    jobs = pl.read_parquet(results_path / "run" / "jobs.parquet")
    expected = {"MILC": "stencil4d", "NAMD": "unstructured_mesh", "WRF": "stencil2d", "DNS-DISTUF":
                "grid_a2a(along=2, ndim=2)"}
    seen = dict(zip(jobs["app"].to_list(), jobs["pattern"].to_list()))
    assert set(expected) <= set(seen)
    assert {a: seen[a] for a in expected} == expected
    summary = json.loads((results_path / "run" / "summary.json").read_text())
    assert summary["runtime_model"]["jobs_by_app"] == len(jobs)
    bad = _sweep(f"hydra.run.dir={results_path / 'bad'}", *small, "workload=thunder", "workload.window_days=1")
    lines = [line for line in bad.stderr.splitlines() if line.strip()]
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "app column" in lines[-1], bad.stderr[-2000:]
    typo = _sweep(f"hydra.run.dir={results_path / 'typo'}", *small, "workload=bluewaters_table2",
                  "speedup.app_patterns.MILC=stencil9d")
    assert typo.returncode == 2 and "unknown pattern 'stencil9d'" in typo.stderr, typo.stderr[-2000:]
    assert not (results_path / "typo" / "jobs.parquet").exists()
