"""The QoS paper's experiments on the flow model (issue 15; QoS paper, Sections 5–6).

One *placement* is a job mix (patterns × instances × processes) with its processes on random
distinct nodes of a fat-tree. For it, :func:`run_placement` runs Algorithm 1
(:mod:`fattorus.analysis.qos_feedback`) for a number of periods and, per job, counts the
iterations completed over all periods in three runs that see the same compute traces:

* ``isolated`` (``I_B``): the job alone on the machine in its placement;
* ``default`` (``I_D``): all jobs together, every process on the default level;
* ``qos`` (``I_Q``): all jobs together with the levels the algorithm chose period by period
  (its exploring and idle periods included, as the paper counts them).

and reports ``W_default = I_D / I_B − 1``, ``W_qos = I_Q / I_B − 1`` and the improvement
``I_Q / I_D − 1`` (the paper's Figures 3–19). Iterations are counted as ``P / step`` (a
fraction, not rounded down: a 0.06 s period holds only tens of steps, and rounding would
hide differences the flow model can resolve).

Rates come from :func:`fattorus.kernels.service_levels.service_level_rates` over the
topology's static D-mod-k routes (or, with ``routing="adaptive"``, routes chosen by current
link load, :func:`adaptive_routes`); per-process times from :mod:`fattorus.analysis.bsp`.
Compute traces: each job gets ``traces`` variants of its compute times (each process's time
times ``1 + noise * u``, ``u`` uniform in [−1, 1]), and every period draws one per job —
the paper's five traces per application, picked at random per iteration. Every draw derives
from the placement's seed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from fattorus.analysis import bsp
from fattorus.analysis import qos_feedback as qf
from fattorus.kernels.service_levels import service_level_rates


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment's settings (``conf/qos/*.yaml``). Bytes, seconds, bytes/s."""

    jobs: tuple[tuple[str, int], ...]  # (pattern, instances)
    processes: int
    message_bytes: Mapping[str, float]
    bandwidth: float  # bytes/s per link
    iterations: int = 500
    period_s: float = 0.06
    compute_fraction: float = 0.65
    imbalance: str = "uniform"
    traces: int = 5
    noise: float = 0.05
    routing: str = "static"
    arrivals: bool = False
    arrival_compute_fraction: float = 0.35
    params: qf.Params = qf.Params()


class Mix(NamedTuple):
    """A placed job mix: per process its job and node; per flow its processes and bytes."""

    patterns: tuple[str, ...]  # per job
    job_of: np.ndarray  # (P,)
    node: np.ndarray  # (P,)
    src: np.ndarray  # (F,) process ids
    dst: np.ndarray
    nbytes: np.ndarray
    flow_job: np.ndarray  # (F,)


def build_mix(topo: Any, exp: Experiment, rng: np.random.Generator) -> Mix:
    """Jobs of ``exp`` on random distinct nodes of ``topo`` (a fresh draw per placement)."""
    patterns = tuple(p for p, k in exp.jobs for _ in range(k))
    n = exp.processes
    total = n * len(patterns)
    if total > topo.n_nodes:
        raise ValueError(f"{len(patterns)} jobs x {n} processes need {total} nodes; {topo.name} has {topo.n_nodes}")
    nodes = rng.permutation(topo.n_nodes)[:total]
    src, dst, nb, fj = [], [], [], []
    for j, pat in enumerate(patterns):
        fl = bsp.pattern_flows(pat, n, float(exp.message_bytes[pat]), rng)
        src.append(fl.src + j * n)
        dst.append(fl.dst + j * n)
        nb.append(fl.nbytes)
        fj.append(np.full(fl.src.shape, j))
    return Mix(patterns, np.repeat(np.arange(len(patterns)), n), nodes, np.concatenate(src), np.concatenate(dst),
               np.concatenate(nb), np.concatenate(fj))


def static_routes(topo: Any, mix: Mix) -> np.ndarray:
    """``(F, L)`` D-mod-k routes of the mix's flows (``-1`` padded)."""
    return np.asarray(topo.routes(jnp.asarray(mix.node[mix.src]), jnp.asarray(mix.node[mix.dst])))


def adaptive_routes(topo: Any, mix: Mix, rng: np.random.Generator | None = None) -> np.ndarray:
    """``(F, L)`` routes whose paths are chosen by link load instead of by destination: the
    flow model's stand-in for adaptive routing (a packet network adapts per packet to queue
    lengths; here the paths adapt once, to the mix's whole traffic): the family's ``adaptive``
    routing (:meth:`~fattorus.topology.base.Topology.flow_routes`; fat-trees: load-balanced
    up-paths, their ties ordered by ``rng``, the run's generator)."""
    if "adaptive" not in topo.routings:
        raise ValueError(f"adaptive routing is modelled on fat-trees only, not {getattr(topo, 'kind', '?')}")
    return topo.flow_routes(mix.node[mix.src], mix.node[mix.dst], mix.nbytes, "adaptive",
                            np.random.default_rng(0) if rng is None else rng)


class Network:
    """Rates of one placed mix under any service-level assignment, cached per assignment
    (Algorithm 1 returns to the best assignment again and again)."""

    def __init__(self, topo: Any, mix: Mix, routes: np.ndarray, bandwidth: float, num_sls: int):
        self.mix, self.routes, self.num_sls = mix, routes, num_sls
        self.capacity = np.asarray(topo.link_bandwidth, float) * bandwidth
        self._cache: dict[tuple, np.ndarray] = {}
        self.solves = 0
        self.solve_s = 0.0
        self.unconverged = 0
        self.max_gap = 0.0

    def rates(self, assignments: tuple[tuple[int, float], ...] = ()) -> np.ndarray:
        """Rates (bytes/s) of every flow of the mix with these ``(process, weight)`` levels."""
        if assignments not in self._cache:
            level, weight = qf.process_levels(assignments, len(self.mix.job_of), self.num_sls)
            flow_level = bsp.flow_levels(self.mix.src, self.mix.dst, level)
            used = np.unique(np.r_[0, flow_level])
            # Only the levels in use enter the solve (cheaper; the others are absent anyway).
            compact = np.searchsorted(used, flow_level)
            t0 = time.perf_counter()
            out = service_level_rates(self.routes, self.capacity, compact, weight[used])
            self.solve_s += time.perf_counter() - t0
            self.solves += 1
            if not bool(out.converged):
                # Rare (bounds that stall apart and an exact finish that fails the check):
                # the midpoint of the bounds is used, counted and reported, never silently.
                self.unconverged += 1
                self.max_gap = max(self.max_gap, float(out.gap))
            self._cache[assignments] = np.asarray(out.rate)
        return self._cache[assignments]

    def isolated_rates(self) -> np.ndarray:
        """Rates of every flow with its job alone on the machine (same routes)."""
        out = np.empty(len(self.mix.src))
        for j in range(len(self.mix.patterns)):
            sel = self.mix.flow_job == j
            r = service_level_rates(self.routes[sel], self.capacity)
            out[sel] = r.rate
        return out


def _transfer(nbytes: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Seconds each message takes at its rate (0 for a flow that crosses no link, rate ``inf``)."""
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(rate), 0.0, nbytes / rate)


def _steps(mix: Mix, compute: np.ndarray, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-process done times and per-job step times (s) for one set of compute times and the
    flows' rates (bytes/s): :func:`fattorus.analysis.bsp.process_times` and
    :func:`~fattorus.analysis.bsp.job_steps` on the mix."""
    done = bsp.process_times(compute, mix.src, mix.dst, mix.nbytes, rate)
    return done, bsp.job_steps(done, mix.job_of, len(mix.patterns))


class PlacementResult(NamedTuple):
    """Per job ``(J,)``: iterations completed isolated, default, with QoS (exploring periods
    included), and with the final best assignment over the same traces (``final``); per period the
    algorithm's mode, score and number of prioritised processes; solver counters; per job its
    pattern and the periods it arrived and left (with ``arrivals``, jobs that arrived during
    the run follow the original ones)."""

    isolated: np.ndarray
    default: np.ndarray
    qos: np.ndarray
    final: np.ndarray
    best: tuple[tuple[int, float], ...]
    modes: list[str]
    scores: np.ndarray
    n_assigned: np.ndarray
    accepted: int
    restarts: int
    solves: int
    solve_s: float
    unconverged: int = 0  # solves that ended at the midpoint of their bounds
    max_gap: float = 0.0  # the widest such bounds (relative)
    patterns: tuple[str, ...] = ()  # per job (occupant of a job slot, arrivals included)
    arrived: tuple[int, ...] = ()  # period each job arrived (0: from the start)
    left: tuple[int, ...] = ()  # period each job left (iterations: stayed)


def _routes(topo: Any, exp: Experiment, mix: Mix, rng: np.random.Generator,
            routes_fn: Callable[[Any, Mix], np.ndarray] | None) -> np.ndarray:
    """The mix's flow routes: ``routes_fn`` if given, else the experiment's routing
    (adaptive routes draw from ``rng``, static ones do not)."""
    if routes_fn is not None:
        return routes_fn(topo, mix)
    if exp.routing == "adaptive":
        return adaptive_routes(topo, mix, rng)
    return static_routes(topo, mix)


def run_placement(topo: Any, exp: Experiment, seed: int, routes_fn: Callable[[Any, Mix], np.ndarray] | None = None,
                  progress: Callable[[int], None] | None = None) -> tuple[Mix, PlacementResult]:
    """Place the mix with ``seed``, draw compute times and traces, and run Algorithm 1 for
    ``exp.iterations`` periods (module docstring)."""
    rng = np.random.default_rng(seed)
    mix = build_mix(topo, exp, rng)
    net = Network(topo, mix, _routes(topo, exp, mix, rng, routes_fn), exp.bandwidth, exp.params.num_sls)
    J, P = len(mix.patterns), len(mix.job_of)
    r_iso, r_def = net.isolated_rates(), net.rates(())
    # Y per job from its communication time alone (zero compute).
    comm_alone = np.zeros(J)
    np.maximum.at(comm_alone, mix.flow_job, _transfer(mix.nbytes, r_iso))
    base = np.concatenate([bsp.compute_times(exp.imbalance, exp.processes,
                                             bsp.compute_scale(exp.compute_fraction, comm_alone[j]), rng)
                           for j in range(J)])
    jitter = 1.0 + exp.noise * rng.uniform(-1.0, 1.0, (exp.traces, P))
    traces = base[None, :] * jitter  # (traces, P)
    pick = rng.integers(0, exp.traces, (exp.iterations, J))
    # Arrivals and departures (the paper's Section 6.7): the run is cut into one segment more
    # than there are patterns; at the start of segment s the first job of pattern s leaves and
    # a job of the same pattern on the same nodes arrives, computing arrival_compute_fraction
    # of its step; Algorithm 1 restarts. Each occupant of a job slot is reported on its own.
    kinds = list(dict.fromkeys(mix.patterns))
    segment = exp.iterations // (len(kinds) + 1) if exp.arrivals else exp.iterations + 1
    occupant = np.arange(J)
    patterns = list(mix.patterns)
    arrived, left = [0] * J, [exp.iterations] * J
    fb = qf.start()
    n_occ = J + (len(kinds) if exp.arrivals else 0)
    iso, dflt, qos, final = (np.zeros(n_occ) for _ in range(4))
    seg_computes: list[np.ndarray] = []
    modes, scores, n_assigned = [], np.zeros(exp.iterations), np.zeros(exp.iterations, np.int32)

    def settle(best: tuple, computes: list[np.ndarray], occ: np.ndarray) -> None:
        # The assignment the algorithm settled on, replayed over the same traces: its steady state.
        r_best = net.rates(best)
        for c in computes:
            np.add.at(final, occ, exp.period_s / _steps(mix, c, r_best)[1])

    for k in range(exp.iterations):
        if exp.arrivals and k and k % segment == 0 and k // segment <= len(kinds):
            settle(fb.best, seg_computes, occupant.copy())
            seg_computes = []
            kind = kinds[k // segment - 1]
            j = patterns.index(kind)
            new_id = len(patterns)
            left[occupant[j]] = k
            occupant[j] = new_id
            patterns.append(kind)
            arrived.append(k)
            left.append(exp.iterations)
            procs = np.flatnonzero(mix.job_of == j)
            y = bsp.compute_scale(exp.arrival_compute_fraction, comm_alone[j])
            base[procs] = bsp.compute_times(exp.imbalance, exp.processes, y, rng)
            traces = base[None, :] * jitter
            fb = qf.restart(fb)
        compute = traces[pick[k][mix.job_of], np.arange(P)]
        seg_computes.append(compute)
        _, s_iso = _steps(mix, compute, r_iso)
        _, s_def = _steps(mix, compute, r_def)
        done, s_q = _steps(mix, compute, net.rates(fb.assignments))
        job_work = exp.period_s / s_q
        np.add.at(iso, occupant, exp.period_s / s_iso)
        np.add.at(dflt, occupant, exp.period_s / s_def)
        np.add.at(qos, occupant, job_work)
        modes.append(fb.mode)
        n_assigned[k] = len(fb.assignments)
        # Scored against the default work of the current observation; a DEFAULT period has
        # none yet (Algorithm 1 compares nothing there): 0, at the start and after restarts.
        scores[k] = qf.score(job_work, fb.default_work) if fb.mode != qf.DEFAULT else 0.0
        fb = qf.observe(fb, job_work, exp.period_s / done, mix.job_of, exp.params)
        if progress is not None:
            progress(k)
    settle(fb.best, seg_computes, occupant.copy())
    return mix, PlacementResult(iso, dflt, qos, final, fb.best, modes, scores, n_assigned, fb.accepted, fb.restarts,
                                net.solves, net.solve_s, net.unconverged, net.max_gap, tuple(patterns), tuple(arrived),
                                tuple(left))


def job_rows(mix: Mix, res: PlacementResult, **key: Any) -> list[dict[str, Any]]:
    """One row per job: pattern, periods present, iterations and ``W_default``, ``W_qos``,
    ``improvement`` (whole run) and ``improvement_final`` (settled assignment)."""
    patterns = res.patterns or mix.patterns
    return [{**key, "job": j, "pattern": patterns[j],
             "arrived": int(res.arrived[j]) if res.arrived else 0,
             "left": int(res.left[j]) if res.left else len(res.modes),
             "I_isolated": float(res.isolated[j]), "I_default": float(res.default[j]), "I_qos": float(res.qos[j]),
             "W_default": float(res.default[j] / res.isolated[j] - 1),
             "W_qos": float(res.qos[j] / res.isolated[j] - 1),
             "improvement": float(res.qos[j] / res.default[j] - 1),
             "improvement_final": float(res.final[j] / res.default[j] - 1)} for j in range(len(patterns))]


def experiment_from(cfg: Mapping[str, Any]) -> Experiment:
    """An :class:`Experiment` from a ``qos`` config mapping (``conf/qos/*.yaml``); raises
    ``ValueError`` naming the field for a value that cannot work."""
    def num(field: str, lo: float, hi: float, integer: bool = False) -> float:
        v = cfg.get(field)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi
        if not ok or (integer and int(v) != v):
            kind = "an integer" if integer else "a number"
            raise ValueError(f"qos.{field}={v!r}: choose {kind} in [{lo}, {hi}]")
        return int(v) if integer else float(v)

    jobs = cfg.get("jobs")
    if not isinstance(jobs, Mapping) or not jobs:
        raise ValueError("qos.jobs: give pattern: instances, e.g. {flood_pairs: 2, all_to_all: 2}")
    for p, k in jobs.items():
        if p not in bsp.PATTERNS:
            raise ValueError(f"qos.jobs.{p}: unknown pattern; choose from {', '.join(bsp.PATTERNS)}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:  # true is no count
            raise ValueError(f"qos.jobs.{p}={k!r}: give a number of instances (integer >= 0)")
    if not any(jobs.values()):
        raise ValueError("qos.jobs: every pattern has 0 instances; give at least one job")
    sizes = cfg.get("message_bytes")
    if sizes is None:
        sizes = {}  # absent: each pattern's size is named missing below
    if not isinstance(sizes, Mapping):
        raise ValueError(f"qos.message_bytes={sizes!r}: give pattern: bytes per message, e.g. "
                         "{flood_pairs: 4194304, all_to_all: 65536}")
    for p in jobs:
        v = sizes.get(p)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v < float("inf"):  # NaN too
            raise ValueError(f"qos.message_bytes.{p}={v!r}: give the bytes per message (> 0)")
    imbalance = cfg.get("imbalance", "uniform")
    if imbalance not in bsp.IMBALANCE:
        raise ValueError(f"qos.imbalance={imbalance!r}: choose from {', '.join(bsp.IMBALANCE)}")
    if not isinstance(cfg.get("arrivals", False), bool):
        raise ValueError(f"qos.arrivals={cfg.get('arrivals')!r}: true or false")
    routing = cfg.get("routing", "static")
    if routing not in ("static", "adaptive"):
        raise ValueError(f"qos.routing={routing!r}: choose static or adaptive")
    params = qf.Params(threshold=num("threshold", 1e-9, 1.0), num_sls=num("num_sls", 2, 16, True),
                       first_weight=num("first_weight", 1.0, 255.0), raise_factor=num("raise_factor", 1.0, 255.0),
                       max_weight=num("max_weight", 1.0, 255.0), max_slowdown=num("max_slowdown", 0.0, 1e9),
                       # Periods the default level is observed for (Sections 6.2 and 6.8: 10); a
                       # config written before the setting existed observes one, as it always did.
                       default_periods=num("default_periods", 1, 10**7, True) if "default_periods" in cfg else 1)
    if params.first_weight > params.max_weight:  # a new level would start above the cap on every level
        raise ValueError(f"qos.first_weight={params.first_weight:g} with qos.max_weight={params.max_weight:g}: "
                         "a new level's weight cannot exceed the largest; give first_weight <= max_weight")
    if params.raise_factor <= 1:  # a raise by 1 changes no weight: every trial would rerun the best assignment
        raise ValueError(f"qos.raise_factor={params.raise_factor:g}: choose a number > 1")
    iterations = num("iterations", 1, 10**7, True)
    if params.default_periods >= iterations:
        raise ValueError(f"qos.default_periods={params.default_periods} with qos.iterations={iterations}: the run would "
                         "never leave the default level; give more iterations than default periods")
    kinds = len({p for p, k in jobs.items() if k})
    if cfg.get("arrivals", False) and iterations < kinds + 1:
        # One segment per pattern plus one: at least one period each (fewer divided by zero).
        raise ValueError(f"qos.iterations={iterations} with qos.arrivals=true: the run is cut into {kinds + 1} segments "
                         f"(one per pattern, plus one); give at least {kinds + 1} iterations")
    return Experiment(jobs=tuple((p, int(k)) for p, k in jobs.items() if k), processes=num("processes", 2, 1 << 20, True),
                      message_bytes={p: float(sizes[p]) for p in jobs},  # others unused (and unchecked)
                      bandwidth=num("bandwidth_GBps", 1e-9, 1e9) * 1e9, iterations=iterations,
                      period_s=num("period_s", 1e-9, 1e9), compute_fraction=num("compute_fraction", 0.0, 0.99),
                      imbalance=imbalance, traces=num("traces", 1, 1000, True), noise=num("noise", 0.0, 0.99),
                      routing=routing, arrivals=bool(cfg.get("arrivals", False)),
                      arrival_compute_fraction=num("arrival_compute_fraction", 0.0, 0.99) if "arrival_compute_fraction" in cfg
                      else 0.35, params=params)


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per pattern and overall: median and extremes of ``W_default``, ``W_qos`` and the
    improvement (fractions), and ``improved_share``: the share of jobs the settled assignment
    improves by more than 1 % (``improvement_final > 0.01``, the report's "improved",
    docs/qos.md)."""
    def stats(sel: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        out: dict[str, float] = {"jobs": len(sel)}
        for f in ("W_default", "W_qos", "improvement", "improvement_final"):
            v = np.array([r[f] for r in sel], float)
            out[f + "_median"] = float(np.median(v)) if len(v) else float("nan")
        imp = np.array([r["improvement"] for r in sel], float)
        out["improvement_max"] = float(imp.max()) if len(imp) else float("nan")
        out["improvement_min"] = float(imp.min()) if len(imp) else float("nan")
        settled = np.array([r["improvement_final"] for r in sel], float)
        out["improved_share"] = float((settled > 0.01).mean()) if len(settled) else float("nan")
        return out

    pats = sorted({r["pattern"] for r in rows})
    return {"all": stats(rows), **{p: stats([r for r in rows if r["pattern"] == p]) for p in pats}}
