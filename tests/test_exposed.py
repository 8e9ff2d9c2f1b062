"""The per-job ``exposed`` flag of a run (fattorus.analysis.metrics): interval overlaps per
interference key, checked against every pair."""

from __future__ import annotations

import numpy as np
import polars as pl

from fattorus.analysis import metrics


def _pairs(groups, start, end) -> np.ndarray:
    """Brute force: entry i overlaps some other entry of its group ([start, end) intervals)."""
    n = len(groups)
    return np.array([any(groups[j] == groups[i] and j != i and start[j] < end[i] and start[i] < end[j]
                         for j in range(n)) for i in range(n)], bool)


def test_overlaps_equal_every_pair_with_ties_and_touching_intervals():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 50))
        groups = rng.integers(0, 6, n)
        start = rng.integers(0, 20, n).astype(float)  # a coarse grid: equal starts, touching ends
        end = start + rng.integers(1, 8, n)
        end[rng.random(n) < 0.05] = np.inf  # still running at the end of the replay
        np.testing.assert_array_equal(metrics._overlapping(groups, start, end), _pairs(groups, start, end))


def test_touching_jobs_do_not_interfere():
    # One group: [0, 1) and [1, 2) touch; [5, inf) and [6, 7) overlap. Another: alone.
    got = metrics._overlapping(np.array([4, 4, 4, 4, 9]), np.array([0.0, 1, 5, 6, 0]),
                               np.array([1.0, 2, np.inf, 7, 3]))
    assert got.tolist() == [False, False, True, True, False]


class _Keys:
    """A topology stand-in whose interference keys are given per node set."""

    def interference_keys(self, nodes):
        return np.unique(np.asarray(nodes) // 10)  # a "switch" per 10 nodes


def test_exposed_jobs_share_a_key_while_running():
    jobs = pl.DataFrame({"start_s": [0.0, 5.0, 5.0, 20.0], "end_s": [10.0, 15.0, 8.0, 30.0],
                         "alloc": [[0, 1], [3, 12], [25], [1, 2]]})
    # 0 and 1 share switch 0 during [5, 10); 2 is alone on switch 2; 3 uses switch 0 after both.
    assert metrics.exposed(jobs, _Keys()).tolist() == [True, True, False, False]
