"""Slurm-style tree best fit (`tree_bestfit`, Slurm's topology/tree plugin).

Find the lowest-level switch subtree (leaf, then pod, then the whole machine) with ``n``
free nodes; among the candidates of that level take the one with the fewest free nodes
(best fit). Inside a pod or the machine, children are chosen the way Slurm walks its
switches: while nodes remain to be placed, take the child with the fewest free nodes that
can hold all of the remainder, or, if none can, the child with the most free nodes. It
compacts allocations but does not guarantee isolation.
"""

from __future__ import annotations

import numpy as np

from fattorus.topology.fattree import FatTree
from fattorus.sched.policy.leaves import take_from_leaves


def _best_fit_split(free: np.ndarray, n: int) -> list[tuple[int, int]]:
    """Children and node counts to take from each: ``[(child, count), ...]`` (Slurm order)."""
    free = free.astype(np.int64).copy()
    picks = []
    rem = n
    while rem > 0:
        enough = np.flatnonzero(free >= rem)
        if len(enough):
            child = enough[np.argmin(free[enough])]  # argmin: first (lowest id) on ties
            picks.append((int(child), rem))
            break
        child = int(np.argmax(free))
        picks.append((child, int(free[child])))
        rem -= int(free[child])
        free[child] = 0
    return picks


class TreeBestFit:
    """Best fit over the switch tree; see the module docstring."""

    name = "tree_bestfit"

    def __init__(self, ft: FatTree) -> None:
        self.ft = ft

    per_leaf = False  # feasibility needs only the free-node count

    def feasible(self, c, n: int, waited_s=0.0) -> np.ndarray:
        """Whether ``n`` nodes fit, for (optionally batched) counts: ``n`` nodes are free."""
        return np.asarray(c.n_free) >= n

    def place(self, state, n: int, prefer: np.ndarray | None = None, waited_s: float = 0.0) -> np.ndarray | None:
        """Nodes for an ``n``-node job, or None when fewer than ``n`` are free. ``prefer`` is ignored."""
        ft = self.ft
        if n > state.n_free:
            return None
        leaves = np.flatnonzero(state.leaf_free >= n)
        if len(leaves):
            leaf = leaves[np.argmin(state.leaf_free[leaves])]
            return take_from_leaves(state, np.array([leaf]), n)
        pods = np.flatnonzero(state.pod_free >= n)
        if len(pods):
            plan = [(int(pods[np.argmin(state.pod_free[pods])]), n)]
        else:
            plan = _best_fit_split(state.pod_free, n)
        parts = []
        for pod, count in plan:
            first_leaf = pod * ft.leaves_per_pod
            leaf_free = state.leaf_free[first_leaf : first_leaf + ft.leaves_per_pod]
            for leaf, take in _best_fit_split(leaf_free, count):
                parts.append(take_from_leaves(state, np.array([first_leaf + leaf]), take))
        return np.concatenate(parts)
