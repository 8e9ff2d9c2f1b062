"""Dragonfly (Edison's Cray Cascade / Aries network; spec `machines.md`).

``G`` groups of ``R x C`` routers (Edison: 15 groups of 6 x 16) with ``p`` nodes per router
(Aries: 4). Router ``(g, i, j)`` (group, row, column) has id ``r = (g * R + i) * C + j`` and
its nodes are ``node = r * p + slot``.

* **Cables.** Green: all-to-all within each row (``green_per_pair`` cables per router pair).
  Black: all-to-all within each column (``black_per_pair``; Edison 3). Blue: between groups,
  in bundles of ``blue_per_bundle`` cables (Edison 2) joining one router of each group.
* **Global arrangement** (Edison's real wiring is not public; ``docs/decisions.md``
  "Dragonfly"). Every router has ``bundles_per_router`` bundle slots; group ``g`` numbers its
  slots ``s = local_router * bundles_per_router + k`` (routers in id order). Every pair of
  groups gets the same number ``m = floor(R C bundles_per_router / (G - 1))`` of bundles
  (the slots beyond ``m (G - 1)`` stay unused). Slot ``s`` holds bundle ``n`` towards the
  ``t``-th other group of ``g`` (other groups in id order, ``g`` skipped) by the arrangement:
  ``round_robin`` ``s = n (G - 1) + t`` (the default: consecutive slots go to consecutive
  groups) or ``consecutive`` ``s = t m + n`` (a group's bundles to one group on neighbouring
  routers). Bundle ``n`` of ``g`` towards ``h`` joins bundle ``n`` of ``h`` towards ``g``.
* **Hops** count router-to-router cables: within a group the Hamming distance of
  ``(row, column)`` (0, 1 or 2); between groups ``1 + min_n (L(a, u_n) + L(v_n, b))`` over
  the ``m`` bundles ``(u_n, v_n)`` of the two groups: minimal routing takes the shortest
  local-global-local path.
* **Static (minimal) routing**: within a group green first (along the row to the
  destination's column) then black (along that column to the destination's row); between
  groups that local route to the gateway ``u_n``, the blue cable, then the same local route
  from ``v_n``. Among the bundles of minimal length the ``((r_src + r_dst) mod count)``-th
  (router ids; the same bundle both ways); among the parallel cables of a hop cable
  ``(src + dst) mod k`` (node ids). ``routes(..., black_first=True)`` gives the other minimal
  route (every local part black, then green), a candidate of adaptive routing.
* **Links** (directed), one per physical cable and direction, each with its cable's
  bandwidth (a router pair joined by ``k`` cables has ``k`` parallel links, ``k`` times the
  bandwidth). Vertices: nodes ``0..N-1``, router ``r`` is ``N + r``. Ids: node ``n``'s
  up-link ``n``, its down-link ``N + n``; then green ``G0 + (r (C-1) + jj) kg + c`` from
  router ``r`` to the ``jj``-th other router of its row; black ``K0 + (r (R-1) + ii) kk + c``
  to the ``ii``-th other router of its column; blue ``U0 + (g S + s) kb + c`` leaving group
  ``g``'s slot ``s`` (``S = m (G - 1)`` used slots per group).
* **Tables.** The router distance and bundle choice are tabled once per machine
  (``routers^2`` entries: 2 MB each on Edison's 1,440 routers); hops, routes and the hop sum
  gather from them, so every kernel is a few gathers (the hop sum a router histogram against
  the distance table for wide allocations).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fattorus.topology import register
from fattorus.topology.base import Level, Topology, TopologyError, three_bandwidths

CLASSES = ("node-router", "green", "black", "blue")
ARRANGEMENTS = ("round_robin", "consecutive")


def _jnp():
    import jax.numpy as jnp

    return jnp


def _numpy_only(*xs) -> bool:
    """True when every argument is a NumPy array or a Python/NumPy integer (no JAX arrays)."""
    return all(isinstance(x, np.ndarray | int | np.integer) for x in xs)


def _positive_int(name: str, field: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise TopologyError(f"topology {name!r}: {field} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@register
@dataclasses.dataclass(frozen=True)
class Dragonfly(Topology):
    """Static parameters of a dragonfly (Cray Cascade layout: row/column groups).

    Attributes:
      name: label used in outputs (``edison``, ...).
      groups: ``G``, number of groups (Edison: 15 cabinet pairs).
      rows, cols: ``R x C`` routers per group (Edison: 6 chassis x 16 blades).
      nodes_per_router: ``p`` (Aries: 4).
      green_per_pair: cables between two routers of a row.
      black_per_pair: cables between two routers of a column (Edison: 3).
      blue_per_bundle: cables in one inter-group bundle (Edison: 2).
      bundles_per_router: bundle slots per router (Edison: 5 = 10 Aries global ports in
        bundles of 2); ``None`` gives the fewest that connect every pair of groups.
      bandwidth: per-cable bandwidth of green, black and blue cables, GB/s (Aries 5.25,
        5.25, 4.7).
      arrangement: inter-group wiring, ``round_robin`` or ``consecutive`` (module docstring).
    """

    name: str
    groups: int
    rows: int
    cols: int
    nodes_per_router: int = 4
    green_per_pair: int = 1
    black_per_pair: int = 3
    blue_per_bundle: int = 2
    bundles_per_router: int | None = None
    bandwidth: tuple[float, float, float] = (5.25, 5.25, 4.7)
    arrangement: str = "round_robin"

    kind: ClassVar[str] = "dragonfly"
    hop_classes: ClassVar[tuple[str, ...]] = CLASSES[1:]
    routings: ClassVar[tuple[str, ...]] = ("static", "valiant")

    def __post_init__(self) -> None:
        name = self.name
        for field in ("groups", "rows", "cols", "nodes_per_router", "green_per_pair", "black_per_pair",
                      "blue_per_bundle"):
            object.__setattr__(self, field, _positive_int(name, field, getattr(self, field)))
        G, A = self.groups, self.rows * self.cols
        if self.bundles_per_router is None:
            # the fewest slots per router that give every pair of groups one bundle
            object.__setattr__(self, "bundles_per_router", -(-(G - 1) // A))
        bpr = _positive_int(name, "bundles_per_router", self.bundles_per_router, minimum=0)
        object.__setattr__(self, "bundles_per_router", bpr)
        if G > 1 and A * bpr < G - 1:
            raise TopologyError(f"topology {name!r}: {A} routers x {bpr} bundles_per_router cannot connect a group "
                                f"to the {G - 1} others; need bundles_per_router >= {-(-(G - 1) // A)}")
        object.__setattr__(self, "bandwidth", three_bandwidths(name, self.bandwidth, "green, black, blue"))
        if self.arrangement not in ARRANGEMENTS:
            raise TopologyError(f"topology {name!r}: unknown arrangement {self.arrangement!r}; choices: {list(ARRANGEMENTS)}")

    # Sizes and coordinates -----------------------------------------------------------------
    @property
    def routers_per_group(self) -> int:
        """``R * C``."""
        return self.rows * self.cols

    @property
    def n_routers(self) -> int:
        """Routers of the machine."""
        return self.groups * self.routers_per_group

    @property
    def n_nodes(self) -> int:
        """Node slots: routers times nodes per router."""
        return self.n_routers * self.nodes_per_router

    @property
    def bundles_per_group_pair(self) -> int:
        """``m``: bundles joining each pair of groups (0 on a single group)."""
        if self.groups < 2:
            return 0
        return self.routers_per_group * self.bundles_per_router // (self.groups - 1)

    @functools.cached_property
    def levels(self) -> tuple[Level, ...]:
        """Router (``p`` nodes, 0 hops apart), then group (``R C p`` nodes, at most 2 hops apart)."""
        return (Level("router", self.nodes_per_router), Level("group", self.routers_per_group * self.nodes_per_router))

    def router_coords(self, routers):
        """``(group, row, column)`` of router ids (broadcasting)."""
        R, C = self.rows, self.cols
        return routers // (R * C), (routers // C) % R, routers % C

    def _coords(self, nodes) -> tuple:
        """``(group, row, column, slot)`` of each node id."""
        p = self.nodes_per_router
        return (*self.router_coords(nodes // p), nodes % p)

    # Global arrangement --------------------------------------------------------------------
    def _slot(self, t, n):
        """Slot (in its group) of bundle ``n`` towards the ``t``-th other group."""
        if self.arrangement == "round_robin":
            return n * max(self.groups - 1, 1) + t
        return t * self.bundles_per_group_pair + n

    def _slot_bundle(self, s):
        """``(t, n)`` of slot ``s``: the other-group index and the bundle number."""
        if self.arrangement == "round_robin":
            Gm1 = max(self.groups - 1, 1)
            return s % Gm1, s // Gm1
        m = max(self.bundles_per_group_pair, 1)
        return s // m, s % m

    @staticmethod
    def _other_index(g, h):
        """Index of group ``h`` among the groups other than ``g`` (``h != g``)."""
        return h - (h > g)

    def _gateway(self, g, h, n):
        """Router id (global) in group ``g`` holding bundle ``n`` towards group ``h``."""
        return g * self.routers_per_group + self._slot(self._other_index(g, h), n) // self.bundles_per_router

    @functools.cached_property
    def gateways(self) -> np.ndarray:
        """``(G, G, m)`` int: router id in group ``g`` of bundle ``n`` towards ``h`` (the
        diagonal ``g == h`` is meaningless, 0)."""
        G, m = self.groups, self.bundles_per_group_pair
        g, h, n = np.meshgrid(np.arange(G), np.arange(G), np.arange(m), indexing="ij")
        return np.where(g == h, 0, self._gateway(g, h, n)).astype(np.int64)

    @functools.cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Router distance ``(NR, NR)`` int8 and minimal bundle choice ``(NR, NR)`` int16.

        Built group by group: for source group ``g`` and every other group at once the
        ``(G-1, A, A, m)`` path lengths ``L(a, u_n) + 1 + L(v_n, b)`` over the bundles."""
        G, A, m = self.groups, self.routers_per_group, self.bundles_per_group_pair
        NR = self.n_routers
        local = np.arange(A)
        li, lj = local // self.cols, local % self.cols
        ham = ((li[:, None] != li[None, :]).astype(np.int8) + (lj[:, None] != lj[None, :]))  # (A, A)
        dist = np.zeros((NR, NR), np.int8)
        choice = np.zeros((NR, NR), np.int16)
        for g in range(G):
            dist[g * A:(g + 1) * A, g * A:(g + 1) * A] = ham
            if m == 0:
                continue
            others = np.array([h for h in range(G) if h != g])
            u = self.gateways[g, others] - g * A  # (G-1, m) local ids in g
            v = self.gateways[others, g] - others[:, None] * A  # (G-1, m) local ids in h
            cost = ham[:, u].transpose(1, 0, 2)[:, :, None, :] + ham[v].transpose(0, 2, 1)[:, None, :, :]
            best = cost.min(axis=-1)  # (G-1, A, A)
            tied = cost == best[..., None]
            seen = np.cumsum(tied, axis=-1, dtype=np.int16)  # ties so far, per bundle
            ra = g * A + local[None, :, None]
            rb = others[:, None, None] * A + local[None, None, :]
            rank = ((ra + rb) % seen[..., -1]).astype(np.int16)  # spread ties, the same bundle both ways
            pick = np.argmax(tied & (seen == (rank + 1)[..., None]), axis=-1)
            for k, h in enumerate(others):
                dist[g * A:(g + 1) * A, h * A:(h + 1) * A] = best[k] + 1
                choice[g * A:(g + 1) * A, h * A:(h + 1) * A] = pick[k]
        return dist, choice

    @property
    def router_distance(self) -> np.ndarray:
        """``(NR, NR)`` int8: hops between routers under minimal routing."""
        return self._tables[0]

    @property
    def bundle_choice(self) -> np.ndarray:
        """``(NR, NR)`` int16: bundle number ``n`` a minimal route between two routers of
        different groups takes (0 within a group)."""
        return self._tables[1]

    def _gather(self, table: np.ndarray, ra, rb):
        """``table[ra, rb]`` as int32, NumPy for NumPy inputs, jax.numpy otherwise."""
        if _numpy_only(ra, rb):
            return table[ra, rb].astype(np.int32)
        jnp = _jnp()
        return jnp.asarray(table)[ra, rb].astype(jnp.int32)

    # Distances -----------------------------------------------------------------------------
    def _hops(self, a, b):
        """Router-to-router hops between nodes ``a`` and ``b`` under minimal routing
        (broadcasting; int32)."""
        p = self.nodes_per_router
        return self._gather(self.router_distance, a // p, b // p)

    def host_hop_sums(self, allocs: list[np.ndarray]) -> np.ndarray:
        """Hop sums of many allocations on the host (int64, exact): per allocation its router
        histogram ``c`` against the router distance table, ``c^T D c`` over the ``u`` routers it
        uses (same-router pairs add ``D[a, a] = 0``). ``u^2`` table entries per job, where
        the compiled :meth:`hop_sum` pads each job to a power-of-two width and sums ``W^2``
        node pairs (a month of Atlas x2 on Edison under `compact`: 1.32 s -> 0.04 s for the
        replay's APH). One compiled call for all of them
        (:func:`fattorus.topology.dragonfly_pairs.router_hop_sums`)."""
        from fattorus.topology.dragonfly_pairs import router_hop_sums  # numba, loaded on first need

        return router_hop_sums(allocs, self.nodes_per_router, self.router_distance)

    @functools.cached_property
    def max_hops(self) -> int:
        """Largest entry of the router distance table (at most 2 + 1 + 2 = 5)."""
        return int(self.router_distance.max())

    def max_hops_of(self, nodes: np.ndarray) -> int:
        """Largest hop count between two of ``nodes`` (0 for fewer than two): the router
        distance table over the job's distinct routers, one compiled pass that stops at the
        diameter (:func:`fattorus.topology.dragonfly_pairs.max_router_hops`)."""
        from fattorus.topology.dragonfly_pairs import max_router_hops  # numba, loaded on first need

        (nodes,) = self.node_ids(nodes)
        r = np.unique(np.asarray(nodes, np.int64).ravel() // self.nodes_per_router)
        return int(max_router_hops(r, self.router_distance, self.max_hops)) if len(r) > 1 else 0

    def hop_sum(self, nodes, valid):
        """``sum_{i != j} H`` of one padded allocation (jit-traceable): for widths up to the
        router count the pairwise gather from the distance table, beyond it the allocation's
        router histogram ``h`` against the table, ``h^T D h`` (``O(routers^2)``, no ``W^2``)."""
        jnp = _jnp()
        nodes, valid = jnp.asarray(nodes), jnp.asarray(valid)
        r = jnp.where(valid, nodes, 0) // self.nodes_per_router
        D = jnp.asarray(self.router_distance).astype(int)  # JAX's default integer: int64 under x64
        if nodes.shape[-1] <= self.n_routers:  # static: whichever is less work for this width
            both = valid[:, None] & valid[None, :]
            return jnp.sum(jnp.where(both, D[r[:, None], r[None, :]], 0))
        h = jnp.zeros(self.n_routers, int).at[r].add(valid.astype(int))
        return h @ (D @ h)

    def ideal_allocation(self, n: int) -> np.ndarray:
        """The most compact ``n``-node placement found on the empty machine (router ids
        ascending, whole routers first): the least hop sum among the first ``n`` node ids
        (kept where it ties), a greedy growth from router 0 (each next router the nearest to
        those taken, by summed distance), and for ``m`` groups (from the fewest that hold
        ``n`` to two more) whole groups with the rest in one more, or ``n`` split evenly —
        each group filled from its first router, row by row — over groups chosen one by one
        (every first group for two), since under the inter-group wiring which groups matter;
        then moved one node at a time while that lowers the hop sum (:func:`compact.descend`).
        A local optimum: no single-node move lowers it, but not proven the global one."""
        n = self.job_size(n)
        if n not in self._ideal_cache:
            self._ideal_cache[n] = self._most_compact(n)
        return self._ideal_cache[n].copy()

    def ideal_placements(self, n: int) -> tuple[np.ndarray, ...]:
        """The first ``n`` node ids: the bandwidth model's ideal candidate, as before the APH
        ideal became a search (session 17), so no model result moved."""
        return (np.arange(self.job_size(n)),)

    @functools.cached_property
    def _ideal_cache(self) -> dict[int, np.ndarray]:
        return {}

    @functools.cached_property
    def _distance_f64(self) -> np.ndarray:
        """:attr:`router_distance` as float64, for BLAS products (sums stay exact integers)."""
        return self.router_distance.astype(np.float64)

    def _hist_sum(self, h: np.ndarray) -> int:
        """Hops over ordered node pairs of a router histogram ``h`` (``h @ D @ h``, exact: every
        partial sum is an integer far below 2**53)."""
        hf = h.astype(np.float64)
        return int(round(float(hf @ (self._distance_f64 @ hf))))

    def _most_compact(self, n: int) -> np.ndarray:
        p, R, A, G = self.nodes_per_router, self.n_routers, self.routers_per_group, self.groups
        first = np.bincount(np.arange(n) // p, minlength=R).astype(np.int64)
        if n <= p:
            return np.arange(n)
        cands = [first, self._greedy(n)]
        m0 = -(-n // (A * p))
        # Within one group every router is at most 2 hops from another and a second group is
        # farther: group layouts only for jobs larger than a group.
        for m in range(m0, min(G, m0 + 2) + 1) if m0 >= 2 else ():
            for layout in (self._fill_groups, self._split_groups):
                h = self._grow_groups(n, m, layout)
                if h is not None:
                    cands.append(h)
        sums = [self._hist_sum(h) for h in cands]
        best = cands[int(np.argmin(sums))]  # argmin: the first ids where they tie
        from fattorus.topology import compact  # numba, loaded on first need

        h, moves = compact.descend(best, p, *self._descent_factors)
        if best is first and moves == 0:
            return np.arange(n)
        return compact.nodes_of(h, p)  # router ids ascending

    @functools.cached_property
    def _descent_factors(self) -> tuple[np.ndarray, np.ndarray]:
        """The router distance table as :func:`compact.descend` takes it (one factor: router id
        and table), made once rather than copied for every job size."""
        return np.arange(self.n_routers)[None], self.router_distance.astype(np.int64)[None]

    @functools.cached_property
    def _greedy_order(self) -> np.ndarray:
        """Routers in the order of a greedy growth from router 0, each next the router of least
        summed distance to those taken (ties: lowest id). Computed once: the growth for ``n``
        nodes takes whole routers in this order, so every size's is a prefix of it."""
        D = self.router_distance.astype(np.int64)
        s, used = np.zeros(self.n_routers, np.int64), np.zeros(self.n_routers, bool)
        order = []
        for i in range(self.n_routers):
            r = 0 if i == 0 else int(np.argmin(np.where(used, np.iinfo(np.int64).max, s)))
            order.append(r)
            used[r] = True
            s += D[:, r]
        return np.asarray(order)

    def _greedy(self, n: int) -> np.ndarray:
        """Router histogram of the greedy growth for ``n`` nodes (:attr:`_greedy_order`; the
        last router takes what is left)."""
        p = self.nodes_per_router
        full, rest = divmod(n, p)
        h = np.zeros(self.n_routers, np.int64)
        h[self._greedy_order[:full]] = p
        if rest:
            h[self._greedy_order[full]] = rest
        return h

    def _fill_groups(self, n: int, groups: list[int]) -> list[int] | None:
        """Node counts of whole groups in order, the last holding what is left (None if the
        groups cannot hold ``n``)."""
        cap = self.routers_per_group * self.nodes_per_router
        counts = [min(cap, max(0, n - i * cap)) for i in range(len(groups))]
        return counts if sum(counts) == n else None

    def _split_groups(self, n: int, groups: list[int]) -> list[int] | None:
        """Node counts of ``n`` spread evenly over the groups (None if a share does not fit)."""
        m = len(groups)
        counts = [n // m + (1 if i < n % m else 0) for i in range(m)]
        return counts if max(counts) <= self.routers_per_group * self.nodes_per_router else None

    def _groups_histogram(self, groups: list[int], counts: list[int]) -> np.ndarray:
        """Router histogram: each group filled from its first router (row by row)."""
        p, A = self.nodes_per_router, self.routers_per_group
        h = np.zeros(self.n_routers, np.int64)
        for g, c in zip(groups, counts):
            full, rest = divmod(c, p)
            h[g * A:g * A + full] = p
            if rest:
                h[g * A + full] = rest
        return h

    @functools.cached_property
    def _block_prefix(self) -> np.ndarray:
        """``(G, G, A + 1, A + 1)`` prefix sums of the distance blocks between groups:
        ``[g, g', i, j]`` = hops summed over the first ``i`` routers of ``g`` and the first
        ``j`` of ``g'``. A group layout's hop sum is then a few lookups per pair of groups."""
        G, A = self.groups, self.routers_per_group
        blocks = self.router_distance.astype(np.int64).reshape(G, A, G, A).transpose(0, 2, 1, 3)
        out = np.zeros((G, G, A + 1, A + 1), np.int64)
        out[:, :, 1:, 1:] = blocks.cumsum(2).cumsum(3)
        return out

    def _layout_sum(self, groups: list[int], counts: list[int]) -> int:
        """Hop sum over ordered node pairs of :meth:`_groups_histogram` ``(groups, counts)``,
        from :attr:`_block_prefix`: a group is ``p`` nodes on each of its first ``f`` routers
        and ``r`` on the next."""
        p, C, D = self.nodes_per_router, self._block_prefix, self.router_distance
        A = self.routers_per_group
        parts = [(g, *divmod(c, p)) for g, c in zip(groups, counts)]
        at, dist = C.item, D.item  # scalar reads without array indexing (this is the search's loop)
        total = 0
        for g, f, r in parts:
            for h, e, s in parts:
                both = at(g, h, f, e)
                total += p * p * both
                if s:  # the other group's partial router against this group's full ones
                    total += p * s * (at(g, h, f, e + 1) - both)
                if r:
                    total += r * p * (at(g, h, f + 1, e) - both)
                    if s:
                        total += r * s * dist(g * A + f, h * A + e)
        return total

    def _grow_groups(self, n: int, m: int, layout) -> np.ndarray | None:
        """Router histogram of ``layout`` over ``m`` groups chosen one at a time (each the one
        that keeps the placement most compact), from group 0, or from every group when ``m``
        is 2; None if no choice holds ``n``."""
        best = None
        for start in (range(self.groups) if m == 2 else (0,)):
            groups = [start]
            while len(groups) < m:
                scored = [(self._layout_sum(groups + [g], counts), g) for g in range(self.groups) if g not in groups
                          for counts in (layout(n, groups + [g]),) if counts is not None]
                if not scored:
                    break
                groups.append(min(scored)[1])
            counts = layout(n, groups) if len(groups) == m else None
            if counts is not None:
                s = self._layout_sum(groups, counts)
                if best is None or s < best[0]:
                    best = (s, groups, counts)
        return None if best is None else self._groups_histogram(best[1], best[2])

    def ideal_aph(self, n: int) -> float:
        """APH of :meth:`ideal_allocation`: its router histogram against the distance table."""
        n = self.job_size(n)
        if n <= 1:
            return 0.0
        h = np.bincount(self.ideal_allocation(n) // self.nodes_per_router, minlength=self.n_routers).astype(np.int64)
        return self._hist_sum(h) / (n * (n - 1))

    # Links ---------------------------------------------------------------------------------
    @property
    def link_class_names(self) -> tuple[str, ...]:
        """``node-router`` (injection/ejection, no hop) then ``green``, ``black``, ``blue``."""
        return CLASSES

    @property
    def _green_base(self) -> int:
        return 2 * self.n_nodes

    @property
    def _black_base(self) -> int:
        return self._green_base + self.n_routers * (self.cols - 1) * self.green_per_pair

    @property
    def _blue_base(self) -> int:
        return self._black_base + self.n_routers * (self.rows - 1) * self.black_per_pair

    @property
    def _slots_used(self) -> int:
        """``S = m (G - 1)``: bundle slots in use per group."""
        return self.bundles_per_group_pair * max(self.groups - 1, 0)

    @property
    def n_links(self) -> int:
        """Injection and ejection per node, then one directed link per cable and direction."""
        return self._blue_base + self.groups * self._slots_used * self.blue_per_bundle

    @functools.cached_property
    def link_class(self) -> np.ndarray:
        """Class index of each link (:data:`CLASSES`)."""
        sizes = (self._green_base, self._black_base - self._green_base, self._blue_base - self._black_base,
                 self.n_links - self._blue_base)
        return np.repeat(np.arange(4, dtype=np.int32), sizes)

    def link_bundles(self) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`cable_bundles`: a router pair's parallel cables are one link for the flow model."""
        return self.cable_bundles

    @functools.cached_property
    def cable_bundles(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first, count)``, each ``(n_links,)``: for every link the id of the first of the
        parallel cables joining the same two vertices in the same direction (its bundle), and
        how many cables that bundle holds (1 for node links and single cables). For models in
        which a router pair joined by ``k`` cables is one link of ``k`` times the bandwidth
        (``machines.md``) — Aries spreads packets over parallel links — while :meth:`routes`
        puts each hop on one cable, ``(src + dst) mod k``."""
        ends = self.link_ends
        _, first, inverse, count = np.unique(ends, axis=0, return_index=True, return_inverse=True,
                                             return_counts=True)
        inverse = inverse.reshape(-1)
        return first[inverse].astype(np.int32), count[inverse].astype(np.int32)

    @functools.cached_property
    def link_ends(self) -> np.ndarray:
        """``(n_links, 2)`` tail and head vertex ids (nodes ``0..N-1``, router ``r`` is ``N + r``)."""
        N, p, R, C = self.n_nodes, self.nodes_per_router, self.rows, self.cols
        nodes = np.arange(N)
        up = np.stack([nodes, N + nodes // p], axis=1)
        parts = [up, up[:, ::-1]]
        r = np.arange(self.n_routers)
        _, i, j = self.router_coords(r)
        # green: r -> the jj-th other router of its row, green_per_pair times
        jj = np.arange(C - 1)
        head = r[:, None] - j[:, None] + jj[None, :] + (jj[None, :] >= j[:, None])
        parts.append(_cables(N + r[:, None], N + head, self.green_per_pair))
        ii = np.arange(R - 1)
        head = r[:, None] + (ii[None, :] + (ii[None, :] >= i[:, None]) - i[:, None]) * C
        parts.append(_cables(N + r[:, None], N + head, self.black_per_pair))
        if self._slots_used:
            g, s = np.divmod(np.arange(self.groups * self._slots_used), self._slots_used)
            t, n = self._slot_bundle(s)
            h = t + (t >= g)
            tail = g * self.routers_per_group + s // self.bundles_per_router
            parts.append(_cables(N + tail[:, None], N + self._gateway(h, g, n)[:, None], self.blue_per_bundle))
        return np.concatenate(parts).astype(np.int64)

    @functools.cached_property
    def link_bandwidth(self) -> np.ndarray:
        """Bandwidth of each link (one cable), GB/s: its colour's; node-router links the fastest."""
        per_class = np.array([max(self.bandwidth), *self.bandwidth])
        return per_class[self.link_class]

    # Routes --------------------------------------------------------------------------------
    def _local_hops(self, a, b, black_first: bool = False) -> list[tuple[Any, Any, int]]:
        """The (at most two) hops of the local route from router ``a`` to router ``b`` of the
        same group: green along ``a``'s row to ``b``'s column, then black along that column to
        ``b``'s row (``black_first``: black along ``a``'s column to ``b``'s row, then green
        along that row — the other minimal path, which adaptive routing may take). Each hop as
        ``(present, link id of its cable 0, number of cables)``."""
        R, C = self.rows, self.cols
        ia, ja = (a // C) % R, a % C
        ib, jb = (b // C) % R, b % C
        if black_first:
            mid = a + (ib - ia) * C  # (row of b, column of a)
            black = self._black_base + (a * (R - 1) + ib - (ib > ia)) * self.black_per_pair
            green = self._green_base + (mid * (C - 1) + jb - (jb > ja)) * self.green_per_pair
            return [(ia != ib, black, self.black_per_pair), (ja != jb, green, self.green_per_pair)]
        green = self._green_base + (a * (C - 1) + jb - (jb > ja)) * self.green_per_pair
        mid = a + jb - ja  # (row of a, column of b)
        black = self._black_base + (mid * (R - 1) + ib - (ib > ia)) * self.black_per_pair
        return [(ja != jb, green, self.green_per_pair), (ia != ib, black, self.black_per_pair)]

    def _blue_hop(self, g, h, n) -> tuple[Any, int]:
        """Link id of cable 0 of bundle ``n`` from group ``g`` towards ``h``, and the cable count."""
        s = self._slot(self._other_index(g, h), n)
        return self._blue_base + (g * max(self._slots_used, 1) + s) * self.blue_per_bundle, self.blue_per_bundle

    def _minimal_hops(self, xp, ra, rb, n, black_first: bool = False) -> list[tuple[Any, Any, int]]:
        """Hops of the minimal route from router ``ra`` to ``rb`` taking bundle ``n`` when they
        are in different groups: local to the gateway, blue, local from the far gateway (both
        local parts black first when ``black_first``)."""
        A = self.routers_per_group
        ga, gb = ra // A, rb // A
        other = ga != gb
        if self.groups < 2:
            return self._local_hops(ra, rb, black_first)
        u = self._gateway(ga, gb, n)
        v = self._gateway(gb, ga, n)
        blue, k = self._blue_hop(ga, gb, n)
        first = self._local_hops(ra, xp.where(other, u, rb), black_first)
        second = [(present & other, link, kk) for present, link, kk in self._local_hops(v, rb, black_first)]
        return [*first, (other, blue, k), *second]

    def _pad(self, xp, src, dst, hops: list[tuple[Any, Any, int]], width: int):
        """Injection, the present hops (each on cable ``(src + dst) mod k``), ejection, packed
        to the front of ``(..., width)`` link ids, ``-1`` padded; empty for ``src == dst`` or
        a negative end."""
        N, p = self.n_nodes, self.nodes_per_router
        s, d = xp.maximum(src, 0), xp.maximum(dst, 0)
        true = xp.ones(s.shape, bool)
        entries = [(true, s)] + [(present, link + (s + d) % k) for present, link, k in hops] + [(true, N + d)]
        t = xp.arange(width)
        out = xp.full(s.shape + (width,), -1, np.int32)
        pos = xp.zeros(s.shape, np.int32)
        for present, link in entries:
            here = (t == pos[..., None]) & present[..., None]
            out = xp.where(here, link[..., None], out)
            pos = pos + present.astype(np.int32)
        valid = (src >= 0) & (dst >= 0) & (src != dst)
        return xp.where(valid[..., None], out, -1).astype(np.int32)

    @property
    def max_route_links(self) -> int:
        """Injection + the longest minimal route + ejection."""
        return 2 + self.max_hops

    def routes(self, src, dst, black_first: bool = False):
        """Minimal static routes of a batch of node pairs: ``(..., max_route_links)`` link ids,
        ``-1`` padded (module docstring for the choices); jit-traceable. ``black_first``: the
        other minimal route, every local part black then green (same gateways and cables)."""
        jnp = _jnp()
        src, dst = self.node_ids(src, dst, padded=True)
        src, dst = jnp.asarray(src), jnp.asarray(dst)
        p = self.nodes_per_router
        ra, rb = jnp.maximum(src, 0) // p, jnp.maximum(dst, 0) // p
        n = self._gather(self.bundle_choice, ra, rb)
        return self._pad(jnp, src, dst, self._minimal_hops(jnp, ra, rb, n, black_first), self.max_route_links)

    def flow_routes(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, routing: str = "static",
                    seed: int | np.random.Generator = 0) -> np.ndarray:
        """:meth:`Topology.flow_routes`; ``valiant``: each flow through an intermediate group
        drawn uniformly among the groups other than its source's and destination's (the
        minimal route within one group, or where no such group exists) (:meth:`valiant_routes`),
        ``5 + max_hops`` slots. The draw is a hash of ``(seed, src, dst)``: a node pair takes the same group
        in every solve of a run (a job alone, in its placement among others), whatever else
        is routed beside it (a generator gives the hash one draw of its stream)."""
        if routing != "valiant":
            return super().flow_routes(src, dst, nbytes, routing, seed)
        if isinstance(seed, np.random.Generator):
            seed = int(seed.integers(2**62))
        src, dst = (np.asarray(a, np.int64) for a in self.node_ids(src, dst))
        per_group = self.routers_per_group * self.nodes_per_router
        ga, gb = src // per_group, dst // per_group
        lo, hi = np.minimum(ga, gb), np.maximum(ga, gb)
        # Groups left once the flow's own two are taken out; a flow within one group keeps
        # its minimal route (a detour through another group only lengthens it).
        choices = np.where(ga != gb, self.groups - 2, 0)
        draw = np.floor(_pair_uniform(seed, src, dst) * np.maximum(choices, 1)).astype(np.int64)
        via = draw + (draw >= lo)  # skip the excluded groups, lowest first
        via = via + ((via >= hi) & (ga != gb))
        via = np.where(choices > 0, via, ga)  # none left: the source's group gives the minimal route
        return np.asarray(self.valiant_routes(src, dst, via), np.int32)

    def valiant_routes(self, src, dst, intermediate_group):
        """Non-minimal (Valiant) routes through ``intermediate_group`` (broadcasting):
        minimal from the source router to a router of the intermediate group, then minimal
        from there to the destination. The router reached is the far end of the bundle whose
        gateway is nearest the source (ties by ``(r_src + r_dst) mod count``). When the
        intermediate group is the source's or the destination's the route is the minimal one.
        ``(..., 5 + max_hops)`` link ids, ``-1`` padded; jit-traceable."""
        jnp = _jnp()
        src, dst = jnp.asarray(src), jnp.asarray(dst)
        via = jnp.asarray(intermediate_group)
        src, dst, via = jnp.broadcast_arrays(src, dst, via)
        p, A, m = self.nodes_per_router, self.routers_per_group, self.bundles_per_group_pair
        ra, rb = jnp.maximum(src, 0) // p, jnp.maximum(dst, 0) // p
        ga, gb = ra // A, rb // A
        detour = (via != ga) & (via != gb) & (via >= 0) & (via < self.groups)
        if m == 0:  # one group: nothing to detour through
            detour = jnp.zeros_like(detour)
            n1 = jnp.zeros_like(ra)
        else:
            R, C = self.rows, self.cols
            u = jnp.asarray(self.gateways)[ga, jnp.where(detour, via, 0)]  # (..., m) towards via
            cost = ((ra[..., None] // C) % R != (u // C) % R).astype(jnp.int32) + (ra[..., None] % C != u % C)
            tied = cost == cost.min(axis=-1, keepdims=True)
            rank = (ra + rb) % tied.sum(axis=-1)
            n1 = jnp.argmax(tied & (jnp.cumsum(tied, axis=-1) == (rank + 1)[..., None]), axis=-1)
        target = jnp.where(detour, via, (ga + 1) % max(self.groups, 1))  # any other group where no detour
        u1 = self._gateway(ga, target, n1)
        blue, k = self._blue_hop(ga, target, n1)
        w = jnp.where(detour, self._gateway(target, ga, n1), ra)  # the router reached in the intermediate group
        first = [(present & detour, link, kk) for present, link, kk in self._local_hops(ra, u1)]
        n2 = self._gather(self.bundle_choice, w, rb)
        hops = [*first, (detour, blue, k), *self._minimal_hops(jnp, w, rb, n2)]
        return self._pad(jnp, src, dst, hops, 5 + self.max_hops)

    def job_links(self, nodes: np.ndarray) -> np.ndarray:
        """Router links that the minimal routes between any two of the job's routers can use,
        every parallel cable of each hop included (a route picks one by its node ids, so this
        covers every node pair a job may have on those routers).

        Exact and without routing every pair: within a group a route is green from the source
        to any column of the job's routers there, then black from any of their rows to the
        destination; between groups each pair's bundle fixes its links, so the ``u^2`` bundle
        choices of the ``u`` routers are reduced to the distinct (router, gateway), (group,
        group, bundle) and (gateway, router) pairs before any link is marked — one compiled
        loop (:func:`fattorus.topology.dragonfly_pairs.job_link_mask`)."""
        from fattorus.topology.dragonfly_pairs import job_link_mask  # numba, loaded on first need

        (nodes,) = self.node_ids(nodes)
        r = np.unique(np.asarray(nodes, np.int64) // self.nodes_per_router)
        if len(r) < 2:
            return np.zeros(self.n_links, bool)
        return job_link_mask(r, self._job_link_tables, self._group_bundles)

    @functools.cached_property
    def _group_bundles(self) -> np.ndarray:
        """:func:`fattorus.topology.dragonfly_pairs.group_bundles` of this machine."""
        from fattorus.topology.dragonfly_pairs import group_bundles

        return group_bundles(self.bundle_choice, self.routers_per_group, self.groups, self.bundles_per_group_pair)

    def host_routes(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Minimal routes computed on the host
        (:func:`fattorus.topology.dragonfly_host_routes.host_routes`)."""
        from fattorus.topology import dragonfly_host_routes  # numba, loaded on first need

        src, dst = self.node_ids(src, dst, padded=True)  # as routes: an id past the machine is one line
        return dragonfly_host_routes.host_routes(self._job_link_tables, self.nodes_per_router, self.n_nodes,
                                                 self.max_route_links, src, dst)

    @functools.cached_property
    def _job_link_tables(self) -> Any:
        """:class:`fattorus.topology.dragonfly_pairs.JobLinkTables` of this machine."""
        from fattorus.topology.dragonfly_pairs import JobLinkTables

        G, m = self.groups, self.bundles_per_group_pair
        g, h, n = np.meshgrid(np.arange(G), np.arange(G), np.arange(m), indexing="ij")
        other = g != h
        blue = np.zeros((G, G, m), np.int64)  # the diagonal g == h is never read
        blue[other] = self._blue_hop(g[other], h[other], n[other])[0]
        choice = self.bundle_choice
        if not np.array_equal(choice, choice.T):  # the compiled job_links relies on it (both ways alike)
            raise AssertionError(f"dragonfly {self.name!r}: bundle choice differs between a pair's two directions")
        return JobLinkTables(self.n_links, G, self.rows, self.cols, m, self._green_base, self.green_per_pair,
                             self._black_base, self.black_per_pair, choice, self.gateways, blue, self.blue_per_bundle)

    # Configuration -------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Full configuration (``kind`` included) that rebuilds this dragonfly."""
        return {"kind": self.kind, "name": self.name, "groups": self.groups, "rows": self.rows, "cols": self.cols,
                "nodes_per_router": self.nodes_per_router, "green_per_pair": self.green_per_pair,
                "black_per_pair": self.black_per_pair, "blue_per_bundle": self.blue_per_bundle,
                "bundles_per_router": self.bundles_per_router, "bandwidth": list(self.bandwidth),
                "arrangement": self.arrangement}

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> Dragonfly:
        """Build from a mapping; unknown, missing or bad keys are one-line errors naming them."""
        data = dict(cfg)
        name = str(data.get("name", "?"))
        allowed = {f.name for f in dataclasses.fields(cls)} | {"kind", "description"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise TopologyError(f"topology {name!r}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        missing = [k for k in ("name", "groups", "rows", "cols") if k not in data]
        if missing:
            raise TopologyError(f"topology {name!r}: missing key(s) {missing}")
        data.pop("kind", None)
        data.pop("description", None)
        if isinstance(data.get("bandwidth"), list):
            data["bandwidth"] = tuple(data["bandwidth"])
        return cls(**data)


def _cables(tail: np.ndarray, head: np.ndarray, k: int) -> np.ndarray:
    """``(len * k, 2)`` link ends: each ``(tail, head)`` pair (broadcast to one shape) repeated
    for its ``k`` parallel cables, cable index fastest (the link-id order)."""
    tail, head = np.broadcast_arrays(tail, head)
    ends = np.stack([tail.ravel(), head.ravel()], axis=1)
    return np.repeat(ends, k, axis=0)


def _pair_uniform(seed: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A uniform in ``[0, 1)`` per ``(seed, src, dst)``: SplitMix64's finaliser of the three
    mixed (wrapping uint64 arithmetic), its top 53 bits."""
    with np.errstate(over="ignore"):  # the wrap is the hash
        x = (np.full(np.shape(src), int(seed) & 0xFFFFFFFFFFFFFFFF, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             ^ src.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9) ^ dst.astype(np.uint64) * np.uint64(0x94D049BB133111EB))
        for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            x = (x ^ (x >> np.uint64(shift))) * np.uint64(mult)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)
