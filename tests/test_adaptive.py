"""Adaptive (UGAL-like) steady-state traffic (fattorus.kernels.adaptive)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fattorus import topology
from fattorus.kernels.adaptive import adaptive_loads, adaptive_numpy, valiant_paths


def test_two_flows_share_a_hot_link_by_hand():
    # Flows A and B both take link 0 minimally; A may detour over link 1, B over link 2.
    # Minimising the largest load: a = b = 1/3 stays on link 0, so every link carries 2/3.
    paths = jnp.array([[[0], [1]], [[0], [2]]])
    got = adaptive_loads(paths, jnp.array([1.0, 1.0]), jnp.ones(3), min_step=1e-4, max_iters=2000)
    assert float(got.minimal_max_cost) == 2.0
    assert 2 / 3 - 1e-5 <= float(got.max_cost) <= 2 / 3 + 0.02
    assert np.allclose(np.asarray(got.split).sum(axis=1), 1.0)
    split, m, _ = adaptive_numpy(np.asarray(paths), np.ones(2), np.ones(3), min_step=1e-4, max_iters=2000)
    assert m == pytest.approx(float(got.max_cost), rel=1e-3)


def test_a_flow_without_alternatives_stays_minimal():
    paths = jnp.array([[[0], [-1]], [[0], [-1]]])
    got = adaptive_loads(paths, jnp.array([1.0, 3.0]), jnp.ones(1))
    assert np.allclose(got.split[:, 0], 1.0) and float(got.max_cost) == 4.0


@pytest.mark.parametrize("seed", range(3))
def test_on_a_dragonfly_max_load_never_rises_and_bytes_are_conserved(seed):
    df = topology.load("dragonfly_small")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, df.n_nodes, 300)
    dst = (src + rng.integers(1, df.n_nodes, 300)) % df.n_nodes
    nbytes = rng.uniform(1, 10, 300).astype(np.float32)
    paths = valiant_paths(df, src, dst, k=2, seed=seed)
    assert np.array_equal(paths[:, 0, :df.max_route_links], np.asarray(df.routes(src, dst)))
    bw = np.asarray(df.link_bandwidth, np.float32)
    got = adaptive_loads(jnp.asarray(paths), jnp.asarray(nbytes), jnp.asarray(bw))
    assert float(got.max_cost) <= float(got.minimal_max_cost)
    split = np.asarray(got.split, np.float64)
    assert np.all(split >= -1e-7) and np.allclose(split.sum(axis=1), 1.0, atol=1e-5)
    # Conservation: each flow's bytes cross each link of each path once, in proportion.
    hops = (paths >= 0).sum(axis=2)
    assert float(np.asarray(got.traffic).sum()) == pytest.approx(float((split * hops * nbytes[:, None]).sum()), rel=1e-4)
    # The independent NumPy iteration reaches the same maximum.
    _, m, _ = adaptive_numpy(paths, nbytes, bw)
    assert m == pytest.approx(float(got.max_cost), rel=1e-3)


def test_batches_of_placements_equal_single_solves():
    df = topology.load("dragonfly_small")
    rng = np.random.default_rng(5)
    batch = []
    for _ in range(3):
        src = rng.integers(0, df.n_nodes, 100)
        dst = (src + rng.integers(1, df.n_nodes, 100)) % df.n_nodes
        batch.append(valiant_paths(df, src, dst, k=2))
    paths = jnp.asarray(np.stack(batch))
    nbytes, bw = jnp.ones(100), jnp.asarray(np.asarray(df.link_bandwidth, np.float32))
    many = jax.vmap(lambda p: adaptive_loads(p, nbytes, bw).max_cost)(paths)
    for b in range(3):
        assert float(many[b]) == pytest.approx(float(adaptive_loads(paths[b], nbytes, bw).max_cost))


def test_job_traffic_splits_the_joint_traffic_by_owner():
    from fattorus.kernels.adaptive import _traffic, job_traffic

    df = topology.load("dragonfly_small")
    rng = np.random.default_rng(9)
    src = rng.integers(0, df.n_nodes, 200)
    dst = (src + rng.integers(1, df.n_nodes, 200)) % df.n_nodes
    owner = rng.integers(0, 3, 200)
    nbytes = jnp.asarray(rng.uniform(1, 5, 200), jnp.float32)
    paths = jnp.asarray(valiant_paths(df, src, dst, k=2))
    got = adaptive_loads(paths, nbytes, jnp.asarray(np.asarray(df.link_bandwidth, np.float32)))
    rows = np.asarray(job_traffic(paths, got.split, nbytes, jnp.asarray(owner), 3, df.n_links))
    assert np.allclose(rows.sum(axis=0), np.asarray(got.traffic), rtol=1e-5, atol=1e-3)
    for j in range(3):  # a job's row = the traffic of its flows alone, with the same split
        alone = _traffic(paths, got.split, jnp.where(jnp.asarray(owner) == j, nbytes, 0), df.n_links)
        assert np.allclose(rows[j], np.asarray(alone), rtol=1e-5, atol=1e-3)
