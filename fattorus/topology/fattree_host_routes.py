"""D-mod-k routes of a fat-tree computed on the host, for the bandwidth model's per-start
routing (:meth:`fattorus.topology.base.Topology.host_routes`): the link ids of
:func:`fattorus.topology.fattree_routing.routes` (its module docstring has the table), from
one compiled loop over the pairs (numba) instead of a JAX call. Its own module so that
loading a fat-tree does not load numba."""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np

from fattorus.topology.fattree import FatTree
from fattorus.topology.fattree_routing import HOPS_MAX, cores_per_l2, layout


def host_routes(ft: FatTree, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """:func:`~fattorus.topology.fattree_routing.routes` of flat pairs ``src -> dst`` computed
    on the host: ``(P, HOPS_MAX)`` int32 NumPy, the same link ids (one compiled loop over the
    pairs, numba; no JAX dispatch). A pair with a negative end, or both ends on one node, gets
    no route; a node id past the machine is refused in one line."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"host_routes: {src.shape[0]} sources for {dst.shape[0]} destinations")
    lo = layout(ft)
    S, C = ft.l2_per_pod, cores_per_l2(ft)
    out, bad = _host_routes(src, dst, _node_tables(ft.n_nodes, ft.nodes_per_leaf, ft.nodes_per_pod, S, C), S, C,
                            lo.node_up, lo.node_down, lo.leaf_up, lo.leaf_down, lo.l2_up, lo.l2_down)
    if bad:
        raise ValueError(f"host_routes: node ids must be < the machine's {ft.n_nodes} nodes")
    return out


def routes_renamed(ft: FatTree, a: np.ndarray, b: np.ndarray) -> bool | None:
    """:meth:`FatTree.routes_renamed` of node ids ``a``, ``b`` (int64, one shape) from the
    per-node tables: the same L2 index and core offset pair by pair, and leaves and pods
    mapped one-to-one (:func:`~fattorus.topology.base.one_to_one`). ``None`` where an id is
    off the machine (the caller's NumPy check decides those)."""
    S, C = ft.l2_per_pod, cores_per_l2(ft)
    node = _node_tables(ft.n_nodes, ft.nodes_per_leaf, ft.nodes_per_pod, S, C)
    got = _renamed(a, b, node, ft.n_leaves, ft.pods)
    return None if got < 0 else bool(got)


@numba.njit(cache=True)
def _renamed(a, b, node, n_leaves, n_pods):
    """:func:`routes_renamed`: 1 yes, 0 no, -1 an id off the machine."""
    N = node.shape[0]
    for i in range(a.shape[0]):
        if a[i] < 0 or a[i] >= N or b[i] < 0 or b[i] >= N:
            return -1
    for i in range(a.shape[0]):
        if node[a[i], 2] != node[b[i], 2] or node[a[i], 3] != node[b[i], 3]:
            return 0
    for col, n in ((0, n_leaves), (1, n_pods)):
        forward = np.full(n, -1, np.int64)
        backward = np.full(n, -1, np.int64)
        for i in range(a.shape[0]):
            x, y = node[a[i], col], node[b[i], col]
            if forward[x] < 0 and backward[y] < 0:
                forward[x] = y
                backward[y] = x
            elif forward[x] != y or backward[y] != x:
                return 0
    return 1


@lru_cache(maxsize=8)
def _node_tables(n_nodes: int, nodes_per_leaf: int, nodes_per_pod: int, S: int, C: int) -> np.ndarray:
    """``(N, 4)`` int64 per node: its leaf, its pod, its up-path L2 index ``node % S`` and core
    index ``(node // S) % C`` (D-mod-k, :mod:`~fattorus.topology.fattree_routing`) — read per
    flow instead of six integer divisions (those were most of a route's ~20 ns)."""
    node = np.arange(n_nodes, dtype=np.int64)
    tables = np.stack([node // nodes_per_leaf, node // nodes_per_pod, node % S, (node // S) % C], axis=1)
    tables.flags.writeable = False
    return tables


@numba.njit(cache=True)
def _host_routes(src, dst, node, S, C, node_up, node_down, leaf_up, leaf_down, l2_up, l2_down):
    """The loop of :func:`host_routes` (link ids as in fattree_routing's module docstring):
    the routes, and whether a node id was past the machine (``node``'s rows)."""
    N = node.shape[0]
    out = np.full((src.shape[0], HOPS_MAX), -1, np.int32)
    bad = False
    for i in range(src.shape[0]):
        a, b = src[i], dst[i]
        if a < 0 or b < 0 or a == b:
            continue
        if a >= N or b >= N:
            bad = True
            continue
        leaf_a, leaf_b = node[a, 0], node[b, 0]
        s = node[b, 2]
        out[i, 0] = node_up + a
        if leaf_a == leaf_b:
            out[i, 1] = node_down + b
            continue
        out[i, 1] = leaf_up + leaf_a * S + s
        pod_a, pod_b = node[a, 1], node[b, 1]
        if pod_a == pod_b:
            out[i, 2] = leaf_down + leaf_b * S + s
            out[i, 3] = node_down + b
            continue
        j = node[b, 3]
        out[i, 2] = l2_up + (pod_a * S + s) * C + j
        out[i, 3] = l2_down + (pod_b * S + s) * C + j
        out[i, 4] = leaf_down + leaf_b * S + s
        out[i, 5] = node_down + b
    return out, bad


def balanced_routes(ft: FatTree, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The loop of :func:`~fattorus.topology.fattree_routing.load_balanced_routes`, compiled:
    flows ``src -> dst`` (node ids, ``nbytes`` bytes) routed one after another in ``order``,
    each up-path the L2 switch (and core) whose most loaded link is least loaded, counting the
    bytes routed before it (the first such in L2-then-core order). ``(F, HOPS_MAX)`` int32
    link ids, ``-1`` padded. Greedy and sequential by nature (each choice reads the loads the
    earlier ones left), hence one compiled loop rather than array operations. A flow with both
    ends on one node (or a negative id) gets no route, as in :func:`routes`."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    nbytes = np.ascontiguousarray(np.ravel(nbytes), np.float64)
    order = np.ascontiguousarray(np.ravel(order), np.int64)
    if not src.shape == dst.shape == nbytes.shape == order.shape:
        raise ValueError(f"balanced_routes: {src.shape[0]} sources, {dst.shape[0]} destinations, "
                         f"{nbytes.shape[0]} byte counts, an order of {order.shape[0]}")
    if len(order) and not np.array_equal(np.sort(order), np.arange(len(order))):
        raise ValueError("balanced_routes: order must be a permutation of the flows")
    # The compiled loop reads link loads at ids built from these: an id past the machine would
    # read (or write) outside them, unchecked.
    if len(src) and max(int(src.max()), int(dst.max())) >= ft.n_nodes:
        raise ValueError(f"balanced_routes: node id {max(int(src.max()), int(dst.max()))} past the machine's "
                         f"{ft.n_nodes} nodes")
    if not np.isfinite(nbytes).all() or (nbytes < 0).any():
        raise ValueError("balanced_routes: bytes must be finite and >= 0")
    lo = layout(ft)
    return _balanced_routes(src, dst, nbytes, order, ft.nodes_per_leaf, ft.nodes_per_pod, ft.l2_per_pod,
                            cores_per_l2(ft), lo.node_up, lo.node_down, lo.leaf_up, lo.leaf_down, lo.l2_up, lo.l2_down,
                            lo.n_links)


@numba.njit(cache=True)
def _balanced_routes(src, dst, nbytes, order, k, p, S, C, node_up, node_down, leaf_up, leaf_down, l2_up, l2_down,
                     n_links):
    """The loop of :func:`balanced_routes`; a strict ``<`` keeps the first least candidate,
    as ``np.argmin``."""
    out = np.full((src.shape[0], HOPS_MAX), -1, np.int32)
    load = np.zeros(n_links)
    for f in order:
        a, b, w = src[f], dst[f], nbytes[f]
        if a < 0 or b < 0 or a == b:  # no route, as routes() gives (padding, or both ends on one node)
            continue
        leaf_a, leaf_b, pod_a, pod_b = a // k, b // k, a // p, b // p
        out[f, 0] = node_up + a
        if leaf_a == leaf_b:
            out[f, 1] = node_down + b
            n = 2
        elif pod_a == pod_b:
            best, pick = np.inf, 0
            for s in range(S):
                m = max(load[leaf_up + leaf_a * S + s], load[leaf_down + leaf_b * S + s])
                if m < best:
                    best, pick = m, s
            out[f, 1] = leaf_up + leaf_a * S + pick
            out[f, 2] = leaf_down + leaf_b * S + pick
            out[f, 3] = node_down + b
            n = 4
        else:
            best, pick_s, pick_j = np.inf, 0, 0
            for s in range(S):
                edge = max(load[leaf_up + leaf_a * S + s], load[leaf_down + leaf_b * S + s])
                for j in range(C):
                    m = max(edge, load[l2_up + (pod_a * S + s) * C + j], load[l2_down + (pod_b * S + s) * C + j])
                    if m < best:
                        best, pick_s, pick_j = m, s, j
            out[f, 1] = leaf_up + leaf_a * S + pick_s
            out[f, 2] = l2_up + (pod_a * S + pick_s) * C + pick_j
            out[f, 3] = l2_down + (pod_b * S + pick_s) * C + pick_j
            out[f, 4] = leaf_down + leaf_b * S + pick_s
            out[f, 5] = node_down + b
            n = 6
        for i in range(n):
            load[out[f, i]] += w
    return out
