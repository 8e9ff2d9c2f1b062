"""Benchmark: one adaptive (UGAL-like) steady-state traffic solve of WD 4 on Edison (issue 13).

WD 4 (the dragonfly paper's Table 1): four jobs of 32,768 ranks (24 ranks per node: 1,366
nodes each) running 4D Stencil (8 neighbours, 4 MiB), Many-to-many (all-to-all within
sub-communicators of 32 ranks, 32 KiB), Spread (6–27 random neighbours, 512 KiB) and
Unstructured mesh (512 KiB), placed on consecutive node ids (jobs fill groups in order, the
Edison-like placement's first choice). Rank flows are summed per node pair — a route depends
only on its node pair, so link traffic is unchanged — and each node pair gets the study's
candidates: its minimal route, the other minimal route (black first) and 2 Valiant routes
(:func:`fattorus.kernels.adaptive.valiant_paths`).

Three implementations of the one iteration, same run, same inputs: ``median_s``
:func:`~fattorus.kernels.adaptive.adaptive_loads` (JAX, incremental: the link -> flows index
build included; median of ``repeats`` after a warm-up call, ``compile_s`` apart);
``full_s`` :func:`~fattorus.kernels.adaptive.adaptive_loads_full` (JAX, whole-array steps,
float32; one run after a warm-up); ``numpy_s`` :func:`~fattorus.kernels.adaptive.adaptive_numpy`
(plain NumPy, whole-array steps, float64; one run). ``speedup = numpy_s / median_s`` (target
>= 20 on CPU); ``iterations`` (incremental and NumPy must agree: same float64 decisions);
max router-link cost (bytes / (GB/s); node links left out: they carry a node's traffic on
every path) under minimal and adaptive routing; per link class (green, black, blue) the max
and mean traffic in MB under adaptive routing.
"""

from __future__ import annotations

import sys
import time

import jax.numpy as jnp
import numpy as np

from fattorus import topology
from fattorus.analysis import parallel_workloads
from fattorus.kernels.adaptive import adaptive_loads, adaptive_loads_full, adaptive_numpy, valiant_paths

NOTES = ("WD 4 on Edison (4 jobs x 32,768 ranks, 24 per node), rank flows summed per node pair, both minimal + 2 "
         "Valiant paths each; adaptive iteration: JAX incremental (median_s) and whole-array (full_s) vs the same "
         "iteration in NumPy, same run; target speedup >= 20 (CPU).")


def _log(msg: str) -> None:
    print(f"[dragonfly] {msg}", file=sys.stderr, flush=True)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run(quick: bool = False, repeats: int | None = None, seed: int = 0) -> list[dict]:
    """One row per cable configuration (``quick``: DEF only)."""
    repeats = repeats or (1 if quick else 3)
    rows = []
    for name in (("edison",) if quick else ("edison", "edison_k", "edison_bk")):
        topo = topology.load(name)
        src, dst, nbytes, _ = parallel_workloads.node_flows(topo.n_nodes, parallel_workloads.WORKLOADS["WD 4"],
                                                            seed=seed)
        paths = valiant_paths(topo, src, dst, k=2, seed=seed, black_first=True)
        bw = np.asarray(topo.link_bandwidth, np.float64)
        cls = np.asarray(topo.link_class)
        net = cls > 0  # router-to-router links: green, black, blue
        got, first_s = _timed(lambda: adaptive_loads(paths, nbytes, bw, counted=net))
        times = [_timed(lambda: adaptive_loads(paths, nbytes, bw, counted=net))[1] for _ in range(repeats)]
        med = float(np.median(times))
        p, b, w, c = jnp.asarray(paths), jnp.asarray(nbytes, jnp.float32), jnp.asarray(bw, jnp.float32), jnp.asarray(net)
        adaptive_loads_full(p, b, w, counted=c).max_cost.block_until_ready()  # compile
        full, full_s = _timed(lambda: adaptive_loads_full(p, b, w, counted=c).max_cost.block_until_ready())
        (_, ref_m, ref_it), numpy_s = _timed(lambda: adaptive_numpy(paths, nbytes, bw, counted=net))
        traffic = np.asarray(got.traffic, np.float64)
        per_class = {}
        for k, cname in enumerate(topo.link_class_names):
            if k and (cls == k).any():
                per_class[f"{cname}_max_MB"] = float(traffic[cls == k].max() / 1e6)
                per_class[f"{cname}_mean_MB"] = float(traffic[cls == k].mean() / 1e6)
        _log(f"{name}: {len(src)} node pairs, jax {med:.2f} s (whole-array {full_s:.2f} s), numpy {numpy_s:.2f} s")
        rows.append({"machine": name, "node_pairs": len(src), "iterations": int(got.iterations),
                     "numpy_iterations": ref_it, "compile_s": first_s - med, "median_s": med, "full_s": full_s,
                     "numpy_s": numpy_s, "speedup": numpy_s / med, "minimal_max_cost": float(got.minimal_max_cost),
                     "adaptive_max_cost": float(got.max_cost), "numpy_max_cost": ref_m, **per_class,
                     "repeats": repeats})
    return rows
