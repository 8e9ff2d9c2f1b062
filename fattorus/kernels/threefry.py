"""JAX's threefry draws made on the host: the same bits as ``jax.random``, no dispatch per call.

A ``speedup=model`` replay draws a keyed pattern's traffic at every job start (an unstructured
mesh of 1,024 ranks takes ~127,000 uniforms); through ``jax.random`` each start paid a
``fold_in``, a ``split`` and two ``uniform`` calls, each a compiled-function dispatch and a
device-to-host copy, about half a millisecond together before any arithmetic. Here the same
Threefry-2x32 hash (Salmon et al., SC'11; 20 rounds, JAX's rotation constants and key schedule)
runs in one compiled loop over the counters, and the draws come back as NumPy arrays.

**Same bits as JAX** with its default ``jax_threefry_partitionable`` (on since JAX 0.5): there,
draw ``i`` of a shape (row-major) hashes the 64-bit counter ``i`` as the pair ``(i >> 32,
i & 0xFFFFFFFF)``, so a draw does not depend on the shape's total size, and

* ``fold_in(key, d)`` is the hash of ``(0, d)``; ``split(key, n)[i]`` the hash of ``(0, i)``;
* ``uniform(key, shape)`` (float32 in ``[0, 1)``) takes ``x0 ^ x1`` of the hash of each
  counter, keeps its top 23 bits as the mantissa of a float in ``[1, 2)`` and subtracts 1.

``tests/test_threefry.py`` compares every function with ``jax.random`` bit for bit. A key is a
``(2,)`` uint32 array: a raw JAX key (``jax.random.PRNGKey``), its NumPy copy, or a typed
threefry key (``jax.random.key``, read through ``jax.random.key_data``).
"""

from __future__ import annotations

import sys
from typing import Any

import numba
import numpy as np

_MASK = np.uint64(0xFFFFFFFF)


def prng_key(seed: int) -> np.ndarray:
    """``jax.random.PRNGKey(seed)`` for ``0 <= seed < 2**32`` (the words ``(0, seed)``), made
    without loading JAX; other seeds are JAX's to convert (``ValueError`` here)."""
    if not 0 <= int(seed) < 1 << 32:
        raise ValueError(f"a host key needs 0 <= seed < 2**32, got {seed}")
    return np.array([0, int(seed)], np.uint32)


def seed_key(seed: int, data: int) -> np.ndarray:
    """``jax.random.fold_in(jax.random.PRNGKey(seed), data)`` as ``(2,)`` uint32 words: on the
    host for ``0 <= seed < 2**32`` (every seed the settings allow; no JAX loaded), through JAX
    for any other seed it takes."""
    if 0 <= int(seed) < 1 << 32:
        return fold_in(prng_key(seed), data)
    import jax

    return key_data(jax.random.fold_in(jax.random.PRNGKey(seed), data))


def key_data(key: Any) -> np.ndarray:
    """The ``(2,)`` uint32 words of a threefry key (a NumPy or JAX raw key, or a typed key)."""
    if not isinstance(key, np.ndarray) and "jax" in sys.modules:
        import jax

        if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
            if str(jax.random.key_impl(key)) != "threefry2x32":
                raise ValueError(f"only threefry2x32 keys are drawn on the host, got a {jax.random.key_impl(key)} key")
            key = jax.random.key_data(key)
    words = np.asarray(key)
    if words.shape != (2,) or words.dtype != np.uint32:
        raise ValueError(f"a threefry key is a (2,) uint32 array, got {words.shape} {words.dtype}")
    return words


def fold_in(key: Any, data: int) -> np.ndarray:
    """``jax.random.fold_in(key, data)`` for ``0 <= data < 2**32``: a new ``(2,)`` uint32 key."""
    if not 0 <= int(data) < 1 << 32:
        raise ValueError(f"fold_in data must be in [0, 2**32), got {data}")
    return _hash_one(*_words(key), np.uint64(int(data)))


def split(key: Any, num: int = 2) -> np.ndarray:
    """``jax.random.split(key, num)``: ``(num, 2)`` uint32 keys."""
    x0, x1 = _hash_counters(*_words(key), int(num))
    return np.stack([x0, x1], axis=1)


def uniform(key: Any, shape: int | tuple[int, ...]) -> np.ndarray:
    """``jax.random.uniform(key, shape)``: float32 draws in ``[0, 1)``."""
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    return _uniform_floats(*_words(key), int(np.prod(shape, dtype=np.int64))).reshape(shape)


def choice(key: Any, p: np.ndarray, num: int) -> np.ndarray:
    """``jax.random.choice(key, len(p), (num,), p=p)`` (with replacement): ``(num,)`` int64
    indices, the same draws. As JAX: the float32 probabilities' cumulative sums ``c``, then
    ``searchsorted(c, c[-1] * (1 - u))`` for float32 uniforms ``u`` (``p`` is cast to float32,
    as ``jnp.asarray`` does without x64)."""
    c = np.cumsum(np.asarray(p, np.float32), dtype=np.float32)
    r = c[-1] * (np.float32(1) - uniform(key, int(num)))
    return np.searchsorted(c, r, side="left").astype(np.int64)


def _words(key: Any) -> tuple[np.uint64, np.uint64]:
    k = key_data(key)
    return np.uint64(k[0]), np.uint64(k[1])


@numba.njit(cache=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _MASK


@numba.njit(cache=True, inline="always")
def _mix(x0: np.uint64, x1: np.uint64, r: int) -> tuple[np.uint64, np.uint64]:
    """One Threefry round: add, rotate by ``r``, xor."""
    x0 = (x0 + x1) & _MASK
    return x0, _rotl(x1, r) ^ x0


@numba.njit(cache=True, inline="always")
def _four(x0: np.uint64, x1: np.uint64, odd: bool) -> tuple[np.uint64, np.uint64]:
    """Four rounds with the even (13, 15, 26, 6) or odd (17, 29, 16, 24) rotations."""
    if odd:
        x0, x1 = _mix(x0, x1, 17)
        x0, x1 = _mix(x0, x1, 29)
        x0, x1 = _mix(x0, x1, 16)
        return _mix(x0, x1, 24)
    x0, x1 = _mix(x0, x1, 13)
    x0, x1 = _mix(x0, x1, 15)
    x0, x1 = _mix(x0, x1, 26)
    return _mix(x0, x1, 6)


@numba.njit(cache=True, inline="always")
def _threefry_pair(k0: np.uint64, k1: np.uint64, k2: np.uint64, c0: np.uint64,
                   c1: np.uint64) -> tuple[np.uint64, np.uint64]:
    """Threefry-2x32 of the counter pair ``(c0, c1)`` under key ``(k0, k1)``, ``k2`` the
    schedule's third word (``k0 ^ k1 ^ 0x1BD11BDA``); words < 2**32 held in uint64 with every
    sum masked to 32 bits. JAX's ``_threefry2x32_lowering`` written out: the five blocks are
    unrolled (with them as a loop the compiler did not vectorise the counters, ~4x slower)."""
    x0, x1 = (c0 + k0) & _MASK, (c1 + k1) & _MASK
    x0, x1 = _four(x0, x1, False)
    x0, x1 = (x0 + k1) & _MASK, (x1 + k2 + np.uint64(1)) & _MASK
    x0, x1 = _four(x0, x1, True)
    x0, x1 = (x0 + k2) & _MASK, (x1 + k0 + np.uint64(2)) & _MASK
    x0, x1 = _four(x0, x1, False)
    x0, x1 = (x0 + k0) & _MASK, (x1 + k1 + np.uint64(3)) & _MASK
    x0, x1 = _four(x0, x1, True)
    x0, x1 = (x0 + k1) & _MASK, (x1 + k2 + np.uint64(4)) & _MASK
    x0, x1 = _four(x0, x1, False)
    return (x0 + k2) & _MASK, (x1 + k0 + np.uint64(5)) & _MASK


@numba.njit(cache=True)
def _hash_one(k0: np.uint64, k1: np.uint64, c1: np.uint64) -> np.ndarray:
    """The ``(2,)`` uint32 hash of the counter pair ``(0, c1)``."""
    x0, x1 = _threefry_pair(k0, k1, k0 ^ k1 ^ np.uint64(0x1BD11BDA), np.uint64(0), c1)
    out = np.empty(2, np.uint32)
    out[0], out[1] = x0, x1
    return out


@numba.njit(cache=True)
def _hash_counters(k0: np.uint64, k1: np.uint64, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Both output words of the hash of counters ``0 .. n-1`` (as ``(i >> 32, i & mask)``)."""
    k2 = k0 ^ k1 ^ np.uint64(0x1BD11BDA)
    out0 = np.empty(n, np.uint32)
    out1 = np.empty(n, np.uint32)
    for i in range(n):
        x0, x1 = _threefry_pair(k0, k1, k2, np.uint64(i) >> np.uint64(32), np.uint64(i) & _MASK)
        out0[i] = x0
        out1[i] = x1
    return out0, out1


@numba.njit(cache=True)
def _uniform_floats(k0: np.uint64, k1: np.uint64, n: int) -> np.ndarray:
    """float32 uniforms of counters ``0 .. n-1``: the top 23 bits of ``x0 ^ x1`` as the
    mantissa of a float in ``[1, 2)``, minus 1 (JAX's ``_uniform`` with minval 0, maxval 1)."""
    k2 = k0 ^ k1 ^ np.uint64(0x1BD11BDA)
    bits = np.empty(n, np.uint32)
    for i in range(n):
        x0, x1 = _threefry_pair(k0, k1, k2, np.uint64(i) >> np.uint64(32), np.uint64(i) & _MASK)
        bits[i] = ((x0 ^ x1) >> np.uint64(9)) | np.uint64(0x3F800000)
    return bits.view(np.float32) - np.float32(1.0)
