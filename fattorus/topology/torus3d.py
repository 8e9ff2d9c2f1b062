"""Three-dimensional torus (Blue Waters' Cray Gemini network; spec `machines.md`).

A router grid ``X x Y x Z`` with wrap-around links in every dimension and ``p`` nodes per
router (Gemini: 2). Router ``(x, y, z)`` has id ``r = (x * Y + y) * Z + z`` and its nodes are
``node = r * p + slot``.

* **Hops** between two nodes: the sum over dimensions of the ring distances between their
  routers (0 for the nodes of one router).
* **Static routing**: dimension order, x then y then z, the shorter way round each ring;
  when both ways are equally long (exactly half the ring) the positive direction.
* **Links** (directed): node -> router and router -> node (class ``node-router``, no hop),
  and per router and dimension one link in each direction (classes ``x+ x- y+ y- z+ z-``).
  Vertices: nodes ``0..N-1``, router ``r`` is vertex ``N + r``. Link ids: node ``n``'s
  up-link ``n``, its down-link ``N + n``, router ``r``'s link in dimension ``d`` and
  direction ``s`` (0 = +, 1 = -): ``2N + (3 r + d) * 2 + s``.
* **Bandwidth** per dimension from the config (Blue Waters x:y:z = 2:1:2, relative units);
  node-router links get the largest of them.
* The **hop-sum kernel** separates by dimension: ``sum_{i != j} H = sum_d h_d^T D_d h_d`` with
  ``h_d`` the job's histogram of coordinates in dimension ``d`` and ``D_d`` that ring's
  distance matrix — ``O(n + X^2 + Y^2 + Z^2)`` per job, no ``n x n`` matrix.

* **Node kinds** (spec `machines.md`): every slot is a compute node of type ``XE`` unless the
  config's ``node_kinds`` says otherwise, entry by entry in order, each over the slots not yet
  given a kind: a ``region`` of routers (``origin`` and ``shape``, wrapping; Blue Waters' XK
  block of 15 x 6 x 24), explicit ``routers`` or ``nodes`` lists, or a ``scatter`` of
  ``fraction`` x all routers, drawn with a ``seed`` among the routers not yet given a kind
  (service node pairs).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fattorus.topology import register
from fattorus.topology.base import Level, Topology, TopologyError, flat_allocations, three_bandwidths

CLASSES = ("node-router", "x+", "x-", "y+", "y-", "z+", "z-")


def ring_distance(a, b, n: int):
    """Distance between positions ``a`` and ``b`` on a ring of ``n`` (broadcasting)."""
    d = abs(a - b)
    return np.minimum(d, n - d) if isinstance(d, np.ndarray | int | np.integer) else _jnp().minimum(d, n - d)


def _jnp():
    import jax.numpy as jnp

    return jnp


@register
@dataclasses.dataclass(frozen=True)
class Torus3D(Topology):
    """Static parameters of a 3D torus.

    Attributes:
      name: label used in outputs (``bluewaters``, ...).
      dims: routers per dimension ``(X, Y, Z)``.
      nodes_per_router: ``p`` (Gemini: 2).
      bandwidth: relative link bandwidth per dimension ``(x, y, z)`` (Blue Waters 2:1:2).
    """

    name: str
    dims: tuple[int, int, int]
    nodes_per_router: int = 2
    bandwidth: tuple[float, float, float] = (1.0, 1.0, 1.0)
    node_kinds: tuple = ()

    kind: ClassVar[str] = "torus3d"
    hop_classes: ClassVar[tuple[str, ...]] = CLASSES[1:]

    def __post_init__(self) -> None:
        dims = self.dims
        if (isinstance(dims, (str, bytes, Mapping)) or not hasattr(dims, "__len__") or len(dims) != 3
                or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in dims)):
            raise TopologyError(f"topology {self.name!r}: dims must be three positive integers, got {self.dims!r}")
        p = self.nodes_per_router
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise TopologyError(f"topology {self.name!r}: nodes_per_router must be a positive integer, got {p!r}")
        object.__setattr__(self, "dims", tuple(int(d) for d in dims))  # lists from YAML -> hashable
        object.__setattr__(self, "bandwidth", three_bandwidths(self.name, self.bandwidth, "x, y, z"))
        object.__setattr__(self, "node_kinds", _kind_entries(self.name, self.node_kinds))
        self.node_kind  # validate the entries now: a bad region is a config error, not a replay crash

    # Sizes and coordinates -----------------------------------------------------------------
    @property
    def n_routers(self) -> int:
        """Routers in the grid."""
        X, Y, Z = self.dims
        return X * Y * Z

    @property
    def n_nodes(self) -> int:
        """Node slots: routers times nodes per router."""
        return self.n_routers * self.nodes_per_router

    @functools.cached_property
    def levels(self) -> tuple[Level, ...]:
        """One grouping level: the router (its ``p`` nodes are 0 hops apart)."""
        return (Level("router", self.nodes_per_router),)

    def router_coords(self, routers):
        """``(x, y, z)`` of router ids (broadcasting)."""
        _, Y, Z = self.dims
        return routers // (Y * Z), (routers // Z) % Y, routers % Z

    def _coords(self, nodes) -> tuple:
        """``(x, y, z, slot)`` of each node id."""
        p = self.nodes_per_router
        return (*self.router_coords(nodes // p), nodes % p)

    # Node kinds ----------------------------------------------------------------------------
    @property
    def node_kind_names(self) -> tuple[str, ...]:
        """``XE`` (the default compute type) then the kinds the config names, in order."""
        return tuple(dict.fromkeys(("XE", *(name for name, _, _ in self.node_kinds))))

    @functools.cached_property
    def node_kind(self) -> np.ndarray:
        """``(N,)`` int8 kind code of every slot (index into :attr:`node_kind_names`)."""
        return _assign_kinds(self)

    # Distances -----------------------------------------------------------------------------
    def _hops(self, a, b):
        """Sum over dimensions of the ring distances between the nodes' routers (broadcasting)."""
        ca, cb = self._coords(a)[:3], self._coords(b)[:3]
        return sum(ring_distance(u, v, n) for u, v, n in zip(ca, cb, self.dims))

    @property
    def max_hops(self) -> int:
        """Half of each ring, summed."""
        return sum(n // 2 for n in self.dims)

    def hop_sum(self, nodes, valid):
        """Closed-form ``sum_{i != j} H`` of one padded allocation: per-dimension coordinate
        histograms against each ring's distance matrix (jit-traceable; sums in JAX's default
        integer, so exact under ``jax.enable_x64`` where int32 would overflow:
        :func:`fattorus.kernels.aph.aph_of`)."""
        jnp = _jnp()
        w = jnp.asarray(valid).astype(int)
        coords = self._coords(jnp.where(valid, nodes, 0))[:3]
        total = jnp.asarray(0, int)
        for c, n in zip(coords, self.dims):
            h = jnp.zeros(n, int).at[c].add(w)
            ring = np.arange(n)
            dist = jnp.asarray(ring_distance(ring[:, None], ring[None, :], n), int)
            total = total + h @ dist @ h
        return total

    def host_hop_sums(self, allocs: list[np.ndarray]) -> np.ndarray:
        """:meth:`hop_sum` of many allocations on the host (int64, exact): per dimension each
        allocation's coordinate histogram ``h`` against the ring distances, ``h^T D h``, all
        allocations' histograms as one ``(allocations, ring)`` table (a replay's APH no longer
        compiles the padded kernel for each size bucket)."""
        flat, owner = flat_allocations(allocs)
        total = np.zeros(len(allocs), np.int64)
        for c, m in zip(self.router_coords(flat // self.nodes_per_router), self.dims):
            h = np.bincount(owner * m + c, minlength=len(allocs) * m).astype(np.int64).reshape(len(allocs), m)
            total += ((h @ self._ring_matrix(m)) * h).sum(axis=1)
        return total

    def _ball(self, n: int) -> np.ndarray:
        """The ``n`` nodes of the routers nearest router 0 (an L1 ball in torus distance, ties
        by router id), both slots of a router before the next."""
        routers = np.arange(self.n_routers)
        dist = self._hops(routers * self.nodes_per_router, np.zeros_like(routers))
        order = routers[np.lexsort((routers, dist))]
        nodes = (order[:, None] * self.nodes_per_router + np.arange(self.nodes_per_router)).ravel()
        return nodes[: int(n)]

    def _hop_sum(self, nodes: np.ndarray) -> int:
        """Hops summed over ordered pairs of ``nodes``, closed form: per dimension, the
        coordinate histogram ``h`` gives ``h @ D @ h`` with ``D`` the ring distances."""
        total = 0
        for c, m in zip(self.router_coords(np.asarray(nodes) // self.nodes_per_router), self.dims):
            h = np.bincount(c, minlength=m).astype(np.int64)
            total += int(h @ self._ring_matrix(m) @ h)
        return total

    @functools.cached_property
    def _ring_matrices(self) -> dict[int, np.ndarray]:
        """Ring distance matrix per dimension length."""
        return {m: ring_distance(np.arange(m)[:, None], np.arange(m)[None, :], m).astype(np.int64) for m in set(self.dims)}

    def _ring_matrix(self, m: int) -> np.ndarray:
        return self._ring_matrices[m]

    def _search_boxes(self, n: int) -> tuple[int, tuple[int, int, int], tuple[int, int, int]]:
        """The lowest hop sum of a box prefix, with its box extents and axis order.

        A box prefix: the first ``n`` nodes of an ``(a, b, c)``-router box at router 0 taken
        in an axis order (slowest to fastest; both slots of a router together), for every
        box with ``a * b`` columns and the fewest layers ``c`` that hold ``n`` (per axis order,
        the fastest axis is the layered one) — what ``prism`` and the orderings place. Their
        coordinate histograms are closed form, so all boxes and all six orders are scored in
        a few array operations."""
        p, dims = self.nodes_per_router, self.dims
        routers = -(-n // p)
        best = (np.iinfo(np.int64).max, (0, 0, 0), (0, 1, 2))
        rings = [self._ring_matrix(m).astype(np.float64) for m in dims]
        for order in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
            s1, s2, s3 = order
            e1, e2 = np.meshgrid(np.arange(1, dims[s1] + 1), np.arange(1, dims[s2] + 1), indexing="ij")
            e1, e2 = e1.ravel(), e2.ravel()
            e3 = -(-routers // (e1 * e2))
            ok = e3 <= dims[s3]
            e1, e2, e3 = e1[ok], e2[ok], e3[ok]
            if not len(e1):
                continue
            slab, row = e2 * e3 * p, e3 * p
            k1, r1 = n // slab, n % slab
            k2, r2 = r1 // row, r1 % row
            k3, r3 = r2 // p, r2 % p
            k1, r1, k2, r2, k3, r3, slab, row = (v.astype(np.float64) for v in (k1, r1, k2, r2, k3, r3, slab, row))
            e2f, e3f = e2.astype(np.float64), e3.astype(np.float64)
            col = lambda d: np.arange(dims[d], dtype=np.float64)[None, :]  # noqa: E731
            hist = {  # float64 for the BLAS products below
                s1: np.where(col(s1) < k1[:, None], slab[:, None], 0) + np.where(col(s1) == k1[:, None], r1[:, None], 0),
                s2: (np.where(col(s2) < e2f[:, None], (k1 * row)[:, None], 0)
                     + np.where(col(s2) < k2[:, None], row[:, None], 0) + np.where(col(s2) == k2[:, None], r2[:, None], 0)),
                s3: (np.where(col(s3) < e3f[:, None], (k1 * e2f * p + k2 * p)[:, None], 0)
                     + np.where(col(s3) < k3[:, None], p, 0) + np.where(col(s3) == k3[:, None], r3[:, None], 0)),
            }
            # float64 products (BLAS), exact: every partial sum is an integer below 2**53.
            total = sum(((hist[d] @ rings[d]) * hist[d]).sum(axis=1) for d in (s1, s2, s3))
            total = np.rint(total).astype(np.int64)
            i = int(np.argmin(total))
            if total[i] < best[0]:
                ext = [0, 0, 0]
                ext[s1], ext[s2], ext[s3] = int(e1[i]), int(e2[i]), int(e3[i])
                best = (int(total[i]), tuple(ext), order)
        return best

    def _box_prefix(self, n: int, ext: tuple[int, int, int], order: tuple[int, int, int]) -> np.ndarray:
        """The first ``n`` nodes of the box ``ext`` at router 0 in axis ``order`` (slowest first)."""
        grids = np.meshgrid(*(np.arange(ext[d]) for d in order), indexing="ij")
        coords = [None, None, None]
        for d, g in zip(order, grids):
            coords[d] = g.ravel()
        _, Y, Z = self.dims
        routers = (coords[0] * Y + coords[1]) * Z + coords[2]
        nodes = (routers[:, None] * self.nodes_per_router + np.arange(self.nodes_per_router)).ravel()
        return nodes[: int(n)]

    def ideal_allocation(self, n: int) -> np.ndarray:
        """The most compact ``n``-node placement found on the empty machine: the lowest APH among
        the L1 ball around router 0 (ties by router id), every box prefix (:meth:`_search_boxes`)
        and the first ``n`` nodes of every named ordering (the ball where it ties), then moved
        one node at a time while that lowers the hop sum (:func:`compact.descend`; routers
        ascending when any node moved). A local optimum: no single-node move lowers it, but not
        proven the global one."""
        n = self.job_size(n)
        if n not in self._ideal_cache:
            self._ideal_cache[n] = self._most_compact(n)
        return self._ideal_cache[n].copy()

    @functools.cached_property
    def _ideal_cache(self) -> dict[int, np.ndarray]:
        """:meth:`ideal_allocation` per job size, filled as asked (a replay asks once per size)."""
        return {}

    def _most_compact(self, n: int) -> np.ndarray:
        ball = np.asarray(self._ball(n))
        if n <= 1:
            return ball
        best_sum, best = self._hop_sum(ball), ball
        box_sum, ext, order = self._search_boxes(n)
        if box_sum < best_sum:
            best_sum, best = box_sum, self._box_prefix(n, ext, order)
        for name in self.ordering_names:
            nodes = np.asarray(self.ordering(name)[:n])
            s = self._hop_sum(nodes)
            if s < best_sum:
                best_sum, best = s, nodes
        from fattorus.topology import compact  # numba, loaded on first need

        p = self.nodes_per_router
        h, moves = compact.descend(np.bincount(best // p, minlength=self.n_routers), p, *self._descent_factors)
        return best if moves == 0 else compact.nodes_of(h, p)

    @functools.cached_property
    def _descent_factors(self) -> tuple[np.ndarray, np.ndarray]:
        """Per dimension each router's coordinate and that ring's distances (padded to the
        longest ring): the hop distance as :func:`compact.descend` takes it."""
        coords = np.stack(self.router_coords(np.arange(self.n_routers))).astype(np.int64)
        m = max(self.dims)
        mats = np.zeros((3, m, m), np.int64)
        for k, d in enumerate(self.dims):
            mats[k, :d, :d] = self._ring_matrix(d)
        return coords, mats

    def ideal_placements(self, n: int) -> tuple[np.ndarray, ...]:
        """The L1 ball (:meth:`_ball`) and the first ``n`` nodes of every named ordering
        (``xyz`` is ``id``), each once: the bandwidth model's candidate ideals. Why not the
        ball alone: its shape and its rank order (by distance from router 0) are poor for
        bandwidth — on Blue Waters a job alone on the first nodes of ``O2`` (a yz slab with
        wrap-around links) communicates 1.4–9× faster than on the ball — so a model ideal
        taken from the ball alone made most jobs faster than their logged run times
        (docs/decisions.md, "The torus's ideal placement for the bandwidth model"). The ball,
        not :meth:`ideal_allocation`: the model's candidates stayed as they were when the APH
        ideal became a search (session 17), so no model result moved."""
        n = self.job_size(n)
        out = [np.asarray(self._ball(n))]
        for name in self.ordering_names:
            if name == "xyz":
                continue
            nodes = np.asarray(self.ordering(name)[:n])
            if not any(np.array_equal(nodes, o) for o in out):
                out.append(nodes)
        return tuple(out)

    def ideal_aph(self, n: int) -> float:
        """APH of :meth:`ideal_allocation`, by the closed-form hop sum."""
        n = self.job_size(n)
        if n <= 1:
            return 0.0
        return self._hop_sum(self.ideal_allocation(n)) / (n * (n - 1))

    def max_hops_of(self, nodes: np.ndarray) -> int:
        """Largest hop count between two of ``nodes``, exactly, in ``O(C^2 Z)`` for ``C`` distinct
        ``(x, y)`` columns instead of ``O(routers^2)``: hops split into ``x + y`` (per column pair)
        plus z; for each column ``A`` and height ``z_b`` the farthest ``z_a`` of ``A`` is tabled
        once, then each column pair needs only a max over ``B``'s heights."""
        r = np.unique(np.asarray(nodes, np.int64) // self.nodes_per_router)
        if len(r) < 2:
            return 0
        X, Y, Z = self.dims
        x, y, z = self.router_coords(r)
        cols, col = np.unique(x * Y + y, return_inverse=True)
        zmask = np.zeros((len(cols), Z), bool)
        zmask[col, z] = True
        ring_z = ring_distance(np.arange(Z)[:, None], np.arange(Z)[None, :], Z)
        far = np.where(zmask[:, :, None], ring_z[None], -1).max(axis=1)  # (C, Z): farthest z of A from z_b
        cx, cy = cols // Y, cols % Y
        best, top = 0, self.max_hops
        for i in range(0, len(cols), 64):
            hxy = ring_distance(cx[i:i + 64, None], cx[None, :], X) + ring_distance(cy[i:i + 64, None], cy[None, :], Y)
            hz = np.where(zmask[None, :, :], far[i:i + 64, None, :], -1).max(axis=2)
            best = max(best, int((hxy + hz).max()))
            if best >= top:  # the machine's diameter: no pair can be farther (spread jobs stop here)
                break
        return best

    def bounding_box(self, nodes: np.ndarray) -> tuple[int, int, int]:
        """Router extents ``(a, b, c)`` of the smallest wrapped box holding ``nodes``: per
        dimension the ring minus its largest run of unused positions."""
        coords = self.router_coords(np.unique(np.asarray(nodes, np.int64) // self.nodes_per_router))
        out = []
        for c, n in zip(coords, self.dims):
            u = np.unique(c)
            gaps = np.diff(np.r_[u, u[0] + n]) - 1
            out.append(int(n - gaps.max()))
        return tuple(out)

    def placement_metrics(self, nodes: np.ndarray) -> dict[str, Any]:
        """``bbox`` (router extents of :meth:`bounding_box`) and ``bbox_fill`` (nodes over the
        box's node slots): how prism-like a placement is."""
        if len(nodes) == 0:
            return {"bbox": [0, 0, 0], "bbox_fill": float("nan")}
        box = self.bounding_box(nodes)
        return {"bbox": list(box), "bbox_fill": len(nodes) / (int(np.prod(box)) * self.nodes_per_router)}

    # Links and routes ----------------------------------------------------------------------
    @property
    def link_class_names(self) -> tuple[str, ...]:
        """``node-router`` then ``x+ x- y+ y- z+ z-``."""
        return CLASSES

    @property
    def n_links(self) -> int:
        """Injection/ejection links of every node plus six router links per router."""
        return 2 * self.n_nodes + 6 * self.n_routers

    @functools.cached_property
    def link_class(self) -> np.ndarray:
        """Class index of each link (:data:`CLASSES`)."""
        router = np.tile(np.arange(1, 7, dtype=np.int32), self.n_routers)
        return np.concatenate([np.zeros(2 * self.n_nodes, np.int32), router])

    @functools.cached_property
    def link_ends(self) -> np.ndarray:
        """``(n_links, 2)`` tail and head vertex ids (nodes ``0..N-1``, router ``r`` is ``N + r``)."""
        N, p = self.n_nodes, self.nodes_per_router
        nodes = np.arange(N)
        up = np.stack([nodes, N + nodes // p], axis=1)
        down = up[:, ::-1]
        r = np.repeat(np.arange(self.n_routers), 6)
        d, s = np.tile(np.repeat(np.arange(3), 2), self.n_routers), np.tile([0, 1], 3 * self.n_routers)
        head = self._step(r, d, np.where(s == 0, 1, -1))
        return np.concatenate([up, down, np.stack([N + r, N + head], axis=1)]).astype(np.int64)

    def _step(self, routers, dim, sign):
        """Router one step from ``routers`` along ``dim`` (0/1/2) by ``sign`` (+1/-1), wrapping."""
        X, Y, Z = self.dims
        x, y, z = self.router_coords(routers)
        x = np.where(dim == 0, (x + sign) % X, x)
        y = np.where(dim == 1, (y + sign) % Y, y)
        z = np.where(dim == 2, (z + sign) % Z, z)
        return (x * Y + y) * Z + z

    @functools.cached_property
    def link_bandwidth(self) -> np.ndarray:
        """Relative bandwidth of each link: its dimension's; node-router links the fastest."""
        per_class = np.array([max(self.bandwidth), *np.repeat(self.bandwidth, 2)])
        return per_class[self.link_class]

    @property
    def max_route_links(self) -> int:
        """Injection + the longest dimension-order path + ejection."""
        return 2 + self.max_hops

    def routes(self, src, dst):
        """Dimension-order routes (x, y, z; shorter way, ties positive) of a batch of pairs:
        ``(..., max_route_links)`` link ids, ``-1`` padded; empty for ``src == dst`` or padding."""
        jnp = _jnp()
        src, dst = self.node_ids(src, dst, padded=True)
        src, dst = jnp.asarray(src), jnp.asarray(dst)
        N, p, W = self.n_nodes, self.nodes_per_router, self.max_route_links
        a, b = self._coords(src)[:3], self._coords(dst)[:3]
        steps, signs = [], []
        for u, v, n in zip(a, b, self.dims):
            delta = (v - u) % n
            positive = 2 * delta <= n  # the shorter way, or exactly half: positive
            steps.append(jnp.where(positive, delta, n - delta))
            signs.append(jnp.where(positive, 1, -1))
        t = jnp.arange(W)[(None,) * src.ndim]  # position along the route
        e = [s[..., None] for s in steps]
        ends = [1 + e[0], 1 + e[0] + e[1], 1 + e[0] + e[1] + e[2]]
        cur = [c[..., None] for c in a]
        out = jnp.full(src.shape + (W,), -1, jnp.int32)
        out = jnp.where(t == 0, src[..., None], out)
        start = [jnp.ones_like(ends[0]), ends[0], ends[1]]
        pos = [b_[..., None] for b_ in b]
        for d in range(3):
            k = t - start[d]
            inside = (k >= 0) & (t < ends[d])
            xyz = [pos[i] if i < d else cur[i] for i in range(3)]
            xyz[d] = (cur[d] + signs[d][..., None] * k) % self.dims[d]
            router = (xyz[0] * self.dims[1] + xyz[1]) * self.dims[2] + xyz[2]
            link = 2 * N + (3 * router + d) * 2 + jnp.where(signs[d][..., None] > 0, 0, 1)
            out = jnp.where(inside, link, out)
        out = jnp.where(t == ends[2], N + dst[..., None], out)
        valid = (src >= 0) & (dst >= 0) & (src != dst)
        return jnp.where(valid[..., None], out, -1).astype(jnp.int32)

    def host_routes(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Dimension-order routes computed on the host (:func:`fattorus.topology.torus_host_routes.host_routes`)."""
        from fattorus.topology import torus_host_routes

        return torus_host_routes.host_routes(self.dims, self.nodes_per_router, self.n_nodes, self.max_route_links,
                                             src, dst)

    def host_route_lists(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`host_routes` as compact crossing lists (:func:`fattorus.topology.torus_host_routes.host_route_lists`)."""
        from fattorus.topology import torus_host_routes

        return torus_host_routes.host_route_lists(self.dims, self.nodes_per_router, self.n_nodes,
                                                  self.max_route_links, src, dst)

    def job_links(self, nodes: np.ndarray) -> np.ndarray:
        """Router links that dimension-order routes between any two of the job's routers use.

        Exact and without enumerating pairs: a route's x part runs on the source's row
        ``(y_s, z_s)`` towards any destination x; its y part on column ``(x_d, z_s)`` from
        ``y_s`` to ``y_d``; its z part on ``(x_d, y_d)`` from ``z_s`` to ``z_d``. Each phase is
        the union of ring arcs over the distinct coordinate combinations that can meet there
        (walked in one compiled loop: :func:`fattorus.topology.torus_host_routes.job_link_mask`).
        """
        from fattorus.topology import torus_host_routes  # numba, loaded on first need

        (nodes,) = self.node_ids(nodes)
        r = np.unique(np.asarray(nodes, np.int64) // self.nodes_per_router)
        return torus_host_routes.job_link_mask(self.dims, self.n_nodes, self.n_links, r)

    # Node orderings (what first fit walks; the torus paper, Section II-A2) ------------------
    @property
    def ordering_names(self) -> tuple[str, ...]:
        """``id``/``xyz`` (router id order), ``O2`` (ALPS default), ``OY``, ``2Y``, ``4Y``, ``hilbert``."""
        return ("id", "xyz", "O2", "OY", "2Y", "4Y", "hilbert")

    def ordering(self, name: str = "id") -> np.ndarray:
        """Nodes in the order of ordering ``name`` (both slots of a router together):

        * ``id``/``xyz``: router id order (z fastest, then y, then x);
        * ``O2``: ALPS' default as the paper observes it: x in blocks of 4 and, within a block,
          x fastest, then z, then y, so that consecutive nodes fill yz slabs 4 routers thick
          in x;
        * ``OY``: xz planes, one y value after another;
        * ``2Y``/``4Y``: the paper's modified orders: blocks of 4 x 2 x 8 (4 x 4 x 8) routers
          filling the torus along z, then x, then y, reversing direction after each jump
          (serpentine), so that jobs get xz slabs 2 (4) routers thick in y. Within a block
          z is fastest, then x, then y. Partial blocks at the torus edge are kept as they
          fall. The y sweep starts just past a node-kind region that does not span the x ring
          (Blue Waters' XK block: at y = 6; :meth:`_y_start`), so its partial layers come last.
          Nodes of another kind (the XK region, service nodes) stay in the list: a replay holds
          them out of the machine, so first fit skips them.
        * ``hilbert``: routers in the order of a 3D Hilbert curve over the smallest ``2^k``
          cube holding the grid (Skilling's transpose algorithm), what Slurm uses on 3D tori;
          on a ``2^k`` cube consecutive routers are neighbours.
        """
        p = self.nodes_per_router
        if name not in self._router_orders:  # each computed once: the ideal asks for every size
            self._router_orders[name] = self._router_order(name)
        return (self._router_orders[name][:, None] * p + np.arange(p)).ravel()

    @functools.cached_property
    def _router_orders(self) -> dict[str, np.ndarray]:
        return {}

    def _y_start(self) -> int:
        """The y layer where ``2Y``/``4Y`` start: just past the first node-kind region that does
        not span the x ring (Blue Waters' XK block: y 0-5, so y = 6), else 0. Why: the paper's
        orders were changed to "deal with the fact that the XK region on Blue Waters does not
        span the full torus in the x direction"; started inside its layers, the first xz slabs
        hold only the XE part of x (9 of 24 on Blue Waters) and a job's slab grows thick in y,
        the slow dimension these orders keep thin. Started past them, those layers come last."""
        for _, form, value in self.node_kinds:
            if form == "region" and value[3] < self.dims[0]:
                return (value[1] + value[4]) % self.dims[1]
        return 0

    def _router_order(self, name: str) -> np.ndarray:
        r = np.arange(self.n_routers)
        x, y, z = self.router_coords(r)
        if name in ("id", "xyz"):
            return r
        if name == "O2":
            return r[np.lexsort((x % 4, z, y, x // 4))]
        if name == "OY":
            return r[np.lexsort((z, x, y))]
        if name in ("2Y", "4Y"):
            thick = 2 if name == "2Y" else 4
            y = (y - self._y_start()) % self.dims[1]  # the layers the sweep starts from come first
            bx, by, bz = x // 4, y // thick, z // 8
            nbx, nbz = -(-self.dims[0] // 4), -(-self.dims[2] // 8)
            bx = np.where(by % 2 == 1, nbx - 1 - bx, bx)  # serpentine in x across y layers
            bz = np.where((by * nbx + bx) % 2 == 1, nbz - 1 - bz, bz)  # and in z across x steps
            return r[np.lexsort((z % 8, x % 4, y % thick, bz, bx, by))]
        if name == "hilbert":
            return r[np.argsort(hilbert_index(np.stack([x, y, z], 1), max(1, int(np.ceil(np.log2(max(self.dims)))))),
                                kind="stable")]
        raise TopologyError(f"topology {self.name!r}: unknown ordering {name!r}; choices: {list(self.ordering_names)}")

    # Configuration -------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Full configuration (``kind`` included) that rebuilds this torus."""
        cfg = {"kind": self.kind, "name": self.name, "dims": list(self.dims),
               "nodes_per_router": self.nodes_per_router, "bandwidth": list(self.bandwidth)}
        if self.node_kinds:
            cfg["node_kinds"] = [{"kind": name, form: _plain(form, value)} for name, form, value in self.node_kinds]
        return cfg

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Torus3D:
        """Build from a mapping; unknown or missing keys are one-line errors naming them."""
        data = dict(cfg)
        name = str(data.get("name", "?"))
        allowed = {"kind", "name", "dims", "nodes_per_router", "bandwidth", "node_kinds", "description"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise TopologyError(f"topology {name!r}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        missing = [k for k in ("name", "dims") if k not in data]
        if missing:
            raise TopologyError(f"topology {name!r}: missing key(s) {missing}")
        data.pop("kind", None)
        data.pop("description", None)
        kinds = data.pop("node_kinds", ())
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}, node_kinds=kinds)


def hilbert_index(points: np.ndarray, bits: int) -> np.ndarray:
    """Position along the Hilbert curve of ``(n, d)`` integer points in ``[0, 2^bits)^d``
    (J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004: axes to
    transpose, then the transpose's bits interleaved), vectorised over the points."""
    X = np.array(points, np.int64)
    n = X.shape[1]
    Q = 1 << (bits - 1)
    while Q > 1:  # undo excess work
        P = Q - 1
        for i in range(n):
            high = (X[:, i] & Q) != 0
            t = np.where(high, 0, (X[:, 0] ^ X[:, i]) & P)
            X[:, 0] ^= np.where(high, P, t)
            if i:
                X[:, i] ^= t
        Q >>= 1
    for i in range(1, n):  # Gray encode
        X[:, i] ^= X[:, i - 1]
    t = np.zeros(len(X), np.int64)
    Q = 1 << (bits - 1)
    while Q > 1:
        t = np.where(X[:, n - 1] & Q, t ^ (Q - 1), t)
        Q >>= 1
    X ^= t[:, None]
    index = np.zeros(len(X), np.int64)
    for b in range(bits - 1, -1, -1):
        for i in range(n):
            index = (index << 1) | ((X[:, i] >> b) & 1)
    return index


# Node-kind entries ---------------------------------------------------------------------------
_FORMS = ("region", "routers", "nodes", "scatter")


def _kind_entries(name: str, entries) -> tuple:
    """Normalise ``node_kinds`` config entries to hashable ``(kind, form, value)`` triples.

    Accepted per entry: ``{kind: K, region: {origin: [x, y, z], shape: [a, b, c]}}``,
    ``{kind: K, routers: [...]}``, ``{kind: K, nodes: [...]}`` or
    ``{kind: K, scatter: {fraction: f, seed: s}}``; already normalised triples pass through.
    """
    out = []
    if isinstance(entries, (str, bytes, Mapping)) or not hasattr(entries or (), "__iter__"):
        raise TopologyError(f"topology {name!r}: node_kinds must be a list of entries (- kind: K, then one of "
                            f"{list(_FORMS)}), got {entries!r}")
    for i, e in enumerate(entries or ()):
        if isinstance(e, tuple) and len(e) == 3 and e[1] in _FORMS:
            out.append(e)
            continue
        where = f"topology {name!r}: node_kinds[{i}]"
        if not isinstance(e, Mapping) or "kind" not in e:
            raise TopologyError(f"{where} must be a mapping with 'kind' and one of {list(_FORMS)}")
        if not isinstance(e["kind"], str) or not e["kind"]:
            # `kind: 5` and `kind: null` became the kinds "5" and "None" (session 47's exploratory run)
            raise TopologyError(f"{where}: kind must be a name (text), got {e['kind']!r}")
        forms = [f for f in _FORMS if f in e]
        extra = sorted(set(e) - {"kind", *_FORMS})
        if len(forms) != 1 or extra:
            raise TopologyError(f"{where} needs exactly one of {list(_FORMS)} besides 'kind', got {sorted(e)}")
        form, v = forms[0], e[forms[0]]
        keys = {"region": {"origin", "shape"}, "scatter": {"fraction", "seed"}}.get(form)
        if keys is not None and isinstance(v, Mapping) and set(v) != keys:
            raise TopologyError(f"{where}: {form} takes exactly {sorted(keys)}, got {sorted(v)}")
        try:
            if form == "region":
                value = tuple(_integer(c) for c in v["origin"]) + tuple(_integer(c) for c in v["shape"])
                ok = len(value) == 6 and all(c >= 0 for c in value) and all(c >= 1 for c in value[3:])
            elif form == "scatter":
                value = (float(v["fraction"]), _integer(v["seed"]))
                ok = 0.0 <= value[0] <= 1.0 and value[1] >= 0
            else:
                value = tuple(_integer(c) for c in v)
                ok = all(c >= 0 for c in value)
        except (KeyError, TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise TopologyError(f"{where}: bad {form} {v!r} (region: origin [x,y,z] >= 0 and shape [a,b,c] >= 1; "
                                "scatter: fraction in [0, 1] and an integer seed >= 0; lists: integer ids >= 0)")
        out.append((str(e["kind"]), form, value))
    kinds = {"XE", *(k for k, _, _ in out)}
    if len(kinds) > 127:  # kind codes are int8 per node
        raise TopologyError(f"topology {name!r}: node_kinds names {len(kinds)} kinds with XE; at most 127")
    return tuple(out)


def _integer(c: Any) -> int:
    """``c`` as an int; a bool, a fraction (1.7) or text raises ValueError instead of being cut."""
    if isinstance(c, bool) or not isinstance(c, (int, np.integer, float, np.floating)) or c != int(c):
        raise ValueError(c)
    if not -2**62 < int(c) < 2**62:  # past any machine, and past int64 where it is stored
        raise ValueError(c)
    return int(c)


def _plain(form: str, value: tuple):
    """The config form of a normalised entry value (for ``config()``)."""
    if form == "region":
        return {"origin": list(value[:3]), "shape": list(value[3:])}
    if form == "scatter":
        return {"fraction": value[0], "seed": value[1]}
    return list(value)


def _assign_kinds(topo: Torus3D) -> np.ndarray:
    """Apply the ``node_kinds`` entries in order, each to slots still of the default kind."""
    names = topo.node_kind_names
    p, R, N = topo.nodes_per_router, topo.n_routers, topo.n_nodes
    kind = np.zeros(N, np.int8)
    for name, form, value in topo.node_kinds:
        code = names.index(name)
        target = np.zeros(N, bool)
        if form == "region":
            x, y, z = topo.router_coords(np.arange(R))
            inside = np.ones(R, bool)
            for c, o, s, n in zip((x, y, z), value[:3], value[3:], topo.dims):
                if o >= n:  # it wrapped without a word (session 47's exploratory run)
                    raise TopologyError(f"topology {topo.name!r}: node_kinds: region origin {list(value[:3])} lies outside dims "
                                        f"{list(topo.dims)} (coordinates from 0)")
                if s > n:
                    raise TopologyError(f"topology {topo.name!r}: node_kinds: region shape {list(value[3:])} exceeds dims "
                                        f"{list(topo.dims)}")
                inside &= (c - o) % n < s
            target = np.repeat(inside, p)
        elif form in ("routers", "nodes"):
            ids = np.asarray(value, np.int64)
            limit = R if form == "routers" else N
            if len(ids) and ids.max() >= limit:
                raise TopologyError(f"topology {topo.name!r}: node_kinds: {form} id {int(ids.max())} beyond {limit - 1}")
            if form == "routers":
                ids = (ids[:, None] * p + np.arange(p)).ravel()
            target[ids] = True
        else:  # scatter whole routers (service node pairs) among routers still all-default
            fraction, seed = value
            open_routers = np.flatnonzero((kind.reshape(R, p) == 0).all(axis=1))
            k = int(round(fraction * R))
            if k > len(open_routers):
                raise TopologyError(f"topology {topo.name!r}: node_kinds: scatter of {k} routers, only {len(open_routers)} left")
            chosen = np.random.default_rng(seed).choice(open_routers, k, replace=False)
            target = np.zeros(R, bool)
            target[chosen] = True
            target = np.repeat(target, p)
        kind[target & (kind == 0)] = code
    return kind
