"""Speedup scenarios, one rule at a time, against the formulas of spec scenarios.md.

The reference for every check is written here from the spec's table: which jobs a scenario
touches, which bins it may draw, ``reduction = lo + (hi - lo) * min(N, 512) / 512`` inside a
bin, and uniform (or configured) bin probabilities.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fattorus.workload import speedup

CAP = 512
NODES = np.array([1, 2, 3, 4, 5, 6, 8, 16, 64, 100, 128, 129, 200, 256, 511, 512, 513, 1024, 5000])
RUNTIMES = np.linspace(60.0, 86400.0, NODES.size).round()


def _reductions(params, key, nodes=NODES, runtimes=RUNTIMES):
    out = np.asarray(speedup.apply(params, key, jnp.asarray(nodes), jnp.asarray(runtimes, jnp.float32)))
    return 1.0 - out / runtimes


def _bin_values(bins, n):
    """Reductions each bin gives a job of ``n`` nodes (spec formula)."""
    return [lo + (hi - lo) * min(n, CAP) / CAP for lo, hi in bins]


KEYS = jax.random.split(jax.random.PRNGKey(7), 20)


def test_shipped_scenarios_exist():
    assert {"none", "x5", "x10", "x20", "v1", "v2"} <= set(speedup.names())
    for name in speedup.names():
        assert speedup.load(name).name == name
        assert speedup.load(name).cap == CAP


@pytest.mark.parametrize("name", ["none", "x5", "x10", "x20", "v1", "v2"])
def test_a_scenario_draws_nothing_exactly_when_every_key_gives_the_same_run_times(name):
    """``draws_nothing`` (the ``trials=N`` warning of fattorus.sweep, session 45) against 20
    keys' draws over every size of NODES: a scenario that draws nothing gives one run time per
    job across the keys, and one that draws gives two at least."""
    params = speedup.load(name)
    draws = np.stack([_reductions(params, key) for key in KEYS])
    assert speedup.draws_nothing(params) == bool((draws == draws[0]).all())
    assert speedup.draws_nothing(params) == (name in ("none", "x5", "x10", "x20"))


def test_none_changes_nothing():
    params = speedup.load("none")
    for key in KEYS[:3]:
        np.testing.assert_array_equal(_reductions(params, key), 0.0)


@pytest.mark.parametrize("x", [5, 10, 20])
def test_x_scenarios(x):
    params = speedup.load(f"x{x}")
    for key in KEYS[:5]:
        red = _reductions(params, key)
        small = NODES <= 4
        np.testing.assert_array_equal(red[small], 0.0)  # jobs of at most 4 nodes unchanged
        # Constant x %, for a 5-node job as for a 5000-node one (no linear growth).
        np.testing.assert_allclose(red[~small], x / 100, rtol=0, atol=1e-6)


def test_x10_is_exactly_ten_percent():
    params = speedup.load("x10")
    runtimes = np.array([1000.0, 1000.0, 3600.0, 7.0])
    nodes = np.array([4, 5, 512, 100000])
    out = np.asarray(speedup.apply(params, KEYS[0], nodes, runtimes))
    np.testing.assert_allclose(out, [1000.0, 900.0, 3240.0, 6.3], rtol=1e-6)


def test_v1_reductions_inside_their_bins():
    params = speedup.load("v1")
    bins = [(0.0, 0.1), (0.0, 0.2), (0.0, 0.3)]
    for key in KEYS:
        red = _reductions(params, key)
        for n, r in zip(NODES, red):
            assert min(abs(r - v) for v in _bin_values(bins, n)) < 1e-5, (n, r)


def test_v2_rules():
    params = speedup.load("v2")
    mid, big = [(0.0, 0.1), (0.0, 0.2)], [(0.0, 0.1), (0.1, 0.2), (0.1, 0.3)]
    for key in KEYS:
        red = _reductions(params, key)
        for n, r in zip(NODES, red):
            if n <= 4:
                assert r == 0.0
            else:
                bins = mid if n <= 128 else big
                assert min(abs(r - v) for v in _bin_values(bins, n)) < 1e-5, (n, r)
                assert 0.0 <= r <= max(hi for _, hi in bins) + 1e-6


def test_linear_growth_reaches_the_top_at_cap():
    params = speedup.SpeedupParams("one-bin", (speedup.SizeClass(1, None, (speedup.Bin(0.1, 0.3, 1.0),)),))
    nodes = np.array([1, 128, 256, 384, 511, 512, 513, 1024, 10**6])
    red = _reductions(params, KEYS[0], nodes, np.full(nodes.size, 1000.0))
    expected = 0.1 + 0.2 * np.minimum(nodes, 512) / 512
    np.testing.assert_allclose(red, expected, atol=1e-6)
    np.testing.assert_allclose(red[nodes >= 512], 0.3, atol=1e-6)
    # v1 at >= 512 nodes: exactly the tops of its bins.
    red_v1 = _reductions(speedup.load("v1"), KEYS[1], np.full(300, 700), np.full(300, 1000.0))
    assert set(np.round(red_v1, 5)) == {0.1, 0.2, 0.3}


def _chi2(counts, probs):
    expected = np.asarray(probs) * np.sum(counts)
    return float(np.sum((np.asarray(counts) - expected) ** 2 / expected))


# 99.9 % quantiles of chi-square with 1, 2 degrees of freedom.
CHI2_999 = {1: 10.83, 2: 13.82}


@pytest.mark.parametrize(
    "name,n,tops",
    [("v1", 600, [0.1, 0.2, 0.3]), ("v2", 600, [0.1, 0.2, 0.3]), ("v2", 64, [0.1 / 8, 0.2 / 8])],
)
def test_bin_frequencies_uniform(name, n, tops):
    params = speedup.load(name)
    jobs = 500
    keys = jax.random.split(jax.random.PRNGKey(123), 40)
    out = np.asarray(speedup.batch(params, keys, np.full(jobs, n), np.full(jobs, 1000.0)))
    red = (1.0 - out / 1000.0).ravel()
    counts = [int(np.sum(np.abs(red - t) < 1e-5)) for t in tops]
    assert sum(counts) == red.size
    assert _chi2(counts, [1 / len(tops)] * len(tops)) < CHI2_999[len(tops) - 1]
    # and per seed: every seed draws every bin
    per_seed = (1.0 - out / 1000.0)
    for row in per_seed:
        assert all(np.any(np.abs(row - t) < 1e-5) for t in tops)


def test_configured_probabilities():
    cfg = {
        "name": "skewed",
        "classes": [{"min_nodes": 1, "max_nodes": None, "bins": [
            {"lo": 0.1, "hi": 0.1, "p": 0.7}, {"lo": 0.2, "hi": 0.2, "p": 0.2}, {"lo": 0.3, "hi": 0.3, "p": 0.1},
        ]}],
    }
    params = speedup.from_config(cfg)
    out = np.asarray(speedup.apply(params, KEYS[3], np.full(20000, 8), np.full(20000, 100.0)))
    counts = [int(np.sum(np.abs(out - v) < 1e-4)) for v in (90.0, 80.0, 70.0)]
    assert sum(counts) == 20000
    assert _chi2(counts, [0.7, 0.2, 0.1]) < CHI2_999[2]


def test_same_key_same_runtimes_different_keys_differ():
    params = speedup.load("v2")
    a = speedup.apply(params, KEYS[0], NODES, RUNTIMES)
    b = speedup.apply(params, KEYS[0], NODES, RUNTIMES)
    c = speedup.apply(params, KEYS[1], NODES, RUNTIMES)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))


def test_batch_equals_stacked_calls():
    params = speedup.load("v1")
    keys = KEYS[:6]
    out = speedup.batch(params, keys, NODES, RUNTIMES)
    assert out.shape == (6, NODES.size)
    stacked = np.stack([np.asarray(speedup.apply(params, k, NODES, RUNTIMES)) for k in keys])
    np.testing.assert_array_equal(np.asarray(out), stacked)


def test_apply_is_jittable_inside_user_code():
    params = speedup.load("x20")
    f = jax.jit(lambda k, r: speedup.apply(params, k, NODES, r).sum())
    assert float(f(KEYS[0], jnp.asarray(RUNTIMES))) == pytest.approx(
        RUNTIMES[NODES <= 4].sum() + 0.8 * RUNTIMES[NODES > 4].sum(), rel=1e-5
    )


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({"name": "p", "classes": [{"min_nodes": 1, "bins": [{"lo": 0, "hi": 0.1, "p": 0.5}]}]}, "sum"),
        ({"name": "o", "classes": [{"min_nodes": 1, "max_nodes": 10, "bins": [{"lo": 0, "hi": 0.1}]},
                                   {"min_nodes": 10, "bins": [{"lo": 0, "hi": 0.1}]}]}, "overlap"),
        ({"name": "r", "classes": [{"min_nodes": 1, "bins": [{"lo": 0.3, "hi": 0.1}]}]}, "lo <= hi"),
        ({"name": "f", "classes": [{"min_nodes": 1, "bins": [{"lo": 0, "hi": 10}]}]}, "fractions"),
        ({"name": "c", "cap": 0, "classes": []}, "cap"),
        ({"name": "m", "classes": [{"min_nodes": 1, "bins": [{"lo": 0, "hi": 0.1, "p": 1}, {"lo": 0, "hi": 0.2}]}]}, "every bin"),
        ({"name": "s", "classes": [{"min_nodes": 1, "bins": [{"lo": "a", "hi": 0.2}]}]}, "number"),
    ],
)
def test_bad_configs(cfg, match):
    with pytest.raises(speedup.SpeedupError, match=match):
        speedup.from_config(cfg)


def test_unknown_scenario():
    with pytest.raises(speedup.SpeedupError, match="v2"):
        speedup.load("v3")


@pytest.mark.parametrize("name", ["none", "x10", "v1", "v2"])
def test_factors64_same_draws_in_float64(name):
    params = speedup.load(name)
    for key in KEYS[:4]:
        f32 = np.asarray(speedup.factors(params, key, NODES))
        f64 = speedup.factors64(params, key, NODES)
        assert f64.dtype == np.float64
        np.testing.assert_allclose(f64, f32, atol=1e-6)
    if name == "x10":
        # float64 arithmetic: exactly 0.9 (1 - 0.1 in binary64) for every job above 4 nodes.
        assert set(speedup.factors64(params, KEYS[0], NODES)[NODES > 4]) == {1 - 0.1}


@pytest.mark.parametrize("name", ["none", "x5", "x10", "v1", "v2"])
def test_host_draws_are_jaxs_bins_and_factors(name):
    """The replay's draws on the host (NumPy threefry key, no JAX) against ``draw_bins`` and
    ``factors64`` with the same key as a ``jax.random`` key: the same bins for every job,
    sizes on every class edge and jobs of no class (0 nodes) included, over 20 keys."""
    from fattorus.kernels import threefry

    params = speedup.load(name)
    nodes = np.concatenate([NODES, [0, 0], np.random.default_rng(3).integers(1, 6000, 500)])
    for key in KEYS:
        words = np.asarray(key, np.uint32)
        want = np.asarray(speedup.draw_bins(params, key, nodes))
        assert np.array_equal(speedup.draw_bins_host(params, words, nodes), want)
        assert np.array_equal(speedup.factors64(params, words, nodes), speedup.factors64(params, key, nodes))


def test_a_runs_speedup_key_made_on_the_host_is_jaxs():
    """``fold_in(PRNGKey(seed), 0x5EED)`` as the replay makes it on the host, for seeds across
    the range it takes (JAX's own for the others)."""
    from fattorus.kernels import threefry

    for seed in (0, 1, 7, 12345, 2**31 - 1, 2**31, 3_000_000_000, 2**32 - 1):
        want = np.asarray(jax.random.fold_in(jax.random.PRNGKey(seed), 0x5EED))
        assert np.array_equal(threefry.fold_in(threefry.prng_key(seed), 0x5EED), want), seed
        assert np.array_equal(threefry.seed_key(seed, 0x5EED), want), seed
        assert np.array_equal(threefry.prng_key(seed), np.asarray(jax.random.PRNGKey(seed))), seed
    for seed in (-1, 2**32):
        with pytest.raises(ValueError, match="2\\*\\*32"):
            threefry.prng_key(seed)
    # seed_key takes a seed outside the host's range through JAX (a ModelRuntimes built in code).
    assert np.array_equal(threefry.seed_key(-1, 0xF10), np.asarray(jax.random.fold_in(jax.random.PRNGKey(-1), 0xF10)))
