"""Load-balanced fat-tree routes (``qos.routing=adaptive``): the compiled greedy loop
(:func:`fattorus.topology.fattree_host_routes.balanced_routes`) against the plain Python loop it
replaced, kept here as the reference, flow for flow."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus import topology
from fattorus.topology import fattree_host_routes, fattree_routing as fr


def reference(ft, a, b, nbytes, rng) -> np.ndarray:
    """The Python loop: flows largest first (ties in ``rng``'s order), each the L2 switch and
    core whose most loaded link is least loaded (np.argmin: the first such)."""
    S, C = ft.l2_per_pod, fr.cores_per_l2(ft)
    la, lb = a // ft.nodes_per_leaf, b // ft.nodes_per_leaf
    pa, pb = a // ft.nodes_per_pod, b // ft.nodes_per_pod
    load = np.zeros(ft.n_links)
    out = np.full((len(a), fr.HOPS_MAX), -1, np.int32)
    s_opt, j_opt = np.repeat(np.arange(S), C), np.tile(np.arange(C), S)
    tie = rng.permutation(len(a))
    for f in np.lexsort((tie, -nbytes)):
        up, down = fr.node_up_link(ft, a[f]), fr.node_down_link(ft, b[f])
        if la[f] == lb[f]:
            path = [up, down]
        elif pa[f] == pb[f]:
            cand = np.stack([fr.leaf_up_link(ft, la[f], np.arange(S)), fr.leaf_down_link(ft, lb[f], np.arange(S))])
            k = int(np.argmin(load[cand].max(axis=0)))
            path = [up, cand[0, k], cand[1, k], down]
        else:
            cand = np.stack([fr.leaf_up_link(ft, la[f], s_opt), fr.l2_up_link(ft, pa[f], s_opt, j_opt),
                             fr.l2_down_link(ft, pb[f], s_opt, j_opt), fr.leaf_down_link(ft, lb[f], s_opt)])
            k = int(np.argmin(load[cand].max(axis=0)))
            path = [up, *cand[:, k], down]
        load[path] += nbytes[f]
        out[f, :len(path)] = path
    return out


@pytest.mark.parametrize("name, flows", [("ft6", 500), ("ft6x6", 2000), ("ft6_tapered", 800), ("cab", 4000)])
def test_compiled_routes_equal_the_python_loop(name, flows):
    ft = topology.load(name)
    rng = np.random.default_rng(len(name))
    a, b = rng.integers(0, ft.n_nodes, flows), rng.integers(0, ft.n_nodes, flows)
    nbytes = rng.choice([1.0, 2.0, 4.0], flows)  # many ties: the tie order matters
    got = fr.load_balanced_routes(ft, a, b, nbytes, np.random.default_rng(7))
    ref = reference(ft, a, b, nbytes, np.random.default_rng(7))
    apart = a != b  # the Python loop routed a flow within one node over the node's links
    assert (~apart).any() and np.array_equal(got[apart], ref[apart])
    # Minimal paths: as many links as D-mod-k routes take (none within one node).
    assert np.array_equal((got >= 0).sum(1), (np.asarray(fr.routes(ft, a, b)) >= 0).sum(1))


def test_bad_arguments_are_refused():
    ft = topology.load("ft6")
    with pytest.raises(ValueError, match="permutation"):
        fattree_host_routes.balanced_routes(ft, [0, 1], [2, 3], [1.0, 1.0], [0, 0])
    with pytest.raises(ValueError, match="2 sources, 1 destinations"):
        fattree_host_routes.balanced_routes(ft, [0, 1], [2], [1.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match="node id 18000 past the machine's 18 nodes"):
        fattree_host_routes.balanced_routes(ft, [18000], [0], [1.0], [0])
    with pytest.raises(ValueError, match="finite"):
        fattree_host_routes.balanced_routes(ft, [0], [5], [float("nan")], [0])


def test_host_routes_refuse_a_node_past_the_machine():
    """The per-node tables are read at each end's id: an id past the machine is refused in
    one line (it used to come back as link ids past the machine's)."""
    ft = topology.load("pinot")
    with pytest.raises(ValueError, match="host_routes: node ids"):
        fattree_host_routes.host_routes(ft, [0, ft.n_nodes], [1, 2])
