"""``feature``: predefined node features of the torus paper (Section II-B), on any 3D torus.

Blue Waters defined named prisms ("node features", e.g. 24 x 6 x 24 Geminis holding ~6,700
compute nodes); a job that asks for features runs in the first one of its list with enough
idle compute nodes. Here every job of at least ``min_nodes`` nodes that fits a feature asks
for all of them, in config order; it takes the feature's first free usable nodes in
prism-local order (x slowest, z fastest). Other jobs (smaller than ``min_nodes``, or larger
than every feature) take the first free nodes of the machine in the ``ordering`` — as on
Blue Waters, where jobs that do not target a feature may land in one.

Features come from the policy's ``features`` parameter (a list of ``{origin: [x, y, z],
shape: [a, b, c]}`` router boxes, wrapping) or, by default, xz slabs spanning x and z and a
quarter of y thick, one starting at every ``max(1, Y // 12)``-th y (Blue Waters: 24 x 6 x 24
at y = 0, 2, ..., 22: twelve overlapping features; docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy


def default_features(dims: tuple[int, int, int]) -> list[dict[str, list[int]]]:
    """xz slabs ``X x ceil(Y/4) x Z`` starting at every ``max(1, Y // 12)``-th y."""
    X, Y, Z = dims
    thick, step = max(1, -(-Y // 4)), max(1, Y // 12)
    return [{"origin": [0, y, 0], "shape": [X, thick, Z]} for y in range(0, Y, step)]


class Feature(Policy):
    """First feature with enough idle usable nodes; see the module docstring."""

    name = "feature"
    families = ("torus3d",)
    needs = None
    reads_counts = False  # only the free nodes

    def __init__(self, topo: Any, features: list[Mapping[str, Any]] | None = None, min_nodes: int = 0,
                 ordering: str = "id") -> None:
        super().__init__(topo)
        self.min_nodes = int(min_nodes)
        self.order = np.asarray(topo.ordering(ordering), np.int64)
        self.features = [self._nodes_of(i, f) for i, f in enumerate(features or default_features(topo.dims))]
        self.usable = np.ones(topo.n_nodes, bool)
        self.capacity = max(len(f) for f in self.features)

    def _nodes_of(self, i: int, feature: Mapping[str, Any]) -> np.ndarray:
        """Node ids of feature ``i`` in prism-local order; one-line ``ValueError`` if malformed."""
        try:
            origin, shape = [int(c) for c in feature["origin"]], [int(c) for c in feature["shape"]]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"policy 'feature': features[{i}] needs origin [x, y, z] and shape [a, b, c]") from None
        dims = self.topo.dims
        if len(origin) != 3 or len(shape) != 3:
            raise ValueError(f"policy 'feature': features[{i}] needs origin [x, y, z] and shape [a, b, c] (three "
                             f"coordinates each), got origin {origin} and shape {shape}")
        if not all(1 <= s <= d for s, d in zip(shape, dims)):
            raise ValueError(f"policy 'feature': features[{i}] shape {shape} must be 1..{list(dims)} per dimension")
        # A feature may wrap around a ring (its origin near the end), but an origin past the
        # ring is a typo that would silently move the feature (halo_study refuses it too).
        if not all(0 <= o < d for o, d in zip(origin, dims)):
            raise ValueError(f"policy 'feature': features[{i}] origin {origin} must lie on the machine: "
                             f"0..{[d - 1 for d in dims]} per dimension")
        X, Y, Z = dims
        xs, ys, zs = ((o + np.arange(s)) % d for o, s, d in zip(origin, shape, dims))
        routers = ((xs[:, None, None] * Y + ys[None, :, None]) * Z + zs[None, None, :]).ravel()
        p = self.topo.nodes_per_router
        return (routers[:, None] * p + np.arange(p)).ravel()

    def reset(self, machine: st.MachineState) -> None:
        """The usable nodes are the free ones at the start; features keep only those."""
        self.usable = machine.free.copy()
        self.capacity = max(int(self.usable[f].sum()) for f in self.features)

    def asks(self, n: int) -> bool:
        """Whether an ``n``-node job asks for a feature."""
        return self.min_nodes <= n <= self.capacity

    def size_class(self, n_nodes: np.ndarray | int) -> np.ndarray | int:
        """1 for jobs that ask for a feature, 2 for the others (feasibility is monotone within each)."""
        n = np.asarray(n_nodes)
        out = np.where((n >= self.min_nodes) & (n <= self.capacity), 1, 2)
        return int(out) if out.ndim == 0 else out

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """The first ``n`` free usable nodes of the first feature that has them (or of the
        ordering, for a job that does not ask), preferred nodes first, or None."""
        if not self.asks(n):
            free = self.order[state.free[self.order]]
            return _first(free, n, prefer)
        for nodes in self.features:
            free = nodes[state.free[nodes] & self.usable[nodes]]
            if len(free) >= n:
                return _first(free, n, prefer)
        return None


def _first(free: np.ndarray, n: int, prefer: np.ndarray | None) -> np.ndarray | None:
    if len(free) < n:
        return None
    if prefer is not None:
        free = np.concatenate([free[prefer[free]], free[~prefer[free]]])
    return free[:n]
