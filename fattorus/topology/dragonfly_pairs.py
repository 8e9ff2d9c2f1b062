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
