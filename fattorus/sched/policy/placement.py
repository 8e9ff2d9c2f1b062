"""Placement policies of the network simulators (Damselfly, SST), over any topology's levels.

Each takes any ``n`` free nodes — only *which* nodes differs — so every one of them is
topology-oblivious in time: its start times are count-based EASY's (tested). They read the
topology only through its grouping levels (innermost: e.g. the router; outermost: e.g. the
group), so they serve every family; the dragonfly paper (issue 13) compares them.

* ``random_router``: routers (innermost groups) with free nodes in random order, all free
  nodes of each before the next.
* ``random_group``: outermost groups with free nodes in random order, their free nodes in id
  order.
* ``random_chassis`` (dragonflies only): chassis — one row of routers of a group, an Aries
  chassis, Damselfly's ``randomChassis`` — in random order, all free nodes of each (id order)
  before the next.
* ``round_robin_node``: one free node per router in turn, cycling over routers from the one
  after the last router a started job used (spreads a job thinly).
* ``round_robin_router``: whole routers in turn from the one after the last used.
* ``compact`` (Edison-like): the job's nodes as close as possible — the outermost group
  that holds it with the fewest free nodes (best fit, lowest id), else the group with the most
  free nodes and then its neighbours by id distance (``g+1, g-1, g+2, …``), free nodes in id
  order within each.

Random draws come from ``numpy.random.default_rng(seed)`` (the run's seed).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.policy.oblivious import TopologyOblivious


class _Placement(TopologyOblivious):
    """Any ``n`` free nodes (count feasibility), chosen by :meth:`order`; preferred nodes first."""

    def __init__(self, topo: Any, seed: int = 0) -> None:
        super().__init__(topo)
        self.rng = np.random.default_rng(seed)
        outer = len(topo.levels) - 1
        self.router = np.asarray(topo.group_of(0, np.arange(topo.n_nodes)))
        self.group = np.asarray(topo.group_of(outer, np.arange(topo.n_nodes)))
        self.n_routers, self.n_groups = topo.n_groups(0), topo.n_groups(outer)

    @abc.abstractmethod
    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        """Free nodes in the order this policy takes them."""

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """The first ``n`` nodes of :meth:`order` (preferred free nodes first), or None."""
        if n > state.n_free:
            return None
        nodes = self.order(state, n)
        if prefer is not None:
            nodes = np.concatenate([nodes[prefer[nodes]], nodes[~prefer[nodes]]])
        return nodes[:n].astype(np.int64)


def _by_unit(free: np.ndarray, unit: np.ndarray, unit_order: np.ndarray) -> np.ndarray:
    """Free node ids grouped by ``unit`` in ``unit_order`` (rank of each unit), id order within."""
    return free[np.lexsort((free, unit_order[unit[free]]))]


class RandomRouter(_Placement):
    """Whole routers in random order (module docstring)."""

    name = "random_router"

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        return _by_unit(np.flatnonzero(state.free), self.router, self.rng.permutation(self.n_routers))


class RandomGroup(_Placement):
    """Whole outermost groups in random order (module docstring)."""

    name = "random_group"

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        return _by_unit(np.flatnonzero(state.free), self.group, self.rng.permutation(self.n_groups))


class RandomChassis(_Placement):
    """Whole chassis (rows of routers within a group) in random order (module docstring).
    Dragonflies only: the chassis is a level of the machine that the topology interface's
    grouping levels (router, group) do not name, so it is read off the router coordinates."""

    name = "random_chassis"
    families = ("dragonfly",)

    def __init__(self, topo: Any, seed: int = 0) -> None:
        super().__init__(topo, seed)
        g, i, _ = topo.router_coords(self.router)
        self.chassis = np.asarray(g) * topo.rows + np.asarray(i)
        self.n_chassis = topo.groups * topo.rows

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        return _by_unit(np.flatnonzero(state.free), self.chassis, self.rng.permutation(self.n_chassis))


class _RoundRobin(_Placement):
    """Cycles over routers from the one after the last router a started job used."""

    def __init__(self, topo: Any, seed: int = 0) -> None:
        super().__init__(topo, seed)
        self.next_router = 0

    def reset(self, machine: st.MachineState) -> None:
        """Start the cycle at router 0."""
        self.next_router = 0

    def started(self, nodes: np.ndarray, until_s: float = np.inf) -> None:
        """The cycle goes on after the last router the job used."""
        self.next_router = (int(self.router[np.asarray(nodes)[-1]]) + 1) % self.n_routers

    def _rotation(self) -> np.ndarray:
        """Rank of each router in the cycle starting at ``next_router``."""
        return (np.arange(self.n_routers) - self.next_router) % self.n_routers


class RoundRobinRouter(_RoundRobin):
    """Whole routers in turn (module docstring)."""

    name = "round_robin_router"

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        return _by_unit(np.flatnonzero(state.free), self.router, self._rotation())


class RoundRobinNode(_RoundRobin):
    """One node per router in turn (module docstring)."""

    name = "round_robin_node"

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        free = np.flatnonzero(state.free)
        # k-th free node of its router: take every router's first, then every router's second...
        by_router = _by_unit(free, self.router, self._rotation())
        r = self.router[by_router]
        first = np.r_[0, np.flatnonzero(np.diff(r)) + 1]
        k = np.arange(len(by_router)) - np.repeat(first, np.diff(np.r_[first, len(by_router)]))
        return by_router[np.lexsort((self._rotation()[r], k))]


class Compact(_Placement):
    """Edison-like: one group if possible (best fit), else the fullest-free group and its
    neighbours by id distance (module docstring)."""

    name = "compact"

    def order(self, state: st.MachineState, n: int) -> np.ndarray:
        free = np.flatnonzero(state.free)
        G = self.n_groups
        count = np.bincount(self.group[free], minlength=G)
        fits = np.flatnonzero(count >= n)
        if len(fits):
            home = int(fits[np.argmin(count[fits])])  # best fit, lowest id on ties
        else:
            home = int(np.argmax(count))
        g = np.arange(G)
        d = g - home
        # neighbours by distance, g+1 before g-1 at equal distance
        rank = np.argsort(np.lexsort((d < 0, np.abs(d))))
        return _by_unit(free, self.group, rank)


__all__ = ["Compact", "RandomChassis", "RandomGroup", "RandomRouter", "RoundRobinNode", "RoundRobinRouter"]
