"""The step time read off the first filling round (fattorus.kernels.maxmin_first_round):
hand-worked cases where round one decides and where it does not (the later rounds' answer
from the NumPy progressive filling, an independent reference), and — wherever it answers —
the compiled goal solve's float bit for bit, on random problems, on every configured
machine's flows and in whole model replays (tests/test_maxmin_compiled.py compares those
with the JAX solve)."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus.analysis import commtime
from fattorus.kernels.maxmin import maxmin_rates_numpy
from fattorus.kernels.maxmin_compiled import goal_step_time
from fattorus.kernels.linkmarks import add_crossings
from fattorus.kernels.maxmin_first_round import MARGIN, Workspace, first_round_step_time


def _routes(*flows: list[int]) -> np.ndarray:
    width = max(len(f) for f in flows)
    return np.array([f + [-1] * (width - len(f)) for f in flows], np.int32)


def _clean(ws: Workspace) -> bool:
    return not ws.count.any() and not ws.own_count.any() and not ws.mark.any() and np.isinf(ws.around).all()


def test_round_one_decides_a_shared_bottleneck():
    # Link 0 (2) carries the own flow and another: 1 each, and the other has nothing tighter,
    # so link 0 freezes both in round one: 3 bytes take 3.
    routes, cap = _routes([0, 1], [0]), np.float32([2, 10])
    assert first_round_step_time(routes, np.array([3.0, 1.0]), 1, cap) == 3.0 == goal_step_time(
        routes, np.array([3.0, 1.0]), 1, cap)


def test_round_one_does_not_decide_when_a_crossing_flow_is_tighter_elsewhere():
    # Link 0 (2) carries the own flow and flow 1; flow 1 also crosses link 1 (0.5), tighter.
    # Round one freezes flow 1 at 0.5, and the own flow ends at 1.5, not at its first share 1.
    routes, cap, nbytes = _routes([0], [0, 1]), np.float32([2, 0.5]), np.array([3.0, 1.0])
    assert first_round_step_time(routes, nbytes, 1, cap) is None
    rates, _ = maxmin_rates_numpy(routes, cap.astype(np.float64))
    assert rates[0] == pytest.approx(1.5) and goal_step_time(routes, nbytes, 1, cap) == pytest.approx(2.0)


def test_every_own_flow_near_the_top_must_settle_in_round_one():
    # Own flows 0 and 1 take 1 at their first shares; flow 1's link is not a bottleneck
    # (flow 2 is tighter on link 2), so its time falls later: only the first one settles.
    routes, cap = _routes([0], [1], [1, 2]), np.float32([1, 2, 0.5])
    nbytes = np.array([1.0, 1.0, 1.0])
    assert first_round_step_time(routes, nbytes, 2, cap) is None
    # With flow 1 carrying fewer bytes than the margin allows near the top, flow 0 alone
    # decides: 1 / 1.
    small = np.array([1.0, 0.5, 1.0])
    assert first_round_step_time(routes, small, 2, cap) == 1.0 == goal_step_time(routes, small, 2, cap)
    near = np.array([1.0, 1.0 - MARGIN / 2, 1.0])
    assert first_round_step_time(routes, near, 2, cap) is None


def test_no_own_bytes_no_link_and_a_starved_flow():
    cap = np.float32([1, 0])
    assert first_round_step_time(_routes([0]), np.array([0.0]), 1, cap) == 0.0
    assert first_round_step_time(_routes([], [0]), np.array([5.0, 1.0]), 1, cap) == 0.0  # no link: no time
    assert first_round_step_time(_routes([0]), np.array([5.0]), 0, cap) == 0.0
    assert first_round_step_time(_routes([1]), np.array([5.0]), 1, cap) is None  # capacity 0: solve


def test_bad_inputs_are_refused_in_one_line():
    cap = np.float32([1, 1])
    with pytest.raises(ValueError, match="link ids must be -1"):
        first_round_step_time(_routes([2]), np.array([1.0]), 1, cap)
    with pytest.raises(ValueError, match="byte counts must be numbers >= 0"):
        first_round_step_time(_routes([0]), np.array([-1.0]), 1, cap)
    with pytest.raises(ValueError, match="own 2"):
        first_round_step_time(_routes([0]), np.array([1.0]), 2, cap)
    with pytest.raises(ValueError, match="a workspace of 2 links"):
        first_round_step_time(_routes([0]), np.array([1.0]), 1, cap, Workspace(3))
    with pytest.raises(ValueError, match="count: 2 int32"):
        first_round_step_time(_routes([0]), np.array([1.0]), 1, cap, count=np.zeros(2, np.int64))


def _problem(rng: np.random.Generator, F: int, E: int, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes of distinct links with padding anywhere, byte counts with many ties (as a
    pattern's), capacities of a few classes."""
    routes = np.full((F, L), -1, np.int32)
    for f in range(F):
        n = int(rng.integers(0, L + 1))
        routes[f, rng.permutation(L)[:n]] = rng.choice(E, n, replace=False)
    nbytes = rng.choice([1.0, 2.0, 4.0], F)
    cap = rng.choice(np.float32([1, 2, 4]), E)
    return routes, nbytes, cap


@pytest.mark.parametrize("seed", range(4))
def test_wherever_it_answers_it_answers_the_goal_solve_s_float(seed):
    rng = np.random.default_rng(seed)
    answered = declined = 0
    ws = Workspace(1)
    for F, E, L in [(3, 2, 2), (20, 8, 3), (200, 40, 4), (2000, 300, 6)]:
        if len(ws.count) != E:
            ws = Workspace(E)
        for _ in range(30):
            routes, nbytes, cap = _problem(rng, F, E, L)
            count = np.zeros(E, np.int32)
            add_crossings(routes, count, 1)
            for own in sorted({1, F // 4, F}):
                got = first_round_step_time(routes, nbytes, own, cap, ws)
                assert _clean(ws)
                assert first_round_step_time(routes, nbytes, own, cap, ws, count) == got  # counts given: the same
                if got is None:
                    declined += 1
                    continue
                answered += 1
                assert got == goal_step_time(routes, nbytes, own, cap), (F, own)
    assert answered > 100 and declined > 50  # both sides of the test were taken


def test_every_machine_s_flows_where_answered_match_the_goal_solve(conf_topo):
    rng = np.random.default_rng(5)
    from test_maxmin_compiled import _scattered_jobs

    jobs = _scattered_jobs(conf_topo, rng)
    route_ids, nbytes, owner = commtime._flows(conf_topo, jobs)
    cap = commtime.solver_capacity(conf_topo).astype(np.float32)
    for j in range(len(jobs)):
        order = np.r_[np.flatnonzero(owner == j), np.flatnonzero(owner != j)]
        own = int((owner == j).sum())
        routes, b = np.ascontiguousarray(route_ids[order]), nbytes[order]
        got = first_round_step_time(routes, b, own, cap)
        if got is not None:
            assert got == goal_step_time(routes, b, own, cap)
        alone = first_round_step_time(routes[:own], b[:own], own, cap)
        if alone is not None:
            assert alone == goal_step_time(routes[:own], b[:own], own, cap)


def test_compact_lists_give_the_padded_answer():
    from fattorus.kernels.maxmin_compiled import compact_routes, goal_step_time_compact
    from fattorus.kernels.maxmin_first_round import first_round_step_time_compact

    rng = np.random.default_rng(8)
    ws = Workspace(60)
    answered = 0
    for _ in range(60):
        routes, nbytes, cap = _problem(rng, 300, 60, 5)
        lengths, links = compact_routes(routes)
        count = np.zeros(60, np.int32)
        add_crossings(routes, count, 1)
        for own in (1, 75, 300):
            want = first_round_step_time(routes, nbytes, own, cap, ws)
            assert first_round_step_time_compact(lengths, links, nbytes, own, cap, ws) == want
            assert first_round_step_time_compact(lengths, links, nbytes, own, cap, ws, count) == want
            assert _clean(ws)
            if want is not None:
                answered += 1
                assert want == goal_step_time_compact(lengths, links, nbytes, own, cap)
    assert answered > 20
    with pytest.raises(ValueError, match="lengths must be >= 0 and add up"):
        first_round_step_time_compact(np.array([2]), np.array([0]), np.array([1.0]), 1, np.float32([1]))
