"""Average pairwise hops (APH, Eq. 1 of the fat-tree paper) as JAX kernels.

``APH(J) = sum_{i != j in J} H_T(i, j) / (n (n - 1))`` over ordered pairs; ``APH = 0`` for
one-node jobs. Allocations come as a batch ``(B, n_max)`` of node ids padded with ``-1``.

Two kernels compute the same number:

* :func:`hop_sums_pairwise` builds the ``n_max x n_max`` hop matrix: the general reference,
  valid for any topology with a ``hops`` function.
* :func:`hop_sums` uses the fat-tree structure: with ``c_l`` nodes of the job on leaf ``l``
  and ``c_p`` on pod ``p``,
  ``sum_{i != j} H = 2 (sum_p c_p^2 - sum_l c_l^2) + 4 (n^2 - sum_p c_p^2)``,
  which needs only the per-leaf and per-pod counts: ``O(n + leaves)`` per job, no matrix.

Both return the integer numerator so that tests can compare them exactly; :func:`aph`
divides. The sums are int32: exact for any job of up to 23,170 nodes (``4 n^2 < 2^31``).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from fattorus.topology import fattree
from fattorus.topology.fattree import FatTree

# Allocation widths are padded to these buckets so a sweep compiles each kernel a few times,
# not once per job size.
BUCKETS = (16, 64, 256, 1024, 4096, 16384)


def bucket(n: int) -> int:
    """Smallest padding width in :data:`BUCKETS` that holds ``n`` nodes."""
    for b in BUCKETS:
        if n <= b:
            return b
    raise ValueError(f"allocation of {n} nodes exceeds the largest bucket {BUCKETS[-1]}")


def pad(allocs: list[np.ndarray] | np.ndarray, width: int | None = None) -> np.ndarray:
    """Stack variable-length node-id arrays into a ``(B, width)`` int32 array padded with -1."""
    rows = [np.asarray(a, dtype=np.int32).ravel() for a in allocs]
    longest = max((len(r) for r in rows), default=1)
    width = bucket(longest) if width is None else width
    out = np.full((len(rows), width), -1, dtype=np.int32)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _sizes(allocs: jax.Array) -> jax.Array:
    return jnp.sum(allocs >= 0, axis=-1).astype(jnp.int32)


@partial(jax.jit, static_argnums=0)
def hop_sums(ft: FatTree, allocs: jax.Array) -> jax.Array:
    """Closed-form ``sum_{i != j} H_T(i, j)`` for each padded allocation ``(B, n_max)`` -> ``(B,)`` int32."""
    valid = allocs >= 0
    safe = jnp.where(valid, allocs, 0)
    w = valid.astype(jnp.int32)

    def one(nodes, weight):
        leaf_counts = jnp.zeros(ft.n_leaves, jnp.int32).at[fattree.leaf_of(ft, nodes)].add(weight)
        pod_counts = jnp.zeros(ft.pods, jnp.int32).at[fattree.pod_of(ft, nodes)].add(weight)
        n = jnp.sum(weight)
        s_leaf = jnp.sum(leaf_counts * leaf_counts)
        s_pod = jnp.sum(pod_counts * pod_counts)
        return 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)

    return jax.vmap(one)(safe, w)


def _pairwise_one(ft: FatTree, nodes: jax.Array) -> jax.Array:
    valid = nodes >= 0
    h = fattree.hops(ft, nodes[:, None], nodes[None, :]).astype(jnp.int32)
    mask = valid[:, None] & valid[None, :]
    return jnp.sum(jnp.where(mask, h, 0))


@partial(jax.jit, static_argnums=0)
def hop_matrix(ft: FatTree, nodes: jax.Array) -> jax.Array:
    """``(n, n)`` inter-switch hop counts between the given node ids (general pairwise path)."""
    return fattree.hops(ft, nodes[:, None], nodes[None, :]).astype(jnp.int32)


@partial(jax.jit, static_argnums=0)
def hop_sums_pairwise(ft: FatTree, allocs: jax.Array) -> jax.Array:
    """Reference ``sum_{i != j} H_T(i, j)`` through the full hop matrix, ``(B, n_max)`` -> ``(B,)``.

    Memory is ``B * n_max^2``; it is the reference, not the fast path. ``lax.map`` keeps only
    one matrix alive at a time.
    """
    return jax.lax.map(lambda a: _pairwise_one(ft, a), allocs)


def aph_from_sums(sums, sizes):
    """APH from hop sums and job sizes (0 for jobs of fewer than two nodes)."""
    xp = jnp if isinstance(sums, jax.Array) else np
    sizes = xp.asarray(sizes)
    denom = sizes * (sizes - 1)
    return xp.where(denom > 0, sums / xp.maximum(denom, 1), 0.0)


@partial(jax.jit, static_argnums=0)
def aph(ft: FatTree, allocs: jax.Array) -> jax.Array:
    """APH of each padded allocation ``(B, n_max)`` -> ``(B,)`` float (hops per ordered pair)."""
    return aph_from_sums(hop_sums(ft, allocs), _sizes(allocs))


def ideal_hop_sums(ft: FatTree, n):
    """``sum_{i != j} H`` of the most compact ``n``-node placement on an empty machine.

    Fill one leaf, then the leaves of one pod, then further pods: ``n // k`` full leaves and
    a remainder, ``n // p`` full pods and a remainder.
    """
    xp = jnp if isinstance(n, jax.Array) else np
    n = xp.asarray(n, dtype=xp.int64 if xp is np else jnp.int32)
    k, p = ft.nodes_per_leaf, ft.nodes_per_pod
    s_leaf = (n // k) * k * k + (n % k) ** 2
    s_pod = (n // p) * p * p + (n % p) ** 2
    return 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)


def ideal_aph(ft: FatTree, n):
    """Ideal APH of an ``n``-node job (spec `metrics-and-outputs.md`); vectorised over ``n``."""
    return aph_from_sums(ideal_hop_sums(ft, n), n)


def aph_of(ft: FatTree, allocs: list[np.ndarray]) -> np.ndarray:
    """APH (float64) of many variable-size allocations with the closed-form kernel.

    Allocations are grouped by padding bucket and each group's batch is padded to a power of
    two, so a replay of any workload compiles the kernel only a handful of times.
    """
    sizes = np.array([len(a) for a in allocs], dtype=np.int64)
    sums = np.zeros(len(allocs), dtype=np.int64)
    widths = np.array([bucket(max(int(s), 1)) for s in sizes], dtype=np.int64)
    for width in np.unique(widths):
        idx = np.flatnonzero(widths == width)
        rows = 1 << max(int(len(idx) - 1).bit_length(), 4)
        batch = np.full((rows, int(width)), -1, dtype=np.int32)
        for r, i in enumerate(idx):
            batch[r, : sizes[i]] = allocs[i]
        sums[idx] = np.asarray(hop_sums(ft, jnp.asarray(batch)))[: len(idx)]
    return aph_from_sums(sums.astype(np.float64), sizes).astype(np.float64)
