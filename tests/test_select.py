"""Per-row best-scored selection against NumPy's stable sort."""

from __future__ import annotations

import numpy as np
import pytest

from fattorus.kernels import select


def reference(score: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stable descending sort of each row (ties by column), finite scores only, cut at its count."""
    rows, cols = [], []
    for r in range(score.shape[0]):
        order = [c for c in np.argsort(-score[r], kind="stable") if np.isfinite(score[r, c])][: counts[r]]
        rows += [r] * len(order)
        cols += order
    return np.asarray(rows, np.int64), np.asarray(cols, np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_first_largest_is_the_prefix_of_a_stable_sort(seed):
    """Many ties (small integers), -inf entries, counts from 0 to past the row width."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n, m = int(rng.integers(1, 30)), int(rng.integers(1, 40))
        score = rng.integers(0, 5, (n, m)).astype(float)
        score[rng.random(score.shape) < 0.25] = -np.inf
        counts = rng.integers(0, m + 3, n)
        got = select.first_largest(score, counts)
        want = reference(score, counts)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_first_largest_on_mesh_sized_rows():
    """Distinct scores, 124 candidates, 6-27 kept (the mesh's shape)."""
    rng = np.random.default_rng(9)
    score = rng.gumbel(size=(300, 124)) - 2 * np.log(rng.integers(1, 13, 124))[None, :]
    counts = rng.integers(6, 28, 300)
    got, want = select.first_largest(score, counts), reference(score, counts)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_first_largest_refuses_mismatched_counts():
    with pytest.raises(ValueError, match="first_largest"):
        select.first_largest(np.zeros((3, 4)), np.zeros(2, np.int64))


@pytest.mark.parametrize("seed", range(3))
def test_first_largest_of_sums_is_the_stable_sort_of_the_masked_sums(seed):
    """The mesh's form: scores prior + noise where usable, made while the rows are read —
    the same picks as sorting NumPy's ``np.where(usable, prior + noise, -inf)``, ties (small
    integers) by column, ``-inf`` noise never taken."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, m = int(rng.integers(1, 30)), int(rng.integers(1, 40))
        noise = rng.integers(-2, 3, (n, m)).astype(float)
        noise[rng.random(noise.shape) < 0.1] = -np.inf
        prior = rng.integers(-2, 1, m).astype(float)
        usable = rng.random((n, m)) < 0.8
        counts = rng.integers(0, m + 3, n)
        got = select.first_largest_of_sums(noise, prior, usable, counts)
        want = reference(np.where(usable, prior[None, :] + noise, -np.inf), counts)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    with pytest.raises(ValueError, match="first_largest_of_sums"):
        select.first_largest_of_sums(np.zeros((3, 4)), np.zeros(3), np.ones((3, 4), bool), np.zeros(3, np.int64))
