"""Minimal routes of a dragonfly computed on the host, for the bandwidth model's per-start
routing (:meth:`fattorus.topology.base.Topology.host_routes`): the link ids of
:meth:`fattorus.topology.dragonfly.Dragonfly.routes` (injection; local green then black to
the gateway of the pair's bundle; the bundle's blue cable; local from the far gateway;
ejection; every hop on cable ``(src + dst) mod k``), from one compiled loop over the pairs
(numba) instead of a JAX call. Its own module so that loading a dragonfly does not load numba."""

from __future__ import annotations

import numba
import numpy as np

from fattorus.topology.dragonfly_pairs import JobLinkTables, local_hops


def host_routes(tables: JobLinkTables, nodes_per_router: int, n_nodes: int, width: int, src: np.ndarray,
                dst: np.ndarray) -> np.ndarray:
    """``(P, width)`` int32 link ids of the minimal routes ``src -> dst`` (flat node ids;
    ``-1`` padded, empty for ``src == dst`` or a negative end) on the dragonfly of ``tables``
    (:class:`~fattorus.topology.dragonfly_pairs.JobLinkTables`)."""
    src = np.ascontiguousarray(np.ravel(src), np.int64)
    dst = np.ascontiguousarray(np.ravel(dst), np.int64)
    if src.shape != dst.shape:
        raise ValueError(f"host_routes: {src.shape[0]} sources for {dst.shape[0]} destinations")
    t = tables
    return _host_routes(src, dst, nodes_per_router, n_nodes, width, t.groups, t.rows, t.cols, t.green_base,
                        t.green_per_pair, t.black_base, t.black_per_pair, t.bundle_choice, t.gateways, t.blue_first,
                        t.blue_per_bundle)


@numba.njit(cache=True, inline="always")
def _local(out, i, pos, a, b, R, C, green_base, gpp, black_base, bpp, cable):
    """Append the local route from router ``a`` to ``b`` (:func:`~fattorus.topology.dragonfly_pairs.local_hops`,
    each hop on cable ``cable mod k``) to row ``i`` from ``pos``; returns the next free position."""
    green, black = local_hops(a, b, R, C, green_base, gpp, black_base, bpp)
    if green >= 0:
        out[i, pos] = green + cable % gpp
        pos += 1
    if black >= 0:
        out[i, pos] = black + cable % bpp
        pos += 1
    return pos


@numba.njit(cache=True)
def _host_routes(src, dst, p, N, width, G, R, C, green_base, gpp, black_base, bpp, choice, gw, blue_first, bpb):
    """The loop of :func:`host_routes`."""
    out = np.full((src.shape[0], width), -1, np.int32)
    A = R * C
    for i in range(src.shape[0]):
        s, d = src[i], dst[i]
        if s < 0 or d < 0 or s == d:
            continue
        ra, rb = s // p, d // p
        cable = s + d
        out[i, 0] = s
        pos = 1
        ga, gb = ra // A, rb // A
        if G < 2 or ga == gb:
            pos = _local(out, i, pos, ra, rb, R, C, green_base, gpp, black_base, bpp, cable)
        else:
            n = np.int64(choice[ra, rb])
            pos = _local(out, i, pos, ra, gw[ga, gb, n], R, C, green_base, gpp, black_base, bpp, cable)
            out[i, pos] = blue_first[ga, gb, n] + cable % bpb
            pos += 1
            pos = _local(out, i, pos, gw[gb, ga, n], rb, R, C, green_base, gpp, black_base, bpp, cable)
        out[i, pos] = N + d
    return out
