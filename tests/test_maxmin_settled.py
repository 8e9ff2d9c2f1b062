"""A job's step time read off its own links (fattorus.kernels.maxmin_settled): hand-worked
cases, and the full goal solve's answer (fattorus.kernels.maxmin_compiled, itself checked
against NumPy's progressive filling and JAX in test_maxmin_compiled.py) on random problems.
Whole model replays with and without it: test_model_runtimes.py (shortcut tests)."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus.kernels.maxmin_compiled import goal_step_time, new_workspace
from fattorus.kernels.maxmin_settled import count_crossings, settled_step_time


def _routes(*flows: list[int]) -> np.ndarray:
    width = max(len(f) for f in flows)
    return np.array([f + [-1] * (width - len(f)) for f in flows], np.int32)


def _background(others: np.ndarray, n_links: int) -> np.ndarray:
    count = np.zeros(n_links, np.int64)
    np.add.at(count, others[others >= 0], 1)
    return count


def test_settled_on_a_node_link_by_hand():
    # Link 0: the job's node link (capacity 4), link 1 shared (10), link 2 the other job's node
    # link (4). The job's two flows cross 0 and 1, the other's three cross 2 and 1. Loads 2, 5,
    # 3: shares 2, 2, 4/3. The job's flows: tightest 2, and link 0 (theirs alone) is a
    # bottleneck (no flow crossing it is tighter): both freeze at 2, 8 bytes take 4.
    own = _routes([0, 1], [0, 1])
    others = _routes([2, 1], [2, 1], [2, 1])
    cap = np.float32([4, 10, 4])
    got = settled_step_time(own, np.array([8.0, 4.0]), _background(others, 3), cap, new_workspace(3))
    assert got == 4.0
    assert got == goal_step_time(np.r_[own, others], np.array([8.0, 4.0, 1.0, 1.0, 1.0]), 2, cap)


def test_not_settled_where_a_shared_link_is_tighter():
    # The job's node link is wide (100: share 50): its flows' tightest link is the shared one
    # (share 2), which other jobs' flows cross: not decided by its own links.
    own = _routes([0, 1], [0, 1])
    others = _routes([2, 1], [2, 1], [2, 1])
    cap = np.float32([100, 10, 4])
    assert settled_step_time(own, np.array([8.0, 4.0]), _background(others, 3), cap, new_workspace(3)) is None
    # With nobody else on link 1 the job's links are all its own: decided (10 / 2 = 5 each).
    alone = settled_step_time(own, np.array([8.0, 4.0]), np.zeros(3, np.int64), cap, new_workspace(3))
    assert alone == 8.0 / 5.0 == goal_step_time(own, np.array([8.0, 4.0]), 2, cap)


def test_edge_cases_and_arguments():
    cap = np.float32([1, 1])
    nobody = np.zeros(2, np.int64)
    assert settled_step_time(np.zeros((0, 3), np.int32), np.zeros(0), nobody, cap, new_workspace(2)) == 0.0
    # A flow without links takes no time (as in the solve); the other decides.
    assert settled_step_time(_routes([], [0]), np.array([5.0, 3.0]), nobody, cap, new_workspace(2)) == 3.0
    with pytest.raises(ValueError, match="settled_step_time"):
        settled_step_time(_routes([0]), np.array([1.0, 2.0]), nobody, cap, new_workspace(2))


def test_count_crossings_adds_and_removes_a_job():
    rng = np.random.default_rng(3)
    routes = np.where(rng.random((40, 5)) < 0.3, -1, rng.integers(0, 9, (40, 5))).astype(np.int32)
    count = np.zeros(9, np.int64)
    count_crossings(count, routes, 1)
    assert np.array_equal(count, np.bincount(routes[routes >= 0], minlength=9))
    count_crossings(count, routes, -1)
    assert not count.any()


def _problem(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """A random together problem: the job's flows first, each crossing one of the job's own
    node links (ids 0..k-1) and up to three shared links; the other jobs' flows cross their
    own node links (k..2k-1) and shared ones. Capacities 1 to 4 on node links, 1 to 8 on
    shared ones (ties happen)."""
    k, shared = int(rng.integers(1, 6)), int(rng.integers(1, 8))
    E = 2 * k + shared
    def flows(n: int, base: int) -> list[list[int]]:
        out = []
        for _ in range(n):
            links = [base + int(rng.integers(k))] + list(2 * k + rng.choice(shared, int(rng.integers(0, min(3, shared) + 1)),
                                                                            replace=False))
            out.append([int(x) for x in rng.permutation(links)])
        return out
    own_flows = flows(int(rng.integers(1, 12)), 0)
    other_flows = flows(int(rng.integers(0, 30)), k)
    width = max(len(f) for f in own_flows + other_flows) + int(rng.integers(0, 2))
    routes = np.array([f + [-1] * (width - len(f)) for f in own_flows + other_flows], np.int32)
    nbytes = rng.choice([1.0, 2.0, 3.5, 8.0], len(routes))
    cap = np.r_[rng.integers(1, 5, 2 * k), rng.integers(1, 9, shared)].astype(np.float32)
    return routes, nbytes, len(own_flows), cap, _background(routes[len(own_flows):], E)


def test_settled_answers_are_the_goal_solve_s_bits_on_random_problems():
    rng = np.random.default_rng(7)
    settled = unsettled = 0
    for _ in range(1500):
        routes, nbytes, own, cap, background = _problem(rng)
        workspace = new_workspace(len(cap))
        got = settled_step_time(routes[:own], nbytes[:own], background, cap, workspace)
        assert (workspace == -1).all()  # handed back as it came
        if got is None:
            unsettled += 1
            continue
        settled += 1
        assert got == goal_step_time(routes, nbytes, own, cap)
    assert settled > 200 and unsettled > 200, (settled, unsettled)  # both outcomes were tested
