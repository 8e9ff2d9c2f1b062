"""Per-row selection of the best-scored entries, compiled with numba.

The unstructured mesh pattern (:func:`fattorus.analysis.patterns.unstructured_mesh`) keeps,
for each rank, its ``count`` best-scored candidate neighbours (Gumbel top-k sampling: 6-27
of 124). Done with NumPy (a partition, a sort of the kept part, two gathers) it cost ~2 ms
of a 1,024-rank mesh, drawn at every start of a mesh job in a ``speedup=model`` replay; one
compiled pass that keeps each row's best few in a short sorted buffer takes a fraction of it.

The mesh's scores are ``prior + Gumbel noise``, and the noise (two float64 logs an entry)
was most of what was left; :func:`gumbel_top_k` screens the entries with table bounds of the
noise first and takes the logs of the ~15 % that can be picked (the same picks: session 38).
"""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _keep(kept: np.ndarray, best: np.ndarray, size: int, want: int, c: int, s: float) -> int:
    """Offer column ``c`` scored ``s`` to a row's ``size`` kept entries (best first, at most
    ``want``; columns offered in increasing order); returns the new size."""
    if size == want:
        if not s > best[size - 1]:
            return size  # no better than the worst kept (a tie keeps the lower column)
        size -= 1
    # Insert after every kept entry scored at least as high (earlier columns win ties).
    at = size
    while at > 0 and best[at - 1] < s:
        kept[at] = kept[at - 1]
        best[at] = best[at - 1]
        at -= 1
    kept[at] = c
    best[at] = s
    return size + 1


def gumbel_noise(uniform: np.ndarray) -> np.ndarray:
    """The mesh's Gumbel noise ``-log(-log u)`` of uniform draws ``u`` in ``[0, 1)``: float64,
    ``u`` raised to float32's smallest normal first (``log 0`` is never taken), NumPy's logs —
    the floats :func:`fattorus.analysis.patterns.unstructured_mesh` has always scored with."""
    g = np.asarray(uniform, np.float64).copy()
    np.maximum(g, np.finfo(np.float32).tiny, out=g)
    for op in (np.log, np.negative, np.log, np.negative):  # in place: each temporary cost as much as a log
        op(g, out=g)
    return g


#: The screen of :func:`gumbel_top_k`: bounds of the noise over ``SCREEN_BUCKETS`` equal slices
#: of ``[0, 1)``, and a per-row histogram of ``SCREEN_BINS`` bins over ``SCREEN_SPAN`` (score units).
SCREEN_BUCKETS, SCREEN_BINS, SCREEN_SPAN = 4096, 64, 16.0


@lru_cache(maxsize=4)
def _screen_tables(buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of :func:`gumbel_noise` over each slice ``[i, i + 1) / buckets`` of ``[0, 1)``: its
    values at the slice's ends (the last slice's upper end: the largest float32 below 1),
    widened by 1e-9 relative — far more than the few ulps by which NumPy's rounded logs could
    fail to be monotone."""
    ends = np.arange(buckets + 1, dtype=np.float64) / buckets
    ends[-1] = np.nextafter(np.float32(1), np.float32(0))
    g = gumbel_noise(ends)
    pad = 1e-9 * np.maximum(1.0, np.abs(g))
    low, high = g[:-1] - pad[:-1], g[1:] + pad[1:]
    low.flags.writeable = high.flags.writeable = False
    return low, high


def gumbel_top_k(uniform: np.ndarray, prior: np.ndarray, usable: np.ndarray,
                 counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``counts[row]`` best scores ``prior[col] + gumbel_noise(uniform[row, col])``
    among the ``usable`` entries, in the order of a stable descending sort (equal scores by
    column, lowest first) — the picks of scoring every entry — with the noise (two float64 logs an entry, ~40 % of a
    1,024-rank mesh) computed only where an entry can be picked.

    The screen: the noise is monotone in ``u``, so a table gives bounds of it over each
    ``1/4096`` of ``[0, 1)`` (:func:`_screen_tables`). A row's ``count``-th largest lower
    bound is at most its ``count``-th largest score; an entry whose upper bound falls below
    that can never be picked (``count`` others score higher). The row's threshold is read off
    a histogram of the lower bounds (a bin edge at or below that ``count``-th bound). On the
    mesh's rows ~15 % of the entries pass (a few more than the picks) and are scored exactly
    (one float64 addition each, as NumPy's ``prior[None, :] + noise``), in column order.

    Args:
      uniform: ``(n, m)`` float32 draws in ``[0, 1)`` (refused in one line otherwise).
      prior: ``(m,)`` finite float64 (each column's log-weight).
      usable: ``(n, m)`` bool.
      counts: ``(n,)`` how many to keep per row.
    """
    u = np.ascontiguousarray(uniform, np.float32)
    prior = np.ascontiguousarray(np.ravel(prior), np.float64)
    usable = np.ascontiguousarray(usable, np.bool_)
    counts = np.ascontiguousarray(counts, np.int64)
    if u.ndim != 2 or usable.shape != u.shape or prior.shape != (u.shape[1],) or counts.shape != (u.shape[0],):
        raise ValueError(f"gumbel_top_k: uniform {u.shape}, prior {prior.shape}, usable {usable.shape}, "
                         f"counts {counts.shape}")
    if not np.isfinite(prior).all():
        raise ValueError("gumbel_top_k: the prior must be finite")
    return _gumbel_top_k(u, prior, usable, counts, SCREEN_BUCKETS, SCREEN_BINS, SCREEN_SPAN)


def _gumbel_top_k(u: np.ndarray, prior: np.ndarray, usable: np.ndarray, counts: np.ndarray, buckets: int,
                  bins: int, span: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gumbel_top_k` on checked inputs, its screen's sizes given (tests coarsen them)."""
    low, high = _screen_tables(buckets)
    if not u.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo = float(prior.min() + low[0])  # no lower bound of a score falls below this
    threshold, bad = _thresholds(u, prior, usable, counts, low, lo, bins, span)
    if bad:
        raise ValueError("gumbel_top_k: uniform draws must lie in [0, 1)")
    cols, start = _survivors(u, prior, usable, high, threshold)
    noise = gumbel_noise(u.reshape(-1)[_flat_index(cols, start, u.shape[1])])
    return _pick(cols, start, noise, prior, counts, u.shape[1])


@numba.njit(cache=True)
def _thresholds(u, prior, usable, counts, low, lo, bins, span):
    """Each row's screen threshold (``-inf``: keep every usable entry), and whether a draw was
    outside ``[0, 1)``. A histogram of the rows' lower bounds, counted from the top bin down
    to the one that holds the ``count``-th: its lower edge, less a rounding margin."""
    n, m = u.shape
    scale = np.float32(low.shape[0])
    width = span / bins
    hist = np.zeros(bins, np.int64)
    threshold = np.full(n, -np.inf)
    bad = False
    for r in range(n):
        want = min(counts[r], m)
        hist[:] = 0
        for c in range(m):
            x = u[r, c]
            bad |= not (x >= 0 and x < 1)
            b = min(max(np.int64(x * scale), 0), low.shape[0] - 1)  # in range even for a bad draw
            q = np.int64(min((prior[c] + low[b] - lo) / width, bins - 1.0))  # the top bin holds all above
            hist[max(q, 0)] += usable[r, c]
        if want <= 0:
            continue
        total, q = 0, bins - 1
        while q > 0:
            total += hist[q]
            if total >= want:
                break
            q -= 1
        if q > 0:  # bin 0 may hold bounds below its edge (rounding): no threshold there
            edge = lo + q * width
            threshold[r] = edge - 1e-9 * (1.0 + abs(edge))
    return threshold, bad


@numba.njit(cache=True)
def _survivors(u, prior, usable, high, threshold):
    """The usable entries whose upper bound reaches their row's threshold: their columns in
    row then column order, and each row's start in that list (``(n + 1,)``)."""
    n, m = u.shape
    scale = np.float32(high.shape[0])
    cols = np.empty(n * m, np.int32)
    start = np.zeros(n + 1, np.int64)
    k = 0
    for r in range(n):
        t = threshold[r]
        for c in range(m):
            cols[k] = c
            # Branch-free: a survivor is kept by moving past it.
            k += usable[r, c] & (prior[c] + high[min(np.int64(u[r, c] * scale), high.shape[0] - 1)] >= t)
        start[r + 1] = k
    return cols[:k], start


@numba.njit(cache=True)
def _flat_index(cols, start, m):
    """Flat ``(row * m + col)`` indices of the survivors."""
    out = np.empty(cols.shape[0], np.int64)
    for r in range(start.shape[0] - 1):
        for i in range(start[r], start[r + 1]):
            out[i] = r * m + cols[i]
    return out


@numba.njit(cache=True)
def _pick(cols, start, noise, prior, counts, m):
    """Each row's ``counts[row]`` best survivors by score ``prior[col] + noise[i]`` (``noise[i]``:
    survivor ``i``'s exact noise), in the order of a stable descending sort (equal scores by
    column, lowest first; ``-inf`` never taken): ``(rows, cols)``, int64, row by row."""
    n = start.shape[0] - 1
    rows_out = np.empty(cols.shape[0], np.int64)
    cols_out = np.empty(cols.shape[0], np.int64)
    kept = np.empty(m, np.int64)
    best = np.empty(m, np.float64)
    out = 0
    for r in range(n):
        want = min(counts[r], m)
        size = 0
        if want > 0:
            for i in range(start[r], start[r + 1]):
                s = prior[cols[i]] + noise[i]
                if s != -np.inf:
                    size = _keep(kept, best, size, want, cols[i], s)
        for i in range(size):
            rows_out[out] = r
            cols_out[out] = kept[i]
            out += 1
    return rows_out[:out], cols_out[:out]
