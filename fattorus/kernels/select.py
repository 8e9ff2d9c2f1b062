"""Per-row selection of the best-scored entries, compiled with numba.

The unstructured mesh pattern (:func:`fattorus.analysis.patterns.unstructured_mesh`) keeps,
for each rank, its ``count`` best-scored candidate neighbours (Gumbel top-k sampling: 6-27
of 124). Done with NumPy (a partition, a sort of the kept part, two gathers) it cost ~2 ms
of a 1,024-rank mesh, drawn at every start of a mesh job in a ``speedup=model`` replay; one
compiled pass that keeps each row's best few in a short sorted buffer takes a fraction of it.
"""

from __future__ import annotations

import numba
import numpy as np


def first_largest(score: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``counts[row]`` largest finite scores, in the order of a stable descending
    sort (equal scores by column, lowest first); ``-inf`` marks an entry that is never
    taken, so a row with fewer finite scores keeps all of them.

    Args:
      score: ``(n, m)`` float64 scores (``-inf``: not a candidate; no NaN).
      counts: ``(n,)`` how many to keep per row (>= 0).

    Returns:
      ``(rows, cols)``: int64 arrays of the kept entries, row by row, each row's in order.
    """
    score = np.ascontiguousarray(score, np.float64)
    counts = np.ascontiguousarray(counts, np.int64)
    if score.ndim != 2 or counts.shape != (score.shape[0],):
        raise ValueError(f"first_largest: scores {score.shape}, counts {counts.shape}")
    m = score.shape[1]
    # x + 0.0 is x for every finite x and -inf: the same scores, compared the same way.
    return _first_largest(score, np.zeros(m), np.ones(score.shape, np.bool_), counts)


def first_largest_of_sums(noise: np.ndarray, prior: np.ndarray, usable: np.ndarray,
                          counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`first_largest` of the scores ``prior[col] + noise[row, col]`` where ``usable``
    (``-inf`` elsewhere), each sum made as NumPy makes ``prior[None, :] + noise`` (one float64
    addition) while the rows are read: the mesh's Gumbel top-k without the two score arrays
    NumPy would build first.

    Args:
      noise: ``(n, m)`` float64 (the Gumbel draws).
      prior: ``(m,)`` float64 (each column's log-weight).
      usable: ``(n, m)`` bool.
      counts: ``(n,)`` how many to keep per row (>= 0).
    """
    noise = np.ascontiguousarray(noise, np.float64)
    prior = np.ascontiguousarray(np.ravel(prior), np.float64)
    usable = np.ascontiguousarray(usable, np.bool_)
    counts = np.ascontiguousarray(counts, np.int64)
    if noise.ndim != 2 or usable.shape != noise.shape or prior.shape != (noise.shape[1],) \
            or counts.shape != (noise.shape[0],):
        raise ValueError(f"first_largest_of_sums: noise {noise.shape}, prior {prior.shape}, usable {usable.shape}, "
                         f"counts {counts.shape}")
    return _first_largest(noise, prior, usable, counts)


@numba.njit(cache=True)
def _first_largest(noise: np.ndarray, prior: np.ndarray, usable: np.ndarray,
                   counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, m = noise.shape
    rows = np.empty(int(np.minimum(counts, m).sum()), np.int64)
    cols = np.empty_like(rows)
    kept = np.empty(m, np.int64)  # this row's kept columns, best first
    best = np.empty(m, np.float64)  # and their scores
    out = 0
    for r in range(n):
        want = min(counts[r], m)
        size = 0
        if want > 0:
            for c in range(m):
                if not usable[r, c]:
                    continue
                s = prior[c] + noise[r, c]
                if s == -np.inf:
                    continue
                if size == want:
                    if not s > best[size - 1]:
                        continue  # no better than the worst kept (a tie keeps the lower column)
                    size -= 1
                # Insert after every kept entry scored at least as high (earlier columns win ties).
                at = size
                while at > 0 and best[at - 1] < s:
                    kept[at] = kept[at - 1]
                    best[at] = best[at - 1]
                    at -= 1
                kept[at] = c
                best[at] = s
                size += 1
        for i in range(size):
            rows[out] = r
            cols[out] = kept[i]
            out += 1
    return rows[:out], cols[:out]
