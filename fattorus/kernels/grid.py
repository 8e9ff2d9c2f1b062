"""Periodic process grids, compiled with numba: the neighbour ranks and first-repeat masks of
the near-neighbour patterns (:mod:`fattorus.analysis.patterns`).

A ``speedup=model`` replay draws a stencil or an unstructured mesh at many job starts; done
with NumPy's ``unravel_index`` / ``ravel_multi_index`` and a per-row ``argsort``, the
key-free part of a 1,024-rank mesh (124 box offsets per rank) took ~3 ms and a 4D stencil's
neighbours ~1 ms, most of a month's pattern drawing on Cab (session 33). One compiled loop
over ranks and offsets gives the same integers.
"""

from __future__ import annotations

import numba
import numpy as np


def neighbour_ranks(dims: tuple[int, ...], offsets: np.ndarray) -> np.ndarray:
    """``(n, m)`` int64: the rank of ``rank + offsets[j]`` on the periodic grid ``dims``
    (row-major ranks, ``n = prod(dims)``; coordinates wrap round each extent).

    Args:
      dims: the grid's extents (each >= 1).
      offsets: ``(m, len(dims))`` integer coordinate offsets (any sign).
    """
    extents = np.asarray(dims, np.int64)
    offsets = np.ascontiguousarray(offsets, np.int64)
    if extents.ndim != 1 or (extents < 1).any() or offsets.ndim != 2 or offsets.shape[1] != extents.shape[0]:
        raise ValueError(f"neighbour_ranks: dims {tuple(dims)}, offsets {offsets.shape}")
    return _neighbour_ranks(extents, offsets)


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
    cand = np.ascontiguousarray(cand)
    self_rank = np.ascontiguousarray(self_rank, np.int64)
    if cand.ndim != 2 or self_rank.shape != (cand.shape[0],):
        raise ValueError(f"first_unique: candidates {cand.shape}, own ranks {self_rank.shape}")
    if cand.size and cand.min() < 0:
        raise ValueError("first_unique: candidate ranks must be >= 0")
    top = int(max(cand.max(initial=0), self_rank.max(initial=0))) + 1
    return _first_unique(cand, self_rank, top)


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
