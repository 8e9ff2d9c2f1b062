"""The per-job ``exposed`` flag of a run (fattorus.analysis.metrics): jobs sharing an
interference key while both run, checked against every pair."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from fattorus import topology
from fattorus.analysis import metrics
from fattorus.topology.base import Topology


def _sharing(keys, start, end) -> np.ndarray:
    """``metrics._concurrent_sharing_flat`` of per-job key arrays."""
    sizes = np.array([len(k) for k in keys], np.int64)
    flat = np.concatenate(keys).astype(np.int64) if len(keys) else np.zeros(0, np.int64)
    return metrics._concurrent_sharing_flat(flat, sizes, start, end)


def _pairs(keys, start, end) -> np.ndarray:
    """Brute force: job i shares a key with another job j while both run (their ``[start, end)``
    intervals intersect: an empty one meets none)."""
    n = len(keys)
    return np.array([any(j != i and set(keys[i]) & set(keys[j]) and max(start[i], start[j]) < min(end[i], end[j])
                         for j in range(n)) for i in range(n)], bool)


def test_concurrent_sharing_equals_every_pair_with_ties_and_touching_intervals():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        sparse = rng.random() < 0.3  # key ids far apart (counted in a dense space)
        shift = -3 if rng.random() < 0.2 else 0  # negative key ids (counted in a dense space too)
        keys = [(rng.choice(6, int(rng.integers(0, 4)), replace=bool(rng.random() < 0.3)) + shift)
                * (10**9 if sparse else 1) for _ in range(n)]  # some jobs name a key twice, some none
        start = rng.integers(0, 20, n).astype(float)  # a coarse grid: equal starts, touching ends
        end = start + rng.integers(0, 8, n)  # some empty intervals [s, s)
        end[rng.random(n) < 0.05] = np.inf  # still running at the end of the replay
        start[rng.random(n) < 0.03] = np.nan  # never started: holds nothing
        want = _pairs(keys, np.nan_to_num(start, nan=np.inf), end)
        np.testing.assert_array_equal(_sharing(keys, start, end), want)


def test_touching_jobs_do_not_interfere():
    # One key: [0, 1) and [1, 2) touch; [5, inf) and [6, 7) overlap. Another: alone.
    keys = [np.array([4]), np.array([4]), np.array([4]), np.array([4]), np.array([9])]
    got = _sharing(keys, np.array([0.0, 1, 5, 6, 0]), np.array([1.0, 2, np.inf, 7, 3]))
    assert got.tolist() == [False, False, True, True, False]


def test_a_key_held_past_its_last_holder_flags_the_one_still_running():
    # 0 holds key 1 over [0, 10); 1 joins over [2, 4) and leaves (both flagged then); 2 starts
    # at 6 beside 0 alone: key 1's last holder to start is 1, ended; 0 is still running.
    keys = [np.array([1]), np.array([1]), np.array([1])]
    got = _sharing(keys, np.array([0.0, 2, 6]), np.array([10.0, 4, 8]))
    assert got.tolist() == [True, True, True]


class _Keys:
    """A topology stand-in whose interference keys are given per node set."""

    def interference_keys(self, nodes):
        return np.unique(np.asarray(nodes) // 10)  # a "switch" per 10 nodes

    interference_keys_of = Topology.interference_keys_of  # the interface's default: one job at a time


def test_exposed_jobs_share_a_key_while_running():
    jobs = pl.DataFrame({"start_s": [0.0, 5.0, 5.0, 20.0], "end_s": [10.0, 15.0, 8.0, 30.0],
                         "alloc": [[0, 1], [3, 12], [25], [1, 2]]})
    # 0 and 1 share switch 0 during [5, 10); 2 is alone on switch 2; 3 uses switch 0 after both.
    assert metrics.exposed(jobs, _Keys()).tolist() == [True, True, False, False]


@pytest.mark.parametrize("name, blocks", [("ft6", False), ("ft6_tapered", False), ("ft6x6", False), ("cab", False),
                                         ("pinot", False), ("pinot", True), ("ft44", False), ("torus4", False),
                                         ("dragonfly_small", False)])
def test_keys_of_many_jobs_are_each_jobs_keys(name, blocks, monkeypatch):
    """``interference_keys_of`` (fat-trees: one sort for all jobs) against
    ``interference_keys`` job by job: the same keys in the same order, and the counts; jobs
    of no node, one node, one leaf, one pod, several pods, nodes in any order and repeated."""
    from fattorus.topology import fattree

    if blocks:  # the fat-trees' (job, leaf) table a few jobs at a time (else one block here)
        monkeypatch.setattr(fattree, "_MARKS", 7 * topology.load(name).n_leaves)
    topo = topology.load(name)
    rng = np.random.default_rng(len(name))
    allocs = []
    for _ in range(60):
        kind = rng.integers(0, 5)
        if kind == 0:
            allocs.append(np.zeros(0, np.int64))
        elif kind == 1:  # within a few neighbouring nodes: one leaf or two
            first = int(rng.integers(0, topo.n_nodes - 8))
            allocs.append(first + rng.permutation(int(rng.integers(1, 8))))
        else:
            allocs.append(rng.choice(topo.n_nodes, int(rng.integers(1, min(topo.n_nodes, 300))), replace=False))
    allocs.append(np.array([3, 3, 1]))  # a repeated node
    flat, lengths = np.concatenate(allocs), np.array([len(a) for a in allocs])
    keys, counts = topo.interference_keys_of(flat, lengths)
    want = [np.asarray(topo.interference_keys(a), np.int64) for a in allocs]
    np.testing.assert_array_equal(counts, [len(w) for w in want])
    np.testing.assert_array_equal(keys, np.concatenate(want))
    assert keys.dtype == np.int64 and counts.sum() > 0


def test_exposed_reads_empty_and_missing_allocations():
    """A job never started (no allocation: empty or null) holds nothing; the flat reading of
    the column keeps every other job's nodes in their rows."""
    jobs = pl.DataFrame({"start_s": [0.0, 5.0, np.nan, 1.0, 6.0], "end_s": [10.0, 15.0, np.nan, 3.0, 8.0],
                         "alloc": [[0, 1], [3, 12], None, [], [15]]}, schema_overrides={"alloc": pl.List(pl.Int32)})
    flat, lengths = metrics.flat_lists(jobs["alloc"])
    assert flat.tolist() == [0, 1, 3, 12, 15] and lengths.tolist() == [2, 2, 0, 0, 1]
    assert metrics.exposed(jobs, _Keys()).tolist() == [True, True, False, False, True]
