"""Max-min solves compiled with numba, the same floats as :func:`fattorus.kernels.maxmin.maxmin_rates`:
the replay's goal solve (one job's step time among the flows running with it, as with a
``goal``) and the full solve (every flow's rate).

A ``speedup=model`` replay (:class:`fattorus.analysis.commtime.ModelRuntimes`) solves once or
twice per job start: the starting job's flows first, then those of every running job connected
to it, unit weights, float32, and wants only ``max bytes / rate`` over the job's own flows.
On a 30-day Atlas x2 on Cab replay under ``to`` most of these problems hold 4k-16k flows and
stop after one to ten rounds; each round of the JAX solver is a few whole-array scatters, and
with their dispatch a solve took ~1-7 ms. Here a round is two passes over the open flows'
crossings (the ones that froze drop out of the lists): ~4-8x faster per solve on this CPU
(bench row ``goal_cab_instant``).

The same rounds run to the end give every flow's rate (:func:`maxmin_rates_compiled`): what
the steady and drained step times (:func:`fattorus.analysis.commtime.step_times`,
:func:`fattorus.analysis.fluid.finish_times`) solve with on a CPU — ~4x a JAX solve, and no
XLA compilation per flow-count bucket.

**Same bits as the JAX solver.** Every step is the one of
:func:`~fattorus.kernels.maxmin._round` in float32, in the same order where order matters:

* per-link loads are counts of open flows (integers, exact in float32 below 2**24);
* the residual of a link loses the rates frozen on it this round summed in flow order, as
  XLA's scatter-add adds the crossings on the CPU (``tests/test_maxmin_compiled.py``
  checks the step time bit for bit against the JAX goal solve on random problems, on every
  configured machine's flows and over whole replays);
* shares, the tightest share per flow and per link, the local-bottleneck test with its
  ``(1 + rtol)`` and the goal test with its ``(1 - GOAL_MARGIN)`` are the same float32
  operations (minima and maxima do not depend on order).

So a replay's slowdowns, starts and ends are those of the JAX solve on the CPU, bit for bit
(on a GPU the JAX solver's sums may add in another order; this one does not depend on the
device). Weights other than 1 and the solver's stages are not needed here and not taken.
"""

from __future__ import annotations

import numba
import numpy as np

from fattorus.kernels.maxmin_inputs import GOAL_MARGIN, RTOL, check_inputs as _check_inputs

#: The float32 factors of the solver's tests, rounded as JAX rounds a Python float multiplying
#: a float32 array (weak typing: the scalar becomes float32 first).
_BOTTLENECK_SLACK = np.float32(1 + RTOL)
_GOAL_SLACK = np.float32(1 - GOAL_MARGIN)


def goal_step_time(route_ids: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray,
                   workspace: np.ndarray | None = None) -> float:
    """Step time of the first ``own`` flows when all flows of ``route_ids`` run together:
    ``max bytes / rate`` over them (in ``bytes / capacity unit``), their rates the weighted
    max-min fair ones with unit weights — bit for bit what
    :func:`fattorus.analysis.commtime.goal_step_time_jax` (``maxmin_rates(..., goal=...)``)
    gives on the CPU (module docstring).

    Args:
      route_ids: ``(F, L)`` int link ids of each flow's route, ``-1`` padded (anywhere).
      nbytes: ``(F,)`` bytes of each flow, >= 0 (only the first ``own`` are read; a negative
        or NaN count anywhere is refused: one-line ``ValueError``).
      own: how many leading flows are the job's.
      capacity: ``(E,)`` float32 link capacities (>= 0; a flow starved by a capacity of 0
        takes ``inf``).
      workspace: optional ``(E,)`` int32 array of ``-1`` (:func:`new_workspace`), lent to the
        solve and handed back as it came: callers that solve many times on one machine keep
        one, so that a solve costs its crossings and not the machine's links (a torus of
        Blue Waters' size has ~140,000).

    A flow that crosses no link takes no time (rate ``inf``); a flow starved at rate 0 takes
    ``inf``; no own flows: 0.
    """
    routes = _ids(route_ids, "goal_step_time", "routes")
    nbytes = _bytes(nbytes, "goal_step_time")
    if routes.ndim != 2 or len(nbytes) != routes.shape[0] or not _count(own, routes.shape[0]):
        raise ValueError(f"goal_step_time: routes {routes.shape}, {len(nbytes)} byte counts, own {own}")
    capacity = _capacity(capacity, "goal_step_time")
    workspace = _lent(workspace, capacity, "goal_step_time")
    if own == 0:
        return 0.0
    return float(_goal_step(routes, nbytes, int(own), capacity, workspace, _BOTTLENECK_SLACK, _GOAL_SLACK)[0])


def compact_routes(route_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``route_ids`` (``(F, L)``, ``-1`` padded anywhere) as compact crossing lists: each
    flow's number of links ``(F,)`` int32 and their ids in flow order, route order within a
    flow ``(C,)`` int32 — what :func:`goal_step_time_compact` takes. A route of Blue Waters
    pads ~6 links to 38 slots: a replay that solves the same running jobs at many starts keeps
    each job's flows this way once, and each solve reads (and concatenates) a sixth of the
    padded bytes."""
    routes = _ids(route_ids, "compact_routes", "routes")
    if routes.ndim != 2:
        raise ValueError(f"compact_routes: routes {routes.shape}, want (F, L)")
    return _compact(routes)


def goal_step_time_compact(lengths: np.ndarray, links: np.ndarray, nbytes: np.ndarray, own: int,
                           capacity: np.ndarray, workspace: np.ndarray | None = None) -> float:
    """:func:`goal_step_time` of flows given as compact crossing lists (:func:`compact_routes`:
    flow ``f`` crosses the next ``lengths[f]`` ids of ``links``): the same floats, bit for bit
    (the same crossings in the same order)."""
    lengths = _ids(lengths, "goal_step_time_compact", "lengths")
    links = _ids(links, "goal_step_time_compact", "link ids")
    nbytes = _bytes(nbytes, "goal_step_time_compact")  # before the workspace is lent: a refusal leaves it as it came
    if lengths.ndim != 1 or links.ndim != 1 or len(nbytes) != len(lengths) or not _count(own, len(lengths)):
        raise ValueError(f"goal_step_time_compact: {lengths.shape} lengths, {links.shape} link ids, "
                         f"{len(nbytes)} byte counts, own {own}")
    capacity = _capacity(capacity, "goal_step_time_compact")
    workspace = _lent(workspace, capacity, "goal_step_time_compact")
    if own == 0:
        return 0.0
    start, link, used, count, bad = _crossings_compact(lengths, links, workspace)
    if bad:  # checked in the compiled pass: two NumPy reductions per solve cost more than some solves
        raise ValueError(f"goal_step_time_compact: lengths must be >= 0 and add up to the {len(links)} link ids, "
                         f"each in [0, {len(capacity)})")
    return float(_goal_core(start, link, used, count, nbytes, int(own), capacity, workspace, _BOTTLENECK_SLACK,
                            _GOAL_SLACK)[0])


def _ids(a: np.ndarray, caller: str, what: str) -> np.ndarray:
    """``a`` as contiguous int32, refused in one line unless its values are integers that fit
    (a float or a 64-bit id past int32 would be truncated or wrapped, silently)."""
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.integer) and not (a.size == 0 and a.dtype == np.float64):
        raise ValueError(f"{caller}: {what} must be integers, got {a.dtype}")
    if a.dtype.itemsize > 4 or a.dtype == np.uint32:
        info = np.iinfo(np.int32)
        if a.size and not (info.min <= int(a.min()) and int(a.max()) <= info.max):
            raise ValueError(f"{caller}: {what} must fit in int32")
    return np.ascontiguousarray(a, np.int32)


def _bytes(nbytes: np.ndarray, caller: str) -> np.ndarray:
    """Each flow's bytes as a contiguous float64 ``(F,)`` array, refused in one line otherwise."""
    try:
        out = np.ascontiguousarray(nbytes, np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{caller}: byte counts must be numbers") from None
    if out.ndim != 1:
        raise ValueError(f"{caller}: byte counts {out.shape}, want (F,)")
    if _bad_bytes(out):  # a negative or NaN count gave a step time of 0, silently
        raise ValueError(f"{caller}: byte counts must be numbers >= 0, got a negative or NaN one")
    return out


@numba.njit(cache=True)
def _bad_bytes(nbytes: np.ndarray) -> bool:
    """Whether a byte count is negative or NaN (one pass, no temporary: a solve can cost less
    than NumPy's reductions)."""
    for b in nbytes:
        if not b >= 0:
            return True
    return False


def _capacity(capacity: np.ndarray, caller: str) -> np.ndarray:
    """Link capacities as contiguous float32 ``(E,)``, refused in one line unless a vector (a
    scalar was taken as one link)."""
    if np.ndim(capacity) != 1:
        raise ValueError(f"{caller}: capacity: one per link, an (E,) array, got shape {np.shape(capacity)}")
    return np.ascontiguousarray(capacity, np.float32)


def _count(own: object, flows: int) -> bool:
    """Whether ``own`` is a whole number of flows in ``[0, flows]``."""
    return isinstance(own, (int, np.integer)) and not isinstance(own, bool) and 0 <= own <= flows


def new_workspace(n_links: int) -> np.ndarray:
    """A workspace for :func:`goal_step_time` on a machine of ``n_links`` links."""
    return np.full(n_links, -1, np.int32)


def _lent(workspace: np.ndarray | None, capacity: np.ndarray, caller: str) -> np.ndarray:
    """The caller's workspace, checked against ``capacity``, or a new one."""
    if workspace is None:
        return new_workspace(len(capacity))
    if workspace.shape != capacity.shape or workspace.dtype != np.int32:
        raise ValueError(f"{caller}: a workspace of {capacity.shape[0]} int32 entries, got {workspace.shape} "
                         f"{workspace.dtype}")
    return workspace


@numba.njit(cache=True)
def _crossings(routes: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compact crossing lists in flow order, on the links the routes use renumbered densely
    in order of first use: flow ``f`` crosses ``link[start[f]:start[f + 1]]``, dense link
    ``u`` is machine link ``used[u]`` and ``count[u]`` flows cross it. ``index`` (machine
    link -> dense id, ``-1``: unused) comes all ``-1`` and is used to renumber; the caller
    puts it back."""
    F, L = routes.shape
    start = np.zeros(F + 1, np.int64)
    link = np.empty(F * L, np.int32)
    n_max = min(F * L, index.shape[0])
    used = np.empty(n_max, np.int64)
    count = np.zeros(n_max, np.int64)
    n, n_used = 0, 0
    for f in range(F):
        for k in range(L):
            e = routes[f, k]
            if e >= 0:
                u = index[e]
                if u < 0:
                    u = index[e] = n_used
                    used[n_used] = e
                    n_used += 1
                link[n] = u
                count[u] += 1
                n += 1
        start[f + 1] = n
    return start, link[:n], used[:n_used], count[:n_used]


@numba.njit(cache=True)
def _compact(routes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compact_routes`' loop."""
    F, L = routes.shape
    lengths = np.zeros(F, np.int32)
    links = np.empty(F * L, np.int32)
    n = 0
    for f in range(F):
        for k in range(L):
            e = routes[f, k]
            if e >= 0:
                links[n] = e
                n += 1
                lengths[f] += 1
    return lengths, links[:n].copy()


@numba.njit(cache=True)
def _crossings_compact(lengths: np.ndarray, links: np.ndarray, index: np.ndarray):
    """:func:`_crossings` from compact lists (the same crossings in the same order, so the
    same dense numbering); ``bad``: a negative length, lengths that do not add up to the
    links, or a link id outside ``index`` (then ``index`` goes back as it came)."""
    F, C, E = lengths.shape[0], links.shape[0], index.shape[0]
    start = np.zeros(F + 1, np.int64)
    negative = False
    for f in range(F):
        negative |= lengths[f] < 0
        start[f + 1] = start[f] + lengths[f]
    link = np.empty(C, np.int32)
    n_max = min(C, E)
    used = np.empty(n_max, np.int64)
    count = np.zeros(n_max, np.int64)
    if negative or start[F] != C:
        return start, link, used[:0], count[:0], True
    n_used = 0
    for c in range(C):
        e = links[c]
        if e < 0 or e >= E:
            for u in range(n_used):
                index[used[u]] = -1
            return start, link, used[:0], count[:0], True
        u = index[e]  # numbered as _crossings numbers (a shared helper returning a tuple cost ~50 %)
        if u < 0:
            u = index[e] = n_used
            used[n_used] = e
            n_used += 1
        link[c] = u
        count[u] += 1
    return start, link, used[:n_used], count[:n_used], False


@numba.njit(cache=True, inline="always")
def _tightest(f: int, start: np.ndarray, link: np.ndarray, share: np.ndarray) -> np.float32:
    """Flow ``f``'s tightest share: the least share over the links it crosses."""
    t = np.float32(np.inf)
    for c in range(start[f], start[f + 1]):
        s = share[link[c]]
        if s < t:
            t = s
    return t


@numba.njit(cache=True, inline="always")
def _lower_around(f: int, t: np.float32, start: np.ndarray, link: np.ndarray, around: np.ndarray) -> None:
    """Every link flow ``f`` crosses: its tightest open flow is at most ``t`` (flow ``f``'s)."""
    for c in range(start[f], start[f + 1]):
        e = link[c]
        if t < around[e]:
            around[e] = t


@numba.njit(cache=True)
def _tighten(open_flows: np.ndarray, n_open: int, start: np.ndarray, link: np.ndarray, share: np.ndarray,
             tight: np.ndarray, around: np.ndarray, nbytes: np.ndarray, own: int) -> np.float32:
    """Each open flow's tightest share (``tight``), each link's tightest open flow
    (``around``, reset to inf first), and the goal bound: the most time an open own flow can
    still take (``max bytes / tight``, 0 if none)."""
    around[:] = np.float32(np.inf)
    bound = np.float32(0.0)
    for i in range(n_open):
        f = open_flows[i]
        t = _tightest(f, start, link, share)
        tight[f] = t
        _lower_around(f, t, start, link, around)
        if f < own and np.float32(nbytes[f]) > 0:
            b = np.float32(nbytes[f]) / t if t > 0 else np.float32(np.inf)  # starved: as JAX, not an error
            if b > bound:
                bound = b
    return bound


@numba.njit(cache=True)
def _own_bound(open_flows: np.ndarray, n_open: int, start: np.ndarray, link: np.ndarray, share: np.ndarray,
               tight: np.ndarray, nbytes: np.ndarray, own: int) -> tuple[np.float32, int]:
    """The open own flows' tightest shares (``tight``) and the goal bound over them, as
    :func:`_tighten` gives them, and how many open flows are own: the open flows are in flow
    order, own first, so the goal test after a round needs no other flow (most solves stop
    there, and skip the rest of :func:`_tighten`)."""
    bound = np.float32(0.0)
    for i in range(n_open):
        f = open_flows[i]
        if f >= own:
            return bound, i
        t = _tightest(f, start, link, share)
        tight[f] = t
        if np.float32(nbytes[f]) > 0:
            b = np.float32(nbytes[f]) / t if t > 0 else np.float32(np.inf)  # starved: as JAX, not an error
            if b > bound:
                bound = b
    return bound, n_open


@numba.njit(cache=True)
def _around_rest(open_flows: np.ndarray, n_open: int, n_done: int, start: np.ndarray, link: np.ndarray,
                 share: np.ndarray, tight: np.ndarray, around: np.ndarray) -> None:
    """The rest of :func:`_tighten` after :func:`_own_bound`: the tightest shares of the open
    flows from ``n_done`` on, and every link's tightest open flow (``around``)."""
    around[:] = np.float32(np.inf)
    for i in range(n_open):
        f = open_flows[i]
        if i >= n_done:
            tight[f] = _tightest(f, start, link, share)
        _lower_around(f, tight[f], start, link, around)


@numba.njit(cache=True, inline="always")
def _going(n_open: int, bound: np.float32, slowest: np.float32, goal_slack: np.float32, rounds: int, F: int) -> bool:
    """Whether another round is needed: open flows left, the goal not yet settled (an open own
    flow could still take longer than the slowest frozen one, up to the goal margin), and fewer
    rounds than flows (each round freezes at least one)."""
    return n_open > 0 and not bound <= slowest * goal_slack and rounds <= F


@numba.njit(cache=True)
def _freeze_round(open_flows: np.ndarray, n_open: int, start: np.ndarray, link: np.ndarray, bottleneck: np.ndarray,
                  tight: np.ndarray, rate: np.ndarray, frozen: np.ndarray, load: np.ndarray, residual: np.ndarray,
                  share: np.ndarray, frozen_sum: np.ndarray, touched: np.ndarray, touched_links: np.ndarray,
                  nbytes: np.ndarray, own: int) -> tuple[int, np.float32]:
    """One round's freezing: every open flow crossing a bottleneck freezes at its tightest share;
    the links it crosses lose it from their load and its rate from their residual (the rates
    frozen on a link this round summed in flow order, as XLA's scatter-add), and their shares
    are recomputed. The open list keeps the others in order. Returns how many stay open and
    the longest time of an own flow frozen now (``bytes / rate``, float32)."""
    inf, zero, one = np.float32(np.inf), np.float32(0.0), np.float32(1.0)
    n_touched = 0
    settled = zero
    keep = 0
    for i in range(n_open):
        f = open_flows[i]
        hit = False
        for c in range(start[f], start[f + 1]):
            if bottleneck[link[c]]:
                hit = True
                break
        if not hit:
            open_flows[keep] = f
            keep += 1
            continue
        r = tight[f]
        rate[f] = r
        frozen[f] = True
        for c in range(start[f], start[f + 1]):
            e = link[c]
            if not touched[e]:
                touched[e] = True
                touched_links[n_touched] = e
                n_touched += 1
            frozen_sum[e] += r
            load[e] -= one
        if f < own and np.float32(nbytes[f]) > 0:
            s = np.float32(nbytes[f]) / r if r > 0 else inf
            if s > settled:
                settled = s
    for k in range(n_touched):
        e = touched_links[k]
        left = residual[e] - frozen_sum[e]
        residual[e] = left if left > 0 else zero
        share[e] = residual[e] / load[e] if load[e] > 0 else inf
        frozen_sum[e] = zero
        touched[e] = False
    return keep, settled


@numba.njit(cache=True)
def _setup(routes: np.ndarray, capacity: np.ndarray, index: np.ndarray):
    """A solve's starting state over the links its flows use (renumbered densely):
    ``(start, link, load, residual, share, open_flows, n_open)`` — the crossing lists, each
    link's open flows (integers, exact in float32 below 2**24), residual capacity and share,
    and the flows with a link in flow order. The workspace ``index`` goes back as it came."""
    start, link, used, count = _crossings(routes, index)
    load, residual, share, open_flows, n_open = _state(start, used, count, capacity, index)
    return start, link, load, residual, share, open_flows, n_open


@numba.njit(cache=True)
def _state(start: np.ndarray, used: np.ndarray, count: np.ndarray, capacity: np.ndarray, index: np.ndarray):
    """:func:`_setup` after the crossing lists: ``index`` put back, then ``(load, residual,
    share, open_flows, n_open)``."""
    for u in range(used.shape[0]):
        index[used[u]] = -1
    F, E = start.shape[0] - 1, used.shape[0]
    inf = np.float32(np.inf)
    load = np.empty(E, np.float32)
    residual = np.empty(E, np.float32)
    share = np.empty(E, np.float32)
    for u in range(E):
        residual[u] = capacity[used[u]]
        load[u] = np.float32(count[u])
        share[u] = residual[u] / load[u] if load[u] > 0 else inf
    open_flows = np.empty(F, np.int64)  # flows with no link never open
    n_open = 0
    for f in range(F):
        if start[f + 1] > start[f]:
            open_flows[n_open] = f
            n_open += 1
    return load, residual, share, open_flows, n_open


@numba.njit(cache=True, inline="always")
def _mark_bottlenecks(bottleneck, load, share, around, slack):
    """A link no tighter than any link its open flows cross is a bottleneck now: its flows
    freeze at their tightest share (maxmin._round)."""
    for e in range(load.shape[0]):
        bottleneck[e] = load[e] > 0 and share[e] <= around[e] * slack


@numba.njit(cache=True)
def _goal_step(routes: np.ndarray, nbytes: np.ndarray, own: int, capacity: np.ndarray, index: np.ndarray,
               bottleneck_slack: np.float32, goal_slack: np.float32) -> tuple[float, int]:
    """:func:`goal_step_time` (and the filling rounds it took), over the used links only."""
    start, link, used, count = _crossings(routes, index)
    return _goal_core(start, link, used, count, nbytes, own, capacity, index, bottleneck_slack, goal_slack)


@numba.njit(cache=True)
def _goal_core(start: np.ndarray, link: np.ndarray, used: np.ndarray, count: np.ndarray, nbytes: np.ndarray, own: int,
               capacity: np.ndarray, index: np.ndarray, bottleneck_slack: np.float32,
               goal_slack: np.float32) -> tuple[float, int]:
    """:func:`_goal_step` from crossing lists (:func:`_crossings`, :func:`_crossings_compact`)."""
    load, residual, share, open_flows, n_open = _state(start, used, count, capacity, index)
    F, E = start.shape[0] - 1, load.shape[0]
    inf = np.float32(np.inf)
    around = np.empty(E, np.float32)
    bottleneck = np.zeros(E, np.bool_)
    frozen_sum = np.zeros(E, np.float32)  # this round's frozen rates per link, summed in flow order
    touched = np.zeros(E, np.bool_)
    touched_links = np.empty(E, np.int64)
    rate = np.zeros(F, np.float32)
    frozen = np.zeros(F, np.bool_)
    tight = np.full(F, inf, np.float32)
    slowest = np.float32(0.0)
    bound = _tighten(open_flows, n_open, start, link, share, tight, around, nbytes, own)
    rounds = 0
    going = _going(n_open, bound, slowest, goal_slack, rounds, F)
    while going:
        _mark_bottlenecks(bottleneck, load, share, around, bottleneck_slack)
        n_open, settled = _freeze_round(open_flows, n_open, start, link, bottleneck, tight, rate, frozen, load,
                                        residual, share, frozen_sum, touched, touched_links, nbytes, own)
        if settled > slowest:
            slowest = settled
        rounds += 1
        bound, n_own_open = _own_bound(open_flows, n_open, start, link, share, tight, nbytes, own)
        going = _going(n_open, bound, slowest, goal_slack, rounds, F)
        if going:
            _around_rest(open_flows, n_open, n_own_open, start, link, share, tight, around)
    # Open flows stopped at the goal take their rate's lower bound, the tightest share (as
    # maxmin_rates returns them); the maximum over the own flows is the full solve's.
    slowest_time = 0.0
    for f in range(own):
        if start[f + 1] == start[f]:
            continue  # no link: rate inf, no time
        r = np.float64(rate[f] if frozen[f] else tight[f])
        t = nbytes[f] / r if r > 0 else np.inf
        if t > slowest_time:
            slowest_time = t
    return slowest_time, rounds


def maxmin_rates_compiled(route_ids: np.ndarray, capacity: np.ndarray, workspace: np.ndarray | None = None) -> np.ndarray:
    """Every flow's max-min fair rate with unit weights, ``(F,)`` float32 in capacity units —
    bit for bit what :func:`fattorus.kernels.maxmin.maxmin_rates` gives on the CPU for the
    same routes, every flow active (the same rounds as :func:`goal_step_time`, run until every
    flow is frozen). A flow that crosses no link gets ``inf``.

    Args:
      route_ids: ``(F, L)`` int link ids, ``-1`` padded (anywhere).
      capacity: ``(E,)`` float32 link capacities (>= 0; a flow crossing a link of capacity 0
        gets rate 0). Subnormal capacities (below ~1.2e-38) are the one place the floats can
        differ: XLA on the CPU flushes them to zero, this solve does not.
      workspace: optional :func:`new_workspace` of ``E`` entries, lent and handed back as it
        came (callers that solve many times keep one).

    Inputs are checked as :func:`~fattorus.kernels.maxmin.maxmin_rates` checks them (one-line
    ``ValueError``).
    """
    routes = np.asarray(route_ids)
    if routes.ndim != 2:
        raise ValueError(f"maxmin_rates_compiled: routes {routes.shape}, want (F, L)")
    # As the JAX solver checks them: a link id past the capacities was an out-of-bounds write
    # here (a crash), a negative capacity or an id below -1 a wrong answer.
    _check_inputs(routes, capacity, None, None)
    routes = np.ascontiguousarray(routes, np.int32)
    capacity = np.ascontiguousarray(capacity, np.float32)
    return _full_rates(routes, capacity, _lent(workspace, capacity, "maxmin_rates_compiled"), _BOTTLENECK_SLACK)


@numba.njit(cache=True, nogil=True)
def _full_rates(routes: np.ndarray, capacity: np.ndarray, index: np.ndarray, bottleneck_slack: np.float32) -> np.ndarray:
    """:func:`maxmin_rates_compiled`: :func:`_goal_step`'s rounds with no goal, until every
    flow with a link is frozen."""
    start, link, load, residual, share, open_flows, n_open = _setup(routes, capacity, index)
    F, E = routes.shape[0], load.shape[0]
    inf = np.float32(np.inf)
    around = np.empty(E, np.float32)
    bottleneck = np.zeros(E, np.bool_)
    frozen_sum = np.zeros(E, np.float32)
    touched = np.zeros(E, np.bool_)
    touched_links = np.empty(E, np.int64)
    rate = np.zeros(F, np.float32)
    for f in range(F):
        if start[f + 1] == start[f]:
            rate[f] = inf  # no link: the network does not limit it
    frozen = np.zeros(F, np.bool_)
    tight = np.full(F, inf, np.float32)
    no_bytes = np.zeros(0, np.float64)  # own = 0: the freezing never reads bytes
    # An int64, not the literal 0: numba would compile the rounds' functions a second time for it.
    no_own = np.int64(0)
    _tighten(open_flows, n_open, start, link, share, tight, around, no_bytes, no_own)
    rounds = 0
    while n_open > 0 and rounds <= F:
        _mark_bottlenecks(bottleneck, load, share, around, bottleneck_slack)
        n_open, _ = _freeze_round(open_flows, n_open, start, link, bottleneck, tight, rate, frozen, load, residual,
                                  share, frozen_sum, touched, touched_links, no_bytes, no_own)
        rounds += 1
        if n_open > 0:
            _around_rest(open_flows, n_open, no_own, start, link, share, tight, around)
    return rate
