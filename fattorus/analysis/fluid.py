"""Flow finish times in a fluid model: max-min rates re-solved each time flows finish.

The steady-rate step time of :func:`fattorus.kernels.maxmin.step_time` gives every flow the
max-min rate of the moment all flows start and keeps it to the end: a flow that finishes
early never hands its bandwidth on, so a flow sharing a link with many short flows is timed
as if they never left (docs/bandwidth-model.md: why Pairs loses most there). Here the flows
drain instead. All start at time 0 with their bytes; the weighted max-min rates of the flows
still open are solved (:func:`fattorus.kernels.maxmin.maxmin_rates`, the same solver); time
advances to the earliest finish; the flows that finish then leave, and the rates are solved
again — one event per distinct finish time, at most one per flow. This is what flow-level
network simulators do between packet-level detail and a single steady state.

Flows that would finish within :data:`SAME_EVENT` of the earliest finish — relative to the
time from the last event to it — finish with it: rates are float32, so flows with the same
bytes and bottleneck would otherwise part by rounding into events of their own; their last
bytes (at most that share of what they held at the last event) are dropped.

A flow's finish time is not bounded by its steady-rate time either way: a flow leaving can
lower another flow's max-min rate (it frees one link, whose other flows then grow and take
from a second link), so some flows finish later than their steady rates say.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from fattorus import devices
from fattorus.kernels.maxmin import bucket_size, flow_incidences, maxmin_rates, maxmin_rates_numpy
from fattorus.kernels.maxmin_compiled import maxmin_rates_compiled, new_workspace

#: Flows finishing within this share of the time to the earliest finish finish with it (module docstring).
SAME_EVENT = 1e-5


def finish_times(route_ids: np.ndarray, capacity: np.ndarray, nbytes: np.ndarray,
                 active: np.ndarray | None = None, sparse: bool = False,
                 compiled: bool | None = None) -> tuple[np.ndarray, int]:
    """Each flow's finish time (s when capacities are bytes/s) when all start at once and the
    max-min rates are solved again whenever flows finish (module docstring), and the number
    of solves.

    Args:
      route_ids: ``(F, L)`` link ids per flow, ``-1`` padded.
      capacity: ``(E,)`` link capacities (> 0).
      nbytes: ``(F,)`` bytes per flow (>= 0).
      active: ``(F,)`` flows that exist (default all; the others get 0, as padding).
      sparse: solve from compact crossing lists (:func:`fattorus.kernels.maxmin.flow_incidences`;
        faster on long routes, same rates).
      compiled: solve each event with the compiled solver
        (:func:`fattorus.kernels.maxmin_compiled.maxmin_rates_compiled`: the JAX solver's
        float32 rates bit for bit on the CPU, ~4x faster) instead of JAX; None (default):
        where JAX computes on the CPU. Same finish times either way on a CPU.

    Returns:
      ``(finish, solves)``: ``finish`` ``(F,)`` float64 — 0 for flows without bytes, without
      links, or inactive; ``inf`` for a flow that no link lets through (rate 0).
    """
    route_ids = np.asarray(route_ids)
    remaining = np.asarray(nbytes, np.float64).copy()
    F = len(remaining)
    if route_ids.ndim != 2 or route_ids.shape[0] != F or (active is not None and np.shape(active) != (F,)):
        raise ValueError(f"finish_times: route_ids {route_ids.shape}, nbytes ({F},) and active "
                         f"{None if active is None else np.shape(active)} must describe the same flows")
    live = remaining > 0 if active is None else (np.asarray(active, bool) & (remaining > 0))
    finish = np.zeros(F)
    if compiled is None:
        compiled = devices.jax_on_cpu()
    if compiled:
        cap32 = np.ascontiguousarray(capacity, np.float32)
        workspace = new_workspace(len(cap32))
    else:
        cap = jnp.asarray(capacity)
    t, solves, held = 0.0, 0, None
    while live.any():
        rate = np.zeros(F)
        if compiled:
            # The open flows alone, in flow order: the JAX solve's per-link sums add the same
            # rates in the same order (its finished rows add exact zeros), so the same floats.
            open_ids = np.flatnonzero(live)
            rate[open_ids] = maxmin_rates_compiled(route_ids[open_ids], cap32, workspace)
        else:
            if held is None or bucket_size(int(np.count_nonzero(live))) <= len(held[0]) // 4:
                # The open flows, compacted into a power-of-two bucket (one compilation per
                # size): late events solve a few flows, not the whole problem's arrays.
                held = _held(route_ids, np.flatnonzero(live), sparse)
            which, ids, inc = held
            real = which < F
            got = np.asarray(maxmin_rates(ids, cap, active=jnp.asarray(np.r_[live, False][which]),
                                          incidences=inc).rate, np.float64)
            rate[which[real]] = got[real]
        solves += 1
        nolink = live & np.isinf(rate)  # crosses no link (both ends on one node): nothing holds it
        finish[nolink], remaining[nolink], live[nolink] = t, 0.0, False
        idx = np.flatnonzero(live)
        if len(idx) == 0:
            break
        with np.errstate(divide="ignore"):
            left = np.where(rate[idx] > 0, remaining[idx] / rate[idx], np.inf)
        step = left.min()
        if not np.isfinite(step):  # only starved flows are left
            finish[idx] = np.inf
            break
        done = idx[left <= step * (1 + SAME_EVENT)]
        t += step
        remaining[idx] -= rate[idx] * step
        finish[done], remaining[done], live[done] = t, 0.0, False
    return finish, solves


def finish_times_numpy(route_ids: np.ndarray, capacity: np.ndarray, nbytes: np.ndarray,
                       same_event: float = SAME_EVENT) -> tuple[np.ndarray, int]:
    """The same drain in plain NumPy (the benchmark's and the tests' reference): each event
    solves the open flows' routes alone with :func:`~fattorus.kernels.maxmin.maxmin_rates_numpy`
    in float64; no padding, no compaction. Every flow active; ``same_event`` as
    :data:`SAME_EVENT`. Returns ``(finish, solves)``."""
    route_ids = np.asarray(route_ids)
    capacity = np.asarray(capacity, np.float64)
    remaining = np.asarray(nbytes, np.float64).copy()
    finish = np.zeros(len(remaining))
    live = remaining > 0
    t, solves = 0.0, 0
    while live.any():
        idx = np.flatnonzero(live)
        rate, _ = maxmin_rates_numpy(route_ids[idx], capacity)
        solves += 1
        free = np.isinf(rate)  # no link
        live[idx[free]] = False
        idx, rate = idx[~free], rate[~free]
        if len(idx) == 0:
            break
        left = remaining[idx] / rate
        step = left.min()
        t += step
        remaining[idx] -= rate * step
        done = idx[left <= step * (1 + same_event)]
        finish[done], live[done] = t, False
    return finish, solves


def _held(route_ids: np.ndarray, flows: np.ndarray,
          sparse: bool) -> tuple[np.ndarray, jax.Array, tuple[jax.Array, jax.Array] | None]:
    """The routes of ``flows`` padded to a power of two (at least 64): ``(which, ids, inc)``,
    ``which`` the flow id of each row (``F``, out of range, for padding rows)."""
    F = route_ids.shape[0]
    size = bucket_size(len(flows))
    which = np.r_[flows, np.full(size - len(flows), F)]
    rows = np.full((size, route_ids.shape[1]), -1, route_ids.dtype)
    rows[:len(flows)] = route_ids[flows]
    inc = tuple(jnp.asarray(x) for x in flow_incidences(rows)) if sparse else None
    return which, jnp.asarray(rows), inc
