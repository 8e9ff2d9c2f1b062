"""Per-link bookkeeping of padded routes (fattorus.kernels.linkmarks) against NumPy written
out in the test: crossing counts (np.bincount) and a job's marked links (np.unique)."""

from __future__ import annotations

import numpy as np

from fattorus.kernels.linkmarks import add_crossings, used_links


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
