"""The ideal placements of tori and dragonflies are local optima of the hop sum (fattorus.topology.compact).

``metrics-and-outputs.md``: the ideal APH is the APH of the most compact placement on the empty
machine. The families search shapes, then :func:`compact.descend` moves single nodes while that
lowers the hop sum. Checked here by brute force from each machine's own ``hops``: no single-node
move of the ideal lowers its hop sum (the shapes alone failed this on 59 of 146 torus8 sizes and
on 5 dragonfly_small sizes), and a hand-built placement that beat the shapes is matched.
"""

from __future__ import annotations

import numpy as np
import pytest

from fattorus import topology
from fattorus.topology import compact


def _hop_matrix(topo) -> np.ndarray:
    nodes = np.arange(topo.n_nodes)
    return np.asarray(topo.hops(nodes[:, None], nodes[None, :])).astype(np.int64)


def _best_move(H: np.ndarray, placement: np.ndarray) -> int:
    """The least change of the ordered-pair hop sum over every move of one node of ``placement``
    to a node outside it, each move's change being ``2 (S[y] - H[x, y] - S[x])`` (S: summed hops
    to the placement); the formula is checked against full sums on a few moves first."""
    inside = np.zeros(len(H), bool)
    inside[placement] = True
    S = H[:, inside].sum(1)
    delta = 2 * (S[None, ~inside] - H[np.ix_(inside, ~inside)] - S[inside][:, None])
    xs, ys = np.flatnonzero(inside), np.flatnonzero(~inside)
    base = H[np.ix_(placement, placement)].sum()
    for i, j in [(0, 0), (len(xs) - 1, len(ys) - 1), (len(xs) // 2, len(ys) // 3)]:
        moved = np.append(np.setdiff1d(placement, xs[i]), ys[j])
        assert H[np.ix_(moved, moved)].sum() - base == delta[i, j]
    return int(delta.min())


@pytest.mark.parametrize("name, sizes", [
    ("torus4", range(2, 127)),
    ("torus8", [*range(2, 1023, 41), 30, 37, 40, 44, 786]),
    ("dragonfly_small", range(2, 63)),
])
def test_no_single_node_move_makes_the_ideal_more_compact(name: str, sizes):
    topo = topology.load(name)
    H = _hop_matrix(topo)
    for n in sizes:
        ideal = np.asarray(topo.ideal_allocation(n))
        assert len(np.unique(ideal)) == n == len(ideal)
        assert topo.ideal_aph(n) == pytest.approx(H[np.ix_(ideal, ideal)].sum() / (n * (n - 1)))
        assert _best_move(H, ideal) >= 0, (name, n)


def test_a_hand_built_placement_that_beat_the_shapes_is_matched():
    """torus8, 40 nodes on 20 routers: the 2 x 3 x 3 block at router 0 plus (2,1,1) and (7,1,1),
    APH 2.4308 by brute force; the best shape (a box prefix) had 2.5128."""
    t = topology.load("torus8")
    routers = [(x, y, z) for x in (0, 1) for y in range(3) for z in range(3)] + [(2, 1, 1), (7, 1, 1)]
    r = np.array([(x * 8 + y) * 8 + z for x, y, z in routers])
    nodes = (r[:, None] * 2 + np.arange(2)).ravel()
    hand = np.asarray(t.hops(nodes[:, None], nodes[None, :])).sum() / (40 * 39)
    assert hand == pytest.approx(2.4308, abs=1e-4)
    assert t.ideal_aph(40) <= hand + 1e-12


def test_descend_on_a_line_gathers_the_nodes_into_one_run():
    """Five routers on a path (distance |i - j|), capacity 1: three nodes at 0, 2, 4 (hop sum
    2 * (2 + 4 + 2) = 16) gather into three neighbours (2 * (1 + 2 + 1) = 8), by hand."""
    mats = np.abs(np.arange(5)[:, None] - np.arange(5)[None, :])[None]
    h, moves = compact.descend(np.array([1, 0, 1, 0, 1]), 1, np.arange(5)[None], mats)
    assert h.sum() == 3 and moves >= 1
    idx = np.flatnonzero(h)
    assert idx.max() - idx.min() == 2  # three neighbouring routers
    assert list(compact.nodes_of(np.array([0, 2, 1]), 2)) == [2, 3, 4]


def test_descend_refuses_asymmetric_distances():
    with pytest.raises(ValueError, match="symmetric"):
        compact.descend(np.array([1, 0]), 1, np.arange(2)[None], np.array([[[0, 1], [2, 0]]]))
