"""Static D-mod-k routing on a three-level fat-tree (spec `machines.md`, "Static routing").

Vertices
--------
Nodes and switches share one dense vertex numbering (used by :func:`links` to name the
endpoints of every link)::

    node n            -> n                                  (0 .. N-1)
    leaf l            -> N + l                              (l = pod * L + leaf_in_pod)
    L2 (pod, s)       -> N + n_leaves + pod * S + s         (s = 0 .. S-1)
    core c            -> N + n_leaves + P * S + c           (c = 0 .. n_cores-1)

Wiring
------
* node ``n`` -- its leaf ``n // k`` (one link each way);
* every leaf of a pod -- every L2 switch ``(pod, s)`` of that pod (complete bipartite, one
  link each way; ``S = up_ports`` L2 switches per pod, fewer than ``k`` when tapered);
* L2 switch ``(pod, s)`` -- cores ``s * C .. (s + 1) * C - 1`` with
  ``C = C_per_L2 = n_cores // S``, identically in every pod, so core ``c`` reaches L2 index
  ``c // C`` of every pod. Parallel cables between one L2 and one core (a trunk) are one
  logical link. :func:`cores_per_l2` checks that ``S`` divides ``n_cores`` and that an L2
  switch has the ``C`` up-ports this needs (``radix - L``).

Routing (destination-mod-k)
---------------------------
For a flow ``src -> dst`` the L2 index is ``s = dst mod S`` and the core offset is
``j = (dst // S) mod C`` (core ``s * C + j``); the downward path is then determined:

* same leaf:    node->leaf, leaf->node                                   (2 links, 0 hops)
* same pod:     + leaf->L2(pod, s), L2(pod, s)->leaf                     (4 links, 2 hops)
* other pod:    + L2(src pod, s)->core, core->L2(dst pod, s)             (6 links, 4 hops)

Routes include the two node--leaf links (level 0) so that link loads cover every directed
link; hops (the paper's ``H_T``) count only the inter-switch links (levels 1 and 2), see
:func:`route_hops`. A flow with ``src == dst`` or a negative (padding) end has an empty route.

Link ids
--------
Directed links are numbered in six contiguous blocks, lowest level first, so that every link
level is one static slice (:func:`level_slices`)::

    node -> leaf      node                                   (N links, level 0, up)
    leaf -> node      N + node                               (N links, level 0, down)
    leaf -> L2        2N + leaf * S + s                      (n_leaves * S, level 1, up)
    L2 -> leaf        2N + n_leaves * S + leaf * S + s       (n_leaves * S, level 1, down)
    L2 -> core        2N + 2 n_leaves S + (pod * S + s) * C + j   (P * S * C, level 2, up)
    core -> L2        2N + 2 n_leaves S + P S C + (pod * S + s) * C + j   (level 2, down)

Every function here is pure; :func:`routes` is jit-compiled with the topology static and has
no Python loop over flows.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from fattorus.lazyjit import lazy_jit
# cores_per_l2 lives with FatTree, whose construction checks the wiring without loading JAX.
from fattorus.topology.fattree import FatTree, cores_per_l2

if TYPE_CHECKING:
    import jax

# JAX is imported where the compiled routing runs (route_slots, routes): the link layout and
# the NumPy loads here serve the host router (fattree_host_routes) without loading it.

#: Links in the longest route (node->leaf->L2->core->L2->leaf->node).
HOPS_MAX = 6
#: Link levels: 0 node--leaf, 1 leaf--L2 (L1--L2), 2 L2--core (L2--L3).
LEVEL_NAMES = ("node-leaf", "leaf-L2", "L2-core")


@dataclasses.dataclass(frozen=True)
class LinkLayout:
    """Start offsets of the six link-id blocks (see the module docstring) and their total."""

    node_up: int
    node_down: int
    leaf_up: int
    leaf_down: int
    l2_up: int
    l2_down: int
    n_links: int


@lru_cache(maxsize=None)
def layout(ft: FatTree) -> LinkLayout:
    """Block offsets of the directed link ids of ``ft``."""
    N, S, C = ft.n_nodes, ft.l2_per_pod, cores_per_l2(ft)
    n_leaf_links = ft.n_leaves * S
    n_core_links = ft.pods * S * C
    leaf_up = 2 * N
    l2_up = leaf_up + 2 * n_leaf_links
    return LinkLayout(
        node_up=0,
        node_down=N,
        leaf_up=leaf_up,
        leaf_down=leaf_up + n_leaf_links,
        l2_up=l2_up,
        l2_down=l2_up + n_core_links,
        n_links=l2_up + 2 * n_core_links,
    )


def n_links(ft: FatTree) -> int:
    """Number of directed links of ``ft`` (node--leaf links included)."""
    return layout(ft).n_links


def level_slices(ft: FatTree) -> tuple[slice, slice, slice]:
    """Link-id slices of levels 0 (node--leaf), 1 (leaf--L2) and 2 (L2--core)."""
    lo = layout(ft)
    return slice(0, lo.leaf_up), slice(lo.leaf_up, lo.l2_up), slice(lo.l2_up, lo.n_links)


# Vertex ids ---------------------------------------------------------------------------------
def n_vertices(ft: FatTree) -> int:
    """Nodes plus switches (leaves, L2, cores)."""
    return ft.n_nodes + ft.n_leaves + ft.pods * ft.l2_per_pod + ft.n_cores


def leaf_vertex(ft: FatTree, leaf):
    """Vertex id of global leaf ``leaf``."""
    return ft.n_nodes + leaf


def l2_vertex(ft: FatTree, pod, s):
    """Vertex id of L2 switch ``s`` of pod ``pod``."""
    return ft.n_nodes + ft.n_leaves + pod * ft.l2_per_pod + s


def core_vertex(ft: FatTree, core):
    """Vertex id of core switch ``core``."""
    return ft.n_nodes + ft.n_leaves + ft.pods * ft.l2_per_pod + core


# Link ids (array-polymorphic: NumPy or JAX) -------------------------------------------------
def node_up_link(ft: FatTree, node):
    """Link ``node -> its leaf``."""
    return layout(ft).node_up + node


def node_down_link(ft: FatTree, node):
    """Link ``leaf -> node``."""
    return layout(ft).node_down + node


def leaf_up_link(ft: FatTree, leaf, s):
    """Link ``leaf -> L2(pod of leaf, s)``."""
    return layout(ft).leaf_up + leaf * ft.l2_per_pod + s


def leaf_down_link(ft: FatTree, leaf, s):
    """Link ``L2(pod of leaf, s) -> leaf``."""
    return layout(ft).leaf_down + leaf * ft.l2_per_pod + s


def l2_up_link(ft: FatTree, pod, s, j):
    """Link ``L2(pod, s) -> core s * C + j``."""
    return layout(ft).l2_up + (pod * ft.l2_per_pod + s) * cores_per_l2(ft) + j


def l2_down_link(ft: FatTree, pod, s, j):
    """Link ``core s * C + j -> L2(pod, s)``."""
    return layout(ft).l2_down + (pod * ft.l2_per_pod + s) * cores_per_l2(ft) + j


def link_level(ft: FatTree, link_ids):
    """Level of each link id (0 node--leaf, 1 leaf--L2, 2 L2--core; -1 for padding ``< 0``)."""
    lo = layout(ft)
    level = (link_ids >= lo.leaf_up).astype(np.int32) + (link_ids >= lo.l2_up).astype(np.int32)
    return level * (link_ids >= 0) - (link_ids < 0)


@dataclasses.dataclass(frozen=True, eq=False)
class Links:
    """Metadata of every directed link, indexed by link id (NumPy arrays, length ``n_links``).

    Attributes:
      level: int8, 0 node--leaf, 1 leaf--L2, 2 L2--core (names in :data:`LEVEL_NAMES`).
      up: bool, True when the link points towards the cores.
      src, dst: int32 vertex ids of the link's tail and head (see the module docstring).
    """

    level: np.ndarray
    up: np.ndarray
    src: np.ndarray
    dst: np.ndarray

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return int(self.level.shape[0])


@lru_cache(maxsize=None)
def links(ft: FatTree) -> Links:
    """Link metadata of ``ft`` (level, direction, endpoint vertex ids), built vectorised."""
    N, S, C, P = ft.n_nodes, ft.l2_per_pod, cores_per_l2(ft), ft.pods
    nodes = np.arange(N)
    node_leaf = leaf_vertex(ft, nodes // ft.nodes_per_leaf)
    leaf, s = np.divmod(np.arange(ft.n_leaves * S), S)  # order: leaf * S + s
    leaf_v = leaf_vertex(ft, leaf)
    l2_of_leaf = l2_vertex(ft, leaf // ft.leaves_per_pod, s)
    ps, j = np.divmod(np.arange(P * S * C), C)  # order: (pod * S + s) * C + j
    pod, s2 = np.divmod(ps, S)
    l2_v = l2_vertex(ft, pod, s2)
    core_v = core_vertex(ft, s2 * C + j)
    src = np.concatenate([nodes, node_leaf, leaf_v, l2_of_leaf, l2_v, core_v]).astype(np.int32)
    dst = np.concatenate([node_leaf, nodes, l2_of_leaf, leaf_v, core_v, l2_v]).astype(np.int32)
    sizes = (N, N, len(leaf), len(leaf), len(ps), len(ps))
    level = np.repeat(np.array([0, 0, 1, 1, 2, 2], np.int8), sizes)
    up = np.repeat(np.array([True, False, True, False, True, False]), sizes)
    out = Links(level=level, up=up, src=src, dst=dst)
    assert out.n_links == n_links(ft)
    return out


# Routes -------------------------------------------------------------------------------------
#: The six link slots of :func:`route_slots`, in path order.
SLOTS = ("node->leaf", "leaf->L2", "L2->core", "core->L2", "L2->leaf", "leaf->node")


def route_slots(ft: FatTree, src, dst):
    """D-mod-k links of flows ``src -> dst`` in six fixed slots (:data:`SLOTS`), uncompacted.

    Args:
      ft: the topology.
      src, dst: int node ids (JAX arrays) of the same shape ``(...,)``; negative = padding.

    Returns:
      ``(ids, used)``, each a list of six ``(...,)`` arrays: the link id each slot would take
      (always a valid id, also where unused) and whether the flow uses it (node slots for every
      real flow, leaf--L2 slots when the leaves differ, L2--core slots when the pods differ).
      :func:`routes` compacts these; link-load kernels scatter them directly.
    """
    import jax.numpy as jnp

    src = jnp.asarray(src, jnp.int32)
    dst = jnp.asarray(dst, jnp.int32)
    valid = (src >= 0) & (dst >= 0) & (src != dst)
    a = jnp.where(valid, src, 0)
    b = jnp.where(valid, dst, 0)
    k, p, S, C = ft.nodes_per_leaf, ft.nodes_per_pod, ft.l2_per_pod, cores_per_l2(ft)
    leaf_a, leaf_b = a // k, b // k
    pod_a, pod_b = a // p, b // p
    s = b % S  # L2 switch index chosen by the destination
    j = (b // S) % C  # core offset among the C cores of L2 index s
    ids = [
        node_up_link(ft, a),
        leaf_up_link(ft, leaf_a, s),
        l2_up_link(ft, pod_a, s, j),
        l2_down_link(ft, pod_b, s, j),
        leaf_down_link(ft, leaf_b, s),
        node_down_link(ft, b),
    ]
    leaves = valid & (leaf_a != leaf_b)
    pods = valid & (pod_a != pod_b)
    return ids, [valid, leaves, pods, pods, leaves, valid]


@lazy_jit(static_argnums=0)
def routes(ft: FatTree, src: jax.Array, dst: jax.Array) -> jax.Array:
    """D-mod-k routes of flows ``src -> dst``.

    Args:
      ft: the topology (static).
      src, dst: int node ids of the same shape ``(...,)``; negative entries are padding.

    Returns:
      ``(..., HOPS_MAX)`` int32 link ids in path order, padded at the end with -1. Same-leaf
      flows use 2 links, same-pod flows 4, cross-pod flows 6; ``src == dst`` and padding
      flows have no links.
    """
    import jax.numpy as jnp

    hop, used = route_slots(ft, src, dst)
    valid, leaves, pods = used[0], used[1], used[2]
    none = jnp.full_like(hop[0], -1)
    cross = jnp.stack(hop, axis=-1)
    in_pod = jnp.stack([hop[0], hop[1], hop[4], hop[5], none, none], axis=-1)
    in_leaf = jnp.stack([hop[0], hop[5], none, none, none, none], axis=-1)
    out = jnp.where(pods[..., None], cross, jnp.where(leaves[..., None], in_pod, in_leaf))
    return jnp.where(valid[..., None], out, -1).astype(jnp.int32)


def route_hops(ft: FatTree, route_ids):
    """Inter-switch hops of each route ``(..., HOPS_MAX)`` (links of level >= 1) -> ``(...,)``."""
    return (link_level(ft, route_ids) >= 1).sum(axis=-1)


def numpy_flow_loads(ft: FatTree, src: np.ndarray, dst: np.ndarray, nbytes) -> np.ndarray:
    """Bytes per directed link of flows ``src -> dst``: a plain NumPy D-mod-k reference.

    Written from the formulas in the module docstring, independently of :func:`routes` (no
    JAX, no shared helper): the six candidate links of every flow, a mask per route case and
    ``np.add.at``. The network benchmark times it against the fused kernel and checks the two
    agree. ``nbytes`` is a scalar or one value per flow; padding flows (negative ends) and
    ``src == dst`` carry nothing. Returns float64 ``(n_links,)``.
    """
    k, p, S, C = ft.nodes_per_leaf, ft.nodes_per_pod, ft.l2_per_pod, cores_per_l2(ft)
    N, NL, P = ft.n_nodes, ft.n_leaves, ft.pods
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    s = dst % S
    j = (dst // S) % C
    leaf_a, leaf_b, pod_a, pod_b = src // k, dst // k, src // p, dst // p
    base_leaf, base_core = 2 * N, 2 * N + 2 * NL * S
    links = np.stack(
        [
            src,  # node -> leaf
            N + dst,  # leaf -> node
            base_leaf + leaf_a * S + s,  # leaf -> L2
            base_leaf + NL * S + leaf_b * S + s,  # L2 -> leaf
            base_core + (pod_a * S + s) * C + j,  # L2 -> core
            base_core + P * S * C + (pod_b * S + s) * C + j,  # core -> L2
        ]
    )
    valid = (src >= 0) & (dst >= 0) & (src != dst)
    leaves_differ = valid & (leaf_a != leaf_b)
    pods_differ = valid & (pod_a != pod_b)
    use = np.stack([valid, valid, leaves_differ, leaves_differ, pods_differ, pods_differ])
    out = np.zeros(n_links(ft))
    np.add.at(out, links[use], np.broadcast_to(np.asarray(nbytes, dtype=np.float64), links.shape)[use])
    return out


def load_balanced_routes(ft: FatTree, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                         rng: np.random.Generator | None = None) -> np.ndarray:
    """``(F, 6)`` minimal routes of flows ``src -> dst`` (node ids, ``nbytes`` bytes each) whose
    up-paths are chosen by load instead of by destination: flows, largest first (ties in a
    random order from ``rng``), each take the L2 switch and core whose most loaded link,
    counting the bytes already routed, is least loaded (the first such, L2 switch then core).
    ``-1`` padded like :func:`routes`. One compiled loop over the flows
    (:func:`fattorus.topology.fattree_host_routes.balanced_routes`): each choice reads the
    loads the earlier ones left."""
    from fattorus.topology import fattree_host_routes  # numba, loaded on first need

    nbytes = np.asarray(nbytes, float)
    tie = (rng or np.random.default_rng(0)).permutation(len(nbytes))
    return fattree_host_routes.balanced_routes(ft, src, dst, nbytes, np.lexsort((tie, -nbytes)))
