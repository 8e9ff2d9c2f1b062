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
thousands for a scattered 4,096-node job. :func:`maxmin_rates` freezes every *local*
bottleneck at once instead: with ``share_e = residual_e / W_e`` (residual capacity over the
weight of the open flows crossing ``e``), a link whose share is no larger than the share of
any link its open flows cross saturates at exactly that share in the filling (a link's
saturation level only grows as flows elsewhere freeze below it), so its flows freeze at
``w_f · share_e`` whatever else freezes in the same round. The rates are the same; the
rounds are the depth of the bottleneck chain. One round is whole-array work (scatter-adds
and scatter-mins over the route slots), a solve is a ``lax.while_loop``, and ``jax.vmap``
batches placements or scenarios.

Flows with an empty route (both ends on one node) cross no link: the network does not limit
them and their rate is ``inf``. Inactive flows (``active`` False: padding) get rate 0.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

#: A link counts as saturated once its residual capacity is below this share of its capacity
#: (why not zero: the residual is a difference of float sums).
RTOL = 1e-6


class Rates(NamedTuple):
    """Result of :func:`maxmin_rates`: ``rate`` ``(F,)`` in capacity units (``inf`` for flows
    with no link, 0 for inactive ones) and ``rounds``, the filling rounds used."""

    rate: jax.Array
    rounds: jax.Array


#: Spare slots past the last link that padding incidences point to, spread over several so
#: that the padding does not pile up on one accumulator entry (scatters serialise on it).
DUMP = 64


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
    size = max(64, 1 << max(0, n - 1).bit_length()) if bucket else n
    pad = size - n
    return (np.r_[flow, np.zeros(pad, flow.dtype)].astype(np.int32),
            np.r_[link, -1 - (np.arange(pad) % DUMP)].astype(np.int32))


@partial(jax.jit, static_argnames=("rtol",))
def maxmin_rates(route_ids: jax.Array, capacity: jax.Array, weight: jax.Array | None = None,
                 active: jax.Array | None = None, rtol: float = RTOL,
                 incidences: tuple[jax.Array, jax.Array] | None = None) -> Rates:
    """Weighted max-min fair rates of flows over capacitated links (module docstring).

    Args:
      route_ids: ``(F, L)`` link ids per flow, ``-1`` padded.
      capacity: ``(E,)`` link capacities (> 0), e.g. bytes/s; sets the dtype of the rates.
      weight: ``(F,)`` positive weights (default 1: plain max-min fairness).
      active: ``(F,)`` bool, flows that exist (default all).
      rtol: relative residual below which a link counts as saturated.
      incidences: optional ``(inc_flow, inc_link)`` from :func:`flow_incidences` (the same
        routes, compacted on the host): the per-link sums then scatter only real crossings,
        about twice as fast as scattering every padded slot of ``route_ids``; same rates.

    Returns:
      :class:`Rates`.
    """
    capacity = jnp.asarray(capacity)
    dtype = capacity.dtype if jnp.issubdtype(capacity.dtype, jnp.floating) else jnp.float32
    capacity = capacity.astype(dtype)
    F, E = route_ids.shape[0], capacity.shape[0]
    weight = jnp.ones(F, dtype) if weight is None else jnp.asarray(weight, dtype)
    active = jnp.ones(F, bool) if active is None else jnp.asarray(active, bool)
    valid = route_ids >= 0
    slot = jnp.where(valid, route_ids, E)  # for the per-flow gathers: padding reads a dump link E
    has_links = valid.any(axis=1)
    if incidences is None:
        L = route_ids.shape[1]
        inc_flow = jnp.broadcast_to(jnp.arange(F, dtype=jnp.int32)[:, None], (F, L)).reshape(-1)
        inc_link = jnp.where(valid, route_ids, -1 - jnp.arange(F * L).reshape(F, L) % DUMP).reshape(-1)
    else:
        inc_flow, inc_link = (jnp.asarray(x, jnp.int32) for x in incidences)
    inc_link = jnp.where(inc_link >= 0, inc_link, E - 1 - inc_link)  # padding: spare slots E .. E + DUMP - 1

    def per_link(values: jax.Array) -> jax.Array:
        """``(E, k)`` sums over each link's crossings of per-flow ``values`` ``(F, k)``."""
        return jnp.zeros((E + DUMP, values.shape[1]), dtype).at[inc_link].add(values[inc_flow])[:E]

    def cond(state):
        return ~state[1].all()

    def body(state):
        rate, frozen, residual, load, rounds = state
        share = jnp.where(load > 0, residual / jnp.where(load > 0, load, 1), jnp.inf)
        # Each open flow's tightest link, and per link the tightest link of any flow crossing it.
        tight = jnp.where(frozen, jnp.inf, jnp.concatenate([share, jnp.full(1, jnp.inf, dtype)])[slot].min(axis=1))
        around = jnp.full(E + DUMP, jnp.inf, dtype).at[inc_link].min(tight[inc_flow])[:E]
        # A link no tighter than any link its flows cross is a bottleneck now: its flows freeze
        # at their share of it, whatever else freezes this round (module docstring).
        bottleneck = (load > 0) & (share <= around * (1 + rtol))
        hit = ~frozen & jnp.concatenate([bottleneck, jnp.zeros(1, bool)])[slot].any(axis=1)
        new = jnp.where(hit, weight * tight, 0)
        frozen = frozen | hit
        # One scatter for both: the rates just fixed (off the residuals) and the weight of the
        # flows still open (next round's load, summed afresh).
        sums = per_link(jnp.stack([new, jnp.where(frozen, 0, weight)], axis=1))
        residual = jnp.maximum(residual - sums[:, 0], 0)
        return jnp.where(hit, new, rate), frozen, residual, sums[:, 1], rounds + 1

    # Inactive flows and flows that cross no link are settled before the first round.
    rate0 = jnp.where(active & ~has_links, jnp.inf, 0).astype(dtype)
    frozen0 = ~active | ~has_links
    load0 = per_link(jnp.where(frozen0, 0, weight)[:, None])[:, 0]
    rate, _, _, _, rounds = jax.lax.while_loop(cond, body, (rate0, frozen0, capacity, load0, jnp.int32(0)))
    return Rates(rate, rounds)


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
