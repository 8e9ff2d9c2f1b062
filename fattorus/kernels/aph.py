"""Average pairwise hops (APH, Eq. 1 of the fat-tree paper) as JAX kernels.

``APH(J) = sum_{i != j in J} H_T(i, j) / (n (n - 1))`` over ordered pairs; ``APH = 0`` for
one-node jobs. Allocations come as a batch ``(B, n_max)`` of node ids padded with ``-1``.

Two kernels compute the same number:

* :func:`hop_sums_pairwise` builds the ``n_max x n_max`` hop matrix: the general reference,
  valid for any topology with a ``hops`` function.
* :func:`hop_sums` uses the topology's own ``hop_sum`` kernel: a closed form from per-group
  counts where the family has one (e.g. the fat-tree's, from its per-switch-group counts,
  ``O(n + groups)`` per job, no matrix), the pairwise sum otherwise.

Both return the integer numerator so that tests can compare them exactly; :func:`aph`
divides. The sums are in JAX's default integer: int32, exact while ``max_hops · n (n − 1) <
2^31`` (any job of up to 23,170 nodes on a fat-tree, whose routes are at most 4 hops, but
only up to 7,723 nodes on Blue Waters, 36 hops across); :func:`hop_sums`, :func:`aph` and
:func:`aph_of` run wider padded widths under ``jax.enable_x64``, where the same kernels sum in
int64 (:func:`hop_sums_kernel` is the bare jitted kernel, for ahead-of-time lowering).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from fattorus import devices
from fattorus.lazyjit import lazy_jit
from fattorus.topology.base import Topology

if TYPE_CHECKING:
    import jax

# JAX is imported where a kernel runs, not here: the replay imports this module, and a command
# that stops at a configuration error before replaying then never loads JAX (~0.6 s).

# Allocation widths are padded to these buckets so a sweep compiles each kernel a few times,
# not once per job size.
BUCKETS = (16, 64, 256, 1024, 4096, 16384, 32768)  # 32768: Blue Waters-sized jobs


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
    import jax.numpy as jnp

    return jnp.sum(allocs >= 0, axis=-1).astype(jnp.int32)


@lazy_jit(static_argnums=0)
def hop_sums_kernel(topo: Topology, allocs: jax.Array) -> jax.Array:
    """:func:`hop_sums` as one jitted kernel in JAX's default integer: int32, which can wrap
    past :func:`int32_exact`'s bound, or int64 when traced under ``jax.enable_x64``. For
    ahead-of-time lowering (``hop_sums_kernel.lower``); call :func:`hop_sums` otherwise."""
    import jax
    import jax.numpy as jnp

    valid = allocs >= 0
    safe = jnp.where(valid, allocs, 0)
    return jax.vmap(topo.hop_sum)(safe, valid).astype(int)


def check_nodes(topo: Topology, allocs: jax.Array | np.ndarray, padded: bool = True) -> None:
    """One-line ``ValueError`` unless every entry of ``allocs`` is a node id of ``topo`` (or
    ``-1``, padding, when ``padded``). Why: JAX drops out-of-range writes and clamps gathers,
    so a node id past the machine gave a wrong APH without a word (on ft6, ``[0, 18]`` read 6
    hops, and the two hop-sum kernels disagreed). Traced arrays are the caller's to check."""
    jax = sys.modules.get("jax")  # not loaded: ``allocs`` cannot be traced (no import for NumPy input)
    if jax is not None and isinstance(allocs, jax.core.Tracer):
        return
    a = np.asarray(allocs)
    if a.size == 0:
        return
    if not np.issubdtype(a.dtype, np.integer) and not np.array_equal(a, np.round(a)):
        raise ValueError("allocations: node ids must be whole numbers")
    lo, hi, n = int(a.min()), int(a.max()), int(topo.n_nodes)
    if lo < (-1 if padded else 0) or hi >= n:
        bad = hi if hi >= n else lo
        raise ValueError(f"allocations: node id {bad} is not one of the machine's {n} nodes (0..{n - 1}"
                         f"{'; -1 pads' if padded else ''})")


def _exact(kernel, topo: Topology, allocs: jax.Array) -> jax.Array:
    """``kernel(topo, allocs)``, under ``jax.enable_x64`` when the padded width could take a
    hop sum past int32 (the width is static: a check on the shape, not on the data); node
    ids checked first (:func:`check_nodes`); nested lists are taken as arrays."""
    import jax

    if not isinstance(allocs, (jax.Array, np.ndarray)):
        allocs = np.asarray(allocs, np.int32)  # [[0, 17]]: the jitted kernels want an array
    if np.ndim(allocs) != 2:  # one allocation [0, 4, 40] read as three one-node ones: APH 0 each
        raise ValueError(f"allocations: give a (B, n_max) array of padded allocations, got shape {np.shape(allocs)} "
                         "(one allocation: [nodes])")
    check_nodes(topo, allocs)
    if int32_exact(topo, int(np.shape(allocs)[-1])):
        return kernel(topo, allocs)
    with jax.enable_x64(True):
        return kernel(topo, allocs)


def hop_sums(topo: Topology, allocs: jax.Array) -> jax.Array:
    """``sum_{i != j} H(i, j)`` for each padded allocation ``(B, n_max)`` -> ``(B,)`` integers,
    exact for every width (int32, or int64 past :func:`int32_exact`'s bound), by the
    topology's own hop-sum kernel (a closed form from per-group counts where the family has
    one; the pairwise sum otherwise)."""
    return _exact(hop_sums_kernel, topo, allocs)


def _pairwise_one(ft: Topology, nodes: jax.Array) -> jax.Array:
    import jax.numpy as jnp

    valid = nodes >= 0
    h = ft.hops(nodes[:, None], nodes[None, :]).astype(int)
    mask = valid[:, None] & valid[None, :]
    return jnp.sum(jnp.where(mask, h, 0))


@lazy_jit(static_argnums=0)
def hop_matrix(ft: Topology, nodes: jax.Array) -> jax.Array:
    """``(n, n)`` inter-switch hop counts between the given node ids (general pairwise path)."""
    import jax.numpy as jnp

    return ft.hops(nodes[:, None], nodes[None, :]).astype(jnp.int32)


@lazy_jit(static_argnums=0)
def hop_sums_pairwise(ft: Topology, allocs: jax.Array) -> jax.Array:
    """Reference ``sum_{i != j} H_T(i, j)`` through the full hop matrix, ``(B, n_max)`` -> ``(B,)``.

    Memory is ``B * n_max^2``; it is the reference, not the fast path. ``lax.map`` keeps only
    one matrix alive at a time.
    """
    import jax

    return jax.lax.map(lambda a: _pairwise_one(ft, a), allocs)


def aph_from_sums(sums, sizes):
    """APH from hop sums and job sizes (0 for jobs of fewer than two nodes)."""
    jax = sys.modules.get("jax")  # not loaded: ``sums`` cannot be a JAX array (no import for NumPy input)
    xp = jax.numpy if jax is not None and isinstance(sums, jax.Array) else np
    sizes = xp.asarray(sizes)
    denom = sizes * (sizes - 1)
    return xp.where(denom > 0, sums / xp.maximum(denom, 1), 0.0)


@lazy_jit(static_argnums=0)
def _aph_kernel(ft: Topology, allocs: jax.Array) -> jax.Array:
    return aph_from_sums(hop_sums_kernel(ft, allocs), _sizes(allocs))


def aph(ft: Topology, allocs: jax.Array) -> jax.Array:
    """APH of each padded allocation ``(B, n_max)`` -> ``(B,)`` float (hops per ordered pair);
    exact sums at every width (:func:`hop_sums`)."""
    return _exact(_aph_kernel, ft, allocs)


def ideal_aph(topo: Topology, n):
    """Ideal APH of an ``n``-node job on ``topo`` (spec `metrics-and-outputs.md`): the APH of the
    topology's most compact allocation; vectorised over an array of sizes."""
    if np.ndim(n) == 0:
        return topo.ideal_aph(int(n))
    sizes = np.asarray(n)
    values = {int(v): topo.ideal_aph(int(v)) for v in np.unique(sizes)}
    return np.vectorize(lambda v: values[int(v)], otypes=[np.float64])(sizes)


def int32_exact(topo: Topology, width: int) -> bool:
    """Whether every hop sum of an allocation of up to ``width`` nodes fits int32: ``max_hops ·
    width (width − 1) < 2^31`` (the sum of ``n (n − 1)`` ordered pairs of at most ``max_hops``
    hops each)."""
    return int(topo.max_hops) * int(width) * (int(width) - 1) < 2**31


def aph_of(ft: Topology, allocs: list[np.ndarray], host: bool = True) -> np.ndarray:
    """APH (float64) of many variable-size allocations with the closed-form kernel, or the
    family's host rule where it has one and JAX computes on the CPU
    (:meth:`~fattorus.topology.base.Topology.host_hop_sums`; ``host=False``: always the
    kernel, as the benchmark compares them).

    Allocations are grouped by padding bucket and each group's batch is padded to a power of
    two, so a replay of any workload compiles the kernel only a handful of times. A bucket
    whose hop sums could pass int32 (:func:`int32_exact`; e.g. Blue Waters jobs of more than
    7,723 nodes) runs under ``jax.enable_x64``, where the kernels sum in int64: exact, one
    more compilation for that bucket.
    """
    sizes = np.array([len(a) for a in allocs], dtype=np.int64)
    if len(allocs):  # before they become padded rows, where a -1 would read as padding
        check_nodes(ft, np.concatenate([np.asarray(a).ravel() for a in allocs]), padded=False)
    # The host rule where JAX computes on the CPU: on an accelerator the padded kernel is the
    # faster one (an H200: 0.010 s against 0.020 s for three days of Edison) once JAX is
    # loaded; a run that has not loaded JAX (a plain replay) takes the host rule, which costs
    # less than loading JAX (~1 s) and compiling the kernel.
    on_host = (ft.host_hop_sums(allocs) if host and len(allocs) and ("jax" not in sys.modules or devices.jax_on_cpu())
               else None)
    if on_host is not None:  # the family's host rule, cheaper than padded batches (same sums)
        return aph_from_sums(np.asarray(on_host, np.int64).astype(np.float64), sizes).astype(np.float64)
    import jax.numpy as jnp

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
