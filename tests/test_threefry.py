"""Host threefry draws against ``jax.random``: the same bits for every function and shape."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from fattorus.kernels import threefry

SEEDS = [0, 1, 7, 0xF10, 2**31 + 5, 2**32 - 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_fold_in_and_split_are_jaxs(seed):
    key = jax.random.PRNGKey(seed)
    for data in [0, 1, 2, 255, 4096, 2**31, 2**32 - 1]:
        assert np.array_equal(threefry.fold_in(key, data), np.asarray(jax.random.fold_in(key, data))), data
    for num in [1, 2, 3, 8, 33]:
        assert np.array_equal(threefry.split(key, num), np.asarray(jax.random.split(key, num))), num


@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_bits_are_jaxs(seed):
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 3)
    for shape in [(1,), (2,), (3,), (1023,), (1024,), (1025,), (7, 13), (2, 3, 5), (124 * 1024,)]:
        got, want = threefry.uniform(key, shape), np.asarray(jax.random.uniform(key, shape))
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), shape
        assert got.min() >= 0 and got.max() < 1


def test_draws_do_not_depend_on_the_length_drawn():
    """A draw depends on its index alone (what lets the mesh draw exactly what it needs)."""
    key = jax.random.PRNGKey(11)
    long = np.asarray(jax.random.uniform(key, (4096,)))
    assert np.array_equal(threefry.uniform(key, 1000), long[:1000])


def test_keys_of_every_form_give_the_same_draws():
    raw = jax.random.PRNGKey(5)
    typed = jax.random.key(5)
    words = np.asarray(raw)
    want = np.asarray(jax.random.uniform(typed, (17,)))
    for key in (raw, typed, words, threefry.key_data(typed)):
        assert np.array_equal(threefry.uniform(key, 17), want)
    assert np.array_equal(threefry.fold_in(typed, 9), np.asarray(jax.random.key_data(jax.random.fold_in(typed, 9))))


@pytest.mark.parametrize("bad", [np.zeros(3, np.uint32), np.zeros(2, np.int64), np.zeros((2, 2), np.uint32)])
def test_a_malformed_key_is_refused(bad):
    with pytest.raises(ValueError, match="threefry key"):
        threefry.uniform(bad, 4)


def test_other_key_kinds_and_folds_are_refused():
    with pytest.raises(ValueError, match="threefry2x32"):
        threefry.uniform(jax.random.key(0, impl="rbg"), 4)
    with pytest.raises(ValueError, match="fold_in data"):
        threefry.fold_in(jax.random.PRNGKey(0), -1)


@pytest.mark.parametrize("seed", SEEDS)
def test_choice_is_jaxs(seed):
    """``choice`` against ``jax.random.choice`` with probabilities: the shipped pattern mixes'
    shapes (equal, integer weights) and random ones of 1-12 entries, some with zeros, and
    lengths around the draws' block sizes."""
    rng = np.random.default_rng(seed % 1000)
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 0xF10)
    mixes = [np.ones(4), np.array([3.0, 1.0, 2.0]), np.array([1.0]), np.array([0.0, 2.0, 0.0, 5.0])]
    mixes += [rng.random(int(rng.integers(1, 13))) * 10.0 ** int(rng.integers(-3, 4)) for _ in range(12)]
    for p in mixes:
        p = p / p.sum()
        for num in (1, 2, 17, 1023, 5000):
            want = np.asarray(jax.random.choice(key, len(p), (num,), p=jax.numpy.asarray(p)))
            assert np.array_equal(threefry.choice(key, p, num), want), (p, num)
