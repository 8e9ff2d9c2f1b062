"""Topology-oblivious policies (`to`, `to_random`): any ``n`` free nodes will do, on any family."""

from __future__ import annotations

from typing import Any

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy


def _split(state: st.MachineState, prefer: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if prefer is None:
        return np.empty(0, np.int64), state.free.nonzero()[0]
    return (state.free & prefer).nonzero()[0], (state.free & ~prefer).nonzero()[0]


class TopologyOblivious(Policy):
    """First fit in node-id order: the lowest-numbered free nodes (preferred nodes first)."""

    name = "to"
    needs = st.FREE_ONLY  # feasibility needs only the free-node count
    reads_counts = False  # only the free nodes and their count

    def feasible(self, counts: st.Counts, n: int, waited_s: np.ndarray | float = 0.0) -> np.ndarray:
        """Whether ``n`` nodes fit, for (optionally batched) counts: ``n`` nodes are free."""
        return np.asarray(counts.n_free) >= n

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """The ``n`` lowest-numbered free nodes, preferred ones first, or None."""
        if n > state.n_free:
            return None
        first, rest = _split(state, prefer)
        return np.concatenate([first, rest])[:n]


class TopologyObliviousRandom(TopologyOblivious):
    """``n`` free nodes drawn uniformly at random (preferred nodes first), seeded."""

    name = "to_random"

    def __init__(self, topo: Any, seed: int = 0) -> None:
        super().__init__(topo)
        self.rng = np.random.default_rng(seed)

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """``n`` free nodes at random (all preferred free nodes are drawn from first), or None."""
        if n > state.n_free:
            return None
        first, rest = _split(state, prefer)
        if len(first) >= n:
            return np.sort(self.rng.choice(first, n, replace=False))
        return np.concatenate([first, np.sort(self.rng.choice(rest, n - len(first), replace=False))])


class FirstFit(TopologyOblivious):
    """First fit over a named node ordering of the topology (``topo.ordering(name)``): the
    first free nodes in that order, preferred nodes first — what Moab does with an ALPS node
    list. Topology-oblivious: it only counts nodes, so its start times are count-based EASY's."""

    name = "first_fit"

    def __init__(self, topo: Any, ordering: str = "id") -> None:
        super().__init__(topo)
        self.ordering = ordering
        self.order = np.asarray(topo.ordering(ordering), np.int64)

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """The first ``n`` free nodes in the ordering (preferred free nodes first), or None."""
        if n > state.n_free:
            return None
        free = self.order[state.free[self.order]]
        if prefer is not None:
            free = np.concatenate([free[prefer[free]], free[~prefer[free]]])
        return free[:n]
