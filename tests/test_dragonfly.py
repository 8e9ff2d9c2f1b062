"""The dragonfly family by hand (issue 13, first part): numbering, cable counts, hops, routes.

References are worked out here from the spec's rules (`machines.md`) and the documented
choices (`docs/decisions.md`, "Dragonfly"): router (g, i, j) has id (g R + i) C + j and nodes
r p + slot; green cables all-to-all in a row, black in a column, blue bundles between groups
in the round-robin arrangement; minimal routes green then black in each group. Routes are
checked as sequences of (tail router, head router, colour) read off ``link_ends``, not
through the link-id formula.
"""

from __future__ import annotations

from math import comb

import jax
import numpy as np
import pytest

from fattorus import topology
from fattorus.kernels import aph

SMALL = topology.load("dragonfly_small")  # 4 groups of 2 x 4 routers, 2 nodes each; 2 black, 2 blue
EDISON = topology.load("edison")
N = SMALL.n_nodes  # 64
#: Pairs per routing call of the batch tests. The router is eager ``jax.numpy`` code that
#: compiles each of its ~30 operations anew for every batch shape (seconds a shape on CPU), so
#: every batch of pairs is routed in chunks of B (:func:`batched`): one shape for the file
#: (each machine's own table gathers aside). A pair's route does not depend on the others of
#: its chunk (the router is elementwise; the jitted call below routes a whole batch at once).
B = 2000


def batched(route, *columns) -> np.ndarray:
    """``route(*columns)`` over chunks of :data:`B` rows (the last one padded with zeros: node
    0 to node 0, no route), concatenated: the rows of the columns' own call."""
    n = len(columns[0])
    padded = [np.pad(np.asarray(c), (0, -n % B)) for c in columns]
    return np.concatenate([np.asarray(route(*(c[i:i + B] for c in padded))) for i in range(0, n + -n % B, B)])[:n]


def router(g: int, i: int, j: int, R: int = 2, C: int = 4) -> int:
    return (g * R + i) * C + j


def node(g: int, i: int, j: int, slot: int = 0) -> int:
    return router(g, i, j) * 2 + slot


def steps(topo, a: int, b: int, routes=None) -> list[tuple[int, int, str]]:
    """The route ``a -> b`` as (tail router, head router, colour) of its router links, after
    checking that it leaves node ``a`` and enters node ``b``."""
    r = np.asarray(batched(topo.routes, [a], [b]) if routes is None else routes)[0]
    links = r[r >= 0]
    ends, Nn = topo.link_ends, topo.n_nodes
    assert ends[links[0]].tolist() == [a, Nn + a // topo.nodes_per_router]
    assert ends[links[-1]].tolist() == [Nn + b // topo.nodes_per_router, b]
    names = topo.link_class_names
    return [(int(ends[l, 0] - Nn), int(ends[l, 1] - Nn), names[topo.link_class[l]]) for l in links[1:-1]]


def cable(topo, link: int) -> int:
    """Position of ``link`` among the parallel links joining its two ends (its cable index)."""
    ends = topo.link_ends
    same = np.flatnonzero((ends[:, 0] == ends[link, 0]) & (ends[:, 1] == ends[link, 1]))
    return int(np.searchsorted(same, link))


def test_numbering_and_sizes():
    assert (EDISON.n_nodes, EDISON.n_routers, EDISON.routers_per_group) == (5760, 1440, 96)
    r = (2 * 6 + 3) * 16 + 5
    assert EDISON.coords(r * 4 + 3) == (2, 3, 5, 3)
    assert SMALL.coords(node(3, 1, 2, 1)) == (3, 1, 2, 1) and node(3, 1, 2, 1) == 61
    assert [lv.size for lv in EDISON.levels] == [4, 384] and EDISON.n_groups(1) == 15
    assert EDISON.size_class(4) == 1 and EDISON.size_class(5) == 2 and EDISON.size_class(385) == 3
    # Edison: 5 bundle slots per router (10 global ports / 2), 96 x 5 // 14 = 34 bundles per group pair
    assert EDISON.bundles_per_group_pair == 34 and SMALL.bundles_per_group_pair == 2


def _counts(topo) -> dict[str, int]:
    names = np.array(topo.link_class_names)[topo.link_class]
    return {c: int((names == c).sum()) for c in topo.link_class_names}


@pytest.mark.parametrize("conf, black, blue", [
    ("edison", 3, 2), ("edison_2k", 1, 2), ("edison_k", 2, 2), ("edison_b", 3, 1), ("edison_bk", 2, 3)])
def test_edison_cable_configurations(conf, black, blue):
    t = EDISON if conf == "edison" else topology.load(conf)
    assert (t.black_per_pair, t.blue_per_bundle) == (black, blue)
    counts = _counts(t)
    assert counts["node-router"] == 2 * 5760
    assert counts["green"] == 15 * 6 * comb(16, 2) * 1 * 2
    assert counts["black"] == 15 * 16 * comb(6, 2) * black * 2
    assert counts["blue"] == comb(15, 2) * 34 * blue * 2
    assert t.n_links == sum(counts.values())
    bw = dict(zip(t.link_class_names, [None, 5.25, 5.25, 4.7]))
    for c in ("green", "black", "blue"):
        assert set(t.link_bandwidth[np.array(t.link_class_names)[t.link_class] == c]) == {bw[c]}


def test_small_cable_counts_and_wiring():
    counts = _counts(SMALL)
    assert counts == {"node-router": 128, "green": 4 * 2 * comb(4, 2) * 2, "black": 4 * 4 * comb(2, 2) * 2 * 2,
                      "blue": comb(4, 2) * 2 * 2 * 2}
    ends = SMALL.link_ends - N
    blue = ends[SMALL.link_class == 3]
    g = blue // 8
    # every ordered pair of groups: m = 2 bundles of 2 cables; every cable has its reverse
    pairs, n = np.unique(g[:, 0] * 4 + g[:, 1], return_counts=True)
    assert sorted(pairs.tolist()) == [a * 4 + b for a in range(4) for b in range(4) if a != b]
    assert set(n.tolist()) == {4}
    assert sorted(map(tuple, blue.tolist())) == sorted(map(tuple, blue[:, ::-1].tolist()))
    # round-robin by hand: group 0's slots (one per router, in id order) go to groups 1, 2, 3, 1, 2, 3
    out0 = {tuple(e) for e in blue[g[:, 0] == 0].tolist()}
    # bundle n of group 0 meets bundle n of the other group, on its slot n * 3 + (index of group 0 there) = 3n
    assert out0 == {(0, 8), (1, 16), (2, 24), (3, 11), (4, 19), (5, 27)}
    # routers 6 and 7 of each group have no blue cable (8 slots, 6 used)
    assert not np.isin([6, 7, 14, 15], blue[:, 0]).any()
    # green stays in a row, black in a column
    for cls, same in ((1, lambda a, b: a // 4 == b // 4), (2, lambda a, b: (a % 4 == b % 4) & (a // 8 == b // 8))):
        e = ends[SMALL.link_class == cls]
        assert same(e[:, 0], e[:, 1]).all() and (e[:, 0] != e[:, 1]).all()


def test_consecutive_arrangement_by_hand():
    t = topology.from_config({**SMALL.config(), "arrangement": "consecutive"})
    # s = t * m + n: group 0's routers 0, 1 go to group 1, routers 2, 3 to group 2, 4, 5 to group 3
    assert t.gateways[0, 1].tolist() == [0, 1] and t.gateways[0, 3].tolist() == [4, 5]
    assert t.gateways[2, 0].tolist() == [16, 17] and t.gateways[2, 3].tolist() == [20, 21]
    src, dst = np.random.default_rng(0).integers(0, N, (2, 300))
    routes = batched(t.routes, src, dst)
    for s, d, r in zip(src, dst, routes):
        if s != d:
            assert len(steps(t, s, d, r[None])) == int(t.hops(s, d))


@pytest.mark.parametrize("a, b, hops", [
    (node(0, 0, 0), node(0, 0, 0, 1), 0),  # one router
    (node(0, 0, 0), node(0, 0, 3), 1),  # same row: green
    (node(0, 0, 2), node(0, 1, 2), 1),  # same column: black
    (node(0, 0, 0), node(0, 1, 1), 2),  # green then black
    (node(0, 0, 0), node(1, 0, 0), 1),  # the two gateways of bundle 0 of groups 0 and 1
    (node(0, 0, 1), node(1, 0, 1), 3),  # one hop to either gateway on each side
    (node(0, 1, 1), node(1, 1, 1), 5),  # two hops to any gateway on each side
])
def test_small_hops_by_hand(a, b, hops):
    assert int(SMALL.hops(a, b)) == hops == int(SMALL.hops(b, a))


def test_edison_hops_by_hand():
    def n(g, i, j):
        return router(g, i, j, 6, 16) * 4

    assert int(EDISON.hops(n(0, 0, 0), n(0, 0, 15))) == 1
    assert int(EDISON.hops(n(0, 0, 0), n(0, 5, 0))) == 1
    assert int(EDISON.hops(n(0, 0, 0), n(0, 5, 15))) == 2
    # group 0's slot 0 (router 0) holds bundle 0 to group 1, which lands on group 1's slot 0 (router 96)
    assert EDISON.gateways[0, 1, 0] == 0 and EDISON.gateways[1, 0, 0] == 96
    assert int(EDISON.hops(n(0, 0, 0), n(1, 0, 0))) == 1
    # group 0's bundles to group 2 sit on slots 1, 15, 29, ... -> routers 0, 3, 5, ...: router 0 is one
    assert EDISON.gateways[0, 2, :3].tolist() == [0, 3, 5]
    h = np.asarray(EDISON.hops(np.arange(0, 5760, 4)[:, None], np.arange(0, 5760, 4)[None, :]))
    assert h.max() == EDISON.max_hops <= 5 and (h[:96, 96:] >= 1).all()


def test_minimal_routes_by_hand():
    g, k, b = "green", "black", "blue"
    assert steps(SMALL, node(0, 0, 0), node(0, 0, 0, 1)) == []
    assert batched(SMALL.routes, [3], [3]).tolist() == [[-1] * SMALL.max_route_links]
    assert steps(SMALL, node(0, 0, 0), node(0, 0, 1)) == [(0, 1, g)]
    # green along row 0 to column 1, then black down column 1
    assert steps(SMALL, node(0, 0, 0), node(0, 1, 1)) == [(0, 1, g), (1, 5, k)]
    assert steps(SMALL, node(0, 1, 1), node(0, 0, 0)) == [(5, 4, g), (4, 0, k)]
    # between groups: the bundle joining the two routers
    assert steps(SMALL, node(0, 0, 0), node(1, 0, 0)) == [(0, 8, b)]
    # two bundles tie at 3 hops (0-8 and 3-11): the ((r_src + r_dst) mod 2)-th
    assert steps(SMALL, node(0, 0, 1), node(1, 0, 1)) == [(1, 0, g), (0, 8, b), (8, 9, g)]  # (1 + 9) % 2 = 0
    assert steps(SMALL, node(0, 0, 2), node(1, 0, 1)) == [(2, 3, g), (3, 11, b), (11, 9, g)]  # (2 + 9) % 2 = 1
    # 5 hops: green, black to the gateway, blue, green, black from the far one
    assert steps(SMALL, node(0, 1, 1), node(1, 1, 1)) == [(5, 4, g), (4, 0, k), (0, 8, b), (8, 9, g), (9, 13, k)]
    # the way back takes the same bundle
    assert steps(SMALL, node(1, 1, 1), node(0, 1, 1)) == [(13, 12, g), (12, 8, k), (8, 0, b), (0, 1, g), (1, 5, k)]


def test_black_first_routes_by_hand():
    g, k, b = "green", "black", "blue"

    def bf(a, z):
        return steps(SMALL, a, z, batched(lambda s, d: SMALL.routes(s, d, black_first=True), [a], [z]))

    # one hop: the same route either way
    assert bf(node(0, 0, 0), node(0, 0, 1)) == [(0, 1, g)]
    assert bf(node(0, 0, 0), node(0, 1, 0)) == [(0, 4, k)]
    # black down column 0 to row 1, then green along row 1 to column 1 (the other corner)
    assert bf(node(0, 0, 0), node(0, 1, 1)) == [(0, 4, k), (4, 5, g)]
    assert bf(node(0, 1, 1), node(0, 0, 0)) == [(5, 1, k), (1, 0, g)]
    # between groups: same bundle as the green-first route, both local parts black first
    assert bf(node(0, 1, 1), node(1, 1, 1)) == [(5, 1, k), (1, 0, g), (0, 8, b), (8, 12, k), (12, 13, g)]
    # same hop count and gateways as the minimal route, for many pairs on Edison
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, EDISON.n_nodes, (2, 3000))
    one, other = (batched(lambda a, z, f=f: EDISON.routes(a, z, black_first=f), src, dst) for f in (False, True))
    assert np.array_equal((one >= 0).sum(axis=1), (other >= 0).sum(axis=1))
    blue = EDISON.link_class == 3

    def blue_links(r):  # the blue cable of each route, -1 if none
        return np.where((r >= 0) & blue[np.maximum(r, 0)], r, -1).max(axis=1)

    assert np.array_equal(blue_links(one), blue_links(other))
    ends = EDISON.link_ends
    for s, d, r in zip(src, dst, other):  # a connected walk from s to d
        v = s
        for link in r[r >= 0]:
            assert ends[link, 0] == v
            v = ends[link, 1]
        assert v == d or s == d


def test_parallel_cables_by_node_ids():
    # black: 2 cables per pair, cable (src + dst) mod 2
    for a, bb in ((node(0, 0, 1), node(0, 1, 1)), (node(0, 0, 1, 1), node(0, 1, 1))):
        r = batched(SMALL.routes, [a], [bb])[0]
        assert cable(SMALL, r[1]) == (a + bb) % 2
    # blue: 2 cables per bundle
    for a in (node(0, 0, 0), node(0, 0, 0, 1)):
        r = batched(SMALL.routes, [a], [node(1, 0, 0)])[0]
        assert SMALL.link_class[r[1]] == 3 and cable(SMALL, r[1]) == (a + node(1, 0, 0)) % 2
    # Edison: 3 black cables per column pair, (src + dst) mod 3
    src = np.array([0, 1, 2])
    dst = np.full(3, router(0, 1, 0, 6, 16) * 4)
    r = batched(EDISON.routes, src, dst)
    assert [cable(EDISON, l) for l in r[:, 1]] == [(s + d) % 3 for s, d in zip(src, dst)]


def test_routes_walk_links_and_match_under_jit():
    rng = np.random.default_rng(1)
    for t in (SMALL, EDISON):
        src, dst = rng.integers(-1, t.n_nodes, (2, 2000))
        routes = np.asarray(t.routes(src, dst))
        ends = t.link_ends
        hops = np.asarray(t.hops(np.maximum(src, 0), np.maximum(dst, 0)))
        for s, d, r, h in zip(src, dst, routes, hops):
            links = r[r >= 0]
            if s < 0 or d < 0 or s == d:
                assert len(links) == 0
                continue
            assert (r[: len(links)] >= 0).all()  # packed to the front
            v = s
            for link in links:
                assert ends[link, 0] == v
                v = ends[link, 1]
            assert v == d and len(links) == h + 2
            blue = (t.link_class[links] == 3).sum()
            assert blue == (s // t.levels[1].size != d // t.levels[1].size)
        jitted = jax.jit(lambda a, b, t=t: t.routes(a, b))
        assert np.array_equal(np.asarray(jitted(src, dst)), routes)


def test_valiant_routes_pass_through_the_intermediate_group():
    rng = np.random.default_rng(2)
    for t in (SMALL, EDISON):
        gsize = t.levels[1].size
        src, dst = rng.integers(0, t.n_nodes, (2, 500))
        via = rng.integers(0, t.groups, 500)
        routes = batched(t.valiant_routes, src, dst, via)
        minimal = batched(t.routes, src, dst)
        ends = t.link_ends
        for s, d, g, r, m in zip(src, dst, via, routes, minimal):
            links = r[r >= 0]
            if s == d:
                assert len(links) == 0
                continue
            v, groups = s, []
            for link in links:
                assert ends[link, 0] == v
                v = ends[link, 1]
                if v >= t.n_nodes:
                    groups.append((v - t.n_nodes) // t.routers_per_group)
            assert v == d
            if g in (s // gsize, d // gsize):
                assert links.tolist() == m[m >= 0].tolist()
            else:
                assert g in groups and (t.link_class[links] == 3).sum() == 2
                assert len(links) <= 5 + t.max_hops


def test_valiant_route_by_hand():
    # 0 -> router 8 through group 2: group 0's bundles to group 2 are on routers 1 and 4, both 1 hop
    # away; (0 + 8) % 2 = 0 -> router 1, landing on router 16; then minimal 16 -> 8 (tie, (16 + 8) % 2 = 0:
    # bundle 0, 17 - 9).
    r = batched(SMALL.valiant_routes, [node(0, 0, 0)], [node(1, 0, 0)], [2])
    assert steps(SMALL, node(0, 0, 0), node(1, 0, 0), r) == [
        (0, 1, "green"), (1, 16, "blue"), (16, 17, "green"), (17, 9, "blue"), (9, 8, "green")]


def test_hop_sum_equals_pairwise_sums():
    rng = np.random.default_rng(3)
    # widths below the router count (pairwise gather) and above it (router histogram)
    for t, width, top in ((SMALL, 16, 16), (SMALL, 64, 64), (EDISON, 64, 64), (EDISON, 4096, 3000)):
        allocs = [rng.choice(t.n_nodes, int(rng.integers(1, top + 1)), replace=False) for _ in range(6)]
        fast = np.asarray(aph.hop_sums(t, aph.pad(allocs, width=width)))
        slow = [int(np.asarray(t.hops(a[:, None], a[None, :]), np.int64).sum()) for a in allocs]
        assert fast.tolist() == slow


def test_ideal_allocation_fills_a_row_first():
    assert EDISON.ideal_aph(4) == 0.0
    assert EDISON.ideal_aph(64) == pytest.approx(1.0 * (64 * 60) / (64 * 63))  # one row: 1 hop apart
    assert SMALL.ideal_allocation(10).tolist() == list(range(10))


def test_job_links_mark_every_parallel_cable():
    # two routers of one column: the black cables both ways, nothing else
    mask = SMALL.job_links(np.array([node(0, 0, 1), node(0, 1, 1)]))
    ends = SMALL.link_ends[mask] - N
    assert sorted(map(tuple, ends.tolist())) == [(1, 5), (1, 5), (5, 1), (5, 1)]
    assert (SMALL.link_class[mask] == 2).all()


@pytest.mark.parametrize("change, words", [
    ({"no_such_key": 1}, ["no_such_key"]),
    ({"groups": 0}, ["groups"]),
    ({"rows": "six"}, ["rows"]),
    ({"black_per_pair": True}, ["black_per_pair"]),
    ({"bandwidth": [1.0, 2.0]}, ["bandwidth"]),
    ({"arrangement": "random"}, ["arrangement", "round_robin"]),
    ({"groups": 20, "bundles_per_router": 2}, ["bundles_per_router", "19"]),
])
def test_config_errors_are_one_line(change, words):
    with pytest.raises(topology.TopologyError) as err:
        topology.from_config({**SMALL.config(), **change})
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words)


def test_missing_keys_and_derived_bundles():
    with pytest.raises(topology.TopologyError, match=r"missing key\(s\) \['rows'\]"):
        topology.from_config({"kind": "dragonfly", "name": "x", "groups": 2, "cols": 2})
    # bundles_per_router left out: the fewest that connect every pair of groups
    t = topology.from_config({"kind": "dragonfly", "name": "x", "groups": 9, "rows": 1, "cols": 4})
    assert t.bundles_per_router == 2 and t.bundles_per_group_pair == 1
    assert topology.from_config(t.config()) == t


@pytest.mark.parametrize("conf, sizes", [("small", (2, 17, 64)), ("edison", (3, 120))])
def test_job_links_equal_the_cables_of_every_route(conf, sizes):
    """Random jobs, and one holding whole groups beside a few nodes of others (towards a whole
    group a router's bundles come from a table, not pair by pair)."""
    t = SMALL if conf == "small" else EDISON
    rng = np.random.default_rng(4)
    key = t.link_ends[:, 0] * (t.n_nodes + t.n_routers) + t.link_ends[:, 1]  # a link's (tail, head)
    hop = t.link_class > 0
    jobs = [rng.choice(t.n_nodes, n, replace=False) for n in sizes]
    group = t.routers_per_group * t.nodes_per_router  # nodes of a group
    whole = np.arange(group) + (group if conf == "small" else 0)
    others = np.setdiff1d(np.arange(t.n_nodes), whole)
    jobs.append(np.r_[whole, rng.choice(others, 5 if conf == "small" else 12, replace=False)])
    if conf == "small":
        jobs.append(np.r_[np.arange(2 * group), 2 * group + 3, 3 * group + 1])  # two whole groups
    # Every job's pairs in chunks of B: the eager router compiles once per batch shape.
    pairs = [np.meshgrid(nodes, nodes, indexing="ij") for nodes in jobs]
    routes = batched(t.routes, np.concatenate([s.ravel() for s, _ in pairs]), np.concatenate([d.ravel() for _, d in pairs]))
    for nodes, r in zip(jobs, np.split(routes, np.cumsum([len(j) ** 2 for j in jobs])[:-1])):
        used = np.unique(r[r >= 0])
        expected = hop & np.isin(key, key[used[hop[used]]])  # every cable joining the same two routers
        assert np.array_equal(t.job_links(nodes), expected)


def test_group_layout_sums_from_prefix_tables_equal_the_histogram_sum():
    """The ideal's search scores group layouts from prefix sums of the group-pair distance
    blocks; on random layouts (groups, node counts with partial routers) that equals the hop
    sum of the layout's router histogram against the distance table, and the histogram holds
    exactly the counts given."""
    edison = topology.load("edison")
    D = edison.router_distance.astype(np.int64)
    rng = np.random.default_rng(0)
    for _ in range(60):
        m = int(rng.integers(1, 5))
        groups = [int(g) for g in rng.choice(edison.groups, m, replace=False)]
        counts = [int(rng.integers(0, edison.routers_per_group * edison.nodes_per_router + 1)) for _ in range(m)]
        h = edison._groups_histogram(groups, counts)
        assert h.sum() == sum(counts)
        assert edison._layout_sum(groups, counts) == int(h @ D @ h)
