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


def host_route_lists(dims: tuple[int, int, int], nodes_per_router: int, n_nodes: int, width: int, src: np.ndarray,
                     dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`host_routes` as compact crossing lists (each pair's number of links ``(P,)``
    int32, and their ids in pair order ``(C,)`` int32:
    :func:`~fattorus.kernels.maxmin_compiled.compact_routes` of the padded routes), written
    straight: a Blue Waters route fills ~6 of its 38 padded slots."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"host_route_lists: {src.shape[0]} sources for {dst.shape[0]} destinations")
    return _host_route_lists(src, dst, np.asarray(dims, np.int64), nodes_per_router, n_nodes, width)


@numba.njit(cache=True, inline="always")
def _route(a, b, dims, p, N, out):
    """Write the route ``a -> b`` (``a != b``, both >= 0) into ``out``; returns its length.
    A hop moves the router id by its dimension's stride and wraps by a compare (the modulo
    and the router id recomputed at every hop were most of a route's time)."""
    Y, Z = dims[1], dims[2]
    ra, rb = a // p, b // p
    here = (ra // (Y * Z), (ra // Z) % Y, ra % Z)
    there = (rb // (Y * Z), (rb // Z) % Y, rb % Z)
    strides = (Y * Z, Z, 1)
    out[0] = a
    t = 1
    router = ra
    for d in range(3):
        n, step, pos = dims[d], strides[d], here[d]
        delta = there[d] - pos
        if delta < 0:
            delta += n
        positive = 2 * delta <= n
        steps = delta if positive else n - delta
        link = 2 * N + 2 * d + (0 if positive else 1)  # + 6 router: (3 router + d) 2 + direction
        for _ in range(steps):
            out[t] = link + 6 * router
            t += 1
            if positive:
                pos += 1
                router += step
                if pos == n:
                    pos = 0
                    router -= n * step
            else:
                if pos == 0:
                    pos = n
                    router += n * step
                pos -= 1
                router -= step
    out[t] = N + b
    return t + 1


@numba.njit(cache=True)
def _host_routes(src, dst, dims, p, N, width):
    """The loop of :func:`host_routes`."""
    out = np.full((src.shape[0], width), -1, np.int32)
    for i in range(src.shape[0]):
        a, b = src[i], dst[i]
        if a >= 0 and b >= 0 and a != b:
            _route(a, b, dims, p, N, out[i])
    return out


@numba.njit(cache=True)
def _host_route_lists(src, dst, dims, p, N, width):
    """The loop of :func:`host_route_lists`."""
    lengths = np.zeros(src.shape[0], np.int32)
    links = np.empty(src.shape[0] * width, np.int32)
    k = 0
    for i in range(src.shape[0]):
        a, b = src[i], dst[i]
        if a >= 0 and b >= 0 and a != b:
            n = _route(a, b, dims, p, N, links[k:k + width])
            lengths[i] = n
            k += n
    return lengths, links[:k].copy()


def job_link_mask(dims: tuple[int, int, int], n_nodes: int, n_links: int, routers: np.ndarray) -> np.ndarray:
    """``(n_links,)`` bool: the router links that the dimension-order routes between any two
    of ``routers`` (distinct router ids) use — :meth:`fattorus.topology.torus3d.Torus3D.job_links`.

    A route's x part runs on the source's x ring towards any destination x; its y part on the
    y ring ``(x_d, z_s)`` from ``y_s`` to ``y_d``; its z part on ``(x_d, y_d)`` from ``z_s`` to
    ``z_d``: so the arcs are (source router, distinct destination x), (distinct source
    ``(y, z)``, distinct destination ``(x, y)``) and (distinct source z, destination router);
    arcs from one position in one direction all start alike, so per source position and
    ring only the longest each way is walked, link by link, in one compiled loop (a month of
    Atlas x2 on Blue Waters under first fit: the replay's ``job_links`` 1.2 s -> ~0.16 s)."""
    return _job_link_mask(np.ascontiguousarray(routers, np.int64), np.asarray(dims, np.int64), int(n_nodes),
                          int(n_links))


@numba.njit(cache=True, inline="always")
def _walk(mask, N, d, n, stride, line, a, steps, direction):
    """Mark ``steps`` dimension-``d`` links from position ``a`` on the ring whose position 0
    is router ``line`` (positions ``stride`` apart), each named by the router it leaves,
    ``direction`` 0 positive, 1 negative."""
    pos = a
    for _ in range(steps):
        mask[2 * N + (3 * (line + pos * stride) + d) * 2 + direction] = True
        pos = (pos + 1) % n if direction == 0 else (pos + n - 1) % n


@numba.njit(cache=True, inline="always")
def _reach(n, a, b, far):
    """Widen ``far`` (longest positive, longest negative arc from ``a``) by the arc from
    ``a`` to ``b``: the shorter way round, half-way ties positive. All arcs from one
    position in one direction start alike, so their union is the longest of them."""
    delta = (b - a) % n
    if 2 * delta <= n:
        if delta > far[0]:
            far[0] = delta
    elif n - delta > far[1]:
        far[1] = n - delta


@numba.njit(cache=True)
def _job_link_mask(r, dims, N, n_links):
    """The loop of :func:`job_link_mask`: per source position and ring, the longest arc each
    way towards the destinations that meet there, walked link by link."""
    X, Y, Z = dims[0], dims[1], dims[2]
    mask = np.zeros(n_links, np.bool_)
    u = r.shape[0]
    x, y, z = r // (Y * Z), (r // Z) % Y, r % Z
    has_x, has_z = np.zeros(X, np.bool_), np.zeros(Z, np.bool_)
    has_yz, has_xy = np.zeros(Y * Z, np.bool_), np.zeros(X * Y, np.bool_)
    for i in range(u):
        has_x[x[i]] = True
        has_z[z[i]] = True
        has_yz[y[i] * Z + z[i]] = True
        has_xy[x[i] * Y + y[i]] = True
    xs, zs = np.flatnonzero(has_x), np.flatnonzero(has_z)
    yzs, xys = np.flatnonzero(has_yz), np.flatnonzero(has_xy)
    far = np.zeros(2, np.int64)
    for i in range(u):  # x: every source router towards every destination x, on its x ring
        far[:] = 0
        for xd in xs:
            _reach(X, x[i], xd, far)
        line = y[i] * Z + z[i]
        _walk(mask, N, 0, X, Y * Z, line, x[i], far[0], 0)
        _walk(mask, N, 0, X, Y * Z, line, x[i], far[1], 1)
    for yz in yzs:  # y: a source's (y, z) with a destination's (x, y), on the ring (x_d, z_s)
        ys, zsrc = yz // Z, yz % Z
        k = 0
        while k < xys.shape[0]:  # xys is sorted: each x_d's destination y's are one run
            xd = xys[k] // Y
            far[:] = 0
            while k < xys.shape[0] and xys[k] // Y == xd:
                _reach(Y, ys, xys[k] % Y, far)
                k += 1
            line = xd * Y * Z + zsrc
            _walk(mask, N, 1, Y, Z, line, ys, far[0], 0)
            _walk(mask, N, 1, Y, Z, line, ys, far[1], 1)
    # z: a source's z with a destination router, on the ring (x_d, y_d); r is sorted, so the
    # routers of one (x, y) are one run.
    k = 0
    while k < u:
        end = k
        while end < u and x[end] == x[k] and y[end] == y[k]:
            end += 1
        line = (x[k] * Y + y[k]) * Z
        for zsrc in zs:
            far[:] = 0
            for i in range(k, end):
                _reach(Z, zsrc, z[i], far)
            _walk(mask, N, 2, Z, 1, line, zsrc, far[0], 0)
            _walk(mask, N, 2, Z, 1, line, zsrc, far[1], 1)
        k = end
    return mask
