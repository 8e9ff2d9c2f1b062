"""Machine state during a scheduler replay, for any topology with grouping levels.

What the engine and the allocation policies decide from: which nodes are free, the
footprint class of the job holding each node, and, at every grouping level of
``topo.levels``, the free nodes per group and the nodes held by jobs of each footprint class
per group. A topology-aware policy reads its rules off these counts ("group ``g`` of level 0
holds nodes of class-2 jobs" is ``held[0][2, g] > 0``) without the state knowing any family.

Classes are ``1..n_classes`` (:meth:`fattorus.topology.base.Topology.footprint_class`); index
0 of the class axis stays zero so that a class indexes its row directly.

Why mutable: the replay's event loop is sequential and changes a handful of nodes per event;
rebuilding per-node arrays at each event would make it ``O(N)`` per event for no gain.
Hypothetical states (the reservation's future machine, the machine with the head's
reservation held) are explicit copies (:meth:`MachineState.copy`, :func:`future`,
:func:`with_hold`), never aliases.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np


def n_classes(topo: Any) -> int:
    """Number of footprint classes of ``topo``: one per grouping level, plus "several outermost groups"."""
    return len(topo.levels) + 1


@dataclasses.dataclass(frozen=True)
class Layout:
    """Per-node group ids of a topology, computed once (``topo.group_of``) and shared by every
    state of that topology, so that booking a job is an index, not a method call per level."""

    node_group: tuple[np.ndarray, ...]
    n_groups: tuple[int, ...]
    n_classes: int


@functools.lru_cache(maxsize=32)
def layout(topo: Any) -> Layout:
    """The :class:`Layout` of ``topo`` (cached: topologies are hashable values)."""
    ids = np.arange(topo.n_nodes)
    levels = range(len(topo.levels))
    return Layout(tuple(np.asarray(topo.group_of(i, ids), np.int64) for i in levels),
                  tuple(topo.n_groups(i) for i in levels), n_classes(topo))


@dataclasses.dataclass
class MachineState:
    """Free nodes and per-group occupancy of a machine.

    Attributes:
      topo: the topology.
      free: ``(N,)`` bool, True where the node is free.
      node_class: ``(N,)`` int8, footprint class of the job holding the node, 0 when free.
      group_free: per level ``i``, ``(n_groups(i),)`` free nodes per group.
      held: per level ``i``, ``(n_classes + 1, n_groups(i))`` nodes held by jobs of each
        footprint class per group (row 0 unused).
      n_free: total free nodes.
      layout: per-node group ids (shared, never copied).
      allowed, free_all: on a view for one job kind (:func:`restricted`), the nodes that
        kind may use and the free nodes of the whole machine (``free`` is then
        ``free_all & allowed``); None otherwise.
    """

    topo: Any
    free: np.ndarray
    node_class: np.ndarray
    group_free: tuple[np.ndarray, ...]
    held: tuple[np.ndarray, ...]
    n_free: int
    layout: Layout
    allowed: np.ndarray | None = None
    free_all: np.ndarray | None = None

    def copy(self) -> MachineState:
        """Deep copy (arrays copied, topology shared)."""
        return MachineState(
            self.topo,
            self.free.copy(),
            self.node_class.copy(),
            tuple(g.copy() for g in self.group_free),
            tuple(h.copy() for h in self.held),
            self.n_free,
            self.layout,
            self.allowed,
            None if self.free_all is None else self.free_all.copy(),
        )


def empty(topo: Any, usable: np.ndarray | None = None) -> MachineState:
    """A machine with every node free, or only the ``usable`` ones (bool mask): the others
    (service nodes, another node type) are held out of the machine, busy with no job and no
    release time, for the whole replay."""
    free = np.ones(topo.n_nodes, bool) if usable is None else np.asarray(usable, bool).copy()
    return from_nodes(topo, free, np.zeros(topo.n_nodes, np.int8))


def from_nodes(topo: Any, free: np.ndarray, node_class: np.ndarray) -> MachineState:
    """Build a state (with all counts) from per-node arrays; ``O(N)``, for hypothetical states."""
    lay = layout(topo)
    C = lay.n_classes
    group_free, held = [], []
    for group, G in zip(lay.node_group, lay.n_groups):
        group_free.append(np.bincount(group[free], minlength=G))
        h = np.bincount(node_class.astype(np.int64) * G + group, minlength=(C + 1) * G).reshape(C + 1, G)
        h[0] = 0
        held.append(h)
    return MachineState(topo, free, node_class, tuple(group_free), tuple(held), int(free.sum()), lay)


def _book(state: MachineState, nodes: np.ndarray, cls: int, sign: int, count_free: np.ndarray | None = None) -> None:
    """Add ``sign`` to the held counts of ``nodes`` (class ``cls``) and ``-sign`` to the free
    counts of ``count_free`` (default: ``nodes`` themselves) at every level."""
    for group, held, group_free in zip(state.layout.node_group, state.held, state.group_free):
        g = group[nodes]
        np.add.at(held[cls], g, sign)
        np.add.at(group_free, g if count_free is None else group[count_free], -sign)


def allocate(state: MachineState, nodes: np.ndarray, cls: int) -> None:
    """Mark free ``nodes`` as held by a job of footprint class ``cls`` (in place)."""
    state.free[nodes] = False
    state.node_class[nodes] = cls
    state.n_free -= len(nodes)
    _book(state, nodes, cls, +1)


def release(state: MachineState, nodes: np.ndarray, cls: int) -> None:
    """Free ``nodes`` held by a job of footprint class ``cls`` (in place)."""
    state.free[nodes] = True
    state.node_class[nodes] = 0
    state.n_free += len(nodes)
    _book(state, nodes, cls, -1)


def with_hold(state: MachineState, nodes: np.ndarray, cls: int) -> MachineState:
    """Copy of ``state`` with every node of ``nodes`` — free now or not — held by class ``cls``.

    This is EASY's view for backfill candidates that must avoid the head's reservation
    (spec `scheduling.md`): the reserved nodes are unavailable and their groups count them as
    held by the head's class (on top of whatever holds a busy reserved node now), so no
    candidate can make the head's placement invalid. ``node_class`` is left as it was: the
    copy is only asked about placements, never released into.
    """
    held = state.copy()
    newly = nodes[held.free[nodes]]
    held.free[newly] = False
    held.n_free -= len(newly)
    _book(held, nodes, cls, +1, newly)
    return held


def restricted(state: MachineState, allowed: np.ndarray) -> MachineState:
    """``state`` as a job that may run only on the ``allowed`` nodes (``(N,)`` bool) sees it:
    ``free`` holds only allowed free nodes; ``free_all`` keeps the whole machine's (a policy
    that records placements asks it whether another kind's job still runs). Without group
    counts (for policies that declare they read none, ``Policy.reads_counts``); node classes
    are shared, not copied (never written)."""
    free = state.free & allowed
    return MachineState(state.topo, free, state.node_class, (), (), int(np.count_nonzero(free)), state.layout,
                        allowed, state.free)


def future(state: MachineState, released: np.ndarray, counts: bool = True) -> MachineState:
    """State after the nodes in the bool mask ``released`` have been freed.

    ``counts=False``: without group counts (``group_free`` and ``held`` empty), for a policy
    that declares it never reads them (``Policy.reads_counts``).

    The counts are ``state``'s minus what the released busy nodes held (why not
    :func:`from_nodes`: EASY's shadow-time bisection builds one such state per step, and
    counting only the released nodes is several times cheaper than recounting the machine)."""
    gone = (released & ~state.free).nonzero()[0]
    free = state.free.copy()
    free[gone] = True
    node_class = state.node_class.copy()
    node_class[gone] = 0
    lay = state.layout
    if not counts:
        return MachineState(state.topo, free, node_class, (), (), state.n_free + len(gone), lay)
    cls = state.node_class[gone].astype(np.int64)
    group_free, held = [], []
    for group, G, gf, h in zip(lay.node_group, lay.n_groups, state.group_free, state.held):
        g = group[gone]
        gf, h = gf.copy(), h.copy()
        # ufunc.at, not a bincount over every group: a few released nodes among many groups.
        np.add.at(gf, g, 1)
        np.subtract.at(h.reshape(-1), cls * G + g, 1)
        group_free.append(gf)
        held.append(h)
    return MachineState(state.topo, free, node_class, tuple(group_free), tuple(held), state.n_free + len(gone), lay)


@dataclasses.dataclass(frozen=True)
class Counts:
    """The counts of one or many machine states (leading batch axes allowed).

    The batched form holds the machine at each of ``G`` future instants, so a policy can
    answer "could the job be placed then?" for all instants in one array expression.
    ``group_free`` and ``held`` are None when only ``n_free`` was asked for.
    """

    group_free: tuple[np.ndarray, ...] | None
    held: tuple[np.ndarray, ...] | None
    n_free: np.ndarray


#: What a policy's feasibility test reads: only the free-node count, or the per-group counts.
FREE_ONLY = "free"
PER_GROUP = "groups"


def counts(state: MachineState) -> Counts:
    """The counts of one state (no copy)."""
    return Counts(state.group_free, state.held, np.asarray(state.n_free))


def futures(state: MachineState, node_release: np.ndarray, needs: str = PER_GROUP) -> tuple[np.ndarray, Counts]:
    """Counts of the machine after each distinct release time of the busy nodes.

    Args:
      state: the machine now.
      node_release: ``(N,)`` time at which each busy node is released (ignored where free).
      needs: :data:`FREE_ONLY` fills only ``n_free`` (much cheaper); :data:`PER_GROUP` all.

    Returns:
      ``times`` ``(G,)`` ascending distinct release times and batched :class:`Counts` whose
      entry ``g`` is the machine once every node released at or before ``times[g]`` is free.
    """
    # Nodes held out of the machine never come back (release time inf): not a future instant.
    busy = (~state.free & np.isfinite(node_release)).nonzero()[0]
    times, group = np.unique(node_release[busy], return_inverse=True)
    G = len(times)
    n_free = state.n_free + np.cumsum(np.bincount(group, minlength=G))
    if needs == FREE_ONLY:
        return times, Counts(None, None, n_free)
    lay = state.layout
    key = group * _keys_per_instant(lay) + class_group_key(lay, state.node_class[busy], busy)
    return times, _cumulated(state, key, G, n_free)


def class_group_key(lay: Layout, cls: np.ndarray | int, nodes: np.ndarray) -> np.ndarray:
    """Per node, its (footprint class, innermost group) as one index ``class * inner + group``."""
    return np.asarray(cls, np.int64) * lay.n_groups[0] + lay.node_group[0][nodes]


def _keys_per_instant(lay: Layout) -> int:
    return (lay.n_classes + 1) * lay.n_groups[0]


def _cumulated(state: MachineState, key: np.ndarray, G: int, n_free: np.ndarray) -> Counts:
    """The batched counts of ``state`` after each of ``G`` instants, from the released busy
    nodes' ``instant * keys_per_instant + class_group_key``."""
    K = _keys_per_instant(state.layout)
    return _counts_after(state, np.bincount(key, minlength=G * K).reshape(G, K), n_free)


def _counts_after(state: MachineState, released: np.ndarray, n_free: np.ndarray) -> Counts:
    """The batched counts of ``state`` after each instant, from the nodes released at each
    ``(G, keys_per_instant)`` (by :func:`class_group_key`)."""
    return _counts_of(state, _cumulated_rows(released), n_free)


def _cumulated_rows(released: np.ndarray, before: np.ndarray | None = None) -> np.ndarray:
    """``released`` ``(G, K)`` summed over its rows (row ``g``: rows ``0..g``), plus ``before``
    ``(K,)`` (what earlier instants released) in every row."""
    # Row by row: numpy's cumsum along the first axis of a short, wide array is twice as slow
    # as G row additions.
    rel = np.empty_like(released)
    if len(rel):
        rel[0] = released[0] if before is None else released[0] + before
    for g in range(1, len(rel)):
        np.add(rel[g - 1], released[g], out=rel[g])
    return rel


def _counts_of(state: MachineState, rel: np.ndarray, n_free: np.ndarray) -> Counts:
    """The batched counts of ``state`` once the nodes of each cumulated row of ``rel``
    ``(G, keys_per_instant)`` are released."""
    lay = state.layout
    C, inner = lay.n_classes, lay.n_groups[0]
    rel = rel.reshape(len(rel), C + 1, inner)
    # Levels are nested contiguous blocks (topology interface), so an outer level's counts
    # are sums over consecutive inner groups.
    group_free, held = [], []
    for level, n_groups in enumerate(lay.n_groups):
        per = rel if n_groups == inner else rel.reshape(len(rel), C + 1, n_groups, inner // n_groups).sum(axis=3)
        group_free.append(state.group_free[level] + per.sum(axis=1))
        held.append(state.held[level] - per)
    return Counts(tuple(group_free), tuple(held), n_free)


@dataclasses.dataclass
class Releases:
    """The busy nodes of a replay grouped by their estimated release time, kept by the engine
    as jobs start and end: ``by_time[t][job]`` is the :func:`class_group_key` of each node job
    ``job`` releases at ``t``; ``n_at[t]`` how many nodes are released at ``t``.

    Why keep it: EASY asks for the machine at every future release instant
    (:func:`futures_of`) at each reservation, tens of thousands of times per replay, and
    regrouping every busy node by release time then (a sort of their times) was most of
    that question's cost. The per-instant counts by key are made when first asked for and
    kept until a job with that release time starts or ends (``_per_key``)."""

    by_time: dict[float, dict[int, np.ndarray]] = dataclasses.field(default_factory=dict)
    n_at: dict[float, int] = dataclasses.field(default_factory=dict)
    _per_key: dict[float, np.ndarray] = dataclasses.field(default_factory=dict)

    def add(self, t: float, job: int, keys: np.ndarray) -> None:
        """Job ``job``'s nodes (``keys``) are released at ``t``."""
        t = float(t)
        self.by_time.setdefault(t, {})[job] = keys
        self.n_at[t] = self.n_at.get(t, 0) + len(keys)
        self._per_key.pop(t, None)

    def drop(self, t: float, job: int) -> None:
        """Job ``job`` (released at ``t``) ended."""
        t = float(t)
        jobs = self.by_time[t]
        self.n_at[t] -= len(jobs.pop(job))
        self._per_key.pop(t, None)
        if not jobs:
            del self.by_time[t], self.n_at[t]

    def per_key(self, t: float, n_keys: int) -> np.ndarray:
        """``(n_keys,)`` nodes released at ``t`` per :func:`class_group_key`."""
        out = self._per_key.get(t)
        if out is None:
            keys = list(self.by_time[t].values())
            out = self._per_key[t] = np.bincount(keys[0] if len(keys) == 1 else np.concatenate(keys),
                                                 minlength=n_keys)
        return out


def futures_of(state: MachineState, releases: Releases, needs: str = PER_GROUP) -> tuple[np.ndarray, Counts]:
    """:func:`futures` of ``state`` with the busy nodes' release times kept in ``releases``
    (which must hold exactly the busy nodes of ``state`` that are ever released): the same
    times and counts, without regrouping the busy nodes."""
    times, n_free = _release_times(state, releases)
    if needs == FREE_ONLY:
        return np.array(times, np.float64), Counts(None, None, n_free)
    return np.array(times, np.float64), _counts_after(state, _released_rows(state, releases, times), n_free)


def _release_times(state: MachineState, releases: Releases) -> tuple[list[float], np.ndarray]:
    """The distinct release times, ascending, and the free nodes once each has passed."""
    times = sorted(releases.by_time)
    return times, state.n_free + np.cumsum(np.array([releases.n_at[t] for t in times], np.int64))


def _released_rows(state: MachineState, releases: Releases, times: list[float]) -> np.ndarray:
    """``(len(times), keys_per_instant)``: the nodes released at each of ``times`` by key."""
    K = _keys_per_instant(state.layout)
    return np.array([releases.per_key(t, K) for t in times], np.int64).reshape(len(times), K)


#: Instants in the first block :func:`futures_from` yields; each next block is twice as long.
FIRST_BLOCK = 4


def futures_from(state: MachineState, releases: Releases, needs: str = PER_GROUP,
                 min_free: int = 0) -> Iterator[tuple[np.ndarray, Counts]]:
    """:func:`futures_of` in blocks of instants, from the first at which ``min_free`` nodes
    are free (before it no job of that size fits anywhere), for a caller that stops at the
    first instant it likes: the same times and counts, block by block (:data:`FIRST_BLOCK`
    instants, then twice as many each time).

    Why: EASY's shadow time is the first future instant at which the blocked head fits, on
    average ~2 instants past the first with enough free nodes while a Pinot replay's
    reservations see ~17; counting every instant was most of the reservation's cost."""
    times, n_free = _release_times(state, releases)
    times_a = np.array(times, np.float64)
    first = int(np.searchsorted(n_free, min_free))  # n_free never falls from one instant to the next
    if needs == FREE_ONLY:
        yield times_a[first:], Counts(None, None, n_free[first:])
        return
    before = _released_rows(state, releases, times[:first]).sum(axis=0)  # what the instants before release
    a, size = first, FIRST_BLOCK
    while a < len(times):
        b = min(len(times), a + size)
        rel = _cumulated_rows(_released_rows(state, releases, times[a:b]), before)
        yield times_a[a:b], _counts_of(state, rel, n_free[a:b])
        before = rel[-1]
        a, size = b, 2 * size
