"""Run metrics (fat-tree paper, Section IV-C; spec `metrics-and-outputs.md`).

Wait time ``start - submit``, utilization sampled every simulated minute (allocated nodes /
total nodes), makespan (last completion - first submission), and APH and wait summaries by
job-size bin. All times are seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

# Upper edges of the default job-size bins (nodes): 1-18, 19-64, 65-256, 257-1024, >1024.
DEFAULT_BINS: tuple[int, ...] = (18, 64, 256, 1024)
QUANTILES = {"p05": 0.05, "p25": 0.25, "median": 0.5, "p75": 0.75, "p95": 0.95}


def check_bins(bins: Any) -> tuple[int, ...]:
    """``bins`` as upper edges (nodes), or a one-line ``ValueError``: they must be a non-empty,
    strictly increasing list of positive integers (out of order they made labels such as
    ``9-2``; the replay app checks its ``bins`` setting with this before any log is read)."""
    edges = tuple(int(b) for b in bins)
    if not edges or edges[0] < 1 or any(b >= c for b, c in zip(edges, edges[1:])):
        raise ValueError(f"bins={list(edges)}: give job-size bin edges (nodes) as a non-empty, strictly increasing "
                         "list of positive integers, e.g. [18,64,256,1024]")
    return edges


def bin_labels(bins: tuple[int, ...] = DEFAULT_BINS) -> list[str]:
    """Labels ``1-18``, ``19-64``, ..., ``>1024`` for bins given by their upper edges."""
    lows = (1,) + tuple(b + 1 for b in bins[:-1])
    return [f"{lo}-{hi}" for lo, hi in zip(lows, bins)] + [f">{bins[-1]}"]


def size_bin(nodes: np.ndarray, bins: tuple[int, ...] = DEFAULT_BINS) -> np.ndarray:
    """Index of each job's size bin (0 for the smallest)."""
    return np.searchsorted(np.asarray(bins), np.asarray(nodes), side="left")


def utilization(jobs: pl.DataFrame, n_nodes: int, step_s: float = 60.0) -> pl.DataFrame:
    """Busy nodes and utilization every ``step_s`` seconds from first submit to last end.

    Each sample is the machine just after the events at that instant: a job counts when
    ``start <= t < end``.
    """
    if len(jobs) == 0:
        return pl.DataFrame({"t_s": [], "busy_nodes": [], "utilization": []},
                            schema={"t_s": pl.Float64, "busy_nodes": pl.Int32, "utilization": pl.Float64})
    start = jobs["start_s"].to_numpy()
    end = jobs["end_s"].to_numpy()
    nodes = jobs["nodes"].to_numpy().astype(np.int64)
    t0, t1 = float(jobs["submit_s"].min()), float(end.max())
    t = t0 + step_s * np.arange(int(np.floor((t1 - t0) / step_s)) + 1)
    order_s, order_e = np.argsort(start, kind="stable"), np.argsort(end, kind="stable")
    started = np.concatenate([[0], np.cumsum(nodes[order_s])])[np.searchsorted(start[order_s], t, side="right")]
    ended = np.concatenate([[0], np.cumsum(nodes[order_e])])[np.searchsorted(end[order_e], t, side="right")]
    busy = (started - ended).astype(np.int32)
    return pl.DataFrame({"t_s": t, "busy_nodes": busy, "utilization": busy / n_nodes})


def window_utilization(start_s: np.ndarray, end_s: np.ndarray, nodes: np.ndarray, capacity: int,
                       t0: float, t1: float) -> float:
    """Busy node-seconds inside ``[t0, t1)`` over ``capacity x (t1 - t0)``: the exact mean
    utilization of that window (nan for an empty window)."""
    if not t1 > t0:
        return float("nan")
    overlap = np.clip(np.minimum(end_s, t1) - np.maximum(start_s, t0), 0.0, None)
    return float(np.sum(np.asarray(nodes, np.float64) * overlap) / (capacity * (t1 - t0)))


#: Share of the submission span a steady-state window leaves out at its start (the fill-up).
STEADY_WARMUP = 0.25


def steady_window(submit_s: np.ndarray) -> tuple[float, float]:
    """``(t0, t1)``: the steady-state window of a replay, from a quarter into the submission
    span to the last submission. Why: a replay starts on an empty machine and drains after the
    last submission, and both ends lower the whole-run utilization by an amount that depends on
    the run's length, not on the policy; the torus paper reports "steady state scheduling
    efficiency", measured while jobs kept arriving (the mean of its test's last iterations)."""
    first, last = float(np.min(submit_s)), float(np.max(submit_s))
    return first + STEADY_WARMUP * (last - first), last


def _stats(values: np.ndarray, with_quantiles: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"jobs": int(len(values))}
    if len(values) == 0:
        return out
    out["mean"] = float(values.mean())
    if with_quantiles:
        out["min"] = float(values.min())
        out.update({k: float(np.quantile(values, q)) for k, q in QUANTILES.items() if k in ("p25", "median", "p75")})
        out["max"] = float(values.max())
    return out


def by_bin(nodes: np.ndarray, values: np.ndarray, bins: tuple[int, ...], with_quantiles: bool) -> dict[str, Any]:
    """Per size bin: job count and mean (plus min/p25/median/p75/max when asked)."""
    idx = size_bin(nodes, bins)
    return {label: _stats(values[idx == i], with_quantiles) for i, label in enumerate(bin_labels(bins))}


def summary(
    jobs: pl.DataFrame,
    util: pl.DataFrame,
    *,
    n_nodes: int,
    read: int,
    skipped: Mapping[str, int],
    bins: tuple[int, ...],
    config: Mapping[str, Any],
    replay_wall_s: float,
    exposed_jobs: np.ndarray | None = None,
) -> dict[str, Any]:
    """The ``summary.json`` of a run (schema in docs/outputs.md).

    ``exposed_jobs``: per job, whether it interferes with a concurrent job (:func:`exposed`).
    """
    nodes = jobs["nodes"].to_numpy()
    wait = jobs["wait_s"].to_numpy()
    aph = jobs["aph"].to_numpy()
    u = util["utilization"].to_numpy()
    makespan = float(jobs["end_s"].max() - jobs["submit_s"].min()) if len(jobs) else 0.0
    return {
        "schema": 1,
        "config": dict(config),
        "n_nodes": int(n_nodes),
        "counts": {"read": int(read), "replayed": int(len(jobs)), "skipped": {k: int(v) for k, v in skipped.items()}},
        "makespan_s": makespan,
        "wait_s": {
            "mean": float(wait.mean()) if len(wait) else 0.0,
            "median": float(np.median(wait)) if len(wait) else 0.0,
            "p95": float(np.quantile(wait, 0.95)) if len(wait) else 0.0,
            "by_bin": by_bin(nodes, wait, bins, with_quantiles=False),
        },
        "utilization": {"mean": float(u.mean()) if len(u) else 0.0,
                        **{k: float(np.quantile(u, q)) if len(u) else 0.0 for k, q in QUANTILES.items()}},
        "aph": {"mean": float(aph.mean()) if len(aph) else 0.0, "by_bin": by_bin(nodes, aph, bins, with_quantiles=True)},
        "interference": {
            "exposed_jobs": int(exposed_jobs.sum()) if exposed_jobs is not None else None,
            "exposed_share": float(exposed_jobs.mean()) if exposed_jobs is not None and len(exposed_jobs) else 0.0,
        },
        "replay_wall_s": float(replay_wall_s),
    }


def _concurrent_sharing_flat(flat: np.ndarray, sizes: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per job: whether another job holding one of its ``keys`` (ints; a key named twice by
    one job counts once: the sweep's indexed updates apply once per index) runs at the
    same time, the jobs' ``[start, end)`` intervals intersecting (a job whose start is not
    finite — never started —, whose end is NaN or no later than its start holds nothing).

    One sweep in start order (ties in job order), ends first at equal times: a key's count of
    running holders and its last holder to start. A starting job whose key is held is
    exposed, and so is that key's last holder — if it has ended, every job still holding the
    key started before it and so was running at its start: it was flagged then. Each job's
    keys are read twice and written twice, instead of sorting every (key, job) entry (a week
    on Edison: 8 M entries, 0.65 s -> ~0.1 s). ``flat``: every job's keys in job order,
    ``sizes[j]`` of them job ``j``'s."""
    J = len(sizes)
    out = np.zeros(J, bool)
    sizes = np.asarray(sizes, np.int64)
    if J == 0 or not sizes.any():
        return out
    flat = np.asarray(flat, np.int64)
    if int(flat.min()) < 0 or int(flat.max()) >= 4 * len(flat) + 1024:  # negative or sparse ids: count densely
        _, flat = np.unique(flat, return_inverse=True)
    bounds = np.r_[0, np.cumsum(sizes)]
    count = np.zeros(int(flat.max()) + 1, np.int64)
    holder = np.full(len(count), -1, np.int64)
    started = np.flatnonzero(np.isfinite(start) & (end > start) & (sizes > 0))
    by_start = started[np.argsort(start[started], kind="stable")]
    by_end = started[np.argsort(end[started], kind="stable")]
    p = 0
    for j in by_start:
        while p < len(by_end) and end[by_end[p]] <= start[j]:
            i = by_end[p]
            count[flat[bounds[i]:bounds[i + 1]]] -= 1
            p += 1
        k = flat[bounds[j]:bounds[j + 1]]
        held = count[k] > 0
        if held.any():
            out[j] = True
            out[holder[k[held]]] = True
        count[k] += 1
        holder[k] = j
    return out


def exposed(jobs: pl.DataFrame, topo) -> np.ndarray:
    """Per job: does it interfere with a concurrently running job (spec `allocation.md`)?

    Two jobs running at the same time interfere when the resources their own traffic uses
    intersect: ``topo.interference_keys`` of their node sets (the switch groups each spans on a
    hierarchical network; by default the links of the job's routes).
    Computed per key from the jobs' ``[start, end)`` intervals, never over all pairs of jobs.
    """
    start = jobs["start_s"].to_numpy().astype(np.float64)
    end = jobs["end_s"].to_numpy().astype(np.float64)
    nodes, lengths = flat_lists(jobs["alloc"])
    keys, counts = topo.interference_keys_of(nodes, lengths)
    return _concurrent_sharing_flat(keys, counts, start, end)


def flat_lists(column: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A list column (e.g. ``alloc``) as one flat int64 array and each row's length (a null
    row: 0), without a Python list per row (a 6-month replay's allocations: 0.27 s as lists)."""
    lengths = column.list.len().fill_null(0).to_numpy().astype(np.int64)
    try:  # an empty or null row gives no entry (Polars >= 1.3x names it; before, a null entry)
        flat = column.explode(empty_as_null=False, keep_nulls=False)
    except TypeError:
        flat = column.explode().drop_nulls()
    return flat.to_numpy().astype(np.int64), lengths
