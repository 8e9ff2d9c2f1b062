"""D-mod-k routes of a fat-tree computed on the host, for the bandwidth model's per-start
routing (:meth:`fattorus.topology.base.Topology.host_routes`): the link ids of
:func:`fattorus.topology.fattree_routing.routes` (its module docstring has the table), from
one compiled loop over the pairs (numba) instead of a JAX call. Its own module so that
loading a fat-tree does not load numba."""

from __future__ import annotations

import numba
import numpy as np

from fattorus.topology.fattree import FatTree
from fattorus.topology.fattree_routing import HOPS_MAX, cores_per_l2, layout


def host_routes(ft: FatTree, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """:func:`~fattorus.topology.fattree_routing.routes` of flat pairs ``src -> dst`` computed
    on the host: ``(P, HOPS_MAX)`` int32 NumPy, the same link ids (one compiled loop over the
    pairs, numba; no JAX dispatch)."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"host_routes: {src.shape[0]} sources for {dst.shape[0]} destinations")
    lo = layout(ft)
    return _host_routes(src, dst, ft.nodes_per_leaf, ft.nodes_per_pod, ft.l2_per_pod, cores_per_l2(ft), lo.node_up,
                        lo.node_down, lo.leaf_up, lo.leaf_down, lo.l2_up, lo.l2_down)


@numba.njit(cache=True)
def _host_routes(src, dst, k, p, S, C, node_up, node_down, leaf_up, leaf_down, l2_up, l2_down):
    """The loop of :func:`host_routes` (link ids as in fattree_routing's module docstring)."""
    out = np.full((src.shape[0], HOPS_MAX), -1, np.int32)
    for i in range(src.shape[0]):
        a, b = src[i], dst[i]
        if a < 0 or b < 0 or a == b:
            continue
        s = b % S
        j = (b // S) % C
        leaf_a, leaf_b = a // k, b // k
        out[i, 0] = node_up + a
        if leaf_a == leaf_b:
            out[i, 1] = node_down + b
            continue
        out[i, 1] = leaf_up + leaf_a * S + s
        pod_a, pod_b = a // p, b // p
        if pod_a == pod_b:
            out[i, 2] = leaf_down + leaf_b * S + s
            out[i, 3] = node_down + b
            continue
        out[i, 2] = l2_up + (pod_a * S + s) * C + j
        out[i, 3] = l2_down + (pod_b * S + s) * C + j
        out[i, 4] = leaf_down + leaf_b * S + s
        out[i, 5] = node_down + b
    return out
