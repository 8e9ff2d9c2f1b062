"""Adaptive (UGAL-like) steady-state traffic (fattorus.kernels.adaptive)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fattorus import topology
from fattorus.kernels.adaptive import adaptive_loads, adaptive_loads_full, adaptive_numpy, hot_index, valiant_paths

#: Flows of every random case below. The dragonfly routes with eager ``jax.numpy`` code that
#: compiles each operation anew for every batch shape (seconds a shape on CPU), and the solvers
#: compile per input shape, so the cases share one flow count (and, where a test only needs
#: random flows, the very paths another test solved: its solve is then already compiled).
F = 300


def _dragonfly_case(seed: int) -> tuple[topology.Topology, np.ndarray, np.ndarray, np.ndarray]:
    """``(df, src, dst, paths)``: F random flows between distinct nodes of the small
    dragonfly, each with its minimal route, the black-first one and two Valiant routes
    (seeded): the candidates of :func:`_random_case`, whose solves then share this one's
    compilation (the iteration compiles per paths shape)."""
    df = topology.load("dragonfly_small")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, df.n_nodes, F)
    dst = (src + rng.integers(1, df.n_nodes, F)) % df.n_nodes
    return df, src, dst, valiant_paths(df, src, dst, k=2, seed=seed, black_first=True)


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
    df, src, dst, paths = _dragonfly_case(seed)
    nbytes = np.random.default_rng(100 + seed).uniform(1, 10, F).astype(np.float32)
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
    # Three placements of random flows: the dragonfly test's (distinct random paths each).
    cases = [_dragonfly_case(seed) for seed in range(3)]
    df = cases[0][0]
    paths = jnp.asarray(np.stack([case[3] for case in cases]))
    nbytes, bw = jnp.ones(F), jnp.asarray(np.asarray(df.link_bandwidth, np.float32))
    many = jax.vmap(lambda p: adaptive_loads_full(p, nbytes, bw).max_cost)(paths)
    for b in range(3):
        assert float(many[b]) == pytest.approx(float(adaptive_loads_full(paths[b], nbytes, bw).max_cost))
        # the incremental solver (float64) reaches the same maximum
        assert float(many[b]) == pytest.approx(adaptive_loads(paths[b], nbytes, bw).max_cost, rel=1e-4)


def test_job_traffic_splits_the_joint_traffic_by_owner():
    from fattorus.kernels.adaptive import _traffic, job_traffic

    df, _, _, paths = _dragonfly_case(0)
    paths = jnp.asarray(paths)
    rng = np.random.default_rng(9)
    owner = rng.integers(0, 3, F)
    nbytes = jnp.asarray(rng.uniform(1, 5, F), jnp.float32)
    got = adaptive_loads(paths, nbytes, jnp.asarray(np.asarray(df.link_bandwidth, np.float32)))
    rows = np.asarray(job_traffic(paths, got.split, nbytes, jnp.asarray(owner), 3, df.n_links))
    assert np.allclose(rows.sum(axis=0), np.asarray(got.traffic), rtol=1e-5, atol=1e-3)
    for j in range(3):  # a job's row = the traffic of its flows alone, with the same split
        alone = _traffic(paths, got.split, jnp.where(jnp.asarray(owner) == j, nbytes, 0), df.n_links)
        assert np.allclose(rows[j], np.asarray(alone), rtol=1e-5, atol=1e-3)


def _random_case(seed, black_first=True):
    df = topology.load("dragonfly_small")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, df.n_nodes, F)
    dst = (src + rng.integers(1, df.n_nodes, F)) % df.n_nodes
    nbytes = rng.choice([1.0, 2.0, 4.0], F)  # few distinct sizes: many tied hot links
    paths = valiant_paths(df, src, dst, k=2, seed=seed, black_first=black_first)
    return df, paths, nbytes, np.asarray(df.link_bandwidth, np.float64), np.asarray(df.link_class) > 0


def test_hot_index_lists_every_flow_crossing_each_counted_link():
    df, paths, _, _, counted = _random_case(0)
    flow, start = hot_index(paths, counted, df.n_links)
    crossing: dict[int, list[int]] = {e: [] for e in range(df.n_links)}  # one pass over every path
    for f in range(len(paths)):
        for p in range(paths.shape[1]):
            for link in paths[f, p].tolist():
                if link >= 0:
                    crossing[link].append(f)
    for e in range(df.n_links):
        got = sorted(flow[start[e]:start[e + 1]].tolist())
        want = sorted(crossing[e]) if counted[e] else []
        assert got == want, e


@pytest.mark.parametrize("seed", range(4))
def test_incremental_iteration_equals_the_plain_numpy_one(seed):
    # Same iteration, both in float64: the same decisions, so the same split, step for step.
    df, paths, nbytes, bw, counted = _random_case(seed)
    for cnt in (None, counted):
        got = adaptive_loads(paths, nbytes, bw, counted=cnt)
        split, m, it = adaptive_numpy(paths, nbytes, bw, counted=cnt)
        assert got.iterations == it and got.max_cost == pytest.approx(m, rel=1e-12)
        assert np.allclose(got.split, split, atol=1e-12)
        # the traffic is that split's, recomputed from scratch
        w = (got.split * nbytes[:, None])[..., None] * np.ones(paths.shape)
        assert np.allclose(got.traffic, np.bincount(paths[paths >= 0], w[paths >= 0], minlength=df.n_links))


def test_chunk_size_changes_the_work_not_the_result():
    df, paths, nbytes, bw, counted = _random_case(3)  # the wide solve: incremental[3]'s, compiled
    wide = adaptive_loads(paths, nbytes, bw, counted=counted)
    for chunk in (1, 7):  # many chunks per iteration, one incidence or a few at a time
        tight = adaptive_loads(paths, nbytes, bw, counted=counted, chunk=chunk)
        assert wide.iterations == tight.iterations and np.allclose(wide.split, tight.split, atol=1e-12)


def test_black_first_candidates_lower_an_in_group_hot_spot():
    # Small dragonfly, group 0: node 0 (router (0,0,0)) and node 2 (router (0,0,1)) both send to
    # node 10 (router (0,1,1)). Green first, both cross the black cable (0 + 10) % 2 = (2 + 10) % 2
    # = 0 from router 1 down to router 5: load 2. Black first, the first flow goes down column 0
    # (router 0 -> 4) and along row 1 (4 -> 5) instead; the second has one hop, no other route.
    df = topology.load("dragonfly_small")
    src, dst, nbytes = np.array([0, 2]), np.array([10, 10]), np.array([1.0, 1.0])
    bw, counted = np.ones(df.n_links), np.asarray(df.link_class) > 0
    # Routed in a batch of F (the two flows repeated; a flow's paths do not depend on the
    # others', k = 0 draws nothing): the batch shape the other tests' routing compiled.
    paths = valiant_paths(df, np.resize(src, F), np.resize(dst, F), k=0, black_first=True)[:2]
    assert (paths[1, 1] == -1).all() and (paths[0, 1] >= 0).any()
    minimal = adaptive_loads(paths[:, :1], nbytes, bw, counted=counted)
    both = adaptive_loads(paths, nbytes, bw, counted=counted, min_step=1e-4, max_iters=2000)
    assert minimal.max_cost == 2.0
    assert 1.0 <= both.max_cost <= 1.01 and both.split[0, 1] >= 0.99


def test_degenerate_inputs_match_numpy():
    paths = np.array([[[0], [1]], [[0], [2]]])
    for p, cnt in ((paths, np.zeros(3, bool)), (np.full((2, 2, 1), -1), None)):  # nothing counted / no links
        got = adaptive_loads(p, np.array([1.0, 1.0]), np.ones(3), counted=cnt)
        split, m, it = adaptive_numpy(p, np.array([1.0, 1.0]), np.ones(3), counted=cnt)
        assert got.max_cost == m == 0.0 and got.iterations == it and np.array_equal(got.split, split)
    empty = adaptive_loads(np.zeros((0, 2, 1), int), np.zeros(0), np.ones(3))
    assert empty.split.shape == (0, 2) and not empty.traffic.any() and empty.iterations == 0
