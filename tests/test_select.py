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


def _gumbel_reference(u: np.ndarray, prior: np.ndarray, usable: np.ndarray,
                      counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every entry scored (NumPy's logs on the whole array), then the stable sort."""
    noise = -np.log(-np.log(np.maximum(u.astype(np.float64), np.finfo(np.float32).tiny)))
    return reference(np.where(usable, prior[None, :] + noise, -np.inf), counts)


def _draws(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """float32 uniforms with the awkward ones planted: exact 0, the largest float32 below 1,
    slice ends of the screen's table, and repeats within a row (exact ties)."""
    u = rng.random((n, m)).astype(np.float32)
    odd = np.array([0.0, np.nextafter(np.float32(1), np.float32(0)), 0.5, 1 / 4096, 4095 / 4096,
                    np.float32(2.0**-23)], np.float32)
    u[rng.random(u.shape) < 0.05] = rng.choice(odd, 1)[0]
    if m > 1:
        u[:, m // 2] = u[:, 0]  # an exact repeat per row
    return u


@pytest.mark.parametrize("screen", [(4096, 64, 16.0), (16, 4, 20.0), (2, 1, 1.0), (64, 512, 3.0)])
def test_gumbel_top_k_is_the_stable_sort_of_every_entry_scored(screen):
    """The screened top-k against scoring every entry (``np.log`` over the whole array) and a
    stable sort: the same picks in the same order, with the screen's table and histogram at
    today's sizes and coarsened (more entries near a threshold), priors with ties, increasing
    or spread far apart, counts from 0 to past the row width."""
    rng = np.random.default_rng(sum(map(int, screen[:2])))
    for trial in range(60):
        n, m = int(rng.integers(1, 40)), int(rng.integers(1, 130))
        u = _draws(rng, n, m)
        prior = [rng.integers(-3, 1, m).astype(float),  # ties between columns
                 -2 * np.log(rng.integers(1, 13, m)),  # the mesh's kind
                 np.sort(rng.normal(0, 30, m)),  # increasing, wide
                 np.zeros(m)][trial % 4]
        usable = rng.random((n, m)) < 0.85
        counts = rng.integers(0, m + 3, n)
        got = select._gumbel_top_k(u, prior, usable, counts, *screen)
        want = _gumbel_reference(u, prior, usable, counts)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), trial


def test_gumbel_top_k_on_mesh_sized_rows_scores_few_entries():
    """The mesh's shape (124 candidates, 6-27 kept): the picks of scoring every entry, and the
    screen passes a small share of the entries (what makes it worth having)."""
    rng = np.random.default_rng(5)
    u = rng.random((2000, 124)).astype(np.float32)
    prior = -2 * np.log(np.sort(rng.integers(1, 13, 124)))
    usable, counts = np.ones(u.shape, bool), rng.integers(6, 28, 2000)
    got, want = select.gumbel_top_k(u, prior, usable, counts), _gumbel_reference(u, prior, usable, counts)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    low, high = select._screen_tables(select.SCREEN_BUCKETS)
    threshold, _ = select._thresholds(u, prior, usable, counts, low, float(prior.min() + low[0]),
                                      select.SCREEN_BINS, select.SCREEN_SPAN)
    cols, _ = select._survivors(u, prior, usable, high, threshold)
    assert len(got[0]) <= len(cols) < 0.25 * u.size


def test_screen_tables_bound_the_noise():
    """Every float32 draw's noise lies within its slice's bounds (checked on 2**20 draws
    and on every slice's ends)."""
    low, high = select._screen_tables(select.SCREEN_BUCKETS)
    rng = np.random.default_rng(2)
    ends = np.arange(select.SCREEN_BUCKETS, dtype=np.float32) / select.SCREEN_BUCKETS
    u = np.concatenate([rng.random(2**20).astype(np.float32), ends, np.nextafter(ends[1:], np.float32(0)),
                        [np.nextafter(np.float32(1), np.float32(0))]]).astype(np.float32)
    b = (u * np.float32(select.SCREEN_BUCKETS)).astype(np.int64)
    g = select.gumbel_noise(u)
    assert (low[b] <= g).all() and (g <= high[b]).all()


def test_gumbel_top_k_refuses_bad_inputs():
    u, usable, counts = np.full((3, 4), 0.5, np.float32), np.ones((3, 4), bool), np.ones(3, np.int64)
    with pytest.raises(ValueError, match="gumbel_top_k"):
        select.gumbel_top_k(u, np.zeros(3), usable, counts)
    with pytest.raises(ValueError, match="finite"):
        select.gumbel_top_k(u, np.array([0, 0, np.nan, 0]), usable, counts)
    for bad in (1.0, -0.25, np.nan):
        v = u.copy()
        v[1, 2] = bad
        with pytest.raises(ValueError, match=r"\[0, 1\)"):
            select.gumbel_top_k(v, np.zeros(4), usable, counts)
