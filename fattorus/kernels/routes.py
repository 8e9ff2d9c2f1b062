"""Static routes of any topology, batched: the family's own routing behind one entry point.

:func:`route_links` returns, for a batch of (src, dst) node pairs, each route as link ids of
the topology's link table padded with ``-1`` (``topo.routes``; a fat-tree routes by
D-mod-k, a torus by dimension order, ...); :func:`route_hops` counts the links of each route
that are hops (the topology's ``hop_classes``).
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
from jax.typing import ArrayLike

from fattorus.topology.base import Topology


@partial(jax.jit, static_argnums=0)
def route_links(topo: Topology, src: ArrayLike, dst: ArrayLike) -> jax.Array:
    """``(..., topo.max_route_links)`` link ids of the static route of each pair, ``-1`` padded.
    ``topo`` is positional (a static argument: topologies are hashable values, and the
    compiled routing of each one seen is kept); ``src``/``dst`` are arrays of node ids.

    Compiled once per (topology, batch shape). Why: the torus's and the dragonfly's
    ``routes`` are eager ``jax.numpy`` code; called eagerly, every operation is dispatched on
    its own and every new batch shape compiles each one (578 compilations in a 220-job
    ``speedup=model`` replay on Blue Waters). Compiled, 4,096 pairs take ~0.6-0.9 ms instead
    of 21-32 ms; the ids are the same (integer operations)."""
    return topo.routes(src, dst)


def route_hops(topo: Topology, route_ids) -> np.ndarray:
    """Links of each route whose class counts as a hop (inter-switch links) -> ``(...,)``."""
    ids = np.asarray(route_ids)
    names = topo.link_class_names
    is_hop = np.array([names[c] in topo.hop_classes for c in range(len(names))])
    cls = np.asarray(topo.link_class)[np.maximum(ids, 0)]
    return ((ids >= 0) & is_hop[cls]).sum(axis=-1)
