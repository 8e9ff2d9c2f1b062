"""The per-pair part of a dragonfly's :meth:`~fattorus.topology.dragonfly.Dragonfly.job_links`,
compiled (numba): which (router, gateway), (group, group, bundle) and (gateway, router)
pairs the minimal routes between a job's routers of different groups take. One loop over
the ``u^2`` router pairs instead of eight ``(u, u)`` NumPy arrays (a week of Atlas x2 on
Edison: ~1 ms a job of a few hundred routers). Its own module so that loading a dragonfly
does not load numba."""

from __future__ import annotations

import numba
import numpy as np


def pair_tables(routers: np.ndarray, groups: np.ndarray, bundle_choice: np.ndarray, gateways: np.ndarray,
                routers_per_group: int, n_groups: int, bundles_per_pair: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the job's ``routers`` (``u`` distinct ids) in ``groups``, over every ordered pair
    ``(a, b)`` in different groups taking bundle ``n = bundle_choice[a, b]``:

    * ``to_gate`` ``(u * A,)`` bool: ``(index of a, local id of a's gateway gateways[ga, gb, n])``,
    * ``bundles`` ``(G * G * m,)`` bool: ``(ga, gb, n)``,
    * ``from_gate`` ``(A * u,)`` bool: ``(local id of the far gateway gateways[gb, ga, n], index of b)``.
    """
    return _pair_tables(np.ascontiguousarray(routers, np.int64), np.ascontiguousarray(groups, np.int64),
                        bundle_choice, np.ascontiguousarray(gateways, np.int64), int(routers_per_group),
                        int(n_groups), int(bundles_per_pair))


@numba.njit(cache=True)
def _pair_tables(r, g, choice, gw, A, G, m):
    u = r.shape[0]
    to_gate = np.zeros(u * A, np.bool_)
    bundles = np.zeros(G * G * m, np.bool_)
    from_gate = np.zeros(A * u, np.bool_)
    for ia in range(u):
        ga, ra = g[ia], r[ia]
        for ib in range(u):
            gb = g[ib]
            if ga == gb:
                continue
            n = np.int64(choice[ra, r[ib]])
            to_gate[ia * A + gw[ga, gb, n] - ga * A] = True
            bundles[(ga * G + gb) * m + n] = True
            from_gate[(gw[gb, ga, n] - gb * A) * u + ib] = True
    return to_gate, bundles, from_gate


def router_hop_sums(allocs: list[np.ndarray], nodes_per_router: int, distance: np.ndarray) -> np.ndarray:
    """Hop sum of each allocation (int64): over its routers ``a, b`` with ``c_a, c_b`` of its
    nodes, ``sum c_a c_b D[a, b]`` (``D = distance``, the router distance table, 0 on the
    diagonal) — :meth:`fattorus.topology.dragonfly.Dragonfly.host_hop_sums`."""
    out = np.zeros(len(allocs), np.int64)
    counts = np.zeros(distance.shape[0], np.int64)  # lent to every allocation, handed back zero
    for i, nodes in enumerate(allocs):
        if len(nodes) > 1:
            out[i] = _router_hop_sum(np.ascontiguousarray(nodes, np.int64), nodes_per_router, distance, counts)
    return out


@numba.njit(cache=True)
def _router_hop_sum(nodes, p, D, counts):
    u = 0
    routers = np.empty(nodes.shape[0], np.int64)
    for v in nodes:  # the router histogram, routers in order of first use
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
    return total
