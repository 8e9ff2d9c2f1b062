"""Topology-oblivious policies (`to`, `to_random`): any ``n`` free nodes will do."""

from __future__ import annotations

import numpy as np


def _split(state, prefer: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if prefer is None:
        return np.empty(0, np.int64), np.flatnonzero(state.free)
    return np.flatnonzero(state.free & prefer), np.flatnonzero(state.free & ~prefer)


class TopologyOblivious:
    """First fit in node-id order: the lowest-numbered free nodes (preferred nodes first)."""

    name = "to"

    per_leaf = False  # feasibility needs only the free-node count

    def feasible(self, c, n: int, waited_s=0.0) -> np.ndarray:
        """Whether ``n`` nodes fit, for (optionally batched) counts: ``n`` nodes are free."""
        return np.asarray(c.n_free) >= n

    def place(self, state, n: int, prefer: np.ndarray | None = None, waited_s: float = 0.0) -> np.ndarray | None:
        if n > state.n_free:
            return None
        first, rest = _split(state, prefer)
        return np.concatenate([first, rest])[:n]


class TopologyObliviousRandom(TopologyOblivious):
    """``n`` free nodes drawn uniformly at random (preferred nodes first), seeded."""

    name = "to_random"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def place(self, state, n: int, prefer: np.ndarray | None = None, waited_s: float = 0.0) -> np.ndarray | None:
        if n > state.n_free:
            return None
        first, rest = _split(state, prefer)
        if len(first) >= n:
            return np.sort(self.rng.choice(first, n, replace=False))
        return np.concatenate([first, np.sort(self.rng.choice(rest, n - len(first), replace=False))])
