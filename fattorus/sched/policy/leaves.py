"""Taking free nodes leaf by leaf: the one node-level step every fat-tree policy shares."""

from __future__ import annotations

import numpy as np


def take_from_leaves(state, leaves: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` free nodes of ``leaves`` visited in the given order (lowest slot first)."""
    k = state.ft.nodes_per_leaf
    free2d = state.free.reshape(-1, k)[leaves]
    rank = np.cumsum(free2d, axis=1)
    # How many nodes each visited leaf still has to give: what is left of n after the
    # leaves before it.
    before = np.concatenate([[0], np.cumsum(free2d.sum(axis=1))[:-1]])
    take = np.clip(n - before, 0, k)
    chosen = free2d & (rank <= take[:, None])
    return (leaves[:, None] * k + np.arange(k))[chosen]
