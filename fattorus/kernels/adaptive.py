"""Steady-state link traffic under adaptive (UGAL-like) routing, as Damselfly models it.

Each flow has ``P`` candidate paths — its minimal route first, then indirect ones (on a
dragonfly, Valiant routes through other groups: ``topo.valiant_routes``) — as padded link ids
``(F, P, L)``. Its bytes are split over them by fractions ``x`` ``(F, P)`` (rows sum to 1),
all on the minimal path at first. A link's cost is its traffic over its bandwidth (the time
it needs to carry its bytes). One iteration, whole-array:

1. traffic per link (a scatter-add of ``x · bytes`` over every path's links) and the maximum
   cost ``M``;
2. every flow that has traffic on a path through a link at ``M`` (within ``tol``) moves a
   share ``step`` of that traffic to its cheapest path (largest link cost along it), if that
   path is cheaper than ``M``;
3. the move is kept only if the new maximum cost is below ``M``; otherwise ``step`` halves.

It stops when ``step`` falls below ``min_step`` or after ``max_iters`` iterations. By
construction the maximum link cost never rises above minimal routing's and every flow's bytes
are conserved (fractions stay a distribution). A ``lax.while_loop``; ``jax.vmap`` batches
placements or seeds. :func:`adaptive_numpy` is the same iteration in NumPy (benchmark
reference).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Adaptive(NamedTuple):
    """Result: ``split`` ``(F, P)`` fractions per path, ``traffic`` ``(E,)`` bytes per link,
    ``max_cost`` (max traffic / bandwidth), ``minimal_max_cost`` (the same under minimal
    routing) and ``iterations``."""

    split: jax.Array
    traffic: jax.Array
    max_cost: jax.Array
    minimal_max_cost: jax.Array
    iterations: jax.Array


def _traffic(paths: jax.Array, split: jax.Array, nbytes: jax.Array, n_links: int) -> jax.Array:
    slot = jnp.where(paths >= 0, paths, n_links)
    w = jnp.broadcast_to((split * nbytes[:, None])[..., None], paths.shape)
    return jnp.zeros(n_links + 1, nbytes.dtype).at[slot.reshape(-1)].add(w.reshape(-1))[:n_links]


@partial(jax.jit, static_argnames=("max_iters",))
def adaptive_loads(paths: jax.Array, nbytes: jax.Array, bandwidth: jax.Array, step: float = 0.5,
                   min_step: float = 1 / 64, tol: float = 1e-6, max_iters: int = 200,
                   counted: jax.Array | None = None) -> Adaptive:
    """Steady-state traffic under the adaptive iteration (module docstring).

    Args:
      paths: ``(F, P, L)`` link ids per flow and candidate path, ``-1`` padded; path 0 is the
        minimal route. A path of only ``-1`` (no alternative) is never chosen.
      nbytes: ``(F,)`` bytes per flow.
      bandwidth: ``(E,)`` link bandwidths (``topo.link_bandwidth``).
      step: first share of a hot path's traffic moved per iteration; halves on a rejected move.
      min_step, tol, max_iters: stopping rule and hot-link tolerance (relative).
      counted: ``(E,)`` bool, the links whose cost counts (default all). Why: a node's own
        injection and ejection links carry its traffic on every path, so they are a floor no
        rerouting lowers; counting only router links (``topo.link_class > 0``) lets the
        iteration work on the network, as Damselfly's link-type statistics do.
    """
    nbytes = jnp.asarray(nbytes, jnp.float32)
    bandwidth = jnp.asarray(bandwidth, jnp.float32)
    F, P, _ = paths.shape
    E = bandwidth.shape[0]
    weight = jnp.ones(E, jnp.float32) if counted is None else jnp.asarray(counted, jnp.float32)
    exists = (paths >= 0).any(axis=2) | (jnp.arange(P) == 0)[None, :]
    slot = jnp.where(paths >= 0, paths, E)
    split0 = jnp.zeros((F, P), jnp.float32).at[:, 0].set(1.0)

    def max_cost(split):
        cost = _traffic(paths, split, nbytes, E) / bandwidth * weight
        return cost, cost.max()

    def cond(state):
        _, _, delta, it = state
        return (delta >= min_step) & (it < max_iters)

    def body(state):
        split, m, delta, it = state
        cost, _ = max_cost(split)
        path_cost = jnp.concatenate([cost, jnp.zeros(1, cost.dtype)])[slot].max(axis=2)  # (F, P)
        path_cost = jnp.where(exists, path_cost, jnp.inf)
        hot = (path_cost >= m * (1 - tol)) & (split > 0)
        best = jnp.argmin(path_cost, axis=1)
        gain = jnp.take_along_axis(path_cost, best[:, None], axis=1)[:, 0] < m * (1 - tol)
        moved = jnp.where(hot & gain[:, None], split * delta, 0.0)
        new = split - moved + jax.nn.one_hot(best, P, dtype=split.dtype) * moved.sum(axis=1, keepdims=True)
        _, new_m = max_cost(new)
        better = new_m < m * (1 - tol)
        return (jnp.where(better, new, split), jnp.where(better, new_m, m),
                jnp.where(better, delta, delta / 2), it + 1)

    _, m0 = max_cost(split0)
    split, m, _, it = jax.lax.while_loop(cond, body, (split0, m0, jnp.float32(step), jnp.int32(0)))
    return Adaptive(split, _traffic(paths, split, nbytes, E), m, m0, it)


def adaptive_numpy(paths: np.ndarray, nbytes: np.ndarray, bandwidth: np.ndarray, step: float = 0.5,
                   min_step: float = 1 / 64, tol: float = 1e-6, max_iters: int = 200,
                   counted: np.ndarray | None = None) -> tuple[np.ndarray, float, int]:
    """The same iteration in plain NumPy: ``(split, max_cost, iterations)``."""
    paths = np.asarray(paths)
    nbytes = np.asarray(nbytes, np.float64)
    bandwidth = np.asarray(bandwidth, np.float64)
    F, P, _ = paths.shape
    E = len(bandwidth)
    exists = (paths >= 0).any(axis=2) | (np.arange(P) == 0)[None, :]
    valid = paths >= 0

    def cost_of(split):
        w = np.broadcast_to((split * nbytes[:, None])[..., None], paths.shape)
        cost = np.bincount(paths[valid], weights=w[valid], minlength=E) / bandwidth
        return cost if counted is None else cost * counted

    split = np.zeros((F, P))
    split[:, 0] = 1.0
    m = cost_of(split).max()
    delta, it = step, 0
    while delta >= min_step and it < max_iters:
        cost = cost_of(split)
        path_cost = np.where(valid, np.r_[cost, 0.0][np.where(valid, paths, E)], 0.0).max(axis=2)
        path_cost = np.where(exists, path_cost, np.inf)
        hot = (path_cost >= m * (1 - tol)) & (split > 0)
        best = path_cost.argmin(axis=1)
        gain = path_cost[np.arange(F), best] < m * (1 - tol)
        moved = np.where(hot & gain[:, None], split * delta, 0.0)
        new = split - moved
        new[np.arange(F), best] += moved.sum(axis=1)
        new_m = cost_of(new).max()
        if new_m < m * (1 - tol):
            split, m = new, new_m
        else:
            delta /= 2
        it += 1
    return split, float(m), it


def valiant_paths(topo, src: np.ndarray, dst: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """``(F, 1 + k, L)`` candidate paths on a dragonfly: the minimal route, then ``k`` Valiant
    routes through distinct intermediate groups drawn per flow (seeded; groups other than the
    source's and the destination's; fewer, padded with empty paths, when there are not enough).
    ``L`` is the Valiant width (``5 + max_hops``)."""
    src, dst = np.asarray(src), np.asarray(dst)
    G, A, p = topo.groups, topo.routers_per_group, topo.nodes_per_router
    ga, gb = src // p // A, dst // p // A
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((len(src), G)), axis=1)  # a random permutation of groups per flow
    ok = (order != ga[:, None]) & (order != gb[:, None])
    rank = np.cumsum(ok, axis=1)
    width = 5 + topo.max_hops
    out = np.full((len(src), 1 + k, width), -1, np.int32)
    minimal = np.asarray(topo.routes(src, dst))
    out[:, 0, :minimal.shape[1]] = minimal
    for i in range(k):
        pick = ok & (rank == i + 1)
        has = pick.any(axis=1)
        via = np.where(has, order[np.arange(len(src)), pick.argmax(axis=1)], -1)
        routes = np.asarray(topo.valiant_routes(src, dst, via))
        out[:, 1 + i] = np.where(has[:, None], routes, -1)
    return out


@partial(jax.jit, static_argnames=("n_jobs", "n_links"))
def job_traffic(paths: jax.Array, split: jax.Array, nbytes: jax.Array, owner: jax.Array, n_jobs: int,
                n_links: int) -> jax.Array:
    """``(n_jobs, n_links)`` bytes per link attributable to each job ("in workload" when
    ``split`` comes from a joint solve): each flow's ``split · bytes`` on its paths' links,
    added to its ``owner``'s row (``owner`` ``(F,)`` in ``[0, n_jobs)``). Rows sum to the
    solve's ``traffic``."""
    slot = jnp.where(paths >= 0, paths, n_links)
    row = jnp.broadcast_to(jnp.asarray(owner)[:, None, None], paths.shape)
    w = jnp.broadcast_to((split * jnp.asarray(nbytes, split.dtype)[:, None])[..., None], paths.shape)
    flat = (row * (n_links + 1) + slot).reshape(-1)
    out = jnp.zeros(n_jobs * (n_links + 1), split.dtype).at[flat].add(w.reshape(-1))
    return out.reshape(n_jobs, n_links + 1)[:, :n_links]
