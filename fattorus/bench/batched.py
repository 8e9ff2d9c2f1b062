"""Benchmark: trials per second of the compiled batched replay vs the NumPy engine, same run.

Workload: a 30-day window (days 0–30) of LLNL-Atlas with node counts doubled, on Cab, EASY,
``ta`` and ``to``; each trial draws the V2 speedup scenario with its own key (seed ``s``:
``fold_in(PRNGKey(s), 0x5EED)``, the app's derivation). The NumPy engine
(:func:`fattorus.sched.replay.simulate`) replays the trials one at a time; the batched engine
(:func:`fattorus.sched.batched.replay_batch`) replays all of them in one compiled call. Both
must give the same start times (checked; the benchmark raises otherwise).

Rows: ``compile_s`` = first batched call minus the median of the timed ones; ``median_s`` =
median of ``REPEATS`` timed batched calls; ``numpy_s_per_trial`` = median over the first
``NUMPY_TRIALS`` trials of the NumPy engine; ``speedup`` = (numpy_s_per_trial × B) / median_s.
On these 2-core CPUs the batched loop pays full-array work per event and per trial, so the
ratio is below 1: the engine is for accelerators (see docs/batched-replay.md for H100 figures).
"""

from __future__ import annotations

import statistics
import time

import jax
import numpy as np

from fattorus import workload
from fattorus.sched import policy, replay
from fattorus.sched.batched import replay_batch
from fattorus.topology import fattree
from fattorus.workload import speedup

REPEATS = 2
NUMPY_TRIALS = 3


def _inputs(days: float):
    from fattorus.bench.replay import trace_path

    ft = fattree.load("cab")
    jobs = workload.load(trace_path(), cores_per_node=8).jobs
    jobs, _ = workload.scale_nodes(jobs, 2, ft.n_nodes)
    jobs = workload.with_estimate(workload.first_days(jobs, days)).with_row_index("_row")
    prep, _ = replay.prepare(jobs, ft.n_nodes)
    return ft, jobs, prep


def _v2_runtimes(jobs, prep, n_trials: int) -> np.ndarray:
    scenario = speedup.load("v2")
    nodes = jobs["nodes"].fill_null(0).to_numpy()
    runtime = jobs["runtime_s"].to_numpy().astype(np.float64)
    keep = prep["_row"].to_numpy()
    rows = []
    for s in range(n_trials):
        key = jax.random.fold_in(jax.random.PRNGKey(s), 0x5EED)
        rows.append((runtime * speedup.factors64(scenario, key, nodes))[keep])
    return np.stack(rows)


def run(quick: bool = False) -> list[dict]:
    """One row per (policy, batch size)."""
    ft, jobs, prep = _inputs(10 if quick else 30)
    sub, est, nd = (prep[c].to_numpy() for c in ("submit_s", "estimate_s", "nodes"))
    rows = []
    for name in ("to", "ta"):
        for B in ((2,) if quick else (1, 16)):
            rts = _v2_runtimes(jobs, prep, B)
            t0 = time.perf_counter()
            replay_batch(sub, rts, est, nd, ft, "easy", name, record_alloc=False)
            first = time.perf_counter() - t0
            times, starts = [], None
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                starts = replay_batch(sub, rts, est, nd, ft, "easy", name, record_alloc=False).start
                times.append(time.perf_counter() - t0)
            numpy_times = []
            for b in range(min(B, NUMPY_TRIALS)):
                t0 = time.perf_counter()
                ref = replay.simulate(sub, rts[b], est, nd, ft, policy.make(name, ft), "easy")
                numpy_times.append(time.perf_counter() - t0)
                if not np.array_equal(ref.start, starts[b]):
                    raise AssertionError(f"batched {name} trial {b}: start times differ from the NumPy engine")
            med, per_trial = statistics.median(times), statistics.median(numpy_times)
            rows.append(dict(policy=name, jobs=len(sub), B=B, compile_s=round(first - med, 2), median_s=round(med, 3),
                             trials_per_s=round(B / med, 2), numpy_s_per_trial=round(per_trial, 3),
                             speedup=round(per_trial * B / med, 2)))
    return rows
