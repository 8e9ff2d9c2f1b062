"""Benchmark: jobs per second of the EASY replay, against a count-based reference in the same run.

Workloads: the LLNL-Atlas trace (8 cores per node) with node counts doubled on Cab
(1,296 nodes) and tripled on Pinot (2,592 nodes), the paper's Aug-2x / Aug-3x, prepared by
:func:`fattorus.sched.replay.prepare` (whole trace; ``quick``: the first 30 days).

Engines, all on the same prepared arrays:

* ``reference``: :mod:`fattorus.sched.reference`, a plain count-based EASY in pure Python
  (node identities do not exist there);
* ``to`` and ``ta``: :func:`fattorus.sched.replay.simulate` (the engine) with that allocation policy, node sets
  and all.

Each engine is warmed up on the first ``WARMUP_DAYS`` days of the same workload (a whole-trace
warm-up would double the bench time and the code paths are the same), then timed ``repeats``
times, the engines interleaved so that load from other processes spreads over all of them;
``median_s`` is the median, ``jobs_per_s = jobs / median_s``, and ``vs_to = median_s /
(to's median_s)``: the reference's row gives reference_time / to_time, ``ta``'s gives
ta_time / to_time. ``to``'s start times must equal the reference's (checked on every timed
run; the benchmark raises otherwise).

``replay_s`` (``to`` and ``ta`` rows) is one call (a single run: compare it with ``min_s``) of :func:`fattorus.sched.replay.replay` on the
unprepared table: prepare + simulate + per-job APH + tables + summary. The APH kernel's
compilation for that workload's shapes is done beforehand, by a call of
:func:`fattorus.kernels.aph.aph_of` on allocations of the same sizes, and reported apart as
``aph_compile_s`` (first call minus second).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from fattorus import paths, workload
from fattorus.kernels import aph
from fattorus.topology import fattree
from fattorus.sched import policy
from fattorus.sched import reference, replay

TRACE = "LLNL-Atlas-2006-2.1-cln.swf.gz"
CORES_PER_NODE = 8
CASES = (("cab", 2), ("pinot", 3))  # (machine, node scale factor)
POLICIES = ("to", "ta")
REPEATS = 3
WARMUP_DAYS = 7
QUICK_DAYS = 30

NOTES = (
    "Engines run on the same prepare()d arrays. median_s = median of `repeats` timed runs after a "
    f"warm-up on the first {WARMUP_DAYS} days (engines interleaved); jobs_per_s = jobs / median_s; "
    "vs_to = median_s / to's median_s (reference row: reference_time / to_time; ta row: ta_time / "
    "to_time). replay_s = one full replay.replay() (prepare + simulate + APH + tables; a single run, "
    "so compare it with min_s rather than median_s), run after "
    "aph_of has been compiled for that workload's shapes (aph_compile_s = first aph_of call minus "
    "second). `to` start times equal the reference's on every timed run (checked)."
)


def _log(msg: str) -> None:
    print(f"[replay] {msg}", file=sys.stderr, flush=True)


def trace_path() -> Path:
    """The Atlas trace shipped in ``data/traces``."""
    path = paths.traces_dir() / TRACE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: the repository ships it in data/traces")
    return path


def _columns(prepared) -> list[np.ndarray]:
    return [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]


def _engines(ft, cols, ref_module):
    """Name -> zero-argument function returning start times (NumPy float array)."""
    as_lists = [c.tolist() for c in cols]

    def reference():
        starts = ref_module.schedule(*as_lists, ft.n_nodes, easy=True)
        return np.array([np.nan if s is None else s for s in starts], dtype=float)

    def simulate(name):
        return lambda: replay.simulate(*cols, ft, policy.make(name, ft), "easy").start

    return {"reference": reference, **{p: simulate(p) for p in POLICIES}}


def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def bench_case(jobs, topo: str, scale: int, days: float | None, repeats: int, ref_module) -> list[dict]:
    """Rows (reference, to, ta) of one machine and scale factor."""
    ft = fattree.load(topo)
    scaled, dropped = workload.scale_nodes(jobs, scale, ft.n_nodes)
    if days is not None:
        scaled = workload.first_days(scaled, days)
    prepared, skipped = replay.prepare(scaled, ft.n_nodes)
    n_jobs = len(prepared)
    label = f"Atlas x{scale} on {topo}" + ("" if days is None else f", first {days:g} days")
    where = "by scaling in the whole log" if days is not None else "by scaling"  # scale_nodes: before the window
    _log(f"{label}: {n_jobs} jobs ({dropped} dropped {where}, skipped {sum(skipped.values())})")

    warm, _ = replay.prepare(workload.first_days(scaled, WARMUP_DAYS), ft.n_nodes)
    for name, fn in _engines(ft, _columns(warm), ref_module).items():
        seconds, _ = _timed(fn)
        _log(f"{label}: warm-up {name} ({len(warm)} jobs) {seconds:.2f} s")

    engines = _engines(ft, _columns(prepared), ref_module)
    times: dict[str, list[float]] = {name: [] for name in engines}
    for rep in range(repeats):
        starts = {}
        for name, fn in engines.items():
            seconds, starts[name] = _timed(fn)
            times[name].append(seconds)
            _log(f"{label}: run {rep + 1}/{repeats} {name} {seconds:.2f} s")
        if not np.array_equal(starts["to"], starts["reference"]):
            bad = int(np.flatnonzero(starts["to"] != starts["reference"])[0])
            raise AssertionError(
                f"{label}: policy=to start time {starts['to'][bad]} != reference {starts['reference'][bad]} "
                f"for prepared job {bad}"
            )

    # APH compile for this workload's shapes (allocation sizes = job sizes, whatever the policy).
    dummy = [np.arange(n, dtype=np.int32) for n in prepared["nodes"].to_numpy()]
    first, _ = _timed(lambda: aph.aph_of(ft, dummy))
    second, _ = _timed(lambda: aph.aph_of(ft, dummy))
    aph_compile_s = max(first - second, 0.0)
    _log(f"{label}: aph_of compile {aph_compile_s:.2f} s (run {second:.2f} s)")
    full = {}
    for name in POLICIES:
        full[name], _ = _timed(lambda name=name: replay.replay(scaled, ft, name, "easy"))
        _log(f"{label}: full replay.replay {name} {full[name]:.2f} s")

    to_median = statistics.median(times["to"])
    rows = []
    for name in engines:
        median = statistics.median(times[name])
        rows.append(
            {
                "workload": f"Atlas x{scale}" + ("" if days is None else f" ({days:g} d)"),
                "machine": topo,
                "jobs": n_jobs,
                "engine": "reference (count EASY)" if name == "reference" else f"simulate {name}/easy",
                "repeats": repeats,
                "median_s": median,
                "min_s": min(times[name]),
                "jobs_per_s": n_jobs / median,
                "vs_to": median / to_median,
                "replay_s": full.get(name),
                "replay_jobs_per_s": n_jobs / full[name] if name in full else None,
                "aph_compile_s": aph_compile_s if name == "to" else None,
            }
        )
    return rows


def run(quick: bool = False, repeats: int = REPEATS) -> list[dict]:
    """Both cases; see the module docstring."""
    path = trace_path()
    jobs = workload.load(path, cores_per_node=CORES_PER_NODE).jobs
    _log(f"{path.name}: {len(jobs)} jobs read")
    ref_module = reference
    days = QUICK_DAYS if quick else None
    rows = []
    for topo, scale in CASES:
        rows.extend(bench_case(jobs, topo, scale, days, repeats, ref_module))
    return rows
