"""Where a Cartesian job's ranks go on a torus: the torus paper's three task placements.

The torus paper (Section IV, Table III) times a 3D halo exchange — every partition of a
``D1 x D2 x D3`` virtual grid sends one message to each face neighbour — under three
placements of its ranks in a *node feature* (a predefined prism of Geminis):

* ``default`` (SMP): ``ranks_per_node`` consecutive ranks on each of the first ``M`` nodes of
  the allocation, whose order ALPS sets (:meth:`~fattorus.topology.torus3d.Torus3D.ordering`);
  ranks are numbered row-major, the last virtual dimension fastest, so a node holds a line
  along it (:func:`smp`);
* ``grid_order``: Cray's rank reordering: a block of ``b1 x b2 x b3`` partitions per node, the
  blocks (row-major) on the same first ``M`` nodes (:func:`grid_order`);
* ``topaware``: the Topaware tool: a logical grid of ``L1 x L2 x L3`` Geminis, ``N1 x N2 x N3``
  partitions on each Gemini's node pair (``Di = Li * Ni``), chosen in the feature as the paper
  describes — ``L2`` xz planes, each with ``L1`` z-pencils that hold at least ``L3`` Geminis
  whose nodes are all usable, each pencil scanned along z from a common start, skipping the
  others; of all positions in the feature, the one that skips fewest (:func:`topaware`).

Every function returns plain arrays (node ids per rank); :func:`as_job` turns a placement into
a :class:`~fattorus.analysis.commtime.Job` for the flow model. The study that compares them is
``python -m fattorus.app.halo_study`` (docs/torus-study.md, "Task placement: the halo exchange").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fattorus.analysis import commtime, patterns
from fattorus.topology.torus3d import Torus3D


class LayoutError(ValueError):
    """A placement that cannot be made (sizes that do not divide, a feature too small)."""


def _dims(dims: tuple[int, ...], what: str = "grid") -> tuple[int, int, int]:
    out = tuple(int(d) for d in dims)
    if len(out) != 3 or min(out) < 1:
        raise LayoutError(f"{what} {list(dims)}: want three positive extents")
    return out  # type: ignore[return-value]


def cartesian_halo(dims: tuple[int, int, int], nbytes: float, periodic: bool = False) -> patterns.Traffic:
    """Halo exchange on the ``dims`` virtual grid: each rank sends ``nbytes`` to its face
    neighbours (``+-1`` along each dimension). Ranks are row-major, the last dimension fastest
    (MPI's Cartesian numbering). ``periodic=False`` (the default, as the paper's synthetic code
    reads: a max of 2 hops under Topaware rules out wrap-around messages across the logical
    grid): partitions on a face have no neighbour beyond it."""
    dims = _dims(dims)
    n = int(np.prod(dims))
    coords = np.stack(np.unravel_index(np.arange(n), dims), 1)
    src, dst = [], []
    for d in range(3):
        for step in (1, -1):
            moved = coords.copy()
            moved[:, d] += step
            keep = np.ones(n, bool) if periodic else (moved[:, d] >= 0) & (moved[:, d] < dims[d])
            moved[:, d] %= dims[d]
            src.append(np.flatnonzero(keep))
            dst.append(np.ravel_multi_index(tuple(moved[keep].T), dims))
    src, dst = np.concatenate(src), np.concatenate(dst)
    keep = src != dst  # periodic along an extent of 1: a rank's own neighbour
    return patterns.Traffic(src[keep].astype(np.int32), dst[keep].astype(np.int32), np.full(int(keep.sum()), float(nbytes)))


def feature_routers(topo: Torus3D, origin: tuple[int, int, int], shape: tuple[int, int, int]) -> np.ndarray:
    """``(sx, sy, sz)`` router ids of the prism ``shape`` Geminis from ``origin`` (wrapping
    round the torus), indexed by position in the prism."""
    shape = _dims(shape, "feature shape")
    if len(origin) != 3 or min(int(o) for o in origin) < 0:
        raise LayoutError(f"feature origin {list(origin)}: want three router coordinates >= 0")
    if any(s > n for s, n in zip(shape, topo.dims)):
        raise LayoutError(f"feature shape {list(shape)} does not fit the {list(topo.dims)} torus")
    x, y, z = ((o + np.arange(s)) % n for o, s, n in zip(origin, shape, topo.dims))
    return (x[:, None, None] * topo.dims[1] + y[None, :, None]) * topo.dims[2] + z[None, None, :]


def alps_nodes(topo: Torus3D, routers: np.ndarray, count: int, ordering: str, job_kind: str | None = None) -> np.ndarray:
    """The first ``count`` usable nodes (of ``job_kind``) of the routers ``routers`` in the
    order ``ordering`` walks them: the nodes ALPS hands a job in a node feature."""
    p = topo.nodes_per_router
    inside = np.zeros(topo.n_nodes, bool)
    inside[(np.ravel(routers)[:, None] * p + np.arange(p)).ravel()] = True
    order = topo.ordering(ordering)
    nodes = order[inside[order] & topo.usable(job_kind)[order]]
    if len(nodes) < count:
        raise LayoutError(f"the feature holds {len(nodes)} usable nodes; the job needs {count}")
    return nodes[:count]


def smp(n_ranks: int, ranks_per_node: int) -> np.ndarray:
    """Node index (into the allocation) of each rank under the default SMP order: ranks
    ``k * ranks_per_node .. (k + 1) * ranks_per_node - 1`` on node ``k``."""
    if n_ranks % ranks_per_node:
        raise LayoutError(f"{n_ranks} ranks do not fill nodes of {ranks_per_node} ranks")
    return np.arange(n_ranks) // ranks_per_node


def grid_order(dims: tuple[int, int, int], block: tuple[int, int, int]) -> np.ndarray:
    """Node index of each rank (row-major ranks of ``dims``) when each node holds one
    ``block`` of partitions and the blocks go to the nodes in row-major order."""
    dims, block = _dims(dims), _dims(block, "block")
    if any(d % b for d, b in zip(dims, block)):
        raise LayoutError(f"block {list(block)} does not tile the grid {list(dims)}")
    coords = np.stack(np.unravel_index(np.arange(int(np.prod(dims))), dims), 1)
    return np.ravel_multi_index(tuple((coords // np.array(block)).T), tuple(d // b for d, b in zip(dims, block)))


class Topaware(NamedTuple):
    """A Topaware placement: the node of each rank, the logical grid's Geminis ``(L1, L2, L3)``
    and ``skipped``: the most Geminis skipped within one z-pencil (the paper's ``n``; the
    selected Geminis fit a box ``L1 x L2 x (L3 + n)``)."""

    node: np.ndarray
    geminis: np.ndarray
    skipped: int


def logical_grid(dims: tuple[int, int, int], per_gemini: tuple[int, int, int], nodes_per_router: int,
                 feature: tuple[int, ...]) -> tuple[int, int, int]:
    """Topaware's logical grid ``dims / per_gemini`` in Geminis, checked against the settings
    alone (whatever the feature's position): the partitions tile the grid, split over a
    Gemini's nodes along the last dimension, and the grid fits the ``feature`` prism."""
    if any(d % g for d, g in zip(dims, per_gemini)):
        raise LayoutError(f"partitions per Gemini {list(per_gemini)} do not tile the grid {list(dims)}")
    if per_gemini[2] % nodes_per_router:
        raise LayoutError(f"{per_gemini[2]} partitions along the last dimension do not split over "
                          f"{nodes_per_router} nodes per Gemini")
    L = tuple(d // g for d, g in zip(dims, per_gemini))
    if any(g > f for g, f in zip(L, feature)):
        raise LayoutError(f"a logical grid of {list(L)} Geminis does not fit the {list(feature)} feature")
    return L  # type: ignore[return-value]


def topaware(topo: Torus3D, routers: np.ndarray, dims: tuple[int, int, int], per_gemini: tuple[int, int, int],
             job_kind: str | None = None) -> Topaware:
    """Topaware's logical grid in the feature ``routers`` (:func:`feature_routers`; virtual
    dimension ``i`` along torus dimension ``i``): ``L = dims / per_gemini`` Geminis; a
    Gemini counts when all its nodes are usable. Of every offset of the grid's ``L1`` x and
    ``L2`` y positions in the feature and every low-z start, it takes the one whose pencils
    skip the fewest unusable Geminis (the first such, by z start, then y, then x): the paper's Topaware
    aims at a near-optimal layout, and its Table III run had at most one skip per pencil. A
    Gemini's ``N1 x N2 x N3`` partitions are split among its nodes along the last virtual
    dimension (``N3`` must be a multiple of the nodes per router)."""
    dims, per_gemini = _dims(dims), _dims(per_gemini, "partitions per Gemini")
    p = topo.nodes_per_router
    L = logical_grid(dims, per_gemini, p, routers.shape)
    sx, sy, sz = routers.shape
    whole = topo.usable(job_kind).reshape(-1, p).all(1)[routers]  # (sx, sy, sz): Gemini usable
    # For each pencil and low-z start: the z index (in the feature) of its L3-th usable Gemini.
    rank = np.cumsum(whole, axis=2)  # usable Geminis up to and including each z
    best = None
    for z0 in range(sz - L[2] + 1):
        before = rank[:, :, z0 - 1] if z0 else np.zeros((sx, sy), int)
        # the span a pencil needs from z0 to hold L3 usable Geminis (sz + 1: it cannot)
        reach = np.where(rank[:, :, -1] - before >= L[2],
                         np.argmax(rank >= (before + L[2])[:, :, None], axis=2) - z0 + 1, sz + 1)
        for y0 in range(sy - L[1] + 1):
            for x0 in range(sx - L[0] + 1):
                span = int(reach[x0:x0 + L[0], y0:y0 + L[1]].max())
                if span <= sz - z0 and (best is None or span - L[2] < best[0]):
                    best = (span - L[2], x0, y0, z0)
    if best is None:
        raise LayoutError(f"no {L[0]} x {L[1]} z-pencils of the feature hold {L[2]} usable Geminis each")
    skipped, x0, y0, z0 = best
    geminis = np.empty(L, np.int64)
    for i in range(L[0]):
        for j in range(L[1]):
            z = z0 + np.flatnonzero(whole[x0 + i, y0 + j, z0:])[:L[2]]
            geminis[i, j] = routers[x0 + i, y0 + j, z]
    coords = np.stack(np.unravel_index(np.arange(int(np.prod(dims))), dims), 1)
    g = geminis[coords[:, 0] // per_gemini[0], coords[:, 1] // per_gemini[1], coords[:, 2] // per_gemini[2]]
    slot = (coords[:, 2] % per_gemini[2]) // (per_gemini[2] // p)
    return Topaware(g * p + slot, geminis, skipped)


def as_job(node_of_rank: np.ndarray, traffic: patterns.Traffic) -> commtime.Job:
    """The flow model's job for ranks placed on ``node_of_rank`` (node id per rank, the same
    number of ranks on every node used): ranks renumbered so that the model's allocation
    order (``ranks_per_node`` consecutive ranks per node) puts each on its node."""
    node_of_rank = np.asarray(node_of_rank, np.int64)
    nodes, which = np.unique(node_of_rank, return_inverse=True)
    per_node = np.bincount(which)
    if per_node.min() != per_node.max():
        raise LayoutError(f"nodes hold {per_node.min()} to {per_node.max()} ranks; the model wants the same number on each")
    renumbered = np.empty(len(node_of_rank), np.int64)
    renumbered[np.argsort(which, kind="stable")] = np.arange(len(node_of_rank))
    moved = patterns.Traffic(renumbered[traffic.src].astype(np.int32), renumbered[traffic.dst].astype(np.int32),
                             traffic.nbytes)
    return commtime.Job(nodes.astype(np.int32), moved, int(per_node[0]))


def max_hops(topo: Torus3D, node_of_rank: np.ndarray, traffic: patterns.Traffic) -> int:
    """The most router hops any message of ``traffic`` takes (0 within a Gemini)."""
    if not traffic.n_flows:
        return 0
    node_of_rank = np.asarray(node_of_rank)
    return int(np.max(topo.hops(node_of_rank[traffic.src], node_of_rank[traffic.dst])))
