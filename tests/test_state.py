"""Machine state: incremental counts equal a recount from per-node arrays (any topology)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fattorus.sched import state as st
from fattorus.topology import fattree

CONF = Path(__file__).resolve().parents[1] / "conf" / "topo"


def recount(topo, free: np.ndarray, node_class: np.ndarray) -> tuple[list, list]:
    """Per-level free and per-class held counts by explicit bincounts over node ids."""
    C = len(topo.levels) + 1
    ids = np.arange(topo.n_nodes)
    group_free, held = [], []
    for level in topo.levels:
        g = ids // level.size
        n_groups = topo.n_nodes // level.size
        group_free.append(np.bincount(g[free], minlength=n_groups))
        held.append(np.stack([np.zeros(n_groups, np.int64)]
                             + [np.bincount(g[node_class == c], minlength=n_groups) for c in range(1, C + 1)]))
    return group_free, held


def assert_counts(state: st.MachineState) -> None:
    group_free, held = recount(state.topo, state.free, state.node_class)
    assert state.n_free == int(state.free.sum())
    for i in range(len(group_free)):
        np.testing.assert_array_equal(state.group_free[i], group_free[i])
        np.testing.assert_array_equal(state.held[i], held[i])


def _random_history(topo, rng, steps=30):
    """A state after random allocations (random footprint classes) and releases."""
    state = st.empty(topo)
    running = []
    C = len(topo.levels) + 1
    for _ in range(steps):
        if running and rng.random() < 0.35:
            nodes, c = running.pop(int(rng.integers(len(running))))
            st.release(state, nodes, c)
        elif state.n_free:
            n = int(rng.integers(1, max(2, state.n_free // 3) + 1))
            nodes = rng.choice(np.flatnonzero(state.free), min(n, state.n_free), replace=False)
            c = int(rng.integers(1, C + 1))
            st.allocate(state, nodes, c)
            running.append((nodes, c))
        assert_counts(state)
    return state, running


@pytest.mark.parametrize("name", ["ft6", "ft44", "cab"])
def test_counts_after_allocate_and_release_equal_a_recount(name):
    _random_history(fattree.load(name), np.random.default_rng(0))


def test_hand_worked_counts_on_ft6():
    # ft6: 3 nodes per leaf, 3 leaves per pod, 2 pods. A T2-class job on nodes 2,3 spans
    # leaves 0 and 1 of pod 0.
    state = st.empty(fattree.load("ft6"))
    st.allocate(state, np.array([2, 3]), 2)
    assert state.group_free[0].tolist() == [2, 2, 3, 3, 3, 3]
    assert state.group_free[1].tolist() == [7, 9]
    assert state.held[0][2].tolist() == [1, 1, 0, 0, 0, 0]
    assert state.held[1][2].tolist() == [2, 0]
    assert state.held[0][[1, 3]].sum() == 0
    st.release(state, np.array([2, 3]), 2)
    assert state.n_free == 18 and state.held[0].sum() == 0 and state.group_free[1].tolist() == [9, 9]


@pytest.mark.parametrize("name", ["ft6", "ft44"])
def test_futures_equal_recounts_of_released_states(name):
    topo = fattree.load(name)
    rng = np.random.default_rng(1)
    state, _ = _random_history(topo, rng)
    release = np.where(state.free, np.inf, rng.integers(1, 6, topo.n_nodes).astype(float))
    times, batched = st.futures(state, release, st.PER_GROUP)
    _, free_only = st.futures(state, release, st.FREE_ONLY)
    assert times.tolist() == sorted(set(release[~state.free].tolist()))
    for g, t in enumerate(times):
        released = release <= t
        node_class = np.where(released, 0, state.node_class)
        group_free, held = recount(topo, state.free | released, node_class)
        assert batched.n_free[g] == free_only.n_free[g] == int((state.free | released).sum())
        for i in range(len(topo.levels)):
            np.testing.assert_array_equal(batched.group_free[i][g], group_free[i])
            np.testing.assert_array_equal(batched.held[i][g], held[i])
        assert_counts(st.future(state, released))


def test_with_hold_books_every_reserved_node_and_frees_none():
    topo = fattree.load("ft6")
    state = st.empty(topo)
    st.allocate(state, np.array([0, 1, 2]), 1)
    held = st.with_hold(state, np.array([2, 3, 4]), 2)  # node 2 is busy, 3 and 4 free
    assert held.n_free == state.n_free - 2
    assert held.group_free[0].tolist() == [0, 1, 3, 3, 3, 3]
    assert held.held[0][2].tolist() == [1, 2, 0, 0, 0, 0]
    assert held.held[1][2].tolist() == [3, 0]
    assert_counts(state)  # the original is untouched


def _check_futures_from(state, releases, times, batched, rng):
    """``futures_from``'s blocks, joined, are ``futures_of``'s instants from the first with at
    least ``min_free`` free nodes, the same counts (blocks of 1, 2, 4, ... instants here)."""
    for min_free in (0, int(rng.integers(0, state.layout.n_groups[0] * 4)), 10**9):
        first = int(np.searchsorted(batched.n_free, min_free))
        for needs in (st.PER_GROUP, st.FREE_ONLY):
            blocks = list(st.futures_from(state, releases, needs, min_free))
            got_times = np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0)
            np.testing.assert_array_equal(got_times, times[first:])
            np.testing.assert_array_equal(np.concatenate([b[1].n_free for b in blocks]) if blocks else [],
                                          batched.n_free[first:])
            if needs == st.FREE_ONLY:
                assert all(b[1].held is None and b[1].group_free is None for b in blocks)
                continue
            for i in range(len(batched.held)):
                np.testing.assert_array_equal(np.concatenate([b[1].held[i] for b in blocks]) if blocks
                                              else batched.held[i][first:], batched.held[i][first:])
                np.testing.assert_array_equal(np.concatenate([b[1].group_free[i] for b in blocks]) if blocks
                                              else batched.group_free[i][first:], batched.group_free[i][first:])


@pytest.mark.parametrize("name", ["ft6", "ft44"])
def test_futures_of_kept_releases_equal_recounts_through_a_history(name, monkeypatch):
    # The engine's Releases, kept as jobs start and end (several jobs may share a release
    # time; some nodes are held out of the machine and never released), give at every step
    # the counts of a recount of the machine after each release instant.
    monkeypatch.setattr(st, "FIRST_BLOCK", 1)  # futures_from in blocks of 1, 2, 4, ...: several per history step
    topo = fattree.load(name)
    rng = np.random.default_rng(2)
    usable = rng.random(topo.n_nodes) > 0.1
    state, releases, running = st.empty(topo, usable), st.Releases(), []
    C = len(topo.levels) + 1
    for step in range(40):
        if running and rng.random() < 0.35:
            job, nodes, c, t = running.pop(int(rng.integers(len(running))))
            st.release(state, nodes, c)
            releases.drop(t, job)
        elif state.n_free:
            n = int(rng.integers(1, max(2, state.n_free // 3) + 1))
            nodes = rng.choice(np.flatnonzero(state.free), min(n, state.n_free), replace=False)
            c, t = int(rng.integers(1, C + 1)), float(rng.integers(1, 5))  # few times: shared
            st.allocate(state, nodes, c)
            releases.add(t, step, st.class_group_key(state.layout, c, nodes))
            running.append((step, nodes, c, t))
        times, batched = st.futures_of(state, releases, st.PER_GROUP)
        _, free_only = st.futures_of(state, releases, st.FREE_ONLY)
        _check_futures_from(state, releases, times, batched, rng)
        assert times.tolist() == sorted({t for *_, t in running})
        for g, t in enumerate(times):
            released = np.zeros(topo.n_nodes, bool)
            for _, nodes, _, tj in running:
                released[nodes] |= tj <= t
            group_free, held = recount(topo, state.free | released, np.where(released, 0, state.node_class))
            assert batched.n_free[g] == free_only.n_free[g] == int((state.free | released).sum())
            for i in range(len(topo.levels)):
                np.testing.assert_array_equal(batched.group_free[i][g], group_free[i])
                np.testing.assert_array_equal(batched.held[i][g], held[i])
