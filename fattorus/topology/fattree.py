"""Three-level fat-tree machine model (fat-tree paper, Section III-A; spec `machines.md`).

A fat-tree is static configuration: switch radix ``r``, ``k`` nodes per leaf (L1) switch,
``u`` up-ports per leaf (``u = k`` at full bisection, ``u < k`` when tapered), ``L`` leaves
per pod and ``P`` pods. Node ids are dense integers ``0..N-1`` numbered
``node = pod * (L * k) + leaf * k + slot``.

Hops (the paper's ``H_T``) count inter-switch links only: 0 on one leaf, 2 within a pod
(leaf -> L2 -> leaf), 4 across pods (leaf -> L2 -> L3 -> L2 -> leaf).

Every function here is pure and works on NumPy or JAX integer arrays alike, so it can be
used inside ``jit``/``vmap`` kernels and in the scheduler's NumPy bookkeeping.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fattorus.topology import register
from fattorus.topology.base import Level, Topology, TopologyError, flat_allocations, one_to_one, squared_group_counts

T1, T2, T3 = 1, 2, 3
JOB_TYPE_NAMES = {T1: "T1", T2: "T2", T3: "T3"}


@register
@dataclasses.dataclass(frozen=True)
class FatTree(Topology):
    """Static parameters of a three-level fat-tree.

    Attributes:
      name: label used in outputs (``cab``, ``pinot``, ...).
      radix: switch radix ``r`` (ports per switch).
      nodes_per_leaf: ``k``, compute nodes attached to each leaf (L1) switch.
      leaves_per_pod: ``L``, leaf switches per pod.
      pods: ``P``, number of pods.
      up_ports: ``u``, leaf up-links = L2 switches per pod (``None``: ``k``, full bisection;
        fewer than ``k`` is a tapered tree).
      core_switches: number of L3 (core) switches (``None``: ``u * (r - L)`` / ``P`` rounded
        down is not meaningful in general, so the default is ``radix``).
    """

    name: str
    radix: int
    nodes_per_leaf: int
    leaves_per_pod: int
    pods: int
    up_ports: int | None = None
    core_switches: int | None = None

    def __post_init__(self) -> None:
        for field in ("radix", "nodes_per_leaf", "leaves_per_pod", "pods", "up_ports", "core_switches"):
            value = getattr(self, field)
            if value is None and field in ("up_ports", "core_switches"):
                continue  # the defaults: nodes_per_leaf up-ports, radix core switches
            # bool is an int in Python: `up_ports: true` read as 1 (session 47's exploratory run).
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise TopologyError(f"topology {self.name!r}: {field} must be a positive integer, got {value!r}")
        u = self.l2_per_pod
        if u > self.nodes_per_leaf:
            raise TopologyError(
                f"topology {self.name!r}: up_ports ({u}) exceeds nodes_per_leaf ({self.nodes_per_leaf}); "
                "a fat-tree leaf has at least as many node ports as up-ports"
            )
        if self.nodes_per_leaf + u > self.radix:
            raise TopologyError(
                f"topology {self.name!r}: a leaf needs nodes_per_leaf + up_ports = "
                f"{self.nodes_per_leaf + u} ports but radix is {self.radix}"
            )
        if self.leaves_per_pod > self.radix:
            raise TopologyError(
                f"topology {self.name!r}: leaves_per_pod ({self.leaves_per_pod}) exceeds the L2 switch radix ({self.radix})"
            )
        if self.pods > self.radix:
            raise TopologyError(
                f"topology {self.name!r}: pods ({self.pods}) exceeds the core switch radix ({self.radix})"
            )
        cores_per_l2(self)  # the L2-core wiring must be possible with this radix

    # Derived sizes -------------------------------------------------------------------------
    @property
    def l2_per_pod(self) -> int:
        """``S``: L2 switches per pod (= leaf up-ports)."""
        return self.nodes_per_leaf if self.up_ports is None else self.up_ports

    @property
    def n_cores(self) -> int:
        """Number of core (L3) switches."""
        return self.radix if self.core_switches is None else self.core_switches

    @property
    def nodes_per_pod(self) -> int:
        """``p = L * k``."""
        return self.leaves_per_pod * self.nodes_per_leaf

    @property
    def n_leaves(self) -> int:
        """Leaf switches in the machine."""
        return self.leaves_per_pod * self.pods

    @property
    def n_nodes(self) -> int:
        """Compute nodes in the machine."""
        return self.nodes_per_pod * self.pods

    @property
    def max_hops(self) -> int:
        """Largest inter-switch hop count between two nodes (4 with several pods)."""
        if self.pods > 1:
            return 4
        return 2 if self.leaves_per_pod > 1 else 0

    @property
    def tapered(self) -> bool:
        """True when leaves have fewer up-ports than node ports."""
        return self.l2_per_pod < self.nodes_per_leaf

    # The topology interface (fattorus.topology.base) --------------------------------------
    kind: ClassVar[str] = "fattree"
    hop_classes: ClassVar[tuple[str, ...]] = ("leaf-L2", "L2-core")
    routings: ClassVar[tuple[str, ...]] = ("static", "adaptive")

    @functools.cached_property
    def levels(self) -> tuple[Level, ...]:
        """Grouping levels, innermost first: leaf (``k`` nodes), pod (``L * k`` nodes)."""
        return (Level("leaf", self.nodes_per_leaf), Level("pod", self.nodes_per_pod))

    def _coords(self, nodes) -> tuple:
        """``(pod, leaf_in_pod, slot)`` of each node id."""
        return coords(self, nodes)

    def _hops(self, a, b):
        """Inter-switch hops between nodes ``a`` and ``b`` (broadcasting): 0, 2 or 4."""
        return hops(self, a, b)

    def hop_sum(self, nodes, valid):
        """Closed-form ``sum_{i != j} H`` over the valid entries of one padded allocation, from
        per-leaf and per-pod counts (no ``n x n`` matrix): ``2 (S_pod - S_leaf) + 4 (n^2 - S_pod)``
        with ``S = sum of squared counts`` (spec `kernels.md`). jit-traceable; sums in JAX's
        default integer (int64 under ``jax.enable_x64``: :func:`fattorus.kernels.aph.aph_of`)."""
        import jax.numpy as jnp

        w = jnp.asarray(valid).astype(int)
        safe = jnp.where(valid, nodes, 0)
        leaf_counts = jnp.zeros(self.n_leaves, int).at[leaf_of(self, safe)].add(w)
        pod_counts = jnp.zeros(self.pods, int).at[pod_of(self, safe)].add(w)
        n = jnp.sum(w)
        s_leaf = jnp.sum(leaf_counts * leaf_counts)
        s_pod = jnp.sum(pod_counts * pod_counts)
        return 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)

    def host_hop_sums(self, allocs: list[np.ndarray]) -> np.ndarray:
        """:meth:`hop_sum` of many allocations on the host (int64, exact): the same closed
        form from each allocation's per-leaf and per-pod counts, all allocations in one pass
        (a replay's APH no longer compiles the padded kernel for each size bucket)."""
        flat, owner = flat_allocations(allocs)
        n = np.bincount(owner, minlength=len(allocs)).astype(np.int64)
        s_leaf = squared_group_counts(owner, leaf_of(self, flat), len(allocs))
        s_pod = squared_group_counts(owner, pod_of(self, flat), len(allocs))
        return 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)

    def max_hops_of(self, nodes: np.ndarray) -> int:
        """Largest hop count between two of ``nodes``: 0 on one leaf (or fewer than two nodes),
        2 within one pod, else 4 — read off the smallest and largest leaf and pod ids, no pairs
        (a replay's ``max_hops`` column asks this of every job)."""
        nodes = np.asarray(nodes, np.int64)
        if len(nodes) < 2:
            return 0
        leaves = leaf_of(self, nodes)
        if leaves.min() == leaves.max():
            return 0
        pods = pod_of(self, nodes)
        return 2 if pods.min() == pods.max() else 4

    def ideal_allocation(self, n: int) -> np.ndarray:
        """The first ``n`` node ids: a full leaf, then the leaves of one pod, then further pods."""
        return np.arange(self.job_size(n))

    def ideal_aph(self, n: int) -> float:
        """APH of :meth:`ideal_allocation` in closed form (``n // k`` full leaves and a
        remainder, ``n // p`` full pods and a remainder); 0 for ``n <= 1``."""
        n = self.job_size(n)
        if n <= 1:
            return 0.0
        k, p = self.nodes_per_leaf, self.nodes_per_pod
        s_leaf = (n // k) * k * k + (n % k) ** 2
        s_pod = (n // p) * p * p + (n % p) ** 2
        return float(2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)) / (n * (n - 1))

    @property
    def link_class_names(self) -> tuple[str, ...]:
        """Link classes by level: node--leaf, leaf--L2 (L1--L2), L2--core (L2--L3)."""
        from fattorus.topology import fattree_routing

        return fattree_routing.LEVEL_NAMES

    @property
    def n_links(self) -> int:
        """Directed links, node--leaf ones included (see :mod:`fattorus.topology.fattree_routing`)."""
        from fattorus.topology import fattree_routing

        return fattree_routing.n_links(self)

    @property
    def link_class(self) -> np.ndarray:
        """Class (level) of each link: 0 node--leaf, 1 leaf--L2, 2 L2--core."""
        from fattorus.topology import fattree_routing

        return fattree_routing.links(self).level.astype(np.int32)

    @property
    def link_ends(self) -> np.ndarray:
        """``(n_links, 2)`` vertex ids (tail, head) of each link; nodes are vertices ``0..N-1``."""
        from fattorus.topology import fattree_routing

        lk = fattree_routing.links(self)
        return np.stack([lk.src, lk.dst], axis=1)

    @property
    def core_trunk_cables(self) -> float:
        """Cables one logical L2--core link stands for: ``min((r − L) / C, r / P)``.

        Why: D-mod-k wiring (:mod:`fattorus.topology.fattree_routing`) joins L2 switch ``s`` of
        every pod to ``C = n_cores // S`` cores, one logical link each way. An L2 switch spreads
        its ``r − L`` up-ports over those ``C`` links, and a core switch spreads its ``r`` ports
        over the ``P`` pods' L2 switches that reach it, so a link is a trunk of whichever is
        fewer. Cab (36 cores): 9 cables, full bisection as the paper's Cab; Pinot (36 cores, 8
        pods): 4.5, a 2:1 taper at the core; ft44 (484 cores, CODES' tree): 1. Until session
        14 every trunk had one cable's bandwidth, 1/9 of Cab's core.
        """
        from fattorus.topology import fattree_routing

        r, L, P = self.radix, self.leaves_per_pod, self.pods
        return min((r - L) / fattree_routing.cores_per_l2(self), r / P)

    @property
    def link_bandwidth(self) -> np.ndarray:
        """Relative bandwidth of each link, in cables: 1 for node--leaf and leaf--L2 links, and
        :attr:`core_trunk_cables` for an L2--core link (a trunk of parallel cables is one
        logical link of their summed bandwidth; every cable of a fat-tree is alike)."""
        return np.where(self.link_class == 2, self.core_trunk_cables, 1.0)

    @property
    def max_route_links(self) -> int:
        """Longest route: node->leaf->L2->core->L2->leaf->node (6 links)."""
        from fattorus.topology import fattree_routing

        return fattree_routing.HOPS_MAX

    def routes(self, src, dst):
        """D-mod-k routes of a batch of pairs (:func:`fattorus.topology.fattree_routing.routes`)."""
        from fattorus.topology import fattree_routing

        src, dst = self.node_ids(src, dst, padded=True)
        return fattree_routing.routes(self, src, dst)

    def flow_routes(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, routing: str = "static",
                    seed: int | np.random.Generator = 0) -> np.ndarray:
        """:meth:`Topology.flow_routes`; ``adaptive``: up-paths chosen by load, largest flows
        first, ties in an order drawn from ``seed`` (a generator is drawn from as it is)
        (:func:`fattorus.topology.fattree_routing.load_balanced_routes`)."""
        if routing != "adaptive":
            return super().flow_routes(src, dst, nbytes, routing, seed)
        from fattorus.topology import fattree_routing

        src, dst = self.node_ids(src, dst)
        return fattree_routing.load_balanced_routes(self, src, dst, np.asarray(nbytes, float), np.random.default_rng(seed))

    def host_routes(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """D-mod-k routes computed on the host (:func:`fattorus.topology.fattree_host_routes.host_routes`)."""
        from fattorus.topology import fattree_host_routes

        return fattree_host_routes.host_routes(self, src, dst)

    def flow_loads(self, src, dst, nbytes, dtype=None):
        """Bytes per link of flows ``src -> dst``: one scatter-add per D-mod-k route slot
        (:func:`fattorus.topology.fattree_routing.route_slots`), without materialising the
        padded routes — two to three times faster on CPU than the generic scatter."""
        import jax.numpy as jnp

        from fattorus.topology import fattree_routing

        ids, used = fattree_routing.route_slots(self, src, dst)
        w = jnp.asarray(nbytes, dtype or jnp.float32)
        out = jnp.zeros(self.n_links, dtype or jnp.float32)
        for link, use in zip(ids, used):
            out = out.at[link.reshape(-1)].add(jnp.where(use, w, 0).reshape(-1))
        return out

    def job_links(self, nodes: np.ndarray) -> np.ndarray:
        """Links a job's own D-mod-k traffic can use: none inside one leaf; every leaf--L2 link
        of its leaves inside one pod; plus every L2--core link of its pods across pods."""
        from fattorus.topology import fattree_routing as fr

        (nodes,) = self.node_ids(nodes)
        nodes = np.asarray(nodes, np.int64)
        mask = np.zeros(self.n_links, bool)
        fp = self.footprint_class(nodes)
        if fp >= 2:
            S = self.l2_per_pod
            leaves = np.unique(nodes // self.nodes_per_leaf)
            s = np.arange(S)
            mask[fr.leaf_up_link(self, leaves[:, None], s[None, :]).ravel()] = True
            mask[fr.leaf_down_link(self, leaves[:, None], s[None, :]).ravel()] = True
        if fp >= 3:
            C = fr.cores_per_l2(self)
            pods = np.unique(nodes // self.nodes_per_pod)
            ps = np.stack(np.meshgrid(pods, np.arange(S), np.arange(C), indexing="ij"), -1).reshape(-1, 3)
            mask[fr.l2_up_link(self, ps[:, 0], ps[:, 1], ps[:, 2])] = True
            mask[fr.l2_down_link(self, ps[:, 0], ps[:, 1], ps[:, 2])] = True
        return mask

    def routes_renamed(self, a: np.ndarray, b: np.ndarray) -> bool:
        """D-mod-k routes among ``b`` are those among ``a`` renamed (base class) when matching
        nodes share leaves exactly as the others do (``a[i]``, ``a[j]`` on one leaf iff
        ``b[i]``, ``b[j]`` are), likewise pods, and each pair has the same L2 index
        ``node mod S`` and core offset ``(node // S) mod C``: the link of every route slot is
        then a function of (leaf or pod, L2 index, core offset) that the leaf and pod maps
        rename one-to-one, and links of one level have one bandwidth."""
        from fattorus.topology import fattree_routing as fr

        a, b = np.asarray(a, np.int64).ravel(), np.asarray(b, np.int64).ravel()
        if a.shape != b.shape:
            return False
        from fattorus.topology import fattree_host_routes  # numba, loaded on first need (as host_routes)

        got = fattree_host_routes.routes_renamed(self, a, b)  # compiled, ~10x; None: ids off the machine
        if got is not None:
            return got
        S, C = self.l2_per_pod, fr.cores_per_l2(self)
        if not (np.array_equal(a % S, b % S) and np.array_equal((a // S) % C, (b // S) % C)):
            return False
        return one_to_one(a // self.nodes_per_leaf, b // self.nodes_per_leaf) and one_to_one(
            a // self.nodes_per_pod, b // self.nodes_per_pod)

    def interference_keys(self, nodes: np.ndarray) -> np.ndarray:
        """The leaves a job spans when it spans several (its leaf--L2 links) and the pods it
        spans when it spans several (its L2--core links), as disjoint ids: two jobs share a
        link of their own traffic iff they share such a key (same rule as :meth:`job_links`)."""
        nodes = np.asarray(nodes, np.int64)
        leaves = np.unique(nodes // self.nodes_per_leaf)
        pods = np.unique(nodes // self.nodes_per_pod)
        keys = [leaves] if len(leaves) > 1 else []
        if len(pods) > 1:
            keys.append(self.n_leaves + pods)
        return np.concatenate(keys) if keys else np.empty(0, np.int64)

    def interference_keys_of(self, nodes: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`interference_keys` of many jobs at once (:meth:`Topology.interference_keys_of`),
        the same keys in the same order per job, from a mark per (job, leaf): a 6-month replay
        on Pinot (36k jobs, 4.1 M nodes) took ~1 s one job at a time, ~0.1 s so."""
        nodes = np.asarray(nodes, np.int64)
        lengths = np.asarray(lengths, np.int64)
        if len(nodes) and (int(nodes.min()) < 0 or int(nodes.max()) >= self.n_nodes):
            raise ValueError(f"interference_keys_of: node ids must lie in [0, {self.n_nodes}) on {self.name}")
        J, L = len(lengths), self.n_leaves
        job, leaf = _job_leaves(nodes // self.nodes_per_leaf, lengths, L)  # each job's leaves, ascending
        pod = leaf // self.leaves_per_pod  # = node // nodes_per_pod; ascending within a job
        first = np.ones(len(job), bool)
        first[1:] = (job[1:] != job[:-1]) | (pod[1:] != pod[:-1])
        pod_job, pod = job[first], pod[first]
        n_leaf, n_pod = np.bincount(job, minlength=J), np.bincount(pod_job, minlength=J)
        leaf_kept, pod_kept = n_leaf[job] > 1, n_pod[pod_job] > 1
        # Per job its leaves, then its pods (as interference_keys lists them): a stable sort by
        # job of the kept leaves followed by the kept pods.
        owner = np.concatenate([job[leaf_kept], pod_job[pod_kept]])
        keys = np.concatenate([leaf[leaf_kept], L + pod[pod_kept]])
        counts = np.where(n_leaf > 1, n_leaf, 0) + np.where(n_pod > 1, n_pod, 0)
        return keys[np.argsort(owner, kind="stable")], counts

    def config(self) -> dict[str, Any]:
        """The full configuration (``kind`` included) that rebuilds this fat-tree."""
        return {"kind": self.kind, **dataclasses.asdict(self)}

    def canonical_config(self) -> dict[str, Any]:
        """:meth:`config` with ``up_ports`` and ``core_switches`` written out (their defaults:
        ``nodes_per_leaf`` and ``radix``)."""
        return {**self.config(), "up_ports": self.l2_per_pod, "core_switches": self.n_cores}

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> FatTree:
        """Build from a config mapping (:func:`from_config`)."""
        return from_config(cfg)


#: Marks per block of :func:`_job_leaves` (bytes of its table): bounds its memory on any machine.
_MARKS = 1 << 24


def _job_leaves(leaf: np.ndarray, lengths: np.ndarray, n_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (job, leaf) pairs of jobs whose nodes' leaves are ``leaf`` (job ``i``'s the
    next ``lengths[i]``), sorted by job then leaf: ``(job, leaf)``. Marked in a (jobs, leaves)
    table, a block of jobs at a time (at most 16 M marks): ~5x a sort of the pairs."""
    J = len(lengths)
    rows = max(1, _MARKS // max(n_leaves, 1))
    bounds = np.r_[0, np.cumsum(lengths)]
    jobs, leaves = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for a in range(0, J, rows):
        b = min(J, a + rows)
        present = np.zeros((b - a, n_leaves), bool)
        present[np.repeat(np.arange(b - a), lengths[a:b]), leaf[bounds[a]:bounds[b]]] = True
        j, k = np.nonzero(present)
        jobs.append(j + a)
        leaves.append(k)
    return np.concatenate(jobs).astype(np.int64), np.concatenate(leaves).astype(np.int64)


def cores_per_l2(ft: FatTree) -> int:
    """``C_per_L2 = n_cores // S``: cores each L2 switch connects to (validated).

    Raises:
      TopologyError: if ``S`` does not divide ``n_cores`` or an L2 switch lacks the up-ports.
    """
    S = ft.l2_per_pod
    if ft.n_cores % S != 0:
        raise TopologyError(
            f"topology {ft.name!r}: n_cores ({ft.n_cores}) must be a multiple of the L2 switches "
            f"per pod ({S}) for D-mod-k core wiring"
        )
    C = ft.n_cores // S
    if ft.pods > 1 and C > ft.radix - ft.leaves_per_pod:
        raise TopologyError(
            f"topology {ft.name!r}: each L2 switch needs {C} core up-ports but has only "
            f"radix - leaves_per_pod = {ft.radix - ft.leaves_per_pod}"
        )
    return C


def from_config(cfg: Mapping[str, Any]) -> FatTree:
    """Build a :class:`FatTree` from a mapping (a Hydra ``topo`` node or a plain dict).

    Unknown keys are an error naming the key, so a typo never passes silently.
    """
    allowed = {f.name for f in dataclasses.fields(FatTree)} | {"kind", "description"}
    data = dict(cfg)
    unknown = sorted(set(data) - allowed)
    name = str(data.get("name", "?"))
    if "cores_per_node" in unknown:
        # It was taken and ignored (session 47's exploratory run): a user may think it sets the jobs' nodes.
        raise TopologyError(f"topology {name!r}: cores_per_node is the workload's setting (workload.cores_per_node: "
                            "a log's processors per node), not the machine's; remove it here")
    if unknown:
        raise TopologyError(f"topology {name!r}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    kind = data.pop("kind", "fattree")
    if kind != "fattree":
        raise TopologyError(f"topology {name!r}: kind {kind!r} is not supported yet (only 'fattree')")
    data.pop("description", None)
    missing = [f for f in ("name", "radix", "nodes_per_leaf", "leaves_per_pod", "pods") if f not in data]
    if missing:
        raise TopologyError(f"topology {name!r}: missing key(s) {missing}")
    return FatTree(**data)


# Node coordinates and hops (array-polymorphic: NumPy or JAX) --------------------------------
def leaf_of(ft: FatTree, nodes):
    """Global leaf-switch id (``pod * L + leaf``) of each node."""
    return nodes // ft.nodes_per_leaf


def pod_of(ft: FatTree, nodes):
    """Pod id of each node."""
    return nodes // ft.nodes_per_pod


def coords(ft: FatTree, nodes):
    """``(pod, leaf_in_pod, slot)`` of each node id."""
    k, p = ft.nodes_per_leaf, ft.nodes_per_pod
    return nodes // p, (nodes % p) // k, nodes % k


def job_type(ft: FatTree, n_nodes):
    """Job type of a request of ``n_nodes``: 1 (T1, ``N <= k``), 2 (T2, ``N <= p``), 3 (T3)."""
    return 1 + (n_nodes > ft.nodes_per_leaf) + (n_nodes > ft.nodes_per_pod)


def footprint_type(ft: FatTree, nodes) -> int:
    """Links a placement can use: 1 one leaf, 2 several leaves of one pod, 3 several pods."""
    leaves = nodes // ft.nodes_per_leaf
    if leaves.min() == leaves.max():
        return 1
    pods = nodes // ft.nodes_per_pod
    return 2 if pods.min() == pods.max() else 3


def hops(ft: FatTree, a, b):
    """Inter-switch hops between nodes ``a`` and ``b`` (broadcasting): 0, 2 or 4."""
    different_leaf = (a // ft.nodes_per_leaf) != (b // ft.nodes_per_leaf)
    different_pod = (a // ft.nodes_per_pod) != (b // ft.nodes_per_pod)
    return 2 * different_leaf + 2 * different_pod


def conf_dir() -> "Path":
    """The project's ``conf/`` directory (:func:`fattorus.paths.conf_dir`; kept for callers)."""
    from fattorus import paths

    return paths.conf_dir()


def load(name_or_path: str) -> Topology:
    """Load ``conf/topo/NAME.yaml`` (or a YAML file path): any family (:func:`fattorus.topology.load`)."""
    from fattorus import topology

    return topology.load(name_or_path)
