"""A dragonfly's per-job link sets and hop sums, compiled (numba): the links a job's minimal
routes can use (:meth:`~fattorus.topology.dragonfly.Dragonfly.job_links`, the replay's
exposure keys) and its hop sum (:meth:`~fattorus.topology.dragonfly.Dragonfly.host_hop_sums`,
its APH). One loop each instead of dozens of NumPy arrays a job (a month of Atlas x2 on
Edison under ``compact``: APH 1.32 -> 0.04 s, exposure keys ~0.74 -> ~0.3 s; docs/decisions.md,
session 32).
Its own module so that loading a dragonfly does not load numba."""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np


def job_link_mask(routers: np.ndarray, tables: "JobLinkTables", group_bundles: np.ndarray) -> np.ndarray:
    """``(n_links,)`` bool: :meth:`fattorus.topology.dragonfly.Dragonfly.job_links` of a job on
    ``routers`` (distinct router ids, in increasing order), from the dragonfly's ``tables``
    and :func:`group_bundles`."""
    t = tables
    return _job_link_mask(np.ascontiguousarray(routers, np.int64), t.n_links, t.groups, t.rows, t.cols,
                          t.bundles_per_pair, t.green_base, t.green_per_pair, t.black_base, t.black_per_pair,
                          t.bundle_choice, t.gateways, t.blue_first, t.blue_per_bundle, group_bundles)


def group_bundles(choice: np.ndarray, routers_per_group: int, groups: int, bundles_per_pair: int) -> np.ndarray:
    """``(NR, G, m)`` bool: the bundles the minimal routes from each router to the routers of
    each other group take (``choice``: the bundle choice table), False towards its own group.
    A job holding a whole group reads the set here instead of its ``A`` routers' choices
    (a month of Atlas x5 on Edison under first fit: the replay's exposure keys ~2.9 -> ~1.5 s)."""
    A, NR = routers_per_group, choice.shape[0]
    out = np.zeros((NR, groups, bundles_per_pair), np.bool_)
    if bundles_per_pair == 0:
        return out
    rb = np.arange(NR)
    for ra in range(0, NR, A):  # a source group at a time: (A, NR) entries
        rows = np.arange(ra, min(ra + A, NR))
        src, dst = np.meshgrid(rows, rb, indexing="ij")
        other = src // A != dst // A
        out[src[other], dst[other] // A, choice[src[other], dst[other]]] = True
    return out


class JobLinkTables(NamedTuple):
    """What :func:`job_link_mask` reads of a dragonfly: its sizes, the first link id of each
    colour's cables and their counts per hop, the bundle choice of every router pair, the
    gateway and the first blue cable of every (group, group, bundle)."""

    n_links: int
    groups: int
    rows: int
    cols: int
    bundles_per_pair: int
    green_base: int
    green_per_pair: int
    black_base: int
    black_per_pair: int
    bundle_choice: np.ndarray  # (NR, NR) int16, symmetric (a pair takes one bundle both ways)
    gateways: np.ndarray  # (G, G, m) int64 global router ids
    blue_first: np.ndarray  # (G, G, m) int64 link id of cable 0
    blue_per_bundle: int


@numba.njit(cache=True, inline="always")
def _cables(mask, first, k):
    for c in range(k):
        mask[first + c] = True


@numba.njit(cache=True, inline="always")
def local_hops(a, b, R, C, green_base, gpp, black_base, bpp):
    """Cable 0's link id of each hop of the local minimal route from router ``a`` to ``b`` of
    its group — green along ``a``'s row to ``b``'s column, then black along that column to
    ``b``'s row — ``(green, black)``, ``-1`` for a hop the route does not take."""
    ia, ja = (a // C) % R, a % C
    ib, jb = (b // C) % R, b % C
    green = green_base + (a * (C - 1) + jb - (1 if jb > ja else 0)) * gpp if ja != jb else -1
    mid = a + jb - ja  # (a's row, b's column)
    black = black_base + (mid * (R - 1) + ib - (1 if ib > ia else 0)) * bpp if ia != ib else -1
    return green, black


@numba.njit(cache=True, inline="always")
def _local(mask, a, b, R, C, green_base, gpp, black_base, bpp):
    """Mark every cable of the local minimal route from router ``a`` to ``b`` (:func:`local_hops`)."""
    green, black = local_hops(a, b, R, C, green_base, gpp, black_base, bpp)
    if green >= 0:
        _cables(mask, green, gpp)
    if black >= 0:
        _cables(mask, black, bpp)


@numba.njit(cache=True)
def _job_link_mask(r, n_links, G, R, C, m, green_base, gpp, black_base, bpp, choice, gw, blue_first, bpb, whole):
    """The loop of :func:`job_link_mask`: within each group every green hop from a job router
    towards another of the job's columns and every black hop into a job router from another
    of its rows; between groups, over every ordered pair of routers in different groups, the
    local route to the gateway of the pair's bundle, the bundle's blue cables and the local
    route from the far gateway (each (router, gateway), bundle and (gateway, router) marked
    once). Towards a group the job holds whole, a router's bundles are ``whole``'s set, not
    read pair by pair (``r`` is sorted: each group's routers are one run of it)."""
    A = R * C
    u = r.shape[0]
    mask = np.zeros(n_links, np.bool_)
    g, i, j = r // A, (r // C) % R, r % C
    cols, rows = np.zeros((G, C), np.bool_), np.zeros((G, R), np.bool_)
    for t in range(u):
        cols[g[t], j[t]] = True
        rows[g[t], i[t]] = True
    for t in range(u):
        for c in range(C):
            if cols[g[t], c] and c != j[t]:
                _cables(mask, green_base + (r[t] * (C - 1) + c - (1 if c > j[t] else 0)) * gpp, gpp)
        for row in range(R):
            if rows[g[t], row] and row != i[t]:
                tail = r[t] + (row - i[t]) * C
                _cables(mask, black_base + (tail * (R - 1) + i[t] - (1 if i[t] > row else 0)) * bpp, bpp)
    if m == 0:
        return mask
    lo, hi = np.full(G, u, np.int64), np.zeros(G, np.int64)  # each group's run of r
    for t in range(u):
        lo[g[t]] = min(lo[g[t]], t)
        hi[g[t]] = t + 1
    to_gate = np.zeros(u * A, np.bool_)  # (source router index, gateway in its group)
    bundles = np.zeros(G * G * m, np.bool_)  # (source group, destination group, bundle)
    for ia in range(u):
        ga, ra = g[ia], r[ia]
        for gb in range(G):
            if gb == ga or lo[gb] == u:
                continue
            if hi[gb] - lo[gb] == A:  # the whole group: the bundles its routers take from ra
                for n in range(m):
                    if whole[ra, gb, n]:
                        to_gate[ia * A + gw[ga, gb, n] - ga * A] = True
                        bundles[(ga * G + gb) * m + n] = True
                continue
            for ib in range(lo[gb], hi[gb]):
                n = np.int64(choice[ra, r[ib]])
                to_gate[ia * A + gw[ga, gb, n] - ga * A] = True
                bundles[(ga * G + gb) * m + n] = True
    for ia in range(u):
        for gate in range(A):
            if to_gate[ia * A + gate]:
                _local(mask, r[ia], g[ia] * A + gate, R, C, green_base, gpp, black_base, bpp)
                # A pair takes the same bundle both ways (bundle_choice is symmetric), so the
                # far gateways that routes into router ia leave from are the ones its own
                # routes out reach: the local route from each of them to ia.
                _local(mask, g[ia] * A + gate, r[ia], R, C, green_base, gpp, black_base, bpp)
    for k in range(G * G * m):
        if bundles[k]:
            gs, rest = k // (G * m), k % (G * m)
            _cables(mask, blue_first[gs, rest // m, rest % m], bpb)
    return mask


@numba.njit(cache=True)
def max_router_hops(r: np.ndarray, distance: np.ndarray, top: int) -> int:
    """Largest ``distance[a, b]`` over the routers ``r`` (0 for fewer than two), stopping at
    ``top`` (the machine's diameter: no pair is farther). A spread job reaches it within its
    first routers' pairs; the others read each pair once, with no array of them (a month of
    Atlas x5 on Edison under first fit: the replay's ``max_hops`` ~1.1 -> ~0.05 s)."""
    best = 0
    for a in range(r.shape[0]):
        row = distance[r[a]]
        for b in range(a + 1, r.shape[0]):
            h = row[r[b]]
            if h > best:
                best = h
                if best >= top:
                    return best
    return best


def router_hop_sums(allocs: list[np.ndarray], nodes_per_router: int, distance: np.ndarray) -> np.ndarray:
    """Hop sum of each allocation (int64): over its routers ``a, b`` with ``c_a, c_b`` of its
    nodes, ``sum c_a c_b D[a, b]`` (``D = distance``, the router distance table, 0 on the
    diagonal) — :meth:`fattorus.topology.dragonfly.Dragonfly.host_hop_sums`. One compiled call
    for all of them (a call per allocation cost more than its sums on small jobs)."""
    sizes = np.array([len(a) for a in allocs], np.int64)
    if not len(allocs):
        return np.zeros(0, np.int64)
    flat = np.concatenate([np.asarray(a, np.int64).ravel() for a in allocs]) if sizes.sum() else np.zeros(0, np.int64)
    return _router_hop_sums(flat, np.r_[0, np.cumsum(sizes)], nodes_per_router, distance)


@numba.njit(cache=True)
def _router_hop_sums(flat, bounds, p, D):
    out = np.zeros(bounds.shape[0] - 1, np.int64)
    counts = np.zeros(D.shape[0], np.int64)
    routers = np.empty(max(flat.shape[0], 1), np.int64)
    for k in range(out.shape[0]):
        u = 0
        for v in flat[bounds[k]:bounds[k + 1]]:  # the router histogram, routers in order of first use
            a = v // p
            if counts[a] == 0:
                routers[u] = a
                u += 1
            counts[a] += 1
        total = 0
        for i in range(u):
            a = routers[i]
            row = 0
            for j in range(u):
                row += counts[routers[j]] * np.int64(D[a, routers[j]])
            total += counts[a] * row
        for i in range(u):
            counts[routers[i]] = 0
        out[k] = total
    return out
