"""Scheduler replay: FCFS and EASY backfilling with a pluggable allocation policy.

Semantics are those of the spec's `scheduling.md`:

* At each event time, completions release their nodes first, then submissions join the
  queue, then one scheduling pass runs. The queue is in submission order, ties by job id.
* FCFS starts jobs from the head while the policy places the head.
* EASY, when the head cannot be placed, walks the running jobs by estimated end
  (``start + estimate``), releasing jobs with the same estimated end together into a copy of
  the machine, until the policy places the head there: that time is the *shadow time* and
  that placement the head's reserved node set ``R``. A later job may start now if the policy
  places it on the free nodes and either it ends (by its estimate) at or before the shadow
  time, or it is placed on the machine with every node of ``R`` held by the head's job type.
  One reservation, recomputed at every pass.
* Jobs run for ``runtime`` (after any speedup scenario); the scheduler plans with
  ``estimate = max(requested walltime, logged runtime)``.

To make concrete node sets reproduce classic count-based EASY under ``policy=to`` exactly,
the reservation prefers nodes that are busy now (``prefer=released``), and a backfill job
that ends by the shadow time takes reserved nodes first (``prefer=R``); policies that have
no free choice ignore ``prefer``.

Per-pass work is kept proportional to what can change: candidates are filtered by node
count in one array operation; a failed placement of size ``n`` rules out every larger job of
the same type for the rest of the pass (placement feasibility is monotone in the size and
only shrinks as jobs start); the shadow time is found by bisection over the distinct
estimated ends; a reservation is reused while neither the head nor the machine changed.
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from fattorus import workload
from fattorus.analysis import metrics
from fattorus.sched import policy as policy_mod
from fattorus.sched import state as st
from fattorus.kernels.aph import aph_of
from fattorus.topology.fattree import JOB_TYPE_NAMES, FatTree, footprint_type, job_type

SCHEDULERS = ("fcfs", "easy")
SKIP_REASONS = ("bad_submit", "cancelled_before_start", "bad_nodes", "bad_runtime", "too_large")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What one replay decided, per job (arrays aligned with the prepared job table).

    Attributes:
      start: ``(n,)`` start times, seconds.
      alloc: per job, its node ids in allocation order.
      backfilled: ``(n,)`` True where the job started ahead of a blocked queue head.
      shadow: ``(n,)`` the earliest shadow time computed while the job was the blocked queue
        head (NaN if it never was).
    """

    start: np.ndarray
    alloc: list[np.ndarray]
    backfilled: np.ndarray
    shadow: np.ndarray


@dataclasses.dataclass(frozen=True)
class ReplayResult:
    """Tables of a replay: ``jobs`` and ``utilization`` (docs/outputs.md) and ``summary``."""

    jobs: pl.DataFrame
    utilization: pl.DataFrame
    summary: dict


def prepare(jobs: pl.DataFrame, n_nodes: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Drop jobs the replay cannot run, counting each by reason; sort by (submit, job id).

    Reasons, checked in this order: ``cancelled_before_start`` (status 5 and runtime <= 0 or
    unknown), ``bad_nodes`` (node count unknown or <= 0), ``bad_runtime`` (runtime unknown or
    <= 0), ``too_large`` (more nodes than the machine). A job that failed or was cancelled
    after it started held its nodes for its runtime and is replayed.
    """
    # NaN counts as unknown too (Polars orders NaN above every number, so NaN > 0 holds).
    runtime_ok = pl.col("runtime_s").is_not_null() & pl.col("runtime_s").is_not_nan() & (pl.col("runtime_s") > 0)
    status = pl.col("status") if "status" in jobs.columns else pl.lit(None, pl.Int32)
    submit_ok = pl.col("submit_s").is_not_null() & pl.col("submit_s").is_not_nan()
    reason = (
        pl.when(~submit_ok)
        .then(pl.lit("bad_submit"))
        .when((status == 5) & ~runtime_ok)
        .then(pl.lit("cancelled_before_start"))
        .when(pl.col("nodes").is_null() | (pl.col("nodes") <= 0))
        .then(pl.lit("bad_nodes"))
        .when(~runtime_ok)
        .then(pl.lit("bad_runtime"))
        .when(pl.col("nodes") > n_nodes)
        .then(pl.lit("too_large"))
        .otherwise(pl.lit(None, pl.String))
    )
    tagged = jobs.with_columns(reason.alias("_skip"))
    counts = dict.fromkeys(SKIP_REASONS, 0)
    for r, c in tagged.group_by("_skip").len().iter_rows():
        if r is not None:
            counts[r] = c
    kept = _with_estimate(tagged.filter(pl.col("_skip").is_null()).drop("_skip"))
    return kept.sort(["submit_s", "job_id"]), counts


def simulate(
    submit: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    nodes: np.ndarray,
    ft: FatTree,
    policy: policy_mod.Policy,
    sched: str = "easy",
    progress: bool = False,
) -> Schedule:
    """Run the discrete-event replay on jobs sorted by (submit, id); see the module docstring.

    Args:
      submit, runtime, estimate: ``(n,)`` seconds; ``estimate >= runtime`` is required so
        that EASY's reservations hold.
      nodes: ``(n,)`` requested nodes, each between 1 and the machine size.
      ft: the machine.
      policy: the allocation policy.
      sched: ``"easy"`` or ``"fcfs"``.
      progress: show a progress bar (jobs started).
    """
    if sched not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {sched!r}; choices: {list(SCHEDULERS)}")
    easy = sched == "easy"
    n_jobs = len(submit)
    submit = np.asarray(submit, np.float64)
    runtime = np.asarray(runtime, np.float64)
    estimate = np.asarray(estimate, np.float64)
    nodes = np.asarray(nodes, np.int64)
    # A NaN time would never compare equal to an event time and stall the loop: refuse it.
    if n_jobs and not (np.all(np.isfinite(submit)) and np.all(np.isfinite(runtime)) and np.all(runtime > 0)
                       and np.all(estimate >= runtime) and np.all((nodes >= 1) & (nodes <= ft.n_nodes))):
        raise ValueError("simulate: every job needs finite submit, runtime > 0, estimate >= runtime "
                         "and 1 <= nodes <= machine size")
    jtype = np.asarray(job_type(ft, nodes), np.int64)
    # The type each job is booked under in the machine state: the links its placement can
    # use (one leaf, one pod, several pods). Equal to the size type for interference-free
    # placements; a relaxed (hybrid) placement is booked by what it really spans.
    booked = jtype.copy()
    wake = getattr(policy, "wake_time", None)  # hybrid rule: when a waiting job relaxes
    wakeups: list[float] = []

    machine = st.empty(ft)
    start = np.full(n_jobs, np.nan)
    shadow_of = np.full(n_jobs, np.nan)
    backfilled = np.zeros(n_jobs, bool)
    alloc: list[np.ndarray] = [np.empty(0, np.int64)] * n_jobs
    waiting = np.zeros(n_jobs, bool)
    node_est_end = np.full(ft.n_nodes, np.inf)  # estimated end of the job on each node
    running: list[tuple[float, int]] = []  # heap of (actual end, job)
    version = 0  # bumped at every change of the machine
    cache: dict[str, Any] = {"key": None}
    lo = hi = 0  # jobs [lo, hi) may be waiting; jobs < hi have been submitted

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_jobs, unit="job", mininterval=1.0, desc=f"replay {policy.name}/{sched}")

    def start_job(j: int, placed: np.ndarray, now: float) -> None:
        nonlocal version
        booked[j] = footprint_type(ft, placed)
        st.allocate(machine, placed, booked[j])
        alloc[j] = placed
        start[j] = now
        waiting[j] = False
        node_est_end[placed] = now + estimate[j]
        heapq.heappush(running, (now + runtime[j], j))
        version += 1
        if bar is not None:
            bar.update(1)

    def reservation(head: int, now: float) -> tuple[float, np.ndarray]:
        key = (head, version)
        if cache["key"] == key:
            return cache["shadow"], cache["R"]
        n = int(nodes[head])
        if hasattr(policy, "feasible"):
            # Counts of the machine after each distinct estimated end, all at once; the
            # first instant at which the policy could place the head is the shadow time.
            times, future_counts = st.futures(machine, node_est_end, getattr(policy, "per_leaf", True))
            fits = np.flatnonzero(policy.feasible(future_counts, n, waited_s=times - submit[head]))
            first = int(fits[0]) if len(fits) else -1
        else:
            times = np.unique(node_est_end[~machine.free])
            first = _first_true(
                lambda i: policy.place(st.future(machine, node_est_end <= times[i]), n,
                                       waited_s=times[i] - submit[head]) is not None,
                len(times),
            )
        shadow = float(times[first]) if first >= 0 else np.inf
        reserved = None
        relax = wake(submit[head]) if wake is not None else None
        if relax is not None and now < relax < shadow:
            # Feasibility also changes when the head's wait passes the relax threshold.
            released = node_est_end <= relax
            reserved = policy.place(st.future(machine, released), n, prefer=released, waited_s=relax - submit[head])
            if reserved is not None:
                shadow = relax
        if shadow == np.inf:
            raise RuntimeError(f"job of {n} nodes cannot be placed even on an empty machine")
        if reserved is None:
            released = node_est_end <= shadow
            reserved = policy.place(st.future(machine, released), n, prefer=released, waited_s=shadow - submit[head])
        cache.update(key=key, shadow=shadow, R=reserved)
        return shadow, reserved

    # What the previous pass learnt, valid while the machine has not changed since
    # (`version`): its head could not be placed, every candidate below `upto` could not be
    # backfilled, and the per-type failure sizes. A later candidate only becomes harder to
    # backfill as time passes (a job that ended by the shadow time may no longer), so a pass
    # on an unchanged machine only needs to look at jobs submitted since.
    memo: dict[str, Any] = {"version": None}
    # A policy whose decision depends on how long the job waited (the hybrid rule) must be
    # asked again about the head even on an unchanged machine.
    time_dependent = bool(getattr(policy, "time_dependent", False))

    def schedule(now: float) -> None:
        nonlocal lo
        unchanged = memo["version"] == version
        blocked = None  # the head, once it is known not to fit now
        while lo < hi:
            if not waiting[lo]:
                lo += 1
                continue
            if unchanged and lo == memo["head"] and not time_dependent:
                blocked = lo  # it did not fit on this very machine in the previous pass
                break
            placed = policy.place(machine, int(nodes[lo]), waited_s=now - submit[lo])
            if placed is None:
                blocked = lo
                break
            start_job(lo, placed, now)
            lo += 1
        if blocked is not None and wake is not None:
            relax = wake(submit[blocked])
            if relax is not None and relax > now:
                heapq.heappush(wakeups, relax)  # a pass when the head may take a relaxed placement
        if blocked is None or machine.n_free == 0 or not easy:
            memo.update(version=version, head=blocked, upto=hi, fail_now=None, fail_held=None)
            return
        head = lo
        unchanged = memo["version"] == version and memo["head"] == head and memo["fail_now"] is not None
        first = max(memo["upto"], head + 1) if unchanged else head + 1
        window = slice(first, hi)
        candidates = first + np.flatnonzero(waiting[window] & (nodes[window] <= machine.n_free))
        # Smallest size per job type that failed, on the machine as it is (`fail_now`) and
        # with R held (`fail_held`): larger jobs of that type cannot fit either, since
        # feasibility is monotone in the size and only shrinks as jobs start.
        fail_now = memo["fail_now"] if unchanged else np.full(4, ft.n_nodes + 1)
        fail_held = memo["fail_held"] if unchanged else np.full(4, ft.n_nodes + 1)
        memo.update(version=version, head=head, upto=hi, fail_now=fail_now, fail_held=fail_held)
        if len(candidates) == 0:
            return
        shadow, reserved = reservation(head, now)
        if not shadow_of[head] <= shadow:
            shadow_of[head] = shadow
        reserved_mask = np.zeros(ft.n_nodes, bool)
        reserved_mask[reserved] = True
        held = None
        short = now + estimate[candidates] <= shadow
        cand_nodes, cand_type = nodes[candidates], jtype[candidates]
        pos = 0
        while pos < len(candidates) and machine.n_free > 0:
            # One array expression finds the next candidate worth asking the policy about.
            limit = np.where(short[pos:], fail_now[cand_type[pos:]], fail_held[cand_type[pos:]])
            worth = np.flatnonzero((cand_nodes[pos:] < limit) & (cand_nodes[pos:] <= machine.n_free))
            if len(worth) == 0:
                break
            pos += int(worth[0])
            j, n, t = int(candidates[pos]), int(cand_nodes[pos]), int(cand_type[pos])
            if short[pos]:
                placed = policy.place(machine, n, prefer=reserved_mask)
                if placed is None:
                    fail_now[t] = n
                    fail_held[t] = min(n, fail_held[t])
            else:
                if held is None:
                    held = st.with_hold(machine, reserved, footprint_type(ft, reserved))
                placed = policy.place(held, n)
                if placed is None:
                    fail_held[t] = n
            pos += 1
            if placed is not None:
                start_job(j, placed, now)
                backfilled[j] = True
                held = None
                memo["version"] = None  # the reservation may differ on the new machine

    while hi < n_jobs or running:
        now = min(submit[hi] if hi < n_jobs else np.inf, running[0][0] if running else np.inf,
                  wakeups[0] if wakeups else np.inf)
        while wakeups and wakeups[0] <= now:
            heapq.heappop(wakeups)
        while running and running[0][0] == now:
            _, j = heapq.heappop(running)
            st.release(machine, alloc[j], booked[j])
            node_est_end[alloc[j]] = np.inf
            version += 1
        while hi < n_jobs and submit[hi] == now:
            waiting[hi] = True
            hi += 1
        schedule(now)
    if bar is not None:
        bar.close()
    return Schedule(start, alloc, backfilled, shadow_of)


def _first_true(pred, size: int) -> int:
    """Smallest ``i`` in ``[0, size)`` with ``pred(i)`` for a predicate monotone in ``i`` (-1 if none)."""
    if size == 0 or not pred(size - 1):
        return -1
    a, b = 0, size - 1
    while a < b:
        mid = (a + b) // 2
        if pred(mid):
            b = mid
        else:
            a = mid + 1
    return a


def replay(
    jobs: pl.DataFrame,
    ft: FatTree,
    policy: str = "ta",
    sched: str = "easy",
    *,
    policy_params: Mapping[str, Any] | None = None,
    seed: int = 0,
    runtime_s: np.ndarray | None = None,
    bins: tuple[int, ...] = metrics.DEFAULT_BINS,
    config: Mapping[str, Any] | None = None,
    extra_skips: Mapping[str, int] | None = None,
    progress: bool = False,
) -> ReplayResult:
    """Replay a workload table on machine ``ft`` and compute the run's tables.

    Args:
      jobs: workload table with at least ``job_id``, ``submit_s``, ``runtime_s``,
        ``nodes`` (and ``requested_s``/``estimate_s``, ``status`` when known).
      ft: the machine.
      policy: allocation policy name (:data:`fattorus.policy.NAMES`).
      sched: ``"easy"`` (default) or ``"fcfs"``.
      policy_params: the policy's named heuristics (``ta`` only).
      seed: seed of the policy's random draws (``to_random``).
      runtime_s: optional replacement runtimes (a speedup scenario), aligned with ``jobs``
        rows; estimates stay as logged.
      bins: upper edges of the job-size bins for the summary.
      config: the run's key choices, copied into the summary.
      extra_skips: skip counts from earlier steps (e.g. jobs dropped by node scaling).
      progress: show a progress bar.
    """
    wall0 = time.perf_counter()
    pol = policy_mod.make(policy, ft, policy_params, seed)
    table = jobs
    if runtime_s is not None:
        if len(runtime_s) != len(jobs):
            raise ValueError(f"runtime_s has {len(runtime_s)} entries for {len(jobs)} jobs")
        # NaN marks a runtime the log does not know (a null turned into NumPy).
        table = _with_estimate(jobs).with_columns(
            pl.Series("runtime_s", np.asarray(runtime_s, np.float64), nan_to_null=True)
        )
    prepared, skipped = prepare(table, ft.n_nodes)
    for reason, count in (extra_skips or {}).items():
        skipped[reason] = skipped.get(reason, 0) + int(count)
    schedule = simulate(
        prepared["submit_s"].to_numpy(),
        prepared["runtime_s"].to_numpy(),
        prepared["estimate_s"].to_numpy(),
        prepared["nodes"].to_numpy(),
        ft,
        pol,
        sched,
        progress=progress,
    )
    out = _jobs_table(prepared, schedule, ft)
    exposed = metrics.exposed(out, ft)
    out = out.with_columns(pl.Series("exposed", exposed))
    util = metrics.utilization(out, ft.n_nodes)
    wall = time.perf_counter() - wall0
    summary = metrics.summary(
        out,
        util,
        n_nodes=ft.n_nodes,
        read=len(jobs) + sum((extra_skips or {}).values()),
        skipped=skipped,
        bins=bins,
        config=dict(config or {"topo": ft.name, "policy": policy, "sched": sched, "seed": seed}),
        replay_wall_s=wall,
        exposed_jobs=exposed,
    )
    return ReplayResult(out, util, summary)


def _with_estimate(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` with ``estimate_s`` (kept when present: a speedup run plans with the logged one)."""
    if "estimate_s" in jobs.columns:
        return jobs
    if "requested_s" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(None, pl.Float64).alias("requested_s"))
    return workload.with_estimate(jobs)


def _jobs_table(prepared: pl.DataFrame, schedule: Schedule, ft: FatTree) -> pl.DataFrame:
    nodes = prepared["nodes"].to_numpy().astype(np.int64)
    start = schedule.start
    runtime = prepared["runtime_s"].to_numpy()
    submit = prepared["submit_s"].to_numpy()
    types = np.asarray(job_type(ft, nodes))
    return pl.DataFrame(
        {
            "job_id": prepared["job_id"].cast(pl.Int64),
            "submit_s": submit.astype(np.float64),
            "start_s": start,
            "end_s": start + runtime,
            "nodes": nodes.astype(np.int32),
            "runtime_s": runtime.astype(np.float64),
            "estimate_s": prepared["estimate_s"].to_numpy().astype(np.float64),
            "wait_s": start - submit,
            "job_type": [JOB_TYPE_NAMES[int(t)] for t in types],
            "aph": aph_of(ft, schedule.alloc),
            "alloc": pl.Series("alloc", [a.astype(np.int32) for a in schedule.alloc], dtype=pl.List(pl.Int32)),
            "backfilled": schedule.backfilled,
            "shadow_s": schedule.shadow,
        }
    )
