"""The goal solve's answer read off a job's own links, when its first round settles it there.

A ``speedup=model`` replay asks, at each start, the step time of the starting job among the
flows running with it (:func:`fattorus.kernels.maxmin_compiled.goal_step_time`: all flows of
every job connected to it, ~10,000 on a loaded Cab under ``to``). Often the answer is decided
by links no other job crosses — a node's injection and ejection links, which carry only the
flows of the job on that node: when every flow of the job crosses such a link that is a
bottleneck in the solve's first round, the whole solve stops after that round and its answer
depends only on the job's own flows and on how many flows cross each of its links. Those
counts (the other jobs' crossings, ``background``) are kept by the caller between starts, so
this costs the job's own crossings instead of the whole problem's.

**Exact, the goal solve's floats.** With every flow of the problem open in round one, a
flow's tightest share is ``min capacity / load`` over its links, ``load`` the float32 count
of crossings (own + background: every flow crossing one of the job's links belongs to the
problem, so these are the solve's loads on them). A link only own flows cross has as its
tightest open flow the least of their tightest shares: the solve's bottleneck test
(``share <= around * (1 + rtol)``, float32) is decided here with the same operands. When
every own flow that crosses a link crosses such a bottleneck, round one freezes them all at
their tightest share, no own flow is left open, the goal test stops the solve, and its answer
is ``max bytes / rate`` over them (float64, as :func:`goal_step_time` returns it). Otherwise
this says nothing (None) and the caller solves. ``tests/test_maxmin_settled.py`` checks the
answers against the full solve on random problems and whole replays.
"""

from __future__ import annotations

import numba
import numpy as np

from fattorus.kernels.maxmin_compiled import _BOTTLENECK_SLACK, _crossings, _tightest


def settled_step_time(route_ids: np.ndarray, nbytes: np.ndarray, background: np.ndarray, capacity: np.ndarray,
                      workspace: np.ndarray) -> float | None:
    """The step time :func:`~fattorus.kernels.maxmin_compiled.goal_step_time` gives for a job's
    flows (``route_ids``, ``nbytes``: its own flows only) among the other flows of its problem,
    when the solve's first round settles it on links only the job crosses (module docstring);
    else None.

    Args:
      route_ids: ``(F, L)`` int link ids of the job's flows, ``-1`` padded.
      nbytes: ``(F,)`` bytes of each flow.
      background: ``(E,)`` int: how many flows of the problem's other jobs cross each link
        (0 where only the job's flows can; every link a job's flow crosses must count every
        other flow of the problem crossing it).
      capacity: ``(E,)`` float32 link capacities (> 0), as the solve takes them.
      workspace: ``(E,)`` int32 array of ``-1`` (:func:`~fattorus.kernels.maxmin_compiled.new_workspace`),
        lent and handed back as it came.
    """
    routes = np.ascontiguousarray(route_ids, np.int32)
    if routes.ndim != 2 or len(nbytes) != routes.shape[0] or background.shape != capacity.shape:
        raise ValueError(f"settled_step_time: routes {routes.shape}, {len(nbytes)} byte counts, background "
                         f"{background.shape}, capacity {capacity.shape}")
    if routes.shape[0] == 0:
        return 0.0
    settled, time = _settled(routes, np.ascontiguousarray(nbytes, np.float64), np.ascontiguousarray(background, np.int64),
                             np.ascontiguousarray(capacity, np.float32), workspace, _BOTTLENECK_SLACK)
    return float(time) if settled else None


@numba.njit(cache=True)
def _settled(routes: np.ndarray, nbytes: np.ndarray, background: np.ndarray, capacity: np.ndarray,
             index: np.ndarray, bottleneck_slack: np.float32) -> tuple[bool, float]:
    """:func:`settled_step_time`: (whether round one settles the job, its step time then)."""
    start, link, used, count = _crossings(routes, index)
    F, E = routes.shape[0], used.shape[0]
    inf = np.float32(np.inf)
    share = np.empty(E, np.float32)
    alone = np.empty(E, np.bool_)  # only the job's flows cross it
    for u in range(E):
        e = used[u]
        share[u] = capacity[e] / np.float32(count[u] + background[e])
        alone[u] = background[e] == 0
    tight = np.empty(F, np.float32)
    around = np.full(E, inf, np.float32)  # each link's tightest flow (exact where alone)
    for f in range(F):
        t = _tightest(f, start, link, share)
        tight[f] = t
        for c in range(start[f], start[f + 1]):
            if t < around[link[c]]:
                around[link[c]] = t
    slowest = 0.0
    for f in range(F):
        if start[f + 1] == start[f]:
            continue  # no link: never open in the solve, no time
        frozen = False
        for c in range(start[f], start[f + 1]):
            u = link[c]
            if alone[u] and share[u] <= around[u] * bottleneck_slack:
                frozen = True
                break
        if not frozen:
            return False, 0.0
        t = nbytes[f] / np.float64(tight[f])
        if t > slowest:
            slowest = t
    return True, slowest


@numba.njit(cache=True)
def count_crossings(background: np.ndarray, route_ids: np.ndarray, sign: int) -> None:
    """Add ``sign`` to ``background`` once per link crossing of ``route_ids`` (``(F, L)``,
    ``-1`` padded): a job's flows joining (+1) or leaving (-1) the counts."""
    F, L = route_ids.shape
    for f in range(F):
        for k in range(L):
            e = route_ids[f, k]
            if e >= 0:
                background[e] += sign
