"""Benchmark: D-mod-k routes + link loads (JAX) against a NumPy reference in the same run.

Problems (spec `kernels.md`, "Benchmarks"):

* ``all_to_all`` on 1,024 uniformly random nodes of Pinot: 1,047,552 flows;
* ``stencil4d`` (8 neighbours, MILC-like) on 4,096 uniformly random nodes of ft44: 32,768 flows.

For each, the JAX kernel is :func:`fattorus.kernels.linkload.flow_link_loads` (the
topology's routes and the scatter-add fused in one jit). ``compile_s`` is the lower + compile time, ``run_s`` the median
of ``repeats`` timed calls after one warm-up call (``block_until_ready``), ``flows_per_s`` is
flows / ``run_s``. The reference is straightforward NumPy on the full problem, written by the
machine's family (:data:`REFERENCES`; for the fat-tree
:func:`fattorus.topology.fattree_routing.numpy_flow_loads`: the six candidate links per flow
from the D-mod-k formulas, a mask per route case, and ``np.add.at``); ``reference_s`` is its median over ``ref_repeats`` calls and ``ratio =
reference_s / run_s`` (> 1: JAX is faster). Each row also reports the largest relative
difference between the two load vectors (``max_rel_diff``), so a wrong kernel cannot hide
behind a fast one.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.bench.network")

import statistics
import sys
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from fattorus import topology
from fattorus.analysis import patterns
from fattorus.kernels import linkload
from fattorus.topology import Topology, fattree_routing


#: ``kind`` -> a plain NumPy reference ``(topo, src, dst, nbytes) -> bytes per link`` written by
#: the family independently of its routes kernel (a family without one is not benchmarked here).
REFERENCES: dict[str, Callable[[Topology, np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "fattree": fattree_routing.numpy_flow_loads,
}


def reference_loads(topo: Topology, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """NumPy reference: bytes per directed link of flows ``src -> dst`` (the family's routes)."""
    if topo.kind not in REFERENCES:
        raise ValueError(f"no NumPy link-load reference for kind {topo.kind!r}; have {sorted(REFERENCES)}")
    return REFERENCES[topo.kind](topo, src, dst, nbytes)


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_problem(
    topo: Topology,
    problem: str,
    alloc: np.ndarray,
    traffic: patterns.Traffic,
    repeats: int = 7,
    ref_repeats: int = 3,
) -> dict:
    """Time routes + link loads of ``traffic`` on ``alloc`` (JAX vs NumPy); one result row."""
    src, dst, nbytes = patterns.to_nodes(alloc, traffic)
    args = (jnp.asarray(src), jnp.asarray(dst), jnp.asarray(nbytes, jnp.float32))
    jax.block_until_ready(args)
    t0 = time.perf_counter()
    compiled = linkload.flow_link_loads.lower(topo, *args).compile()
    compile_s = time.perf_counter() - t0
    got = np.asarray(compiled(*args).block_until_ready())  # warm-up
    run_s = _median_time(lambda: compiled(*args).block_until_ready(), repeats)
    ref = reference_loads(topo, src, dst, nbytes)
    ref_s = _median_time(lambda: reference_loads(topo, src, dst, nbytes), ref_repeats)
    rel = float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1.0)))
    n_flows = traffic.n_flows
    return {
        "kernel": "routes+link_loads",
        "machine": topo.name,
        "problem": problem,
        "flows": n_flows,
        "device": jax.devices()[0].platform,
        "compile_s": compile_s,
        "run_s": run_s,
        "flows_per_s": n_flows / run_s,
        "reference": "NumPy vectorised routes + np.add.at, full problem",
        "reference_s": ref_s,
        "ratio": ref_s / run_s,
        "max_rel_diff": rel,
    }


def _random_nodes(topo: Topology, n: int, seed: int) -> np.ndarray:
    """``n`` distinct nodes of ``topo`` in a uniformly random order (topology-oblivious)."""
    key = jax.random.PRNGKey(seed)
    return np.asarray(jax.random.permutation(key, topo.n_nodes))[:n].astype(np.int32)


def run(repeats: int = 7, ref_repeats: int = 3, seed: int = 0, quick: bool = False) -> list[dict]:
    """Run both network benchmarks; one row per problem (see the module docstring).

    ``quick`` shrinks the problems (all-to-all on 256 nodes, 4D stencil on 1,296 nodes) and
    the repeats (5 and 1) for a smoke run; the rows' ``problem`` says which sizes ran.
    """
    if quick:
        repeats, ref_repeats = 5, 1
    n_a2a, n_stencil = (256, 1296) if quick else (1024, 4096)
    rows = []
    pinot = topology.load("pinot")
    a2a = patterns.all_to_all(None, n_a2a)
    rows.append(
        bench_problem(
            pinot,
            f"all_to_all on {n_a2a:,} random nodes ({a2a.n_flows:,} flows, 64 KiB each)",
            _random_nodes(pinot, n_a2a, seed),
            a2a,
            repeats,
            ref_repeats,
        )
    )
    ft44 = topology.load("ft44")
    stencil = patterns.stencil4d(None, n_stencil)
    grid = "x".join(map(str, patterns.grid_dims(n_stencil, 4)))
    rows.append(
        bench_problem(
            ft44,
            f"stencil4d on {n_stencil:,} random nodes ({grid} grid, {stencil.n_flows:,} flows, 4 MiB each)",
            _random_nodes(ft44, n_stencil, seed + 1),
            stencil,
            repeats,
            ref_repeats,
        )
    )
    return rows


def main() -> None:
    """Print the benchmark rows (``python -m fattorus.bench.network``)."""
    print(f"{'machine':<8} {'flows':>9} {'compile_s':>9} {'run_s':>9} {'Mflows/s':>9} {'numpy_s':>9} {'ratio':>7}  problem")
    for r in run():
        print(f"{r['machine']:<8} {r['flows']:>9,} {r['compile_s']:>9.3f} {r['run_s']:>9.5f} "
              f"{r['flows_per_s'] / 1e6:>9.2f} {r['reference_s']:>9.4f} {r['ratio']:>7.1f}  {r['problem']}"
              f" [{r['device']}, max rel diff {r['max_rel_diff']:.1e}]")


if __name__ == "__main__":
    sys.exit(interrupt.run("fattorus.bench.network", main))
