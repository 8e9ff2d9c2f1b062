"""Steady-state link traffic under adaptive (UGAL-like) routing, as Damselfly models it.

Each flow has ``P`` candidate paths — its minimal route first, then other candidates (on a
dragonfly the other minimal route inside groups, black before green, and Valiant routes
through other groups: :func:`valiant_paths`) — as padded link ids ``(F, P, L)``. Its bytes
are split over them by fractions ``x`` ``(F, P)`` (rows sum to 1), all on the minimal path at
first. A link's cost is its traffic over its bandwidth (the time it needs to carry its bytes).
One iteration:

1. traffic per link and the maximum cost ``M``;
2. every flow that has traffic on a path through a link at ``M`` (within ``tol``: a *hot*
   link) moves a share ``step`` of that traffic to its cheapest path (largest link cost along
   it), if that path is cheaper than ``M``;
3. the move is kept only if the new maximum cost is below ``M``; otherwise ``step`` halves.

It stops when ``step`` falls below ``min_step`` or after ``max_iters`` iterations. By
construction the maximum link cost never rises above minimal routing's and every flow's bytes
are conserved (fractions stay a distribution).

Two implementations of that one iteration:

* :func:`adaptive_loads` (host entry, float64) works *incrementally*: only flows crossing a
  hot link can move, and every flow's move depends only on its own paths and the link costs,
  so it keeps the traffic per link in its state, finds the hot links' flows through a
  link -> flows index built once (a stable radix sort of the incidences), and handles them
  ``chunk`` incidences at a time: a pass that adds their change to the traffic, and, if the
  move is kept, a second pass that writes their rows in place. An iteration costs
  ``O(E + H P L)`` for ``H`` hot incidences instead of ``O(F P L)``.
* :func:`adaptive_loads_full` (jit-traceable, float32) takes the whole-array step every
  iteration; ``jax.vmap`` batches it over placements or seeds.

:func:`adaptive_numpy` is the same iteration in plain NumPy (benchmark reference).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Adaptive(NamedTuple):
    """Result: ``split`` ``(F, P)`` fractions per path, ``traffic`` ``(E,)`` bytes per link,
    ``max_cost`` (max traffic / bandwidth over the counted links), ``minimal_max_cost`` (the
    same under minimal routing) and ``iterations``."""

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
def adaptive_loads_full(paths: jax.Array, nbytes: jax.Array, bandwidth: jax.Array, step: float = 0.5,
                        min_step: float = 1 / 64, tol: float = 1e-6, max_iters: int = 200,
                        counted: jax.Array | None = None) -> Adaptive:
    """Steady-state traffic under the adaptive iteration, whole-array steps (module docstring);
    float32, traceable: ``jax.vmap`` batches it.

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


def hot_index(paths: np.ndarray, counted: np.ndarray | None, n_links: int) -> tuple[np.ndarray, np.ndarray]:
    """The link -> flows index of the incremental iteration: ``(flow, start)`` where
    ``flow[start[e]:start[e + 1]]`` are the flows with a candidate path through counted link
    ``e`` (a flow once per path and link it crosses), ``start`` ``(n_links + 1,)``. Built with a
    stable sort of the incidences by link (NumPy's radix sort when the counted links number
    at most 65,536)."""
    paths = np.asarray(paths)
    F = paths.shape[0]
    keep = np.ones(n_links, bool) if counted is None else np.asarray(counted, bool)
    ok = paths >= 0
    ok &= keep[np.where(ok, paths, 0)]
    compact = np.cumsum(keep) - 1  # counted links numbered 0..C-1, in link order
    n_counted = int(keep.sum())
    key = compact[paths[ok]].astype(np.uint16 if n_counted <= 1 << 16 else np.int64)
    flows = np.broadcast_to(np.arange(F, dtype=np.int32)[:, None, None], paths.shape)[ok]
    order = np.argsort(key, kind="stable")
    per_link = np.zeros(n_links, np.int64)
    per_link[keep] = np.bincount(key, minlength=n_counted)
    return flows[order], np.concatenate([[0], np.cumsum(per_link)]).astype(np.int32)


def _moves(cost_ext, m, delta, tol, slot, exists, split):
    """New split rows of flows ``slot`` ``(K, P, L)`` / ``split`` ``(K, P)`` (step 2)."""
    P = split.shape[1]
    path_cost = jnp.where(exists, cost_ext[slot].max(axis=2), jnp.inf)
    hot = (path_cost >= m * (1 - tol)) & (split > 0)
    best = jnp.argmin(path_cost, axis=1)
    gain = jnp.take_along_axis(path_cost, best[:, None], axis=1)[:, 0] < m * (1 - tol)
    moved = jnp.where(hot & gain[:, None], split * delta, 0.0)
    return split - moved + jax.nn.one_hot(best, P, dtype=split.dtype) * moved.sum(axis=1, keepdims=True)


# max_iters is traced, not static: a new cap would compile the iteration again (~3 s a shape;
# the dragonfly study's --max-iters 0 recompiled each of its solves' shapes).
@partial(jax.jit, static_argnames=("chunk",))
def _incremental(paths, nbytes, bandwidth, weight, inc_flow, inc_start, step, min_step, tol, max_iters: jax.Array,
                 chunk: int) -> Adaptive:
    F, P, _ = paths.shape
    E = bandwidth.shape[0]
    K = chunk
    slot = jnp.where(paths >= 0, paths, E)
    exists = (paths >= 0).any(axis=2) | (jnp.arange(P) == 0)[None, :]
    per_link = inc_start[1:] - inc_start[:-1]
    last_inc = max(inc_flow.shape[0] - 1, 0)
    never = jnp.iinfo(jnp.int32).max

    def traffic_of(split):
        w = jnp.broadcast_to((split * nbytes[:, None])[..., None], paths.shape)
        return jnp.zeros(E + 1, nbytes.dtype).at[slot.reshape(-1)].add(w.reshape(-1))[:E]

    def cost_of(traffic):
        return traffic / bandwidth * weight

    def incidences(c, ends, hot_counts, total):
        """Chunk ``c`` of the hot links' incidences, in link order: positions, validity, flows."""
        pos = c * K + jnp.arange(K, dtype=jnp.int32)
        valid = pos < total
        link = jnp.minimum(jnp.searchsorted(ends, pos, side="right"), E - 1)
        inc = inc_start[link] + pos - (ends[link] - hot_counts[link])
        return pos, valid, jnp.where(valid, inc_flow[jnp.clip(inc, 0, last_inc)], F)

    def body(state):
        split, traffic, m, delta, it = state
        cost = cost_of(traffic)
        cost_ext = jnp.concatenate([cost, jnp.zeros(1, cost.dtype)])
        hot_counts = jnp.where(cost >= m * (1 - tol), per_link, 0)
        ends = jnp.cumsum(hot_counts)
        total = ends[-1]
        n_chunks = (total + K - 1) // K

        def claim_chunk(c, claim):  # each flow is moved once: by its first incidence
            pos, valid, cand = incidences(c, ends, hot_counts, total)
            return claim.at[cand].min(jnp.where(valid, pos, never))

        claim = jax.lax.fori_loop(0, n_chunks, claim_chunk, jnp.full(F + 1, never, jnp.int32))

        def moved_rows(c, source):
            pos, valid, cand = incidences(c, ends, hot_counts, total)
            keep = valid & (claim[cand] == pos)
            row = jnp.where(keep, cand, 0)
            old = source[row]
            return keep, cand, row, old, _moves(cost_ext, m, delta, tol, slot[row], exists[row], old)

        def change_chunk(c, d):  # pass 1: the traffic the moves would change
            keep, _, row, old, new = moved_rows(c, split)
            change = jnp.where(keep[:, None], (new - old) * nbytes[row][:, None], 0.0)
            return d.at[slot[row].reshape(-1)].add(jnp.broadcast_to(change[..., None], slot[row].shape).reshape(-1))

        d = jax.lax.fori_loop(0, n_chunks, change_chunk, jnp.zeros(E + 1, traffic.dtype))[:E]
        new_traffic = traffic + d
        new_m = cost_of(new_traffic).max()
        better = new_m < m * (1 - tol)

        def write_chunk(c, current):  # pass 2, kept moves only: the same rows again, written in place
            # Reading ``current`` is safe: a flow's row is read and written by its one claiming
            # incidence only, so the rows read here are still the iteration's starting ones.
            keep, cand, _, _, new = moved_rows(c, current)
            return current.at[jnp.where(keep, cand, F)].set(new, mode="drop")

        split = jax.lax.fori_loop(0, jnp.where(better, n_chunks, 0), write_chunk, split)
        return (split, jnp.where(better, new_traffic, traffic), jnp.where(better, new_m, m),
                jnp.where(better, delta, delta / 2), it + 1)

    def cond(state):
        return (state[3] >= min_step) & (state[4] < max_iters)

    split0 = jnp.zeros((F, P), nbytes.dtype).at[:, 0].set(1.0)
    t0 = traffic_of(split0)
    m0 = cost_of(t0).max()
    state = (split0, t0, m0, jnp.asarray(step, nbytes.dtype), jnp.int32(0))
    split, _, _, _, it = jax.lax.while_loop(cond, body, state)
    traffic = traffic_of(split)  # afresh: no rounding carried over from the increments
    return Adaptive(split, traffic, cost_of(traffic).max(), m0, it)


def adaptive_loads(paths, nbytes, bandwidth, step: float = 0.5, min_step: float = 1 / 64, tol: float = 1e-6,
                   max_iters: int = 200, counted=None, chunk: int = 4096) -> Adaptive:
    """Steady-state traffic under the adaptive iteration, incremental (module docstring).

    Host entry (not traceable; :func:`adaptive_loads_full` is), float64. Returns NumPy arrays.

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
      chunk: hot-link incidences handled per inner step (work and memory per step, never
        the result).
    """
    paths = np.asarray(paths, np.int32)
    bandwidth = np.asarray(bandwidth, np.float64)
    E = bandwidth.shape[0]
    weight = np.ones(E) if counted is None else np.asarray(counted, np.float64)
    flow, start = hot_index(paths, None if counted is None else np.asarray(counted, bool), E)
    if paths.shape[0] == 0:  # no flow: no traffic
        return Adaptive(np.zeros((0, paths.shape[1])), np.zeros(E), 0.0, 0.0, 0)
    # Padded with at least one spare entry (never read as a flow; keeps the gather non-empty) to
    # a power of two: the incidence count depends on the data, and each new length would
    # compile the iteration again (~1-2 s); reads stop at the real incidences (inc_start).
    flow = np.r_[flow, np.zeros((1 << len(flow).bit_length()) - len(flow), flow.dtype)].astype(np.int32)
    with jax.enable_x64(True):
        got = _incremental(jnp.asarray(paths), jnp.asarray(nbytes, jnp.float64), jnp.asarray(bandwidth),
                           jnp.asarray(weight), jnp.asarray(flow), jnp.asarray(start), step, min_step, tol,
                           max_iters=jnp.int32(min(int(max_iters), np.iinfo(np.int32).max)),
                           chunk=int(max(chunk, 1)))
        return Adaptive(np.asarray(got.split), np.asarray(got.traffic), float(got.max_cost),
                        float(got.minimal_max_cost), int(got.iterations))


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


def valiant_paths(topo, src: np.ndarray, dst: np.ndarray, k: int, seed: int = 0,
                  black_first: bool = False) -> np.ndarray:
    """``(F, 1 + b + k, L)`` candidate paths on a dragonfly: the minimal route; with
    ``black_first`` (``b = 1``) the other minimal route, every local part black then green
    (Aries adapts among minimal paths too; empty when it is the same route: no local part
    with both a green and a black hop); then ``k`` Valiant routes through distinct
    intermediate groups drawn per flow (seeded; groups other than the source's and the
    destination's; fewer, padded with empty paths, when there are not enough). ``L`` is the
    Valiant width (``5 + max_hops``)."""
    src, dst = np.asarray(src), np.asarray(dst)
    G, A, p = topo.groups, topo.routers_per_group, topo.nodes_per_router
    ga, gb = src // p // A, dst // p // A
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((len(src), G)), axis=1)  # a random permutation of groups per flow
    ok = (order != ga[:, None]) & (order != gb[:, None])
    rank = np.cumsum(ok, axis=1)
    width = 5 + topo.max_hops
    b = int(bool(black_first))
    out = np.full((len(src), 1 + b + k, width), -1, np.int32)
    minimal = np.asarray(topo.routes(src, dst))
    out[:, 0, :minimal.shape[1]] = minimal
    if b:
        other = np.asarray(topo.routes(src, dst, black_first=True))
        same = (np.sort(other, axis=1) == np.sort(minimal, axis=1)).all(axis=1)
        out[:, 1, :other.shape[1]] = np.where(same[:, None], -1, other)
    for i in range(k):
        pick = ok & (rank == i + 1)
        has = pick.any(axis=1)
        via = np.where(has, order[np.arange(len(src)), pick.argmax(axis=1)], -1)
        routes = np.asarray(topo.valiant_routes(src, dst, via))
        out[:, 1 + b + i] = np.where(has[:, None], routes, -1)
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
