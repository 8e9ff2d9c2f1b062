"""The topology interface every interconnect family implements (fat-tree, 3D torus, dragonfly).

A topology is an immutable, hashable value (a frozen dataclass whose fields are ints, floats,
strings and tuples), so it can be a static argument of jitted functions and a dictionary key.
Everything family-specific lives behind this interface; kernels, the scheduler engine,
analysis and the app only use what is declared here.

Conventions shared by every family (spec `machines.md`):

* Node ids are dense integers ``0..n_nodes-1``.
* **Grouping levels** (``levels``) are nested contiguous blocks of node ids, innermost first:
  level ``i`` groups ``levels[i].size`` consecutive nodes, and each level's size divides the
  next one's (fat-tree: leaf ``k``, pod ``L*k``; torus: router ``p``; dragonfly: router ``p``,
  group ``R*C*p``). ``group_of(i, nodes) = nodes // levels[i].size``.
* **Links** are directed and numbered ``0..n_links-1``; ``link_class[l]`` indexes
  ``link_class_names`` and ``link_bandwidth[l]`` is the link's bandwidth in GB/s (relative
  figures where the machine's absolute ones are unknown; the config says which).
  Node-to-switch links may be part of the table (they carry traffic) but count no hops;
  ``hop_classes`` names the classes whose links count as hops.
* **Routes** of a batch of (src, dst) pairs are link ids padded with ``-1`` to
  ``max_route_links`` per pair; a pair with ``src == dst`` or a negative end has an empty
  route. Routes are static (deterministic) unless a method says otherwise.
* **Hops** between two nodes count inter-switch (router-to-router) links only: 0 for two nodes
  on one switch/router.

Every array method accepts NumPy or JAX integer arrays and must be traceable under ``jit``
with the topology static (no Python control flow on array values).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np


def one_to_one(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether ``x[i] -> y[i]`` is a one-to-one map between non-negative ids (equal ``x``
    always with equal ``y``, and the other way round): a renaming of ``x``'s ids into ``y``'s."""
    x, y = np.asarray(x, np.int64).ravel(), np.asarray(y, np.int64).ravel()
    if x.shape != y.shape:
        return False
    if not len(x):
        return True
    # Scatter each side onto the other: a repeat that writes another image breaks the map.
    forward = np.full(int(x.max()) + 1, -1, np.int64)
    forward[x] = y
    backward = np.full(int(y.max()) + 1, -1, np.int64)
    backward[y] = x
    return bool(np.array_equal(forward[x], y) and np.array_equal(backward[y], x))


def flat_allocations(allocs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Many allocations (node-id lists) as one int64 array of their node ids and, beside each
    id, the index of the allocation it belongs to: the layout the families' host hop sums
    count over (:meth:`Topology.host_hop_sums`)."""
    sizes = np.array([len(a) for a in allocs], np.int64)
    if not sizes.sum():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    flat = np.concatenate([np.asarray(a, np.int64).ravel() for a in allocs])
    return flat, np.repeat(np.arange(len(allocs), dtype=np.int64), sizes)


def squared_group_counts(owner: np.ndarray, group: np.ndarray, n_allocs: int) -> np.ndarray:
    """Per allocation, ``sum_g c_g^2`` with ``c_g`` its nodes in group ``g`` (int64, exact):
    the ordered pairs of its nodes that share a group, each node paired with itself included.
    ``owner`` and ``group`` are per node (:func:`flat_allocations`); groups are non-negative
    ids. A dense ``(allocation, group)`` count table where it is not much larger than the
    allocations' total size (a replay's jobs on a fat-tree's leaves), else the distinct keys
    (a sort; a machine of many groups)."""
    out = np.zeros(n_allocs, np.int64)
    if not len(group):
        return out
    width = int(group.max()) + 1
    keys = owner * width + group
    if n_allocs * width <= 4 * len(keys) + (1 << 16):
        counts = np.bincount(keys, minlength=n_allocs * width).astype(np.int64).reshape(n_allocs, width)
        return (counts * counts).sum(axis=1)
    keys, counts = np.unique(keys, return_counts=True)
    np.add.at(out, keys // width, counts.astype(np.int64) ** 2)
    return out


class TopologyError(ValueError):
    """A topology configuration that cannot describe a real machine (one-line message)."""


#: Link bandwidths a machine file may give (GB/s or relative units): the flow model solves in
#: float32, where 1e-300 is 0 (nan slowdowns) and 1e300 overflows (every slowdown 1), and an
#: infinite link is none (session 47's exploratory run).
BANDWIDTH_RANGE = (1e-6, 1e6)


def three_bandwidths(name: str, value: Any, what: str = "") -> tuple[float, float, float]:
    """``value`` as three link bandwidths in :data:`BANDWIDTH_RANGE`, or a one-line
    :class:`TopologyError` naming the machine ``name`` (``what``: the three classes, for it)."""
    lo, hi = BANDWIDTH_RANGE
    ok = not isinstance(value, (str, bytes, Mapping)) and hasattr(value, "__len__") and len(value) == 3 and all(
        isinstance(b, (int, float, np.integer, np.floating)) and not isinstance(b, bool) and lo <= b <= hi
        for b in value)
    if not ok:
        raise TopologyError(f"topology {name!r}: bandwidth must be three numbers{f' ({what})' if what else ''} "
                            f"from {lo:g} to {hi:g}, got {value!r}")
    return tuple(float(b) for b in value)


@dataclasses.dataclass(frozen=True)
class Level:
    """One grouping level: ``name`` (e.g. ``leaf``, ``pod``, ``router``, ``group``) and ``size``,
    the number of consecutive node ids in one group."""

    name: str
    size: int


class Topology(abc.ABC):
    """Base class of every family. Subclasses are frozen dataclasses and set ``kind``.

    Required (no default): ``name``, ``n_nodes``, ``levels``, ``_coords``, ``_hops`` (the
    family's hop rule; the public ``hops`` checks node ids first, :meth:`node_ids`),
    ``link_class_names``, ``n_links``, ``link_class``, ``link_bandwidth``, ``link_ends``,
    ``routes`` (which checks its ids with :meth:`node_ids`, negative ones padding),
    ``max_route_links``, ``max_hops``, ``ideal_allocation``, ``config`` and the classmethod
    ``from_config``. The others have generic defaults that a family overrides where it knows
    better (a closed form, a tighter bound, a host rule: ``job_links``' default routes every
    ordered pair of a job through the compiled ``routes``, fine for a test and slow for a
    replay of thousands of jobs).
    """

    #: Family name in configs (``kind: fattree``) and in ``summary.json``.
    kind: ClassVar[str] = ""
    #: Link classes whose links count as hops (inter-switch links).
    hop_classes: ClassVar[tuple[str, ...]] = ()
    #: The routings :meth:`flow_routes` offers: ``static`` (:meth:`routes`) always; a family
    #: adds what it can do (fat-trees ``adaptive``, dragonflies ``valiant``).
    routings: ClassVar[tuple[str, ...]] = ("static",)

    # --- sizes and coordinates -----------------------------------------------------------
    name: str

    @property
    @abc.abstractmethod
    def n_nodes(self) -> int:
        """Number of node slots ``N`` (node ids ``0..N-1``)."""
        ...

    @property
    @abc.abstractmethod
    def levels(self) -> tuple[Level, ...]:
        """Grouping levels, innermost first (see the module docstring)."""
        ...

    def group_of(self, level: int, nodes):
        """Group id at ``levels[level]`` of each node (broadcasting)."""
        return nodes // self.levels[level].size

    def n_groups(self, level: int) -> int:
        """Number of groups at ``levels[level]``."""
        return self.n_nodes // self.levels[level].size

    def size_class(self, n_nodes):
        """Class of a job of ``n_nodes`` by the smallest grouping level that can hold it:
        ``1`` if it fits one group of ``levels[0]``, ``2`` one group of ``levels[1]``, ...,
        ``len(levels) + 1`` if it needs several groups of the outermost level (broadcasting).
        On a fat-tree these are the paper's job types T1/T2/T3."""
        c = 1
        for level in self.levels:
            c = c + (n_nodes > level.size)
        return c

    def footprint_class(self, nodes) -> int:
        """Class of a placement by the smallest grouping level holding all of ``nodes``
        (1: one group of ``levels[0]``; ``len(levels) + 1``: several outermost groups)."""
        nodes = np.asarray(nodes)
        # Group ids are node // size, monotone in the node: the least and largest node's groups
        # are the least and largest group (two reductions, not two per level).
        lo, hi = int(nodes.min()), int(nodes.max())
        for i, level in enumerate(self.levels):
            if lo // level.size == hi // level.size:
                return i + 1
        return len(self.levels) + 1

    @staticmethod
    def class_name(c: int) -> str:
        """Label of a size or footprint class in outputs (``T1``, ``T2``, ...)."""
        return f"T{int(c)}"

    def coords(self, nodes) -> tuple:
        """Family coordinates of each node, e.g. ``(pod, leaf, slot)`` or ``(x, y, z, slot)``;
        node ids checked (:meth:`node_ids`: an id past the machine had coordinates past it)."""
        (nodes,) = self.node_ids(nodes)
        return self._coords(nodes)

    @abc.abstractmethod
    def _coords(self, nodes) -> tuple:
        """:meth:`coords` without the id check: the family's rule (jit-traceable)."""
        ...

    def node_ids(self, *arrays: Any, padded: bool = False) -> tuple[Any, ...]:
        """``arrays`` of node ids, checked: NumPy arrays, lists and ints become NumPy integer
        arrays whose ids must lie in ``0..n_nodes-1`` (``padded``: negative ids pad and are
        allowed too) — else one ``ValueError`` naming the first id past the machine (a gather
        past the machine read some other node's answer, or an IndexError deep in a family).
        JAX arrays pass as they are: a traced one cannot be read, and the kernels that trace
        these methods check the ids they build (:func:`fattorus.kernels.aph.check_nodes`)."""
        out = []
        for x in arrays:
            if not isinstance(x, np.ndarray) and type(x).__module__.startswith(("jax", "jaxlib")):
                out.append(x)
                continue
            a = np.asarray(x)
            if a.dtype.kind not in "iu":
                if a.size and not (a.dtype.kind == "f" and np.array_equal(a, np.round(a))):
                    raise ValueError(f"topology {self.name!r}: node ids must be whole numbers, got {a.dtype}")
                a = a.astype(np.int64)
            if a.size:
                lo, hi = int(a.min()), int(a.max())
                if hi >= self.n_nodes or (lo < 0 and not padded):
                    bad = hi if hi >= self.n_nodes else lo
                    raise ValueError(f"topology {self.name!r}: node id {bad} is not one of its {self.n_nodes} nodes "
                                     f"(0..{self.n_nodes - 1}{'; negative ids pad' if padded else ''})")
            out.append(a)
        return tuple(out)

    # --- distances -----------------------------------------------------------------------
    def hops(self, a, b):
        """Inter-switch hops between nodes ``a`` and ``b`` (broadcasting; int array); node ids
        checked (:meth:`node_ids`: NumPy arrays, lists and ints; JAX arrays as they are)."""
        a, b = self.node_ids(a, b)
        return self._hops(a, b)

    @abc.abstractmethod
    def _hops(self, a, b):
        """:meth:`hops` without the id check: the family's rule (jit-traceable)."""
        ...

    @property
    @abc.abstractmethod
    def max_hops(self) -> int:
        """Largest hop count between two nodes of the machine."""
        ...

    def hop_sum(self, nodes, valid):
        """Sum of ``hops`` over ordered pairs ``i != j`` of the valid entries of one padded
        allocation (APH = hop sum / (n (n - 1))).

        ``nodes``: ``(W,)`` int, ``valid``: ``(W,)`` bool. Default: the pairwise ``O(W^2)``
        sum; families override with a closed form from per-group counts (jit-traceable).
        Sums are in JAX's default integer (int32, int64 under ``jax.enable_x64``), which
        :func:`fattorus.kernels.aph.aph_of` turns on where int32 could overflow.
        """
        import jax.numpy as jnp

        nodes = jnp.asarray(nodes)
        h = jnp.asarray(self.hops(nodes[:, None], nodes[None, :])).astype(int)  # int64 under x64
        both = valid[:, None] & valid[None, :]
        return jnp.sum(jnp.where(both, h, 0))

    def job_size(self, n: int) -> int:
        """``n`` as an int when a job of ``n`` nodes fits the machine (``0 <= n <= n_nodes``),
        else a one-line ``ValueError`` naming the machine: the ideal placements and APH of a
        size past the machine were silently wrong (the first ``n`` ids past the last node, a
        torus ball cut short, a dragonfly's IndexError)."""
        try:
            size = int(n)
        except (TypeError, ValueError):
            size = None
        if size is None or size != n or not 0 <= size <= self.n_nodes:
            raise ValueError(f"topology {self.name!r}: a job of {n!r} nodes; sizes run from 0 to {self.n_nodes}")
        return size

    @abc.abstractmethod
    def ideal_allocation(self, n: int) -> np.ndarray:
        """Node ids of the most compact (lowest-APH) ``n``-node allocation on an empty machine
        (``n`` checked by :meth:`job_size`)."""
        ...

    def ideal_placements(self, n: int) -> tuple[np.ndarray, ...]:
        """Compact ``n``-node placements on an empty machine from which the bandwidth model
        takes a job's ideal step time: the least of its step times alone on each
        (:mod:`fattorus.analysis.commtime`). Default: :meth:`ideal_allocation` alone. A family
        whose lowest-APH placement is not also a good one for bandwidth adds others."""
        return (np.asarray(self.ideal_allocation(self.job_size(n))),)

    def ideal_aph(self, n: int) -> float:
        """APH of :meth:`ideal_allocation` (0 for ``n <= 1``)."""
        n = self.job_size(n)
        if n <= 1:
            return 0.0
        nodes = np.asarray(self.ideal_allocation(n), np.int64)
        h = np.asarray(self._hops(nodes[:, None], nodes[None, :]), np.int64)
        return float(h.sum() / (n * (n - 1)))

    # --- links and routes ----------------------------------------------------------------
    @property
    @abc.abstractmethod
    def link_class_names(self) -> tuple[str, ...]:
        """Names of the link classes (fat-tree: node-leaf, leaf-L2, L2-core; torus: x+ x- ...)."""
        ...

    @property
    @abc.abstractmethod
    def n_links(self) -> int:
        """Number of directed links."""
        ...

    @property
    @abc.abstractmethod
    def link_class(self) -> np.ndarray:
        """``(n_links,)`` int: class index of each link."""
        ...

    @property
    @abc.abstractmethod
    def link_bandwidth(self) -> np.ndarray:
        """``(n_links,)`` float: bandwidth of each link, GB/s (or relative units, see config)."""
        ...

    @property
    @abc.abstractmethod
    def link_ends(self) -> np.ndarray:
        """``(n_links, 2)`` int: the tail and head vertex of each directed link. Nodes are the
        vertices ``0..N-1``; the family numbers its switches or routers from ``N`` (the torus:
        router ``r`` is ``N + r``). The topology contract test walks every route along it, and
        the dragonfly study reads router pairs from it (declared here since session 47: the
        families had it, the base did not say so)."""
        ...

    @property
    @abc.abstractmethod
    def max_route_links(self) -> int:
        """Width of a padded static route (longest route, in links)."""
        ...

    @abc.abstractmethod
    def routes(self, src, dst):
        """Static routes of a batch of pairs: ``(P, max_route_links)`` link ids, ``-1`` padded."""
        ...

    def host_routes(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """:meth:`routes` of a batch of pairs computed on the host, ``(P, max_route_links)``
        int32 NumPy, when the family has a host router (the same ids: the contract test
        checks), else None (the default): callers then run the compiled :meth:`routes`
        (:func:`fattorus.kernels.routes.route_links`). Why a second router: a
        ``speedup=model`` replay routes each starting job's flows, a few hundred to a few
        thousand pairs, and a compiled JAX call costs more in dispatch and transfer than the
        routing itself."""
        return None

    def host_route_lists(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`host_routes` as compact crossing lists ``(lengths, links)`` (both int32:
        :func:`~fattorus.kernels.maxmin_compiled.compact_routes` of them), where the family
        writes them straight (long padded rows: a torus), else None (the default)."""
        return None

    def flow_routes(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, routing: str = "static",
                    seed: int | np.random.Generator = 0) -> np.ndarray:
        """Routes of flows ``src -> dst`` (node ids; ``nbytes`` bytes each, for routings that
        weigh them) under ``routing``, one of :attr:`routings`: ``(F, L)`` int32 link ids,
        ``-1`` padded (``L`` may exceed :attr:`max_route_links` for non-minimal routes). The
        flow model (:mod:`fattorus.analysis.commtime`) solves over whichever routes it is
        given. ``static``: :meth:`host_routes`, else :meth:`routes`. A family offering more
        overrides this and extends :attr:`routings`; draws come from ``seed`` (an int, or a
        NumPy generator whose stream the caller goes on drawing from)."""
        if routing not in self.routings:
            raise ValueError(f"routing {routing!r}: {self.kind or type(self).__name__} offers {list(self.routings)}")
        src, dst = self.node_ids(src, dst)
        host = self.host_routes(src, dst)
        return host if host is not None else np.asarray(self.routes(src, dst), np.int32)

    def host_hop_sums(self, allocs: list[np.ndarray]) -> np.ndarray | None:
        """:meth:`hop_sum` of many allocations (lists of node ids, checked by the caller)
        computed on the host, ``(len(allocs),)`` int64, where the family has a cheaper host
        rule than its compiled kernel; else None (the default): callers batch the compiled
        kernel (:func:`fattorus.kernels.aph.aph_of`). The contract test checks it against the
        pairwise sums."""
        return None

    def flow_loads(self, src, dst, nbytes, dtype=None):
        """Bytes per link ``(n_links,)`` of flows ``src -> dst`` (``-1`` pads) along the static
        routes: a scatter-add of each flow's bytes onto its route's links (jit-traceable).
        Families may fuse routing and the scatter (the fat-tree does)."""
        import jax.numpy as jnp

        route_ids = jnp.asarray(self.routes(src, dst))
        dtype = dtype or jnp.float32
        idx = jnp.where(route_ids >= 0, route_ids, self.n_links)  # padding: out of bounds, dropped
        w = jnp.broadcast_to(jnp.asarray(nbytes, dtype)[..., None], route_ids.shape)
        return jnp.zeros(self.n_links, dtype).at[idx.reshape(-1)].add(w.reshape(-1), mode="drop")

    def job_links(self, nodes: np.ndarray) -> np.ndarray:
        """``(n_links,)`` bool: links that the traffic of a job on ``nodes`` can use under the
        family's static routing (used for interference exposure). Default: the union of the
        routes of every ordered pair (``O(n^2)``); families override with their structure."""
        (nodes,) = self.node_ids(nodes)
        nodes = np.asarray(nodes, np.int64)
        src, dst = (a.ravel() for a in np.meshgrid(nodes, nodes, indexing="ij"))
        if len(src):
            # The pairs padded to a power of two with copies of the first (the union is the
            # same): a jitted ``routes`` compiles once per padded length, not once per job size
            # (a ring family of a user's ran 20 s a replay, 649 compiles; session 47).
            size = 1 << (len(src) - 1).bit_length()
            src, dst = (np.r_[a, np.full(size - len(a), a[0])] for a in (src, dst))
        r = np.asarray(self.routes(src, dst))
        mask = np.zeros(self.n_links, bool)
        mask[r[r >= 0]] = True
        return mask

    def routes_renamed(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the routes among nodes ``b`` are the routes among nodes ``a`` with links
        renamed: one one-to-one map of links, between links of equal bandwidth, turns the route
        ``a[i] -> a[j]`` into the route ``b[i] -> b[j]`` slot by slot, for every ``i, j``. Then
        any traffic between ranks placed on ``a`` and the same traffic placed on ``b`` form
        one flow network, with the same max-min rates. A sufficient test: families answer
        from their routing rule where it is cheap; the default answers False (cannot tell)."""
        return False

    def link_bundles(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Parallel links that share their traffic as one link of their summed bandwidth:
        ``(first, count)`` per link — the id of the first link of its bundle and the bundle's
        size — or None when every link stands alone (the default). The flow model solves on
        bundles (``machines.md``: "a router pair joined by k cables has k times the
        bandwidth"), while :meth:`routes` names one cable per hop."""
        return None

    def interference_keys(self, nodes: np.ndarray) -> np.ndarray:
        """Ids of the shared resources a job's own traffic uses: two jobs running together
        interfere iff their key sets intersect. Default: the ids of :meth:`job_links` (so
        for a large job on a family without a cheaper rule this is ``O(n^2)`` routes)."""
        return np.flatnonzero(self.job_links(nodes))

    def interference_keys_of(self, nodes: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`interference_keys` of many jobs at once: job ``i``'s nodes are the next
        ``lengths[i]`` entries of ``nodes`` (flat, ``(sum(lengths),)``). Returns ``(keys,
        counts)``: every job's keys in job order, int64, and how many each has ``(J,)``.
        Default: one :meth:`interference_keys` call per job; a family with a rule over arrays
        answers all jobs in a few array passes (fat-trees: a run's ``exposed`` output)."""
        nodes = np.asarray(nodes, np.int64)
        bounds = np.r_[0, np.cumsum(np.asarray(lengths, np.int64))]
        keys = [np.asarray(self.interference_keys(nodes[a:b]), np.int64) for a, b in zip(bounds[:-1], bounds[1:])]
        counts = np.array([len(k) for k in keys], np.int64)
        return (np.concatenate(keys) if keys else np.zeros(0, np.int64)), counts

    # --- placement shape -----------------------------------------------------------------
    def max_hops_of(self, nodes: np.ndarray) -> int:
        """Largest hop count between two of ``nodes`` (0 for fewer than two): pairwise over one
        node per innermost group, in chunks. Why one per group is enough: by the topology
        interface, two nodes of one innermost group are never farther apart than nodes of two
        different groups, and every node of a group is as far from any other node."""
        nodes = np.asarray(nodes, np.int64)
        if len(nodes) < 2:
            return 0
        groups, first = np.unique(np.asarray(self.group_of(0, nodes)), return_index=True)
        if len(groups) == 1:
            return int(np.asarray(self._hops(nodes[:1], nodes[1:2]))[0])
        reps = nodes[first]
        best, top = 0, self.max_hops
        for i in range(0, len(reps), 512):
            best = max(best, int(np.max(self._hops(reps[i:i + 512, None], reps[None, :]))))
            if best >= top:  # the machine's diameter: no pair can be farther (spread jobs stop here)
                break
        return best

    def placement_metrics(self, nodes: np.ndarray) -> dict[str, Any]:
        """Family-specific shape figures of one placement for ``jobs.parquet`` (the torus:
        bounding box and its fill). Default: none."""
        return {}

    # --- node kinds ----------------------------------------------------------------------
    @property
    def node_kind_names(self) -> tuple[str, ...]:
        """Names of the node kinds (compute types and service); index = code in :attr:`node_kind`.
        Default: one kind, ``compute``."""
        return ("compute",)

    @property
    def node_kind(self) -> np.ndarray:
        """``(N,)`` int8 kind code of every node slot (default: all 0)."""
        return np.zeros(self.n_nodes, np.int8)

    @property
    def default_job_kind(self) -> str:
        """The kind of node a job gets when its log says nothing (the first kind)."""
        return self.node_kind_names[0]

    def usable(self, job_kind: str | None = None) -> np.ndarray:
        """``(N,)`` bool: the nodes a job of ``job_kind`` (default :attr:`default_job_kind`) may
        run on. A replay holds every other node (service nodes, another compute type) out of
        the machine for its whole length."""
        kind = self.default_job_kind if job_kind is None else job_kind
        if kind not in self.node_kind_names:
            raise TopologyError(f"topology {self.name!r}: unknown node kind {kind!r}; "
                                f"choices: {list(self.node_kind_names)}")
        return self.node_kind == self.node_kind_names.index(kind)

    # --- orderings -----------------------------------------------------------------------
    @property
    def ordering_names(self) -> tuple[str, ...]:
        """Names accepted by :meth:`ordering`; ``"id"`` (node-id order) always exists."""
        return ("id",)

    def ordering(self, name: str = "id") -> np.ndarray:
        """A named node ordering: a permutation of ``0..n_nodes-1`` (first-fit walks it)."""
        if name == "id":
            return np.arange(self.n_nodes)
        raise TopologyError(f"topology {self.name!r}: unknown ordering {name!r}; choices: {list(self.ordering_names)}")

    # --- configuration -------------------------------------------------------------------
    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """The full configuration (``kind`` included) that rebuilds this topology with
        :func:`fattorus.topology.from_config`; written into ``summary.json``."""
        ...

    def canonical_config(self) -> dict[str, Any]:
        """:meth:`config` with every default a family fills in written out, so that two
        configurations of one machine compare equal (a file that leaves a default out and one
        that spells it); the families with such defaults override it."""
        return self.config()

    @classmethod
    @abc.abstractmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Topology:
        """Build from a mapping; unknown or missing keys raise :class:`TopologyError` naming them."""
        ...
