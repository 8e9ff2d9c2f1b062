"""Per-link bookkeeping of a job's padded routes, compiled: how many flows cross each link,
and which links a job uses.

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
