"""Benchmark: what a replay's per-job outputs cost over its scheduling, on every family.

Workload: the first ``DAYS`` days (``quick``: ``QUICK_DAYS``) of LLNL-Atlas x2, node counts
fit to each machine (``workload.scale_nodes``), EASY. Per (machine, policy) row, after one
warm-up replay (compilations, numba caches), ``repeats`` rounds, interleaved:

* ``simulate_s``: :func:`fattorus.sched.replay.simulate` alone — the scheduling, the
  reference the outputs are measured against;
* ``replay_s``: the whole :func:`fattorus.sched.replay.replay` (prepare, simulate, the jobs
  table with every per-job figure, utilization, summary); ``outputs_ratio = replay_s /
  simulate_s``;
* the per-job figures of the replay's schedule on their own: ``aph_s``
  (:func:`fattorus.kernels.aph.aph_of` as a replay runs it: the family's host rule where it
  has one and JAX runs on the CPU),
  ``aph_kernel_s`` (the compiled padded kernel the host rule replaces, same APH checked
  equal; ``aph_speedup = aph_kernel_s / aph_s``), ``exposed_s``
  (:func:`fattorus.analysis.metrics.exposed`) and ``max_hops_s`` (``max_hops_of`` per job);
* ``ideal_s``: ``ideal_aph`` of every job size of the schedule on a fresh copy of the machine
  (nothing cached: what a process's first replay pays; the replays above reuse the warm-up's
  ideals); ``ideal_sizes`` how many sizes.

Medians over the rounds; all in seconds on this machine's CPU.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

import numpy as np

from fattorus import topology, workload
from fattorus.analysis import metrics
from fattorus.bench.replay import trace_path
from fattorus.kernels.aph import aph_of
from fattorus.sched import policy, replay

DAYS, QUICK_DAYS = 30.0, 3.0
REPEATS, QUICK_REPEATS = 3, 1
#: (machine, policy) rows: a fat-tree's oblivious and interference-free policies, a torus's
#: first fit, a dragonfly's contiguous and scattered placements.
CASES = (("cab", "to"), ("cab", "ta"), ("bluewaters", "first_fit"), ("edison", "compact"),
         ("edison", "random_router"))
NOTES = ("Atlas x2 fit to each machine, EASY. simulate_s = scheduling alone (the reference); replay_s = the whole "
         "replay.replay (outputs included); outputs_ratio = replay_s / simulate_s; aph_s, aph_kernel_s, exposed_s, "
         "max_hops_s = the per-job figures alone on the replay's schedule (aph_speedup = kernel / host rule, same APH "
         "checked); ideal_s = ideal_aph of the schedule's ideal_sizes job sizes on a fresh copy of the machine. "
         "Medians of `repeats` interleaved rounds after a warm-up replay.")


def _log(msg: str) -> None:
    print(f"[outputs] {msg}", file=sys.stderr, flush=True)


def _timed(fn) -> tuple[float, object]:
    """``fn()``'s wall time (s) and result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(quick: bool = False, repeats: int | None = None) -> list[dict]:
    """One row per :data:`CASES` entry (module docstring)."""
    repeats = repeats or (QUICK_REPEATS if quick else REPEATS)
    log = workload.load(trace_path(), cores_per_node=8).jobs
    rows = []
    for machine, pol in CASES:
        topo = topology.load(machine)
        scaled, _ = workload.scale_nodes(log, 2, topo.n_nodes)
        window = workload.first_days(scaled, QUICK_DAYS if quick else DAYS)
        usable = topo.usable()  # the replay's default node kind (Blue Waters: XE)
        capacity = int(usable.sum())
        prepared, _ = replay.prepare(window, capacity)
        cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
        held = None if capacity == topo.n_nodes else usable  # as replay.replay passes it
        result = replay.replay(window, topo, pol, "easy")  # warm-up: compilations, caches
        allocs = [np.asarray(a, np.int64) for a in result.jobs["alloc"].to_list()]
        aph_of(topo, allocs, host=False)
        sizes = np.unique(cols[3]).tolist()
        sim, full, aph_t, kernel_t, exp_t, hops_t, ideal_t = ([] for _ in range(7))
        for _ in range(repeats):
            sim.append(_timed(lambda: replay.simulate(*cols, topo, policy.make(pol, topo), "easy", usable=held))[0])
            full.append(_timed(lambda: replay.replay(window, topo, pol, "easy"))[0])
            t, host = _timed(lambda: aph_of(topo, allocs))
            aph_t.append(t)
            t, kernel = _timed(lambda: aph_of(topo, allocs, host=False))
            kernel_t.append(t)
            if not np.array_equal(host, kernel):
                raise RuntimeError(f"{machine}: the host APH differs from the kernel's")
            exp_t.append(_timed(lambda: metrics.exposed(result.jobs, topo))[0])
            hops_t.append(_timed(lambda: [topo.max_hops_of(a) for a in allocs])[0])
            fresh = dataclasses.replace(topo)  # no cached ideals, orderings or distance tables
            ideal_t.append(_timed(lambda: [fresh.ideal_aph(n) for n in sizes])[0])
        med = {k: statistics.median(v) for k, v in (("simulate_s", sim), ("replay_s", full), ("aph_s", aph_t),
                                                     ("aph_kernel_s", kernel_t), ("exposed_s", exp_t),
                                                     ("max_hops_s", hops_t), ("ideal_s", ideal_t))}
        _log(f"{machine} {pol}: simulate {med['simulate_s']:.2f} s, replay {med['replay_s']:.2f} s")
        rows.append({"machine": machine, "policy": pol, "jobs": len(cols[0]), "ideal_sizes": len(sizes), **med,
                     "outputs_ratio": med["replay_s"] / med["simulate_s"],
                     "aph_speedup": med["aph_kernel_s"] / med["aph_s"], "repeats": repeats})
    return rows
