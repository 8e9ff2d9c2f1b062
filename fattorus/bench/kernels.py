"""Benchmark: the APH, hop-matrix and random-allocation kernels against plain NumPy, in the same run.

For each machine (the fat-trees Cab 1,296 nodes, Pinot 2,592, ft44 10,648, and the 3D torus
torus8, 1,024, and Blue Waters, 27,648 slots: the kernels take any topology) and allocation size ``n`` in
16 / 256 / 1,024 / 4,096 (sizes larger than the machine are skipped), a batch of ``B =
1,024`` allocations is drawn uniformly on an empty machine with
:func:`fattorus.kernels.montecarlo.random_allocations` (``width = aph.bucket(n)``). Three rows per cell:

* ``hop_sums``: :func:`fattorus.kernels.aph.hop_sums`, the topology's ``hop_sum`` kernel
  (on a fat-tree the closed-form ``sum_{i != j} H`` from per-group counts) on the
  ``(B, width)`` batch. The reference builds each allocation's ``n x n`` hop matrix with
  NumPy (``topo.hops`` on NumPy arrays, broadcast) and sums it, one allocation at a time.
  The kernel's sums must equal the reference's on every
  allocation the reference timed, or the benchmark raises.
* ``hop_matrix``: :func:`fattorus.kernels.aph.hop_matrix`, the general ``n x n`` hop matrix
  (``topo.hops`` broadcast, jitted) of one allocation, the batch's first (``batch = 1``,
  ``width = n``: the kernel takes the ``n`` node ids unpadded). The reference
  (:data:`HOP_MATRIX_REFERENCES`, by family) is written from the node coordinates
  (``topo.coords``) broadcast in NumPy, independently of ``topo.hops``: on a fat-tree 4 hops
  between its outer switch groups, 2 between inner groups of one outer group, 0 within an inner
  group; on a 3D torus the sum of the ring
  distances ``min(|dc|, X - |dc|)`` per dimension. The two matrices must be equal, and the
  kernel's matrix must sum to the ``hop_sums`` kernel's sum of that allocation, or the
  benchmark raises (a family without a reference gets no row).
* ``random_allocations``: the kernel itself (``top_k`` of uniform scores on the free mask).
  The reference is ``numpy.random.Generator.choice(free_ids, n, replace=False)`` per
  allocation. Both outputs are checked to be ``n`` distinct free node ids per row.

Columns: ``compile_s`` is the first call on that shape minus ``run_s``; ``aot_compile_s``
times ``lower(...).compile()`` alone, after ``jax.clear_caches()`` (the first-call estimate
is noisy when one run is long, as for ``random_allocations`` on ft44); ``run_s`` is the median
of ``repeats`` timed calls after two warm-up calls, each waiting on ``block_until_ready``;
``allocs_per_s = B / run_s`` (``hop_matrix``: ``1 / run_s``). The reference is timed on a subset of
``ref_allocs`` allocations of the batch, sized from a one-allocation probe so that one pass
takes about ``REF_TARGET_S`` (capped at the batch; ``ref_passes`` passes over that subset
when even the whole batch is quicker); ``ref_s_per_alloc`` is the median over
``REF_REPEATS`` such passes divided by the allocations in a pass, and ``ratio =
ref_s_per_alloc / (run_s / B)`` (> 1: the kernel is faster per allocation).
"""

from __future__ import annotations

import math
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from fattorus import topology
from fattorus.kernels import aph, montecarlo
from fattorus.topology import Topology

MACHINES = ("cab", "pinot", "ft44", "torus8", "bluewaters")
SIZES = (16, 256, 1024, 4096)
BATCH = 1024
REPEATS = 7
REF_TARGET_S = 0.5
REF_REPEATS = 3

QUICK_SIZES = (16, 256)
QUICK_BATCH = 128
QUICK_REPEATS = 5
QUICK_REF_TARGET_S = 0.05

NOTES = (
    "compile_s = first call on the shape minus run_s; aot_compile_s = lower().compile() alone "
    "after jax.clear_caches(); run_s = median of `repeats` calls after "
    "2 warm-up calls (block_until_ready); allocs_per_s = batch / run_s. Reference (NumPy, one "
    "allocation at a time): hop_sums -> n x n hop matrix then sum; hop_matrix (one allocation, "
    "batch 1, unpadded) -> n x n matrix from the node coordinates broadcast (fat-tree: which switch "
    "groups differ; torus: ring distances per dimension); random_allocations -> "
    "Generator.choice(free, n, replace=False). It is timed on `ref_allocs` allocations of the "
    "batch x `ref_passes` passes (median of 3) and scaled per allocation; "
    "ratio = ref_s_per_alloc / (run_s / batch). Kernel hop sums equal the reference's on every "
    "timed allocation, and the kernel's hop matrix equals the reference's (and sums to hop_sums') "
    "(checked)."
)


def _log(msg: str) -> None:
    print(f"[kernels] {msg}", file=sys.stderr, flush=True)


def _row(kernel: str, common: dict, compile_s: float, aot_s: float, run_s: float, batch: int,
         ref_s: float, ref_m: int, ref_passes: int) -> dict:
    """One table row: kernel timings beside the reference's, per allocation."""
    return {
        "kernel": kernel,
        **common,
        "compile_s": compile_s,
        "aot_compile_s": aot_s,
        "run_s": run_s,
        "allocs_per_s": batch / run_s,
        "ref_allocs": ref_m,
        "ref_passes": ref_passes,
        "ref_s_per_alloc": ref_s,
        "ratio": ref_s / (run_s / batch),
    }


def _time_jax(fn, lower, repeats: int) -> tuple[float, float, float, jax.Array]:
    """Time a jitted call ``fn()`` on a shape it has not seen.

    Returns ``(compile_s, aot_compile_s, run_s, result)``: ``compile_s`` is the first call
    minus the median run; ``aot_compile_s`` times ``lower().compile()`` alone after the caches
    are cleared (the first-call estimate is noisy when the run itself is long); ``run_s`` is
    the median of ``repeats`` calls after two warm-up calls.
    """
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    first = time.perf_counter() - t0
    for _ in range(2):
        jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    run_s = statistics.median(times)
    jax.clear_caches()
    t0 = time.perf_counter()
    lower().compile()
    aot = time.perf_counter() - t0
    return max(first - run_s, 0.0), aot, run_s, out


def _time_reference(one, rows: np.ndarray, target_s: float) -> tuple[float, int, int, list]:
    """Time ``one(row)`` over a subset of ``rows`` sized to take about ``target_s`` a pass.

    Returns ``(median seconds per allocation, allocations in the subset, passes, results of
    the subset's rows)``.
    """
    one(rows[0])  # warm-up
    t0 = time.perf_counter()
    one(rows[0])
    probe = max(time.perf_counter() - t0, 1e-7)
    m = int(min(len(rows), max(2, math.ceil(target_s / probe))))
    passes = max(1, math.ceil(target_s / (m * probe)))
    subset = rows[:m]
    results = [one(r) for r in subset]
    per_alloc = []
    for _ in range(REF_REPEATS):
        t0 = time.perf_counter()
        for _ in range(passes):
            for r in subset:
                one(r)
        per_alloc.append((time.perf_counter() - t0) / (m * passes))
    return statistics.median(per_alloc), m, passes, results


def reference_hop_sum(topo: Topology, row: np.ndarray) -> int:
    """``sum_{i != j} H`` of one padded allocation through its ``n x n`` NumPy hop matrix.

    ``topo.hops`` is plain integer arithmetic on its arguments, so on NumPy arrays it runs in
    NumPy (no JAX dispatch), which is the reference timed here.
    """
    a = row[row >= 0]
    return int(np.asarray(topo.hops(a[:, None], a[None, :])).sum())


def reference_hop_matrix_fattree(topo: Topology, nodes: np.ndarray) -> np.ndarray:
    """``(n, n)`` fat-tree hops from its ``(outer group, inner group, slot)`` coordinates
    broadcast: 4 between outer groups, 2 between inner groups of one outer group, 0 within an
    inner group (the routes' up-down lengths)."""
    outer, inner, _ = topo.coords(nodes)
    other_outer = outer[:, None] != outer[None, :]
    other_inner = inner[:, None] != inner[None, :]
    return np.where(other_outer, 4, np.where(other_inner, 2, 0))


def reference_hop_matrix_torus3d(topo: Topology, nodes: np.ndarray) -> np.ndarray:
    """``(n, n)`` 3D-torus hops from ``(x, y, z, slot)`` coordinates broadcast: per dimension
    the ring distance ``min(|dc|, extent - |dc|)``, summed."""
    x, y, z, _ = topo.coords(nodes)
    total = np.zeros((len(nodes), len(nodes)), np.int64)
    for c, extent in zip((x, y, z), topo.dims):
        d = np.abs(c[:, None] - c[None, :])
        total += np.minimum(d, extent - d)
    return total


#: ``kind`` -> a plain NumPy ``(topo, nodes) -> (n, n)`` hop matrix from the node coordinates,
#: written independently of the family's ``hops`` (a family without one gets no ``hop_matrix`` row).
HOP_MATRIX_REFERENCES = {
    "fattree": reference_hop_matrix_fattree,
    "torus3d": reference_hop_matrix_torus3d,
}


def _check_allocations(allocs: np.ndarray, n: int, free: np.ndarray, what: str) -> None:
    """Every row holds ``n`` distinct free node ids then -1 padding; raise otherwise."""
    head, tail = allocs[:, :n], allocs[:, n:]
    ok = (
        np.all(head >= 0)
        and np.all(tail == -1)
        and np.all(free[head])
        and np.all(np.diff(np.sort(head, axis=1), axis=1) > 0)
    )
    if not ok:
        raise AssertionError(f"{what}: rows are not {n} distinct free node ids padded with -1")


def bench_cell(topo: Topology, n: int, batch: int, repeats: int, ref_target_s: float, key: jax.Array) -> list[dict]:
    """The rows (``random_allocations``, ``hop_sums``, ``hop_matrix`` where the family has a
    reference) of one machine and size."""
    width = aph.bucket(n)
    free = jnp.ones(topo.n_nodes, bool)
    free_np = np.ones(topo.n_nodes, bool)
    keys = jax.random.split(key, batch)
    jax.block_until_ready(keys)
    common = {"machine": topo.name, "machine_nodes": topo.n_nodes, "n": n, "width": width, "batch": batch}

    # Random allocations: the kernel, then Generator.choice one allocation at a time.
    compile_s, aot_s, run_s, allocs = _time_jax(
        lambda: montecarlo.random_allocations(keys, free, n, width=width),
        lambda: montecarlo.random_allocations.lower(keys, free, n, width=width),
        repeats,
    )
    allocs_np = np.asarray(allocs)
    _check_allocations(allocs_np, n, free_np, f"random_allocations {topo.name} n={n}")
    rng = np.random.default_rng(0)
    free_ids = np.flatnonzero(free_np)
    ref_s, ref_m, ref_passes, drawn = _time_reference(
        lambda _row: rng.choice(free_ids, n, replace=False), allocs_np, ref_target_s
    )
    _check_allocations(aph.pad(drawn, width), n, free_np, f"reference draws {topo.name} n={n}")
    rand_row = _row("random_allocations", common, compile_s, aot_s, run_s, batch, ref_s, ref_m, ref_passes)
    _log(f"{topo.name} n={n}: random_allocations compile {rand_row['compile_s']:.3f} s (AOT {aot_s:.3f} s), run {run_s * 1e3:.2f} ms, "
         f"ratio {rand_row['ratio']:.1f}")

    # Closed-form hop sums, then the n x n NumPy hop matrix per allocation.
    compile_s, aot_s, run_s, sums = _time_jax(
        lambda: aph.hop_sums(topo, allocs), lambda: aph.hop_sums_kernel.lower(topo, allocs), repeats
    )
    sums_np = np.asarray(sums)
    ref_s, ref_m, ref_passes, ref_sums = _time_reference(lambda row: reference_hop_sum(topo, row), allocs_np, ref_target_s)
    if not np.array_equal(sums_np[:ref_m], np.asarray(ref_sums, dtype=np.int64)):
        bad = int(np.flatnonzero(sums_np[:ref_m] != np.asarray(ref_sums))[0])
        raise AssertionError(
            f"hop_sums {topo.name} n={n}: kernel {int(sums_np[bad])} != NumPy reference {ref_sums[bad]} "
            f"on allocation {bad}"
        )
    hop_row = _row("hop_sums", common, compile_s, aot_s, run_s, batch, ref_s, ref_m, ref_passes)
    _log(f"{topo.name} n={n}: hop_sums compile {hop_row['compile_s']:.3f} s (AOT {aot_s:.3f} s), run {run_s * 1e3:.2f} ms, "
         f"ratio {hop_row['ratio']:.1f} (sums agree on {ref_m} allocations)")
    rows = [rand_row, hop_row]

    # The n x n hop matrix of the batch's first allocation (unpadded), then NumPy's from coordinates.
    reference = HOP_MATRIX_REFERENCES.get(topo.kind)
    if reference is None:
        _log(f"{topo.name} n={n}: no hop_matrix row (no NumPy reference for kind {topo.kind!r})")
        return rows
    nodes_np = allocs_np[:1, :n]  # one allocation: the reference's rows
    nodes = jnp.asarray(nodes_np[0])
    jax.block_until_ready(nodes)
    compile_s, aot_s, run_s, matrix = _time_jax(
        lambda: aph.hop_matrix(topo, nodes), lambda: aph.hop_matrix.lower(topo, nodes), repeats
    )
    matrix_np = np.asarray(matrix)
    ref_s, ref_m, ref_passes, ref_matrices = _time_reference(lambda row: reference(topo, row), nodes_np, ref_target_s)
    if not np.array_equal(matrix_np, ref_matrices[0]):
        i, j = (int(v[0]) for v in np.nonzero(matrix_np != ref_matrices[0]))
        raise AssertionError(
            f"hop_matrix {topo.name} n={n}: kernel {int(matrix_np[i, j])} != NumPy reference "
            f"{int(ref_matrices[0][i, j])} at ({i}, {j}) (nodes {int(nodes_np[0, i])}, {int(nodes_np[0, j])})"
        )
    if int(matrix_np.sum(dtype=np.int64)) != int(sums_np[0]):
        raise AssertionError(
            f"hop_matrix {topo.name} n={n}: the matrix sums to {int(matrix_np.sum(dtype=np.int64))}, "
            f"hop_sums says {int(sums_np[0])}"
        )
    matrix_row = _row("hop_matrix", {**common, "width": n, "batch": 1}, compile_s, aot_s, run_s, 1, ref_s, ref_m,
                      ref_passes)
    _log(f"{topo.name} n={n}: hop_matrix compile {matrix_row['compile_s']:.3f} s (AOT {aot_s:.3f} s), "
         f"run {run_s * 1e3:.2f} ms, ratio {matrix_row['ratio']:.1f} (matrices agree, sum = hop_sums)")
    return rows + [matrix_row]


def run(quick: bool = False, seed: int = 0) -> list[dict]:
    """All cells; rows sorted by kernel, then machine and size (see the module docstring)."""
    sizes = QUICK_SIZES if quick else SIZES
    batch = QUICK_BATCH if quick else BATCH
    repeats = QUICK_REPEATS if quick else REPEATS
    target = QUICK_REF_TARGET_S if quick else REF_TARGET_S
    root = jax.random.PRNGKey(seed)
    rows = []
    for m, name in enumerate(MACHINES):
        topo = topology.load(name)
        for n in sizes:
            if n > topo.n_nodes:
                _log(f"{name}: skip n={n} (machine has {topo.n_nodes} nodes)")
                continue
            key = jax.random.fold_in(jax.random.fold_in(root, m), n)
            for row in bench_cell(topo, n, batch, repeats, target, key):
                rows.append({**row, "repeats": repeats})
    order = {"hop_sums": 0, "hop_matrix": 1, "random_allocations": 2}
    return sorted(rows, key=lambda r: order[r["kernel"]])
