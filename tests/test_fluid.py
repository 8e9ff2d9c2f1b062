"""Flow finish times in the fluid model (fattorus.analysis.fluid): hand-worked examples, an
independent event loop over the NumPy progressive filling on random networks, and the bounds
no schedule of bytes can beat (a link moves at most its capacity; a flow at most its slowest
link's)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from fattorus import topology
from fattorus.analysis import commtime, fluid, patterns


def _routes(*flows: list[int]) -> np.ndarray:
    width = max(len(f) for f in flows)
    return np.array([f + [-1] * (width - len(f)) for f in flows], np.int32)


def test_a_short_flow_hands_its_share_on():
    # One link of 1: both flows at 1/2 until the 1-byte one finishes at 2; the other has 2 of
    # its 3 bytes left and takes the whole link: 2 + 2 = 4 (its steady rate would say 6).
    finish, solves = fluid.finish_times(_routes([0], [0]), np.array([1.0], np.float32), np.array([1.0, 3.0]))
    assert np.allclose(finish, [2, 4], rtol=1e-6)
    assert solves == 2


def test_a_flow_leaving_can_slow_another_by_hand():
    # Link 0 (1) carries A and B; link 1 (1) carries B, C, D. Rates: B = C = D = 1/3 (link 1),
    # A = 2/3. D (1/6 byte) finishes at 1/2. Then link 1 holds B and C: everything at 1/2 —
    # A slows from 2/3 to 1/2 and finishes at 1/2 + (2/3)/(1/2) = 11/6, later than its
    # steady 3/2. B and C then have 1/6 left at 1/2 each: 11/6 + 1/3 = 13/6.
    routes = _routes([0], [0, 1], [1], [1])
    finish, _ = fluid.finish_times(routes, np.array([1.0, 1.0], np.float32), np.array([1.0, 1.0, 1.0, 1 / 6]))
    assert np.allclose(finish, [11 / 6, 13 / 6, 13 / 6, 1 / 2], rtol=1e-5)


def test_a_flow_no_link_lets_through_never_finishes_and_holds_no_one_up():
    # Link 1 has no capacity: the flow over it is starved (inf); the other drains as if alone.
    finish, _ = fluid.finish_times(_routes([0], [0, 1]), np.array([2.0, 0.0], np.float32), np.array([4.0, 1.0]))
    assert finish[0] == pytest.approx(2.0) and np.isinf(finish[1])


def test_flows_finishing_within_same_event_leave_together_and_no_others():
    # Three flows share one link of 1 (1/3 each): bytes 1, 1 + 1e-7 and 1 + 1e-4. The second
    # would finish 1e-7 of the time later than the first, inside SAME_EVENT (1e-5): it leaves
    # with it. The third, 1e-4 later, is past the window: it has 1e-4 bytes left, alone on the
    # link at rate 1, and finishes 1e-4 later. Two solves.
    assert fluid.SAME_EVENT == 1e-5
    finish, solves = fluid.finish_times(_routes([0], [0], [0]), np.array([1.0], np.float32),
                                        np.array([1.0, 1.0 + 1e-7, 1.0 + 1e-4]))
    assert solves == 2 and finish[0] == finish[1] == pytest.approx(3.0, rel=1e-6)
    assert finish[2] - finish[0] == pytest.approx(1e-4, rel=1e-3)


def test_late_events_solve_compacted_arrays(monkeypatch):
    # 300 flows, each alone on its own link of 1, bytes 1..300: one finishes per event, each at
    # its bytes (alone on its link). The open flows move into ever shorter power-of-two arrays
    # (compaction) once they fit one a quarter as long: 512 rows while more than 128 flows are
    # open (172 events), then 128 (64 would need a bucket of 32, below the smallest).
    n = 300
    rows = []
    real = fluid.maxmin_rates
    monkeypatch.setattr(fluid, "maxmin_rates", lambda ids, *a, **k: rows.append(ids.shape[0]) or real(ids, *a, **k))
    finish, solves = fluid.finish_times(_routes(*[[e] for e in range(n)]), np.ones(n, np.float32),
                                        np.arange(1.0, n + 1), compiled=False)  # the JAX drain compacts
    assert solves == n and np.allclose(finish, np.arange(1.0, n + 1), rtol=1e-5)
    assert rows == [512] * (n - 128) + [128] * 128


def test_flows_must_match_their_routes():
    with pytest.raises(ValueError, match="same flows"):
        fluid.finish_times(_routes([0], [0]), np.array([1.0], np.float32), np.ones(2), active=np.ones(1, bool))


def test_idle_flows_take_no_time():
    # No bytes, no link (both ends on one node), or inactive: 0; the others as if alone.
    routes = _routes([0], [-1], [0], [0])
    finish, _ = fluid.finish_times(routes, np.array([4.0], np.float32), np.array([8.0, 5.0, 0.0, 8.0]),
                                   active=np.array([True, True, True, False]))
    assert np.allclose(finish, [2, 0, 0, 0])


def _reference(routes: np.ndarray, capacity: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """The plain NumPy drain (float64, the open flows' routes alone each solve, no padding or
    compaction), with flows leaving together only within 1e-9; checked by hand below."""
    return fluid.finish_times_numpy(routes, capacity, nbytes, same_event=1e-9)[0]


def test_the_numpy_reference_by_hand():
    assert np.allclose(_reference(_routes([0], [0]), np.array([1.0]), np.array([1.0, 3.0])), [2, 4])
    routes = _routes([0], [0, 1], [1], [1], [-1])
    got = _reference(routes, np.array([1.0, 1.0]), np.array([1.0, 1.0, 1.0, 1 / 6, 5.0]))
    assert np.allclose(got, [11 / 6, 13 / 6, 13 / 6, 1 / 2, 0])


@pytest.mark.parametrize("n_flows,sparse", [(40, False), (300, True)])
def test_random_networks_match_an_event_loop_and_respect_capacity(n_flows, sparse):
    rng = np.random.default_rng(n_flows)
    E = 12
    capacity = rng.uniform(1, 4, E).astype(np.float32)
    hops = rng.integers(1, 5, n_flows)
    routes = _routes(*[list(rng.choice(E, h, replace=False)) for h in hops])
    nbytes = rng.uniform(0.5, 20, n_flows).round(3)
    finish, solves = fluid.finish_times(routes, capacity, nbytes, sparse=sparse)
    assert 1 < solves <= n_flows
    # 300 flows of distinct sizes drain one by one: the solves run on compacted arrays.
    assert np.allclose(finish, _reference(routes, capacity.astype(np.float64), nbytes), rtol=1e-5)
    # No flow beats its slowest link alone; no link moves more than its capacity per second.
    slowest = np.where(routes >= 0, capacity[np.maximum(routes, 0)], np.inf).min(axis=1)
    assert (finish >= nbytes / slowest * (1 - 1e-5)).all()
    for e in range(E):
        on = (routes == e).any(axis=1)
        if on.any():
            assert finish[on].max() >= nbytes[on].sum() / capacity[e] * (1 - 1e-5)


def test_step_times_fluid_is_each_jobs_last_finish_on_a_fat_tree():
    # Two jobs on ft6x6 (all-to-all and Pairs, interleaved node ids so they share leaf links):
    # each job's fluid step is the last finish of its flows by the reference loop. Pairs'
    # few big flows meet the all-to-all's many small ones: steady, they keep their small
    # share to the end (step 9.0e6 in ft6x6's bandwidth units); draining, they take the links
    # back (3.1e6).
    ft = topology.load("ft6x6")
    jobs = [commtime.Job(np.arange(0, 54, 2), patterns.make("all_to_all", None, 27)),
            commtime.Job(np.arange(1, 54, 2), patterns.make("random_pairs", jax.random.PRNGKey(3), 27))]
    route_ids, nbytes, owner = commtime._flows(ft, jobs)
    finish = _reference(route_ids, commtime.solver_capacity(ft), nbytes)
    want = [finish[owner == j].max() for j in range(2)]
    got = commtime.step_times(ft, jobs, completion="fluid")
    assert np.allclose(got, want, rtol=1e-5)
    steady = commtime.step_times(ft, jobs)
    assert np.isclose(got[0], steady[0], rtol=1e-5) and got[1] < 0.5 * steady[1]
    with pytest.raises(ValueError, match="completion"):
        commtime.step_times(ft, jobs, completion="packet")


def test_step_times_fluid_pool_parallel_cables():
    # dragonfly_small: jobs A (nodes 0 <-> 8) and B (1 <-> 9), 4 bytes each way, on the same
    # black cable of a two-cable bundle (tests/test_commtime.py works it by hand). Pooled, the
    # bundle carries 10.5 and each flow runs at its node link's 5.25 to the end: 4 / 5.25,
    # draining or not. On one cable of 5.25 they would take twice as long.
    t = topology.load("dragonfly_small")
    pairs = patterns.Traffic(np.array([0, 1]), np.array([1, 0]), np.array([4.0, 4.0]))
    jobs = [commtime.Job(np.array([0, 8]), pairs), commtime.Job(np.array([1, 9]), pairs)]
    np.testing.assert_allclose(commtime.step_times(t, jobs, completion="fluid"), 4.0 / 5.25, rtol=1e-6)


@pytest.mark.parametrize("n_flows,sparse", [(40, False), (300, True), (2000, False)])
def test_the_compiled_drain_is_the_jax_drain_bit_for_bit(n_flows, sparse, on_cpu):
    """``compiled=True`` solves each event with the compiled solver on the open flows alone;
    the JAX drain (compacted, padded arrays) must give the same finish times and events."""
    rng = np.random.default_rng(n_flows)
    E = max(8, n_flows // 8)
    routes = np.where(rng.random((n_flows, 5)) < 0.7, rng.integers(0, E, (n_flows, 5)), -1).astype(np.int32)
    cap = rng.choice([1.0, 2.0, 0.5], E).astype(np.float32)
    nbytes = rng.choice([0.0, 1.0, 4.0, 64.0, 1e3], n_flows)
    cap[rng.random(E) < 0.05] = 0  # starved flows: they never finish
    active = rng.random(n_flows) < 0.9
    for act in (None, active):
        jax_drain = fluid.finish_times(routes, cap, nbytes, act, sparse=sparse, compiled=False)
        compiled = fluid.finish_times(routes, cap, nbytes, act, sparse=sparse, compiled=True)
        assert np.array_equal(compiled[0], jax_drain[0]) and compiled[1] == jax_drain[1]
