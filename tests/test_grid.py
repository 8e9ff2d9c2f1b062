"""Periodic-grid neighbour ranks and first-repeat masks against pure-Python loops."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fattorus.kernels import grid


def ranks_reference(dims: tuple[int, ...], offsets: np.ndarray) -> np.ndarray:
    """Each rank's coordinates by repeated division, moved and wrapped one axis at a time."""
    n = int(np.prod(dims))
    out = np.zeros((n, len(offsets)), np.int64)
    for r in range(n):
        coords, rest = [], r
        for d in reversed(dims):
            coords.insert(0, rest % d)
            rest //= d
        for j, off in enumerate(offsets):
            rank = 0
            for c, o, d in zip(coords, off, dims):
                rank = rank * d + (c + int(o)) % d
            out[r, j] = rank
    return out


def unique_reference(cand: np.ndarray, self_rank: np.ndarray) -> np.ndarray:
    out = np.zeros(cand.shape, bool)
    for r in range(cand.shape[0]):
        seen = set()
        for j, v in enumerate(cand[r]):
            out[r, j] = v != self_rank[r] and v not in seen
            seen.add(int(v))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_neighbour_ranks_wrap_round_every_extent(seed):
    rng = np.random.default_rng(seed)
    dims = tuple(int(d) for d in rng.integers(1, 7, rng.integers(1, 5)))
    offsets = rng.integers(-13, 14, (int(rng.integers(0, 20)), len(dims)))  # several wraps, both signs
    np.testing.assert_array_equal(grid.neighbour_ranks(dims, offsets), ranks_reference(dims, offsets))


def test_neighbour_ranks_of_the_mesh_box():
    dims = (8, 4, 4)
    box = np.array([o for o in itertools.product(range(-2, 3), repeat=3) if any(o)])
    np.testing.assert_array_equal(grid.neighbour_ranks(dims, box), ranks_reference(dims, box))


@pytest.mark.parametrize("seed", range(12))
def test_first_unique_drops_self_and_later_repeats(seed):
    rng = np.random.default_rng(seed)
    cand = rng.integers(0, 9, (int(rng.integers(0, 10)), int(rng.integers(0, 15))))
    self_rank = rng.integers(0, 9, cand.shape[0])
    np.testing.assert_array_equal(grid.first_unique(cand, self_rank), unique_reference(cand, self_rank))


def test_grid_kernels_refuse_bad_shapes():
    with pytest.raises(ValueError, match="neighbour_ranks"):
        grid.neighbour_ranks((4, 4), np.zeros((3, 3), int))
    with pytest.raises(ValueError, match="neighbour_ranks"):
        grid.neighbour_ranks((4, 0), np.zeros((3, 2), int))
    with pytest.raises(ValueError, match="first_unique"):
        grid.first_unique(np.zeros((3, 2), int), np.zeros(2, int))
    with pytest.raises(ValueError, match=r"in \[0, "):
        grid.first_unique(np.array([[1, -1]]), np.zeros(1, int))


@pytest.mark.parametrize("dims, offsets", [
    ((), np.zeros((1, 0), int)),  # no extent
    ((4, 4), np.zeros((2, 2))),  # float offsets would be truncated
    ((2**32, 2**32), np.zeros((1, 2), int)),  # 2**64 ranks overflow int64
    ((4,), np.array([[2**63]], np.uint64)),  # past int64
])
def test_neighbour_ranks_refuse_what_they_cannot_index(dims, offsets):
    with pytest.raises(ValueError, match="neighbour_ranks"):
        grid.neighbour_ranks(dims, offsets)


def test_first_unique_is_sized_by_its_candidates_alone():
    # A row's own rank is compared, never an index: a huge one allocates nothing and meets no candidate.
    np.testing.assert_array_equal(grid.first_unique(np.array([[1, 2, 1]]), np.array([10**12])), [[True, True, False]])
    np.testing.assert_array_equal(grid.first_unique(np.array([[1, 0]], np.uint32), np.array([-2**62])), [[True, True]])
    for cand, own in [(np.array([[2**40]]), [0]), (np.array([[1.0]]), [0]), (np.array([[True]]), [0]),
                      (np.array([[1]]), np.array([0.5]))]:
        with pytest.raises(ValueError, match="first_unique"):
            grid.first_unique(cand, np.asarray(own))
