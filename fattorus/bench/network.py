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

Two more kinds of row, timed the same way (``compile_s`` apart, ``run_s`` the median of
``repeats`` calls after a warm-up, the reference's median over ``ref_repeats`` calls in the
same run, ``ratio = reference_s / run_s``):

* ``interference``: :func:`fattorus.kernels.linkload.interference` (JAX, jitted; which
  inter-switch links carry more than one job's traffic, and per job its shared links, their
  share of its traffic and their split by link class) on the stacked loads of ``J`` jobs
  running together: ``J`` consecutive slices of a random permutation of ft44's nodes (sizes
  from ``J - 1`` random cuts; quick: Pinot), each with a pattern of the interference mix
  (:data:`fattorus.analysis.interference.DEFAULT_MIX`, in turn) and its loads from the NumPy
  routes (:func:`reference_loads`, untimed setup). The reference
  (:func:`reference_interference`) is plain NumPy sets: each job's used links
  (``flatnonzero``), jobs per link by ``bincount`` of their concatenation, and per job the
  intersection with the shared ones. Every integer output must be equal and the traffic
  shares within ``1e-5`` (float32 sums against float64), or the benchmark raises;
  ``max_rel_diff`` is the shares' largest difference. ``flows`` / ``flows_per_s`` are empty:
  the kernel reads loads (the problem gives ``J x n_links``).
* ``patterns.make(stencil4d)`` (on the stencil row's rank count) and
  ``patterns.make(unstructured_mesh)`` (1,024 ranks; quick 256): the traffic generators of
  :mod:`fattorus.analysis.patterns` (NumPy and numba on the host: ``device`` is ``host``,
  ``compile_s`` = the first call minus the median, numba compiling or loading its cache
  (numba and the helpers' modules imported before);
  the mesh's per-size candidate cache is cleared before every call, so each call does the
  whole work). References: :func:`reference_stencil4d` (coordinates ``unravel_index``,
  ``+-1`` per axis modulo the grid, ``ravel_multi_index``) and
  :func:`reference_unstructured_mesh` (the documented draws from ``jax.random`` itself, box
  offsets nearest first, first occurrences per row by a stable sort, a stable descending
  ``argsort`` of the Gumbel scores per rank); the flows (as multisets of ``(src, dst)``) and
  their bytes must be equal, or the benchmark raises.
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
from fattorus.analysis.interference import DEFAULT_MIX
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


# Interference -------------------------------------------------------------------------------
def reference_interference(topo: Topology, job_loads: np.ndarray, min_level: int = 1) -> dict[str, np.ndarray]:
    """NumPy reference of :func:`fattorus.kernels.linkload.interference` from plain link sets:
    each job's used links (load > 0, class >= ``min_level``), jobs per link by counting them,
    and per job the intersection of its links with the shared ones."""
    level = np.asarray(topo.link_class)
    n_links, n_classes = topo.n_links, len(topo.link_class_names)
    considered = level >= min_level
    links = [np.flatnonzero((row > 0) & considered) for row in job_loads]
    jobs_on_link = np.bincount(np.concatenate(links), minlength=n_links) if links else np.zeros(n_links, np.int64)
    shared = jobs_on_link > 1
    links_used, shared_links, share, by_level = [], [], [], []
    for row, mine in zip(job_loads, links):
        both = mine[shared[mine]]
        total = float(row[mine].astype(np.float64).sum())
        links_used.append(len(mine))
        shared_links.append(len(both))
        share.append(float(row[both].astype(np.float64).sum()) / total if total > 0 else 0.0)
        by_level.append(np.bincount(level[both], minlength=n_classes))
    return {
        "jobs_on_link": jobs_on_link,
        "shared": shared,
        "links_used": np.asarray(links_used),
        "shared_links": np.asarray(shared_links),
        "shared_share": np.asarray(share),
        "shared_by_level": np.asarray(by_level).reshape(len(links), n_classes),
    }


def instant_loads(topo: Topology, n_jobs: int, seed: int) -> tuple[np.ndarray, list[str], int]:
    """``(n_jobs, n_links)`` float32 loads of ``n_jobs`` jobs filling ``topo``: consecutive
    slices of a random node permutation (sizes from ``n_jobs - 1`` random cuts), patterns of
    the interference mix in turn, loads from the NumPy routes. Returns the loads, the jobs'
    pattern names and their total flows."""
    key = jax.random.PRNGKey(seed)
    k_nodes, k_cuts, k_traffic = jax.random.split(key, 3)
    nodes = np.asarray(jax.random.permutation(k_nodes, topo.n_nodes)).astype(np.int32)
    cuts = np.sort(np.asarray(jax.random.choice(k_cuts, topo.n_nodes - 1, (n_jobs - 1,), replace=False))) + 1
    mix = [name.split("=")[0] for name in DEFAULT_MIX.split(",")]
    loads = np.zeros((n_jobs, topo.n_links), np.float32)
    names, flows = [], 0
    for j, alloc in enumerate(np.split(nodes, cuts)):
        name = mix[j % len(mix)]
        traffic = patterns.make(name, jax.random.fold_in(k_traffic, j), len(alloc))
        src, dst, nbytes = patterns.to_nodes(alloc, traffic)
        loads[j] = reference_loads(topo, src, dst, nbytes)
        names.append(name)
        flows += traffic.n_flows
    return loads, names, flows


def bench_interference(topo: Topology, n_jobs: int, seed: int, repeats: int = 7, ref_repeats: int = 3) -> dict:
    """Time :func:`fattorus.kernels.linkload.interference` on the loads of ``n_jobs`` jobs running
    together (JAX vs NumPy sets); one result row."""
    loads, names, flows = instant_loads(topo, n_jobs, seed)
    args = jnp.asarray(loads)
    jax.block_until_ready(args)
    t0 = time.perf_counter()
    compiled = linkload.interference.lower(topo, args).compile()
    compile_s = time.perf_counter() - t0
    got = jax.block_until_ready(compiled(args))  # warm-up
    run_s = _median_time(lambda: jax.block_until_ready(compiled(args)), repeats)
    ref = reference_interference(topo, loads)
    ref_s = _median_time(lambda: reference_interference(topo, loads), ref_repeats)
    for field in ("jobs_on_link", "shared", "links_used", "shared_links", "shared_by_level"):
        if not np.array_equal(np.asarray(getattr(got, field)), ref[field]):
            raise AssertionError(f"interference {topo.name}: kernel's {field} differs from the NumPy reference")
    diff = float(np.max(np.abs(np.asarray(got.shared_share, np.float64) - ref["shared_share"]), initial=0.0))
    if diff > 1e-5:
        raise AssertionError(f"interference {topo.name}: traffic shares differ from the NumPy reference by {diff:.2e}")
    exposed = int(np.count_nonzero(ref["shared_links"]))
    return {
        "kernel": "interference",
        "machine": topo.name,
        "problem": (f"{n_jobs} jobs filling the machine at random ({n_jobs} x {topo.n_links:,} link loads; "
                    f"{flows:,} flows of {'/'.join(dict.fromkeys(names))}; {exposed} jobs exposed)"),
        "flows": None,
        "device": jax.devices()[0].platform,
        "compile_s": compile_s,
        "run_s": run_s,
        "flows_per_s": None,
        "reference": "NumPy link sets: flatnonzero, bincount, intersection per job",
        "reference_s": ref_s,
        "ratio": ref_s / run_s,
        "max_rel_diff": diff,
    }


# Communication patterns ---------------------------------------------------------------------
def reference_stencil4d(n: int, nbytes: float = 4 * patterns.MiB) -> patterns.Traffic:
    """NumPy 4D stencil: each rank's ``+-1`` neighbours along every axis of the periodic grid
    ``grid_dims(n, 4)`` (rank <-> coordinates by ``unravel_index`` / ``ravel_multi_index``),
    flows to itself dropped."""
    dims = np.asarray(patterns.grid_dims(n, 4))
    coords = np.stack(np.unravel_index(np.arange(n), tuple(dims)), axis=-1)  # (n, 4)
    src, dst = [], []
    for axis in range(4):
        for step in (1, -1):
            moved = coords.copy()
            moved[:, axis] = (moved[:, axis] + step) % dims[axis]
            src.append(np.arange(n))
            dst.append(np.ravel_multi_index(tuple(moved.T), tuple(dims)))
    src, dst = np.concatenate(src), np.concatenate(dst)
    keep = src != dst
    return patterns.Traffic(src[keep], dst[keep], np.full(int(keep.sum()), float(nbytes)))


def reference_unstructured_mesh(key, n: int, nbytes: float = 512 * patterns.KiB, lo: int = 6, hi: int = 27,
                                radius: int = 2, locality: float = 4.0) -> patterns.Traffic:
    """NumPy unstructured mesh from its documented draws, with ``jax.random`` itself for the
    bits: split the key; counts ``lo + floor(u (hi - lo + 1))``; box offsets nearest first
    (stable); candidates on the periodic grid ``grid_dims(n, 3)``; usable = not the rank and
    the first occurrence in its row (stable sort); Gumbel scores ``-locality/2 log |o|^2 -
    log(-log u)``; each rank's ``count`` best by a stable descending ``argsort``."""
    k_count, k_pick = jax.random.split(key)
    u_count = np.asarray(jax.random.uniform(k_count, (n,)), np.float64)
    counts = np.minimum(lo + np.floor(u_count * (hi - lo + 1)), hi).astype(np.int64)
    r = np.arange(-radius, radius + 1)
    offsets = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    dist2 = (offsets**2).sum(axis=1)
    offsets, dist2 = offsets[dist2 > 0], dist2[dist2 > 0]
    order = np.argsort(dist2, kind="stable")
    offsets, dist2 = offsets[order], dist2[order]
    m = len(offsets)
    dims = np.asarray(patterns.grid_dims(n, 3))
    coords = np.stack(np.unravel_index(np.arange(n), tuple(dims)), axis=-1)  # (n, 3)
    moved = (coords[:, None, :] + offsets[None, :, :]) % dims  # (n, m, 3)
    cand = np.ravel_multi_index(tuple(np.moveaxis(moved, -1, 0)), tuple(dims))  # (n, m)
    by_value = np.argsort(cand, axis=1, kind="stable")
    sorted_cand = np.take_along_axis(cand, by_value, axis=1)
    repeat = np.zeros(cand.shape, bool)
    np.put_along_axis(repeat, by_value[:, 1:], sorted_cand[:, 1:] == sorted_cand[:, :-1], axis=1)
    usable = ~repeat & (cand != np.arange(n)[:, None])
    u_pick = np.asarray(jax.random.uniform(k_pick, (n * m,)), np.float64).reshape(n, m)
    gumbel = -np.log(-np.log(np.maximum(u_pick, np.finfo(np.float32).tiny)))
    score = np.where(usable, -0.5 * locality * np.log(dist2)[None, :] + gumbel, -np.inf)
    best = np.argsort(-score, axis=1, kind="stable")
    take = (np.arange(m)[None, :] < counts[:, None]) & np.isfinite(np.take_along_axis(score, best, axis=1))
    rows = np.broadcast_to(np.arange(n)[:, None], (n, m))[take]
    dst = np.take_along_axis(cand, best, axis=1)[take]
    return patterns.Traffic(rows, dst, np.full(len(rows), float(nbytes)))


def _flow_multiset(t: patterns.Traffic) -> np.ndarray:
    """``(F, 3)`` rows ``(src, dst, nbytes)`` in lexicographic order (flows as a multiset)."""
    a = np.stack([np.asarray(t.src, np.float64), np.asarray(t.dst, np.float64), np.asarray(t.nbytes, np.float64)], 1)
    return a[np.lexsort(a.T[::-1])]


def bench_pattern(name: str, n: int, key, reference: Callable[[], patterns.Traffic], problem: str,
                  repeats: int = 7, ref_repeats: int = 3) -> dict:
    """Time ``patterns.make(name, key, n)`` (the host generator: NumPy + numba) against a plain
    NumPy ``reference()``; one result row. The flows must be equal as multisets."""

    def ours() -> patterns.Traffic:
        if name == "unstructured_mesh":
            patterns._mesh_candidates.cache_clear()  # every call does the whole work, as the reference
        return patterns.make(name, key, n)

    # Import numba and the generators' compiled helpers first: compile_s is their compile (or cache load) alone.
    from fattorus.kernels import grid, select, threefry  # noqa: F401

    t0 = time.perf_counter()
    got = ours()
    first = time.perf_counter() - t0
    ours()  # warm-up
    run_s = _median_time(ours, repeats)
    ref = reference()  # warm-up (jax.random compiles)
    ref_s = _median_time(reference, ref_repeats)
    if got.n_flows != ref.n_flows or not np.array_equal(_flow_multiset(got), _flow_multiset(ref)):
        raise AssertionError(f"patterns.make({name!r}, n={n}): {got.n_flows:,} flows differ from the NumPy "
                             f"reference's {ref.n_flows:,}")
    return {
        "kernel": f"patterns.make({name})",
        "machine": None,
        "problem": problem,
        "flows": got.n_flows,
        "device": "host",
        "compile_s": max(first - run_s, 0.0),
        "run_s": run_s,
        "flows_per_s": got.n_flows / run_s,
        "reference": "NumPy coordinates + modular offsets" if name == "stencil4d"
        else "NumPy on jax.random draws: box candidates, stable sorts",
        "reference_s": ref_s,
        "ratio": ref_s / run_s,
        "max_rel_diff": 0.0,
    }


def _random_nodes(topo: Topology, n: int, seed: int) -> np.ndarray:
    """``n`` distinct nodes of ``topo`` in a uniformly random order (topology-oblivious)."""
    key = jax.random.PRNGKey(seed)
    return np.asarray(jax.random.permutation(key, topo.n_nodes))[:n].astype(np.int32)


def run(repeats: int = 7, ref_repeats: int = 3, seed: int = 0, quick: bool = False) -> list[dict]:
    """Run the network benchmarks; one row per problem (see the module docstring).

    ``quick`` shrinks the problems (all-to-all on 256 nodes, 4D stencil on 1,296 nodes,
    interference of 32 jobs on Pinot, a mesh of 256 ranks) and the repeats (5 and 1) for a
    smoke run; the rows' ``problem`` says which sizes ran.
    """
    if quick:
        repeats, ref_repeats = 5, 1
    n_a2a, n_stencil = (256, 1296) if quick else (1024, 4096)
    n_mesh = 256 if quick else 1024
    # The pattern rows first: their compile_s is the generators' first call in this process.
    key = jax.random.PRNGKey(seed)
    grid4 = "x".join(map(str, patterns.grid_dims(n_stencil, 4)))
    grid3 = "x".join(map(str, patterns.grid_dims(n_mesh, 3)))
    pattern_rows = [
        bench_pattern("stencil4d", n_stencil, None, lambda: reference_stencil4d(n_stencil),
                      f"stencil4d traffic of {n_stencil:,} ranks ({grid4} grid, 8 neighbours, 4 MiB each)",
                      repeats, ref_repeats),
        bench_pattern("unstructured_mesh", n_mesh, key, lambda: reference_unstructured_mesh(key, n_mesh),
                      f"unstructured_mesh traffic of {n_mesh:,} ranks ({grid3} grid, 6-27 of 124 box neighbours, "
                      "512 KiB each)", repeats, ref_repeats),
    ]
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
    inter_topo, n_jobs = (pinot, 32) if quick else (ft44, 256)
    rows.append(bench_interference(inter_topo, n_jobs, seed + 2, repeats, ref_repeats))
    return rows + pattern_rows


def main() -> None:
    """Print the benchmark rows (``python -m fattorus.bench.network``)."""
    print(f"{'machine':<8} {'flows':>9} {'compile_s':>9} {'run_s':>9} {'Mflows/s':>9} {'numpy_s':>9} {'ratio':>7}  problem")
    for r in run():
        flows = "" if r["flows"] is None else f"{r['flows']:,}"
        rate = "" if r["flows_per_s"] is None else f"{r['flows_per_s'] / 1e6:.2f}"
        print(f"{r['machine'] or '-':<8} {flows:>9} {r['compile_s']:>9.3f} {r['run_s']:>9.5f} "
              f"{rate:>9} {r['reference_s']:>9.4f} {r['ratio']:>7.1f}  {r['kernel']}: {r['problem']}"
              f" [{r['device']}, max rel diff {r['max_rel_diff']:.1e}]")


if __name__ == "__main__":
    sys.exit(interrupt.run("fattorus.bench.network", main))
