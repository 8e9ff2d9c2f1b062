"""Benchmark: one weighted max-min solve of the flow-level bandwidth model (issue 14).

Cases, each solved by :func:`fattorus.kernels.maxmin.maxmin_rates` (JAX, ``jit``) and by
:func:`fattorus.kernels.maxmin.maxmin_rates_numpy` (the same progressive filling in plain
NumPy, one round per Python loop iteration) on the same flows, in the same run:

* ``cab_instant``: every job running at the busiest instant (most busy nodes) of the first ``DAYS`` days of
  LLNL-Atlas x2 replayed on Cab (``to``/EASY), each with a pattern drawn from the fat-tree
  paper's mix (:data:`fattorus.analysis.interference.DEFAULT_MIX`, seeded), ranks on its
  nodes in allocation order;
* ``ft44_stencil4d``: one 4,096-node 4D stencil (8 neighbours, 4 MiB) on ft44, on 4,096
  nodes drawn at random (seeded; a scattered, topology-oblivious placement).

* ``fluid_cab_instant``: the jobs of ``cab_instant`` drained (:func:`fattorus.analysis.fluid.finish_times`:
  max-min rates solved again each time flows finish) against the same drain in NumPy
  (:func:`~fattorus.analysis.fluid.finish_times_numpy`: float64, the open flows alone each
  solve); ``rounds`` / ``numpy_rounds`` are the solves here, ``repeats`` timed drains each
  (interleaved, after one untimed drain that compiles: ``compile_s``). On a CPU the drain
  solves with the compiled solver (:func:`fattorus.kernels.maxmin_compiled.maxmin_rates_compiled`,
  the JAX solver's rates bit for bit; since session 32), elsewhere with JAX.

* ``goal_cab_instant``: the goal solve a ``speedup=model`` replay makes at a start, for every
  job of ``cab_instant`` in turn (its flows first, then the others'): the compiled solve
  (:mod:`fattorus.kernels.maxmin_compiled`, ``median_s``: all of them once) against the JAX
  goal solve it replaced (:func:`fattorus.analysis.commtime.goal_step_time_jax`, in the
  ``numpy_s`` column; ``speedup`` = JAX / compiled), interleaved, every answer checked equal.

* ``replay_model``: the replay of the first ``MONTH`` days of Atlas x2 on Cab (``to``/EASY)
  with ``speedup=model`` (run times from the flow model at every job start, its patterns and
  communication fraction from ``conf/speedup/model.yaml`` as in a sweep) next to the same
  replay without it (``numpy_s`` column: the plain replay; ``speedup`` = plain / model, the
  issue's target: model at most 3x the plain replay, i.e. ``speedup >= 0.33``). Each replay
  runs once, then :data:`REPLAY_REPEATS` times more (all plain runs before the model ones: a
  plain replay right after model replays in one process runs ~30 % slower), and the medians
  of the later runs are compared; the first compiles the solver and the routing once per
  flow-count bucket (``compile_s`` = first run minus the median).
* ``replay_model_ta``: the same with ``ta`` allocation (interference-free: a job's flows meet
  no other job's, so each solve holds its own flows alone).
* ``replay_model_bluewaters``: the first ``WAVES`` waves of the torus paper's Table II workload
  (``conf/workload/bluewaters_table2.yaml``) on Blue Waters under first fit over ``O2``, with
  and without the model, as the two rows above: dense interference, together problems of up
  to ~300,000 flows on 38-slot routes (solved from compact crossing lists).

``compile_s`` = first JAX call minus the median; ``median_s`` = median of ``repeats`` warm
calls (at least :data:`SOLVE_REPEATS`; each right after a call of the same solve) from the
padded routes alone (what :mod:`fattorus.analysis.commtime` runs on fat-trees and dragonflies;
on topologies with routes of >= 16 slots it passes compact lists); ``incidences_s`` = the same
solve given the compact (flow, link) crossing lists built on the host
(:func:`fattorus.kernels.maxmin.flow_incidences`, counted in the time: faster than the padded
routes before the solver ran in stages, no longer); ``numpy_s`` = median of the NumPy
reference; ``speedup = numpy_s / median_s`` (target ≥ 20 on CPU); ``after_other_s`` = median
of the same JAX solve right after the NumPy one (XLA's CPU threads idle, as between two solves
of a replay: ~0.5 ms more on Cab's instant), ``speedup_after_other = numpy_s /
after_other_s``; ``compiled_s`` = median of the same solve by
:func:`fattorus.kernels.maxmin_compiled.maxmin_rates_compiled` (what ``step_times`` and the
fluid drain solve with on a CPU; its rates checked equal to JAX's), ``speedup_compiled =
numpy_s / compiled_s``. All solves interleaved round by round. ``rounds`` = filling rounds;
``max_rel_diff`` between the two rate vectors (they solve the same problem; float32 vs
float64).
"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from fattorus import topology, workload
from fattorus.analysis import commtime, fluid, interference, patterns
from fattorus.bench.replay import trace_path
from fattorus.kernels.maxmin import flow_incidences, maxmin_rates, maxmin_rates_numpy
from fattorus.kernels.maxmin_compiled import goal_step_time, maxmin_rates_compiled, new_workspace
from fattorus.sched import policy, replay

DAYS, QUICK_DAYS = 7.0, 2.0
MONTH, QUICK_MONTH = 30.0, 3.0
WAVES, QUICK_WAVES = 2, 1  # Table II waves (15 min apart) on Blue Waters
REPEATS, QUICK_REPEATS = 5, 2
#: Warm runs per replay row (medians): one run swung the `to` ratio from 2.8x to 4.6x on a
#: noisy machine (2026-11-28).
REPLAY_REPEATS, QUICK_REPLAY_REPEATS = 3, 1
SOLVE_REPEATS = 15  # fewest timed calls of each solve case (JAX, JAX from crossing lists, NumPy), interleaved
NOTES = ("Solve rows (cab_instant, ft44_stencil4d): one weighted max-min solve by JAX jit vs the same rounds in "
         "NumPy (compiled_s / speedup_compiled: the same solve by the compiled solver step_times and the fluid drain "
         "use on a CPU, its rates checked equal to JAX's); fluid_cab_instant: a drain (the compiled solver on a CPU, JAX elsewhere) vs NumPy's; same flows, "
         "same run; median_s / numpy_s: medians after a "
         "warm-up call, compile_s apart; target speedup >= 20 (CPU). replay_model* rows: whole replays, "
         "median_s = with speedup=model, numpy_s = the same replay without it, each the median of `repeats` "
         "warm runs after a first one, the plain runs first (compile_s = the model's first run minus its median, "
         "0 where an earlier row compiled it); "
         "speedup = plain / model, the target >= 0.33 (model within 3x the plain replay). goal_cab_instant: "
         "median_s = the compiled goal solves, numpy_s = the same by the JAX solver (the replay's until session 29).")


def _log(msg: str) -> None:
    print(f"[flow] {msg}", file=sys.stderr, flush=True)


def cab_instant(days: float, seed: int = 0) -> tuple[str, list[commtime.Job]]:
    """The jobs running at the busiest instant of Atlas x2 on Cab (``to``/EASY)."""
    cab = topology.load("cab")
    jobs = workload.load(trace_path(), cores_per_node=8).jobs
    scaled, _ = workload.scale_nodes(jobs, 2, cab.n_nodes)
    prepared, _ = replay.prepare(workload.first_days(scaled, days), cab.n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    sched = replay.simulate(*cols, cab, policy.make("to", cab), "easy")
    start, end = sched.start, sched.start + cols[1]
    running = [(start <= t) & (t < end) for t in start]
    busiest = int(np.argmax([cols[3][r].sum() for r in running]))  # most busy nodes
    ids = np.flatnonzero(running[busiest])
    key = jax.random.PRNGKey(seed)
    names = interference.assign_patterns(key, len(ids), interference.parse_mix(interference.DEFAULT_MIX))
    out = []
    for k, (j, name) in enumerate(zip(ids, names)):
        alloc = np.asarray(sched.alloc[j])
        out.append(commtime.Job(alloc, patterns.make(name, jax.random.fold_in(key, k), len(alloc))))
    return f"Atlas x2 on Cab, {len(ids)} jobs on {int(cols[3][ids].sum())} nodes", out


def _case(name: str, topo, jobs: list[commtime.Job], repeats: int) -> dict:
    route_ids, nbytes, _ = commtime._flows(topo, jobs)
    cap = np.asarray(topo.link_bandwidth, np.float32)
    r, c = jnp.asarray(route_ids), jnp.asarray(cap)

    def solve():
        return maxmin_rates(r, c)

    def solve_incidences():  # the host-side crossing lists are part of this timed solve
        return maxmin_rates(r, c, incidences=tuple(jnp.asarray(x) for x in flow_incidences(route_ids)))

    workspace = new_workspace(len(cap))

    def solve_compiled():  # what step_times and the fluid drain solve with on a CPU
        return maxmin_rates_compiled(route_ids, cap, workspace)

    t0 = time.perf_counter()
    first = solve()
    first.rate.block_until_ready()
    first_s = time.perf_counter() - t0
    solve_incidences().rate.block_until_ready()
    solve_compiled()
    times, after_other, with_incidences, ref_times, compiled_times = [], [], [], [], []
    # Rounds of: the JAX solve right after other work (the NumPy solve of the round before:
    # XLA's CPU threads have gone idle, as between two solves of a replay), the same solve again
    # (warm), the solve from crossing lists twice (the second timed), then the NumPy reference.
    # Interleaved, so that a slow moment of a loaded machine falls on all of them; at least
    # SOLVE_REPEATS rounds (the solves take milliseconds). Why both JAX figures: a median of 5
    # calls, some after other work and some not, moved the cab_instant ratio between 14x and
    # 29x from run to run on a 2-core machine.
    for _ in range(max(repeats, SOLVE_REPEATS)):
        for sink in (after_other, times):
            t0 = time.perf_counter()
            got = solve()
            got.rate.block_until_ready()
            sink.append(time.perf_counter() - t0)
        solve_incidences().rate.block_until_ready()
        t0 = time.perf_counter()
        solve_incidences().rate.block_until_ready()
        with_incidences.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        compiled_rate = solve_compiled()
        compiled_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref, ref_rounds = maxmin_rates_numpy(route_ids, cap)
        ref_times.append(time.perf_counter() - t0)
    if not np.array_equal(compiled_rate, np.asarray(got.rate)):
        raise AssertionError(f"{name}: the compiled solve's rates differ from the JAX solver's")
    med, ref_med = statistics.median(times), statistics.median(ref_times)
    compiled_med = statistics.median(compiled_times)
    rate = np.asarray(got.rate, np.float64)
    finite = np.isfinite(ref)
    diff = float(np.max(np.abs(rate[finite] - ref[finite]) / ref[finite])) if finite.any() else 0.0
    _log(f"{name}: {len(nbytes)} flows, jax {med * 1e3:.1f} ms, compiled {compiled_med * 1e3:.2f} ms, "
         f"numpy {ref_med * 1e3:.1f} ms")
    return {"case": name, "machine": topo.name, "flows": len(nbytes), "rounds": int(got.rounds),
            "numpy_rounds": ref_rounds, "compile_s": first_s - med, "median_s": med,
            "incidences_s": statistics.median(with_incidences), "after_other_s": statistics.median(after_other),
            "numpy_s": ref_med, "speedup": ref_med / med, "speedup_after_other": ref_med / statistics.median(after_other),
            "compiled_s": compiled_med, "speedup_compiled": ref_med / compiled_med,
            "max_rel_diff": diff, "repeats": len(times)}


def _goal_case(name: str, topo, jobs: list[commtime.Job], repeats: int) -> dict:
    """Every job's goal solve at the instant (its flows first, then every other job's, as a
    replay asks at a start): the compiled solve (:func:`~fattorus.kernels.maxmin_compiled.goal_step_time`)
    against the JAX one it replaced (:func:`~fattorus.analysis.commtime.goal_step_time_jax`,
    the ``numpy_s`` column here), interleaved; each answer checked equal."""
    route_ids, nbytes, owner = commtime._flows(topo, jobs)
    cap = commtime.solver_capacity(topo).astype(np.float32)
    problems = []
    for j in range(len(jobs)):
        order = np.r_[np.flatnonzero(owner == j), np.flatnonzero(owner != j)]
        problems.append((np.ascontiguousarray(route_ids[order]), nbytes[order], int((owner == j).sum())))

    def sweep(solve) -> tuple[float, list[float]]:
        t0 = time.perf_counter()
        got = [solve(r, b, own, cap) for r, b, own in problems]
        return time.perf_counter() - t0, got

    first_s, _ = sweep(goal_step_time)
    sweep(commtime.goal_step_time_jax)
    times, ref_times = [], []
    for _ in range(repeats):
        t, got = sweep(goal_step_time)
        times.append(t)
        t, ref = sweep(commtime.goal_step_time_jax)
        ref_times.append(t)
        if got != ref:
            raise AssertionError(f"{name}: the compiled goal solve differs from the JAX one")
    med, ref_med = statistics.median(times), statistics.median(ref_times)
    _log(f"{name}: {len(problems)} goal solves of {len(nbytes)} flows, compiled {med * 1e3:.1f} ms, "
         f"jax {ref_med * 1e3:.1f} ms")
    return {"case": name, "machine": topo.name, "flows": len(nbytes), "rounds": None, "numpy_rounds": None,
            "compile_s": max(first_s - med, 0.0), "median_s": med, "incidences_s": None, "after_other_s": None,
            "numpy_s": ref_med, "speedup": ref_med / med, "speedup_after_other": None, "max_rel_diff": 0.0,
            "repeats": len(times)}


def _fluid_case(name: str, topo, jobs: list[commtime.Job], repeats: int) -> dict:
    """Drained finish times of ``jobs``' flows: :func:`fattorus.analysis.fluid.finish_times`
    (the compiled solver on a CPU, JAX elsewhere) against NumPy, interleaved."""
    route_ids, nbytes, _ = commtime._flows(topo, jobs)
    cap = commtime.solver_capacity(topo).astype(np.float32)
    t0 = time.perf_counter()
    fluid.finish_times(route_ids, cap, nbytes)
    first_s = time.perf_counter() - t0
    times, ref_times = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        got, solves = fluid.finish_times(route_ids, cap, nbytes)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref, ref_solves = fluid.finish_times_numpy(route_ids, cap, nbytes)
        ref_times.append(time.perf_counter() - t0)
    med, ref_med = statistics.median(times), statistics.median(ref_times)
    pos = ref > 0
    diff = float(np.max(np.abs(got[pos] - ref[pos]) / ref[pos])) if pos.any() else 0.0
    _log(f"{name}: {len(nbytes)} flows, {solves} solves, drain {med:.3f} s, numpy {ref_med:.3f} s")
    return {"case": name, "machine": topo.name, "flows": len(nbytes), "rounds": solves, "numpy_rounds": ref_solves,
            "compile_s": first_s - med, "median_s": med, "incidences_s": None, "after_other_s": None,
            "numpy_s": ref_med, "speedup": ref_med / med, "speedup_after_other": None, "max_rel_diff": diff,
            "repeats": len(times)}


def run(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """Every case (module docstring)."""
    repeats = repeats or (QUICK_REPEATS if quick else REPEATS)
    replay_repeats = QUICK_REPLAY_REPEATS if quick else REPLAY_REPEATS
    rows = []
    label, jobs = cab_instant(QUICK_DAYS if quick else DAYS, seed)
    _log(label)
    rows.append(_case("cab_instant", topology.load("cab"), jobs, repeats))
    rows.append(_fluid_case("fluid_cab_instant", topology.load("cab"), jobs, repeats))
    rows.append(_goal_case("goal_cab_instant", topology.load("cab"), jobs, repeats))
    ft44 = topology.load("ft44")
    key = jax.random.PRNGKey(seed)
    alloc = np.random.default_rng(seed).choice(ft44.n_nodes, 4096, replace=False)
    rows.append(_case("ft44_stencil4d", ft44, [commtime.Job(alloc, patterns.make("stencil4d", key, 4096))], repeats))
    for pol in ("to", "ta"):
        rows.append(_replay_model(QUICK_MONTH if quick else MONTH, seed, pol, replay_repeats))
    rows.append(_replay_model_bluewaters(QUICK_WAVES if quick else WAVES, seed, replay_repeats))
    return rows


def _timed_replays(window, topo, pol: str, seed: int, params: dict | None = None, node_kind: str | None = None,
                   model: bool = False, repeats: int = 1) -> tuple[float, float, object]:
    """A replay run ``1 + repeats`` times (a fresh model each time when ``model``): the first
    run's wall time, the median of the others and the last run's result."""
    runs, out = [], None
    for _ in range(1 + repeats):
        kw = {"runtime_model": commtime.model_runtimes(topo, seed)} if model else {}
        t0 = time.perf_counter()
        out = replay.replay(window, topo, pol, "easy", policy_params=params, node_kind=node_kind, **kw)
        runs.append(time.perf_counter() - t0)
    return runs[0], float(np.median(runs[1:])), out


def _replay_model_bluewaters(waves: int, seed: int, repeats: int = 1) -> dict:
    """Plain vs ``speedup=model`` replay of the first ``waves`` Table II waves on Blue Waters,
    first fit over ``O2`` (module docstring)."""
    import polars as pl
    import yaml

    from fattorus import paths

    bw = topology.load("bluewaters")
    cfg = yaml.safe_load(paths.config_file("workload", "bluewaters_table2").read_text())
    kind = cfg.get("node_kind")
    wl, _ = workload.from_config({**cfg, "scale": 1}, machine_nodes=int(bw.usable(kind).sum()))
    jobs = workload.with_estimate(wl.jobs)
    window = jobs.filter(pl.col("submit_s") < jobs["submit_s"].min() + waves * 900)
    params = {"ordering": "O2"}
    plain_first, plain_s, plain = _timed_replays(window, bw, "first_fit", seed, params, kind, repeats=repeats)
    model_first, model_s, _ = _timed_replays(window, bw, "first_fit", seed, params, kind, model=True, repeats=repeats)
    _log(f"replay_model_bluewaters: {waves} Table II waves, plain {plain_s:.1f} s, model {model_s:.1f} s "
         f"(first {model_first:.1f})")
    return _model_row("replay_model_bluewaters", "bluewaters", plain_s, model_first, model_s, len(plain.jobs),
                      repeats)


def _model_row(case: str, machine: str, plain_s: float, model_first: float, model_s: float, jobs: int,
               repeats: int) -> dict:
    """A replay row: the warm model replay against the warm plain one (``numpy_s`` column),
    medians of ``repeats`` warm runs each; ``compile_s`` = the model's first run minus its median."""
    return {"case": case, "machine": machine, "flows": None, "rounds": None, "numpy_rounds": None,
            # An earlier row may have compiled the same solves: then the first run is no slower.
            "compile_s": max(model_first - model_s, 0.0), "median_s": model_s, "incidences_s": None, "after_other_s": None,
            "numpy_s": plain_s, "speedup": plain_s / model_s, "speedup_after_other": None,
            "max_rel_diff": None, "repeats": repeats, "jobs": jobs}


def _replay_model(days: float, seed: int, pol: str = "to", repeats: int = 1) -> dict:
    """Plain replay vs ``speedup=model`` replay of Atlas x2 on Cab under allocation policy
    ``pol`` (module docstring): each replayed once untimed-for-the-median (``compile_s`` =
    that run minus the median), then ``repeats`` times, the plain ones first."""
    cab = topology.load("cab")
    jobs = workload.load(trace_path(), cores_per_node=8).jobs
    scaled, _ = workload.scale_nodes(jobs, 2, cab.n_nodes)
    window = workload.first_days(scaled, days)
    plain_first, plain_s, plain = _timed_replays(window, cab, pol, seed, repeats=repeats)
    model_first, model_s, _ = _timed_replays(window, cab, pol, seed, model=True, repeats=repeats)
    case = "replay_model" if pol == "to" else f"replay_model_{pol}"
    _log(f"{case}: {days:g} days, plain {plain_s:.1f} s (first {plain_first:.1f}), "
         f"model {model_s:.1f} s (first {model_first:.1f})")
    return _model_row(case, "cab", plain_s, model_first, model_s, len(plain.jobs), repeats)
