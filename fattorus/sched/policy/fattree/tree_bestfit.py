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

from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy
from fattorus.sched.policy.fattree.leaves import LEAF, POD, take_counts, take_from_leaves


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


class TreeBestFit(Policy):
    """Best fit over the switch tree; see the module docstring."""

    name = "tree_bestfit"
    families = ("fattree",)
    needs = st.FREE_ONLY  # feasibility needs only the free-node count

    def feasible(self, counts: st.Counts, n: int, waited_s: np.ndarray | float = 0.0) -> np.ndarray:
        """Whether ``n`` nodes fit, for (optionally batched) counts: ``n`` nodes are free."""
        return np.asarray(counts.n_free) >= n

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """Nodes for an ``n``-node job, or None when fewer than ``n`` are free. ``prefer`` is ignored."""
        ft = self.topo
        if n > state.n_free:
            return None
        leaf_free, pod_free = state.group_free[LEAF], state.group_free[POD]
        leaves = np.flatnonzero(leaf_free >= n)
        if len(leaves):
            leaf = leaves[np.argmin(leaf_free[leaves])]
            return take_from_leaves(state, np.array([leaf]), n)
        pods = np.flatnonzero(pod_free >= n)
        if len(pods):
            plan = [(int(pods[np.argmin(pod_free[pods])]), n)]
        else:
            plan = _best_fit_split(pod_free, n)
        leaves, takes = [], []
        for pod, count in plan:
            first_leaf = pod * ft.leaves_per_pod
            in_pod = leaf_free[first_leaf : first_leaf + ft.leaves_per_pod]
            for leaf, take in _best_fit_split(in_pod, count):
                leaves.append(first_leaf + leaf)
                takes.append(take)
        # One gather for every leaf of the plan (a call per leaf was most of a replay's time).
        return take_counts(state, np.array(leaves), np.array(takes))
