"""Benchmark: trials per second of the compiled batched replay vs the NumPy engine, same run.

Rows ``v2``: a 30-day window (days 0–30) of LLNL-Atlas with node counts doubled, on Cab, EASY,
``ta`` and ``to``; each trial draws the V2 speedup scenario with its own key (seed ``s``:
``fold_in(PRNGKey(s), 0x5EED)``, the app's derivation). The NumPy engine
(:func:`fattorus.sched.replay.simulate`) replays the trials one at a time; the batched engine
(:func:`fattorus.sched.batched.replay_batch`) replays all of them (in chunks of
:data:`~fattorus.sched.batched.CHUNK`, spread over one JAX CPU device per core when the
entry point set them up, :mod:`fattorus.devices`). Both must give the same start times
(checked on the first trials; the benchmark raises otherwise).

Row ``light``: one trial of the light-load case, the whole LLNL-Atlas log on Cab (``to``,
EASY, logged run times), batched engine at ``B = 1`` (start times only: the count-only
compiled loop of :mod:`fattorus.sched.counted`; timed calls given the capacities of the first
call, as ``trials=N`` passes them on) next to the count-only pure-Python reference
(:mod:`fattorus.sched.reference`, ``numpy_s_per_trial`` column), alternating ``LIGHT_REPEATS``
times, and the NumPy engine (``engine_s``), same run; start times checked equal.

Columns: ``compile_s`` = first batched call minus the median of the timed ones; ``median_s``
= median of ``REPEATS`` timed batched calls; ``numpy_s_per_trial`` = median over the first
``NUMPY_TRIALS`` trials of the NumPy engine, run after each timed batched call (interleaved:
a slow minute of a shared machine falls on both sides; ``light``: of the reference); ``speedup`` =
(numpy_s_per_trial × B) / median_s; ``devices``: JAX devices the trials were spread over.
"""

from __future__ import annotations

import statistics
import time

import jax
import numpy as np

from fattorus import workload
from fattorus.sched import batched, policy, reference, replay
from fattorus.sched.batched import replay_batch
from fattorus.topology import fattree
from fattorus.workload import speedup

REPEATS = 3
NUMPY_TRIALS = 5
LIGHT_REPEATS = 5


def _inputs(days: float | None, scale: int = 2):
    from fattorus.bench.replay import trace_path

    ft = fattree.load("cab")
    jobs = workload.load(trace_path(), cores_per_node=8).jobs
    jobs, _ = workload.scale_nodes(jobs, scale, ft.n_nodes)
    jobs = workload.with_estimate(jobs if days is None else workload.first_days(jobs, days)).with_row_index("_row")
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
    """One row per (policy, batch size), then the light-load row."""
    ft, jobs, prep = _inputs(10 if quick else 30)
    sub, est, nd = (prep[c].to_numpy() for c in ("submit_s", "estimate_s", "nodes"))
    n_devices = len(jax.devices())
    rows = []
    for name in ("to", "ta"):
        for B in ((2,) if quick else (1, 256)):
            rts = _v2_runtimes(jobs, prep, B)
            batch = lambda: replay_batch(sub, rts, est, nd, ft, "easy", name, record_alloc=False)
            t0 = time.perf_counter()
            res = batch()
            first = time.perf_counter() - t0
            # Interleaved: each timed batch is followed by the NumPy trials, so that a slow
            # minute of this shared machine falls on both sides of the ratio.
            times, numpy_times = [], []
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                res = batch()
                times.append(time.perf_counter() - t0)
                for b in range(min(B, NUMPY_TRIALS)):
                    t0 = time.perf_counter()
                    ref = replay.simulate(sub, rts[b], est, nd, ft, policy.make(name, ft), "easy")
                    numpy_times.append(time.perf_counter() - t0)
                    if not np.array_equal(ref.start, res.start[b]):
                        raise AssertionError(f"batched {name} trial {b}: start times differ from the NumPy engine")
            med, per_trial = statistics.median(times), statistics.median(numpy_times)
            rows.append(dict(case="v2", policy=name, jobs=len(sub), B=B, devices=min(n_devices, -(-B // batched.CHUNK)),
                             compile_s=round(first - med, 2), median_s=round(med, 3), trials_per_s=round(B / med, 2),
                             numpy_s_per_trial=round(per_trial, 3), speedup=round(per_trial * B / med, 2)))
    rows.append(_light(quick))
    return rows


def _light(quick: bool) -> dict:
    """The whole Atlas log on Cab (``to``/EASY), one trial: batched vs the count-only reference.

    The first batched call compiles and guesses the capacities (which runs the count-based
    schedule once, :func:`fattorus.sched.batched._capacities`); the timed calls are given the
    capacities it ended with, as ``trials=N`` passes them from one batch to the next. Batched
    and reference calls alternate ``LIGHT_REPEATS`` times (medians)."""
    ft, jobs, prep = _inputs(60 if quick else None, scale=1)
    sub, rt, est, nd = (prep[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes"))
    rt = rt.astype(np.float64)
    t0 = time.perf_counter()
    res = replay_batch(sub, rt[None], est, nd, ft, "easy", "to", record_alloc=False)
    first = time.perf_counter() - t0
    caps = (res.queue_capacity, res.running_capacity)
    times, ref_times = [], []
    for _ in range(LIGHT_REPEATS):
        t0 = time.perf_counter()
        res = replay_batch(sub, rt[None], est, nd, ft, "easy", "to", record_alloc=False, first_capacities=caps)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref_start = reference.schedule(sub.tolist(), rt.tolist(), est.tolist(), nd.tolist(), ft.n_nodes)
        ref_times.append(time.perf_counter() - t0)
    med, ref_s = statistics.median(times), statistics.median(ref_times)
    t0 = time.perf_counter()
    engine = replay.simulate(sub, rt, est, nd, ft, policy.make("to", ft), "easy")
    engine_s = time.perf_counter() - t0
    if not (np.array_equal(np.asarray(ref_start, np.float64), res.start[0]) and np.array_equal(engine.start, res.start[0])):
        raise AssertionError("batched light-load trial: start times differ from the reference")
    return dict(case="light", policy="to", jobs=len(sub), B=1, devices=1, compile_s=round(first - med, 2),
                median_s=round(med, 3), trials_per_s=round(1 / med, 2), numpy_s_per_trial=round(ref_s, 3),
                speedup=round(ref_s / med, 3), engine_s=round(engine_s, 3))
