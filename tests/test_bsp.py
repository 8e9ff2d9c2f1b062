"""Bulk-synchronous jobs of the QoS study (issue 15, item 2): the paper's patterns, compute
imbalance and per-process times, by hand."""

import numpy as np
import pytest

from fattorus.analysis import bsp


def pairs(fl):
    return sorted(zip(fl.src.tolist(), fl.dst.tolist()))


def test_flood_pairs_pairs_x_with_half_plus_x():
    fl = bsp.pattern_flows("flood_pairs", 8, 100.0)
    assert pairs(fl) == sorted([(x, 4 + x) for x in range(4)] + [(4 + x, x) for x in range(4)])
    assert (fl.nbytes == 100.0).all()


def test_nearest_neighbor_is_a_2d_grid_without_wraparound():
    fl = bsp.pattern_flows("nearest_neighbor", 20, 1.0)  # grid_dims(20, 2) = (5, 4): 5 rows of 4
    deg = np.bincount(fl.src, minlength=20)
    assert deg[0] == 2 and deg[3] == 2 and deg[1] == 3 and deg[5] == 4  # corner, corner, edge, interior
    assert (0, 3) not in pairs(fl) and (0, 16) not in pairs(fl)  # no wrap in a row or a column
    assert len(fl.src) == 2 * (5 * 3 + 4 * 4)  # each grid edge both ways
    assert set(pairs(fl)) == {(d, s) for s, d in pairs(fl)}


def test_random_pairs_match_the_lower_half_with_distinct_upper_ranks():
    fl = bsp.pattern_flows("random_pairs", 10, 1.0, np.random.default_rng(3))
    lower = [(s, d) for s, d in pairs(fl) if s < 5]
    assert sorted(s for s, _ in lower) == list(range(5))
    assert sorted(d for _, d in lower) == list(range(5, 10))
    assert set(pairs(fl)) == {(d, s) for s, d in pairs(fl)}
    again = bsp.pattern_flows("random_pairs", 10, 1.0, np.random.default_rng(3))
    assert pairs(again) == pairs(fl)  # the matching derives from the seed


def test_all_to_all_and_errors():
    fl = bsp.pattern_flows("all_to_all", 5, 1.0)
    assert len(fl.src) == 20 and (fl.src != fl.dst).all()
    with pytest.raises(ValueError, match="unknown pattern"):
        bsp.pattern_flows("ring", 4, 1.0)
    with pytest.raises(ValueError, match="random generator"):
        bsp.pattern_flows("random_pairs", 4, 1.0)


def test_compute_times_kinds():
    rng = np.random.default_rng(0)
    u = bsp.compute_times("uniform", 1000, 2.0, rng)
    assert u.min() >= 0 and u.max() <= 2.0 and u.max() > 1.9 and u.min() < 0.1
    s = bsp.compute_times("small", 1000, 2.0, rng)
    assert s.min() >= 1.8 and s.max() <= 2.0
    big = bsp.compute_times("large", 10, 2.0, rng)
    assert sorted(big.tolist()) == [0.0] * 9 + [2.0]
    assert (bsp.compute_times("none", 4, 2.0, rng) == 2.0).all()


def test_compute_scale_gives_the_compute_fraction():
    y = bsp.compute_scale(0.65, 3.0)
    assert y / (y + 3.0) == pytest.approx(0.65)


def test_process_times_by_hand():
    # p0 computes 1 s and sends 10 bytes at 5 B/s to p1 (arrives at 3 s); p1 computes 2 s and
    # sends 4 bytes at 4 B/s to p2 (arrives at 3 s); p2 computes 5 s.
    compute = np.array([1.0, 2.0, 5.0])
    done = bsp.process_times(compute, np.array([0, 1]), np.array([1, 2]), np.array([10.0, 4.0]), np.array([5.0, 4.0]))
    np.testing.assert_allclose(done, [3.0, 3.0, 5.0])
    np.testing.assert_allclose(bsp.job_steps(done, np.array([0, 0, 1]), 2), [3.0, 5.0])
    # A flow that crosses no link takes no time; a starved one never arrives.
    done = bsp.process_times(compute, np.array([0, 1]), np.array([1, 2]), np.array([10.0, 4.0]), np.array([np.inf, 0.0]))
    assert done[0] == 1.0 and np.isinf(done[1]) and np.isinf(done[2])  # a sender waits for its sends too


def test_a_message_uses_its_senders_level_else_its_receivers():
    level = np.array([0, 3, 0, 5])
    out = bsp.flow_levels(np.array([0, 1, 2, 3, 0]), np.array([2, 3, 1, 0, 2]), level)
    np.testing.assert_array_equal(out, [0, 3, 3, 5, 0])
