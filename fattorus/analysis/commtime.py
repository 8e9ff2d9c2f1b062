"""Communication time of jobs from the flow-level bandwidth model, and their slowdown under
interference (issue 14, items 1–2).

A job is an allocation (node ids in allocation order) and a rank-level traffic pattern
(:mod:`fattorus.analysis.patterns`; rank ``i`` on node ``alloc[i // ranks_per_node]``). One
step of its pattern sends every flow once; with the flows' weighted max-min fair rates
(:func:`fattorus.kernels.maxmin.maxmin_rates`) over the topology's static routes and link
bandwidths, the job's step time is its slowest flow's ``bytes / rate``
(:func:`fattorus.kernels.maxmin.step_time`). Units: bytes and the topology's bandwidth unit
(GB/s on the tori and dragonflies, cables on a fat-tree: 1 per link, an L2--core trunk its cables), so times are in
``bytes / bandwidth unit`` — only their ratios (slowdowns) are used.

Per job, :func:`slowdowns` gives the step time

* ``alone``: the job by itself in its placement (its own traffic still contends),
* ``ideal``: by itself in the topology's ideal compact placement of its size — the least
  step time over :meth:`~fattorus.topology.base.Topology.ideal_placements` (one placement on
  fat-trees and dragonflies, the first nodes of each ordering and the lowest-APH ball on
  tori),
* ``together``: with every other job of the set running at the same time,

and ``slowdown = together / ideal``. A job's run time then scales as
``(1 − c) + c · slowdown`` for a communication fraction ``c`` (:func:`runtime_factor`).

Max-min fairness is not monotone: adding a flow can *raise* another flow's rate (it slows a
third flow that was taking bandwidth the second could use), so a job can run faster beside
another job than alone. The model reports that as it is (``together < alone``); tests
check the properties that do hold (an isolated job has slowdown 1; jobs on disjoint links do
not affect each other).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import polars as pl

from fattorus import devices
from fattorus.analysis import comm_fraction, patterns
from fattorus.kernels import threefry
from fattorus.kernels.linkmarks import add_crossings, connected, used_links
from fattorus.kernels.maxmin_first_round import Workspace as FirstRoundWorkspace, first_round_unchecked
from fattorus.kernels.maxmin_compiled import (compact_routes, goal_step_time, goal_step_time_compact,
                                              maxmin_rates_compiled, new_workspace)
from fattorus.topology.base import Topology, one_to_one

if TYPE_CHECKING:
    import jax

# JAX (the JAX solvers, the compiled routing, the fluid drain) is imported where those run, not
# here: a ``speedup=model`` replay on the CPU solves with the compiled host solvers and routes
# with the families' host routers, and need not load JAX (~1 s a process).


#: The JAX goal solves (:func:`goal_step_time_jax`, the replay's before session 29) run as one stage of the solver
#: (``stage_min_flows``): most stop after a round or two, so the shorter arrays of later
#: stages rarely pay, while each stage is one more loop to compile per flow bucket — on a
#: 30-day Atlas x2 on Cab replay the first run took 15.0 s with stages and 12.4 s without
#: (`to`; `ta` 11.5 -> 8.3 s), warm runs the same within noise, every slowdown identical.
GOAL_STAGE_MIN_FLOWS = 1 << 30

#: Memory for the ideal placements' routes of key-free patterns kept between starts (bytes):
#: a month's replay meets ~100 (pattern, size) pairs, most of them small jobs.
IDEAL_ROUTES_BYTES = 64 * 2**20

class Job(NamedTuple):
    """A running job for the model: its nodes (allocation order) and its rank-level traffic."""

    alloc: np.ndarray
    traffic: patterns.Traffic
    ranks_per_node: int = 1


class Slowdown(NamedTuple):
    """Per job ``(J,)`` step times (bytes / bandwidth unit) and ``slowdown = together / ideal``."""

    alone: np.ndarray
    ideal: np.ndarray
    together: np.ndarray
    slowdown: np.ndarray


def _flows(topo: Topology, jobs: Sequence[Job], routing: str = "static",
           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Route ids ``(F, L)``, bytes ``(F,)`` and owning job ``(F,)`` of every job's flows,
    routed by ``routing`` (:meth:`~fattorus.topology.base.Topology.flow_routes`)."""
    src, dst, nbytes, owner = [], [], [], []
    for j, job in enumerate(jobs):
        s, d, b = patterns.to_nodes(job.alloc, job.traffic, job.ranks_per_node)
        src.append(s)
        dst.append(d)
        nbytes.append(np.broadcast_to(np.asarray(b, np.float64), np.shape(s)))
        owner.append(np.full(len(s), j, np.int32))
    src, dst = np.concatenate(src), np.concatenate(dst)
    F = len(src)
    if F == 0:
        return np.zeros((0, topo.max_route_links), np.int32), np.zeros(0), np.zeros(0, np.int32)
    if routing != "static":  # the family's other routes (adaptive, Valiant), from the host
        nbytes = np.concatenate(nbytes)
        return on_bundles(topo, topo.flow_routes(src, dst, nbytes, routing, seed)), nbytes, np.concatenate(owner)
    host = topo.host_routes(src, dst)  # the family's host router, where it has one: no JAX call
    if host is not None:
        return on_bundles(topo, host), np.concatenate(nbytes), np.concatenate(owner)
    from fattorus.kernels.maxmin import bucket_size
    from fattorus.kernels.routes import route_links

    # Padded to a bucket so that a family's jit-compiled routing compiles once per bucket, not
    # once per flow count (the pad rows are node 0 to itself, dropped).
    pad = bucket_size(F) - F
    src, dst = np.r_[src, np.zeros(pad, src.dtype)], np.r_[dst, np.zeros(pad, dst.dtype)]
    # Compiled routing (kernels.routes.route_links): one compilation per bucket, not one per
    # operation of an eager family router.
    route_ids = on_bundles(topo, np.asarray(route_links(topo, src, dst), np.int32)[:F])
    return route_ids, np.concatenate(nbytes), np.concatenate(owner)


def on_bundles(topo: Topology, route_ids: np.ndarray) -> np.ndarray:
    """``route_ids`` (any shape, ``-1`` padded) with every link moved to the first link of its
    bundle (:meth:`~fattorus.topology.base.Topology.link_bundles`: parallel cables share their
    traffic), so that a solve over :func:`solver_capacity` sees each bundle as one link; the
    same array where the topology has no bundles."""
    bundles = topo.link_bundles()
    if bundles is None:
        return route_ids
    return np.where(route_ids >= 0, bundles[0][np.maximum(route_ids, 0)], -1).astype(route_ids.dtype)


def solver_capacity(topo: Topology) -> np.ndarray:
    """``(n_links,)`` capacities the flow model solves with: ``topo.link_bandwidth``, a bundle
    of parallel links (:meth:`~fattorus.topology.base.Topology.link_bundles`) holding its summed
    bandwidth on its first link (the only one :func:`_flows`' routes name)."""
    bw = np.asarray(topo.link_bandwidth, np.float64)
    bundles = topo.link_bundles()
    if bundles is None:
        return bw
    first = bundles[0]
    pooled = np.zeros_like(bw)
    np.add.at(pooled, first, bw)
    return np.where(first == np.arange(len(bw)), pooled, bw)


def goal_step_time_jax(route_ids: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                       sparse: bool = False) -> float:
    """Step time of the first ``own`` flows of ``route_ids`` when all run together, solved by
    :func:`~fattorus.kernels.maxmin.maxmin_rates` with a ``goal`` (one stage; from compact
    crossing lists when ``sparse``, as on topologies with long routes: :func:`_sparse_incidences`):
    what a ``speedup=model`` replay solved per start until the compiled goal solve
    (:mod:`fattorus.kernels.maxmin_compiled`) took over, kept as its reference (the tests
    compare the two bit for bit). ``capacity``: float32 ``(E,)`` (:func:`solver_capacity`)."""
    import jax.numpy as jnp

    from fattorus.kernels.maxmin import bucket_size, flow_incidences, maxmin_rates

    if own == 0:
        return 0.0
    F = bucket_size(len(nbytes))
    pad = F - len(nbytes)
    r = np.concatenate([route_ids, np.full((pad, route_ids.shape[1]), -1, np.int32)])
    active = np.arange(F) < len(nbytes)
    # Only the own flows' slowest time is wanted: the solve stops once it is known.
    goal = np.zeros(F, np.float32)
    goal[:own] = nbytes[:own]
    incidences = tuple(jnp.asarray(x) for x in flow_incidences(r)) if sparse else None
    rates = maxmin_rates(r, jnp.asarray(capacity, jnp.float32), active=active, goal=goal,
                         stage_min_flows=GOAL_STAGE_MIN_FLOWS, incidences=incidences)
    rate = np.asarray(rates.rate, np.float64)[:own]
    with np.errstate(divide="ignore"):
        t = np.where(np.isinf(rate), 0.0, nbytes[:own] / rate)
    return float(t.max())


#: Topologies whose routes have at least this many slots are solved from compact crossing
#: lists (:func:`fattorus.kernels.maxmin.flow_incidences`) rather than the padded routes: on
#: Blue Waters a route has 38 slots and a first-fit job's flows fill ~16 % of them, so the
#: per-link scatters over padded slots cost several times the real work (a 5-wave Table II
#: replay under first fit 173 -> 117 s, same jobs). Fat-trees and dragonflies (6-7 slots,
#: ~60 % filled) keep the padded routes: there the lists cost what they save, and deciding
#: per solve instead (by the filled share) made the 30-day `to` replay on Cab slower (warm
#: 4.3 -> 5.1 s, compiling 6 -> 16 s). Same rates bit for bit either way: the same crossings
#: in the same order.
SPARSE_ROUTE_SLOTS = 16


def _sparse_incidences(topo: Topology, route_ids: np.ndarray) -> tuple[jax.Array, jax.Array] | None:
    """Compact crossing lists for a solve over ``route_ids`` on ``topo`` when its routes are
    long (:data:`SPARSE_ROUTE_SLOTS`), else None (the solver scatters the padded slots)."""
    if topo.max_route_links < SPARSE_ROUTE_SLOTS:
        return None
    import jax.numpy as jnp

    from fattorus.kernels.maxmin import flow_incidences

    return tuple(jnp.asarray(x) for x in flow_incidences(route_ids))


#: How a step's flows finish (:func:`step_times`): at the rates of the moment they all start,
#: or draining, the rates solved again as flows finish (:mod:`fattorus.analysis.fluid`).
COMPLETIONS = ("steady", "fluid")


def step_times(topo: Topology, jobs: Sequence[Job], completion: str = "steady",
               compiled: bool | None = None, routing: str = "static", seed: int = 0) -> np.ndarray:
    """Step time of each job when all of ``jobs`` run at once, ``(J,)`` (s when link
    bandwidths are bytes/s): with ``completion="steady"`` its slowest flow's bytes over that
    flow's max-min rate when all flows start; with ``"fluid"`` its last flow's finish time
    when the rates are solved again each time flows finish (:mod:`fattorus.analysis.fluid`).
    ``compiled``: solve with the compiled solver
    (:func:`fattorus.kernels.maxmin_compiled.maxmin_rates_compiled`, the JAX solver's rates
    bit for bit on the CPU, and no compilation per flow-count bucket) rather than JAX; None
    (default): where JAX computes on the CPU. The same step times either way on a CPU.
    ``routing``: the flows' routes, one of ``topo.routings`` (``static``: the family's; fat-trees
    ``adaptive``: up-paths chosen by the load of the flows solved together; dragonflies
    ``valiant``: each node pair through an intermediate group drawn from ``seed``)."""
    if completion not in COMPLETIONS:
        raise ValueError(f"completion {completion!r}: choices {list(COMPLETIONS)}")
    if routing not in topo.routings:
        raise ValueError(f"routing {routing!r}: {topo.name} offers {list(topo.routings)}")
    if not len(jobs):
        return np.zeros(0)
    for j, job in enumerate(jobs):  # a node past the machine was named as a link id past it
        try:
            topo.node_ids(job.alloc)
        except ValueError as err:
            raise ValueError(f"jobs[{j}].alloc: {err}") from None
    route_ids, nbytes, owner = _flows(topo, jobs, routing, seed)
    F = len(nbytes)
    if F == 0:
        return np.zeros(len(jobs))
    if compiled is None:
        compiled = devices.jax_on_cpu()
    if completion == "fluid":
        from fattorus.analysis import fluid

        finish, _ = fluid.finish_times(route_ids, solver_capacity(topo).astype(np.float32), nbytes,
                                       sparse=topo.max_route_links >= SPARSE_ROUTE_SLOTS, compiled=compiled)
        out = np.zeros(len(jobs))
        np.maximum.at(out, owner, finish)
        return out
    from fattorus.kernels.maxmin import bucket_size, maxmin_rates, step_time, step_time_host

    if compiled:
        rate = maxmin_rates_compiled(route_ids, solver_capacity(topo).astype(np.float32))
        return step_time_host(rate, nbytes, owner, len(jobs)).astype(np.float64)
    import jax.numpy as jnp

    pad = bucket_size(F) - F  # one compilation of the solver per bucket, not per flow count
    route_ids = np.concatenate([route_ids, np.full((pad, route_ids.shape[1]), -1, np.int32)])
    nbytes, owner = np.r_[nbytes, np.zeros(pad)], np.r_[owner, np.full(pad, -1, np.int32)]
    cap = jnp.asarray(solver_capacity(topo).astype(np.float32))
    rates = maxmin_rates(jnp.asarray(route_ids), cap, active=jnp.asarray(np.arange(F + pad) < F),
                         incidences=_sparse_incidences(topo, route_ids)).rate
    return np.asarray(step_time(rates, jnp.asarray(nbytes, jnp.float32), jnp.asarray(owner), len(jobs)), np.float64)


def slowdowns(topo: Topology, jobs: Sequence[Job], routing: str = "static", seed: int = 0) -> Slowdown:
    """Step times alone, in the ideal placement and together, and the slowdowns (module
    docstring), every solve with ``routing`` (:func:`step_times`). A job whose ideal step
    time is 0 (no traffic leaves its nodes) has slowdown 1."""
    kw = {"routing": routing, "seed": seed}
    together = step_times(topo, jobs, **kw)
    alone = np.array([step_times(topo, [job], **kw)[0] for job in jobs])
    ideal = np.array([min(step_times(topo, [job._replace(alloc=nodes)], **kw)[0]
                          for nodes in topo.ideal_placements(len(job.alloc))) for job in jobs])
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(ideal > 0, together / np.where(ideal > 0, ideal, 1), 1.0)
    return Slowdown(alone, ideal, together, slow)


def runtime_factor(slowdown: np.ndarray, comm_fraction: float | np.ndarray) -> np.ndarray:
    """Run-time multiplier ``(1 − c) + c · slowdown`` of jobs that spend a fraction ``c`` of
    their ideal run time communicating."""
    c = np.asarray(comm_fraction, np.float64)
    if np.any((c < 0) | (c > 1)):
        raise ValueError(f"communication fraction must be in [0, 1], got {comm_fraction}")
    return (1 - c) + c * np.asarray(slowdown, np.float64)


def _crossing_ids(routes: np.ndarray | tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Every link id ``routes`` cross, flow by flow (padded routes flattened, ``-1`` kept; or
    compact lists' links)."""
    return routes[1] if isinstance(routes, tuple) else np.asarray(routes).reshape(-1)


def _padded(routes: np.ndarray | tuple[np.ndarray, np.ndarray], width: int) -> np.ndarray:
    """``routes`` as padded ``(F, width)`` rows (compact lists written out, ``-1`` after each
    flow's links; padded routes as they are)."""
    if not isinstance(routes, tuple):
        return routes
    lengths, links = routes
    out = np.full((len(lengths), width), -1, np.int32)
    out[np.arange(width)[None, :] < np.asarray(lengths)[:, None]] = links  # row by row, in flow order
    return out


def same_network(a: np.ndarray, b: np.ndarray, capacity: np.ndarray) -> bool:
    """Whether padded routes ``a`` and ``b`` (``(F, L)`` link ids, ``-1`` padded) are one flow
    network up to renaming links: the same empty slots, and a one-to-one map of ``a``'s links
    onto ``b``'s, between links of equal ``capacity``, that turns every route of ``a`` into
    the route of ``b`` in the same slots.

    Then max-min fairness gives both the same rates — and :func:`~fattorus.kernels.maxmin.maxmin_rates`
    the same floats: every per-link sum adds the same values in the same (crossing) order, only
    at another index — so a job whose placement is its ideal one renamed has slowdown exactly 1.
    """
    if a.shape != b.shape:
        return False
    used = a >= 0
    if not np.array_equal(used, b >= 0):
        return False
    a, b = a[used], b[used]
    return one_to_one(a, b) and bool(np.array_equal(capacity[a], capacity[b]))


def _local_routes_use_node_links_only(topo: Topology) -> bool:
    """Whether every route between two nodes of one innermost group crosses node links only
    (link class 0), all of one bandwidth: checked on the first two nodes of every group."""
    router = np.asarray(topo.group_of(0, np.arange(topo.n_nodes)))
    first = np.r_[True, router[1:] != router[:-1]]
    a = np.flatnonzero(first)
    b = a + 1
    keep = (b < topo.n_nodes) & (router[np.minimum(b, topo.n_nodes - 1)] == router[a])
    if not keep.any():
        return False
    # The family's host router where it has one (the same ids; the compiled routing cost a
    # JAX compilation for this batch shape, ~1.6-1.9 s on a torus or a dragonfly, every run),
    # else the compiled routing: the eager family router would compile each of its operations.
    links = topo.host_routes(a[keep], b[keep])
    if links is None:
        from fattorus.kernels.routes import route_links

        links = np.asarray(route_links(topo, a[keep], b[keep]))
    used = links[links >= 0]
    cls, bw = np.asarray(topo.link_class), np.asarray(topo.link_bandwidth)
    return bool((cls[used] == 0).all() and np.ptp(bw[cls == 0]) == 0)


#: A traffic pattern with its parameters: ``(name, ((keyword, value), ...))``, the name one of
#: :data:`fattorus.analysis.patterns.PATTERNS` and the keywords its function's (sorted).
PatternSpec = tuple[str, tuple[tuple[str, Any], ...]]


def parse_app_patterns(mapping: Mapping[str, Any] | None) -> dict[str, PatternSpec]:
    """``{app: "pattern" | {"pattern": name, keyword: value, ...}}`` (``speedup.app_patterns``)
    -> ``{app: PatternSpec}``. Each entry is tried on a 64-rank job, so an unknown pattern or
    a keyword its function does not take is one ``ValueError`` line naming the application."""
    out: dict[str, PatternSpec] = {}
    for app, spec in (mapping or {}).items():
        if isinstance(spec, str):
            name, params = spec, {}
        elif isinstance(spec, Mapping) and isinstance(spec.get("pattern"), str):
            name, params = spec["pattern"], {str(k): v for k, v in spec.items() if k != "pattern"}
        else:
            raise ValueError(f"app_patterns.{app}: give a pattern name or {{pattern: NAME, keyword: value, ...}}, "
                             f"got {spec!r}")
        if name not in patterns.PATTERNS:
            raise ValueError(f"app_patterns.{app}: unknown pattern {name!r}; choices: {sorted(patterns.PATTERNS)}")
        try:
            patterns.make(name, threefry.prng_key(0), 64, **params)
        except (TypeError, ValueError) as err:
            raise ValueError(f"app_patterns.{app}: pattern {name!r} with {params}: {err}") from None
        out[str(app)] = (name, tuple(sorted(params.items())))
    return out


def describe_pattern(spec: PatternSpec) -> str:
    """``grid_a2a(along=2, ndim=2)``, or the bare name without parameters."""
    name, params = spec
    return name if not params else f"{name}({', '.join(f'{k}={v}' for k, v in params)})"


#: Relative overshoot of a run time past its estimate that is the model's float32 rounding,
#: not a kill (the run time is still cut at the estimate): ~8 float32 ulps.
KILL_ROUNDING = 1e-6


@dataclasses.dataclass
class ModelRuntimes:
    """``speedup=model``: each job's run time decided as it starts, from the flow model.

    At a job's start the jobs running then and the job itself (on its placement) communicate
    together; its slowdown is its step time then over its step time alone in the ideal
    compact placement, and its run time is the logged one times ``(1 − c) + c · slowdown``
    (``c = comm_fraction``; the logged run time is taken as the job's interference-free run
    time). A run time past the job's estimate is cut at the estimate — the job is killed at its
    time limit, as a real scheduler does — and counted (``killed_at_estimate``) where it passes
    by more than the model's rounding (:data:`KILL_ROUNDING`). Each job's
    pattern is drawn from ``mix`` with the run's seed (as in the interference tool), its
    traffic from the same key folded with its index. With ``app_patterns``
    (:func:`parse_app_patterns`) a job whose ``app`` (the workload's column, e.g. the torus
    paper's Table II applications) is listed takes its application's pattern instead; the
    others keep their draw. What the model leaves out: a job's run time is fixed at its start;
    jobs that start later do not slow it down (and it does not slow jobs that started before it).
    """

    topo: Topology
    mix: Mapping[str, float]
    comm_fraction: Any = 0.3  # a number, a range or a table (fattorus.analysis.comm_fraction)
    seed: int = 0
    ranks_per_node: int = 1
    app_patterns: Mapping[str, PatternSpec] | None = None

    def _check_flows(self, prepared: Any) -> None:
        """Before the replay: a one-line ``ValueError`` when some job's drawn pattern would make
        more flows (or a larger array) than one job's traffic may have
        (:func:`fattorus.analysis.patterns.check_flows`), naming the largest such job; it ran
        out of memory at that job's start. Every size a pattern meets is checked
        (:func:`fattorus.analysis.patterns.first_refused`)."""
        nodes = prepared["nodes"].to_numpy()
        first: dict[tuple[str, tuple[tuple[str, Any], ...]], dict[int, int]] = {}  # a job of each rank count
        for j, key in enumerate(zip(self._names, self._params)):
            first.setdefault(key, {}).setdefault(int(nodes[j]) * self.ranks_per_node, j)
        for (name, params), jobs in first.items():
            refused = patterns.first_refused(name, jobs, **dict(params))
            if refused is not None:
                j = jobs[refused[0]]
                who = f"job {prepared['job_id'][j]}" if "job_id" in prepared.columns else f"job {j}"
                raise ValueError(f"speedup.patterns: {refused[1]} ({who} of {int(nodes[j]):,} nodes drew it)")

    def bind(self, prepared: Any) -> Any:
        """The engine's ``runtime_at_start`` for the jobs of ``prepared`` (the replay's job
        table: ``runtime_s``, ``estimate_s`` in replay order)."""
        from fattorus.analysis import interference

        self._cf = comm_fraction.parse(self.comm_fraction)
        self._base = prepared["runtime_s"].to_numpy().astype(np.float64)
        self._estimate = prepared["estimate_s"].to_numpy().astype(np.float64)
        # Jobs whose log gives no requested time: their estimate is their logged run time, so any
        # slowdown cuts them; counted apart in the summary (a time limit the log never stated).
        requested = (prepared["requested_s"].to_numpy().astype(np.float64) if "requested_s" in prepared.columns
                     else np.full(len(self._estimate), np.nan))
        self._unrequested = ~(requested > 0)  # null (NaN) or <= 0: unknown
        # Jobs that ran to their stated limit in the log (a TIMEOUT there): any slowdown cuts
        # them too; counted apart (session 47: 299 of 380 kills on an operator's sacct log).
        self._at_limit = ~self._unrequested & (self._base >= self._estimate)
        self._key = threefry.seed_key(self.seed, 0xF10)  # fold_in(PRNGKey(seed), 0xF10), JAX's bits
        self._names = interference.assign_patterns(self._key, len(self._base), self.mix)
        self._params: list[tuple[tuple[str, Any], ...]] = [()] * len(self._base)
        self.by_app = 0  # jobs whose pattern their application named
        if self.app_patterns:
            if "app" not in prepared.columns:
                raise ValueError("this speedup scenario draws each job's pattern from its application, and this workload's jobs "
                                 "name none (an app column, as workload=bluewaters_table2 has): use +speedup=model")
            for j, app in enumerate(prepared["app"].to_list()):
                if app in self.app_patterns:
                    self._names[j], self._params[j] = self.app_patterns[app]
                    self.by_app += 1
        self._check_flows(prepared)
        # Each job's c, by its pattern (an application's where it names one) or size.
        self._c = comm_fraction.per_job(self._cf, self._key, self._names, prepared["nodes"].to_numpy())
        self._flows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # Long padded routes (Blue Waters pads ~6 links to 38 slots): every job's flows are kept
        # as compact crossing lists (lengths, links) instead, from the family's router where it
        # writes them straight (:meth:`Topology.host_route_lists`).
        self._compact_lists = self.topo.max_route_links >= SPARSE_ROUTE_SLOTS
        self._cap_f32 = solver_capacity(self.topo).astype(np.float32)
        self._workspace = new_workspace(len(self._cap_f32))  # lent to every goal solve
        self._first_round = FirstRoundWorkspace(len(self._cap_f32))
        self._count = np.zeros(len(self._cap_f32), np.int32)  # crossings of each link by the jobs in _counted
        self._counted: dict[int, np.ndarray] = {}  # job -> the routes counted in _count
        self.first_round = 0  # solves the first filling round decided (maxmin_first_round)
        self.slowdown = np.full(len(self._base), np.nan)
        self.killed = 0
        self.killed_unrequested = 0  # of them, jobs the log gave no requested time
        self.killed_at_limit = 0  # ... and jobs that ran to their requested time in the log
        self._busy_ns = self._useful_ns = self._completed_ns = 0.0
        self._ideal: dict[tuple[Any, ...], float] = {}
        self._keyless: dict[tuple[Any, ...], patterns.Traffic] = {}
        self._ideal_routes: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._ideal_routes_bytes = 0
        self._placements: dict[int, tuple[np.ndarray, ...]] = {}
        self._capacity = solver_capacity(self.topo)
        self.renamed = 0  # starts decided by a renaming shortcut (no solve)
        self.built_late = 0  # jobs whose flows were built after their start, for a later job
        self._nodes: dict[int, np.ndarray] = {}  # nodes of the jobs whose flows count (built or pending)
        self._keys: dict[int, np.ndarray] = {}  # their interference keys, computed when asked
        self._pending: set[int] = set()  # jobs whose flows are not built yet
        self._links: dict[int, np.ndarray] = {}
        self._shared_class = np.asarray(self.topo.link_class) > 0
        self._local_ok = _local_routes_use_node_links_only(self.topo)
        self._router = np.asarray(self.topo.group_of(0, np.arange(self.topo.n_nodes)))
        return self._at_start

    def _traffic(self, j: int, n_nodes: int) -> patterns.Traffic | None:
        """Job ``j``'s rank-level traffic on ``n_nodes`` nodes (None: fewer than two ranks)."""
        n = n_nodes * self.ranks_per_node
        if n < 2:
            return None
        name, params = self._names[j], self._params[j]
        if name in patterns.KEYLESS:  # a function of (pattern, its parameters, n) alone: drawn once per size
            cached = self._keyless.get((name, params, n))
            if cached is None:
                cached = self._keyless[(name, params, n)] = patterns.make(name, self._key, n, **dict(params))
            return cached
        # jax.random.fold_in's bits, on the host (a JAX call per start cost ~0.1 ms)
        return patterns.make(name, threefry.fold_in(self._key, j), n, **dict(params))

    def _job_flows(self, traffic: patterns.Traffic | None,
                   nodes: np.ndarray) -> tuple[np.ndarray | tuple[np.ndarray, np.ndarray], np.ndarray]:
        """Routes and bytes of a job's flows (``traffic``) on ``nodes``: :func:`_flows` of
        the one job, straight from the family's host router where it has one (the general
        path's lists and concatenations cost ~30 µs a start). The routes are padded, or
        compact crossing lists on long routes (:meth:`_solver_flows`)."""
        if traffic is None:
            return self._solver_flows(np.zeros((0, self.topo.max_route_links), np.int32)), np.zeros(0)
        src, dst, nbytes = patterns.to_nodes(nodes, traffic, self.ranks_per_node)
        routes = None
        if self._compact_lists and len(src) and self.topo.link_bundles() is None:
            routes = self.topo.host_route_lists(src, dst)  # no padded rows made (or read) at all
        if routes is None:
            host = self.topo.host_routes(src, dst) if len(src) else None
            if host is None:
                route_ids, nbytes, _ = _flows(self.topo, [Job(np.asarray(nodes), traffic, self.ranks_per_node)])
                return self._solver_flows(route_ids), nbytes
            routes = self._solver_flows(on_bundles(self.topo, host))
        return routes, np.broadcast_to(np.asarray(nbytes, np.float64), src.shape).copy()

    def _solve(self, flows: np.ndarray | tuple[np.ndarray, np.ndarray], nbytes: np.ndarray, own: int,
               count: np.ndarray | None = None) -> float:
        """Step time of the first ``own`` flows when all ``flows`` run together: read off the
        first filling round where that round decides it (:meth:`_first_round_step`), else
        solved (:meth:`_step`). The same floats either way."""
        got = self._first_round_step(flows, nbytes, own, count)
        if got is not None:
            self.first_round += 1
            return got
        return self._step(flows, nbytes, own)

    def _first_round_step(self, flows: np.ndarray | tuple[np.ndarray, np.ndarray], nbytes: np.ndarray, own: int,
                          count: np.ndarray | None) -> float | None:
        """:func:`~fattorus.kernels.maxmin_first_round.first_round_step_time` (``None`` where the
        first round does not decide); ``count``: each link's crossings by ``flows``
        (:meth:`_counts`), counted there if ``None``. The inputs are this model's own routes
        and bytes, so they are not checked again."""
        return first_round_unchecked(flows, nbytes, own, self._cap_f32, self._first_round, count)

    def _step(self, flows: np.ndarray | tuple[np.ndarray, np.ndarray], nbytes: np.ndarray, own: int) -> float:
        """Step time of the first ``own`` flows when all ``flows`` (padded routes, or compact
        crossing lists on long routes: :meth:`_solver_flows`) run together: the compiled goal
        solve (:mod:`fattorus.kernels.maxmin_compiled`, the JAX solve's floats on the CPU,
        ~4-8x faster per solve; :func:`goal_step_time_jax` is the same solve in JAX)."""
        if isinstance(flows, tuple):
            return goal_step_time_compact(flows[0], flows[1], nbytes, own, self._cap_f32, self._workspace)
        return goal_step_time(flows, nbytes, own, self._cap_f32, self._workspace)

    def _solver_flows(self, routes: np.ndarray | tuple[np.ndarray, np.ndarray]) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """``routes`` as the solve takes them: compact crossing lists where routes are long
        (:data:`SPARSE_ROUTE_SLOTS`: Blue Waters pads ~6 links to 38 slots, and concatenating
        the running jobs' padded routes at every start cost more than some solves; 6.1 -> 4.5 s
        for two Table II waves, same slowdowns), the padded routes elsewhere (6 slots, ~60 %
        filled: converting cost what it saved). Lists already made are taken as they are."""
        if isinstance(routes, tuple):
            return routes
        return compact_routes(routes) if self._compact_lists else routes

    def _together(self, j: int, sharing: list[int]) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The flows of a together solve: job ``j``'s first, then those of ``sharing`` in
        order (padded routes, or compact lists on long routes)."""
        parts = [self._flows[k][0] for k in [j, *sharing]]
        if not self._compact_lists:
            return np.concatenate(parts)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _one_router(self, nodes: np.ndarray) -> bool:
        """Whether ``nodes`` share one innermost group (the level-0 group: a router, a fat-tree switch)."""
        r = self._router[np.asarray(nodes)]
        return bool(len(r)) and bool((r == r[0]).all())

    def _shared_links(self, route_ids: np.ndarray | tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The links of ``route_ids`` (padded, or compact lists) another job could share (beyond
        node links), unique."""
        return used_links(_crossing_ids(route_ids).reshape(-1, 1), self._shared_class)

    def _sharing(self, j: int, others: list[int]) -> list[int]:
        """The jobs of ``others`` (in their order) connected to job ``j`` through shared links,
        directly or through other such jobs: max-min rates decompose over the connected parts
        of the flow-link graph, so job ``j``'s rates depend on these jobs' flows alone (and
        their per-link sums keep the order they had with every job present)."""
        members = connected(self._links[j], [self._links[k] for k in others], self.topo.n_links)
        return [k for i, k in enumerate(others) if members[i]]

    def _ideal_placements(self, n: int) -> tuple[np.ndarray, ...]:
        """:meth:`Topology.ideal_placements` of ``n`` nodes, computed once per size."""
        got = self._placements.get(n)
        if got is None:
            got = self._placements[n] = self.topo.ideal_placements(n)
        return got

    def _slowdown(self, j: int, nodes: np.ndarray, ideals: tuple[np.ndarray, ...], running: set[int]) -> float:
        """Job ``j``'s step time with the running jobs over its least step time alone on the
        ``ideals`` placements; the ideal one cached per (pattern, size) for key-free patterns.
        The renaming shortcuts apply only against a single ideal placement (fat-trees,
        dragonflies): with several (a torus), a placement renamed from one of them need not
        be the best, so every candidate is solved."""
        self._nodes[j] = np.asarray(nodes)
        single = len(ideals) == 1
        if single and self._renamed_placement(nodes, ideals[0]) and not self._reach(j, running, direct=True):
            # Exact shortcut: the placement is the ideal one renamed for every pair of its nodes
            # (whatever the traffic), and no running job can share a link with it (disjoint
            # interference keys): its together and ideal problems are one network, slowdown 1,
            # decided without drawing its traffic. Its flows are built if a later job needs them.
            self._pending.add(j)
            self.renamed += 1
            return 1.0
        if self._pending & running:  # build the pending jobs this one could be connected to
            for k in sorted(self._pending & self._reach(j, running)):
                self._pending.discard(k)
                self._build(k)
        traffic = self._traffic(j, len(nodes))  # drawn once: the same traffic in both placements
        own_routes, own_bytes = self._flows[j] = self._job_flows(traffic, nodes)
        self._links[j] = self._shared_links(own_routes)
        sharing = self._sharing(j, [k for k in running if k in self._flows])
        others = [self._flows[k] for k in sharing]
        key = (self._names[j], self._params[j], len(nodes))
        keyless = self._names[j] in patterns.KEYLESS
        ideal = self._ideal.get(key) if keyless else None
        ideal_flows = None
        if single and not others:
            # Exact shortcut: alone, and its placement is the ideal one up to renaming links
            # (most `ta` placements), the two solves are one and the same: slowdown 1.
            ideal_flows = self._ideal_flows(key, keyless, traffic, ideals[0])
            if self._renamed(own_routes, ideal_flows[0]):
                self.renamed += 1
                return 1.0
        together = self._solve(self._together(j, sharing), np.concatenate([own_bytes] + [b for _, b in others]),
                               len(own_bytes), self._counts(j, running))
        if ideal is None:
            candidates = [ideal_flows or self._job_flows(traffic, ideals[0])] if single else \
                [self._job_flows(traffic, c) for c in ideals]
            ideal = min(self._solve(self._solver_flows(r), b, len(b)) for r, b in candidates)
            if keyless:
                self._ideal[key] = ideal
        return together / ideal if ideal > 0 else 1.0

    def _counts(self, j: int, running: set[int]) -> np.ndarray:
        """Each link's crossings by the flows of job ``j`` and of every running job with flows,
        kept between starts (a job's routes added once, taken off once it has ended): on
        every link a together problem's flows cross, its own count — jobs outside the
        problem share no link with it (:meth:`_sharing`)."""
        members = {k for k in running if k in self._flows}
        members.add(j)
        counted = self._counted
        for k in [k for k in counted if k not in members]:
            add_crossings(_crossing_ids(counted.pop(k)), self._count, -1)
        for k in members:
            if k not in counted:
                counted[k] = self._flows[k][0]
                add_crossings(_crossing_ids(counted[k]), self._count, 1)
        return self._count

    def _ideal_flows(self, key: tuple[Any, ...], keyless: bool, traffic: patterns.Traffic | None,
                     ideal_nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Route ids and bytes of the job's flows on its ideal placement; kept per (pattern,
        size) for key-free patterns, within :data:`IDEAL_ROUTES_BYTES` (all dropped when full)."""
        flows = self._ideal_routes.get(key) if keyless else None
        if flows is None:
            flows = self._job_flows(traffic, ideal_nodes)
            if keyless:
                size = sum(a.nbytes for x in flows for a in (x if isinstance(x, tuple) else (x,)))
                if self._ideal_routes_bytes + size > IDEAL_ROUTES_BYTES:
                    self._ideal_routes.clear()
                    self._ideal_routes_bytes = 0
                self._ideal_routes[key] = flows
                self._ideal_routes_bytes += size
        return flows

    def _renamed_placement(self, nodes: np.ndarray, ideal_nodes: np.ndarray) -> bool:
        """Whether every route among ``ideal_nodes`` is the route among ``nodes`` renamed
        (:meth:`Topology.routes_renamed`)."""
        return self.topo.routes_renamed(nodes, ideal_nodes)

    def _keys_of(self, k: int) -> np.ndarray:
        """Job ``k``'s interference keys (:meth:`Topology.interference_keys`), computed once."""
        keys = self._keys.get(k)
        if keys is None:
            keys = self._keys[k] = np.asarray(self.topo.interference_keys(self._nodes[k]), np.int64)
        return keys

    def _reach(self, j: int, running: set[int], direct: bool = False) -> set[int]:
        """The running jobs with flows that share an interference key with job ``j`` — with
        ``direct`` only those, else also through each other (a superset of the jobs
        :meth:`_sharing` can connect to ``j``: jobs that share a link share a key)."""
        others = sorted(k for k in running if k in self._nodes and k != j)
        keys = self._keys_of(j)
        if not others or not len(keys):
            return set()
        held = [self._keys_of(k) for k in others]
        mark = np.zeros(int(max([keys.max()] + [h.max() for h in held if len(h)])) + 1, bool)
        mark[keys] = True
        found: set[int] = set()
        grew = True
        while grew:
            grew = False
            for k, h in zip(others, held):
                if k not in found and len(h) and mark[h].any():
                    found.add(k)
                    if not direct:
                        mark[h] = grew = True
        return found

    def _build(self, k: int) -> None:
        """Job ``k``'s flows and shared links (its traffic is a function of the run's key and
        ``k``: the same as if they had been built at its start)."""
        nodes = self._nodes[k]
        self.built_late += 1
        routes, _ = self._flows[k] = self._job_flows(self._traffic(k, len(nodes)), nodes)
        self._links[k] = self._shared_links(routes)

    def _renamed(self, a: np.ndarray | tuple[np.ndarray, np.ndarray], b: np.ndarray | tuple[np.ndarray, np.ndarray]) -> bool:
        """Whether routes ``a`` and ``b`` (padded, or compact lists) are one flow network up to
        renaming links (:func:`same_network`)."""
        width = self.topo.max_route_links
        return same_network(_padded(a, width), _padded(b, width), self._capacity)

    def _at_start(self, replay: Any, j: int, nodes: np.ndarray, now: float) -> float:
        running = {k for _, k in replay.running}
        if len(self._nodes) > 2 * len(running) + 16:  # forget the flows of jobs that ended
            self._flows = {k: v for k, v in self._flows.items() if k in running}
            self._links = {k: v for k, v in self._links.items() if k in running}
            self._nodes = {k: v for k, v in self._nodes.items() if k in running}
            self._keys = {k: v for k, v in self._keys.items() if k in running}
            self._pending &= running
        n = len(nodes)
        ideals = self._ideal_placements(n)
        if self._local_ok and self._one_router(nodes) and all(self._one_router(c) for c in ideals):
            # Exact shortcut: on one router a job's flows cross only its own node links (no
            # other job can share them, so it slows no one and no one slows it), and its
            # placement and every ideal one are the same flow network up to relabelling nodes:
            # together == alone == ideal step time, slowdown 1, and its flows never need routing.
            slow = 1.0
        else:
            slow = self._slowdown(j, nodes, ideals, running)
        self.slowdown[j] = slow
        c = self._c[j]
        factor = (1 - c) + c * slow
        runtime = self._base[j] * factor
        # Never past the estimate (EASY's reservations rely on it); a kill only past rounding:
        # a slowdown is a ratio of float32 step times, and a job nothing slows read 1 + ~1e-7,
        # which cut a job whose estimate is its logged run time and counted it killed.
        killed = runtime > self._estimate[j] * (1 + KILL_ROUNDING)
        if runtime > self._estimate[j]:
            runtime = self._estimate[j]
        if killed:
            self.killed += 1
            self.killed_unrequested += bool(self._unrequested[j])
            self.killed_at_limit += bool(self._at_limit[j])
        # Node-seconds busy, and the share of them that is work at the ideal speed (a job cut
        # at its estimate did runtime / factor seconds of its work).
        self._busy_ns += n * runtime
        self._useful_ns += n * runtime / factor
        if not killed:  # ran to its end: its work counts when killed work is counted as lost
            self._completed_ns += n * runtime / factor
        return runtime

    def job_patterns(self) -> list[str]:
        """Each bound job's pattern (:func:`describe_pattern`), in the replay's order."""
        return [describe_pattern(spec) for spec in zip(self._names, self._params)]

    def job_columns(self) -> dict[str, Any]:
        """The columns the replay appends to ``jobs.parquet`` (replay order): each job's
        ``pattern``, its ``slowdown`` at its start and its ``comm_fraction`` ``c``."""
        return {"pattern": pl.Series(self.job_patterns(), dtype=pl.String),
                "slowdown": np.asarray(self.slowdown, np.float64),
                "comm_fraction": np.asarray(self._c, np.float64)}

    @property
    def busy_node_s(self) -> float:
        """Node-seconds the started jobs are busy (``Σ nodes · run time``)."""
        return float(self._busy_ns)

    @property
    def work_node_s(self) -> float:
        """Node-seconds of the started jobs' work at the ideal speed (``Σ nodes · run time / factor``)."""
        return float(self._useful_ns)

    def summary(self) -> dict[str, Any]:
        """What the run's ``summary.json`` records of the model. ``application_efficiency``:
        the node-seconds of work done at the ideal speed over the node-seconds the jobs were
        busy (``Σ nodes · run time / factor`` over ``Σ nodes · run time``; the torus paper's
        application efficiency, weighted by each job's nodes and run time); a run's total
        system efficiency is its utilization times this. ``application_efficiency_completed``:
        the same with the work of jobs cut at their estimate counted as lost (a job killed at
        its time limit returns no result unless it checkpoints; which reading fits a workload
        is the user's call, so both are recorded)."""
        s = self.slowdown[np.isfinite(self.slowdown)]
        by_app = {} if not self.app_patterns else {
            "app_patterns": {app: describe_pattern(spec) for app, spec in self.app_patterns.items()},
            "jobs_by_app": int(self.by_app)}
        return {"comm_fraction": comm_fraction.plain(self._cf), "patterns": dict(self.mix), **by_app, "jobs": int(len(s)),
                "mean_slowdown": float(s.mean()) if len(s) else None,
                "max_slowdown": float(s.max()) if len(s) else None, "killed_at_estimate": int(self.killed),
                "killed_without_requested_time": int(self.killed_unrequested),
                "killed_at_logged_limit": int(self.killed_at_limit),
                "application_efficiency": self._useful_ns / self._busy_ns if self._busy_ns > 0 else None,
                "application_efficiency_completed": (self._completed_ns / self._busy_ns if self._busy_ns > 0
                                                     else None)}


def model_settings() -> dict[str, Any]:
    """The bandwidth model's settings as ``+speedup=model`` sets them (``conf/speedup/model.yaml``):
    ``comm_fraction`` (the share of a job's logged run time spent communicating, 0-1) and
    ``patterns`` (the mix, ``name=weight,...``)."""
    import yaml

    from fattorus import paths

    cfg = yaml.safe_load(paths.config_file("speedup", "model").read_text())
    return {"comm_fraction": comm_fraction.plain(comm_fraction.parse(cfg["comm_fraction"])),
            "patterns": str(cfg["patterns"])}


def model_runtimes(topo: Topology, seed: int = 0) -> ModelRuntimes:
    """The bandwidth model as ``+speedup=model`` sets it (:func:`model_settings`), its draws
    from ``seed`` (a sweep's default seed, 0): what the tuner and the benchmarks replay with."""
    from fattorus.analysis import interference  # it imports this module

    cfg = model_settings()
    return ModelRuntimes(topo, interference.parse_mix(cfg["patterns"]), cfg["comm_fraction"], seed)

