"""``trials=N``: N speedup draws of one configuration through the compiled, batched engine.

``python -m fattorus.sweep +topo=cab +speedup=v2 trials=1000`` replays the same prepared job
table ``N`` times, trial ``t`` with the speedup draw of ``seed + t`` — exactly the run times
the single run with ``seed=seed+t`` gets — in batches of :data:`BATCH` through
:func:`fattorus.sched.batched.replay_batch` (``to``/``ta`` on fat-trees, FCFS/EASY). The run
directory holds the usual outputs of trial 0 (replayed by the NumPy engine, whose start
times the batched trial 0 must equal — checked, an error otherwise) and ``trials.parquet``,
one row per trial:

``trial`` (int32), ``seed`` (int64), ``jobs`` (int32), ``mean_wait_s``, ``median_wait_s``,
``p95_wait_s``, ``makespan_s`` (float64 s, first submit to last end), ``utilization``
(float64: node-seconds used / (usable nodes × makespan), the exact integral of the per-minute
series whose mean ``summary.json`` reports).

``summary.json`` adds ``trials``: ``{"n", "batch", "wall_s", "mean_wait_s": {"mean", "std",
"p05", "p50", "p95"}, "utilization": {...}}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

#: Trials per compiled call (memory grows with it; 64 keeps a month of Cab under 1 GB).
BATCH = 64


def draws(jobs: pl.DataFrame, n: int, seed: int, runtimes_of: Callable[[int], np.ndarray | None]) -> np.ndarray:
    """``(n, rows)`` run times, seconds: row ``t`` is the draw of ``seed + t`` (aligned with ``jobs``)."""
    base = jobs["runtime_s"].to_numpy().astype(np.float64)
    out = np.empty((n, len(base)))
    for t in range(n):
        rt = runtimes_of(seed + t)
        out[t] = base if rt is None else rt
    return out


def per_trial(submit: np.ndarray, start: np.ndarray, runtime: np.ndarray, nodes: np.ndarray,
              capacity: int) -> dict[str, np.ndarray]:
    """Metrics of each trial from ``(B, J)`` start times and run times."""
    wait = start - submit[None, :]
    end = start + runtime
    makespan = end.max(axis=1) - submit.min()
    used = (runtime * nodes[None, :]).sum(axis=1)
    return {"jobs": np.full(len(start), start.shape[1], np.int32), "mean_wait_s": wait.mean(axis=1),
            "median_wait_s": np.median(wait, axis=1), "p95_wait_s": np.percentile(wait, 95, axis=1),
            "makespan_s": makespan, "utilization": used / (capacity * makespan)}


def run(jobs: pl.DataFrame, ft: Any, policy: str, sched: str, params: dict[str, Any] | None, n: int, seed: int,
        runtimes_of: Callable[[int], np.ndarray | None], trial0_start: np.ndarray,
        progress: bool = False) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Replay ``n`` trials (module docstring); returns ``trials.parquet``'s table and the
    summary's ``trials`` entry. ``trial0_start``: the NumPy engine's start times of trial 0 in
    prepared order (the cross-check)."""
    from fattorus.sched import batched, replay
    from fattorus.sched.policy.fattree.ta import TAParams

    t0 = time.perf_counter()
    rows = jobs.with_row_index("_row")
    prepared, _ = replay.prepare(rows, ft.n_nodes)
    idx = prepared["_row"].to_numpy().astype(np.int64)
    submit, estimate = prepared["submit_s"].to_numpy(), prepared["estimate_s"].to_numpy()
    nodes = prepared["nodes"].to_numpy().astype(np.int64)
    runtime = draws(jobs, n, seed, runtimes_of)[:, idx]
    ta_params = TAParams.from_mapping(params or {}) if policy == "ta" else None
    parts, capacities = [], None
    for lo in range(0, n, BATCH):
        chunk = runtime[lo:lo + BATCH]
        # Later batches start from the capacities the earlier ones needed (no count-based
        # schedule again, no recompilation unless a draw needs more).
        res = batched.replay_batch(submit, chunk, estimate, nodes, ft, sched, policy, ta_params, record_alloc=False,
                                   first_capacities=capacities)
        capacities = (res.queue_capacity, res.running_capacity)
        if lo == 0 and not np.array_equal(res.start[0], trial0_start):
            raise RuntimeError("the batched engine's trial 0 differs from the NumPy engine's: please report")
        parts.append(per_trial(submit, res.start, chunk, nodes, ft.n_nodes))
        if progress:
            print(f"[trials] {min(lo + BATCH, n)}/{n}", flush=True)
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    table = pl.DataFrame({"trial": np.arange(n, dtype=np.int32), "seed": seed + np.arange(n, dtype=np.int64), **cols})
    return table, {"n": n, "batch": BATCH, "wall_s": time.perf_counter() - t0,
                   "mean_wait_s": _stats(cols["mean_wait_s"]), "utilization": _stats(cols["utilization"])}


def _stats(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
            "p05": float(np.percentile(x, 5)), "p50": float(np.percentile(x, 50)), "p95": float(np.percentile(x, 95))}
