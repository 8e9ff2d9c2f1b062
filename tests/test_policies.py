"""Allocation policies and queue disciplines on hand-worked cases (ft6: 3 nodes per leaf,
3 leaves per pod, 2 pods; nodes 0-8 in pod 0, leaves {0,1,2} {3,4,5} ...)."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus import topology
from fattorus.sched import engine, policy, queues
from fattorus.sched import state as st
from fattorus.topology import fattree


@pytest.fixture(scope="module")
def ft6():
    return fattree.load("ft6")


def _start(state, pol, n):
    placed = pol.place(state, n)
    st.allocate(state, placed, pol.footprint(placed))
    return placed


def test_ta_algorithm_1_by_hand_on_ft6(ft6):
    ta = policy.make("ta", ft6)
    state = st.empty(ft6)
    # T1 of 2: least-free pod, least-free leaf, low id on ties -> leaf 0.
    assert _start(state, ta, 2).tolist() == [0, 1]
    # T2 of 4: pod 0 has 7 eligible nodes (least), its leaves by most free: leaf 1, leaf 2, leaf 0.
    assert _start(state, ta, 4).tolist() == [3, 4, 5, 6]
    # T2 of 4 again: leaves 1 and 2 hold T2 nodes, pod 0 has only leaf 0's 1 node left -> pod 1.
    assert _start(state, ta, 4).tolist() == [9, 10, 11, 12]
    # T2 of 5: leaves without T2/T3 nodes are leaf 0 (1 free, pod 0) and leaf 5 (3 free, pod 1).
    assert ta.place(state, 5) is None
    assert not ta.feasible(st.counts(state), 5)
    # T3 of 10: 6 nodes free in all.
    assert ta.place(state, 10) is None
    # Tree best fit places 5: pod 1 has 5 free (leaf 4: 2, leaf 5: 3); Slurm takes the
    # fullest leaf first when none holds all, then the fewest-free leaf holding the rest.
    assert policy.make("tree_bestfit", ft6).place(state, 5).tolist() == [15, 16, 17, 13, 14]


def test_ta_t2_avoids_leaves_holding_t3_and_t3_avoids_pods_holding_t3(ft6):
    ta = policy.make("ta", ft6)
    state = st.empty(ft6)
    st.allocate(state, np.array([0, 9]), 3)  # a T3 footprint: leaf 0 of pod 0, leaf 3 of pod 1
    assert ta.place(state, 10) is None  # every pod holds T3 nodes
    placed = ta.place(state, 4)  # T2: not on leaves 0 or 3
    assert not np.isin(placed // 3, [0, 3]).any()


def test_oblivious_takes_preferred_nodes_first(ft6):
    state = st.empty(ft6)
    st.allocate(state, np.arange(4), 1)
    prefer = np.zeros(18, bool)
    prefer[[2, 10, 11]] = True  # node 2 is busy
    assert policy.make("to", ft6).place(state, 4, prefer=prefer).tolist() == [10, 11, 4, 5]
    drawn = policy.make("to_random", ft6, seed=0).place(state, 4, prefer=prefer)
    assert drawn[:2].tolist() == [10, 11] and len(set(drawn.tolist())) == 4 and not np.isin(drawn, np.arange(4)).any()


def test_registry_names_and_errors(ft6):
    assert set(policy.NAMES) == {"to", "to_random", "first_fit", "ta", "tree_bestfit", "prism", "feature",
                                 "random_router", "random_group", "random_chassis", "round_robin_node",
                                 "round_robin_router", "compact"}
    placements = {"random_router", "random_group", "round_robin_node", "round_robin_router", "compact"}
    assert set(policy.supporting(ft6)) == set(policy.NAMES) - {"prism", "feature", "random_chassis"}
    assert "random_chassis" in policy.supporting(topology.load("dragonfly_small"))
    torus = topology.from_config({"kind": "torus3d", "name": "t", "dims": [2, 2, 2]})
    assert set(policy.supporting(torus)) == {"to", "to_random", "first_fit", "prism", "feature"} | placements
    with pytest.raises(ValueError, match="only 'ordering'"):
        policy.make("first_fit", ft6, {"order": "id"})
    with pytest.raises(ValueError, match="unknown ordering"):
        policy.make("first_fit", torus, {"ordering": "zigzag"})
    with pytest.raises(ValueError, match="unknown policy"):
        policy.make("nope", ft6)
    with pytest.raises(ValueError, match="takes no parameters"):
        policy.make("to", ft6, {"x": 1})


# Queue disciplines: J0 (12 nodes, 100 s) runs; the head J1 (10 nodes) must wait for it.
# J2 (6 nodes, 50 s) ends by the shadow time 100 and backfills under EASY at 2; J3 (4 nodes,
# 200 s) does not end by 100 but fits beside the head's reservation once J2 ends at 52.
JOBS = dict(submit=[0, 1, 2, 3], runtime=[100, 50, 50, 200], estimate=[100, 50, 50, 200], nodes=[12, 10, 6, 4])


@pytest.mark.parametrize("name, starts, backfilled", [
    ("fcfs", [0, 100, 100, 150], [False] * 4),
    ("easy", [0, 100, 2, 52], [False, False, True, True]),
])
def test_fcfs_and_easy_by_hand(ft6, name, starts, backfilled):
    jobs = engine.Jobs.of(**JOBS, n_nodes=18)
    queue = queues.QUEUES[name]()
    for _ in range(2):  # a queue object serves several runs
        out = engine.run(jobs, ft6, queue, policy.make("to", ft6))
        assert out.start.tolist() == starts
        assert out.backfilled.tolist() == backfilled
    if name == "easy":
        assert out.shadow[1] == 100 and np.isnan(out.shadow[[0, 2, 3]]).all()
        # Under `to`, the reservation prefers the busy nodes 0..9, so J3 avoided them.
        assert not np.isin(out.alloc[3], np.arange(10)).any()


def test_engine_refuses_unusable_jobs(ft6):
    with pytest.raises(ValueError, match="estimate >= runtime"):
        engine.Jobs.of([0.0], [10.0], [5.0], [1], n_nodes=18)
    with pytest.raises(ValueError, match="1 <= nodes"):
        engine.Jobs.of([0.0], [10.0], [10.0], [19], n_nodes=18)


def test_take_from_leaves_walks_the_leaves_in_order_lowest_slot_first():
    """The first ``n`` free nodes of the given leaves, visited in the given order (a leaf's
    free slots lowest first), against a walk slot by slot; too few free: all of them."""
    from fattorus.sched.policy.fattree.leaves import take_from_leaves

    rng = np.random.default_rng(5)
    for name in ("ft6", "cab"):
        ft = topology.load(name)
        k = ft.nodes_per_leaf
        for _ in range(300):
            state = st.empty(ft)
            state.free[:] = rng.random(ft.n_nodes) < rng.random()
            leaves = rng.choice(ft.n_leaves, int(rng.integers(1, ft.n_leaves + 1)), replace=False)
            n = int(rng.integers(0, len(leaves) * k + 3))
            want = [leaf * k + s for leaf in leaves for s in range(k) if state.free[leaf * k + s]][:n]
            got = take_from_leaves(state, leaves, n)
            assert got.tolist() == want and got.dtype == np.int64
