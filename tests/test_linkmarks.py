"""Per-link bookkeeping of padded routes (fattorus.kernels.linkmarks) against NumPy written
out in the test: crossing counts (np.bincount) and a job's marked links (np.unique)."""

from __future__ import annotations

import numpy as np

from fattorus.kernels.linkmarks import add_crossings, connected, used_links


def test_counts_and_used_links_match_numpy_on_random_routes():
    rng = np.random.default_rng(3)
    for F, E, L in [(0, 4, 3), (1, 1, 1), (50, 12, 4), (3000, 400, 6)]:
        routes = np.where(rng.random((F, L)) < 0.6, rng.integers(0, E, (F, L)), -1).astype(np.int32)
        keep = rng.random(E) < 0.5
        count = np.zeros(E, np.int32)
        add_crossings(routes, count, 1)
        add_crossings(routes, count, 1)
        want = np.bincount(routes[routes >= 0], minlength=E)
        assert np.array_equal(count, 2 * want)
        add_crossings(routes, count, -2)
        assert not count.any()  # taken off as it was added
        used = routes[routes >= 0]
        got = used_links(routes, keep)
        assert got.dtype == np.int64 and np.array_equal(got, np.unique(used[keep[used]]))


def test_connected_is_the_component_of_a_breadth_first_search():
    """Jobs joined through shared links (directly or through other jobs) against a
    breadth-first search over the job-link graph written out here; lists empty, repeated,
    in any order."""
    rng = np.random.default_rng(8)
    for trial in range(300):
        E, J = int(rng.integers(1, 60)), int(rng.integers(0, 12))
        lists = [np.unique(rng.integers(0, E, int(rng.integers(0, 5)))) for _ in range(J)]
        seed = np.unique(rng.integers(0, E, int(rng.integers(0, 4))))
        reached, members, frontier = set(seed.tolist()), set(), True
        while frontier:
            frontier = False
            for i, x in enumerate(lists):
                if i not in members and reached & set(x.tolist()):
                    members.add(i)
                    reached |= set(x.tolist())
                    frontier = True
        got = connected(seed, lists, E)
        assert got.dtype == np.bool_ and got.tolist() == [i in members for i in range(J)], trial
