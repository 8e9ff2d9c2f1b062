"""Benchmark: one iteration of the QoS paper's Algorithm 1 on its large system (issue 15).

The large system (``conf/qos/large.yaml``: Cab's 1,296-node fat-tree, 16 jobs x 80
processes, ~27,000 flows). One iteration = the rates of a new service-level assignment
(:func:`fattorus.kernels.service_levels.service_level_rates`, never cached here), the
processes' times and the jobs' steps (:mod:`fattorus.analysis.bsp`) and the state machine's
step (:func:`fattorus.analysis.qos_feedback.observe`) in the ``RUNNING`` state: the default
level's ``default_periods`` (10 on large) are observed first, untimed, so the timed step scores
a trial against the default. Cases: one process raised onto its own
level (two levels in use: the common trial) and fifteen processes on fifteen levels of
different weights (every level in use: the worst case).

``median_s``: median over ``repeats`` iterations with fresh assignments after a warm-up
(``compile_s``: the first iteration's extra time). Reference, same flows, same run: one plain
max-min solve (:func:`fattorus.kernels.maxmin.maxmin_rates`, JAX, float32) — ``ratio`` =
``median_s`` / ``reference_s``. Target: one iteration well under a second on CPU.
"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import OmegaConf

from fattorus.analysis import qos
from fattorus.analysis import qos_feedback as qf
from fattorus.kernels.maxmin import maxmin_rates
from fattorus.paths import config_file
from fattorus.topology.fattree import FatTree

NOTES = ("One iteration of Algorithm 1 on the QoS paper's large system (16 jobs x 80 processes on Cab): "
         "rates of a fresh assignment + process times + state step. median_s after a warm-up, compile_s "
         "apart; reference_s: one plain max-min solve of the same flows, same run. Target: well under 1 s.")


def _log(msg: str) -> None:
    print(f"[qos] {msg}", file=sys.stderr, flush=True)


def run(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """One row per case (module docstring)."""
    repeats = repeats or (2 if quick else 5)
    cfg = OmegaConf.to_container(OmegaConf.load(config_file("qos", "large")))
    exp = qos.experiment_from(cfg)
    topo = FatTree("large", **cfg["system"])
    rng = np.random.default_rng(seed)
    mix = qos.build_mix(topo, exp, rng)
    routes = qos.static_routes(topo, mix)
    net = qos.Network(topo, mix, routes, exp.bandwidth, exp.params.num_sls)
    compute = rng.uniform(0, 1e-3, len(mix.job_of))
    # Past the default observation (large.yaml observes 10 periods): the timed step is a
    # RUNNING one, a trial scored against the default (not one more default period summed).
    fb = qf.start()
    while fb.mode == qf.DEFAULT:
        fb = qf.observe(fb, np.ones(len(mix.patterns)), np.ones(len(mix.job_of)), mix.job_of, exp.params)
    assert fb.mode == qf.RUNNING, fb.mode

    def iteration(assignments):
        t0 = time.perf_counter()
        rate = net.rates(assignments)
        done, steps = qos._steps(mix, compute, rate)
        qf.observe(fb, exp.period_s / steps, exp.period_s / done, mix.job_of, exp.params)
        return time.perf_counter() - t0

    procs = rng.permutation(len(mix.job_of))
    cases = {
        "one process raised": lambda k: ((int(procs[k]), 2.0),),
        "15 levels in use": lambda k: tuple(sorted((int(p), float(2 ** (i % 7 + 1)))
                                                   for i, p in enumerate(procs[100 + 15 * k: 115 + 15 * k]))),
    }
    cap = jnp.asarray(net.capacity, jnp.float32)
    r = jnp.asarray(routes)
    maxmin_rates(r, cap).rate.block_until_ready()
    ref = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        maxmin_rates(r, cap).rate.block_until_ready()
        ref.append(time.perf_counter() - t0)
    reference_s = statistics.median(ref)
    rows = []
    for name, make in cases.items():
        first = iteration(make(0))
        times = [iteration(make(k)) for k in range(1, repeats + 1)]
        med = statistics.median(times)
        _log(f"{name}: {med:.3f} s per iteration (first {first:.2f} s), plain max-min {reference_s:.3f} s")
        rows.append({"case": name, "flows": len(mix.src), "links": topo.n_links, "median_s": med,
                     "compile_s": max(first - med, 0.0), "reference_s": reference_s, "ratio": med / reference_s,
                     "repeats": repeats, "backend": jax.default_backend()})
    return rows
