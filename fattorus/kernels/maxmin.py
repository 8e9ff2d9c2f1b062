"""Flow rates by weighted max-min fairness (progressive filling), on any topology's links.

A flow-level bandwidth model (issue 14): every flow crosses the links of its route
(``topo.routes``: ``(F, L)`` link ids, ``-1`` padded) and every directed link ``e`` has a
capacity ``c_e`` (``topo.link_bandwidth``, bytes/s or any unit: rates come out in it). The
weighted max-min fair rates ``r_f`` are the unique allocation in which no link carries more
than its capacity and no flow can get more without taking from a flow whose ``r / w`` is no
larger — equivalently, every flow crosses a saturated link on which its ``r_f / w_f`` is the
largest (its bottleneck).

Progressive filling computes them: all unfrozen flows grow together, flow ``f`` at speed
``w_f``; when a link saturates, the flows crossing it freeze. Done one saturation level at a
time (:func:`maxmin_rates_numpy`, the reference) that takes one round per distinct level —
167 for a 4D stencil on 4,096 scattered nodes of ft44, where :func:`maxmin_rates` takes 7
(bench row ``ft44_stencil4d``, 2026-11-27). :func:`maxmin_rates` freezes every *local*
bottleneck at once instead: with ``share_e = residual_e / W_e`` (residual capacity over the
weight of the open flows crossing ``e``), a link whose share is no larger than the share of
any link its open flows cross saturates at exactly that share in the filling (a link's
saturation level only grows as flows elsewhere freeze below it), so its flows freeze at
``w_f · share_e`` whatever else freezes in the same round. The rates are the same; the
rounds are the depth of the bottleneck chain. One round is whole-array work (scatter-adds
and scatter-mins over the route slots), a solve is a ``lax.while_loop``, and ``jax.vmap``
batches placements or scenarios.

Most flows freeze in the first rounds (81 % in the first on the benchmark's Cab instant), so
a solve runs in *stages*: once the open flows and their crossings fit arrays ``STAGE_FACTOR``
times shorter, they move there (in their order) and the rounds go on over them alone. A
frozen flow only ever added exact zeros to the per-link sums, so the rates are those of one
stage, bit for bit on a CPU; each stage is one more ``while_loop`` to compile.

A caller that wants only some flows' step time (``max bytes / rate``: the starting job of a
``speedup=model`` replay) passes their bytes as ``goal``: the solve then stops once that
maximum is known (see :func:`maxmin_rates`), after far fewer rounds.

Flows with an empty route (both ends on one node) cross no link: the network does not limit
them and their rate is ``inf``. Inactive flows (``active`` False: padding) get rate 0.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# The tolerances and the input check are shared with the compiled solvers, which do not load
# JAX (fattorus.kernels.maxmin_inputs); re-exported here under their old names.
from fattorus.kernels.maxmin_inputs import GOAL_MARGIN, RTOL, check_inputs as _check_inputs



class Rates(NamedTuple):
    """Result of :func:`maxmin_rates`: ``rate`` ``(F,)`` in capacity units (``inf`` for flows
    with no link, 0 for inactive ones; with a ``goal``, see there) and ``rounds``, the
    filling rounds used."""

    rate: jax.Array
    rounds: jax.Array


#: Spare slots past the last link that padding incidences point to, spread over several so
#: that the padding does not pile up on one accumulator entry (scatters serialise on it).
DUMP = 64


def bucket_size(n: int) -> int:
    """Array length for ``n`` flows or crossings: the next power of two, at least 64, so that
    one compilation of the solver serves every problem of that bucket."""
    return max(64, 1 << max(0, int(n) - 1).bit_length())


def flow_incidences(route_ids: np.ndarray, bucket: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Host-side compact incidence lists of padded routes, for :func:`maxmin_rates`:
    ``(inc_flow, inc_link)`` int32, one entry per (flow, link) crossing, in flow order.
    ``bucket``: padded to the next power of two (at least 64) so that a replay compiles the
    solver once per size bucket; a padding entry has flow 0 and link id ``-1 - k``
    (``k < DUMP``), which the solver sends to its spare slot ``E + k``."""
    route_ids = np.asarray(route_ids)
    valid = route_ids >= 0
    flow = np.repeat(np.arange(route_ids.shape[0], dtype=np.int32), valid.sum(axis=1))  # flow order
    link = route_ids[valid]
    n = len(flow)
    size = bucket_size(n) if bucket else n
    pad = size - n
    return (np.r_[flow, np.zeros(pad, flow.dtype)].astype(np.int32),
            np.r_[link, -1 - (np.arange(pad) % DUMP)].astype(np.int32))


#: Stages: once at most ``1 / STAGE_FACTOR`` of a stage's flows and crossings are still open,
#: the open ones are moved into arrays that much shorter and the rounds go on there — most
#: flows freeze in the first rounds (on the bench's Cab instant 81 % in the first), so the
#: later rounds no longer pay for them. Stages stop at ``stage_min_flows`` flows.
STAGE_FACTOR = 8
STAGE_MIN_FLOWS = 512


def _stage_sizes(F: int, C: int, min_flows: int) -> list[tuple[int, int]]:
    """(flows, crossings) array lengths of each stage, the whole problem first."""
    sizes = [(F, C)]
    while sizes[-1][0] // STAGE_FACTOR >= min_flows:
        f, c = sizes[-1]
        sizes.append((f // STAGE_FACTOR, max(1, c // STAGE_FACTOR)))
    return sizes




def maxmin_rates(route_ids: jax.Array, capacity: jax.Array, weight: jax.Array | None = None,
                 active: jax.Array | None = None, rtol: float = RTOL,
                 incidences: tuple[jax.Array, jax.Array] | None = None,
                 stage_min_flows: int = STAGE_MIN_FLOWS, goal: jax.Array | None = None) -> Rates:
    """Weighted max-min fair rates of flows over capacitated links (module docstring).
    Compiled; concrete inputs are checked first (:func:`_check_inputs`: one-line
    ``ValueError``), traced ones (inside ``jit``/``vmap``) are the caller's to check.

    Args:
      route_ids: ``(F, L)`` link ids per flow, ``-1`` padded.
      capacity: ``(E,)`` link capacities (>= 0; a flow crossing a link of capacity 0 gets rate
        0), e.g. bytes/s; sets the dtype of the rates.
      weight: ``(F,)`` positive weights (default 1: plain max-min fairness).
      active: ``(F,)`` bool, flows that exist (default all).
      rtol: relative residual below which a link counts as saturated.
      incidences: optional ``(inc_flow, inc_link)`` from :func:`flow_incidences` (the same
        routes, compacted on the host): the per-link sums then scatter only real crossings,
        about twice as fast as scattering every padded slot of ``route_ids``; same rates.
      stage_min_flows: the shortest stage (flows); the open flows move into arrays
        ``STAGE_FACTOR`` times shorter while that is at least this long (module docstring).
        Only the speed depends on it, not the rates.
      goal: optional ``(F,)`` bytes of the flows whose step time (``max bytes / rate``) is
        all that is wanted, 0 for the others. The solve then stops as soon as every goal
        flow still open provably takes less time than the slowest settled goal flow: an open
        flow's final rate is at least its weight times its tightest link's share now (a share
        never falls as flows freeze below it), so with ``bytes / (weight · share)`` under
        ``(1 - GOAL_MARGIN)`` times the slowest settled time the maximum is already known,
        whatever the weights. Settled flows have their
        exact rates (the rounds up to the stop are those of the full solve); flows still
        open get that lower bound, so :func:`step_time` over the goal flows equals the full
        solve's. Other flows' rates are then meaningless.

    Returns:
      :class:`Rates`.
    """
    # Nested lists are taken as arrays (the compiled solve reads shapes).
    route_ids, capacity, weight = (np.asarray(x) if isinstance(x, (list, tuple)) else x
                                   for x in (route_ids, capacity, weight))
    _check_inputs(route_ids, capacity, weight, incidences)
    return _maxmin_rates(route_ids, capacity, weight, active, rtol, incidences, stage_min_flows, goal)


@partial(jax.jit, static_argnames=("rtol", "stage_min_flows"))
def _maxmin_rates(route_ids: jax.Array, capacity: jax.Array, weight: jax.Array | None, active: jax.Array | None,
                  rtol: float, incidences: tuple[jax.Array, jax.Array] | None, stage_min_flows: int,
                  goal: jax.Array | None) -> Rates:
    """:func:`maxmin_rates`, compiled."""
    capacity = jnp.asarray(capacity)
    dtype = capacity.dtype if jnp.issubdtype(capacity.dtype, jnp.floating) else jnp.float32
    capacity = capacity.astype(dtype)
    F, E = route_ids.shape[0], capacity.shape[0]
    weight = jnp.ones(F, dtype) if weight is None else jnp.asarray(weight, dtype)
    active = jnp.ones(F, bool) if active is None else jnp.asarray(active, bool)
    valid = route_ids >= 0
    slot = jnp.where(valid, route_ids, E)  # for the per-flow gathers: padding reads a dump link E
    n_links = valid.sum(axis=1)
    if incidences is None:
        L = route_ids.shape[1]
        inc_flow = jnp.broadcast_to(jnp.arange(F, dtype=jnp.int32)[:, None], (F, L)).reshape(-1)
        inc_link = jnp.where(valid, route_ids, -1 - jnp.arange(F * L).reshape(F, L) % DUMP).reshape(-1)
    else:
        inc_flow, inc_link = (jnp.asarray(x, jnp.int32) for x in incidences)
    inc_link = jnp.where(inc_link >= 0, inc_link, E - 1 - inc_link)  # padding: spare slots E .. E + DUMP - 1
    sizes = _stage_sizes(F, inc_flow.shape[0], stage_min_flows)
    if incidences is None:  # every stage's crossings are its flows' padded route slots
        L = route_ids.shape[1]
        sizes = [(f, f * L) for f, _ in sizes]
    ctx = _Solve(E, dtype, rtol, tuple(sizes), incidences is None, F + 1)
    # Inactive flows and flows that cross no link are settled before the first round.
    frozen0 = ~active | (n_links == 0)
    goal = None if goal is None else jnp.where(frozen0, 0, jnp.asarray(goal, dtype))
    flows = _Flows(slot, weight, goal, n_links, inc_flow, inc_link)
    load0 = _per_link(ctx, flows, jnp.where(frozen0, 0, weight)[:, None])[:, 0]
    rate, rounds = _stage(ctx, 0, flows, frozen0, capacity, load0, jnp.int32(0), jnp.zeros((), dtype))
    return Rates(jnp.where(active & (n_links == 0), jnp.inf, rate), rounds)




class _Solve(NamedTuple):
    """What every stage of one :func:`maxmin_rates` trace shares (static): the link count,
    the float dtype, the saturation tolerance, each stage's (flows, crossings) lengths and
    whether the crossings are the padded route slots."""

    E: int
    dtype: object
    rtol: float
    sizes: tuple[tuple[int, int], ...]
    padded: bool  # crossings = the flows' route slots, padding included (no compaction needed)
    # Every round freezes at least the open flows of the tightest link, so F rounds finish any
    # solve; the cap only keeps a traced call on bad input (checked where concrete) from
    # looping forever.
    max_rounds: int


class _Flows(NamedTuple):
    """One stage's flows: link slots ``(F, L)`` (``E``: none), weights, goal bytes (or None),
    link counts, and the crossings ``(inc_flow, inc_link)`` (padding on spare slots ``>= E``)."""

    slot: jax.Array
    weight: jax.Array
    goal: jax.Array | None
    n_links: jax.Array
    inc_flow: jax.Array
    inc_link: jax.Array


def _per_link(ctx: _Solve, flows: _Flows, values: jax.Array) -> jax.Array:
    """``(E, k)`` sums over each link's crossings of per-flow ``values`` ``(F, k)``."""
    acc = jnp.zeros((ctx.E + DUMP, values.shape[1]), ctx.dtype)
    return acc.at[flows.inc_link].add(values[flows.inc_flow])[:ctx.E]


def _shares(residual: jax.Array, load: jax.Array) -> jax.Array:
    """Each link's residual capacity over the weight of its open flows (``inf``: none open)."""
    return jnp.where(load > 0, residual / jnp.where(load > 0, load, 1), jnp.inf)


def _tightest(ctx: _Solve, share: jax.Array, slot: jax.Array, frozen: jax.Array) -> jax.Array:
    """Each open flow's tightest link share (``inf`` for frozen flows)."""
    return jnp.where(frozen, jnp.inf, jnp.concatenate([share, jnp.full(1, jnp.inf, ctx.dtype)])[slot].min(axis=1))


def _reached(goal: jax.Array, weight: jax.Array, frozen: jax.Array, tight: jax.Array,
             slowest: jax.Array) -> jax.Array:
    """Whether no open goal flow can take longer than ``slowest`` (:func:`maxmin_rates`' ``goal``):
    an open flow's rate is at least ``weight · tight`` (its share of its tightest link), so it
    takes at most ``goal / (weight · tight)``. (Bounding by ``goal / tight`` alone stopped too
    early with weights below 1; with unit weights the two are the same floats.)"""
    bound = jnp.where(~frozen & (goal > 0), goal / (weight * tight), 0).max(initial=0)
    return bound <= slowest * (1 - GOAL_MARGIN)


def _round(ctx: _Solve, flows: _Flows, state: tuple) -> tuple:
    """One filling round: every local bottleneck freezes its flows at their share of it."""
    rate, frozen, residual, load, share, tight, rounds, slowest, done = state
    # Per link the tightest link of any open flow crossing it.
    around = jnp.full(ctx.E + DUMP, jnp.inf, ctx.dtype).at[flows.inc_link].min(tight[flows.inc_flow])[:ctx.E]
    # A link no tighter than any link its flows cross is a bottleneck now: its flows freeze at
    # their share of it, whatever else freezes this round (module docstring).
    bottleneck = (load > 0) & (share <= around * (1 + ctx.rtol))
    hit = ~frozen & jnp.concatenate([bottleneck, jnp.zeros(1, bool)])[flows.slot].any(axis=1)
    new = jnp.where(hit, flows.weight * tight, 0)
    frozen = frozen | hit
    # One scatter for both: the rates just fixed (off the residuals) and the weight of the
    # flows still open (next round's load, summed afresh).
    sums = _per_link(ctx, flows, jnp.stack([new, jnp.where(frozen, 0, flows.weight)], axis=1))
    residual = jnp.maximum(residual - sums[:, 0], 0)
    load = sums[:, 1]
    share = _shares(residual, load)
    tight = _tightest(ctx, share, flows.slot, frozen)
    if flows.goal is not None:
        goal = flows.goal
        settled = jnp.where(hit & (goal > 0), goal / jnp.where(new > 0, new, 0), 0)  # 0 rate: inf
        slowest = jnp.maximum(slowest, settled.max(initial=0))
        done = _reached(goal, flows.weight, frozen, tight, slowest)
    return jnp.where(hit, new, rate), frozen, residual, load, share, tight, rounds + 1, slowest, done


def _stage(ctx: _Solve, k: int, flows: _Flows, frozen: jax.Array, residual: jax.Array, load: jax.Array,
           rounds: jax.Array, slowest: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Rounds over stage ``k``'s flows (``frozen``: padding and settled flows) until all are
    frozen (or the goal is reached), or until the open ones fit the next stage, which then
    finishes them. Returns the stage's rates and the rounds so far."""
    last = k + 1 == len(ctx.sizes)
    next_flows, next_crossings = (0, 0) if last else ctx.sizes[k + 1]

    def cond(state):
        frozen, rounds, done = state[1], state[6], state[-1]
        go = ~frozen.all() & ~done & (rounds < ctx.max_rounds)
        if not last:  # go on here until the open flows fit the next stage
            fits = (~frozen).sum() <= next_flows
            if not ctx.padded:  # compact crossings: the open flows' link counts must fit too
                fits &= jnp.where(frozen, 0, flows.n_links).sum() <= next_crossings
            go &= ~fits
        return go

    rate = jnp.zeros(flows.slot.shape[0], ctx.dtype)
    share = _shares(residual, load)
    tight = _tightest(ctx, share, flows.slot, frozen)
    done = jnp.bool_(False) if flows.goal is None else _reached(flows.goal, flows.weight, frozen, tight, slowest)
    rate, frozen, residual, load, share, tight, rounds, slowest, done = jax.lax.while_loop(
        cond, partial(_round, ctx, flows), (rate, frozen, residual, load, share, tight, rounds, slowest, done))
    if flows.goal is not None:  # flows still open (stopped at the goal): their rate's lower bound
        rate = jnp.where(frozen, rate, flows.weight * tight)
    if last:
        return rate, rounds
    if flows.goal is None:
        return _descend(ctx, k, flows, rate, frozen, residual, load, rounds, slowest)
    # Stopped at the goal: nothing left to solve, the next stages are skipped.
    return jax.lax.cond(done, lambda: (rate, rounds),
                        lambda: _descend(ctx, k, flows, rate, frozen, residual, load, rounds, slowest))


def _descend(ctx: _Solve, k: int, flows: _Flows, rate: jax.Array, frozen: jax.Array, residual: jax.Array,
             load: jax.Array, rounds: jax.Array, slowest: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The open flows and their crossings, in their order, into stage ``k + 1``'s arrays,
    which finishes them: frozen flows add exact zeros to every per-link sum, so the rounds go
    on unchanged."""
    E = ctx.E
    next_flows, next_crossings = ctx.sizes[k + 1]
    n = flows.slot.shape[0]
    is_open = ~frozen
    pos = jnp.cumsum(is_open) - 1
    ids = jnp.full(next_flows, n, jnp.int32).at[jnp.where(is_open, pos, next_flows)].set(
        jnp.arange(n, dtype=jnp.int32), mode="drop")  # stage flow -> this stage's flow (n: none)
    real = ids < n
    src = jnp.minimum(ids, n - 1)
    slot = jnp.where(real[:, None], flows.slot[src], E)
    if ctx.padded:  # the moved flows' route slots, flow by flow: each link's crossings keep their order
        L = slot.shape[1]
        inc_flow = jnp.repeat(jnp.arange(next_flows, dtype=jnp.int32), L)
        inc_link = jnp.where(slot < E, slot, E + jnp.arange(next_flows * L, dtype=jnp.int32).reshape(next_flows, L)
                             % DUMP).reshape(-1)
    else:
        crossing_open = is_open[flows.inc_flow] & (flows.inc_link < E)
        to = jnp.where(crossing_open, jnp.cumsum(crossing_open) - 1, next_crossings)
        inc_flow = jnp.zeros(next_crossings, jnp.int32).at[to].set(pos[flows.inc_flow].astype(jnp.int32), mode="drop")
        inc_link = (E + jnp.arange(next_crossings, dtype=jnp.int32) % DUMP).at[to].set(flows.inc_link, mode="drop")
    moved = _Flows(
        slot=slot,
        weight=jnp.where(real, flows.weight[src], 1),
        goal=None if flows.goal is None else jnp.where(real, flows.goal[src], 0),
        n_links=jnp.where(real, flows.n_links[src], 0),
        inc_flow=inc_flow,
        inc_link=inc_link,
    )
    rate2, rounds = _stage(ctx, k + 1, moved, ~real, residual, load, rounds, slowest)
    return rate.at[ids].set(rate2, mode="drop"), rounds


def maxmin_rates_numpy(route_ids: np.ndarray, capacity: np.ndarray, weight: np.ndarray | None = None,
                       rtol: float = RTOL) -> tuple[np.ndarray, int]:
    """The same progressive filling in plain NumPy, one round per loop iteration (the
    benchmark's reference; every flow active). Returns ``(rates, rounds)``."""
    route_ids = np.asarray(route_ids)
    capacity = np.asarray(capacity, np.float64)
    F, E = route_ids.shape[0], len(capacity)
    weight = np.ones(F) if weight is None else np.asarray(weight, np.float64)
    valid = route_ids >= 0
    slot = np.where(valid, route_ids, E)
    rate = np.where(valid.any(axis=1), 0.0, np.inf)
    frozen = ~valid.any(axis=1)
    residual = capacity.copy()
    rounds = 0
    while not frozen.all():
        w_open = np.where(frozen, 0.0, weight)
        load = np.bincount(slot.ravel(), weights=np.where(valid, w_open[:, None], 0).ravel(), minlength=E + 1)[:E]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(load > 0, residual / load, np.inf)
        step = share.min()
        rate += w_open * step
        residual = np.maximum(residual - step * load, 0)
        saturated = (load > 0) & ((residual <= rtol * capacity) | (share <= step * (1 + rtol)))
        frozen |= np.r_[saturated, False][slot].any(axis=1)
        rounds += 1
    return rate, rounds


def step_time(rate: jax.Array, nbytes: jax.Array, owner: jax.Array, n_owners: int) -> jax.Array:
    """Communication time of one step per owner (job or process): the slowest of its flows,
    ``max_f nbytes_f / rate_f`` over the flows it owns (``owner`` ``(F,)`` ids in
    ``[0, n_owners)``, ``-1``: none), seconds when rates are bytes/s. Flows at rate ``inf``
    (no link) take no time; an owner without flows gets 0.

    Why the maximum: in a bulk-synchronous step a process waits for all its messages, and the
    job for its slowest process. The rates are the steady-state ones: flows that finish early
    do not hand their bandwidth on (a flow-level model's simplification, see the docs).
    """
    t = jnp.where(jnp.isinf(rate), 0.0, jnp.asarray(nbytes, rate.dtype) / jnp.where(rate > 0, rate, 1))
    t = jnp.where((rate > 0) | jnp.isinf(rate), t, jnp.inf)  # a starved flow never finishes
    return jnp.zeros(n_owners, rate.dtype).at[jnp.where(owner >= 0, owner, n_owners)].max(t, mode="drop")


def step_time_host(rate: np.ndarray, nbytes: np.ndarray, owner: np.ndarray, n_owners: int) -> np.ndarray:
    """:func:`step_time` in NumPy, float32 as there (the same floats): for rates solved on the
    host (:func:`fattorus.kernels.maxmin_compiled.maxmin_rates_compiled`), with no JAX call to
    compile per flow count. Returns ``(n_owners,)`` float32."""
    rate = np.asarray(rate, np.float32)
    b = np.asarray(nbytes).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(np.isinf(rate), np.float32(0), b / np.where(rate > 0, rate, np.float32(1)))
    t = np.where((rate > 0) | np.isinf(rate), t, np.float32(np.inf)).astype(np.float32)  # starved: never
    out = np.zeros(n_owners, np.float32)
    np.maximum.at(out, owner, t)
    return out

