"""Communication patterns: traffic over a job's ranks (spec `kernels.md`; fat-tree paper V-B).

A pattern turns a job size ``n`` (ranks ``0..n-1``) into flows ``(src_rank, dst_rank, nbytes)``
(:class:`Traffic`, NumPy arrays of equal length ``F``). Every generator has the same
signature ``fn(key, n, **params)`` -- deterministic patterns ignore the key -- so
:data:`PATTERNS` maps a configuration name to a generator and :func:`make` calls it.
Flows from a rank to itself are never produced (they do not touch the network).

Sizes are bytes per message (KiB = 1024 bytes); defaults follow the seeds where they give
one (``stencil2d`` 64 KiB, ``stencil4d`` 4 MiB MILC-like, ``unstructured_mesh`` and
``spread`` 512 KiB) and are otherwise choices documented on each generator.

Ranks map to a job's nodes in allocation order (:func:`to_nodes`): rank ``i`` runs on
``alloc[i]``, one rank per node unless ``ranks_per_node`` says otherwise.

Random draws take a threefry key (a raw ``jax.random.PRNGKey``, a typed threefry key or
its ``(2,)`` uint32 words) and are made on the host by :mod:`fattorus.kernels.threefry`:
the bits ``jax.random`` draws with the same key, without a JAX dispatch per call (a replay
draws a keyed pattern at every job start). Draws are vectorised over ranks; the
variable-length output is assembled with NumPy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

#: A threefry key: ``jax.random.PRNGKey(seed)``, ``jax.random.key(seed)`` or its ``(2,)``
#: uint32 words (:func:`fattorus.kernels.threefry.key_data`).
Key = Any

KiB = 1024
MiB = 1024 * KiB


class Traffic(NamedTuple):
    """Flows of one job: ``src`` and ``dst`` int32 ranks, ``nbytes`` float64 bytes, all ``(F,)``."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray

    @property
    def n_flows(self) -> int:
        """Number of flows ``F``."""
        return int(self.src.shape[0])

    @property
    def total_bytes(self) -> float:
        """Sum of all flows' bytes."""
        return float(self.nbytes.sum())


def _traffic(src, dst, nbytes: float) -> Traffic:
    src = np.asarray(src, np.int64).ravel()
    dst = np.asarray(dst, np.int64).ravel()
    keep = src != dst
    src, dst = src[keep].astype(np.int32), dst[keep].astype(np.int32)
    return Traffic(src, dst, np.full(src.shape, float(nbytes)))


def _empty() -> Traffic:
    z = np.zeros(0, np.int32)
    return Traffic(z, z.copy(), np.zeros(0))


def _check_n(n: int) -> int:
    if int(n) != n or n < 0:
        raise ValueError(f"job size must be a non-negative integer, got {n!r}")
    return int(n)


def _check_nbytes(nbytes: float) -> float:
    """``nbytes`` as a float, refused in one line unless a positive finite number: 0 or less
    gave flows that take no time (or a negative time), NaN a NaN step time, downstream."""
    try:
        value = float(nbytes)
    except (TypeError, ValueError):
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"nbytes must be a positive finite number of bytes, got {nbytes!r}")
    return value


# Process grids ------------------------------------------------------------------------------
def _prime_factors(n: int) -> list[int]:
    out, f = [], 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    if n > 1:
        out.append(n)
    return out


@lru_cache(maxsize=4096)  # a pure function of two ints; every job's pattern check asks for it
def grid_dims(n: int, ndim: int) -> tuple[int, ...]:
    """Near-cubic factorisation of ``n`` ranks into ``ndim`` extents (as ``MPI_Dims_create``).

    Prime factors, largest first, go to the currently smallest extent; the result is sorted
    in decreasing order and its product is exactly ``n`` (a prime ``n`` gives ``(n, 1, ...)``).
    """
    n = _check_n(n)
    if ndim < 1:
        raise ValueError(f"ndim must be >= 1, got {ndim}")
    dims = [1] * ndim
    for f in sorted(_prime_factors(max(n, 1)), reverse=True):
        dims[int(np.argmin(dims))] *= f
    return tuple(sorted(dims, reverse=True))


def _neighbour_ranks(dims: tuple[int, ...], offsets: np.ndarray) -> np.ndarray:
    """``(n, m)`` rank of ``rank + offset`` on the periodic grid ``dims`` (row-major ranks;
    :func:`fattorus.kernels.grid.neighbour_ranks`, one compiled loop)."""
    from fattorus.kernels import grid  # numba loads with the first pattern, not with this module

    return grid.neighbour_ranks(dims, offsets)


# Structured stencils ------------------------------------------------------------------------
def stencil(key: Key | None, n: int, ndim: int = 2, nbytes: float = 64 * KiB) -> Traffic:
    """Periodic nearest-neighbour halo exchange on a near-cubic ``ndim``-D process grid.

    Each rank sends ``nbytes`` to its ``2 * ndim`` face neighbours (``+-1`` along each axis,
    wrapping round). Along an extent of 2 both messages go to the same rank (two faces);
    along an extent of 1 they would go to the rank itself and are dropped. The pattern is
    symmetric: ``i`` sends to ``j`` as often as ``j`` sends to ``i``.
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if n < 2:
        return _empty()
    dims = grid_dims(n, ndim)
    eye = np.eye(ndim, dtype=np.int64)
    offsets = np.concatenate([eye, -eye])  # (2 ndim, ndim)
    dst = _neighbour_ranks(dims, offsets)
    src = np.broadcast_to(np.arange(n)[:, None], dst.shape)
    return _traffic(src, dst, nbytes)


def stencil2d(key: Key | None, n: int, nbytes: float = 64 * KiB) -> Traffic:
    """2D 5-point stencil: 4 neighbours, 64 KiB per message by default."""
    return stencil(key, n, 2, nbytes)


def stencil3d(key: Key | None, n: int, nbytes: float = 256 * KiB) -> Traffic:
    """3D 7-point stencil: 6 neighbours, 256 KiB per message by default (a choice)."""
    return stencil(key, n, 3, nbytes)


def stencil4d(key: Key | None, n: int, nbytes: float = 4 * MiB) -> Traffic:
    """4D stencil (MILC-like, the paper's "Stencil"): 8 neighbours, 4 MiB per message."""
    return stencil(key, n, 4, nbytes)


# Random neighbourhoods ----------------------------------------------------------------------
def _first_unique(cand: np.ndarray, self_rank: np.ndarray) -> np.ndarray:
    """Mask of entries of each row of ``cand`` that are not ``self_rank`` nor an earlier repeat
    (:func:`fattorus.kernels.grid.first_unique`, one compiled loop)."""
    from fattorus.kernels import grid

    return grid.first_unique(cand, self_rank)


def _uniform(key: Key, rows: int, cols: int | None = None) -> np.ndarray:
    """Uniform ``[0, 1)`` float64 draws of shape ``(rows,)`` or ``(rows, cols)``: the float32
    ``jax.random.uniform(key, (rows * cols,))`` draws, reshaped (a draw depends on its
    index alone, so they are also the first draws of any longer flat shape).
    """
    from fattorus.kernels import threefry  # numba loads with the first draw, not with this module

    size = rows * (1 if cols is None else cols)
    return threefry.uniform(key, size).astype(np.float64).reshape((rows,) if cols is None else (rows, cols))


def _split(key: Key) -> tuple[np.ndarray, np.ndarray]:
    """``jax.random.split(key)``: two new keys."""
    from fattorus.kernels import threefry

    k = threefry.split(key, 2)
    return k[0], k[1]


def _randint(key: Key, lo: int, hi: int, rows: int, cols: int | None = None) -> np.ndarray:
    """Uniform integers in ``[lo, hi]`` (inclusive)."""
    return np.minimum(lo + np.floor(_uniform(key, rows, cols) * (hi - lo + 1)), hi).astype(np.int64)


def _counts(key: Key, n: int, lo: int, hi: int) -> np.ndarray:
    if not 1 <= lo <= hi:
        raise ValueError(f"neighbour counts need 1 <= min <= max, got {lo}, {hi}")
    return _randint(key, lo, hi, n)


def _take_first(cand: np.ndarray, valid: np.ndarray, counts: np.ndarray, nbytes: float) -> Traffic:
    """Flows from each row's rank to its first ``counts[row]`` valid candidates (in order)."""
    rank_in_row = np.cumsum(valid, axis=1)
    keep = valid & (rank_in_row <= counts[:, None])
    src = np.broadcast_to(np.arange(cand.shape[0])[:, None], cand.shape)
    return _traffic(src[keep], cand[keep], nbytes)


@lru_cache(maxsize=32)
def _mesh_candidates(n: int, radius: int, locality: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The key-free part of :func:`unstructured_mesh` on ``n`` ranks, computed once per size
    (a replay draws a mesh per job): candidate ranks ``(n, m)`` of the box offsets, nearest
    first; which of them are usable (not the rank itself nor a repeat); and each offset's
    log-weight ``-locality/2 · log |o|²`` ``(1, m)``. Read-only: shared by every call."""
    dims = grid_dims(n, 3)
    r = np.arange(-radius, radius + 1)
    offsets = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    dist2 = (offsets**2).sum(axis=1)
    offsets, dist2 = offsets[dist2 > 0], dist2[dist2 > 0]
    order = np.argsort(dist2, kind="stable")  # nearest first: duplicates keep the nearest
    offsets, dist2 = offsets[order], dist2[order]
    cand = _neighbour_ranks(dims, offsets).astype(np.int32)  # (n, m); int32 halves what the cache holds
    valid = _first_unique(cand, np.arange(n))
    prior = (-0.5 * locality * np.log(dist2))[None, :]
    for a in (cand, valid, prior):
        a.flags.writeable = False
    return cand, valid, prior


def unstructured_mesh(
    key: Key,
    n: int,
    nbytes: float = 512 * KiB,
    min_neighbours: int = 6,
    max_neighbours: int = 27,
    radius: int = 2,
    locality: float = 4.0,
) -> Traffic:
    """Unstructured near-neighbour exchange on a near-cubic periodic 3D process grid.

    Each rank draws a neighbour count uniformly in ``[min_neighbours, max_neighbours]`` and
    picks that many distinct ranks, without replacement, among the offsets of the
    ``(2 radius + 1)^3`` box around it, favouring near ones: offset ``o`` has weight
    ``|o|^-locality`` (Gumbel top-k sampling; with the defaults about 80% of the weight is on
    the 26 offsets of the ``3^3`` box). Counts are capped by the distinct ranks available
    on small grids. Each rank sends ``nbytes`` to each of its neighbours (directed: ``j``
    being ``i``'s neighbour does not make ``i`` one of ``j``'s). ``radius`` must be at least 1
    (a box of radius 0 holds no neighbour) and ``nbytes`` positive: one-line ``ValueError``.
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if not (isinstance(radius, (int, np.integer)) and not isinstance(radius, bool) and radius >= 1):
        raise ValueError(f"radius must be an integer >= 1, got {radius!r}")  # 0: an empty box, no flows at all
    radius = int(radius)
    if n < 2:
        return _empty()
    k_count, k_pick = _split(key)
    counts = _counts(k_count, n, min_neighbours, max_neighbours)
    cand, valid, prior = _mesh_candidates(n, radius, float(locality))
    from fattorus.kernels import select, threefry  # numba loads with the first draw, not with this module

    # Each rank's `count` best scores prior + Gumbel noise -log(-log u) (NumPy's float64 logs,
    # the same floats as ever), ties by column (the prefix of a stable sort); unusable
    # candidates never taken. The noise is computed only where a candidate can be picked.
    u = threefry.uniform(k_pick, cand.size).reshape(cand.shape)  # _uniform's draws, before float64
    rows, cols = select.gumbel_top_k(u, prior, valid, counts)
    return _traffic(rows, cand[rows, cols], nbytes)


def spread(
    key: Key,
    n: int,
    nbytes: float = 512 * KiB,
    min_neighbours: int = 6,
    max_neighbours: int = 27,
) -> Traffic:
    """Background noise: each rank sends ``nbytes`` to 6--27 uniformly random other ranks.

    The count is uniform in ``[min_neighbours, max_neighbours]``. On jobs of at most
    ``2 max_neighbours + 1`` ranks the neighbours are drawn without replacement from all
    other ranks; on larger jobs ``2 max_neighbours`` partners are drawn with replacement and
    the first distinct ones kept (so a count can, rarely, fall short of its draw).
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if n < 2:
        return _empty()
    k_count, k_pick = _split(key)
    counts = _counts(k_count, n, min_neighbours, max_neighbours)
    m = 2 * max_neighbours
    ranks = np.arange(n)
    if n - 1 <= m:
        offsets = np.arange(1, n)
        keys = _uniform(k_pick, n, n - 1)
        offsets = offsets[np.argsort(keys, axis=1)]
    else:
        offsets = _randint(k_pick, 1, n - 1, n, m)
    cand = (ranks[:, None] + offsets) % n
    valid = _first_unique(cand, ranks)
    return _take_first(cand, valid, counts, nbytes)


def random_pairs(key: Key, n: int, nbytes: float = 1 * MiB) -> Traffic:
    """Random pairs ("Pairs"): a random perfect matching of the ranks; partners exchange.

    Each matched rank sends ``nbytes`` (1 MiB by default, a choice) to its partner, so the
    pattern is symmetric; with an odd ``n`` one random rank is left idle.
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if n < 2:
        return _empty()
    perm = np.argsort(_uniform(key, n), kind="stable")[: n - n % 2].reshape(-1, 2)
    src = np.concatenate([perm[:, 0], perm[:, 1]])
    dst = np.concatenate([perm[:, 1], perm[:, 0]])
    return _traffic(src, dst, nbytes)


# All-to-all ---------------------------------------------------------------------------------
def all_to_all(key: Key | None, n: int, nbytes: float = 64 * KiB) -> Traffic:
    """Every rank sends ``nbytes`` (64 KiB by default, a choice) to every other rank."""
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    src, dst = np.divmod(np.arange(n * n), n)
    return _traffic(src, dst, nbytes)


def subcomm_a2a(
    key: Key | None,
    n: int,
    group: int = 16,
    nbytes: float = 64 * KiB,
    strided: bool = False,
) -> Traffic:
    """All-to-all within sub-communicators of ``group`` ranks ("Sub-a2a"; 16/32/64 typical).

    Ranks form a process grid of ``ceil(n / group)`` rows of ``group`` ranks (row-major). With
    ``strided=False`` a sub-communicator is a row (ranks ``g*group .. g*group+group-1``, the
    last one possibly shorter); with ``strided=True`` it is a column (ranks congruent modulo
    ``ceil(n / group)``), i.e. all-to-all along the other grid dimension. Each rank sends
    ``nbytes`` (64 KiB by default, a choice) to every other member.
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if group < 1:
        raise ValueError(f"group must be >= 1, got {group}")
    if strided:
        comm = np.arange(n) % -(-n // group)
    else:
        comm = np.arange(n) // group
    # Sort ranks by communicator; flows within each communicator as a dense block.
    order = np.argsort(comm, kind="stable")
    sizes = np.bincount(comm)
    width = int(sizes.max(initial=0))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot = np.arange(width)
    block = starts[:, None] + slot[None, :]  # (n_comm, width) positions in `order`
    present = slot[None, :] < sizes[:, None]
    members = np.where(present, order[np.minimum(block, n - 1)], -1)  # (n_comm, width)
    src = np.broadcast_to(members[:, :, None], (len(sizes), width, width))
    dst = np.broadcast_to(members[:, None, :], (len(sizes), width, width))
    ok = (src >= 0) & (dst >= 0)
    return _traffic(src[ok], dst[ok], nbytes)


def grid_a2a(key: Key | None, n: int, ndim: int = 3, along: int = 2, nbytes: float = 64 * KiB) -> Traffic:
    """All-to-all along ``along`` dimensions of a near-cubic ``ndim``-D process grid (the fat-tree
    paper's Sub-a2a: "sub-communicator based all-to-all communication on a 3D process grid",
    "with all-to-all performed along two dimensions"; on Cab "along all dimensions").

    The grid is :func:`grid_dims` ``(n, ndim)`` with ranks row-major; for each of the first
    ``along`` dimensions (the slowest-varying: their sub-communicators hold ranks far apart, as a
    parallel FFT's transposes do), every rank sends ``nbytes`` (64 KiB by default, a choice) to
    every other rank of its line along that dimension (all coordinates but that one equal).
    Two ranks share at most one such line, so no pair is sent twice.
    """
    n = _check_n(n)
    nbytes = _check_nbytes(nbytes)
    if not 1 <= along <= ndim:
        raise ValueError(f"along must be in 1..{ndim}, got {along}")
    dims = grid_dims(n, ndim)
    coords = np.stack(np.unravel_index(np.arange(n), dims), axis=-1)  # (n, ndim)
    src, dst = [], []
    for d in range(along):
        # Every other position k on rank r's line along d: coordinate d replaced by k.
        others = np.arange(dims[d])
        moved = np.repeat(coords[:, None, :], dims[d], axis=1)  # (n, dims[d], ndim)
        moved[:, :, d] = others[None, :]
        peer = np.ravel_multi_index(tuple(np.moveaxis(moved, -1, 0)), dims)  # (n, dims[d])
        keep = others[None, :] != coords[:, d:d + 1]
        src.append(np.broadcast_to(np.arange(n)[:, None], peer.shape)[keep])
        dst.append(peer[keep])
    return _traffic(np.concatenate(src), np.concatenate(dst), nbytes)


# Registry -----------------------------------------------------------------------------------
PatternFn = Callable[..., Traffic]

PATTERNS: dict[str, PatternFn] = {
    "stencil2d": stencil2d,
    "stencil3d": stencil3d,
    "stencil4d": stencil4d,
    "unstructured_mesh": unstructured_mesh,
    "random_pairs": random_pairs,
    "subcomm_a2a": subcomm_a2a,
    "grid_a2a": grid_a2a,
    "all_to_all": all_to_all,
    "spread": spread,
}
#: Patterns whose traffic does not depend on the random key (a function of ``n`` alone).
KEYLESS = frozenset({"stencil2d", "stencil3d", "stencil4d", "subcomm_a2a", "grid_a2a", "all_to_all"})


#: Flows (and entries of a pattern's per-rank arrays) one job's traffic may have: 2^24, an
#: all-to-all of 4,096 ranks. A flow costs ~100-200 bytes on its way through routes, link
#: loads and the max-min solve, so this keeps a job's traffic to a few GB; past it a run ended
#: in a traceback from the memory allocator (a 21,276-node all-to-all on Blue Waters asked
#: for 92 GB; session 44's exploratory run). :func:`make` refuses more in one line.
MAX_FLOWS = 1 << 24


@lru_cache(maxsize=None)
def _defaults(name: str) -> dict[str, Any]:
    """Pattern ``name``'s keyword defaults (read once: :func:`make` checks every call)."""
    import inspect

    return {k: v.default for k, v in inspect.signature(PATTERNS[name]).parameters.items()
            if v.default is not inspect.Parameter.empty}


def flow_bound(name: str, n: int, **params: Any) -> int:
    """An upper bound on the flows pattern ``name`` makes over ``n`` ranks with ``params`` (its
    defaults otherwise), without making them."""
    p = {**_defaults(name), **params}
    n = int(n)
    if name.startswith("stencil"):
        return n * 2 * int(p.get("ndim", int(name[len("stencil"):-1])))
    if name == "unstructured_mesh":  # a candidate per offset of the box around each rank
        return n * max((2 * int(p["radius"]) + 1) ** 3, int(p["max_neighbours"]))
    if name == "spread":
        return n * min(2 * int(p["max_neighbours"]), max(n - 1, 0))
    if name == "random_pairs":
        return n
    if name == "subcomm_a2a":  # a (communicators, width, width) block of pairs
        comms = -(-n // max(int(p["group"]), 1)) if n else 0
        width = -(-n // comms) if comms and p.get("strided") else min(max(int(p["group"]), 1), n)
        return comms * width * width
    if name == "grid_a2a":
        along = min(max(int(p["along"]), 1), int(p["ndim"]))
        return n * sum(grid_dims(n, int(p["ndim"]))[:along]) if n else 0
    return n * n  # all_to_all, and any pattern without a rule of its own


def array_bound(name: str, n: int, **params: Any) -> int:
    """An upper bound on the entries of the largest array pattern ``name`` builds over ``n``
    ranks on the way to its flows: :func:`flow_bound`, except ``grid_a2a``'s ``(n, extent,
    ndim)`` coordinates, ``ndim`` times its flows along one dimension."""
    if name != "grid_a2a":
        return flow_bound(name, n, **params)
    p = {**_defaults(name), **params}
    ndim, n = int(p["ndim"]), int(n)
    along = min(max(int(p["along"]), 1), ndim)
    return n * ndim * max(grid_dims(n, ndim)[:along]) if n else 0


#: Entries (8 bytes each) of one array a pattern may build on the way to its flows: 1 GiB.
MAX_ARRAY = 1 << 27


def check_flows(name: str, n: int, **params: Any) -> None:
    """One-line ``ValueError`` when pattern ``name`` over ``n`` ranks would pass
    :data:`MAX_FLOWS` (:func:`flow_bound`) or build an array past :data:`MAX_ARRAY`
    (:func:`array_bound`); nothing for sizes or params the bounds cannot read (the pattern's
    own call refuses those in its words)."""
    try:
        flows, entries = flow_bound(name, n, **params), array_bound(name, n, **params)
    except (TypeError, KeyError, ValueError):  # malformed sizes or params: the pattern's own call says so
        return
    if flows > MAX_FLOWS:
        raise ValueError(f"pattern {name!r} over a job of {n:,} ranks makes up to {flows:,} flows, past the "
                         f"{MAX_FLOWS:,} one job's traffic may have (it would not fit in memory): give that pattern "
                         "no weight for jobs this large, or run on smaller jobs")
    if entries > MAX_ARRAY:
        raise ValueError(f"pattern {name!r} over a job of {n:,} ranks with {params or 'its defaults'} builds an array "
                         f"of {entries:,} entries, past the {MAX_ARRAY:,} it may (it would not fit in memory): "
                         "give it fewer dimensions or smaller jobs")


def first_refused(name: str, sizes: Iterable[int], **params: Any) -> tuple[int, ValueError] | None:
    """The largest of ``sizes`` (ranks) over which :func:`check_flows` refuses pattern ``name``,
    with its error, or None. Every size is checked, not the largest alone: a bound need not
    grow with the size (a prime-sized ``grid_a2a`` is an all-to-all)."""
    for n in sorted(set(sizes), reverse=True):
        try:
            check_flows(name, n, **params)
        except ValueError as err:
            return n, err
    return None


def make(name: str, key: Key, n: int, **params) -> Traffic:
    """Traffic of pattern ``name`` over ``n`` ranks (``params`` override its defaults);
    one-line ``ValueError`` for an unknown name or traffic past :data:`MAX_FLOWS`."""
    try:
        fn = PATTERNS[name]
    except KeyError:
        raise ValueError(f"unknown pattern {name!r}; choices: {sorted(PATTERNS)}") from None
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):  # odd sizes get the pattern's own message
        check_flows(name, n, **params)
    return fn(key, n, **params)


def to_nodes(alloc, traffic: Traffic, ranks_per_node: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map rank flows onto a job's nodes in allocation order.

    Rank ``i`` runs on node ``alloc[i // ranks_per_node]`` (one rank per node by default;
    with several, consecutive ranks share a node and flows between them stay on the node:
    their ``src == dst`` node pairs have empty routes). Returns ``(src_nodes, dst_nodes,
    nbytes)``; raises if a rank has no node.
    """
    if ranks_per_node < 1:
        raise ValueError(f"ranks_per_node must be >= 1, got {ranks_per_node}")
    alloc = np.asarray(alloc, np.int32).ravel()
    if traffic.n_flows and max(int(traffic.src.max()), int(traffic.dst.max())) >= len(alloc) * ranks_per_node:
        raise ValueError(
            f"traffic uses more ranks than the {len(alloc)} allocated nodes x {ranks_per_node} ranks per node hold"
        )
    if ranks_per_node == 1:  # the usual case: the ranks are the nodes' indices (a division per flow saved)
        return alloc[traffic.src], alloc[traffic.dst], traffic.nbytes
    return alloc[traffic.src // ranks_per_node], alloc[traffic.dst // ranks_per_node], traffic.nbytes
