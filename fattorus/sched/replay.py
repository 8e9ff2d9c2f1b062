"""Replaying a workload table: prepare the jobs, run the engine, build the output tables.

The convenience layer over :mod:`fattorus.sched.engine`: :func:`replay` takes a job table,
a topology and policy / queue names (resolved through the registries
:data:`fattorus.sched.policy.REGISTRY` and :data:`fattorus.sched.queues.QUEUES`), runs the
engine and returns ``jobs`` / ``utilization`` / ``summary`` (docs/outputs.md).
:func:`simulate` is the engine on bare arrays. Scheduling semantics: :mod:`fattorus.sched.queues`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from fattorus import workload
from fattorus.analysis import metrics
from fattorus.kernels.aph import aph_of, ideal_aph
from fattorus.sched import engine
from fattorus.sched import policy as policy_mod
from fattorus.sched.engine import Schedule
from fattorus.sched.queues import QUEUES

SCHEDULERS = tuple(QUEUES)
SKIP_REASONS = ("bad_submit", "cancelled_before_start", "bad_nodes", "bad_runtime", "too_large")


@dataclasses.dataclass(frozen=True)
class ReplayResult:
    """Tables of a replay: ``jobs`` and ``utilization`` (docs/outputs.md), ``summary`` and
    ``skipped`` (the jobs the replay left out, each with its reason: :func:`skipped_jobs`)."""

    jobs: pl.DataFrame
    utilization: pl.DataFrame
    summary: dict
    skipped: pl.DataFrame | None = None


#: Columns of ``skipped.parquet``: the job's identity and the fields its reason reads.
SKIPPED_COLUMNS = ("job_id", "submit_s", "runtime_s", "nodes", "status", "reason")


def skipped_jobs(tagged: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``tagged`` (a jobs table with :func:`prepare`'s ``_skip`` reason column)
    that the replay leaves out, as :data:`SKIPPED_COLUMNS`, in the table's order. Why: the
    counts by reason say how many; a user checking a log needs which (session 27 review)."""
    status = pl.col("status") if "status" in tagged.columns else pl.lit(None, pl.Int32).alias("status")
    return tagged.filter(pl.col("_skip").is_not_null()).select(
        "job_id", "submit_s", "runtime_s", "nodes", status, pl.col("_skip").alias("reason"))


def prepare(jobs: pl.DataFrame, n_nodes: int,
            kind_nodes: Mapping[str, int] | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """Drop jobs the replay cannot run, counting each by reason; sort by (submit, job id).

    Reasons, checked in this order: ``bad_submit`` (submit time unknown),
    ``cancelled_before_start`` (status 5 and runtime <= 0 or unknown), ``bad_nodes`` (node
    count unknown or <= 0), ``bad_runtime`` (runtime unknown or <= 0), ``too_large`` (more
    nodes than the machine, or with ``kind_nodes`` — node kind -> its nodes — than the job's
    node kind has). A job that failed or was cancelled after it
    started held its nodes for its runtime and is replayed.
    """
    return _split(_tagged(jobs, n_nodes, kind_nodes))


def _tagged(jobs: pl.DataFrame, n_nodes: int, kind_nodes: Mapping[str, int] | None = None) -> pl.DataFrame:
    """``jobs`` with :func:`prepare`'s skip reason per job in a ``_skip`` column (null: kept)."""
    if kind_nodes is not None:
        n_nodes = pl.col("node_kind").replace_strict(dict(kind_nodes), return_dtype=pl.Int64)
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
    return jobs.with_columns(reason.alias("_skip"))


def _split(tagged: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """The kept jobs of a :func:`_tagged` table, sorted by (submit, id), and the counts by reason."""
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
    topo: Any,
    policy: policy_mod.Policy,
    sched: str = "easy",
    progress: bool = False,
    usable: np.ndarray | None = None,
    runtime_at_start: engine.RuntimeAtStart | None = None,
    kind: np.ndarray | None = None,
    kind_nodes: np.ndarray | None = None,
    compiled: bool = True,
) -> Schedule:
    """Run the engine on jobs sorted by (submit, id) under queue discipline ``sched``.

    Args:
      submit, runtime, estimate: ``(n,)`` seconds; ``estimate >= runtime`` is required so
        that EASY's reservations hold.
      nodes: ``(n,)`` requested nodes, each between 1 and the machine size.
      topo: the machine, or its name (``conf/topo``).
      policy: the allocation policy object, or its name (made with default settings).
      sched: queue discipline name (:data:`SCHEDULERS`).
      progress: show a progress bar (jobs started).
      usable: ``(N,)`` bool nodes the jobs may run on (default all).
      kind, kind_nodes: jobs of several node kinds instead of ``usable``: ``(n,)`` each job's
        row of ``kind_nodes`` ``(K, N)`` bool, the nodes of each kind (:func:`fattorus.sched.engine.run`).
      compiled: let the policy run the whole replay compiled where it has such a replay
        (``prism``: same decisions); False: the engine's Python loop.
    """
    if sched not in QUEUES:
        raise ValueError(f"unknown scheduler {sched!r}; choices: {list(SCHEDULERS)}")
    topo = _machine(topo)
    if isinstance(policy, str):
        policy = policy_mod.make(policy, topo)
    own = getattr(policy, "topo", None)
    if own is not None and own is not topo and own.config() != topo.config():
        # Its tables (groups, orderings, prisms) describe its own machine: on another it placed
        # jobs without a word (session 27 review).
        raise ValueError(f"simulate: the policy was made for machine {own.name!r}, the replay runs on {topo.name!r}")
    jobs = engine.Jobs.of(submit, runtime, estimate, nodes, topo.n_nodes, kind)
    return engine.run(jobs, topo, QUEUES[sched](), policy, progress=progress, usable=usable,
                      runtime_at_start=runtime_at_start, kind_nodes=kind_nodes, compiled=compiled)


#: The columns a jobs table needs for a replay (of ``fattorus.workload.SCHEMA``; ``estimate_s``
#: is taken from ``requested_s`` where absent, and ``status`` is optional).
NEEDED_COLUMNS = ("job_id", "submit_s", "runtime_s", "nodes")


def _check_table(jobs: pl.DataFrame, bins: Sequence[int]) -> None:
    """One-line ``ValueError`` for a table or bins a replay cannot mean anything with: a missing
    column (Polars' error from deep in its engine), a job id given twice (the outputs name
    jobs by it), bin edges not strictly increasing from 1 (they made labels such as ``9-2``)."""
    missing = [c for c in NEEDED_COLUMNS if c not in jobs.columns]
    if missing:
        raise ValueError(f"replay: the jobs table lacks column(s) {missing}; it needs {list(NEEDED_COLUMNS)} "
                         "(fattorus.workload.SCHEMA)")
    repeated = jobs["job_id"].filter(jobs["job_id"].is_duplicated())
    if len(repeated):
        raise ValueError(f"replay: job_id {repeated[0]} names {int((jobs['job_id'] == repeated[0]).sum())} jobs; "
                         "job ids name the jobs in the outputs, one each")
    try:
        metrics.check_bins(bins)
    except ValueError as err:
        raise ValueError(f"replay: {err}") from None


def replay(
    jobs: pl.DataFrame,
    topo: Any,
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
    node_kind: str | None = None,
    runtime_model: Any = None,
) -> ReplayResult:
    """Replay a workload table on machine ``topo`` and compute the run's tables.

    Args:
      jobs: workload table with at least ``job_id``, ``submit_s``, ``runtime_s``,
        ``nodes`` (and ``requested_s``/``estimate_s``, ``status`` when known).
      topo: the machine (any topology), or its name (``conf/topo``).
      policy: allocation policy name (:data:`fattorus.sched.policy.NAMES`).
      sched: ``"easy"`` (default) or ``"fcfs"``.
      policy_params: the policy's named heuristics.
      seed: seed of the policy's random draws (``to_random``).
      runtime_s: optional replacement runtimes (a speedup scenario), aligned with ``jobs``
        rows; estimates stay as logged.
      bins: upper edges of the job-size bins for the summary.
      config: the run's key choices, copied into the summary.
      extra_skips: skip counts from earlier steps (e.g. jobs dropped by node scaling).
      progress: show a progress bar.
      node_kind: the node type every job runs on (``topo.node_kind_names``; default the
        topology's first, e.g. ``XE``); nodes of other kinds stay out of the machine, and
        utilization is over the usable nodes (the torus paper's scheduling efficiency).
        :data:`BY_JOB`: each job runs on the kind its ``node_kind`` column names (the Table II
        workload's XE and XK jobs in one replay); the machine is the nodes of those kinds.
      runtime_model: optional ``model(prepared) -> runtime_at_start`` (e.g.
        :class:`fattorus.analysis.commtime.ModelRuntimes`): each job's run time is decided
        as it starts (the engine's ``runtime_at_start``); the jobs table then holds the run
        times the jobs ran for and ends with the model's per-job columns (``job_columns()``),
        and the model's own counts (``summary()``) go into the summary.
    """
    wall0 = time.perf_counter()
    _check_table(jobs, bins)
    topo = _machine(topo)
    pol = policy_mod.make(policy, topo, policy_params, seed)
    kinds, kind_nodes = job_kinds(jobs, topo) if node_kind == BY_JOB else (None, None)
    usable = topo.usable(node_kind) if kind_nodes is None else kind_nodes.any(axis=0)
    capacity = int(usable.sum())
    per_kind = None if kinds is None else {str(k): int(m.sum()) for k, m in zip(kinds, kind_nodes)}
    tagged = _tagged(_with_runtimes(jobs, runtime_s), capacity, per_kind)
    prepared, skipped = _split(tagged)
    for reason, count in (extra_skips or {}).items():
        skipped[reason] = skipped.get(reason, 0) + int(count)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    at_start = None if runtime_model is None else runtime_model.bind(prepared)
    kind = None if kinds is None else np.searchsorted(kinds, prepared["node_kind"].to_numpy())
    schedule = simulate(*cols, topo, pol, sched, progress=progress,
                        usable=None if capacity == topo.n_nodes or kind is not None else usable,
                        runtime_at_start=at_start, kind=kind, kind_nodes=kind_nodes)
    out, exposed = _outputs(prepared, schedule, topo, cols[3], runtime_model)
    util = metrics.utilization(out, capacity)
    summary = metrics.summary(
        out,
        util,
        n_nodes=topo.n_nodes,
        read=len(jobs) + sum((extra_skips or {}).values()),
        skipped=skipped,
        bins=bins,
        config=dict(config or {"topo": topo.name, "policy": policy, "sched": sched, "seed": seed}),
        replay_wall_s=time.perf_counter() - wall0,
        exposed_jobs=exposed,
    )
    summary.update(_machine_summary(topo, capacity, node_kind, kinds, kind))
    if runtime_model is not None:
        summary["runtime_model"] = runtime_model.summary()
    return ReplayResult(out, util, summary, skipped_jobs(tagged))


def _machine_summary(topo: Any, capacity: int, node_kind: str | None, kinds: np.ndarray | None,
                     kind: np.ndarray | None) -> dict[str, Any]:
    """The summary's machine entries: its full configuration (readers of the outputs need no
    conf/ lookup), the usable nodes (utilization's denominator: the jobs' node kind only), the
    node kind rule and, with :data:`BY_JOB`, the jobs replayed per kind."""
    out = {"topology": topo.config(), "usable_nodes": capacity, "node_kind": node_kind or topo.default_job_kind}
    if kinds is not None:
        out["node_kinds"] = {str(k): int(n) for k, n in zip(kinds, np.bincount(kind, minlength=len(kinds)))}
    return out


def _machine(topo: Any) -> Any:
    """``topo``, or the machine of that name (``conf/topo``) when given a name: a library user's
    ``replay(jobs, "cab")`` failed with "'str' object has no attribute ..." (session 27 review)."""
    if isinstance(topo, str):
        from fattorus import topology

        return topology.load(topo)
    return topo


#: ``node_kind`` value that runs every job on the kind its ``node_kind`` column names.
BY_JOB = "by_job"


def machine_nodes(topo: Any, node_kind: str | None) -> int:
    """The nodes a replay under the ``node_kind`` rule runs its jobs on, what ``scale=fit``
    scales for: that kind's (default the machine's first), or with :data:`BY_JOB` every
    compute node (known before the workload is: a ``by_job`` workload of one kind is scaled
    for every compute node, while the replay's machine is that kind's nodes). An unknown
    kind: :class:`fattorus.topology.TopologyError`."""
    if node_kind == BY_JOB:
        n = sum(int(topo.usable(k).sum()) for k in topo.node_kind_names if k != "service")
    else:
        n = int(topo.usable(node_kind).sum())
    if n == 0:
        # A kind whose every node a later node_kinds entry (or region) took: the run went on to
        # "workload.scale=0.0: the scale factor must be positive" (session 47's exploratory run).
        kind = "compute" if node_kind == BY_JOB else repr(node_kind or topo.default_job_kind)
        counts = {k: int(topo.usable(k).sum()) for k in topo.node_kind_names}
        from fattorus.topology import TopologyError

        raise TopologyError(f"machine {topo.name!r} has no usable {kind} nodes (nodes by kind: {counts}); "
                            "check its node_kinds (entries take only nodes no earlier entry took)")
    return n


def job_kinds(jobs: pl.DataFrame, topo: Any) -> tuple[np.ndarray, np.ndarray]:
    """The node kinds a :data:`BY_JOB` replay's jobs ask for (sorted names) and the nodes of
    each (``(K, N)`` bool, :meth:`Topology.usable`); one-line ``ValueError`` for a table
    without the column, a job without a kind or a kind the machine lacks."""
    if "node_kind" not in jobs.columns:
        raise ValueError(f"node_kind={BY_JOB} needs a workload whose jobs name their node kind (a node_kind column, as "
                         f"workload=bluewaters_table2 has); this workload has none")
    if jobs["node_kind"].null_count():
        raise ValueError(f"node_kind={BY_JOB}: {jobs['node_kind'].null_count()} job(s) name no node kind")
    kinds = np.array(sorted(str(k) for k in jobs["node_kind"].unique().to_list()))
    for k in kinds:
        if k not in topo.node_kind_names or k == "service":
            raise ValueError(f"node_kind={BY_JOB}: a job asks for node kind {str(k)!r}; {topo.name!r} has compute kinds "
                             f"{[n for n in topo.node_kind_names if n != 'service']}")
    return kinds, np.stack([topo.usable(str(k)) for k in kinds])


def _with_runtimes(jobs: pl.DataFrame, runtime_s: np.ndarray | None) -> pl.DataFrame:
    """``jobs`` with ``runtime_s`` replaced (a speedup scenario); estimates stay as logged."""
    if runtime_s is None:
        return jobs
    if len(runtime_s) != len(jobs):
        raise ValueError(f"runtime_s has {len(runtime_s)} entries for {len(jobs)} jobs")
    # NaN marks a runtime the log does not know (a null turned into NumPy).
    return _with_estimate(jobs).with_columns(
        pl.Series("runtime_s", np.asarray(runtime_s, np.float64), nan_to_null=True)
    )


def _with_estimate(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` with ``estimate_s`` (kept when present: a speedup run plans with the logged one)."""
    if "estimate_s" in jobs.columns:
        return jobs
    if "requested_s" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(None, pl.Float64).alias("requested_s"))
    return workload.with_estimate(jobs)


def _jobs_table(prepared: pl.DataFrame, schedule: Schedule, topo: Any) -> pl.DataFrame:
    nodes = prepared["nodes"].to_numpy().astype(np.int64)
    start = schedule.start
    runtime = prepared["runtime_s"].to_numpy() if schedule.runtime is None else schedule.runtime
    submit = prepared["submit_s"].to_numpy()
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
            "job_type": _per_size(nodes, lambda n: topo.class_name(int(topo.size_class(n))), pl.String),
            "aph": aph_of(topo, schedule.alloc),
            # The cast: polars makes a fixed-size Array of equally long numpy arrays even when
            # asked for a List, and the documented column (docs/outputs.md) is a List.
            "alloc": pl.Series("alloc", [a.astype(np.int32) for a in schedule.alloc],
                               dtype=pl.List(pl.Int32)).cast(pl.List(pl.Int32)),
            "backfilled": schedule.backfilled,
            "shadow_s": schedule.shadow,
        }
    )


def _outputs(prepared: pl.DataFrame, schedule: Schedule, topo: Any, nodes: np.ndarray,
             runtime_model: Any = None) -> tuple[pl.DataFrame, np.ndarray]:
    """The jobs table with every per-job figure, and the exposure flags."""
    out = _jobs_table(prepared, schedule, topo)
    exposed = metrics.exposed(out, topo)
    # Appended last so that the columns of earlier outputs keep their positions.
    out = out.with_columns(pl.Series("exposed", exposed),
                           _per_size(nodes, lambda n: float(ideal_aph(topo, n)), pl.Float64).alias("ideal_aph"))
    out = out.with_columns(_shape_columns(schedule.alloc, topo))
    # Then the workload's application names, and the run-time model's per-job columns.
    if "app" in prepared.columns:
        out = out.with_columns(prepared["app"].alias("app"))
    if runtime_model is not None:
        out = out.with_columns(pl.Series(name, values) for name, values in runtime_model.job_columns().items())
    return out, exposed


def _shape_columns(alloc: list[np.ndarray], topo: Any) -> list[pl.Series]:
    """``max_hops`` of every job, then the topology's own placement figures (torus: ``bbox``,
    ``bbox_fill``), appended after the columns earlier outputs had."""
    cols = [pl.Series("max_hops", [topo.max_hops_of(a) for a in alloc], dtype=pl.Int32)]
    rows = [topo.placement_metrics(a) for a in alloc]
    for key in (rows[0] if rows else {}):
        cols.append(pl.Series(key, [r[key] for r in rows]))
    return cols


def _per_size(nodes: np.ndarray, value, dtype: pl.DataType) -> pl.Series:
    """``value(n)`` for each job size, computed once per distinct size."""
    sizes, inverse = np.unique(nodes, return_inverse=True)
    per_size = pl.Series([value(int(n)) for n in sizes], dtype=dtype)
    return per_size.gather(inverse.astype(np.int64))
