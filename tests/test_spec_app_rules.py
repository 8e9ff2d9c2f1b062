"""Spec rules checked end to end through the replay app, run in-process on small hand-made
SWF logs: each expected value is worked out by hand or by a plain loop over the log, never
taken from the code under test.

- scheduling.md, "Input hygiene": a job cancelled after it started (status 5, positive run
  time) is replayed for the time it ran; one cancelled before it started is dropped; the
  summary counts say so.
- scenarios.md, "Speedup scenarios": an app run's ``jobs.parquet`` run times are the logged
  ones times ``1 - reduction`` on exactly the jobs of the scenario's size classes, estimates
  unchanged, rows matched to their own jobs.
- metrics-and-outputs.md: utilization sampled every simulated minute from the first
  submission to the last completion; the summary's mean and quantiles are those samples'.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]


def swf_line(job: int, submit: float, run: float, procs: int, req: float = 1000, status: int = 1) -> str:
    """One SWF line (18 fields): 1 id, 2 submit, 4 run time, 5/8 processors, 9 requested time, 11 status."""
    f = [job, submit, 0, run, procs, -1, -1, procs, req, -1, status, 1, 1, -1, 1, -1, -1, -1]
    return " ".join(str(v) for v in f) + "\n"


def run_app(tmp_path: Path, lines: list[str], *overrides: str) -> tuple[pl.DataFrame, pl.DataFrame, dict, Path]:
    """Run ``fattorus.sweep`` in-process on the log ``lines`` (one node per processor) and read
    back its ``jobs.parquet``, ``utilization.parquet`` and ``summary.json``."""
    from hydra import compose, initialize_config_dir

    from fattorus.app import sweep

    log = tmp_path / "log.swf"
    log.write_text("; MaxNodes: 2000\n; MaxProcs: 2000\n" + "".join(lines))
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=["workload=file", f"workload.path={log}", "workload.cores_per_node=1",
                                           "workload.scale=1", "progress=false", *overrides])
    out = tmp_path / "run"
    out.mkdir()
    sweep.run(cfg, out)
    jobs = pl.read_parquet(out / "jobs.parquet", glob=False)
    util = pl.read_parquet(out / "utilization.parquet", glob=False)
    return jobs, util, json.loads((out / "summary.json").read_text()), out


# ---------------------------------------------------------------------------------------
# 1. Input hygiene: cancelled after start is replayed, cancelled before start is dropped.


def test_a_job_cancelled_after_it_started_is_replayed_for_the_time_it_ran(tmp_path):
    # ft6: 18 nodes. By hand (any queue discipline; every kept job needs nodes the one
    # before holds): job 10 runs 0-300 on all 18 nodes although it was cancelled (status 5);
    # job 11 (18 nodes) can only start when job 10's nodes come free, at 300, and runs to 350;
    # job 14 (failed, status 0) then starts at 350 and runs to 410.
    lines = [
        swf_line(10, 0, 300, 18, status=5),    # cancelled after it started: replayed, 300 s
        swf_line(11, 10, 50, 18, status=1),
        swf_line(12, 20, 0, 4, status=5),      # cancelled before it started (zero run time)
        swf_line(13, 30, -1, 4, status=5),     # cancelled before it started (no run time)
        swf_line(14, 40, 60, 2, status=0),     # failed: replayed
        swf_line(15, 50, 0, 2, status=1),      # not cancelled, zero run time: bad_runtime
        swf_line(16, 60, 100, 40, status=5),   # ran, but larger than the machine: too_large
    ]
    jobs, _, summary, out = run_app(tmp_path, lines, "+topo=ft6")

    got = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    assert sorted(got) == [10, 11, 14]
    expected = {10: (0.0, 0.0, 300.0, 300.0), 11: (10.0, 300.0, 350.0, 50.0), 14: (40.0, 350.0, 410.0, 60.0)}
    for job_id, (submit, start, end, runtime) in expected.items():
        j = got[job_id]
        assert (j["submit_s"], j["start_s"], j["end_s"], j["runtime_s"]) == (submit, start, end, runtime), job_id
        assert j["end_s"] - j["start_s"] == j["runtime_s"]
        assert j["wait_s"] == j["start_s"] - j["submit_s"]

    counts = summary["counts"]
    assert counts["read"] == 7
    assert counts["replayed"] == 3
    assert {k: v for k, v in counts["skipped"].items() if v} == {
        "cancelled_before_start": 2, "bad_runtime": 1, "too_large": 1}
    assert counts["read"] == counts["replayed"] + sum(counts["skipped"].values())

    skipped = pl.read_parquet(out / "skipped.parquet", glob=False)
    assert dict(zip(skipped["job_id"].to_list(), skipped["reason"].to_list())) == {
        12: "cancelled_before_start", 13: "cancelled_before_start", 15: "bad_runtime", 16: "too_large"}


# ---------------------------------------------------------------------------------------
# 2. Speedup scenarios through the app.

# Logged jobs: (id, submit, run, nodes, requested, status). Submissions out of order in the file and a
# dropped job first, so that a run time matched by row position rather than by job shows.
SMALL_LOG = [
    (1, 500, 0, 3, 900, 5),  # cancelled before start: dropped, first in the file
    (2, 400, 311, 4, 900, 1),
    (3, 90, 517, 5, 900, 1),
    (4, 300, 203, 1, 900, 1),
    (5, 10, 777, 6, 700, 1),  # requested time shorter than the run time: estimate = run time
    (6, 250, 129, 2, 900, 1),
    (7, 20, 401, 12, 900, 1),
    (8, 700, 233, 54, 900, 1),
    (9, 60, 613, 3, 900, 1),
    (10, 800, 97, 5, 90, 1),  # likewise
    (11, 30, 351, 4, 900, 0),
    (12, 650, 449, 33, 900, 1),
    (13, 140, 173, 7, 900, 1),
    (14, 120, 59, 17, 900, 1),
    (15, 410, 881, 26, 900, 1),
    (16, 200, 263, 9, 900, 1),
    (17, 150, 367, 40, 900, 1),
    (18, 170, 191, 11, 900, 1),
    (19, 210, 431, 20, 900, 1),
    (20, 230, 83, 48, 900, 1),
]


def _log_lines(rows) -> list[str]:
    return [swf_line(i, s, r, n, req, st) for i, s, r, n, req, st in rows]


def _check_untouched(jobs: pl.DataFrame, rows) -> dict[int, dict]:
    """The rows replayed are the log's jobs with run time > 0, each with its own submit time,
    node count and estimate max(requested, logged run time); returns them by job id."""
    log = {i: (s, r, n, req) for i, s, r, n, req, _ in rows if r > 0}
    got = {j["job_id"]: j for j in jobs.iter_rows(named=True)}
    assert sorted(got) == sorted(log)
    for i, (s, r, n, req) in log.items():
        j = got[i]
        assert (j["submit_s"], j["nodes"], j["estimate_s"]) == (s, n, max(req, r)), i
        assert j["end_s"] - j["start_s"] == pytest.approx(j["runtime_s"], rel=1e-12), i
    return got


@pytest.mark.parametrize("scenario, pct", [("x5", 5), ("x10", 10), ("x20", 20)])
def test_xpct_shortens_exactly_the_jobs_over_4_nodes(tmp_path, scenario, pct):
    jobs, _, summary, _ = run_app(tmp_path, _log_lines(SMALL_LOG), "+topo=ft6x6", f"+speedup={scenario}")
    assert summary["config"]["speedup"] == scenario
    got = _check_untouched(jobs, SMALL_LOG)
    for i, _, r, n, _, _ in SMALL_LOG:
        if r > 0:
            want = r * (100 - pct) / 100 if n > 4 else float(r)
            assert got[i]["runtime_s"] == pytest.approx(want, rel=1e-12, abs=0), (i, n)
    assert {4, 5} <= {n for _, _, r, n, _, _ in SMALL_LOG if r > 0}  # the log straddles the threshold


def _reductions(bins: list[tuple[float, float]], n: int) -> list[float]:
    """The reductions a job of ``n`` nodes may get: one per bin, lo + (hi - lo) min(n, 512) / 512."""
    return [lo + (hi - lo) * min(n, 512) / 512 for lo, hi in bins]


def _bin_of(runtime: float, logged: float, options: list[float]) -> int:
    """Which of ``options`` (reductions) turned ``logged`` into ``runtime``; fails when none did."""
    hits = [k for k, red in enumerate(options) if runtime == pytest.approx(logged * (1 - red), rel=1e-12, abs=0)]
    assert hits, (runtime, logged, options)
    return hits[0]


def test_v1_gives_every_job_one_of_its_three_bins(tmp_path):
    jobs, _, summary, _ = run_app(tmp_path, _log_lines(SMALL_LOG), "+topo=ft6x6", "+speedup=v1")
    assert summary["config"]["speedup"] == "v1"
    got = _check_untouched(jobs, SMALL_LOG)
    drawn = []
    for i, _, r, n, _, _ in SMALL_LOG:
        if r > 0:
            drawn.append(_bin_of(got[i]["runtime_s"], r, _reductions([(0, .1), (0, .2), (0, .3)], n)))
            assert got[i]["runtime_s"] < r  # every job of every size is shortened (lo = 0, n >= 1)
    assert len(set(drawn)) >= 2  # assigned at random: 19 jobs do not all draw one bin


# V2 on cab (1296 nodes): the 128-node threshold needs a machine over 128 nodes.
V2_LOG = [
    (1, 0, 0, 600, 900, 5),  # dropped, first in the file
    (2, 50, 301, 1, 900, 1),
    (3, 40, 307, 4, 900, 1),
    (4, 30, 311, 5, 900, 1),
    (5, 20, 313, 64, 900, 1),
    (6, 10, 317, 128, 900, 1),
    (7, 60, 331, 129, 900, 1),
    (8, 70, 337, 200, 900, 1),
    (9, 80, 347, 300, 900, 1),
    (10, 90, 349, 511, 900, 1),
    (11, 100, 353, 512, 900, 1),
    (12, 110, 359, 700, 900, 1),
    (13, 120, 367, 1000, 900, 1),
    (14, 130, 373, 130, 900, 1),
    (15, 140, 379, 256, 900, 1),
    (16, 150, 383, 400, 900, 1),
    (17, 160, 389, 3, 900, 1),
    (18, 170, 397, 100, 900, 1),
    (19, 180, 401, 16, 900, 1),
    (20, 190, 409, 1296, 900, 1),
    # More jobs at the thresholds: at 128 nodes the [0, 10 %] bin is common to both classes,
    # so one job may not tell them apart.
    (21, 200, 419, 128, 900, 1),
    (22, 210, 421, 128, 900, 1),
    (23, 220, 431, 128, 900, 1),
    (24, 230, 433, 129, 900, 1),
    (25, 240, 439, 129, 900, 1),
    (26, 250, 443, 5, 900, 1),
    (27, 260, 449, 4, 900, 1),
]


def test_v2_draws_by_size_class(tmp_path):
    jobs, _, summary, _ = run_app(tmp_path, _log_lines(V2_LOG), "+topo=cab", "+speedup=v2")
    assert summary["config"]["speedup"] == "v2"
    got = _check_untouched(jobs, V2_LOG)
    large_bins = []
    for i, _, r, n, _, _ in V2_LOG:
        if r <= 0:
            continue
        t = got[i]["runtime_s"]
        if n <= 4:
            assert t == r, (i, n)
        elif n <= 128:
            _bin_of(t, r, _reductions([(0, .1), (0, .2)], n))
        else:
            large_bins.append(_bin_of(t, r, _reductions([(0, .1), (.1, .2), (.1, .3)], n)))
    # Only the class over 128 nodes has bins starting at 10 %: some of its 12 jobs draw them.
    assert any(b > 0 for b in large_bins)


# ---------------------------------------------------------------------------------------
# 3. Utilization samples.

# ft6 (18 nodes), policy first_fit (any free nodes), by hand: A 30-150 on 10 nodes, B 60-150 on 8 (together all 18); C (6) and
# D (12) wait for them and run 150-250 and 150-195; the machine idles until E (3 nodes)
# runs from 400 for E's run time.
UTIL_LOG = [("A", 1, 30, 120, 10), ("B", 2, 60, 90, 8), ("C", 3, 90, 100, 6), ("D", 4, 100, 45, 12)]
UTIL_TIMES = {1: (30, 150), 2: (60, 150), 3: (150, 250), 4: (150, 195)}


@pytest.mark.parametrize("e_run", [65, 50], ids=["last-end-between-samples", "last-end-on-a-sample"])
def test_utilization_is_sampled_each_minute_from_first_submit_to_last_end(tmp_path, e_run):
    rows = [(i, s, r, n) for _, i, s, r, n in UTIL_LOG] + [(5, 400, e_run, 3)]
    jobs, util, summary, _ = run_app(tmp_path, [swf_line(i, s, r, n) for i, s, r, n in rows], "+topo=ft6",
                                  "policy=first_fit")
    times = {**UTIL_TIMES, 5: (400, 400 + e_run)}
    got = {j["job_id"]: (j["start_s"], j["end_s"]) for j in jobs.iter_rows(named=True)}
    assert got == times  # the hand schedule the samples below are counted from

    first_submit, last_end = 30.0, 400.0 + e_run
    t = util["t_s"].to_list()
    # Every minute from the first submission to the last completion: t0, t0 + 60, ... up to
    # the last completion (the last sample is at or before it, the next would be after it).
    assert t[0] == first_submit
    assert np.diff(t).tolist() == [60.0] * (len(t) - 1)
    assert t[-1] <= last_end < t[-1] + 60
    assert len(t) == 8  # 30, 90, ..., 450
    if e_run == 50:
        assert t[-1] == last_end

    def busy_at(x: float) -> int:  # a job holds its nodes from its start up to (not at) its end
        return sum(n for i, _, _, n in rows if times[i][0] <= x < times[i][1])

    busy = [busy_at(x) for x in t]
    assert busy == ([10, 18, 18, 6, 0, 0, 0, 3] if e_run == 65 else [10, 18, 18, 6, 0, 0, 0, 0])  # by hand
    assert util["busy_nodes"].to_list() == busy
    assert util["utilization"].to_list() == pytest.approx([b / 18 for b in busy], abs=1e-15)

    u = np.array(busy) / 18
    s = summary["utilization"]
    assert s["mean"] == pytest.approx(sum(busy) / 18 / len(busy), rel=1e-12)
    for key, q in {"p05": 0.05, "p25": 0.25, "median": 0.5, "p75": 0.75, "p95": 0.95}.items():
        if key in s:
            assert s[key] == pytest.approx(_quantile(sorted(u), q), rel=1e-12, abs=1e-15), key
    assert {"p05", "median", "p95"} <= set(s)
    assert summary["makespan_s"] == last_end - first_submit


def _quantile(xs: list[float], q: float) -> float:
    """Quantile by linear interpolation between order statistics (position q (n - 1))."""
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
