"""The flow model over a family's other routes (issue 14, item 1): fat-trees' adaptive
(load-balanced) up-paths and dragonflies' Valiant routes, through ``Topology.flow_routes``."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus import topology
from fattorus.analysis import commtime
from fattorus.analysis.commtime import Job
from fattorus.kernels.maxmin import maxmin_rates_numpy


def _pairs(n: int, nbytes: float):
    """Rank i sends ``nbytes`` to rank n-1-i (a traffic of the patterns' form)."""
    from fattorus.analysis import patterns

    src = np.arange(n)
    return patterns.Traffic(src, src[::-1].copy(), np.full(n, nbytes))


def test_adaptive_up_paths_untangle_the_shared_uplink_by_hand():
    """ft6: 0->9 and 1->12 go up the same uplink of leaf 0 under D-mod-k (9 = 12 mod 3), so the
    two 4-byte flows share it at 1/2 each: 8 time units. Load-balanced, the second takes
    another L2 switch: every link carries one flow, rate 1, 4 time units."""
    ft6 = topology.load("ft6")
    a, b = Job(np.array([0, 9]), _pairs(2, 4.0)), Job(np.array([1, 12]), _pairs(2, 4.0))
    np.testing.assert_allclose(commtime.step_times(ft6, [a, b]), [8.0, 8.0], rtol=1e-6)
    routes = ft6.flow_routes(np.array([0, 1]), np.array([9, 12]), np.array([4.0, 4.0]), "adaptive")
    assert not set(routes[0][routes[0] >= 0]) & set(routes[1][routes[1] >= 0])
    np.testing.assert_allclose(commtime.step_times(ft6, [a, b], routing="adaptive"), [4.0, 4.0], rtol=1e-6)
    got = commtime.slowdowns(ft6, [a, b], routing="adaptive")
    np.testing.assert_allclose(got.slowdown, [1.0, 1.0], rtol=1e-6)


def _groups_on(t, routes: np.ndarray) -> np.ndarray:
    """``(F, groups)`` bool: which groups' routers each route's links touch (from ``link_ends``)."""
    ends = np.asarray(t.link_ends)[np.maximum(routes, 0)]  # (F, L, 2) vertex ids
    router = (ends >= t.n_nodes) & (routes >= 0)[..., None]
    group = np.where(router, (ends - t.n_nodes) // t.routers_per_group, 0)
    seen = np.zeros((len(routes), t.groups), bool)
    rows = np.broadcast_to(np.arange(len(routes))[:, None, None], group.shape)
    seen[rows[router], group[router]] = True
    return seen


def test_valiant_routes_detour_through_a_drawn_third_group_the_same_in_every_batch():
    t = topology.load("dragonfly_small")  # 4 groups of 8 routers, 2 nodes each
    per_group = t.routers_per_group * t.nodes_per_router
    src = np.repeat(np.arange(t.n_nodes), t.n_nodes)
    dst = np.tile(np.arange(t.n_nodes), t.n_nodes)
    routes = t.flow_routes(src, dst, np.ones(len(src)), "valiant", seed=5)
    ga, gb = src // per_group, dst // per_group
    inter = ga != gb
    seen = _groups_on(t, routes)
    moved = src != dst  # a node to itself crosses no link
    assert seen[np.arange(len(src)), ga][moved].all() and seen[np.arange(len(src)), gb][moved].all()
    third = seen.copy()
    third[np.arange(len(src)), ga] = third[np.arange(len(src)), gb] = False
    assert (third[inter].sum(axis=1) == 1).all()  # one detour group, not the flow's own
    via = np.where(inter, third.argmax(axis=1), -1)
    # Each inter-group pair's two eligible groups are drawn alike (about half each).
    lower = np.array([min(set(range(t.groups)) - {a, b}) for a, b in zip(ga[inter], gb[inter])])
    assert 0.4 < np.mean(via[inter] == lower) < 0.6
    # Every batch below has the first one's length: the eager router compiles each of its
    # operations anew for every batch shape (seconds a shape on CPU).
    # Within a group no detour: the minimal route (every pair within a group, repeated).
    same = np.resize(np.flatnonzero(~inter), len(src))
    np.testing.assert_array_equal(routes[same][:, :t.max_route_links], np.asarray(t.routes(src[same], dst[same])))
    assert (routes[same][:, t.max_route_links:] == -1).all()
    # A pair takes the same route whatever is routed beside it (inter-group pairs drawn with
    # repeats, in another order: other neighbours), and another seed moves some.
    pick = np.random.default_rng(0).choice(np.flatnonzero(inter), len(src))
    np.testing.assert_array_equal(t.flow_routes(src[pick], dst[pick], np.ones(len(pick)), "valiant", seed=5), routes[pick])
    other = t.flow_routes(src[pick], dst[pick], np.ones(len(pick)), "valiant", seed=6)
    assert (other != routes[pick]).any(axis=1).sum() > len(pick) // 4


def test_a_solve_over_valiant_routes_is_the_reference_filling_of_those_routes():
    """Two jobs across groups on dragonfly_small: step times over Valiant routes equal each
    job's slowest flow under the plain NumPy filling of the same routes (on bundles)."""
    t = topology.load("dragonfly_small")
    rng = np.random.default_rng(0)
    nodes = rng.permutation(t.n_nodes)
    jobs = [Job(np.sort(nodes[:12]), _pairs(12, 2.0e9)), Job(np.sort(nodes[12:28]), _pairs(16, 1.0e9))]
    got = commtime.step_times(t, jobs, routing="valiant", seed=3, compiled=False)
    route_ids, nbytes, owner = commtime._flows(t, jobs, "valiant", 3)
    rate, _ = maxmin_rates_numpy(route_ids, commtime.solver_capacity(t))
    want = [max(nbytes[owner == j] / rate[owner == j]) for j in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    static = commtime.step_times(t, jobs)
    assert not np.allclose(got, static)  # the detours changed the answer


@pytest.mark.parametrize("name, routing", [("torus4", "valiant"), ("torus4", "adaptive"), ("ft6", "valiant"),
                                           ("dragonfly_small", "adaptive")])
def test_a_routing_the_family_lacks_is_refused_in_one_line(name, routing):
    t = topology.load(name)
    job = Job(np.array([0, t.n_nodes - 1]), _pairs(2, 1.0))
    with pytest.raises(ValueError, match=f"routing '{routing}': .* offers") as err:
        commtime.step_times(t, [job], routing=routing)
    assert "\n" not in str(err.value)
