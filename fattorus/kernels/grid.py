"""Periodic process grids, compiled with numba: the neighbour ranks and first-repeat masks of
the near-neighbour patterns (:mod:`fattorus.analysis.patterns`).

A ``speedup=model`` replay draws a stencil or an unstructured mesh at many job starts; done
with NumPy's ``unravel_index`` / ``ravel_multi_index`` and a per-row ``argsort``, the
key-free part of a 1,024-rank mesh (124 box offsets per rank) took ~3 ms and a 4D stencil's
neighbours ~1 ms, most of a month's pattern drawing on Cab (session 33). One compiled loop
over ranks and offsets gives the same integers.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Most entries a grid kernel makes (2**31): far past any job's ranks times offsets, and a
#: one-line refusal instead of an allocation that fails or an index that overflows.
_MAX_ENTRIES = 2**31


def neighbour_ranks(dims: tuple[int, ...], offsets: np.ndarray) -> np.ndarray:
    """``(n, m)`` int64: the rank of ``rank + offsets[j]`` on the periodic grid ``dims``
    (row-major ranks, ``n = prod(dims)``; coordinates wrap round each extent).

    Args:
      dims: the grid's extents (each >= 1).
      offsets: ``(m, len(dims))`` integer coordinate offsets (any sign).
    """
    offsets = np.asarray(offsets)
    sizes = [int(d) for d in dims] if all(isinstance(d, (int, np.integer)) for d in dims) else []
    n = math.prod(sizes)
    if (not sizes or min(sizes) < 1 or offsets.ndim != 2 or offsets.shape[1] != len(sizes)
            or not np.issubdtype(offsets.dtype, np.integer)
            or (offsets.dtype == np.uint64 and offsets.size and int(offsets.max()) > np.iinfo(np.int64).max)):
        raise ValueError(f"neighbour_ranks: dims {tuple(dims)}, offsets {offsets.shape} {offsets.dtype} "
                         "(integer extents >= 1, one integer offset column per extent)")
    if n * max(offsets.shape[0], 1) > _MAX_ENTRIES:
        raise ValueError(f"neighbour_ranks: {n} ranks x {offsets.shape[0]} offsets is more than {_MAX_ENTRIES} entries")
    return _neighbour_ranks(np.asarray(sizes, np.int64), np.ascontiguousarray(offsets, np.int64))


@numba.njit(cache=True)
def _neighbour_ranks(dims: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    d = dims.shape[0]
    n = 1
    for a in range(d):
        n *= dims[a]
    m = offsets.shape[0]
    out = np.empty((n, m), np.int64)
    coords = np.zeros(d, np.int64)  # rank r's coordinates, advanced like an odometer
    for r in range(n):
        for j in range(m):
            rank = 0
            for a in range(d):
                c = coords[a] + offsets[j, a]
                if c < 0 or c >= dims[a]:  # an integer division only where the offset wraps round
                    c %= dims[a]  # numba's % takes the divisor's sign, as NumPy's
                rank = rank * dims[a] + c
            out[r, j] = rank
        a = d - 1
        while a >= 0:
            coords[a] += 1
            if coords[a] < dims[a]:
                break
            coords[a] = 0
            a -= 1
    return out


def first_unique(cand: np.ndarray, self_rank: np.ndarray) -> np.ndarray:
    """``(n, m)`` bool mask of the entries of each row of ``cand`` that are neither
    ``self_rank[row]`` nor a repeat of an earlier entry of the row.

    Args:
      cand: ``(n, m)`` non-negative integer ranks.
      self_rank: ``(n,)`` each row's own rank.
    """
    cand, self_rank = np.asarray(cand), np.asarray(self_rank)
    if (cand.ndim != 2 or self_rank.shape != (cand.shape[0],) or not np.issubdtype(cand.dtype, np.integer)
            or not np.issubdtype(self_rank.dtype, np.integer)):
        raise ValueError(f"first_unique: candidates {cand.shape} {cand.dtype}, own ranks {self_rank.shape} "
                         f"{self_rank.dtype} (integers, one own rank per row)")
    if cand.size and not 0 <= int(cand.min()) <= int(cand.max()) < _MAX_ENTRIES:
        raise ValueError(f"first_unique: candidate ranks must be in [0, {_MAX_ENTRIES})")
    # A row's own rank is only compared, never an index: only the candidates size the marks.
    top = int(cand.max(initial=0)) + 1
    own = np.where(self_rank > _MAX_ENTRIES, _MAX_ENTRIES, self_rank).astype(np.int64)  # meets no candidate, as before
    return _first_unique(np.ascontiguousarray(cand, np.int64), own, top)


@numba.njit(cache=True)
def _first_unique(cand: np.ndarray, self_rank: np.ndarray, top: int) -> np.ndarray:
    n, m = cand.shape
    out = np.empty((n, m), np.bool_)
    seen = np.full(top, -1, np.int64)  # seen[v] == row: v met earlier in this row
    for r in range(n):
        for j in range(m):
            v = cand[r, j]
            out[r, j] = v != self_rank[r] and seen[v] != r
            seen[v] = r
    return out
