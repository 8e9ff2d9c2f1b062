"""Flow rates when links serve service levels in weighted round robin (issue 15).

InfiniBand switches keep one queue per service level (SL) on every output port and serve the
queues in weighted round robin (process-level QoS paper, Section 2.2): with levels of weights
7 and 2 on a busy link, 7 packets of the first for every 2 of the second. Its fluid limit,
which this module computes, is *hierarchical* max-min fairness:

* on every link ``e`` the levels present share the capacity ``c_e`` in proportion to their
  weights ``phi``, a level that needs less than its share giving the rest to the others
  (generalised processor sharing across levels: level ``l`` gets ``min(D_le, phi_l * lam_e)``
  with ``D_le`` its demand and ``lam_e`` the link's level water mark);
* inside a level the flows share max-min fairly (flow ``f`` gets ``min(d_f, mu_le)``);
* a flow's rate is the least of what the links on its route give it.

With one level this is plain max-min fairness (:func:`fattorus.kernels.maxmin.maxmin_rates`).
Why not reweight flows and reuse the weighted max-min solver: a flow's share of a link depends
on how many flows of its level are on *that* link and on whether they are held back elsewhere,
so no per-flow weight reproduces the round robin (``docs/qos.md`` has the counter-examples).

The solver (``docs/qos.md`` §1) iterates *bounds*. A flow's rate is the least of its marks
(what each of its links would give it uncapped, the others demanding what they really use),
and its demand on a link the least of its marks on its other links; marks fall as the others'
demands rise, so lower bounds on the demands give upper bounds on the marks and vice versa.
From demands in ``[0, inf]`` every round (:func:`_sandwich`) water-fills every link twice —
levels by weight, then max-min inside each (link, level) group — and the bounds tighten
monotonically; it stops when every flow's bounds agree to ``tol`` relative. Every ``chunk``
rounds the exact finish is tried (:func:`_polish`): the bottleneck (link, level) group each
flow's tightest upper mark names gives the rates as a square sparse linear system. Where the
bounds stall apart (a two-cycle of the antitone demand map), damped steps of that map between
them come first (:func:`_damped`). A finished candidate is accepted only if it meets the
definition (:func:`check`: every flow crosses a full link where it gets the most of its group
and its level the most per unit weight — the bottleneck property, checked independently in
the tests by :func:`bottleneck_violations`). If nothing passes within ``max_rounds``, the
result is the midpoint of the last bounds with ``converged`` False and ``gap`` their widest
relative width. Each round is array work (one sort of the ``(flow, link)`` incidences by group
and demand, on the host, and a sort of each link's levels by demand per weight).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

#: Service levels a port can tell apart: InfiniBand allows 16 (most hardware implements 8).
NUM_SLS = 16

DAMP = 0.5


class LevelRates(NamedTuple):
    """Result of :func:`service_level_rates`: ``rate`` ``(F,)`` in capacity units (``inf``:
    the flow crosses no link; 0: inactive), ``rounds`` used and ``converged``. When not
    converged, ``rate`` is the midpoint of the last bounds and ``gap`` their largest relative
    width (0 when converged)."""

    rate: jax.Array
    rounds: jax.Array
    converged: jax.Array
    gap: float = 0.0


def _host_argsort(group: np.ndarray, words: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Order of incidences already in group order by (group, demand): the demand (float64 as
    uint32 word pairs) squeezed into [0, 1) and added to twice the group id makes one key that
    is nearly sorted, which a stable sort finishes fast."""
    x = np.ascontiguousarray(words, dtype=np.uint32).view(np.float64).reshape(-1)
    s = float(np.ascontiguousarray(scale, dtype=np.uint32).view(np.float64)[0])
    with np.errstate(invalid="ignore"):
        frac = np.where(np.isinf(x), 1.0 - 1e-9, x / (x + s) * (1.0 - 1e-8))
    key = np.asarray(group, np.float64) * 2 + frac
    return np.argsort(key, kind="stable").astype(np.int32)


def _first_true(flag: jax.Array, group: jax.Array, n_groups: int) -> jax.Array:
    """Index (in the sorted order) of the first True per group; ``M`` where none."""
    m = flag.shape[0]
    idx = jnp.where(flag, jnp.arange(m), m)
    return jnp.full(n_groups, m, idx.dtype).at[group].min(idx)


def _responder(route_ids, capacity, level, phi, active, n_levels: int):
    """Build ``T`` for one network (see ``respond``) and the flows' ``valid`` mask."""
    dtype = capacity.dtype
    F, L = route_ids.shape
    E, S = capacity.shape[0], n_levels
    M = F * L
    valid = (route_ids >= 0) & active[:, None]
    has_links = valid.any(axis=1)
    link = jnp.where(valid, route_ids, E)
    group = (link * S + level[:, None]).reshape(-1)  # (link, level) of each incidence
    G = (E + 1) * S
    count = jnp.zeros(G, jnp.int32).at[group].add(valid.reshape(-1).astype(jnp.int32))
    start = jnp.cumsum(count) - count
    inf = jnp.asarray(jnp.inf, dtype)
    depth = max(1, int(np.ceil(np.log2(max(F, 2)))) + 1)
    by_group = jnp.argsort(group, stable=True).astype(jnp.int32)
    group_sorted = group[by_group].astype(jnp.int32)
    scale = jax.lax.bitcast_convert_type(jnp.mean(capacity).astype(jnp.float64), jnp.uint32)

    def respond(x):
        """Each flow's mark on each of its links (``(F, L)``, ``inf`` padded): what the link
        would give it, uncapped itself, if every other flow crossing it demanded exactly its
        entry of ``x`` ``(F, L)`` there. Monotone: larger demands of others, smaller marks."""
        d = jnp.where(valid, x, 0).reshape(-1)
        isinf = jnp.isinf(d)
        fin = jnp.where(isinf, 0, d)
        n_inf = jnp.zeros(G, jnp.int32).at[group].add(isinf.astype(jnp.int32))
        dem = jnp.zeros(G, dtype).at[group].add(fin)
        dem = jnp.where(n_inf > 0, inf, dem).reshape(E + 1, S)[:E]
        # Capacity of level l on link e when l's demand is unbounded (a flow of l uncapped).
        cap_level = _unbounded_level_caps(dem, phi, capacity)
        cap_level = jnp.concatenate([cap_level, jnp.full((1, S), inf, dtype)]).reshape(-1)
        # Inside the group: the others at x, the flow itself uncapped. With V(mu) = sum_g
        # min(x_g, mu) + mu over the whole group, the flow's mark solves V(mu) = C + min(x_f, mu).
        # Sort by (group, demand). The incidences are kept in group order (a fixed
        # permutation), so one key — group, then demand squeezed into [0, 1) — is nearly
        # sorted, which NumPy's stable sort does in a millisecond where XLA's CPU sort takes
        # tens (docs/qos.md, "speed").
        # The demands cross as raw 64-bit words: a callback may be handed float32 copies of
        # float64 operands when x64 is switched on only around the call.
        xs = jax.lax.bitcast_convert_type(jnp.asarray(d[by_group], jnp.float64), jnp.uint32)
        local = jax.pure_callback(_host_argsort, jax.ShapeDtypeStruct((M,), jnp.int32), group_sorted, xs, scale)
        order = by_group[local]
        g, ds = group[order], d[order]
        fs = jnp.where(jnp.isinf(ds), 0, ds)
        csum = jnp.cumsum(fs)
        base = (csum - fs)[jnp.minimum(start[g], M - 1)]
        upto = csum - base  # sum of the group's sorted demands up to and including this one
        pos = jnp.arange(M) - start[g]
        n = count[g]
        v = jnp.where(jnp.isinf(ds), inf, upto - ds + ds * (n - pos) + ds)  # V at this breakpoint
        # Standard mark of the group (the flow capped at x_f) first.
        before = upto - fs
        hh = (cap_level[g] - before) / jnp.maximum(n - pos, 1)
        first = _first_true(hh <= ds, g, G)
        mu0 = jnp.where(first < M, hh[jnp.minimum(first, M - 1)], inf)
        # Per incidence (unsorted): case x_f >= mu0 keeps mu0; else V(mu) = C + x_f.
        gi = group
        C = cap_level[gi]
        tau = C + jnp.where(isinf, 0, d)
        lo_i = start[gi]
        hi_i = start[gi] + count[gi]  # search the last breakpoint with V <= tau in [lo, hi)

        def step(_, lr):
            lo, hi = lr
            mid = (lo + hi) // 2
            open_ = lo < hi
            ok = open_ & (v[jnp.minimum(mid, M - 1)] <= tau)
            return jnp.where(ok, mid + 1, lo), jnp.where(ok | ~open_, hi, mid)

        lo, _ = jax.lax.fori_loop(0, depth, step, (lo_i, hi_i))
        k = lo - 1  # last sorted index with V <= tau, or start - 1
        has = k >= lo_i
        kk = jnp.clip(k, 0, M - 1)
        s_k = jnp.where(has, upto[kk], 0)
        rest = jnp.where(has, count[gi] - (kk - lo_i), count[gi] + 1)
        mu1 = (tau - s_k) / rest
        mu = jnp.where(isinf | (d >= mu0[gi]), mu0[gi], mu1)
        return jnp.where(valid, mu.reshape(F, L), inf)

    return respond, valid


def _unbounded_level_caps(demand: jax.Array, phi: jax.Array, capacity: jax.Array) -> jax.Array:
    """``(E, S)``: what level ``l`` gets on link ``e`` when its own demand is unbounded and the
    other levels demand ``demand`` — the weighted water-fill with ``l`` left out of the sums.

    One sort per link; then for every left-out level ``j`` and candidate position ``i`` of the
    sorted levels, the water mark if ``i`` is the first level not served in full:
    ``(c - sum of the demands before i, j excluded) / (weights from i on, j excluded, + phi_j)``.
    """
    E, S = demand.shape
    key = demand / phi
    order = jnp.argsort(key, axis=1)
    d = jnp.take_along_axis(demand, order, axis=1)
    w = phi[order]
    k = jnp.take_along_axis(key, order, axis=1)
    fin = jnp.where(jnp.isinf(d), 0, d)
    before = jnp.cumsum(fin, axis=1) - fin  # (E, S): demands before sorted position i
    from_i = jnp.cumsum(w[:, ::-1], axis=1)[:, ::-1]  # weights from position i on
    pos = jnp.arange(S)
    j_before_i = pos[:, None] < pos[None, :]  # (j, i)
    num = capacity[:, None, None] - (before[:, None, :] - jnp.where(j_before_i[None], fin[:, :, None], 0))
    den = from_i[:, None, :] - jnp.where(~j_before_i[None], w[:, :, None], 0) + w[:, :, None]
    h = num / den  # (E, j, i)
    flag = (pos[:, None] != pos[None, :])[None] & (h <= k[:, None, :])
    first = jnp.argmax(flag, axis=2)
    lam_first = jnp.take_along_axis(h, first[:, :, None], axis=2)[:, :, 0]
    # Nobody else short: the unbounded level takes what the others leave.
    lam_rest = (capacity[:, None] - (fin.sum(axis=1)[:, None] - fin)) / w
    lam = jnp.where(flag.any(axis=2), lam_first, lam_rest)
    out_sorted = w * lam
    return jnp.zeros((E, S), demand.dtype).at[jnp.arange(E)[:, None], order].set(out_sorted)


@partial(jax.jit, static_argnames=("n_levels",))
def _respond_once(route_ids, capacity, level, phi, active, x, n_levels: int):
    return _responder(route_ids, capacity, level, phi, active, n_levels)[0](x)


@partial(jax.jit, static_argnames=("n_levels",))
def _sandwich(route_ids, capacity, level, phi, active, dlo, dhi, n_levels: int, max_rounds, tol):
    """Up to ``max_rounds`` rounds of the bounds iteration from demand bounds ``dlo``/``dhi``
    ``(F, L)``. Returns ``(dlo, dhi, lo, hi, ahi, rounds, converged)``. ``max_rounds`` is
    traced: every ``chunk`` shares one compilation."""
    dtype = capacity.dtype
    F, L = route_ids.shape
    inf = jnp.asarray(jnp.inf, dtype)
    respond, valid = _responder(route_ids, capacity, level, phi, active, n_levels)
    has_links = valid.any(axis=1)

    def others_min(a):
        """For each route slot, the least entry among the flow's *other* slots (``inf``: none)."""
        srt = jnp.sort(a, axis=1)
        m1 = srt[:, 0]
        m2 = srt[:, 1] if L > 1 else jnp.full(F, inf, dtype)
        arg = jnp.argmin(a, axis=1)
        return jnp.where(jnp.arange(L)[None, :] == arg[:, None], m2[:, None], m1[:, None])

    # A flow's final rate is the least of its marks, and its demand on a link the least of its
    # marks on its *other* links. Bounds on those demands give bounds on the marks, and the
    # bounds tighten monotonically (docs/qos.md).
    def body(state):
        dlo, dhi, _, _, _, rounds = state
        ahi = respond(dlo)  # others demand at least dlo: marks are at most ahi
        dhi = jnp.minimum(dhi, others_min(ahi))
        alo = respond(dhi)  # ... at most dhi: marks are at least alo
        dlo = jnp.maximum(dlo, others_min(alo))
        return dlo, dhi, alo.min(axis=1), ahi.min(axis=1), ahi, rounds + 1

    def gap(lo, hi):
        return (hi - lo > tol * jnp.where(jnp.isinf(hi), 1, hi)) & has_links

    def cond(state):
        _, _, lo, hi, _, rounds = state
        return gap(lo, hi).any() & (rounds < max_rounds)

    init = (dlo, dhi, jnp.zeros(F, dtype), jnp.full(F, inf, dtype), jnp.full((F, L), inf, dtype), jnp.int32(0))
    dlo, dhi, lo, hi, ahi, rounds = jax.lax.while_loop(cond, body, init)
    return dlo, dhi, lo, hi, ahi, rounds, ~gap(lo, hi).any()


@partial(jax.jit, static_argnames=("n_levels",))
def _damped(route_ids, capacity, level, phi, active, d, dlo, dhi, n_levels: int, rounds, alpha):
    """``rounds`` damped steps of the demand map ``d -> others_min(marks(d))`` (its fixed point
    is the allocation), kept inside the bounds ``[dlo, dhi]``. Used where the bounds stall
    apart: they bracket the solution but no longer move (a two-cycle of the antitone map).
    Returns ``(d, marks(d))``."""
    dtype = capacity.dtype
    F, L = route_ids.shape
    inf = jnp.asarray(jnp.inf, dtype)
    respond, _ = _responder(route_ids, capacity, level, phi, active, n_levels)

    def others_min(a):
        srt = jnp.sort(a, axis=1)
        m2 = srt[:, 1] if L > 1 else jnp.full(F, inf, dtype)
        arg = jnp.argmin(a, axis=1)
        return jnp.where(jnp.arange(L)[None, :] == arg[:, None], m2[:, None], srt[:, :1])

    def body(_, d):
        target = others_min(respond(d))
        step = jnp.where(jnp.isinf(d) | jnp.isinf(target), target, d + alpha * (target - d))
        return jnp.clip(step, dlo, dhi)

    d = jax.lax.fori_loop(0, rounds, body, d)
    return d, respond(d)


def _polish(route_ids: np.ndarray, capacity: np.ndarray, level: np.ndarray, phi: np.ndarray,
            ahi: np.ndarray) -> np.ndarray | None:
    """Exact rates from the bottleneck structure the bounds point at, or None.

    Where the bounds close only slowly (they converge linearly through chains of links whose
    levels share alike), the structure is already plain: every flow's tightest upper mark
    names its bottleneck (link, level) group. Every flow then runs at its group's mark ``mu``,
    and the marks solve a square sparse linear system — per bottleneck group, its level's
    flows on its link sum to ``phi * lam`` (the link's level mark); per such link, all its
    flows sum to its capacity. The solution is accepted only if it passes the definition
    (:func:`check`)."""
    import warnings

    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    F, L = route_ids.shape
    S = len(phi)
    valid = route_ids >= 0
    fl = np.flatnonzero(valid.any(axis=1))
    slot = np.argmin(np.where(valid, ahi, np.inf), axis=1)
    be = route_ids[np.arange(F), slot]
    groups, gi = np.unique(be[fl].astype(np.int64) * S + level[fl], return_inverse=True)
    links, li = np.unique(groups // S, return_inverse=True)
    nG, nL = len(groups), len(links)
    inc_f, inc_s = np.nonzero(valid[fl])
    inc_link = route_ids[fl][inc_f, inc_s].astype(np.int64)
    inc_key = inc_link * S + level[fl][inc_f]
    mark = gi[inc_f]  # the unknown that is this incidence's flow's rate
    pos = np.searchsorted(groups, inc_key)
    in_group = (pos < nG) & (groups[np.minimum(pos, nG - 1)] == inc_key)
    lpos = np.searchsorted(links, inc_link)
    on = (lpos < nL) & (links[np.minimum(lpos, nL - 1)] == inc_link)
    rows = np.concatenate([pos[in_group], np.arange(nG), nG + lpos[on]])
    cols = np.concatenate([mark[in_group], nG + li, mark[on]])
    vals = np.concatenate([np.ones(in_group.sum()), -phi[groups % S], np.ones(on.sum())])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(nG + nL, nG + nL))
    b = np.concatenate([np.zeros(nG), capacity[links]])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = spsolve(A, b)
    except Exception:  # a singular structure: keep iterating instead
        return None
    if not np.isfinite(x).all():
        return None
    rate = np.full(F, np.inf)
    rate[fl] = x[gi]
    if len(check(route_ids, capacity, level, phi, rate)):
        return None
    return rate


def check(route_ids: np.ndarray, capacity: np.ndarray, level: np.ndarray, phi: np.ndarray, rate: np.ndarray,
          rtol: float = 1e-7) -> np.ndarray:
    """Flows that break the definition of the allocation (vectorised; :func:`bottleneck_violations`
    is the plain-loop version the tests use): a negative rate, an overloaded link, or no link
    that is full where the flow gets the most of its (link, level) group and its level the
    most per unit weight. Returns their ids."""
    F, L = route_ids.shape
    E, S = len(capacity), len(phi)
    valid = route_ids >= 0
    link = np.where(valid, route_ids, E)
    r = np.broadcast_to(rate[:, None], (F, L))
    load = np.zeros(E + 1)
    np.add.at(load, link[valid], r[valid])
    group = link * S + level[:, None]
    gmax = np.zeros((E + 1) * S)
    np.maximum.at(gmax, group[valid], r[valid])
    gsum = np.zeros((E + 1) * S)
    np.add.at(gsum, group[valid], r[valid])
    norm = (gsum.reshape(E + 1, S) / phi[None, :])
    lmax = norm.max(axis=1)
    full = load[:E] >= capacity * (1 - rtol)
    ok_slot = (valid & np.concatenate([full, [False]])[link]
               & (r >= gmax[group] * (1 - rtol))
               & (norm.reshape(-1)[group] >= lmax[link] * (1 - rtol)))
    over = load[:E] > capacity * (1 + rtol)
    bad = (valid.any(axis=1) & ~ok_slot.any(axis=1)) | (valid & np.concatenate([over, [False]])[link]).any(axis=1)
    bad |= valid.any(axis=1) & (rate < 0)
    return np.flatnonzero(bad)


def _check_inputs(route_ids: np.ndarray, capacity: np.ndarray, level: np.ndarray | None,
                  level_weight: np.ndarray | None, active: np.ndarray | None, max_rounds: int = 1) -> None:
    """One-line ``ValueError`` for inputs no solve can mean (as
    :func:`fattorus.kernels.maxmin._check_inputs`): a link id past the capacity vector (it
    landed on a padding link) or below -1, a negative or NaN capacity, a level outside
    ``0 .. len(level_weight) - 1`` (past the weights it overloaded a link) or not a whole
    number, a weight that is not a positive finite number (0 gave rate 0, a negative one
    ``-inf``, NaN ``inf``), per-flow arrays of the wrong shape, and ``max_rounds`` below 1."""
    if route_ids.ndim != 2:
        raise ValueError(f"route_ids: an (F, L) array of link ids, got shape {route_ids.shape}")
    if route_ids.size and not np.issubdtype(route_ids.dtype, np.integer):  # 0.7 was read as link 0
        raise ValueError(f"route_ids: link ids must be integers, got {route_ids.dtype}")
    F, E = route_ids.shape[0], int(np.shape(capacity)[0]) if np.ndim(capacity) == 1 else -1
    if E < 0:
        raise ValueError(f"capacity: one per link, an (E,) array, got shape {np.shape(capacity)}")
    if route_ids.size and int(route_ids.max()) >= E:
        raise ValueError(f"route_ids: link id {int(route_ids.max())} past the {E} links of capacity")
    if route_ids.size and int(route_ids.min()) < -1:  # read as padding: no link, rate inf
        raise ValueError(f"route_ids: link id {int(route_ids.min())}; link ids run from 0 (-1 pads)")
    if not (np.asarray(capacity, np.float64) >= 0).all():  # NaN fails too
        raise ValueError("capacity: every link's capacity must be a number >= 0")
    S = 1
    if level_weight is not None:
        w = np.asarray(level_weight, np.float64)
        if w.ndim != 1 or len(w) == 0:
            raise ValueError(f"level_weight: one per level, an (S,) array, got shape {w.shape}")
        if not (np.isfinite(w) & (w > 0)).all():
            raise ValueError("level_weight: every level's weight must be a positive finite number")
        S = len(w)
    if level is not None:
        lv = np.asarray(level)
        if lv.shape != (F,):
            raise ValueError(f"level: one per flow, ({F},), got shape {lv.shape}")
        try:
            lvf = lv.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"level: every flow's level must be a whole number, got {lv.dtype}") from None
        if not (np.isfinite(lvf) & (lvf == np.round(lvf))).all():
            raise ValueError("level: every flow's level must be a whole number")
        if lv.size and (lvf.min() < 0 or lvf.max() >= S):
            bad = lvf.min() if lvf.min() < 0 else lvf.max()
            raise ValueError(f"level: level {int(bad)} outside 0 .. {S - 1} (one weight per level in level_weight)")
    if active is not None and np.shape(active) != (F,):
        raise ValueError(f"active: one per flow, ({F},), got shape {np.shape(active)}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, (int, np.integer)) or max_rounds < 1:
        raise ValueError(f"max_rounds: a whole number >= 1, got {max_rounds!r}")  # 0 left no bounds to return


def service_level_rates(route_ids, capacity, level=None, level_weight=None, active=None,
                        max_rounds: int = 2000, tol: float = 1e-6, chunk: int = 40) -> LevelRates:
    """Rates of flows over links that serve service levels in weighted round robin.

    Args:
      route_ids: ``(F, L)`` link ids per flow, ``-1`` padded (``topo.routes``).
      capacity: ``(E,)`` link capacities (>= 0), e.g. bytes/s: rates come out in this unit.
      level: ``(F,)`` service level of each flow, ``0..S-1`` (default: all 0).
      level_weight: ``(S,)`` positive finite weight of each level (default: one level of weight 1).
      active: ``(F,)`` bool, flows that exist (default all).
      max_rounds: cap on the bounds rounds; ``converged`` says whether the rates are final.
      tol: relative gap between every flow's bounds under which the iteration has converged.
      chunk: rounds between attempts to finish exactly from the bottleneck structure.

    Returns:
      :class:`LevelRates`, float64 (computed with 64-bit floats: the allocations are
      differences of prefix sums).

    Raises:
      ValueError: one line naming the argument, for inputs no solve can mean (:func:`_check_inputs`).
    """
    _check_inputs(np.asarray(route_ids), capacity, level, level_weight, active, max_rounds)
    with jax.enable_x64(True):
        route_np = np.asarray(route_ids).astype(np.int32)
        F = route_np.shape[0]
        cap_np = np.asarray(capacity, np.float64)
        phi_np = np.ones(1) if level_weight is None else np.asarray(level_weight, np.float64)
        # Levels padded to a power of two (unused levels are absent everywhere): few compilations.
        S = 1 << (len(phi_np) - 1).bit_length()
        phi_np = np.concatenate([phi_np, np.ones(S - len(phi_np))])
        lv_np = np.zeros(F, np.int32) if level is None else np.asarray(level).astype(np.int32)
        act_np = np.ones(F, bool) if active is None else np.asarray(active, bool)
        if F == 0:
            return LevelRates(np.zeros(0), np.int32(0), np.bool_(True), 0.0)
        route_p, cap_p, lv_p = _padded(route_np, cap_np, lv_np, act_np)
        Fp, L = route_p.shape
        args = (jnp.asarray(route_p), jnp.asarray(cap_p), jnp.asarray(lv_p), jnp.asarray(phi_np), jnp.ones(Fp, bool))
        # Typed float64 (not weak): the bounds a chunk returns are, so the next chunk reuses
        # the first one's compilation instead of compiling again.
        dlo, dhi = jnp.zeros((Fp, L), jnp.float64), jnp.full((Fp, L), jnp.inf, jnp.float64)
        done, total, rate = False, 0, None
        prev_gap, d = None, None
        while not done and total < max_rounds:
            dlo, dhi, lo, hi, ahi, rounds, done = _sandwich(*args, dlo, dhi, S, chunk, jnp.float64(tol))
            total += int(rounds)
            done = bool(done)
            rate = np.asarray(lo)
            if done:
                break
            exact = _polish(route_p, cap_p, lv_p, phi_np, np.asarray(ahi))
            if exact is not None:
                rate, done = exact, True
                break
            hi_np = np.asarray(hi)
            with np.errstate(invalid="ignore", divide="ignore"):
                gap = float(np.nanmax(np.where(np.isfinite(hi_np) & (hi_np > 0), (hi_np - rate) / hi_np, 0)))
            if prev_gap is not None and gap >= prev_gap * (1 - 1e-9):
                # The bounds stalled apart: damped steps from between them, then the exact finish.
                if d is None:
                    d = jnp.where(jnp.isinf(dhi), dlo * 2, 0.5 * (dlo + dhi))
                d, marks = _damped(*args, d, dlo, dhi, S, chunk, jnp.float64(0.5))
                total += chunk
                marks = np.asarray(marks)
                # The damped point itself, if it meets the definition, else its structure.
                candidate = np.where((route_p >= 0).any(axis=1), marks.min(axis=1), np.inf)
                if len(check(route_p, cap_p, lv_p, phi_np, candidate, rtol=max(tol, 1e-7))) == 0:
                    rate, done = candidate, True
                    break
                exact = _polish(route_p, cap_p, lv_p, phi_np, marks)
                if exact is not None:
                    rate, done = exact, True
            prev_gap = gap
        width = 0.0
        if not done:
            rate, width = _midpoint(np.asarray(lo), np.asarray(hi))
        rate = np.where((route_p[:F] >= 0).any(axis=1), rate[:F], np.inf)
        rate = np.where(act_np, rate, 0.0)
        return LevelRates(rate, np.int32(total), np.bool_(done), width)


def _midpoint(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, float]:
    """An unconverged solve's rates, the midpoint of its last bounds (``lo`` where no upper
    bound is finite), and how wide the bounds still are: their largest gap relative to the
    upper bound."""
    finite = np.isfinite(hi) & (hi > 0)
    rate = np.where(finite, 0.5 * (lo + np.where(finite, hi, 0)), lo)
    with np.errstate(invalid="ignore"):  # inf - inf where no bound is finite (masked out)
        width = float(np.max(np.where(finite, (hi - lo) / np.where(finite, hi, 1), 0)))
    return rate, width


def _padded(route_ids: np.ndarray, capacity: np.ndarray, level: np.ndarray,
            active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes (inactive flows: no links), capacities and levels padded to powers of two —
    one compilation serves many sizes; padding flows cross no link, padding links have
    capacity 1."""
    F, L = route_ids.shape
    Fp, Ep = _bucket(F), _bucket(len(capacity))
    route_p = np.full((Fp, L), -1, np.int32)
    route_p[:F] = np.where(active[:, None], route_ids, -1)
    cap_p = np.ones(Ep)
    cap_p[:len(capacity)] = capacity
    lv_p = np.zeros(Fp, np.int32)
    lv_p[:F] = level
    return route_p, cap_p, lv_p


def _bucket(n: int) -> int:
    return max(8, 1 << (max(n, 1) - 1).bit_length())


def bottleneck_violations(route_ids, capacity, level, level_weight, rate, rtol: float = 1e-6) -> np.ndarray:
    """Flows for which the rates are *not* a hierarchical max-min allocation (an independent,
    definition-level check in plain NumPy, used by the tests): a link carries more than its
    capacity, or a flow has no link that is saturated, where no flow of its level gets more
    and no level gets more per unit of weight than its level. Returns the offending flow ids
    (link overloads are reported as every flow crossing the link)."""
    route_ids = np.asarray(route_ids)
    capacity = np.asarray(capacity, float)
    level = np.asarray(level)
    phi = np.asarray(level_weight, float)
    rate = np.asarray(rate, float)
    E = len(capacity)
    bad: set[int] = set()
    load = np.zeros(E)
    for f, row in enumerate(route_ids):
        for e in row[row >= 0]:
            load[e] += rate[f]
    over = load > capacity * (1 + rtol)
    for f, row in enumerate(route_ids):
        links = row[row >= 0]
        if len(links) == 0:
            continue
        if over[links].any():
            bad.add(f)
            continue
        ok = False
        for e in links:
            if load[e] < capacity[e] * (1 - rtol):
                continue
            on = [g for g, r in enumerate(route_ids) if e in r]
            same = [g for g in on if level[g] == level[f]]
            if max(rate[g] for g in same) > rate[f] * (1 + rtol):
                continue
            per_level: dict[int, float] = {}
            for g in on:
                per_level[int(level[g])] = per_level.get(int(level[g]), 0.0) + rate[g]
            mine = per_level[int(level[f])] / phi[level[f]]
            if any(v / phi[lv] > mine * (1 + rtol) for lv, v in per_level.items()):
                continue
            ok = True
            break
        if not ok:
            bad.add(f)
    return np.array(sorted(bad), dtype=np.int64)
