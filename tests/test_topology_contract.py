"""One contract test over every machine in ``conf/topo`` (every family that has a config).

Checked against the topology's own declared structure, with independent arithmetic: hops
symmetric, zero on the diagonal, at most ``max_hops``; every static route walks existing
links from ``src`` to ``dst`` and its hop-class links number exactly ``hops``; the hop-sum
kernel equals the pairwise sum; the ideal allocation is at least as compact as random ones;
the configuration round-trips; orderings are permutations; ``job_links`` covers every route
between a job's nodes; a placement ``routes_renamed`` calls renamed has renamed routes. A new
family's configs are picked up without editing this file (the ``conf_topo`` fixture of
conftest.py runs each test once per config).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from fattorus import topology
from fattorus.kernels import aph
from fattorus.topology.base import Topology


@pytest.fixture(scope="module")
def topo(conf_topo):
    """Each machine of ``conf/topo`` in turn (``conf_topo`` in conftest.py)."""
    return conf_topo


#: Pairs per ``topo.routes`` call in this file. The torus and dragonfly route with eager
#: ``jax.numpy`` code that compiles every operation anew for each batch shape (~2 s a shape
#: and machine on CPU), so every route batch is padded to a multiple of this one width.
ROUTE_BATCH = 300


def _sample(topo, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(topo.n_nodes, size=min(n, topo.n_nodes), replace=False)


def _padded(src, dst) -> tuple[np.ndarray, np.ndarray]:
    """``src``, ``dst`` extended with pairs ``0 -> 0`` (an empty route) to a multiple of
    :data:`ROUTE_BATCH`; callers keep the first ``len(src)`` rows of what they compute."""
    src, dst = np.asarray(src).ravel(), np.asarray(dst).ravel()
    pad = -len(src) % ROUTE_BATCH
    return np.concatenate([src, np.zeros(pad, src.dtype)]), np.concatenate([dst, np.zeros(pad, dst.dtype)])


def _routes(topo, src, dst) -> np.ndarray:
    """``topo.routes(src, dst)`` (flat pairs), called in batches of :data:`ROUTE_BATCH` pairs."""
    n = np.size(src)
    s, d = _padded(src, dst)
    return np.concatenate([np.asarray(topo.routes(s[i:i + ROUTE_BATCH], d[i:i + ROUTE_BATCH]))
                           for i in range(0, len(s), ROUTE_BATCH)])[:n]


def test_hops_are_a_metric_bounded_by_max_hops(topo):
    a = _sample(topo, 64, 0)
    h = np.asarray(topo.hops(a[:, None], a[None, :]))
    assert np.array_equal(h, h.T) and np.all(np.diag(h) == 0)
    assert h.min() >= 0 and h.max() <= topo.max_hops


def test_routes_walk_existing_links_and_count_hops(topo):
    src, dst = _sample(topo, 200, 1), _sample(topo, 200, 2)
    routes = _routes(topo, src, dst)
    ends = np.asarray(topo.link_ends)
    names = topo.link_class_names
    is_hop = np.array([names[c] in topo.hop_classes for c in np.asarray(topo.link_class)])
    hops = np.asarray(topo.hops(*_padded(src, dst)))[:len(src)]
    for s, d, r, h in zip(src, dst, routes, hops):
        links = r[r >= 0]
        if s == d:
            assert len(links) == 0
            continue
        vertex = s
        for link in links:  # each link leaves where the previous one arrived
            assert ends[link, 0] == vertex
            vertex = ends[link, 1]
        assert vertex == d
        assert is_hop[links].sum() == h


def test_hop_sum_kernel_equals_pairwise_sums(topo):
    rng = np.random.default_rng(3)
    allocs = [rng.choice(topo.n_nodes, size=int(rng.integers(1, min(64, topo.n_nodes) + 1)), replace=False)
              for _ in range(64)]
    padded = aph.pad(allocs, width=64)
    fast = np.asarray(aph.hop_sums(topo, padded))
    # The pairwise sums, all 64 allocations in one (64, 64, 64) ``hops`` call (one shape to
    # compile rather than one per size), then each summed over its own n x n block.
    nodes = np.where(padded >= 0, padded, 0)
    h = np.asarray(topo.hops(nodes[:, :, None], nodes[:, None, :]), np.int64)
    slow = [int(h[i, :len(a), :len(a)].sum()) for i, a in enumerate(allocs)]
    assert fast.tolist() == slow
    host = topo.host_hop_sums(allocs)  # a family's host rule, where it has one
    assert host is None or host.tolist() == slow


def test_max_hops_of_equals_the_pairwise_maximum(topo):
    """A placement's largest hop count (one node per innermost group, in chunks of 512,
    stopping at the machine's diameter) against every pair, on jobs of up to 2,000 nodes
    scattered over the machine or packed."""
    rng = np.random.default_rng(8)
    for n in (1, 2, 9, 300, 2000):
        n = min(n, topo.n_nodes)
        for nodes in (rng.choice(topo.n_nodes, n, replace=False), np.arange(n) + rng.integers(0, topo.n_nodes - n + 1)):
            brute = int(np.asarray(topo.hops(nodes[:, None], nodes[None, :])).max()) if n > 1 else 0
            assert topo.max_hops_of(nodes) == brute


def test_footprint_class_is_the_smallest_level_holding_every_node(topo):
    """A placement's class against its groups counted level by level: 1 when its nodes lie in
    one innermost group, ..., ``len(levels) + 1`` when they span several outermost ones."""
    rng = np.random.default_rng(9)
    for n in (1, 2, 5, 40, 400):
        n = min(n, topo.n_nodes)
        for nodes in (rng.choice(topo.n_nodes, n, replace=False), np.arange(n) + rng.integers(0, topo.n_nodes - n + 1)):
            want = 1 + next((i for i, level in enumerate(topo.levels) if len(np.unique(nodes // level.size)) == 1),
                            len(topo.levels))
            assert topo.footprint_class(nodes) == want


def test_ideal_allocation_is_at_least_as_compact_as_random(topo):
    for n in (2, 7, min(40, topo.n_nodes)):
        ideal = topo.ideal_aph(n)
        nodes = np.asarray(topo.ideal_allocation(n))
        assert len(np.unique(nodes)) == n
        h = np.asarray(topo.hops(nodes[:, None], nodes[None, :])).sum()
        assert ideal == pytest.approx(h / (n * (n - 1)))
        for seed in range(20):
            a = _sample(topo, n, 100 + seed)
            assert np.asarray(topo.hops(a[:, None], a[None, :])).sum() / (n * (n - 1)) >= ideal - 1e-12


def test_ideal_placements_hold_n_nodes_none_more_compact_than_the_ideal(topo):
    """The bandwidth model's candidate ideals (fat-trees: the ideal allocation; dragonflies:
    the first node ids; tori: the L1 ball, then the first nodes of orderings — as before the
    APH ideal became a search on the last two). Each holds n distinct node ids of the
    machine, none repeated, and none is more compact (brute-force APH) than ``ideal_aph``:
    the ideal is the least APH the family knows."""
    for n in (1, 2, 7, min(40, topo.n_nodes)):
        places = topo.ideal_placements(n)
        for i, p in enumerate(places):
            p = np.asarray(p)
            assert len(np.unique(p)) == n and p.min() >= 0 and p.max() < topo.n_nodes
            assert not any(np.array_equal(p, q) for q in places[:i])
            if n > 1:
                hops = np.asarray(topo.hops(p[:, None], p[None, :])).sum()
                assert hops / (n * (n - 1)) >= topo.ideal_aph(n) - 1e-12


def test_sizes_past_the_machine_are_refused_in_one_line(topo):
    """A whole-machine job is the largest the ideals take (every node once); a size past it,
    below 0 or fractional is one ValueError naming the machine — it used to give the first
    ids past the last node (fat-trees), a ball cut short (tori) or an IndexError (dragonflies)."""
    whole = np.asarray(topo.ideal_allocation(topo.n_nodes))
    assert sorted(whole.tolist()) == list(range(topo.n_nodes)) and len(topo.ideal_allocation(0)) == 0
    for bad in (topo.n_nodes + 1, -1, 2.5):
        for method in (topo.ideal_allocation, topo.ideal_placements, topo.ideal_aph):
            with pytest.raises(ValueError, match=f"topology '{topo.name}': a job of {bad} nodes; sizes run from 0"):
                method(bad)


def test_node_ids_past_the_machine_are_refused_in_one_line(topo):
    """``hops``, ``routes``, ``job_links`` and ``coords`` given an id past the machine (or a
    negative one where it is no padding) raise one ValueError naming the machine; they read
    some other node's answer, raised an IndexError deep in the family or (coords) gave
    coordinates past the machine (session 31 review). Lists are taken as arrays, and routes
    keep taking negative ids as padding (an empty route)."""
    n = topo.n_nodes
    words = f"topology '{topo.name}': node id"
    for call in (lambda: topo.hops(0, n), lambda: topo.hops(np.array([0, 1]), np.array([n + 5, 0])),
                 lambda: topo.hops(-1, 0), lambda: topo.routes(np.array([0]), np.array([n])),
                 lambda: topo.job_links(np.array([0, 1, n])), lambda: topo.job_links([-1, 0]),
                 lambda: topo.coords(np.array([0, n])), lambda: topo.coords(-1)):
        with pytest.raises(ValueError, match=words):
            call()
    assert np.array_equal(np.asarray(topo.hops([0, 1, n - 1], [n - 1, 0, 1])),
                          np.asarray(topo.hops(np.array([0, 1, n - 1]), np.array([n - 1, 0, 1]))))
    # Padding: empty routes (routed in a batch of ROUTE_BATCH pairs, as the other route checks).
    assert (_routes(topo, np.array([-1, 0]), np.array([0, -1])) == -1).all()
    assert np.array_equal(topo.job_links([0, n - 1]), topo.job_links(np.array([0, n - 1])))
    assert all(np.array_equal(a, b) for a, b in zip(topo.coords([0, n - 1]), topo.coords(np.array([0, n - 1]))))


def test_compiled_routes_equal_the_familys_routes(topo):
    """kernels.routes.route_links (what the bandwidth model routes with, compiled) gives the
    family's own routes, pairs with src == dst included."""
    from fattorus.kernels.routes import route_links

    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, topo.n_nodes, 300), rng.integers(0, topo.n_nodes, 300)
    dst[:20] = src[:20]
    assert np.array_equal(np.asarray(route_links(topo, src, dst)), _routes(topo, src, dst))


def test_config_round_trips_and_the_value_is_static(topo):
    again = topology.from_config(topo.config())
    assert again == topo and hash(again) == hash(topo)
    # usable as a static argument of a jitted function
    f = jax.jit(lambda t, x: t.hops(x, x + 1), static_argnums=0)
    assert int(f(topo, np.int32(0))) == int(topo.hops(0, 1))


def test_orderings_are_permutations(topo):
    for name in topo.ordering_names:
        order = np.asarray(topo.ordering(name))
        assert np.array_equal(np.sort(order), np.arange(topo.n_nodes))


def test_job_links_cover_every_route_between_the_job_nodes(topo):
    hop_class = np.array([topo.link_class_names[c] in topo.hop_classes for c in np.asarray(topo.link_class)])
    for seed, n in ((4, 3), (5, 12), (6, min(30, topo.n_nodes))):
        nodes = _sample(topo, n, seed)
        mask = topo.job_links(nodes)
        src, dst = np.meshgrid(nodes, nodes, indexing="ij")
        r = _routes(topo, src, dst)
        used = np.unique(r[r >= 0])
        assert mask[used[hop_class[used]]].all()
        # The base class's rule (what a new family gets; its pairs padded to a power of two)
        # is exactly the union of the routes.
        from fattorus.topology.base import Topology

        base = Topology.job_links(topo, nodes)
        assert np.array_equal(np.flatnonzero(base), used)


def test_a_renamed_placement_has_renamed_routes(topo):
    """Where ``routes_renamed`` says yes (a family may always say no), every ordered pair's
    route among the second placement is the first's with links renamed one-to-one between
    links of equal bandwidth (``commtime.same_network`` over all pairs)."""
    from fattorus.analysis.commtime import same_network

    cap = np.asarray(topo.link_bandwidth)
    n = min(12, topo.n_nodes // 2)
    ideal = np.asarray(topo.ideal_allocation(n))
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    checked = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        shift = int(rng.integers(0, topo.n_nodes))
        for nodes in ((ideal + shift) % topo.n_nodes, _sample(topo, n, seed), ideal):
            if topo.routes_renamed(ideal, nodes):
                a = _routes(topo, ideal[src], ideal[dst])
                b = _routes(topo, nodes[src], nodes[dst])
                assert same_network(a, b, cap)
                checked += 1
    if type(topo).routes_renamed is Topology.routes_renamed:
        assert checked == 0  # the default cannot tell: every answer is no, nothing to check
    else:
        # A family that answers must at least recognise a placement as itself renamed.
        assert checked >= 8, checked


def test_flow_loads_equal_the_scatter_of_the_routes(topo):
    from fattorus.kernels import linkload

    # ROUTE_BATCH random pairs on every machine, the width the other route checks compile
    # (on the small machines pairs repeat and some are src == dst: flows that share links,
    # and flows that cross none).
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, topo.n_nodes, ROUTE_BATCH), rng.integers(0, topo.n_nodes, ROUTE_BATCH)
    nbytes = np.random.default_rng(9).integers(1, 1000, len(src)).astype(np.float32)
    fused = np.asarray(linkload.flow_link_loads(topo, src, dst, nbytes))
    routes = _routes(topo, src, dst)
    # The scatter, in NumPy (float64): each route's bytes added to each link it crosses.
    used = routes >= 0
    plain = np.bincount(routes[used], weights=np.broadcast_to(nbytes[:, None], routes.shape)[used].astype(np.float64),
                        minlength=topo.n_links)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)
    # every byte crosses each link of its route once
    lengths = (routes >= 0).sum(axis=1)
    assert fused.sum() == pytest.approx(float((nbytes * lengths).sum()), rel=1e-5)


def test_a_config_with_an_unknown_key_fails_in_one_line_naming_it(topo):
    with pytest.raises(topology.TopologyError) as err:
        topology.from_config({**topo.config(), "no_such_key": 1})
    message = str(err.value)
    assert "no_such_key" in message and "\n" not in message


@pytest.mark.parametrize("name", ["a/../../evil", "../x", ".hidden", "two words", ""])
def test_a_name_that_is_no_file_name_fails_in_one_line(topo, name):
    """A machine's name names run folders, study parts and figures: with a separator or a
    leading dot a replay's run directory left results/ (a session-46 review). Every family
    refuses it; the shipped names pass (the ``topo`` fixture loaded them)."""
    with pytest.raises(topology.TopologyError) as err:
        topology.from_config({**topo.config(), "name": name})
    assert f"topology name {name!r}" in str(err.value) and "\n" not in str(err.value)
    assert topology.from_config({**topo.config(), "name": "my_machine-2.v1+x"}).name == "my_machine-2.v1+x"


def test_the_ideal_aph_kernel_delegates_to_the_topology(topo):
    for n in (1, 2, 5, min(33, topo.n_nodes)):
        assert aph.ideal_aph(topo, n) == pytest.approx(topo.ideal_aph(n))


def test_link_bundles_join_parallel_links_of_one_class_and_bandwidth(topo):
    """Where a family pools parallel links (``link_bundles``), a bundle is every link with the
    same two ends — one class, one bandwidth — its first link the lowest id, its count the
    bundle's size (checked by grouping ``link_ends`` directly); elsewhere no two links may
    join the same two vertices in one direction (nothing to pool)."""
    # Grouped with NumPy (one scalar key per (from, to) pair) rather than a Python loop over
    # the 10^5 links of the big machines: ``group`` numbers each link's ends, ``lowest`` and
    # ``size`` are each group's least link id and its number of links.
    ends = np.asarray(topo.link_ends, np.int64)
    _, group, size = np.unique(ends[:, 0] * (ends.max() + 1) + ends[:, 1], return_inverse=True, return_counts=True)
    lowest = np.full(len(size), len(ends))
    np.minimum.at(lowest, group, np.arange(len(ends)))
    bundles = topo.link_bundles()
    if bundles is None:
        assert (size == 1).all()
        return
    first, count = (np.asarray(x) for x in bundles)
    cls, bw = np.asarray(topo.link_class), np.asarray(topo.link_bandwidth)
    assert (size > 1).any()
    assert (first == lowest[group]).all() and (count == size[group]).all()
    # one class and one bandwidth a group: each link's equal its group's lowest link's
    assert (cls == cls[lowest[group]]).all() and (bw == bw[lowest[group]]).all()


def test_host_routes_are_none_or_the_familys_routes(topo):
    """A family's host router (what the bandwidth model routes a starting job with) gives the
    family's own routes, pairs with src == dst and padding (negative ends) included."""
    rng = np.random.default_rng(12)
    src, dst = rng.integers(0, topo.n_nodes, 300), rng.integers(0, topo.n_nodes, 300)
    dst[:20] = src[:20]
    src[20:25] = -1
    dst[25:30] = -1
    got = topo.host_routes(src, dst)
    if got is not None:
        assert got.dtype == np.int32 and np.array_equal(got, _routes(topo, src, dst))
    lists = topo.host_route_lists(src, dst)  # the same routes as compact crossing lists, where written straight
    if lists is not None:
        from fattorus.kernels.maxmin_compiled import compact_routes

        want = compact_routes(_routes(topo, src, dst))
        assert all(a.dtype == np.int32 and np.array_equal(a, b) for a, b in zip(lists, want))


def test_every_offered_routing_walks_from_source_to_destination(topo):
    """``flow_routes`` under each routing a family offers (``static`` always: its routes; fat-trees'
    ``adaptive``, dragonflies' ``valiant``): every route a walk over existing links from the
    flow's source node to its destination, none for a node to itself; a routing it does not
    offer is refused in one line."""
    src, dst = _sample(topo, 150, 3), _sample(topo, 150, 4)
    dst[:10] = src[:10]
    # Padded with pairs 0 -> 0 to ROUTE_BATCH (a route for each, empty): the dragonflies'
    # Valiant routes are eager JAX, which compiles every operation once per shape.
    src, dst = _padded(src, dst)
    ends = np.asarray(topo.link_ends)
    assert topo.routings[0] == "static"  # static flow_routes are host_routes or routes (tested above)
    for routing in topo.routings:
        routes = topo.flow_routes(src, dst, np.random.default_rng(5).uniform(1, 9, len(src)), routing, seed=2)
        assert routes.dtype == np.int32 and len(routes) == len(src)
        for s, d, r in zip(src, dst, routes):
            vertex = s
            for link in r[r >= 0]:
                assert ends[link, 0] == vertex
                vertex = ends[link, 1]
            assert vertex == d and (s != d or (r < 0).all())
    with pytest.raises(ValueError, match="routing 'nowhere': .* offers") as err:
        topo.flow_routes(src, dst, np.ones(len(src)), "nowhere")
    assert "\n" not in str(err.value)
    for routing in topo.routings:  # a node past the machine: one line, not another node's links
        with pytest.raises(ValueError, match="past|beyond|outside|node id") as err:
            topo.flow_routes(np.array([0]), np.array([topo.n_nodes]), np.ones(1), routing)
        assert "\n" not in str(err.value)
