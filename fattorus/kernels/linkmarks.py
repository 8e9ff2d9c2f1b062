"""Per-link bookkeeping of a job's padded routes, compiled: how many flows cross each link,
which links a job uses, and which jobs its links connect it to.

A ``speedup=model`` replay (:class:`fattorus.analysis.commtime.ModelRuntimes`) keeps the
running jobs' crossing counts between starts (the first-round read,
:mod:`fattorus.kernels.maxmin_first_round`, takes them) and each starting job's shared links
(who can slow whom). One pass over the routes each; NumPy's fancy-index marking cost ~5 ns a
crossing and a temporary per step.
"""

from __future__ import annotations

import numba
import numpy as np


def add_crossings(route_ids: np.ndarray, count: np.ndarray, step: int) -> None:
    """``count[e] += step`` for every crossing of link ``e`` by ``route_ids`` (``(F, L)`` int,
    ``-1`` padded; ``count``: ``(E,)`` int32, updated in place): how a caller keeps the
    ``count`` of :func:`~fattorus.kernels.maxmin_first_round.first_round_step_time` as flows
    come and go."""
    _add_links(np.ascontiguousarray(route_ids, np.int32).reshape(-1), count, np.int32(step))


def used_links(route_ids: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The links that ``route_ids`` (``(F, L)`` int, ``-1`` padded) cross and ``keep``
    (``(E,)`` bool) marks, each once, in increasing order (int64) — ``np.flatnonzero`` of
    the marked crossings, as ``np.unique`` would give them without its sort."""
    return _used_links(np.ascontiguousarray(route_ids, np.int32), np.ascontiguousarray(keep, np.bool_))


def connected(seed: np.ndarray, links: list[np.ndarray], n_links: int) -> np.ndarray:
    """Which of the jobs whose (shared) links are ``links`` reach the links ``seed``, directly
    or through each other (a link reached by one job's list reaches every list holding it):
    ``(len(links),)`` bool. Link ids in ``[0, n_links)``. The fixed point a Python loop of
    fancy-index reads found in ~65 µs a start; here one concatenation and a compiled loop."""
    if not links:
        return np.zeros(0, np.bool_)
    lengths = np.fromiter((len(x) for x in links), np.int64, len(links))
    start = np.zeros(len(links) + 1, np.int64)
    np.cumsum(lengths, out=start[1:])
    flat = np.concatenate(links).astype(np.int64, copy=False)
    return _connected(np.asarray(seed, np.int64), flat, start, int(n_links))


@numba.njit(cache=True)
def _connected(seed: np.ndarray, flat: np.ndarray, start: np.ndarray, n_links: int) -> np.ndarray:
    """:func:`connected`: sweep the lists until none joins (each sweep in list order)."""
    reached = np.zeros(n_links, np.bool_)
    for e in seed:
        reached[e] = True
    n = start.shape[0] - 1
    member = np.zeros(n, np.bool_)
    grew = True
    while grew:
        grew = False
        for i in range(n):
            if member[i]:
                continue
            hit = False
            for c in range(start[i], start[i + 1]):
                if reached[flat[c]]:
                    hit = True
                    break
            if hit:
                member[i] = grew = True
                for c in range(start[i], start[i + 1]):
                    reached[flat[c]] = True
    return member


@numba.njit(cache=True)
def _add_links(link: np.ndarray, count: np.ndarray, step: np.int32) -> None:
    """``count[e] += step`` for every id ``e`` of ``link`` (``-1``: padding)."""
    for e in link:
        if e >= 0:
            count[e] += step


@numba.njit(cache=True)
def _used_links(routes: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """:func:`used_links`' passes: mark, then read the marks in link order."""
    E = keep.shape[0]
    mark = np.zeros(E, np.bool_)
    n = 0
    for f in range(routes.shape[0]):
        for k in range(routes.shape[1]):
            e = routes[f, k]
            if e >= 0 and keep[e] and not mark[e]:
                mark[e] = True
                n += 1
    out = np.empty(n, np.int64)
    i = 0
    for e in range(E):
        if mark[e]:
            out[i] = e
            i += 1
    return out
