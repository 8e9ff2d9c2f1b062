"""The 3D torus family by hand (issue 12, first part): numbering, hops, dimension-order routes.

References are worked out here from the spec's rules (`machines.md`): router (x, y, z) has id
(x * Y + y) * Z + z and nodes r * p + slot; hops are summed ring distances; routes go x, then
y, then z, the shorter way round, exactly half a ring in the positive direction.
"""

from __future__ import annotations

import numpy as np
import pytest

from fattorus import topology
from fattorus.kernels import aph
from fattorus.topology.fattree import load

T4 = topology.from_config({"kind": "torus3d", "name": "t4", "dims": [4, 4, 4], "nodes_per_router": 2})
N = T4.n_nodes  # 128
#: Pairs per routing call. The router is eager ``jax.numpy`` code that compiles each of its
#: ~40 operations anew for every batch shape (the machine's sizes are plain numbers, not
#: shapes), so every batch of pairs is routed in chunks of B (:func:`batched`): one
#: compilation for the file. A pair's route does not depend on the others of its chunk.
B = 4096


def batched(topo, src, dst) -> np.ndarray:
    """``topo.routes(src, dst)`` over chunks of :data:`B` pairs (the last one padded with
    zeros: node 0 to node 0, no route), concatenated: the rows of the pairs' own call."""
    n = len(src)
    src, dst = (np.pad(np.asarray(c), (0, -n % B)) for c in (src, dst))
    return np.concatenate([np.asarray(topo.routes(src[i:i + B], dst[i:i + B])) for i in range(0, len(src), B)])[:n]


def node(x: int, y: int, z: int, slot: int = 0) -> int:
    return ((x * 4 + y) * 4 + z) * 2 + slot


def link(x: int, y: int, z: int, dim: str, sign: str) -> int:
    r = (x * 4 + y) * 4 + z
    return 2 * N + (3 * r + "xyz".index(dim)) * 2 + (0 if sign == "+" else 1)


def route(a: int, b: int) -> list[int]:
    r = batched(T4, [a], [b])[0]
    return r[r >= 0].tolist()


def test_numbering_and_sizes():
    assert T4.n_nodes == 128 and T4.coords(node(1, 2, 3, 1)) == (1, 2, 3, 1) and node(1, 2, 3, 1) == 55
    bw = load("bluewaters")
    assert (bw.n_nodes, bw.max_hops, bw.n_links) == (27_648, 36, 2 * 27_648 + 6 * 13_824)
    assert bw.link_bandwidth[bw.link_class == 1].tolist()[:1] == [2.0]  # x links at 2, y at 1
    assert set(bw.link_bandwidth[bw.link_class == 3]) == {1.0}


@pytest.mark.parametrize("a, b, hops", [
    (node(0, 0, 0), node(0, 0, 0, 1), 0),  # two nodes of one Gemini
    (node(0, 0, 0), node(3, 0, 0), 1),  # wrap-around
    (node(0, 0, 0), node(2, 0, 0), 2),  # half the ring
    (node(0, 0, 0), node(3, 3, 3), 3),
    (node(1, 2, 3), node(3, 0, 1), 6),
])
def test_hops_by_hand(a, b, hops):
    assert int(T4.hops(a, b)) == hops == int(T4.hops(b, a))


def test_dimension_order_routes_by_hand():
    # x the short way round (negative, through the wrap), then y positive.
    assert route(node(0, 0, 0), node(3, 1, 0)) == [node(0, 0, 0), link(0, 0, 0, "x", "-"), link(3, 0, 0, "y", "+"),
                                                   N + node(3, 1, 0)]
    # Exactly half a ring: the positive direction, both ways.
    assert route(node(0, 0, 0), node(2, 0, 0)) == [node(0, 0, 0), link(0, 0, 0, "x", "+"), link(1, 0, 0, "x", "+"),
                                                   N + node(2, 0, 0)]
    assert route(node(2, 0, 0), node(0, 0, 0)) == [node(2, 0, 0), link(2, 0, 0, "x", "+"), link(3, 0, 0, "x", "+"),
                                                   N + node(0, 0, 0)]
    # x, then y, then z.
    assert route(node(1, 1, 1), node(2, 3, 0, 1)) == [
        node(1, 1, 1), link(1, 1, 1, "x", "+"), link(2, 1, 1, "y", "+"), link(2, 2, 1, "y", "+"),
        link(2, 3, 1, "z", "-"), N + node(2, 3, 0, 1)]
    # Same router: in and out, no hop; same node: no route.
    assert route(node(1, 1, 1), node(1, 1, 1, 1)) == [node(1, 1, 1), N + node(1, 1, 1, 1)]
    assert route(node(1, 1, 1), node(1, 1, 1)) == []


def test_hop_sum_by_hand_and_against_pairs():
    # Both nodes of routers (0,0,0) and (2,2,2): 8 ordered cross-router pairs of 6 hops.
    job = np.array([node(0, 0, 0), node(0, 0, 0, 1), node(2, 2, 2), node(2, 2, 2, 1)])
    assert int(aph.hop_sums(T4, aph.pad([job], width=8))[0]) == 48
    rng = np.random.default_rng(0)
    allocs = [rng.choice(N, int(rng.integers(2, 60)), replace=False) for _ in range(500)]
    fast = np.asarray(aph.hop_sums(T4, aph.pad(allocs, width=64)))
    # Brute force over every ordered pair of every allocation, from the numbering and summed
    # ring distances (the module docstring), not through the machine's own hops.
    def ring_hops(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ca, cb = ((n // 2 // 16, n // 2 // 4 % 4, n // 2 % 4) for n in (a, b))
        return sum(np.minimum(abs(u - v), 4 - abs(u - v)) for u, v in zip(ca, cb))

    slow = [int(ring_hops(al[:, None], al[None, :]).sum()) for al in allocs]
    assert fast.tolist() == slow
    assert np.array_equal(fast, np.asarray(aph.hop_sums_pairwise(T4, aph.pad(allocs, width=64))))


def test_bad_configs_are_one_line():
    for cfg, words in [({"kind": "torus3d", "name": "x", "dims": [4, 4]}, "dims"),
                       ({"kind": "torus3d", "name": "x", "dims": [4, 4, 4], "nodes_per_router": 0}, "nodes_per_router"),
                       ({"kind": "torus3d", "name": "x", "dims": [4, 4, 4], "wrap": True}, "unknown key"),
                       ({"kind": "torus3d", "name": "x"}, "missing key")]:
        with pytest.raises(topology.TopologyError, match=words):
            topology.from_config(cfg)
    # Session 47's exploratory run: tracebacks, values that failed later (float32 underflow:
    # nan slowdowns; an infinite link), silent wraps and conversions.
    t = {"kind": "torus3d", "name": "x", "dims": [3, 5, 7]}
    kinds = [{"kind": f"K{i}", "routers": [i % 100]} for i in range(127)]
    for change, words in [({"dims": 8}, "dims must be three positive integers, got 8"),
                          ({"dims": None}, "dims must be three"),
                          ({"bandwidth": 2.0}, r"bandwidth must be three numbers \(x, y, z\) from 1e-06 to 1e\+06"),
                          ({"bandwidth": [1e-300, 1, 1]}, "bandwidth must be three numbers"),
                          ({"bandwidth": [float("inf"), 1, 1]}, "bandwidth must be three numbers"),
                          ({"name": 42}, "topology name 42: must be a text .* quote a number: name: '42'"),
                          ({"name": None}, "topology name None: must be a text"),
                          ({"node_kinds": "XK"}, "node_kinds must be a list of entries"),
                          ({"node_kinds": {"kind": "XK", "routers": [0]}}, "node_kinds must be a list of entries"),
                          ({"node_kinds": [{"kind": 5, "routers": [0]}]}, r"node_kinds\[0\]: kind must be a name"),
                          ({"node_kinds": [{"kind": None, "routers": [0]}]}, r"node_kinds\[0\]: kind must be a name"),
                          ({"node_kinds": [{"kind": "A", "region": {"origin": [0, 0, 0], "shape": [1, 1, 1], "size": 9}}]},
                           r"region takes exactly \['origin', 'shape'\], got \['origin', 'shape', 'size'\]"),
                          ({"node_kinds": [{"kind": "A", "scatter": {"fraction": 0.1, "seed": 1, "sed": 2}}]},
                           "scatter takes exactly"),
                          ({"node_kinds": [{"kind": "A", "region": {"origin": [3, 0, 0], "shape": [1, 1, 1]}}]},
                           r"region origin \[3, 0, 0\] lies outside dims \[3, 5, 7\]"),
                          ({"node_kinds": kinds}, "node_kinds names 128 kinds with XE; at most 127")]:
        with pytest.raises(topology.TopologyError, match=words):
            topology.from_config({**t, **change}).node_kind
    assert len(topology.from_config({**t, "node_kinds": kinds[:126]}).node_kind_names) == 127
    ok = topology.from_config({**t, "node_kinds": [{"kind": "A", "region": {"origin": [2, 4, 6], "shape": [2, 2, 2]}}]})
    assert np.count_nonzero(ok.node_kind == 1) == 8 * ok.nodes_per_router  # a region may wrap past the last router


@pytest.mark.parametrize("dims", [(4, 4, 4), (3, 5, 6), (7, 2, 5)])
def test_job_links_are_exactly_the_links_of_the_job_routes(dims):
    # Even rings (half-way ties go positive), odd ones, a ring of two; scattered jobs and
    # runs of consecutive nodes (many routers sharing rings).
    t = topology.from_config({"kind": "torus3d", "name": "t", "dims": list(dims), "nodes_per_router": 2})
    rng = np.random.default_rng(5)
    jobs = [nodes for n in (1, 2, 5, 17, 60, t.n_nodes)
            for nodes in (rng.choice(t.n_nodes, n, replace=False), np.arange(n) + rng.integers(0, t.n_nodes - n + 1))]
    # Every job's pairs in chunks of B: the eager router compiles once per batch shape.
    pairs = [np.meshgrid(nodes, nodes, indexing="ij") for nodes in jobs]
    routes = batched(t, np.concatenate([s.ravel() for s, _ in pairs]), np.concatenate([d.ravel() for _, d in pairs]))
    ends = np.cumsum([len(nodes) ** 2 for nodes in jobs])
    for nodes, r in zip(jobs, np.split(routes, ends[:-1])):
        used = np.unique(r[r >= 2 * t.n_nodes])  # router links only
        assert np.array_equal(np.flatnonzero(t.job_links(nodes)), used)


def test_orderings_have_the_structure_the_paper_describes():
    bw = load("bluewaters")
    def routers(name, k):
        r = bw.ordering(name)[::2][:k] // 2
        return np.stack(bw.router_coords(r), axis=1)
    # -O2: yz slabs 4 routers thick in x, x fastest within the slab.
    o2 = routers("O2", 4 * 24 * 24)
    assert set(o2[:, 0]) == {0, 1, 2, 3} and o2[:4].tolist() == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]]
    # -OY: whole xz planes, one y after another.
    assert set(routers("OY", 24 * 24)[:, 1]) == {0}
    for name, thick in (("2Y", 2), ("4Y", 4)):
        order = routers(name, 24 ** 3)
        # The XK block's layers (y 0-5) come last: after every router of y 6-21 (4Y's last two
        # blocks of 4 layers hold y 22-23 too).
        xk_layers = order[:, 1] < 6
        assert np.flatnonzero(~xk_layers & (order[:, 1] < 22)).max() < np.flatnonzero(xk_layers).min()
        order[:, 1] = (order[:, 1] - 6) % 24  # y counted from where the sweep starts (below)
        size = 4 * thick * 8
        blocks = order.reshape(-1, size, 3)
        corner = blocks.min(axis=1)
        # every block is a whole 4 x thick x 8 box of routers ...
        assert np.all(blocks.max(axis=1) - corner == [3, thick - 1, 7])
        # ... the torus is filled along z first, then x, then y, from y = 6: past the XK block
        # (x 17-7, y 0-5), whose partial layers come last ...
        assert corner[:3].tolist() == [[0, 0, 0], [0, 0, 8], [0, 0, 16]]
        assert corner[3].tolist() == [4, 0, 16]  # the next x step starts where z ended (serpentine)
        # ... and consecutive blocks always touch: one step in one dimension.
        step = np.abs(np.diff(corner // [4, thick, 8], axis=0)).sum(axis=1)
        assert np.all(step == 1)
    # A torus without such a region starts at y = 0.
    plain = load("torus8")
    first = np.stack(plain.router_coords(plain.ordering("2Y")[::2][:64] // 2), axis=1)
    assert set(first[:, 1]) == {0, 1}


@pytest.fixture(scope="module")
def thunder_columns() -> tuple[list[np.ndarray], list[float]]:
    """The first 4 days of Thunder x2 on torus8, prepared (883 jobs, 633 of them waiting under
    first fit; the 10 days read before held 4,287), and the count-based reference's start
    times (the same for every ordering: it counts free nodes)."""
    from pathlib import Path

    from fattorus import workload
    from fattorus.sched import reference, replay

    n_nodes = load("torus8").n_nodes
    trace = Path(__file__).resolve().parents[1] / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, n_nodes)
    prepared, _ = replay.prepare(workload.first_days(jobs, 4), n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    return cols, reference.schedule(*[c.tolist() for c in cols], n_nodes, easy=True)


@pytest.mark.parametrize("ordering", ["id", "O2", "2Y"])
def test_first_fit_start_times_equal_the_count_based_reference(ordering, thunder_columns):
    from fattorus.sched import policy, replay

    t8 = load("torus8")
    cols, expected = thunder_columns
    got = replay.simulate(*cols, t8, policy.make("first_fit", t8, {"ordering": ordering}), "easy")
    assert len(cols[0]) > 300 and got.backfilled.sum() > 0 and (got.start > cols[0]).sum() > 300
    assert np.array_equal(got.start, np.array(expected, dtype=float))
    # the nodes follow the ordering: the first job gets the ordering's first nodes
    first = int(np.argmin(got.start))
    assert np.array_equal(np.sort(got.alloc[first]), np.sort(t8.ordering(ordering)[: int(cols[3][first])]))


def test_hilbert_ordering_walks_neighbouring_routers():
    """On a 2^k cube every step of the Hilbert order moves to an adjacent router (no wrap-around
    needed); on Blue Waters (24^3, padded to 32^3) it is still a permutation of every slot."""
    for dims in ([8, 8, 8], [4, 4, 4]):
        t = topology.from_config({"kind": "torus3d", "name": "h", "dims": dims, "nodes_per_router": 2})
        order = t.ordering("hilbert")
        assert sorted(order.tolist()) == list(range(t.n_nodes))
        routers = order[::2] // 2
        assert np.array_equal(order[1::2], order[::2] + 1)  # both slots of a router together
        xyz = np.stack(t.router_coords(routers), 1)
        assert (np.abs(np.diff(xyz, axis=0)).sum(axis=1) == 1).all()
    bw = load("bluewaters")
    assert np.array_equal(np.sort(bw.ordering("hilbert")), np.arange(bw.n_nodes))


def test_max_hops_of_finds_a_far_pair_past_its_first_chunk():
    """The generic ``max_hops_of`` (fat-trees and dragonflies use it) goes over one node per
    router in chunks of 512 rows against all, stopping at the machine's diameter: a job whose
    farthest pair lies wholly past the first chunk. On Blue Waters (24^3 routers, diameter
    36) the 512 routers of ids 0-511 (x = 0) are at most 35 hops from the two routers added,
    (1, 0, 0) and (13, 12, 12), which are 36 apart. The torus's own method too."""
    from fattorus.topology.base import Topology

    bw = load("bluewaters")
    p, (X, Y, Z) = bw.nodes_per_router, bw.dims
    far = [(1 * Y + 0) * Z + 0, (13 * Y + 12) * Z + 12]
    nodes = np.array(list(range(512)) + far) * p
    assert bw.max_hops == 36
    assert Topology.max_hops_of(bw, nodes) == bw.max_hops_of(nodes) == 36
    # Only the far pair is 36 apart (pairwise hops: the cluster is at most 35 from either).
    h = np.asarray(bw.hops(nodes[:, None], nodes[None, :]))
    assert h[:512].max() == 35 and h[512, 513] == 36


def test_torus_max_hops_of_finds_a_far_pair_past_its_first_columns():
    """The torus's ``max_hops_of`` goes over the job's (x, y) columns in chunks of 64 rows
    against all, stopping at the diameter (36 on Blue Waters). A job whose first 64 columns
    (x = 0 and 1, and x = 2 with y < 16, at z = 0) reach 35 hops at most, through
    (13, 12, 11), while (3, 0, 23) and (15, 12, 11), both past them, are 36 apart: an early
    stop short of the diameter would answer 35."""
    bw = load("bluewaters")
    p, (X, Y, Z) = bw.nodes_per_router, bw.dims
    first = [((x * Y + y) * Z) for x in range(3) for y in range(Y if x < 2 else 16)]
    later = [(13 * Y + 12) * Z + 11, (3 * Y + 0) * Z + 23, (15 * Y + 12) * Z + 11]
    nodes = np.array(first + later) * p
    h = np.asarray(bw.hops(nodes[:, None], nodes[None, :]))
    assert len(first) == 64 and h[:64].max() == 35 and h.max() == 36 == bw.max_hops
    assert bw.max_hops_of(nodes) == 36


def test_max_hops_of_equals_pairwise():
    from fattorus.topology.base import Topology

    t = topology.from_config({"kind": "torus3d", "name": "m", "dims": [6, 5, 7], "nodes_per_router": 2})
    rng = np.random.default_rng(3)
    for _ in range(200):
        nodes = rng.choice(t.n_nodes, int(rng.integers(1, 80)), replace=False)
        brute = int(np.asarray(t.hops(nodes[:, None], nodes[None, :])).max())
        assert t.max_hops_of(nodes) == brute == Topology.max_hops_of(t, nodes)
    box = t.bounding_box(np.array([0, 2 * (6 * 35 - 1)]))  # routers (0,0,0) and (5,4,6): wraps to 2x2x2
    assert box == (2, 2, 2)


def test_job_links_equal_the_routes_on_an_uneven_torus():
    t = topology.from_config({"kind": "torus3d", "name": "u", "dims": [6, 5, 8], "nodes_per_router": 2})
    rng = np.random.default_rng(11)
    for n in (9, 60):
        nodes = rng.choice(t.n_nodes, n, replace=False)
        src, dst = np.meshgrid(nodes, nodes, indexing="ij")
        r = batched(t, src.ravel(), dst.ravel())
        used = np.unique(r[r >= 2 * t.n_nodes])
        assert np.array_equal(np.flatnonzero(t.job_links(nodes)), used)
