"""Dimension-order routes of a 3D torus computed on the host, for the bandwidth model's
per-start routing (:meth:`fattorus.topology.base.Topology.host_routes`): the link ids of
:meth:`fattorus.topology.torus3d.Torus3D.routes` (x, then y, then z; the shorter way round
each ring, half-way ties positive), from one compiled loop over the pairs (numba) instead of
a JAX call. Its own module so that loading a torus does not load numba."""

from __future__ import annotations

import numba
import numpy as np


def host_routes(dims: tuple[int, int, int], nodes_per_router: int, n_nodes: int, width: int, src: np.ndarray,
                dst: np.ndarray) -> np.ndarray:
    """``(P, width)`` int32 link ids of the routes ``src -> dst`` (flat node ids; ``-1``
    padded, empty for ``src == dst`` or a negative end) on a torus of ``dims`` routers with
    ``nodes_per_router`` nodes each: injection link ``src``, router links
    ``2 N + (3 router + d) 2 + (0 positive, 1 negative)`` from the router each hop leaves,
    ejection link ``N + dst`` (``N = n_nodes``)."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"host_routes: {src.shape[0]} sources for {dst.shape[0]} destinations")
    return _host_routes(src, dst, np.asarray(dims, np.int64), nodes_per_router, n_nodes, width)


@numba.njit(cache=True)
def _host_routes(src, dst, dims, p, N, width):
    """The loop of :func:`host_routes`."""
    out = np.full((src.shape[0], width), -1, np.int32)
    X, Y, Z = dims[0], dims[1], dims[2]
    here = np.empty(3, np.int64)
    there = np.empty(3, np.int64)
    for i in range(src.shape[0]):
        a, b = src[i], dst[i]
        if a < 0 or b < 0 or a == b:
            continue
        ra, rb = a // p, b // p
        here[0], here[1], here[2] = ra // (Y * Z), (ra // Z) % Y, ra % Z
        there[0], there[1], there[2] = rb // (Y * Z), (rb // Z) % Y, rb % Z
        out[i, 0] = a
        t = 1
        for d in range(3):
            n = dims[d]
            delta = (there[d] - here[d]) % n
            positive = 2 * delta <= n
            steps = delta if positive else n - delta
            for _ in range(steps):
                router = (here[0] * Y + here[1]) * Z + here[2]
                out[i, t] = 2 * N + (3 * router + d) * 2 + (0 if positive else 1)
                t += 1
                here[d] = (here[d] + (1 if positive else n - 1)) % n
        out[i, t] = N + b
    return out
