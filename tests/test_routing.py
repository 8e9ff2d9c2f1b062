"""D-mod-k routes against an explicit switch graph and a hand-written BFS.

The graph is built here from the topology's definition (spec `machines.md` and the wiring
documented in `fattorus/routing.py`), independently of the routing code: vertices are
nodes, leaves, L2 switches (pod, s) and cores; every cable is an edge both ways.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from fattorus.topology import fattree
from fattorus.topology import fattree_routing as routing
from fattorus.topology.fattree import FatTree, TopologyError

SMALL = ["ft6", "ft6x6", "ft6_tapered"]


class Graph:
    """Explicit fat-tree graph with the documented vertex numbering."""

    def __init__(self, ft: FatTree):
        k, L, P = ft.nodes_per_leaf, ft.leaves_per_pod, ft.pods
        S = ft.up_ports if ft.up_ports is not None else k
        cores = ft.core_switches if ft.core_switches is not None else ft.radix
        C = cores // S
        N = P * L * k
        self.S, self.C, self.k, self.L = S, C, k, L
        self.N = N
        self.leaf0 = N
        self.l2_0 = N + P * L
        self.core0 = self.l2_0 + P * S
        self.kind: dict[int, str] = {}
        self.adj: dict[int, set[int]] = {}
        for n in range(N):
            pod, rest = divmod(n, L * k)
            leaf = pod * L + rest // k
            self._edge(n, "node", self.leaf(leaf), "leaf")
        for pod in range(P):
            for li in range(L):
                for s in range(S):
                    self._edge(self.leaf(pod * L + li), "leaf", self.l2(pod, s), "l2")
            for s in range(S):
                for j in range(C):
                    self._edge(self.l2(pod, s), "l2", self.core(s * C + j), "core")

    def leaf(self, i: int) -> int:
        return self.leaf0 + i

    def l2(self, pod: int, s: int) -> int:
        return self.l2_0 + pod * self.S + s

    def core(self, c: int) -> int:
        return self.core0 + c

    def _edge(self, a: int, ka: str, b: int, kb: str) -> None:
        self.kind[a], self.kind[b] = ka, kb
        self.adj.setdefault(a, set()).add(b)
        self.adj.setdefault(b, set()).add(a)

    def bfs(self, src: int) -> dict[int, int]:
        """Shortest-path lengths (edges) from ``src`` to every vertex."""
        dist = {src: 0}
        queue = deque([src])
        while queue:
            v = queue.popleft()
            for w in self.adj[v]:
                if w not in dist:
                    dist[w] = dist[v] + 1
                    queue.append(w)
        return dist

    def directed_edges(self) -> set[tuple[int, int]]:
        return {(a, b) for a, nbrs in self.adj.items() for b in nbrs}


LEVEL = {frozenset({"node", "leaf"}): 0, frozenset({"leaf", "l2"}): 1, frozenset({"l2", "core"}): 2}
HEIGHT = {"node": 0, "leaf": 1, "l2": 2, "core": 3}


@pytest.mark.parametrize("name", SMALL)
def test_link_metadata_matches_graph(name):
    ft = fattree.load(name)
    g = Graph(ft)
    meta = routing.links(ft)
    pairs = list(zip(meta.src.tolist(), meta.dst.tolist()))
    assert len(pairs) == routing.n_links(ft) == meta.n_links
    assert len(set(pairs)) == len(pairs), "a directed link appears twice"
    assert set(pairs) == g.directed_edges()
    for i, (a, b) in enumerate(pairs):
        assert meta.level[i] == LEVEL[frozenset({g.kind[a], g.kind[b]})]
        assert bool(meta.up[i]) == (HEIGHT[g.kind[b]] > HEIGHT[g.kind[a]])
    # Levels are contiguous blocks matching level_slices.
    for lv, sl in enumerate(routing.level_slices(ft)):
        assert np.all(meta.level[sl] == lv)
        assert np.all(routing.link_level(ft, np.arange(meta.n_links)[sl]) == lv)


@pytest.mark.parametrize("name", SMALL)
def test_every_route_is_a_dmodk_shortest_path(name):
    ft = fattree.load(name)
    g = Graph(ft)
    meta = routing.links(ft)
    N = ft.n_nodes
    src, dst = np.divmod(np.arange(N * N), N)
    r = np.asarray(routing.routes(ft, src, dst))
    assert r.shape == (N * N, routing.HOPS_MAX)
    dist = {a: g.bfs(a) for a in range(N)}
    for a, b, row in zip(src.tolist(), dst.tolist(), r):
        ids = row[row >= 0]
        assert np.all(row[len(ids):] == -1), "padding must come last"
        if a == b:
            assert len(ids) == 0
            continue
        # A path: starts at a, consecutive links connect, ends at b.
        assert meta.src[ids[0]] == a and meta.dst[ids[-1]] == b
        assert np.all(meta.dst[ids[:-1]] == meta.src[ids[1:]])
        # Shortest: as many links as the BFS distance.
        assert len(ids) == dist[a][b], (a, b, ids)
        # Hops (inter-switch links only) are the paper's H_T.
        assert len(ids) - 2 == fattree.hops(ft, a, b)
        assert routing.route_hops(ft, row) == fattree.hops(ft, a, b)
        # D-mod-k choices: L2 index dst mod S, core (dst mod S) * C + (dst // S) mod C.
        visited = meta.dst[ids[:-1]]
        for v in visited:
            if g.kind[v] == "l2":
                assert (v - g.l2_0) % g.S == b % g.S
            if g.kind[v] == "core":
                assert v - g.core0 == (b % g.S) * g.C + (b // g.S) % g.C


def test_routes_on_cab_sample_are_shortest_paths():
    ft = fattree.load("cab")
    g = Graph(ft)
    meta = routing.links(ft)
    rng = np.random.default_rng(3)
    src = rng.integers(0, ft.n_nodes, 12)
    dst = rng.integers(0, ft.n_nodes, (12, 40))
    r = np.asarray(routing.routes(ft, np.repeat(src[:, None], 40, axis=1), dst))
    assert r.shape == (12, 40, routing.HOPS_MAX)
    for i, a in enumerate(src.tolist()):
        dist = g.bfs(a)
        for b, row in zip(dst[i].tolist(), r[i]):
            ids = row[row >= 0]
            if a == b:
                assert len(ids) == 0
                continue
            assert len(ids) == dist[b]
            assert meta.src[ids[0]] == a and meta.dst[ids[-1]] == b
            assert np.all(meta.dst[ids[:-1]] == meta.src[ids[1:]])


def test_padding_and_self_flows_have_empty_routes():
    ft = fattree.load("ft6")
    r = np.asarray(routing.routes(ft, np.array([-1, 3, 5, 0]), np.array([4, -1, 5, 17])))
    assert np.all(r[:3] == -1)
    assert np.all(r[3] >= 0)


def test_hand_worked_cross_pod_route_on_ft6():
    # Node 2 (pod 0, leaf 0) -> node 10 (pod 1, leaf 3): S = 3, C = 6 // 3 = 2,
    # L2 index 10 mod 3 = 1, core 1 * 2 + (10 // 3) mod 2 = 3.
    ft = fattree.load("ft6")
    meta = routing.links(ft)
    row = np.asarray(routing.routes(ft, np.array([2]), np.array([10])))[0]
    N, leaves, S = 18, 6, 3
    leaf = lambda i: N + i  # noqa: E731
    l2 = lambda pod, s: N + leaves + pod * S + s  # noqa: E731
    core = lambda c: N + leaves + 2 * S + c  # noqa: E731
    path = [2, leaf(0), l2(0, 1), core(3), l2(1, 1), leaf(3), 10]
    assert list(zip(meta.src[row], meta.dst[row])) == list(zip(path[:-1], path[1:]))


def test_core_wiring_is_validated():
    # A machine the radix cannot wire is refused when it is built (issue 10), in one line.
    with pytest.raises(TopologyError, match="multiple"):
        FatTree(name="bad", radix=6, nodes_per_leaf=3, leaves_per_pod=3, pods=2, up_ports=3, core_switches=5)
    # 12 cores / 3 L2 = 4 cores per L2, but an L2 has only radix - L = 3 up-ports.
    with pytest.raises(TopologyError, match="up-ports"):
        FatTree(name="tm", radix=6, nodes_per_leaf=3, leaves_per_pod=3, pods=2, up_ports=3, core_switches=12)


def test_link_counts():
    # Hand count for ft6: 18 nodes x 2 + 6 leaves x 3 L2 x 2 + 2 pods x 3 L2 x 2 cores x 2 = 96.
    assert routing.n_links(fattree.load("ft6")) == 96
    # Cab: 1296 x 2 + 72 leaves x 18 x 2 + 4 pods x 18 L2 x 2 cores x 2 = 5472.
    assert routing.n_links(fattree.load("cab")) == 5472
