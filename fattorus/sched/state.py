"""Machine state of a fat-tree during a scheduler replay.

Which nodes are free, which job type holds each node, and the per-leaf / per-pod counts the
allocation policies decide from (free nodes; nodes held by T2 and T3 jobs). The counts are
kept incrementally, so a policy decision never rescans the whole machine.

Why mutable: the replay's event loop is sequential and changes a handful of nodes per event;
rebuilding immutable arrays of every node at each event would make the loop ``O(N)`` per
event for no gain. Hypothetical states (the reservation's future machine, the machine with
the head's reservation held) are explicit copies (:meth:`FatTreeState.copy`,
:func:`future`, :func:`with_hold`), never aliases.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fattorus.topology.fattree import T2, T3, FatTree


@dataclasses.dataclass
class FatTreeState:
    """Free nodes and job-type occupancy of a fat-tree.

    Attributes:
      ft: the topology.
      free: ``(N,)`` bool, True where the node is free.
      node_type: ``(N,)`` int8, job type (1/2/3) holding the node, 0 when free.
      leaf_free: ``(leaves,)`` free nodes per leaf.
      pod_free: ``(pods,)`` free nodes per pod.
      leaf_t2, leaf_t3: ``(leaves,)`` nodes held by T2 / T3 jobs per leaf (a leaf "holds a
        T2 job" when its count is positive).
      pod_t3: ``(pods,)`` nodes held by T3 jobs per pod.
      n_free: total free nodes.
    """

    ft: FatTree
    free: np.ndarray
    node_type: np.ndarray
    leaf_free: np.ndarray
    pod_free: np.ndarray
    leaf_t2: np.ndarray
    leaf_t3: np.ndarray
    pod_t3: np.ndarray
    n_free: int

    def copy(self) -> FatTreeState:
        """Deep copy (arrays copied, topology shared)."""
        return FatTreeState(
            self.ft,
            self.free.copy(),
            self.node_type.copy(),
            self.leaf_free.copy(),
            self.pod_free.copy(),
            self.leaf_t2.copy(),
            self.leaf_t3.copy(),
            self.pod_t3.copy(),
            self.n_free,
        )


def empty(ft: FatTree) -> FatTreeState:
    """A machine with every node free."""
    return from_nodes(ft, np.ones(ft.n_nodes, bool), np.zeros(ft.n_nodes, np.int8))


def from_nodes(ft: FatTree, free: np.ndarray, node_type: np.ndarray) -> FatTreeState:
    """Build a state (with all counts) from per-node arrays; ``O(N)``, for hypothetical states."""
    k, p = ft.nodes_per_leaf, ft.nodes_per_pod
    leaf_free = free.reshape(ft.n_leaves, k).sum(axis=1, dtype=np.int64)
    leaf_t2 = (node_type == T2).reshape(ft.n_leaves, k).sum(axis=1, dtype=np.int64)
    leaf_t3 = (node_type == T3).reshape(ft.n_leaves, k).sum(axis=1, dtype=np.int64)
    return FatTreeState(
        ft,
        free,
        node_type,
        leaf_free,
        leaf_free.reshape(ft.pods, ft.leaves_per_pod).sum(axis=1),
        leaf_t2,
        leaf_t3,
        leaf_t3.reshape(ft.pods, ft.leaves_per_pod).sum(axis=1),
        int(leaf_free.sum()),
    )


def _count(state: FatTreeState, nodes: np.ndarray, jtype: int, sign: int) -> None:
    ft = state.ft
    leaves = nodes // ft.nodes_per_leaf
    pods = nodes // ft.nodes_per_pod
    if jtype == T2:
        np.add.at(state.leaf_t2, leaves, sign)
    elif jtype == T3:
        np.add.at(state.leaf_t3, leaves, sign)
        np.add.at(state.pod_t3, pods, sign)


def allocate(state: FatTreeState, nodes: np.ndarray, jtype: int) -> None:
    """Mark free ``nodes`` as held by a job of type ``jtype`` (in place)."""
    ft = state.ft
    state.free[nodes] = False
    state.node_type[nodes] = jtype
    np.add.at(state.leaf_free, nodes // ft.nodes_per_leaf, -1)
    np.add.at(state.pod_free, nodes // ft.nodes_per_pod, -1)
    state.n_free -= len(nodes)
    _count(state, nodes, jtype, +1)


def release(state: FatTreeState, nodes: np.ndarray, jtype: int) -> None:
    """Free ``nodes`` held by a job of type ``jtype`` (in place)."""
    ft = state.ft
    state.free[nodes] = True
    state.node_type[nodes] = 0
    np.add.at(state.leaf_free, nodes // ft.nodes_per_leaf, 1)
    np.add.at(state.pod_free, nodes // ft.nodes_per_pod, 1)
    state.n_free += len(nodes)
    _count(state, nodes, jtype, -1)


def with_hold(state: FatTreeState, nodes: np.ndarray, jtype: int) -> FatTreeState:
    """Copy of ``state`` with every node of ``nodes`` — free now or not — held by ``jtype``.

    This is EASY's view for backfill candidates that must avoid the head's reservation
    (spec `scheduling.md`): the reserved nodes are unavailable and their leaves and pods
    carry the head's job type, so no candidate can make the head's placement invalid.
    """
    held = state.copy()
    newly = nodes[held.free[nodes]]
    ft = state.ft
    held.free[newly] = False
    np.add.at(held.leaf_free, newly // ft.nodes_per_leaf, -1)
    np.add.at(held.pod_free, newly // ft.nodes_per_pod, -1)
    held.n_free -= len(newly)
    _count(held, nodes, jtype, +1)
    return held


def future(state: FatTreeState, released: np.ndarray) -> FatTreeState:
    """State after the nodes in the bool mask ``released`` have been freed."""
    free = state.free | released
    node_type = np.where(released, np.int8(0), state.node_type).astype(np.int8)
    return from_nodes(state.ft, free, node_type)


@dataclasses.dataclass(frozen=True)
class Counts:
    """Per-leaf / per-pod counts of one or many machine states (leading batch axes allowed).

    The batched form holds the machine at each of ``G`` future instants, so a policy can
    answer "could the job be placed then?" for all instants in one array expression.
    """

    leaf_free: np.ndarray
    pod_free: np.ndarray
    leaf_t2: np.ndarray
    leaf_t3: np.ndarray
    pod_t3: np.ndarray
    n_free: np.ndarray


def counts(state: FatTreeState) -> Counts:
    """The counts of one state (no copy)."""
    return Counts(state.leaf_free, state.pod_free, state.leaf_t2, state.leaf_t3, state.pod_t3,
                  np.asarray(state.n_free))


def futures(state: FatTreeState, node_release: np.ndarray, per_leaf: bool = True) -> tuple[np.ndarray, Counts]:
    """Counts of the machine after each distinct release time of the busy nodes.

    Args:
      state: the machine now.
      node_release: ``(N,)`` time at which each busy node is released (ignored where free).

    Returns:
      ``times`` ``(G,)`` ascending distinct release times and batched :class:`Counts` whose
      entry ``g`` is the machine once every node released at or before ``times[g]`` is free.
      With ``per_leaf=False`` only ``n_free`` is filled (the others are None): enough for
      policies that only count nodes, and much cheaper.
    """
    ft = state.ft
    busy = np.flatnonzero(~state.free)
    times, group = np.unique(node_release[busy], return_inverse=True)
    if not per_leaf:
        n_free = state.n_free + np.cumsum(np.bincount(group, minlength=len(times)))
        return times, Counts(None, None, None, None, None, n_free)
    G, NL = len(times), ft.n_leaves
    leaf = busy // ft.nodes_per_leaf

    def cumulative(mask: np.ndarray) -> np.ndarray:
        m = np.bincount(group[mask] * NL + leaf[mask], minlength=G * NL).reshape(G, NL)
        return np.cumsum(m, axis=0)

    rel_free = cumulative(np.ones(len(busy), bool))
    types = state.node_type[busy]
    rel_t2, rel_t3 = cumulative(types == T2), cumulative(types == T3)
    leaf_free = state.leaf_free + rel_free
    leaf_t3 = state.leaf_t3 - rel_t3
    by_pod = (G, ft.pods, ft.leaves_per_pod)
    return times, Counts(
        leaf_free,
        leaf_free.reshape(by_pod).sum(axis=2),
        state.leaf_t2 - rel_t2,
        leaf_t3,
        leaf_t3.reshape(by_pod).sum(axis=2),
        leaf_free.sum(axis=1),
    )
