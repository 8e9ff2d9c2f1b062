"""Communication patterns: neighbour counts, symmetry, locality, byte totals, determinism."""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np
import pytest

from fattorus.analysis import patterns as P

KEY = jax.random.PRNGKey(7)


def pairs(t: P.Traffic) -> list[tuple[int, int]]:
    return list(zip(t.src.tolist(), t.dst.tolist()))


def coords_of(rank: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major coordinates, computed by hand (last axis fastest)."""
    out = []
    for d in reversed(dims):
        rank, c = divmod(rank, d)
        out.append(c)
    return tuple(reversed(out))


@pytest.mark.parametrize(
    "n, ndim, expected",
    [(4096, 4, (8, 8, 8, 8)), (100, 3, (5, 5, 4)), (64, 3, (4, 4, 4)), (97, 2, (97, 1)), (12, 2, (4, 3)), (1, 3, (1, 1, 1))],
)
def test_grid_dims(n, ndim, expected):
    assert P.grid_dims(n, ndim) == expected


@pytest.mark.parametrize("fn, ndim, n, nbytes", [
    (P.stencil2d, 2, 36, 64 * 1024),
    (P.stencil3d, 3, 60, 256 * 1024),
    (P.stencil4d, 4, 81, 4 * 1024 * 1024),
    (P.stencil4d, 4, 256, 4 * 1024 * 1024),
])
def test_stencils(fn, ndim, n, nbytes):
    t = fn(None, n)
    dims = P.grid_dims(n, ndim)
    assert all(d >= 3 for d in dims), "test sizes chosen so that +1 and -1 neighbours differ"
    # 2 * ndim distinct neighbours per rank.
    assert t.n_flows == 2 * ndim * n
    per_rank = Counter(t.src.tolist())
    assert set(per_rank.values()) == {2 * ndim}
    assert len(set(pairs(t))) == t.n_flows
    # Symmetric.
    assert set(pairs(t)) == {(b, a) for a, b in pairs(t)}
    # Each neighbour differs in exactly one coordinate by +-1 (periodic).
    for a, b in pairs(t):
        ca, cb = coords_of(a, dims), coords_of(b, dims)
        diffs = [((y - x) % d) for x, y, d in zip(ca, cb, dims)]
        nonzero = [x for x in diffs if x != 0]
        assert len(nonzero) == 1 and nonzero[0] in (1, dims[diffs.index(nonzero[0])] - 1)
    # Bytes.
    assert np.all(t.nbytes == nbytes)
    assert t.total_bytes == 2 * ndim * n * nbytes


def test_stencil_small_extents():
    # n = 2 on a 2D grid: dims (2, 1); the +-1 neighbours along the extent-2 axis are the
    # same rank (two messages), along the extent-1 axis the rank itself (dropped).
    t = P.stencil2d(None, 2)
    assert sorted(pairs(t)) == [(0, 1), (0, 1), (1, 0), (1, 0)]
    assert P.stencil4d(None, 1).n_flows == 0
    assert P.stencil2d(None, 0).n_flows == 0


def test_all_to_all():
    t = P.all_to_all(None, 9, nbytes=10.0)
    assert sorted(pairs(t)) == [(a, b) for a in range(9) for b in range(9) if a != b]
    assert t.total_bytes == 9 * 8 * 10.0


@pytest.mark.parametrize("strided", [False, True])
def test_subcomm_a2a(strided):
    n, group = 100, 16
    t = P.subcomm_a2a(None, n, group=group, strided=strided)
    rows = -(-n // group)  # 7 communicators of up to 16 ranks
    comm = (lambda r: r % rows) if strided else (lambda r: r // group)
    expected = {(a, b) for a in range(n) for b in range(n) if a != b and comm(a) == comm(b)}
    assert set(pairs(t)) == expected and t.n_flows == len(expected)
    sizes = Counter(comm(r) for r in range(n))
    assert max(sizes.values()) <= group
    assert np.all(t.nbytes == 64 * 1024)


@pytest.mark.parametrize("n,along", [(60, 2), (60, 3), (64, 1), (27, 2)])
def test_grid_a2a_is_all_to_all_along_grid_lines(n, along):
    """By hand: 60 ranks make a 5 x 4 x 3 grid (row-major: rank = (i * 4 + j) * 3 + k); two ranks
    talk iff they differ in exactly one coordinate and it is one of the first ``along``."""
    dims = P.grid_dims(n, 3)
    if n == 60:
        assert dims == (5, 4, 3)
    t = P.grid_a2a(None, n, along=along, nbytes=7.0)

    def coord(r):
        return np.unravel_index(r, dims)

    expected = set()
    for a in range(n):
        for b in range(n):
            differ = [d for d in range(3) if coord(a)[d] != coord(b)[d]]
            if len(differ) == 1 and differ[0] < along:
                expected.add((a, b))
    assert set(pairs(t)) == expected and t.n_flows == len(expected)  # no pair twice
    assert np.all(t.nbytes == 7.0)
    assert t.n_flows == n * sum(dims[d] - 1 for d in range(along))


def test_random_pairs():
    t = P.random_pairs(KEY, 64)
    assert Counter(t.src.tolist()) == Counter(range(64))  # each rank sends once
    assert Counter(t.dst.tolist()) == Counter(range(64))  # and receives once
    assert set(pairs(t)) == {(b, a) for a, b in pairs(t)}  # from its partner
    assert np.all(t.src != t.dst)
    odd = P.random_pairs(KEY, 7)
    assert odd.n_flows == 6 and len(set(odd.src.tolist())) == 6
    assert pairs(P.random_pairs(KEY, 64)) == pairs(t)  # deterministic
    assert pairs(P.random_pairs(jax.random.PRNGKey(8), 64)) != pairs(t)


def _neighbour_sets(t: P.Traffic, n: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs(t):
        out[a].append(b)
    return out


def test_unstructured_mesh_counts_distinct_and_local():
    n = 512  # grid (8, 8, 8)
    t = P.unstructured_mesh(KEY, n)
    dims = P.grid_dims(n, 3)
    nbrs = _neighbour_sets(t, n)
    counts = np.array([len(x) for x in nbrs])
    assert counts.min() >= 6 and counts.max() <= 27
    assert counts.min() < 12 and counts.max() > 22  # the range is used
    assert all(len(set(x)) == len(x) and r not in x for r, x in enumerate(nbrs))
    dist, near = [], []
    for a, b in pairs(t):
        ca, cb = coords_of(a, dims), coords_of(b, dims)
        d = [min((y - x) % m, (x - y) % m) for x, y, m in zip(ca, cb, dims)]
        assert max(d) <= 2  # within the radius-2 box
        dist.append(sum(v * v for v in d))
        near.append(max(d) <= 1)
    # Locality: a uniform pick among the 124 offsets of the 5x5x5 box would have mean
    # |o|^2 = 6 * 125 / 124 ~ 6.05 and 26 / 124 ~ 21% of neighbours in the 3x3x3 box.
    assert np.mean(dist) < 3.5
    assert np.mean(near) > 0.6
    assert np.all(t.nbytes == 512 * 1024)
    again = P.unstructured_mesh(KEY, n)
    assert pairs(again) == pairs(t)


@pytest.mark.parametrize("n", [2, 27, 1000])
def test_unstructured_mesh_is_its_documented_draws(n):
    """The mesh from JAX's own draws and NumPy's full stable sort, written out here: split the
    key, counts uniform in [6, 27], Gumbel scores ``-locality/2 log |o|^2 - log(-log u)`` on
    the box offsets (nearest first, self and repeats unusable), each rank's ``count`` best by
    a stable descending sort (2 ranks: nearly every offset a repeat; 27: the box wraps). The
    pattern draws on the host and selects compiled: same flows, same order."""
    key = jax.random.fold_in(KEY, n)
    k_count, k_pick = jax.random.split(key)
    counts = np.minimum(6 + np.floor(np.asarray(jax.random.uniform(k_count, (n,)), np.float64) * 22), 27).astype(int)
    dims = P.grid_dims(n, 3)
    r = np.arange(-2, 3)
    offsets = np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)
    offsets = offsets[(offsets**2).sum(1) > 0]
    offsets = offsets[np.argsort((offsets**2).sum(1), kind="stable")]
    u = np.asarray(jax.random.uniform(k_pick, (n * len(offsets),)), np.float64).reshape(n, len(offsets))
    gumbel = -np.log(-np.log(np.maximum(u, np.finfo(np.float32).tiny)))
    prior = -2.0 * np.log((offsets**2).sum(1).astype(float))
    src, dst = [], []
    for rank in range(n):
        here = np.asarray(coords_of(rank, dims))
        cand = np.ravel_multi_index(tuple(((here + offsets) % dims).T), dims)
        seen, score = set(), []
        for c, other in enumerate(cand.tolist()):
            usable = other != rank and other not in seen
            seen.add(other)
            score.append(prior[c] + gumbel[rank, c] if usable else -np.inf)
        order = [c for c in np.argsort(-np.asarray(score), kind="stable") if np.isfinite(score[c])]
        for c in order[: counts[rank]]:
            src.append(rank)
            dst.append(int(cand[c]))
    t = P.unstructured_mesh(key, n)
    assert pairs(t) == list(zip(src, dst))


def test_unstructured_mesh_small_job_caps_counts():
    t = P.unstructured_mesh(KEY, 5)  # only 4 other ranks exist
    assert Counter(t.src.tolist()) == Counter({r: 4 for r in range(5)})


@pytest.mark.parametrize("n", [20, 300])
def test_spread(n):
    t = P.spread(KEY, n)
    nbrs = _neighbour_sets(t, n)
    counts = np.array([len(x) for x in nbrs])
    assert counts.min() >= 6
    assert counts.max() <= min(27, n - 1)
    assert all(len(set(x)) == len(x) and r not in x for r, x in enumerate(nbrs))
    if n == 300:
        assert counts.min() < 12 and counts.max() > 22
        # Not local: destinations spread over the job (mean |i - j| on a ring of 300 ~ 75).
        ring = [min((b - a) % n, (a - b) % n) for a, b in pairs(t)]
        assert 55 < np.mean(ring) < 95
    assert t.total_bytes == counts.sum() * 512 * 1024


def test_make_and_to_nodes():
    t = P.make("stencil2d", KEY, 9, nbytes=5.0)
    assert t.total_bytes == 9 * 4 * 5.0
    with pytest.raises(ValueError, match="unknown pattern"):
        P.make("nope", KEY, 4)
    alloc = np.array([40, 7, 13, 2], np.int32)
    src, dst, nbytes = P.to_nodes(alloc, P.all_to_all(None, 4, nbytes=1.0))
    assert set(zip(src.tolist(), dst.tolist())) == {(a, b) for a in alloc.tolist() for b in alloc.tolist() if a != b}
    with pytest.raises(ValueError, match="ranks"):
        P.to_nodes(alloc[:3], P.all_to_all(None, 4))
    # Two ranks per node: ranks 0,1 on node 40 and ranks 2,3 on node 7.
    src, dst, _ = P.to_nodes(alloc[:2], P.all_to_all(None, 4), ranks_per_node=2)
    assert Counter(zip(src.tolist(), dst.tolist())) == {(40, 40): 2, (7, 7): 2, (40, 7): 4, (7, 40): 4}


def test_every_registered_pattern_runs_on_edge_sizes():
    for name in P.PATTERNS:
        for n in (0, 1, 2, 3, 17):
            t = P.make(name, KEY, n)
            assert t.src.dtype == np.int32 and t.dst.dtype == np.int32
            assert len(t.src) == len(t.dst) == len(t.nbytes)
            if t.n_flows:
                assert t.src.min() >= 0 and t.src.max() < n and t.dst.max() < n
                assert np.all(t.src != t.dst)


@pytest.mark.parametrize("n", [2, 7, 64, 300])
def test_keyless_patterns_do_not_depend_on_the_key(n):
    """``KEYLESS`` (which `speedup=model` draws once per size) holds exactly the patterns whose
    traffic is the same under any key."""
    for name in P.PATTERNS:
        a = P.make(name, jax.random.PRNGKey(1), n)
        b = P.make(name, jax.random.PRNGKey(2), n)
        same = all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b))
        if name in P.KEYLESS:
            assert same, name
        elif n >= 64:  # keyed patterns on enough ranks differ between keys
            assert not same, name


@pytest.mark.parametrize("name", sorted(P.PATTERNS))
@pytest.mark.parametrize("nbytes", [0, -1.0, float("nan"), float("inf"), "many"])
def test_a_message_size_that_is_not_a_positive_number_is_refused_in_one_line(name, nbytes):
    """``nbytes`` <= 0 or NaN gave flows of no (or negative, or NaN) time; refused, naming the
    parameter, on any job size (the tiny jobs that return no flow too)."""
    for n in (1, 64):
        with pytest.raises(ValueError, match=r"^nbytes must be a positive finite number of bytes, got ") as err:
            P.make(name, KEY, n, nbytes=nbytes)
        assert "\n" not in str(err.value)
    assert P.make(name, KEY, 64, nbytes=3.0).nbytes.tolist() == [3.0] * P.make(name, KEY, 64).n_flows


@pytest.mark.parametrize("radius", [0, -1, 1.5, True])
def test_an_unstructured_mesh_without_a_neighbour_box_is_refused(radius):
    """A box of radius 0 holds no offset: every rank quietly got no neighbour (no flows)."""
    with pytest.raises(ValueError, match=r"^radius must be an integer >= 1, got "):
        P.unstructured_mesh(KEY, 64, radius=radius)
    # Radius 1: the 26 offsets of the 3^3 box, so at most 26 distinct neighbours each.
    t = P.unstructured_mesh(KEY, 1000, radius=1)
    assert max(Counter(t.src.tolist()).values()) <= 26 and t.n_flows >= 6 * 1000


@pytest.mark.parametrize("name, params", [
    ("stencil2d", {}), ("stencil3d", {}), ("stencil4d", {}), ("unstructured_mesh", {}),
    ("unstructured_mesh", {"radius": 1, "max_neighbours": 8}), ("random_pairs", {}), ("subcomm_a2a", {}),
    ("subcomm_a2a", {"group": 5, "strided": True}), ("grid_a2a", {}), ("grid_a2a", {"ndim": 2, "along": 1}),
    ("all_to_all", {}), ("spread", {}), ("spread", {"min_neighbours": 2, "max_neighbours": 3}),
])
def test_the_flow_bound_holds_every_flow_made(name, params):
    """:func:`patterns.flow_bound` (what :func:`patterns.make` checks against ``MAX_FLOWS``
    before making anything) is at least the flows made, on sizes from 1 to 700."""
    for n in (1, 2, 3, 7, 16, 17, 100, 343, 700):
        made = P.make(name, jax.random.PRNGKey(n), n, **params).n_flows
        assert made <= P.flow_bound(name, n, **params), (n, made)


def test_traffic_past_max_flows_is_refused_in_one_line_before_it_is_made():
    """A 21,276-node all-to-all (452,668,176 flows) asked for 92 GB and ended in a traceback
    (session 44's exploratory run); now one ValueError, at once. An all-to-all of 4,096 ranks
    (16,777,216 flows, the limit) is allowed: only the bound is checked here."""
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError) as err:
        P.make("all_to_all", None, 21_276)
    assert time.perf_counter() - t0 < 5  # refused before the arrays: not a timing claim, a "did not build them"
    assert str(err.value).startswith("pattern 'all_to_all' over a job of 21,276 ranks makes up to 452,668,176 flows, "
                                     "past the 16,777,216 one job's traffic may have")
    P.check_flows("all_to_all", 4096)
    with pytest.raises(ValueError, match="4,097 ranks"):
        P.check_flows("all_to_all", 4097)
    P.check_flows("unstructured_mesh", 21_276)  # the other patterns of a large job pass
    with pytest.raises(ValueError, match="'subcomm_a2a'"):
        P.check_flows("subcomm_a2a", 21_276, group=1024)
