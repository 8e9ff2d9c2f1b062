"""Steepest descent of a placement's hop sum by single-node moves (the ideal placements' last step).

The ideal APH of tori and dragonflies (``metrics-and-outputs.md``: the APH of the most compact
possible placement on the empty machine) is searched for, not known in closed form: each family
scores a few shapes (balls, boxes, orderings, group layouts) and keeps the best. Shapes alone
miss placements that are more compact (on Blue Waters 512 nodes: the best shape's APH 6.248,
one reached by moving nodes off it 6.002). This module takes the best shape's router histogram
and moves one node at a time from router ``a`` to router ``b`` while that lowers the hop sum,
always the move that lowers it most, so the result is a *local* optimum: no single-node move
lowers it further (checked by brute force in tests/test_compact.py), still not proven global.

Distances are given as a sum over factors, ``d(a, b) = sum_k M_k[c_k(a), c_k(b)]``: a 3D torus
has three factors (a router's coordinate per dimension and that ring's distance matrix); a
dragonfly one (the router id and the router distance table). A router's summed distance to the
placement is then ``S[b] = sum_k V_k[c_k(b)]`` with ``V_k = M_k @ hist_k`` (``hist_k``: the
placement's nodes per coordinate of factor ``k``), and a move changes each ``V_k`` by two rows
of ``M_k``: on a torus a move costs three 24-entry updates and one pass over the routers.

Moving one node from ``a`` to ``b`` changes the hop sum over ordered node pairs by
``2 (S[b] - d(a, b) - S[a])`` (the node leaves its pairs from ``a``, and at ``b`` pairs with
everyone but itself). Since ``0 <= d <= d_max``, only routers with ``S[a] > min S_free - d_max``
can give a move and only free slots with ``S[b] < max S_occupied + d_max`` can take one: each
step scans those bands exactly, so the chosen move is the best of all pairs.
"""

from __future__ import annotations

import numba
import numpy as np


def descend(h: np.ndarray, capacity: int, coords: np.ndarray, mats: np.ndarray) -> tuple[np.ndarray, int]:
    """Router histogram after steepest single-node descent of the hop sum, and the number of moves.

    ``h``: nodes per router (int, each ``<= capacity``); ``coords``: ``(k, R)`` each router's
    index into factor ``k``'s matrix; ``mats``: ``(k, m, m)`` symmetric distance matrices in hops
    (padded to the largest ``m``). Ties between equal moves go to the lowest ``a``, then the
    lowest ``b``.
    """
    h = np.ascontiguousarray(h, np.int64).copy()
    coords = np.ascontiguousarray(coords, np.int64)
    mats = np.ascontiguousarray(mats, np.int64)
    if not all(np.array_equal(m, m.T) for m in mats):
        raise ValueError("compact.descend: distance matrices must be symmetric")
    # V_k = M_k @ hist_k, so S[r] = sum_k V_k[c_k(r)]; a move changes V_k by two rows of M_k.
    V = np.stack([mats[k] @ np.bincount(coords[k], weights=h, minlength=mats.shape[1]).astype(np.int64)
                  for k in range(len(mats))])
    d_max = int(sum(int(m.max()) for m in mats))
    moves = _descend(h, int(capacity), coords, mats, V, d_max)
    return h, int(moves)


@numba.njit(cache=True)
def _distance(a: int, b: int, coords: np.ndarray, mats: np.ndarray) -> int:
    d = 0
    for k in range(coords.shape[0]):
        d += mats[k, coords[k, a], coords[k, b]]
    return d


@numba.njit(cache=True)
def _descend(h, capacity, coords, mats, V, d_max):
    R, K = h.shape[0], coords.shape[0]
    big = np.iinfo(np.int64).max // 4
    S = np.empty(R, np.int64)
    A = np.empty(R, np.int64)
    B = np.empty(R, np.int64)
    moves = 0
    while True:
        S[:] = 0
        for k in range(K):  # sequential passes: S[r] = sum_k V_k[c_k(r)]
            for r in range(R):
                S[r] += V[k, coords[k, r]]
        min_free, max_occ = big, -big
        for r in range(R):
            if h[r] < capacity and S[r] < min_free:
                min_free = S[r]
            if h[r] > 0 and S[r] > max_occ:
                max_occ = S[r]
        # The bands where a move can lower the sum (module docstring).
        na = nb = 0
        for r in range(R):
            if h[r] > 0 and S[r] > min_free - d_max:
                A[na] = r
                na += 1
            if h[r] < capacity and S[r] < max_occ + d_max:
                B[nb] = r
                nb += 1
        # Pairs in order of their lower bound S[b] - d_max - S[a]: a by S descending, b by S
        # ascending, each loop left once no later pair can beat (or tie) the best found.
        As = A[:na][np.argsort(-S[A[:na]], kind="mergesort")]
        Bs = B[:nb][np.argsort(S[B[:nb]], kind="mergesort")]
        best, best_a, best_b = 0, -1, -1
        for i in range(na):
            a = As[i]
            if nb == 0 or S[Bs[0]] - d_max - S[a] > best:
                break
            for j in range(nb):
                b = Bs[j]
                if S[b] - d_max - S[a] > best:
                    break
                if b == a:
                    continue
                delta = S[b] - _distance(a, b, coords, mats) - S[a]
                if delta < best or (delta == best and best_a >= 0 and (a < best_a or (a == best_a and b < best_b))):
                    best, best_a, best_b = delta, a, b
        if best_a < 0:
            return moves
        h[best_a] -= 1
        h[best_b] += 1
        for k in range(K):
            ca, cb = coords[k, best_a], coords[k, best_b]
            for c in range(V.shape[1]):
                V[k, c] += mats[k, cb, c] - mats[k, ca, c]
        moves += 1


def nodes_of(h: np.ndarray, nodes_per_router: int) -> np.ndarray:
    """Node ids of a router histogram: each router's first ``h[r]`` slots, router ids ascending."""
    slots = np.arange(nodes_per_router)
    return (np.arange(len(h))[:, None] * nodes_per_router + slots)[slots[None, :] < np.asarray(h)[:, None]]
