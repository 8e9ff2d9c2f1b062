"""A goal solve's step time read off the first filling round, when that round decides it.

The ``speedup=model`` replay asks, at each job start, for ``max bytes / rate`` over the job's
own flows among all the flows running with it (:func:`fattorus.kernels.maxmin_compiled.goal_step_time`).
Progressive filling gives every flow at least its tightest first-round share (the least
``capacity / flows`` over the links it crosses): a link's share only grows as flows freeze
on it, each at a rate no larger than that share. So the step time is at most
``T = max bytes / tightest share`` over the own flows, and it *is* ``T`` when the flows
that take it freeze in round one, at exactly that share. A flow freezes in round one when
it crosses a local bottleneck: a link whose share is no larger than the tightest share of
every flow crossing it (``maxmin._round``, with its ``(1 + rtol)``).

:func:`first_round_step_time` checks exactly that from each link's crossing count (counted
here, or kept by the caller between starts: a replay adds a job's routes once and takes them
off once it ends, :mod:`fattorus.kernels.linkmarks`): the own flows' shares, then the flows
crossing a candidate bottleneck, the other jobs' read only where a candidate is shared with
them — no dense renumbering, no freezing, no rounds. Own flows within :data:`MARGIN` of ``T`` must all
freeze in round one; the others end at most ``(1 - MARGIN) · T`` in real arithmetic, and
the goal solve's float32 rounding in later rounds moves a rate by far less than that. So
where it answers, it answers the goal solve's float bit for bit (the same float32 shares,
the same bottleneck test, the same float64 division): ``tests/test_maxmin_first_round.py``
checks it on random problems, on every configured machine's flows and over whole model
replays. Where it does not (an own flow near ``T`` whose first-round share is not final),
it says so and the caller solves.

On 30 days of Atlas x2 on Cab under ``to`` it answers 1,409 of the 1,793 solves (every
ideal-placement solve and 646 of the 1,030 together solves); on 2 Table II waves on Blue
Waters 828 of 912 per run (compact crossing lists, :func:`first_round_step_time_compact`).
"""

from __future__ import annotations

import numba
import numpy as np

from fattorus.kernels.linkmarks import _add_links
from fattorus.kernels.maxmin_compiled import _BOTTLENECK_SLACK, _bytes, _capacity, _count, _ids

#: Own flows whose first-round time is within this fraction of the largest must all freeze in
#: round one. The rest take at most ``(1 - MARGIN)`` of the step time in real arithmetic; float32
#: rounding over later rounds would have to move a rate ~10^5 float32 ulps to matter. (Every answered
#: solve of the bench replay is the same from 1e-5 to 1e-2; 1e-1 answers fewer.)
MARGIN = 1e-2


class Workspace:
    """Per-link scratch arrays lent to :func:`first_round_step_time` and handed back as they
    came: crossing counts (0), candidate marks (False) and tightest crossing shares (inf)."""

    __slots__ = ("count", "own_count", "mark", "around")

    def __init__(self, n_links: int) -> None:
        self.count = np.zeros(n_links, np.int32)
        self.own_count = np.zeros(n_links, np.int32)
        self.mark = np.zeros(n_links, np.bool_)
        self.around = np.full(n_links, np.inf, np.float32)


def first_round_step_time(route_ids: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                          workspace: Workspace | None = None, count: np.ndarray | None = None) -> float | None:
    """:func:`~fattorus.kernels.maxmin_compiled.goal_step_time` of the first ``own`` flows when
    the first filling round decides it (module docstring), else ``None``.

    Args:
      route_ids: ``(F, L)`` int link ids of each flow's route, ``-1`` padded (anywhere).
      nbytes: ``(F,)`` bytes of each flow, >= 0.
      own: how many leading flows are the job's.
      capacity: ``(E,)`` float32 link capacities.
      workspace: optional :class:`Workspace` of ``E`` links (callers that ask many times keep one).
      count: optional ``(E,)`` int32 crossings of each link by all the flows of ``route_ids``,
        at least on every link an own flow crosses and every link a flow crossing one of
        those crosses (a replay keeps the running jobs' counts between starts: the problem's
        other flows are then only read where a candidate bottleneck is shared). Counted here
        if not given.

    Returns the step time in ``bytes / capacity unit`` (0 with no own bytes), or ``None``
    where a solve is needed (also for a starved flow: a link of capacity 0).
    """
    routes = _ids(route_ids, "first_round_step_time", "routes")
    nbytes = _bytes(nbytes, "first_round_step_time")
    if routes.ndim != 2 or len(nbytes) != routes.shape[0] or not _count(own, routes.shape[0]):
        raise ValueError(f"first_round_step_time: routes {routes.shape}, {len(nbytes)} byte counts, own {own}")
    capacity = _capacity(capacity, "first_round_step_time")
    if routes.size and (routes.min() < -1 or routes.max() >= len(capacity)):
        raise ValueError(f"first_round_step_time: link ids must be -1 (padding) or in [0, {len(capacity)})")
    ws = _workspace(workspace, capacity, count, "first_round_step_time")
    return first_round_unchecked(routes, nbytes, int(own), capacity, ws, count)


def first_round_step_time_compact(lengths: np.ndarray, links: np.ndarray, nbytes: np.ndarray, own: int,
                                  capacity: np.ndarray, workspace: Workspace | None = None,
                                  count: np.ndarray | None = None) -> float | None:
    """:func:`first_round_step_time` of flows given as compact crossing lists
    (:func:`~fattorus.kernels.maxmin_compiled.compact_routes`: flow ``f`` crosses the next
    ``lengths[f]`` ids of ``links``): the same answer."""
    lengths = _ids(lengths, "first_round_step_time_compact", "lengths")
    links = _ids(links, "first_round_step_time_compact", "link ids")
    nbytes = _bytes(nbytes, "first_round_step_time_compact")
    if lengths.ndim != 1 or links.ndim != 1 or len(nbytes) != len(lengths) or not _count(own, len(lengths)):
        raise ValueError(f"first_round_step_time_compact: {lengths.shape} lengths, {links.shape} link ids, "
                         f"{len(nbytes)} byte counts, own {own}")
    capacity = _capacity(capacity, "first_round_step_time_compact")
    if (lengths < 0).any() or int(lengths.sum()) != len(links) or (
            links.size and (links.min() < 0 or links.max() >= len(capacity))):
        raise ValueError(f"first_round_step_time_compact: lengths must be >= 0 and add up to the {len(links)} "
                         f"link ids, each in [0, {len(capacity)})")
    ws = _workspace(workspace, capacity, count, "first_round_step_time_compact")
    return first_round_unchecked((lengths, links), nbytes, int(own), capacity, ws, count)


def _workspace(workspace: Workspace | None, capacity: np.ndarray, count: np.ndarray | None, caller: str) -> Workspace:
    """The caller's workspace (or a new one) and ``count``, checked against ``capacity``."""
    ws = workspace if workspace is not None else Workspace(len(capacity))
    if ws.count.shape != capacity.shape:
        raise ValueError(f"{caller}: a workspace of {len(capacity)} links, got {ws.count.shape[0]}")
    if count is not None and (np.shape(count) != capacity.shape or np.asarray(count).dtype != np.int32):
        raise ValueError(f"{caller}: count: {len(capacity)} int32 entries, got {np.shape(count)} "
                         f"{np.asarray(count).dtype}")
    return ws


def first_round_unchecked(flows: np.ndarray | tuple[np.ndarray, np.ndarray], nbytes: np.ndarray, own: int,
                          capacity: np.ndarray, ws: Workspace, count: np.ndarray | None) -> float | None:
    """:func:`first_round_step_time` on inputs already as it checks them (contiguous int32
    ids in range, float64 bytes >= 0, float32 capacities, ``own`` in range): a replay that
    builds its own routes asks ~1,800 times a month and the checks cost a fifth of the
    answer. ``flows``: padded routes ``(F, L)``, or compact crossing lists ``(lengths,
    links)`` (:func:`~fattorus.kernels.maxmin_compiled.compact_routes`: the same answer)."""
    if own == 0:
        return 0.0
    start, link = _crossing_lists(flows)
    if count is None:
        _add_links(link, ws.count, np.int32(1))
        try:
            got = _first_round(start, link, nbytes, own, capacity, ws.count, ws.own_count, ws.mark, ws.around,
                               _BOTTLENECK_SLACK, np.float64(MARGIN))
        finally:
            _add_links(link, ws.count, np.int32(-1))
    else:
        got = _first_round(start, link, nbytes, own, capacity, count, ws.own_count, ws.mark, ws.around,
                           _BOTTLENECK_SLACK, np.float64(MARGIN))
    return None if np.isnan(got) else float(got)


def _crossing_lists(flows: np.ndarray | tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Flow ``f`` crosses ``link[start[f]:start[f + 1]]`` (``-1``: padding, skipped): padded
    routes as they lie (their rows are the slices), compact lists with their offsets."""
    if isinstance(flows, tuple):
        lengths, link = flows
        start = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=start[1:])
        return start, link
    F, L = flows.shape
    return np.arange(0, (F + 1) * L, L, dtype=np.int64), flows.reshape(-1)


@numba.njit(cache=True, inline="always")
def _share(e: int, capacity: np.ndarray, count: np.ndarray) -> np.float32:
    """Link ``e``'s first-round share, the goal solve's float32 division."""
    return capacity[e] / np.float32(count[e])


@numba.njit(cache=True, inline="always")
def _tightest(start: np.ndarray, link: np.ndarray, f: int, capacity: np.ndarray, count: np.ndarray) -> np.float32:
    """Flow ``f``'s tightest first-round share: the least ``capacity / flows`` over its links,
    the goal solve's float32 division (``residual / load``, both float32)."""
    t = np.float32(np.inf)
    for c in range(start[f], start[f + 1]):
        e = link[c]
        if e >= 0:
            s = _share(e, capacity, count)
            if s < t:
                t = s
    return t


@numba.njit(cache=True, inline="always")
def _near_top(nbytes: float, t: np.float32, top: float, margin: float) -> bool:
    """Whether a flow of ``nbytes`` at first-round share ``t`` takes within ``margin`` of ``top``."""
    return t != np.float32(np.inf) and nbytes / np.float64(t) > top * (1 - margin)


@numba.njit(cache=True)
def _own_shares(start: np.ndarray, link: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                count: np.ndarray, tight: np.ndarray) -> float:
    """Each own flow's first-round share (``tight``) and the largest time, as the goal solve's
    last loop takes them; NaN where a solve is needed (a starved flow, or bytes that vanish
    in float32)."""
    top = 0.0
    for f in range(own):
        t = _tightest(start, link, f, capacity, count)
        tight[f] = t
        if t == np.float32(np.inf):
            continue  # no link: no time
        if not t > 0 or (nbytes[f] > 0 and not np.float32(nbytes[f]) > 0):
            return np.nan
        time = nbytes[f] / np.float64(t)
        if time > top:
            top = time
    return top


@numba.njit(cache=True)
def _mark_candidates(start: np.ndarray, link: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                     count: np.ndarray, tight: np.ndarray, top: float, margin: float, slack: np.float32,
                     mark: np.ndarray, marked: np.ndarray) -> int:
    """Mark the candidate bottlenecks — the links of the own flows near the top at their share
    (a link with a larger share is no bottleneck: some flow crossing it is tighter) — listing
    them in ``marked``; returns how many."""
    n_marked = 0
    for f in range(own):
        t = tight[f]
        if _near_top(nbytes[f], t, top, margin):
            for c in range(start[f], start[f + 1]):
                e = link[c]
                if e >= 0 and not mark[e] and _share(e, capacity, count) <= t * slack:
                    mark[e] = True
                    marked[n_marked] = e
                    n_marked += 1
    return n_marked


@numba.njit(cache=True, inline="always")
def _lower_marked(start: np.ndarray, link: np.ndarray, f: int, t: np.float32, mark: np.ndarray,
                  around: np.ndarray) -> bool:
    """Every marked link flow ``f`` crosses: its tightest crossing share is at most ``t``.
    Returns whether ``f`` crosses one."""
    crosses = False
    for c in range(start[f], start[f + 1]):
        e = link[c]
        if e >= 0 and mark[e]:
            crosses = True
            if t < around[e]:
                around[e] = t
    return crosses


@numba.njit(cache=True)
def _tightest_crossing(start: np.ndarray, link: np.ndarray, own: int, capacity: np.ndarray, count: np.ndarray,
                       tight: np.ndarray, mark: np.ndarray, marked: np.ndarray, n_marked: int, own_count: np.ndarray,
                       around: np.ndarray) -> None:
    """Each candidate's tightest crossing flow (``around``): the own ones first; the other flows
    only where a candidate has crossings that are not own (a node link's are all the job's)."""
    for f in range(own):
        for c in range(start[f], start[f + 1]):
            e = link[c]
            if e >= 0 and mark[e]:
                own_count[e] += 1
        _lower_marked(start, link, f, tight[f], mark, around)
    shared = False
    for i in range(n_marked):
        shared |= own_count[marked[i]] < count[marked[i]]
    if not shared:
        return
    for f in range(own, start.shape[0] - 1):
        for c in range(start[f], start[f + 1]):
            e = link[c]
            if e >= 0 and mark[e]:  # crosses a candidate: its share counts
                _lower_marked(start, link, f, _tightest(start, link, f, capacity, count), mark, around)
                break


@numba.njit(cache=True)
def _first_round(start: np.ndarray, link: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                 count: np.ndarray, own_count: np.ndarray, mark: np.ndarray, around: np.ndarray, slack: np.float32,
                 margin: np.float64) -> float:
    """:func:`first_round_step_time`'s passes over ``count`` (each link's crossings in the
    whole problem); NaN: undecided. The workspace (``own_count``, ``mark``, ``around``) goes
    back as it came."""
    tight = np.empty(own, np.float32)
    top = _own_shares(start, link, nbytes, own, capacity, count, tight)
    if not top > 0.0:
        return top  # NaN: solve; 0: no own bytes, the goal solve runs no round
    marked = np.empty(start[own], np.int64)
    n_marked = _mark_candidates(start, link, nbytes, own, capacity, count, tight, top, margin, slack, mark, marked)
    _tightest_crossing(start, link, own, capacity, count, tight, mark, marked, n_marked, own_count, around)
    # Every own flow near the top must cross a first-round bottleneck.
    decided = True
    for f in range(own):
        if decided and _near_top(nbytes[f], tight[f], top, margin):
            hit = False
            for c in range(start[f], start[f + 1]):
                e = link[c]
                if e >= 0 and mark[e] and _share(e, capacity, count) <= around[e] * slack:
                    hit = True
                    break
            decided = hit
    for i in range(n_marked):
        e = marked[i]
        mark[e] = False
        around[e] = np.float32(np.inf)
        own_count[e] = 0
    return top if decided else np.nan
