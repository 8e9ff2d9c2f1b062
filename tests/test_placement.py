"""Placement policies of the network simulators (random/round-robin router and group, compact)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fattorus import topology, workload
from fattorus.sched import policy, reference, replay
from fattorus.sched import state as st

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("random_router", "random_group", "round_robin_node", "round_robin_router", "compact")


@pytest.mark.parametrize("name", NAMES)
def test_start_times_equal_the_count_based_reference(name):
    """Any-free-nodes policies only count nodes: their EASY start times are the reference's."""
    t8 = topology.load("torus8")
    trace = ROOT / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, t8.n_nodes)
    prepared, _ = replay.prepare(workload.first_days(jobs, 6), t8.n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    got = replay.simulate(*cols, t8, policy.make(name, t8, seed=3), "easy")
    expected = reference.schedule(*[c.tolist() for c in cols], t8.n_nodes, easy=True)
    assert len(prepared) > 300 and got.backfilled.sum() > 0
    assert np.array_equal(got.start, np.array(expected, dtype=float))


def _half_busy(topo, seed=0):
    rng = np.random.default_rng(seed)
    busy = rng.random(topo.n_nodes) < 0.5
    return st.from_nodes(topo, ~busy, busy.astype(np.int8))


def test_structure_on_a_fat_tree():
    ft = topology.load("ft6x6")  # 6 pods x 3 leaves x 3 nodes
    state = _half_busy(ft)
    leaf, pod = ft.group_of(0, np.arange(ft.n_nodes)), ft.group_of(1, np.arange(ft.n_nodes))
    free_per_leaf = np.bincount(leaf[state.free], minlength=ft.n_groups(0))
    # random_router: every router it touches is emptied, except possibly the last
    got = policy.make("random_router", ft, seed=1).place(state, 10)
    routers = list(dict.fromkeys(leaf[got].tolist()))
    assert all((leaf[got] == r).sum() == free_per_leaf[r] for r in routers[:-1])
    # random_group: groups one after another, every group it touches emptied but the last
    free_per_pod = np.bincount(pod[state.free], minlength=ft.n_groups(1))
    got = policy.make("random_group", ft, seed=1).place(state, 10)
    pods = list(dict.fromkeys(pod[got].tolist()))
    assert all((pod[got] == g).sum() == free_per_pod[g] for g in pods[:-1])
    assert 1 + np.count_nonzero(np.diff(pod[got])) == len(pods)  # each group in one run
    # round_robin_node: no router gets a second node before every router with a free node got one
    got = policy.make("round_robin_node", ft).place(state, int((free_per_leaf > 0).sum()))
    assert sorted(leaf[got].tolist()) == np.flatnonzero(free_per_leaf > 0).tolist()
    # compact: a job that fits one pod gets the pod with the fewest free nodes that holds it
    n = int(free_per_pod.min())
    fits = np.flatnonzero(free_per_pod >= n)
    got = policy.make("compact", ft).place(state, n)
    assert set(pod[got].tolist()) == {int(fits[np.argmin(free_per_pod[fits])])}
    # ... and a job larger than every pod starts in the pod with the most free nodes
    n = int(free_per_pod.max()) + 1
    got = policy.make("compact", ft).place(state, n)
    assert pod[got[0]] == int(np.argmax(free_per_pod))
    assert set(pod[got].tolist()) <= {int(np.argmax(free_per_pod)) + d for d in (-1, 0, 1)}


def test_random_chassis_takes_whole_rows_of_routers_in_a_seeded_random_order():
    """Damselfly's randomChassis: chassis (one row of routers of a group) one after another,
    every chassis it touches emptied of free nodes but the last; the order changes with the
    seed and repeats with it."""
    t = topology.load("edison")
    state = _half_busy(t, seed=2)
    router = np.asarray(t.group_of(0, np.arange(t.n_nodes)))
    g, i, _ = t.router_coords(router)
    chassis = np.asarray(g) * t.rows + np.asarray(i)
    assert len(np.unique(chassis)) == t.groups * t.rows and np.bincount(chassis).tolist() == [t.cols * 4] * 90
    free_per_chassis = np.bincount(chassis[state.free], minlength=t.groups * t.rows)
    n = 200
    got = policy.make("random_chassis", t, seed=1).place(state, n)
    assert len(got) == n and len(np.unique(got)) == n and state.free[got].all()
    order = list(dict.fromkeys(chassis[got].tolist()))
    assert 1 + np.count_nonzero(np.diff(chassis[got])) == len(order)  # each chassis in one run
    assert all((chassis[got] == c).sum() == free_per_chassis[c] for c in order[:-1])
    assert np.all(np.diff(got[chassis[got] == order[0]]) > 0)  # id order inside a chassis
    again = policy.make("random_chassis", t, seed=1).place(state, n)
    other = policy.make("random_chassis", t, seed=2).place(state, n)
    assert np.array_equal(got, again) and not np.array_equal(got, other)
    with pytest.raises(ValueError):
        policy.make("random_chassis", topology.load("ft6"))


def test_round_robin_router_continues_after_the_last_router_used():
    t4 = topology.from_config({"kind": "torus3d", "name": "t4", "dims": [4, 4, 4], "nodes_per_router": 2})
    pol = policy.make("round_robin_router", t4)
    machine = st.empty(t4)
    pol.reset(machine)
    first = pol.place(machine, 3)
    assert first.tolist() == [0, 1, 2]
    st.allocate(machine, first, 1)
    pol.started(first)
    assert pol.place(machine, 2).tolist() == [4, 5]  # router 2: after router 1, the last used
