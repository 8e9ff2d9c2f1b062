"""What the max-min solvers share without JAX: their tolerances and the check of their inputs.

:mod:`fattorus.kernels.maxmin` (JAX) and the compiled solvers
(:mod:`fattorus.kernels.maxmin_compiled`, :mod:`fattorus.kernels.maxmin_first_round`) read
them from here, so that a ``speedup=model`` replay on the CPU solves without loading JAX.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: A link counts as saturated once its residual capacity is below this share of its capacity
#: (why not zero: the residual is a difference of float sums).
RTOL = 1e-6

#: A goal solve stops once no open goal flow can take longer than this share of the slowest
#: settled one: a margin far above float32 rounding, so that the stop never changes the maximum.
GOAL_MARGIN = 1e-5


def check_inputs(route_ids: Any, capacity: Any, weight: Any, incidences: Any) -> None:
    """One-line ``ValueError`` for inputs no max-min solve can mean, where they are concrete
    (a traced call is the caller's to check): a capacity that is not a vector, route or
    crossing ids that are not integers, a link id past the capacity vector (such a flow never
    froze: the solve looped forever), a weight that is not a positive finite number (a
    negative one looped too), a negative or NaN capacity."""
    given = [x for x in (route_ids, capacity, weight, *(incidences or ())) if x is not None]
    jax = sys.modules.get("jax")  # not loaded: nothing here can be traced (no import for NumPy input)
    if jax is not None and any(isinstance(x, jax.core.Tracer) for x in given):
        return
    if np.ndim(capacity) != 1:  # a scalar was an IndexError here
        raise ValueError(f"capacity: one per link, an (E,) array, got shape {np.shape(capacity)}")
    E = int(np.shape(capacity)[0])
    routes = np.asarray(route_ids)
    if routes.ndim != 2:
        raise ValueError(f"route_ids: an (F, L) array of link ids, got shape {routes.shape}")
    ids_given = [("route_ids", routes)] + [("incidences", np.asarray(x)) for x in incidences or ()]
    for name, ids in ids_given:
        # Floats (a TypeError deep in JAX before) are refused as the compiled solver refuses
        # them; an empty nested list comes as float64 and holds no id.
        if not np.issubdtype(ids.dtype, np.integer) and ids.size:
            raise ValueError(f"{name}: ids must be integers, got {ids.dtype}")
    links = [routes] if incidences is None else [routes, np.asarray(incidences[1])]
    for name, ids in zip(("route_ids", "incidences"), links):
        if ids.size and int(ids.max()) >= E:
            raise ValueError(f"{name}: link id {int(ids.max())} past the {E} links of capacity")
        if name == "route_ids" and ids.size and int(ids.min()) < -1:  # read as padding: no link, rate inf
            raise ValueError(f"{name}: link id {int(ids.min())}; link ids run from 0 (-1 pads)")
    cap = np.asarray(capacity, np.float64)
    if not (cap >= 0).all():  # NaN fails too
        raise ValueError("capacity: every link's capacity must be a number >= 0")
    if weight is not None:
        w = np.asarray(weight, np.float64)
        if w.shape != (routes.shape[0],):  # a broadcasting error deep in JAX before
            raise ValueError(f"weight: one per flow, ({routes.shape[0]},), got shape {w.shape}")
        if not (np.isfinite(w) & (w > 0)).all():
            raise ValueError("weight: every flow's weight must be a positive finite number")
