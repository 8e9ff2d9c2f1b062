"""The whole EASY (or FCFS) replay under ``prism``, compiled with numba (issue 12's design (b)).

Same decisions as the Python engine (:mod:`fattorus.sched.engine` with
:class:`fattorus.sched.queues.Easy` and :class:`~fattorus.sched.policy.torus.prism.Prism`):
same start times, node sets in the same order, backfill flags and shadow times; the tests
replay real logs both ways and compare every field. What makes it one loop over arrays:

* **A machine state is one array of router release times.** Running prisms share no router
  and a router holds at most one running job's nodes, so every machine state the engine asks
  about — the machine now, a future one at the shadow-time probes, the machine with the head's
  reservation held — has its blocked routers at ``until > t`` (``until``: the estimated end of
  the job whose prism holds the router; routers ``block_other_kinds`` keeps out are blocked
  always), plus the reservation's routers on the held machine.
* **Only the blocked routers matter.** Inside a prism with no blocked router every usable node
  is free (a busy one blocks its router), so a shape's clear starts with enough nodes are read
  off machine-independent usable counts, and the answer to "where does an ``n``-node job go" is
  a function of the blocked routers and ``n`` alone. Answers are kept by a 128-bit hash of the
  blocked routers (two independent 64-bit mixes of the (x, y) columns' bit words).
* **The shape test is a bitset kernel:** each (x, y) column's blocked routers one word (so the
  third ring may hold at most 32 routers; Blue Waters has 24), dilated along z, y and x by the
  shape's extents; the clear starts are read bit by bit. The ``contact`` term counts blocked
  routers in the shell from a wrap-around summed-volume table of the blocked routers, built
  only when a search scores.

The search walk itself (best-first over the minimal shapes with their machine-independent
bounds, then every shape in order of size up to ``slack``; scores, ties) is
:meth:`Prism._search` step for step, with sound shortcuts that change no answer (a job larger
than the usable nodes on unblocked routers; failures remembered across machines that only
grew; per-shape bounds through clear sub-shapes, :func:`_bound_supersets`); the engine's pass
memo, failure sizes and reservation reuse are :mod:`fattorus.sched.queues`'. The replay runs
in slices (:data:`SLICE_JOBS`), so a long one shows progress and stops at a Ctrl-C. Settings
it does not cover run on the Python engine (:func:`supports`): ``internal`` placements,
several node kinds, run times decided at start, a third ring longer than 32 routers.

numba compiles these functions at a machine's first replay (25-45 s on a quiet 2-core machine,
60-80 s with ~25 % steal) and keeps the machine code beside this module (``__pycache__``), so
later processes load it (~0.5 s). Numba optimizes a callee's code again inside every caller
above it, and compiles a version of a function per literal argument: hence the shallow calls
from :func:`_replay` and the ``_TRUE``/``_FALSE`` flags (docs/decisions.md, session 36).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba.typed import Dict, List

from fattorus.sched import state as st
from fattorus.sched.engine import Jobs, Schedule, unplaceable

#: Longest third ring the column words hold (a column word and its wrapped copy in 64 bits).
MAX_Z = 32

_DEBRUIJN = np.array([0, 47, 1, 56, 48, 27, 2, 60, 57, 49, 41, 37, 28, 16, 3, 61, 54, 58, 35, 52, 50, 42, 21, 44,
                      38, 32, 29, 23, 17, 11, 4, 62, 46, 55, 26, 59, 40, 36, 15, 53, 34, 51, 20, 43, 31, 22, 10, 45,
                      25, 39, 14, 33, 19, 30, 9, 24, 13, 18, 8, 12, 7, 6, 5, 63], np.int64)

_NONE = -1
_KEY2, _KEY3 = numba.types.UniTuple(numba.types.int64, 2), numba.types.UniTuple(numba.types.int64, 3)
_OK, _UNPLACEABLE, _INCONSISTENT, _PAUSED = 0, 1, 2, 3
# Flags handed to compiled functions as these, never as the literals True and False: numba
# compiles a function once per literal it is called with (and once more for a bool variable).
_TRUE, _FALSE = np.bool_(True), np.bool_(False)
#: Jobs started per slice of a replay (:func:`_replay`): ~0.1-0.3 s on Blue Waters.
SLICE_JOBS = 256


def supports(policy: Any, queue: str, kind_nodes: Any, runtime_at_start: Any) -> bool:
    """Whether this compiled replay covers the run (else the Python engine runs it)."""
    prm = policy.params
    return (queue in ("easy", "fcfs") and kind_nodes is None and runtime_at_start is None and not prm.internal
            and policy.topo.dims[2] <= MAX_Z)


# Kernels ---------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _box(t, x, y, z, a, b, c):
    """Sum over the box ``(a, b, c)`` at ``(x, y, z)`` from a summed-volume table ``t``."""
    return (t[x + a, y + b, z + c] - t[x, y + b, z + c] - t[x + a, y, z + c] - t[x + a, y + b, z]
            + t[x, y, z + c] + t[x, y + b, z] + t[x + a, y, z] - t[x, y, z])


@numba.njit(cache=True)
def _ctz(v):
    """Index of the lowest set bit of the nonzero word ``v`` (de Bruijn multiplication)."""
    return _DEBRUIJN[((v ^ (v - np.uint64(1))) * np.uint64(0x03F79D71B4CB0A89)) >> np.uint64(58)]


@numba.njit(cache=True)
def _columns(blocked, X, Y, Z, router_usable):
    """Each (x, y) column's blocked routers as one word (bit z), their count, two independent
    64-bit hashes of the words (the machine's key), and the usable nodes of the routers not
    blocked (no prism can hold more: a cheap first answer for the jobs too large for it)."""
    zm = np.zeros((X, Y), np.uint64)
    nb = 0
    cap = 0
    h1 = np.uint64(0xCBF29CE484222325)
    h2 = np.uint64(0x9E3779B97F4A7C15)
    for x in range(X):
        for y in range(Y):
            w = np.uint64(0)
            base = (x * Y + y) * Z
            for z in range(Z):
                if blocked[base + z]:
                    w |= np.uint64(1) << np.uint64(z)
                    nb += 1
                else:
                    cap += router_usable[base + z]
            zm[x, y] = w
            h1 = (h1 ^ w) * np.uint64(0x100000001B3)
            v = (w + h2) * np.uint64(0xBF58476D1CE4E5B9)
            v ^= v >> np.uint64(31)
            h2 = (h2 ^ v) * np.uint64(0x94D049BB133111EB) + np.uint64(x * Y + y + 1)
    return zm, nb, np.int64(h1), np.int64(h2), cap


@numba.njit(cache=True)
def _dilate_rows(src, axis_len, ext, nout):
    """OR of ``ext`` consecutive (cyclic) rows along axis 0 of ``src`` (rows, cols), by
    doubling, for the first ``nout`` starts."""
    R, C = src.shape
    cur = src.copy()
    span = 1
    while span * 2 <= ext:
        nxt = np.empty_like(cur)
        for r in range(R):
            r2 = (r + span) % axis_len
            for q in range(C):
                nxt[r, q] = cur[r, q] | cur[r2, q]
        cur = nxt
        span *= 2
    out = np.empty((nout, C), np.uint64)
    sh = ext - span
    for r in range(nout):
        r2 = (r + sh) % axis_len
        for q in range(C):
            out[r, q] = cur[r, q] | cur[r2, q] if sh > 0 else cur[r, q]
    return out


@numba.njit(cache=True)
def _blocked_starts(zm, Z, a, b, c, nx, ny):
    """``(nx, ny)`` words: bit z set where the box ``(a, b, c)`` starting at (x, y, z) holds a
    blocked router."""
    X, Y = zm.shape
    full = (np.uint64(1) << np.uint64(Z)) - np.uint64(1)
    dz = np.empty((X, Y), np.uint64)
    for x in range(X):
        for y in range(Y):
            w = zm[x, y]
            d = w | (w << np.uint64(Z))
            span = 1
            while span * 2 <= c:
                d |= d >> np.uint64(span)
                span *= 2
            if span < c:
                d |= d >> np.uint64(c - span)
            dz[x, y] = d & full
    dy = _dilate_rows(dz.T.copy(), Y, b, ny)  # (ny, X)
    return _dilate_rows(dy.T.copy(), X, a, nx)  # (nx, ny)


@numba.njit(cache=True)
def _starts(zm, Z, ut, a, b, c, nx, ny, nz, n, first_only):
    """Flat start ids (ascending) where the shape holds no blocked router and at least ``n``
    usable nodes, their usable counts, and the most usable nodes at any start that holds no
    blocked router (-1: none). ``first_only``: stop at the first such start."""
    dx = _blocked_starts(zm, Z, a, b, c, nx, ny)
    mask = (np.uint64(1) << np.uint64(nz)) - np.uint64(1)
    at = np.empty(nx * ny * nz, np.int64)
    av = np.empty(nx * ny * nz, np.int64)
    cnt = 0
    most = -1
    for x in range(nx):
        for y in range(ny):
            v = ~dx[x, y] & mask
            while v:
                z = _ctz(v)
                v &= v - np.uint64(1)
                u = _box(ut, x, y, z, a, b, c)
                most = max(most, u)
                if u >= n:
                    at[cnt] = (x * ny + y) * nz + z
                    av[cnt] = u
                    cnt += 1
                    if first_only:
                        return at[:cnt], av[:cnt], most
    return at[:cnt], av[:cnt], most


@numba.njit(cache=True)
def _summed_blocked(zm, Z, reach):
    """Wrap-around summed-volume table of the blocked routers (boxes up to ``reach`` past any
    start inside the grid)."""
    X, Y = zm.shape
    rx, ry, rz = reach[0], reach[1], reach[2]
    t = np.zeros((X + rx + 1, Y + ry + 1, Z + rz + 1), np.int64)
    for i in range(X + rx):
        for j in range(Y + ry):
            w = zm[i % X, j % Y]
            for k in range(Z + rz):
                g = np.int64((w >> np.uint64(k % Z)) & np.uint64(1))
                t[i + 1, j + 1, k + 1] = (g + t[i, j + 1, k + 1] + t[i + 1, j, k + 1] + t[i + 1, j + 1, k]
                                          - t[i, j, k + 1] - t[i, j + 1, k] - t[i + 1, j, k] + t[i, j, k])
    return t


@numba.njit(cache=True)
def _bound_supersets(ub, shapes, sx, sy, sz, most, p):
    """Shape ``(sx, sy, sz)`` holds at most ``most`` usable nodes at any start with no blocked
    router (-1: it has none): bound every shape containing it. A clear prism of a larger shape
    holds a clear one of this shape at its own start, plus at most ``p`` usable nodes per
    further router; none at all where this shape is blocked everywhere (:meth:`Prism._starts`'
    dead shapes, and more: why — on Blue Waters the XK block is never blocked, so small shapes
    stay clear there with no usable node, no shape was ever dead, and a failing search tried
    every shape that holds the job)."""
    vol = sx * sy * sz
    for j in range(len(ub)):
        if shapes[j, 0] >= sx and shapes[j, 1] >= sy and shapes[j, 2] >= sz:
            bound = -1 if most < 0 else most + p * (shapes[j, 0] * shapes[j, 1] * shapes[j, 2] - vol)
            if bound < ub[j]:
                ub[j] = bound


@numba.njit(cache=True)
def _first_step(zm, Z, ut, shapes, starts_t, ub, i, n, p):
    """:meth:`Prism._starts`: clear starts of shape ``i`` with ``n`` usable nodes, and the bounds
    of the shapes containing it (``ub``: most usable nodes any clear start of each shape can
    hold; starts as the shapes' most usable nodes at any start)."""
    if ub[i] < n:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    a, b, c = shapes[i, 0], shapes[i, 1], shapes[i, 2]
    at, av, most = _starts(zm, Z, ut, a, b, c, starts_t[i, 0], starts_t[i, 1], starts_t[i, 2], n, _FALSE)
    if len(at) == 0:
        _bound_supersets(ub, shapes, a, b, c, most, p)
    elif most < ub[i]:  # exact now: a smaller job asked about later on this machine skips the shape if it needs more
        ub[i] = most
    return at, av


@numba.njit(cache=True)
def _contact(bt, dims, a, b, c, ny, nz, at):
    """Blocked share of the one-router shell around the prism at each start of ``at``."""
    ga = min(a + 2, dims[0]) if a < dims[0] else a
    gb = min(b + 2, dims[1]) if b < dims[1] else b
    gc = min(c + 2, dims[2]) if c < dims[2] else c
    shell = ga * gb * gc - a * b * c
    out = np.zeros(len(at))
    if shell == 0:
        return out
    for q in range(len(at)):
        f = at[q]
        x, r = f // (ny * nz), f % (ny * nz)
        y, z = r // nz, r % nz
        lx = (x - 1) % dims[0] if a < dims[0] else x
        ly = (y - 1) % dims[1] if b < dims[1] else y
        lz = (z - 1) % dims[2] if c < dims[2] else z
        out[q] = _box(bt, lx, ly, lz, ga, gb, gc) / shell
    return out


@numba.njit(cache=True)
def _scored(mach, tabs, i, at, base, touch_i):
    """:meth:`Prism._scored`: best score of shape ``i`` over ``at`` and the lowest start reaching it."""
    zm, nb, bt = mach
    shapes, starts_t, dims, reach, contact_w = tabs[0], tabs[1], tabs[8], tabs[9], tabs[12]
    if touch_i != 0.0:
        if bt.shape[0] == 0:
            bt = _summed_blocked(zm, dims[2], reach)
        score = base + contact_w * _contact(bt, dims, shapes[i, 0], shapes[i, 1], shapes[i, 2],
                                            starts_t[i, 1], starts_t[i, 2], at)
    else:
        score = base
    top = score.max()
    q = 0
    while score[q] != top:
        q += 1
    return top, at[q], bt


@numba.njit(cache=True)
def _touch(contact_w, nb, shell_i):
    """:meth:`Prism._touch` of one shape: its shell holds at most every blocked router."""
    return contact_w * min(1.0, nb / max(shell_i, 1))


@numba.njit(cache=True)
def _search(mach, tabs, n, cand, bound, ub):
    """:meth:`Prism._search` on the machine ``mach``: ``(shape index, flat start)`` or (-1, -1).
    ``ub``: the machine's bounds per shape (:func:`_bounds_of`), tightened here."""
    zm, nb, bt = mach
    (shapes, starts_t, slots, bisection, best_from, shell, umax, ut, dims, reach,
     fill_w, bis_w, contact_w, slack, _, _) = tabs
    Z = dims[2]
    p = tabs[15]
    best_bis = best_from[min(np.searchsorted(slots, n), len(slots) - 1)]
    # Best-first over the minimal shapes (Prism._best_first).
    heap = [(0.0, 0, 0)]
    heap.pop()
    for k in range(len(cand)):
        i = cand[k]
        heap.append((-(bound[k] - contact_w + _touch(contact_w, nb, shell[i])), k, 0))
    heapq.heapify(heap)
    store_at = List()
    store_base = List()
    slot_of = np.full(len(cand), -1, np.int64)
    have = False
    bk0, bk1, bk2 = 0.0, 0, 0
    best_i, best_pos = -1, -1
    while len(heap):
        neg_ub, k, stage = heapq.heappop(heap)
        if have and -neg_ub < -bk0 - 1e-12:
            break
        i = cand[k]
        touch_i = _touch(contact_w, nb, shell[i])
        if stage == 0:
            if ub[i] < n:
                continue
            at, av = _first_step(zm, Z, ut, shapes, starts_t, ub, i, n, p)
            if len(at) == 0:
                continue
            base = fill_w * n / av + bis_w * (bisection[i] / best_bis)
            slot_of[k] = len(store_at)
            store_at.append(at)
            store_base.append(base)
            heapq.heappush(heap, (-(base.max() + touch_i), k, 1))
            continue
        top, pos, bt = _scored((zm, nb, bt), tabs, i, store_at[slot_of[k]], store_base[slot_of[k]], touch_i)
        if (not have) or (-top, slots[i], k) < (bk0, bk1, bk2):
            have = True
            bk0, bk1, bk2 = -top, slots[i], k
            best_i, best_pos = i, pos
    if have:
        return best_i, best_pos
    # Every shape in order of size, up to slack times the first that fits (Prism._in_size_order).
    have = False
    limit = np.inf
    for i in range(np.searchsorted(slots, n), len(slots)):
        if slots[i] > limit:
            break
        if ub[i] < n:
            continue
        at, av = _first_step(zm, Z, ut, shapes, starts_t, ub, i, n, p)
        if len(at) == 0:
            continue
        limit = min(limit, slack * slots[i])
        base = fill_w * n / av + bis_w * (bisection[i] / best_bis)
        touch_i = _touch(contact_w, nb, shell[i])
        if have and -(base.max() + touch_i) > bk0 + 1e-12:
            continue
        top, pos, bt = _scored((zm, nb, bt), tabs, i, at, base, touch_i)
        if (not have) or (-top, slots[i]) < (bk0, bk1):
            have = True
            bk0, bk1 = -top, slots[i]
            best_i, best_pos = i, pos
    return best_i, best_pos


@numba.njit(cache=True)
def _fits(mach, tabs, n, ub):
    """:meth:`Prism._fits_on`: some shape has a clear start with ``n`` usable nodes."""
    zm = mach[0]
    shapes, starts_t, slots, umax, ut, dims = tabs[0], tabs[1], tabs[2], tabs[6], tabs[7], tabs[8]
    for i in range(np.searchsorted(slots, n), len(slots)):
        if ub[i] < n:
            continue
        a, b, c = shapes[i, 0], shapes[i, 1], shapes[i, 2]
        at, _, most = _starts(zm, dims[2], ut, a, b, c, starts_t[i, 0], starts_t[i, 1], starts_t[i, 2], n, _TRUE)
        if len(at):
            return True
        _bound_supersets(ub, shapes, a, b, c, most, tabs[15])
    return False


# Machine states and the answers kept about them ---------------------------------------------
@numba.njit(cache=True)
def _machine(blocked, dims, router_usable):
    """``(column words, blocked count, empty table)``, the machine's key and the usable nodes
    on its routers that are not blocked (:func:`_columns`)."""
    zm, nb, h1, h2, cap = _columns(blocked, dims[0], dims[1], dims[2], router_usable)
    return (zm, nb, np.zeros((0, 0, 0), np.int64)), h1, h2, cap


@numba.njit(cache=True)
def _place_code(m, n, search):
    """The search's answer for an ``n``-node job on the machine ``m = (mach, h1, h2, cap)``
    (:func:`_machine`: keyed ``h1, h2``; ``cap`` usable nodes on routers not blocked), kept:
    ``shape index * 2**32 + flat start``, or -1. ``search``: the static tables, the answers
    kept and the remembered failures (:func:`_failed_before`)."""
    mach, h1, h2, cap = m
    tabs, cand_ptr, cand_idx, cand_bound, size_row, found, fits_max, fails_min, failed = search
    if n > cap:
        return _NONE
    mkey = (h1, h2)
    if mkey in fails_min and n >= fails_min[mkey]:
        return _NONE
    key = (h1, h2, np.int64(n))
    if key in found:
        return found[key]
    if _failed_before(mach[0], n, failed):
        _learn(mkey, n, _FALSE, fits_max, fails_min)
        return _NONE
    row = size_row[n]
    lo, hi = cand_ptr[row], cand_ptr[row + 1]
    i, pos = _search(mach, tabs, n, cand_idx[lo:hi], cand_bound[lo:hi], _bounds_of(h1, h2, tabs[6], failed[3:]))
    code = _NONE if i < 0 else (np.int64(i) << 32) + pos
    found[key] = code
    _learn(mkey, n, code != _NONE, fits_max, fails_min)
    if code == _NONE:
        _remember_failure(mach[0], n, failed)
    return code


@numba.njit(cache=True)
def _fits_cached(mach, h1, h2, cap, n, tabs, fits_max, fails_min, failed):
    """:meth:`Prism._fits_on` with what is known about the machine (feasibility is monotone in
    ``n`` and in the blocked routers)."""
    if n > cap:
        return False
    mkey = (h1, h2)
    if mkey in fails_min and n >= fails_min[mkey]:
        return False
    if mkey in fits_max and n <= fits_max[mkey]:
        return True
    ok = not _failed_before(mach[0], n, failed) and _fits(mach, tabs, n, _bounds_of(h1, h2, tabs[6], failed[3:]))
    _learn(mkey, n, ok, fits_max, fails_min)
    if not ok:
        _remember_failure(mach[0], n, failed)
    return ok


#: Answers kept (searches and fit tests) before they are all dropped: ~60 bytes each.
ANSWERS_KEPT = 2_000_000
#: Failures remembered for :func:`_failed_before` (most recent first out).
FAILURES_KEPT = 16
#: Machines whose shape bounds are kept (:func:`_bounds_of`).
BOUNDS_KEPT = 4


@numba.njit(cache=True)
def _bounds_of(h1, h2, umax, kept):
    """The machine ``(h1, h2)``'s bound per shape on the usable nodes of a clear start
    (:func:`_bound_supersets`), kept for the last :data:`BOUNDS_KEPT` machines: why — EASY
    asks about one machine for several job sizes in a row (the backfill candidates), and
    what a scan learnt for one size rules shapes out for the next."""
    keys, arrays, nxt = kept
    for k in range(len(keys)):
        if keys[k, 0] == h1 and keys[k, 1] == h2:
            return arrays[k]
    k = nxt[0] % len(keys)
    nxt[0] += 1
    keys[k, 0], keys[k, 1] = h1, h2
    arrays[k][:] = umax
    return arrays[k]


@numba.njit(cache=True)
def _failed_before(zm, n, failed):
    """Whether a remembered failure rules ``n`` out on the machine of column words ``zm``:
    some machine whose blocked routers are all blocked here could not take ``n`` or fewer
    nodes (feasibility only shrinks as routers are blocked: a clear prism here is clear there,
    with the same usable nodes). Why: after a start the head fails again on a machine that
    only grew, and a failing search tries every shape that holds ``n``."""
    words, sizes = failed[0], failed[1]
    X, Y = zm.shape
    for k in range(len(sizes)):
        if sizes[k] > n:
            continue
        sub = True
        for x in range(X):
            for y in range(Y):
                if words[k, x, y] & ~zm[x, y]:
                    sub = False
                    break
            if not sub:
                break
        if sub:
            return True
    return False


@numba.njit(cache=True)
def _remember_failure(zm, n, failed):
    """Keep ``(zm, n)`` among the last :data:`FAILURES_KEPT` failures."""
    words, sizes, nxt = failed[0], failed[1], failed[2]
    k = nxt[0] % len(sizes)
    words[k] = zm
    sizes[k] = n
    nxt[0] += 1


@numba.njit(cache=True)
def _learn(mkey, n, ok, fits_max, fails_min):
    if ok:
        fits_max[mkey] = max(n, fits_max[mkey]) if mkey in fits_max else n
    else:
        fails_min[mkey] = min(n, fails_min[mkey]) if mkey in fails_min else n


@numba.njit(cache=True)
def _prism_nodes(code, n, shapes, starts_t, dims, p, usable, prefer, use_prefer, out, prism):
    """The job's nodes for the placement ``code``: the prism's usable nodes in prism-local order
    (x slowest, z fastest), those in ``prefer`` first (:func:`prism._take`), the first ``n``
    written to ``out``; the prism's ``(x, y, z, a, b, c)`` to ``prism``."""
    i, pos = code >> 32, code & 0xFFFFFFFF
    a, b, c = shapes[i, 0], shapes[i, 1], shapes[i, 2]
    ny, nz = starts_t[i, 1], starts_t[i, 2]
    sx, sy, sz = pos // (ny * nz), (pos // nz) % ny, pos % nz
    X, Y, Z = dims[0], dims[1], dims[2]
    prism[0], prism[1], prism[2], prism[3], prism[4], prism[5] = sx, sy, sz, a, b, c
    k = 0
    for rnd in range(2 if use_prefer else 1):
        for x in range(a):
            for y in range(b):
                for z in range(c):
                    r = (((sx + x) % X) * Y + (sy + y) % Y) * Z + (sz + z) % Z
                    for q in range(p):
                        node = r * p + q
                        if not usable[node]:
                            continue
                        if use_prefer and prefer[node] != (rnd == 0):
                            continue
                        out[k] = node
                        k += 1
                        if k == n:
                            return


@numba.njit(cache=True)
def _set_prism(grid, prism, dims, value):
    """Every router of ``prism`` ``(x, y, z, a, b, c)`` gets ``value`` in the per-router
    ``grid`` (release times; the held machine's blocked routers)."""
    X, Y, Z = dims[0], dims[1], dims[2]
    for x in range(prism[3]):
        for y in range(prism[4]):
            for z in range(prism[5]):
                grid[(((prism[0] + x) % X) * Y + (prism[1] + y) % Y) * Z + (prism[2] + z) % Z] = value


@numba.njit(cache=True)
def _machine_at(until, t, foreign, dims, ru):
    """:func:`_machine` of the machine at ``t``: routers held by jobs estimated to end after
    ``t``, and those ``block_other_kinds`` keeps out."""
    return _machine((until > t) | foreign, dims, ru)


@numba.njit(cache=True)
def _shadow_time(n, heap_j, hsize, start, estimate, until, foreign, dims, ru, tabs, fits_max, fails_min, failed):
    """EASY's shadow time of an ``n``-node head (``queues.first_fit_time``): the first estimated
    end of a running job after which it fits — the last one first, then a bisection (the
    engine's probes, :func:`fattorus.sched.policy.base.first_fit_among`); inf if none."""
    times = np.empty(hsize)
    for q in range(hsize):
        times[q] = start[heap_j[q]] + estimate[heap_j[q]]
    times = np.unique(times)
    if len(times) == 0:
        return np.inf
    mach, h1, h2, cap = _machine_at(until, times[-1], foreign, dims, ru)
    if not _fits_cached(mach, h1, h2, cap, n, tabs, fits_max, fails_min, failed):
        return np.inf
    ia, ib = 0, len(times) - 1
    while ia < ib:
        mid = (ia + ib) // 2
        mach, h1, h2, cap = _machine_at(until, times[mid], foreign, dims, ru)
        if _fits_cached(mach, h1, h2, cap, n, tabs, fits_max, fails_min, failed):
            ib = mid
        else:
            ia = mid + 1
    return times[ia]


# The replay ------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _heap_push(keys, vals, size, key, val):
    """Push ``(key, val)`` on the binary min-heap ``keys[:size], vals[:size]`` (ordered as the
    engine's heap of ``(end, job)`` tuples); the new size."""
    i = size
    keys[i], vals[i] = key, val
    while i > 0:
        up = (i - 1) // 2
        if (keys[up], vals[up]) <= (keys[i], vals[i]):
            break
        keys[up], keys[i] = keys[i], keys[up]
        vals[up], vals[i] = vals[i], vals[up]
        i = up
    return size + 1


@numba.njit(cache=True)
def _heap_pop(keys, vals, size):
    """Pop the least ``(key, val)`` of the heap: ``key, val, new size``."""
    key, val = keys[0], vals[0]
    size -= 1
    keys[0], vals[0] = keys[size], vals[size]
    i = 0
    while True:
        least, left, right = i, 2 * i + 1, 2 * i + 2
        if left < size and (keys[left], vals[left]) < (keys[least], vals[least]):
            least = left
        if right < size and (keys[right], vals[right]) < (keys[least], vals[least]):
            least = right
        if least == i:
            break
        keys[least], keys[i] = keys[i], keys[least]
        vals[least], vals[i] = vals[i], vals[least]
        i = least
    return key, val, size


# Where _replay keeps its scalars in the state's ``scal`` (between events and between slices):
# jobs started, free usable nodes, the queue's window [lo, hi) of submitted jobs, the machine's
# version (one more at each start and completion), the pass memo (queues.PassMemo: version, -1
# none; head, -1 none; upto; whether failure sizes are kept), the reservation (queues.Reservation:
# head, version, node count; slot 12 unused since EASY holds the reservation's whole prism for
# the whole pass, session 45) and the running jobs' heap size. The reservation's shadow time is ``fscal[0]``.
_STARTED, _FREE, _LO, _HI, _VERSION = 0, 1, 2, 3, 4
_MEMO_VERSION, _MEMO_HEAD, _MEMO_UPTO, _MEMO_FAIL = 5, 6, 7, 8
_RES_HEAD, _RES_VERSION, _RES_N, _RUNNING = 9, 10, 11, 13


@numba.njit(cache=True)
def _new_state(J, N, n_classes, n_shapes, usable, until0, offsets, dims):
    """The replay's state before its first event: every array and scalar :func:`_replay` keeps
    between its calls (a replay runs in slices, so that a long one shows its progress and
    stops at a Ctrl-C between two slices)."""
    n_free = 0
    for v in range(N):
        if usable[v]:
            n_free += 1
    # The scalars at the indices above: _STARTED .. _MEMO_FAIL, then _RES_HEAD .. _RUNNING.
    scal = np.array([0, n_free, 0, 0, 0, -1, -1, 0, 0, -1, -1, 0, 0, 0], np.int64)
    fscal = np.zeros(1)  # the reservation's shadow time
    # The arrays, in order: start times, backfilled flags, shadow times, node ids (job j's at
    # offsets[j]:offsets[j+1]), prisms, the jobs in start order, free nodes, each router's
    # release time (until), each node's estimated end, waiting flags, the failure sizes now
    # and with the reservation held (per size class), the reservation's nodes and prism, its
    # node mask, and the running jobs' heap of (end, job). The replay's functions name them
    # by these positions.
    # Remembered failures (_failed_before), then kept shape bounds (_bounds_of): one tuple to hand on.
    failed = (np.zeros((FAILURES_KEPT, dims[0], dims[1]), np.uint64), np.full(FAILURES_KEPT, 1 << 62),
              np.zeros(1, np.int64), np.full((BOUNDS_KEPT, 2), -1, np.int64),
              np.zeros((BOUNDS_KEPT, n_shapes), np.int64), np.zeros(1, np.int64))
    arrays = (np.full(J, np.nan), np.zeros(J, np.bool_), np.full(J, np.nan), np.empty(offsets[J], np.int64),
              np.zeros((J, 6), np.int64), np.empty(J, np.int64), usable.copy(), until0.copy(), np.full(N, np.inf),
              np.zeros(J, np.bool_), np.zeros(n_classes + 1, np.int64), np.zeros(n_classes + 1, np.int64),
              np.empty(N, np.int64), np.zeros(6, np.int64), np.zeros(N, np.bool_), np.empty(J), np.empty(J, np.int64))
    answers = (Dict.empty(key_type=_KEY3, value_type=numba.types.int64),
               Dict.empty(key_type=_KEY2, value_type=numba.types.int64),
               Dict.empty(key_type=_KEY2, value_type=numba.types.int64))
    return arrays, scal, fscal, answers, failed


@numba.njit(cache=True)
def _replay(submit, runtime, estimate, nodes, size_class, easy, usable, p, until0, tabs,
            cand_ptr, cand_idx, cand_bound, size_row, offsets, state, stop_at):
    """The replay: the engine's event loop and the queue discipline's passes (module docstring),
    from the ``state`` of :func:`_new_state` on, until ``stop_at`` jobs have started (then it
    returns ``_PAUSED`` between two events, its state kept) or the replay ends.

    Returns ``(status, job)``: ``_OK``; ``_PAUSED``; ``_UNPLACEABLE`` with the head no future
    machine can place; ``_INCONSISTENT`` (a fault of this module). The state holds start
    times, backfilled flags, shadow times, the node ids (job ``j``'s at
    ``offsets[j]:offsets[j+1]``), each job's prism ``(x, y, z, a, b, c)`` and the jobs in start
    order."""
    J = len(submit)
    arrays, scal, fscal, answers, failed = state
    waiting, heap_t = arrays[9], arrays[15]
    found, fits_max, fails_min = answers
    search = (tabs, cand_ptr, cand_idx, cand_bound, size_row, found, fits_max, fails_min, failed)
    jobs = (runtime, estimate, nodes, size_class, offsets)
    # Routers block_other_kinds keeps out, blocked at every instant (an estimate may be inf:
    # then a probe at t = inf would free a release time of inf).
    foreign = until0 == np.inf
    geo = (tabs[0], tabs[1], tabs[8], p, usable, tabs[14], foreign)
    # The machine now, rebuilt after each change (its version).
    # (an int64 from the start: a literal -1 would compile _from_head and its callees a second time)
    now_m, now_version = _machine_at(arrays[7], -np.inf, foreign, tabs[8], tabs[14]), np.int64(-1)
    status, bad = _OK, -1
    while scal[_HI] < J or scal[_RUNNING] > 0:
        if scal[_STARTED] >= stop_at:
            status = _PAUSED
            break
        now = submit[scal[_HI]] if scal[_HI] < J else np.inf
        if scal[_RUNNING] > 0 and heap_t[0] < now:
            now = heap_t[0]
        if len(found) + len(fits_max) > ANSWERS_KEPT:  # a bound on memory over a very long log
            found.clear()
            fits_max.clear()
            fails_min.clear()
        # Completions, then submissions (Replay.advance).
        _complete(now, arrays, jobs, geo, scal)
        while scal[_HI] < J and submit[scal[_HI]] == now:
            waiting[scal[_HI]] = True
            scal[_HI] += 1
        # One pass (queues.start_from_head, then Easy.schedule: the blocked head's reservation
        # and the backfill around it). Its steps are called from here, not from a function of
        # their own: numba optimizes a callee's code again in each caller above it, and one
        # more level cost ~13 s of a fresh clone's compiling (80 -> 67 s).
        head, now_m, now_version = _from_head(now, arrays, jobs, geo, search, scal, now_m, now_version)
        cand = _candidates(head, easy, arrays, jobs, geo, scal)
        if len(cand) == 0:
            continue
        # The head's reservation (queues.reserve), reused while neither head nor machine changed.
        if not (scal[_RES_HEAD] == head and scal[_RES_VERSION] == scal[_VERSION]):
            status = _reserve(head, arrays, jobs, geo, search, scal, fscal)
            if status != _OK:
                bad = head
                break
        if not arrays[2][head] <= fscal[0]:  # the head's shadow time
            arrays[2][head] = fscal[0]
        now_m, now_version = _backfill(now, cand, arrays, jobs, geo, search, scal, fscal[0], now_m, now_version)
    return status, bad


@numba.njit(cache=True)
def _complete(now, arrays, jobs, geo, scal):
    """Replay.advance's completions at ``now``: each job ending then frees its nodes and its
    prism's routers."""
    alloc, prisms, free, until, node_est_end, heap_t, heap_j = (arrays[3], arrays[4], arrays[6], arrays[7], arrays[8],
                                                                arrays[15], arrays[16])
    nodes, offsets = jobs[2], jobs[4]
    while scal[_RUNNING] > 0 and heap_t[0] == now:
        _, j, running = _heap_pop(heap_t, heap_j, scal[_RUNNING])
        scal[_RUNNING] = running
        for q in range(offsets[j], offsets[j + 1]):
            free[alloc[q]] = True
            node_est_end[alloc[q]] = np.inf
        scal[_FREE] += nodes[j]
        _set_prism(until, prisms[j], geo[2], -np.inf)
        scal[_VERSION] += 1


@numba.njit(cache=True)
def _now(now, arrays, geo, scal, now_m, now_version):
    """The machine now (:func:`_machine_at`), rebuilt only when it changed since ``now_version``."""
    if now_version != scal[_VERSION]:
        return _machine_at(arrays[7], now, geo[6], geo[2], geo[5]), scal[_VERSION]
    return now_m, now_version


@numba.njit(cache=True)
def _candidates(head, easy, arrays, jobs, geo, scal):
    """Easy.schedule's backfill candidates after the pass from the head stopped at ``head``
    (-1: none): the waiting jobs behind it that could fit the free nodes, those already tried
    on an unchanged machine left out (the pass memo, set here); empty when there is nothing to
    backfill."""
    fail_now, fail_held, waiting = arrays[10], arrays[11], arrays[9]
    nodes, hi = jobs[2], scal[_HI]
    if not easy or head < 0 or scal[_FREE] == 0:
        scal[_MEMO_VERSION], scal[_MEMO_HEAD], scal[_MEMO_UPTO], scal[_MEMO_FAIL] = scal[_VERSION], head, hi, 0
        return np.empty(0, np.int64)
    reuse = scal[_MEMO_VERSION] == scal[_VERSION] and scal[_MEMO_HEAD] == head and scal[_MEMO_FAIL] != 0
    first = max(scal[_MEMO_UPTO], head + 1) if reuse else head + 1
    n_cand = 0
    cand = np.empty(max(hi - first, 0), np.int64)
    for j in range(first, hi):
        if waiting[j] and nodes[j] <= scal[_FREE]:
            cand[n_cand] = j
            n_cand += 1
    if not reuse:
        fail_now[:] = len(geo[4]) + 1
        fail_held[:] = len(geo[4]) + 1
    scal[_MEMO_VERSION], scal[_MEMO_HEAD], scal[_MEMO_UPTO], scal[_MEMO_FAIL] = scal[_VERSION], head, hi, 1
    return cand[:n_cand]


@numba.njit(cache=True)
def _from_head(now, arrays, jobs, geo, search, scal, now_m, now_version):
    """queues.start_from_head: start the waiting jobs in order while they fit now. Returns the
    blocked head (-1: none) and the machine now."""
    waiting, nodes = arrays[9], jobs[2]
    unchanged = scal[_MEMO_VERSION] == scal[_VERSION]
    no_prefer = np.zeros(0, np.bool_)
    while scal[_LO] < scal[_HI]:
        lo = scal[_LO]
        if not waiting[lo]:
            scal[_LO] += 1
            continue
        if unchanged and lo == scal[_MEMO_HEAD]:
            return lo, now_m, now_version
        now_m, now_version = _now(now, arrays, geo, scal, now_m, now_version)
        code = _place_code(now_m, nodes[lo], search)
        if code == _NONE:
            return lo, now_m, now_version
        _launch(lo, code, now, no_prefer, _FALSE, arrays, jobs, geo, scal)
        scal[_LO] += 1
    return -1, now_m, now_version


@numba.njit(cache=True)
def _reserve(head, arrays, jobs, geo, search, scal, fscal):
    """queues.reserve: the head's shadow time and its placement then, held in the reservation
    (``_UNPLACEABLE`` if no future machine fits it; ``_INCONSISTENT``: a fault of this module)."""
    start, until, node_est_end, res_nodes, res_prism, heap_j = (arrays[0], arrays[7], arrays[8], arrays[12],
                                                                arrays[13], arrays[16])
    shapes, starts_t, dims, p, usable, ru, foreign = geo
    tabs, fits_max, fails_min, failed = search[0], search[6], search[7], search[8]
    n = jobs[2][head]
    shadow_t = _shadow_time(n, heap_j, scal[_RUNNING], start, jobs[1], until, foreign, dims, ru, tabs, fits_max,
                            fails_min, failed)
    if shadow_t == np.inf:
        return _UNPLACEABLE
    code = _place_code(_machine_at(until, shadow_t, foreign, dims, ru), n, search)
    if code == _NONE:  # it fitted there a moment ago: a fault of this module, never a user's
        return _INCONSISTENT
    released = node_est_end <= shadow_t
    _prism_nodes(code, n, shapes, starts_t, dims, p, usable, released, _TRUE, res_nodes, res_prism)
    scal[_RES_N], scal[_RES_HEAD], scal[_RES_VERSION] = n, head, scal[_VERSION]
    fscal[0] = shadow_t
    return _OK


@numba.njit(cache=True)
def _backfill(now, cand, arrays, jobs, geo, search, scal, res_shadow, now_m, now_version):
    """Easy._backfill: the candidates ``cand`` in order, each started now if it fits — a job
    estimated to end by the shadow time ``res_shadow`` on the machine now, a longer one on the
    machine with the reservation held. Returns the machine now."""
    until, fail_now, fail_held, res_nodes, res_prism, reserved_mask = (arrays[7], arrays[10], arrays[11], arrays[12],
                                                                       arrays[13], arrays[14])
    estimate, nodes, size_class = jobs[1], jobs[2], jobs[3]
    dims, p, ru, foreign = geo[2], geo[3], geo[5], geo[6]
    reserved_mask[:] = False
    for q in range(scal[_RES_N]):
        reserved_mask[res_nodes[q]] = True
    held_m, held_built, any_started, pos = now_m, False, False, 0
    while pos < len(cand) and scal[_FREE] > 0:
        while pos < len(cand):
            j = cand[pos]
            limit = fail_now[size_class[j]] if now + estimate[j] <= res_shadow else fail_held[size_class[j]]
            if nodes[j] < limit and nodes[j] <= scal[_FREE]:
                break
            pos += 1
        if pos == len(cand):
            break
        j = cand[pos]
        n, c, short = nodes[j], size_class[j], now + estimate[j] <= res_shadow
        if short:
            now_m, now_version = _now(now, arrays, geo, scal, now_m, now_version)
            code = _place_code(now_m, n, search)
            if code == _NONE:
                fail_now[c] = n
                fail_held[c] = min(n, fail_held[c])
        else:
            if not held_built:
                # The reservation's whole prism, across this pass's starts too (Prism.holding).
                held = (until > now) | foreign
                _set_prism(held, res_prism, dims, True)
                held_m, held_built = _machine(held, dims, ru), True
            code = _place_code(held_m, n, search)
            if code == _NONE:
                fail_held[c] = n
        pos += 1
        if code != _NONE:
            _launch(j, code, now, reserved_mask, short, arrays, jobs, geo, scal)
            arrays[1][j] = True  # backfilled
            held_built, any_started = False, True
    if any_started:
        scal[_MEMO_VERSION], scal[_MEMO_HEAD], scal[_MEMO_UPTO], scal[_MEMO_FAIL] = -1, -1, 0, 0
    return now_m, now_version


@numba.njit(cache=True)
def _launch(j, code, now, prefer, use_prefer, arrays, jobs, geo, scal):
    """Prism's node choice for job ``j`` placed by the search's ``code``, then Replay.start_job
    and Prism.started: the nodes busy, the prism's routers held until the job's estimated end,
    its completion queued."""
    start, alloc, prisms, order, free, until, node_est_end, waiting, heap_t, heap_j = (
        arrays[0], arrays[3], arrays[4], arrays[5], arrays[6], arrays[7], arrays[8], arrays[9], arrays[15], arrays[16])
    runtime, estimate, nodes, offsets = jobs[0], jobs[1], jobs[2], jobs[4]
    shapes, starts_t, dims, p, usable = geo[0], geo[1], geo[2], geo[3], geo[4]
    _prism_nodes(code, nodes[j], shapes, starts_t, dims, p, usable, prefer, use_prefer,
                 alloc[offsets[j]:offsets[j + 1]], prisms[j])
    end_est = now + estimate[j]
    for q in range(offsets[j], offsets[j + 1]):
        free[alloc[q]] = False
        node_est_end[alloc[q]] = end_est
    _set_prism(until, prisms[j], dims, end_est)
    start[j] = now
    waiting[j] = False
    scal[_FREE] -= nodes[j]
    scal[_VERSION] += 1
    scal[_RUNNING] = _heap_push(heap_t, heap_j, scal[_RUNNING], now + runtime[j], j)
    order[scal[_STARTED]] = j
    scal[_STARTED] += 1


# The Python side -------------------------------------------------------------------------------
_UMAX: dict[tuple, np.ndarray] = {}  # (machine, usable nodes) -> most usable slots of each shape


def _tables(policy: Any) -> tuple:
    """The static arrays of the search for ``policy`` (after its ``reset``)."""
    topo = policy.topo
    # Keyed by the shapes in the policy's order (it follows the link bandwidths) and the usable
    # nodes: the bounds are per shape index (two tori alike but for bandwidth once shared them).
    key = (topo.dims, topo.nodes_per_router, np.asarray(policy.shapes).tobytes(), np.packbits(policy.usable).tobytes())
    if key not in _UMAX:
        _UMAX.clear()  # one machine at a time is the common case; a few MB each
        _UMAX[key] = np.array([policy._usable_range(i)[1] for i in range(len(policy.shapes))], np.int64)
    prm = policy.params
    return (np.asarray(policy.shapes, np.int64), np.asarray(policy.starts_t, np.int64),
            np.asarray(policy.slots, np.int64), np.asarray(policy.bisection, np.float64),
            np.asarray(policy.best_from, np.float64), np.asarray(policy.shell, np.int64), _UMAX[key],
            np.asarray(policy._usable_table, np.int64), np.asarray(topo.dims, np.int64),
            np.asarray(policy.reach, np.int64), float(prm.fill), float(prm.bisection), float(prm.contact),
            float(prm.slack), policy.usable.reshape(topo.n_routers, topo.nodes_per_router).sum(axis=1).astype(np.int64),
            int(topo.nodes_per_router))


def run(jobs: Jobs, topo: Any, queue: str, policy: Any, usable: np.ndarray | None = None,
        progress: Callable[[int], None] | None = None) -> Schedule:
    """Replay ``jobs`` under ``queue`` (``easy`` or ``fcfs``) and ``policy`` (a
    :class:`~fattorus.sched.policy.torus.prism.Prism` that :func:`supports` the run), as
    :func:`fattorus.sched.engine.run` would; ``policy.started_prisms`` is filled in as the
    Python engine fills it. The replay runs in slices (each ends at the first event after
    :data:`SLICE_JOBS` more jobs started): ``progress(k)`` hears of each slice's ``k`` jobs,
    and a Ctrl-C lands between two slices."""
    machine = st.empty(topo, usable)
    policy.reset(machine)
    size_class = np.asarray(policy.size_class(jobs.nodes), np.int64).reshape(-1)
    if size_class.size != len(jobs):
        size_class = np.broadcast_to(size_class, (len(jobs),)).copy()
    sizes = np.unique(jobs.nodes)
    size_row = np.full(topo.n_nodes + 1, -1, np.int64)
    ptr, idx, bound = [0], [], []
    for r, n in enumerate(sizes):
        size_row[n] = r
        cand, b = policy._minimal(int(n))
        idx.append(np.asarray(cand, np.int64))
        bound.append(np.asarray(b, np.float64))
        ptr.append(ptr[-1] + len(cand))
    until0 = np.where(policy._foreign, np.inf, -np.inf)
    offsets = np.r_[0, np.cumsum(jobs.nodes)].astype(np.int64)
    tabs = _tables(policy)
    usable_nodes = np.asarray(policy.usable, np.bool_)
    state = _new_state(len(jobs), topo.n_nodes, int(st.n_classes(topo)), len(tabs[0]), usable_nodes, until0, offsets,
                       tabs[8])
    # numba compiles one version per argument type, and a read-only or strided array is a type
    # of its own: job columns read from a table (polars' zero-copy NumPy views) are read-only, a
    # caller's arrays writable. Such columns are copied (values unchanged), so one compiled
    # version serves every caller (a second one cost ~31 s of compiling in a fresh checkout).
    submit, runtime, estimate, nodes = (np.require(a, requirements="CW") for a in
                                        (jobs.submit, jobs.runtime, jobs.estimate, jobs.nodes))
    args = (submit, runtime, estimate, nodes, size_class, queue == "easy", usable_nodes,
            int(topo.nodes_per_router), until0, tabs, np.asarray(ptr, np.int64),
            np.concatenate(idx) if idx else np.zeros(0, np.int64), np.concatenate(bound) if bound else np.zeros(0),
            size_row, offsets, state)
    status, started = _PAUSED, 0
    while status == _PAUSED:
        status, bad = _replay(*args, started + SLICE_JOBS)
        now_started = int(state[1][_STARTED])
        if progress is not None:
            progress(now_started - started)
        started = now_started
    if status == _UNPLACEABLE:
        raise unplaceable(policy, int(jobs.nodes[bad]))
    if status == _INCONSISTENT:
        raise RuntimeError(f"compiled prism replay: job {bad} fits at its shadow time but no placement was found")
    start, backfilled, shadow, alloc, prisms, order = state[0][:6]
    never = np.flatnonzero(np.isnan(start))
    if len(never):
        raise unplaceable(policy, int(jobs.nodes[never].max()), len(never))
    per_job = [alloc[offsets[j]:offsets[j + 1]] for j in range(len(jobs))]
    policy.started_prisms = [(per_job[j], tuple(int(v) for v in prisms[j])) for j in order[:started]]
    return Schedule(start, per_job, backfilled, shadow, jobs.runtime.copy())
