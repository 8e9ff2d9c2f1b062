"""Fat-tree vocabulary over the generic machine state, and taking free nodes leaf by leaf.

The generic state (:mod:`fattorus.sched.state`) counts per grouping level and per footprint
class; on a fat-tree level 0 is the leaf switch, level 1 the pod, and classes 1/2/3 are the
job types T1/T2/T3 (one leaf, one pod, several pods).
"""

from __future__ import annotations

import numpy as np

#: Grouping levels of a fat-tree (``topo.levels``): leaf switch, pod.
LEAF, POD = 0, 1
#: Job types of the fat-tree paper = the topology's size / footprint classes 1, 2, 3.
T1, T2, T3 = 1, 2, 3

__all__ = ["LEAF", "POD", "T1", "T2", "T3", "take_counts", "take_from_leaves"]


def take_from_leaves(state, leaves: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` free nodes of ``leaves`` visited in the given order (lowest slot first)."""
    k = state.topo.nodes_per_leaf
    # The visited leaves' slots row by row are the visiting order: the first n free ones
    # (one pass, ~5x the per-leaf counts and cumulative sums this replaced; same nodes).
    taken = state.free.reshape(-1, k)[leaves].nonzero()
    return leaves[taken[0][:n]] * k + taken[1][:n]


def take_counts(state, leaves: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The first ``counts[i]`` free nodes of each of ``leaves`` (lowest slot first), leaf by
    leaf in the given order (a count past a leaf's free nodes takes them all)."""
    k = state.topo.nodes_per_leaf
    free2d = state.free.reshape(-1, k)[leaves]
    chosen = free2d & (np.cumsum(free2d, axis=1) <= np.asarray(counts)[:, None])
    return (leaves[:, None] * k + np.arange(k))[chosen]
