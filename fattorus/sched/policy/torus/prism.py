"""``prism``: the topology-aware Moab policy of the torus paper (Section III-B), on any 3D torus.

A job gets a right prism of routers whose extent in each dimension is either the whole ring
or at most half of it. Under dimension-order routing (shorter way round each ring) the
traffic between two routers of such a prism never leaves it, so prisms that share no router
share no link: no two running jobs interfere. Service nodes, nodes of another type and the
nodes the job does not need stay idle inside its prism; no other job may use its routers.

Shapes are all allowed ``(a, b, c)`` router extents holding at least ``n`` slots, taken in
order of size. Every free position of one shape is found at once from wrap-around summed-
volume tables of the machine (blocked routers; free usable nodes per router): a prism may
start at ``(x, y, z)`` iff it holds no blocked router and at least ``n`` free usable nodes.
The minimal shapes for ``n`` (no extent can step down to a smaller allowed one) are tried
first; only when none fits are all shapes tried, in order of size, stopping once shapes grow
beyond ``slack`` times the smallest that fits. A shape with no blocked-free position at all
rules out every larger shape containing it.

Among the positions found, the placement maximises a weighted score of named heuristics
(:class:`PrismParams`; ties: smaller shape, then lower start router id):

* ``fill`` — ``n`` / free usable nodes in the prism (how completely the job fills it);
* ``bisection`` — the prism's bisection bandwidth per slot, relative to the best shape of
  the machine (y links at half speed make 2:1:2 slabs best on Blue Waters);
* ``contact`` — the share of the one-router shell around the prism that is already blocked
  (a prism snug against busy routers leaves what stays free in one piece: less fragmentation).

Within the prism the job takes the free usable nodes in prism-local order (x slowest, z
fastest), preferred nodes first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy
from fattorus.sched.policy.space import FloatRange, Param

HEURISTICS = ("fill", "bisection", "contact")


@dataclasses.dataclass(frozen=True)
class PrismParams:
    """Tunable heuristics of :class:`Prism` (config ``policy.params``).

    Attributes:
      fill, bisection, contact: weights of the heuristics in the score (module docstring).
      slack: shapes are tried up to ``slack`` times the slots of the smallest shape that fits.
      internal: let a job that fits on one router (``n <= nodes per router``: its traffic never
        leaves the router) take idle nodes inside a running prism first (the paper's Moab
        option for a prism's internal idle nodes). Not tuned.
    """

    fill: float = 1.0
    bisection: float = 1.0
    contact: float = 0.5
    slack: float = 2.0
    internal: bool = False

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any]) -> PrismParams:
        """From config; unknown names or non-numbers are one-line ``ValueError``s."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise ValueError(f"policy 'prism' takes {sorted(names)}, got unknown {unknown}")
        try:
            internal = params.get("internal", False)
            if not isinstance(internal, bool):
                raise ValueError
            out = cls(**{k: float(v) for k, v in params.items() if k != "internal"}, internal=internal)
        except (TypeError, ValueError):
            raise ValueError(f"policy 'prism': weights and slack must be numbers, internal true/false, "
                             f"got {dict(params)}") from None
        if out.slack < 1 or min(out.fill, out.bisection, out.contact) < 0:
            raise ValueError(f"policy 'prism': weights must be >= 0 and slack >= 1, got {dict(params)}")
        return out

    @classmethod
    def search_space(cls) -> tuple[Param, ...]:
        """The tunable space (:mod:`fattorus.sched.policy.space`): each weight in [0, 2],
        ``slack`` in [1, 4]."""
        return (*(FloatRange(h, 0.0, 2.0) for h in HEURISTICS), FloatRange("slack", 1.0, 4.0))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The defaults as a config mapping."""
        return dataclasses.asdict(cls())

    @classmethod
    def describe(cls, params: Mapping[str, Any]) -> str:
        """``fill=1.00 bisection=1.00 contact=0.50 slack=2.00`` (``internal`` is not tuned)."""
        return " ".join(f"{k}={float(params[k]):.2f}" for k in (*HEURISTICS, "slack"))


def allowed_extents(n: int) -> np.ndarray:
    """Prism extents on a ring of ``n`` routers: ``1 .. n // 2`` and the whole ring ``n``."""
    return np.unique(np.r_[np.arange(1, n // 2 + 1), n])


def bisection_per_slot(shapes: np.ndarray, dims: tuple[int, int, int], bandwidth: tuple[float, ...],
                       nodes_per_router: int) -> np.ndarray:
    """Bisection bandwidth of each prism shape ``(S, 3)`` per node slot (relative units).

    Cutting a prism across dimension ``d`` in half cuts the links of its cross-section
    (``volume / extent_d`` of them, twice when the prism spans the whole ring: the wrap-around
    closes it), each of dimension ``d``'s bandwidth; the bisection is the weakest cut over the
    dimensions the prism extends in (a single router: the fastest link, nothing to cut).
    """
    shapes = np.asarray(shapes, np.float64)
    vol = shapes.prod(axis=1)
    cuts = []
    for d in range(3):
        ring = np.where(shapes[:, d] == dims[d], 2.0 if dims[d] > 2 else 1.0, 1.0)
        cut = vol / shapes[:, d] * ring * bandwidth[d]
        cuts.append(np.where(shapes[:, d] > 1, cut, np.inf))
    bis = np.min(cuts, axis=0)
    bis = np.where(np.isfinite(bis), bis, max(bandwidth))
    return bis / (vol * nodes_per_router)


def summed_volume(grid: np.ndarray, dtype=np.int32) -> np.ndarray:
    """Wrap-around summed-volume table of a 3D ``grid``: ``(2X+1, 2Y+1, 2Z+1)`` prefix sums of
    the grid tiled twice per axis, so any wrapped box sum is eight lookups."""
    tiled = np.pad(grid.astype(dtype), [(0, n) for n in grid.shape], mode="wrap")
    table = np.zeros(tuple(s + 1 for s in tiled.shape), dtype)
    table[1:, 1:, 1:] = tiled.cumsum(0).cumsum(1).cumsum(2)
    return table


def box_sums(table: np.ndarray, shape: tuple[int, int, int], starts: tuple[int, int, int]) -> np.ndarray:
    """Sum over the wrapped box of ``shape`` starting at every position ``(x, y, z)`` with
    ``x < starts[0]`` etc.: ``(starts)`` array, from a :func:`summed_volume` table."""
    a, b, c = shape
    nx, ny, nz = starts

    def at(i: int, j: int, k: int) -> np.ndarray:
        return table[i:i + nx, j:j + ny, k:k + nz]

    return (at(a, b, c) - at(0, b, c) - at(a, 0, c) - at(a, b, 0)
            + at(0, 0, c) + at(0, b, 0) + at(a, 0, 0) - at(0, 0, 0))


#: ``both`` tables pack two counts in one int64: free usable nodes + blocked routers << PACK,
#: so that one box sum answers both questions (why: the box sums are the search's cost).
PACK = 32


@dataclasses.dataclass(frozen=True)
class Machine:
    """What the search reads off one machine state: routers blocked by running prisms or
    busy usable nodes, and free usable nodes per router, as grids and summed-volume tables
    (``both``: the two packed; ``shell``: blocked routers with the grid shifted by one router
    in every dimension, so a box starting one router before a prism is a plain box sum)."""

    blocked: np.ndarray
    avail: np.ndarray
    both: np.ndarray
    shell: np.ndarray


class Prism(Policy):
    """Non-interfering right prisms under the half-or-full rule; see the module docstring."""

    name = "prism"
    families = ("torus3d",)
    needs = None  # no count test: EASY's shadow time comes from place() on future machines

    def __init__(self, topo: Any, params: PrismParams | None = None) -> None:
        super().__init__(topo)
        self.params = params or PrismParams()
        ext = [allowed_extents(n) for n in topo.dims]
        shapes = np.stack(np.meshgrid(*ext, indexing="ij"), -1).reshape(-1, 3)
        self.slots = shapes.prod(axis=1) * topo.nodes_per_router
        bis = bisection_per_slot(shapes, topo.dims, topo.bandwidth, topo.nodes_per_router)
        self.bisection = bis / bis.max()
        order = np.lexsort((shapes[:, 2], shapes[:, 1], shapes[:, 0], -self.bisection, self.slots))
        self.shapes, self.slots, self.bisection = shapes[order], self.slots[order], self.bisection[order]
        # Slots of each shape with one extent stepped down to the next smaller allowed one (0 if
        # none): a shape is minimal for n when it holds n and no such step still does.
        shrunk = []
        for d in range(3):
            prev = np.r_[0, ext[d]][np.searchsorted(ext[d], self.shapes[:, d])]
            smaller = self.shapes.copy()
            smaller[:, d] = prev
            shrunk.append(smaller.prod(axis=1) * topo.nodes_per_router)
        self.shrunk_slots = np.max(shrunk, axis=0)
        self.usable = np.ones(topo.n_nodes, bool)
        self.machine: st.MachineState | None = None
        self.running: dict[bytes, np.ndarray] = {}  # job nodes -> its prism's routers (bool)
        self.pending: dict[bytes, np.ndarray] = {}  # placements not started (yet)
        self.shape_of: dict[bytes, tuple[int, ...]] = {}  # pending placements' (x, y, z, a, b, c)
        # (job nodes, (x, y, z, a, b, c)) of every start, in order: what tests and reports read.
        self.started_prisms: list[tuple[np.ndarray, tuple[int, ...]]] = []
        self._cache: dict[tuple, Any] = {}  # machine tables and searches, per machine and records
        self._rev = [0, 0]  # changes of the running / pending records (cache keys)
        self._min_usable: dict[int, int] = {}  # per shape: fewest usable slots at any position
        self._usable_table = self._table_of_usable()

    # Engine hooks ----------------------------------------------------------------------------
    def reset(self, machine: st.MachineState) -> None:
        """A replay starts: the free nodes now are the usable ones; no prism is running."""
        self.machine, self.usable = machine, machine.free.copy()
        self.running, self.pending, self.shape_of, self.started_prisms = {}, {}, {}, []
        self._cache, self._rev, self._min_usable = {}, [0, 0], {}
        self._usable_table = self._table_of_usable()

    def _table_of_usable(self) -> np.ndarray:
        """Summed-volume table of usable slots per router (for the search's bounds)."""
        R, p = self.topo.n_routers, self.topo.nodes_per_router
        return summed_volume(self.usable.reshape(R, p).sum(axis=1).reshape(self.topo.dims))

    def started(self, nodes: np.ndarray) -> None:
        """The placement on ``nodes`` started: its prism is running; hypothetical ones are dropped."""
        key = _key(nodes)
        self.running[key] = self.pending[key]
        self.started_prisms.append((np.asarray(nodes), self.shape_of[key]))
        self._forget()

    def ended(self, nodes: np.ndarray) -> None:
        """The job on ``nodes`` ended: its prism is free again."""
        self.running.pop(_key(nodes), None)
        self._forget()

    def _forget(self) -> None:
        """The running prisms changed: drop hypothetical placements and every cached answer."""
        self.pending, self.shape_of, self._cache = {}, {}, {}
        self._rev = [self._rev[0] + 1, 0]

    # Placement -------------------------------------------------------------------------------
    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0) -> np.ndarray | None:
        """The job's nodes in the best free prism (module docstring), or None."""
        if n > int(np.count_nonzero(state.free & self.usable)):
            return None
        if self.params.internal and n <= self.topo.nodes_per_router:
            inside = self._inside_a_prism(state, n, prefer)
            if inside is not None:
                return inside
        real = state is self.machine
        # Why cache: EASY asks about the same machine many times per pass (head, shadow-time
        # bisection, backfill candidates); the answer depends only on the free nodes and on the
        # prisms that count there (the running ones; on a hypothetical machine also pending).
        mkey = (state.free.tobytes(), self._rev[0], True if real else self._rev[1])  # exact, no hash collisions
        if (mkey, n) not in self._cache:
            if mkey not in self._cache:
                self._cache[mkey] = self._machine(state)
            self._cache[(mkey, n)] = self._search(self._cache[mkey], n)
        found = self._cache[(mkey, n)]
        if found is None:
            return None
        start, shape = found
        routers = self._prism_routers(start, shape)
        nodes = self._nodes_in(state, routers, n, prefer)
        mask = np.zeros(self.topo.n_routers, bool)
        mask[routers] = True
        key = _key(nodes)
        if key not in self.pending:
            self.pending[key] = mask
            self.shape_of[key] = (*start, *shape)
            self._rev[1] += 1
        return nodes

    def _inside_a_prism(self, state: st.MachineState, n: int, prefer: np.ndarray | None) -> np.ndarray | None:
        """``n`` free usable nodes of one router inside a running prism (lowest router id), or
        None. The job books no prism: its traffic stays inside its router."""
        R, p = self.topo.n_routers, self.topo.nodes_per_router
        free = (state.free & self.usable).reshape(R, p)
        hosts = np.flatnonzero(self._owned(state, self.running) & (free.sum(axis=1) >= n))
        if len(hosts) == 0:
            return None
        nodes = hosts[0] * p + np.flatnonzero(free[hosts[0]])
        if prefer is not None:
            nodes = np.concatenate([nodes[prefer[nodes]], nodes[~prefer[nodes]]])
        nodes = nodes[:n].astype(np.int64)
        key = _key(nodes)
        if key not in self.pending:
            self.pending[key] = np.zeros(R, bool)
            self.shape_of[key] = (-1, -1, -1, 0, 0, 0)  # no prism of its own
            self._rev[1] += 1
        return nodes

    def _owned(self, state: st.MachineState, records: dict[bytes, np.ndarray]) -> np.ndarray:
        """``(R,)`` routers of the recorded prisms that hold on ``state``: a prism holds while its
        job's nodes are busy there (a future machine frees them)."""
        owned = np.zeros(self.topo.n_routers, bool)
        for key, routers in records.items():
            if not state.free[np.frombuffer(key, np.int64)].any():
                owned |= routers
        return owned

    def _machine(self, state: st.MachineState) -> Machine:
        topo, p = self.topo, self.topo.nodes_per_router
        R = topo.n_routers
        busy = (~state.free & self.usable).reshape(R, p).any(axis=1)
        # On a hypothetical machine the reservation's (pending) prism counts too.
        records = self.running if state is self.machine else {**self.running, **self.pending}
        blocked = (busy | self._owned(state, records)).reshape(topo.dims)
        avail = (state.free & self.usable).reshape(R, p).sum(axis=1).reshape(topo.dims)
        packed = avail.astype(np.int64) + (blocked.astype(np.int64) << PACK)
        shifted = np.roll(blocked, (1, 1, 1), axis=(0, 1, 2))
        return Machine(blocked, avail, summed_volume(packed, np.int64), summed_volume(shifted))

    def _search(self, m: Machine, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Best ``(start, shape)``, or None: first among the minimal shapes for ``n`` (no extent
        can step down), which fit whenever no service or busy node is in the way; only if none
        fits, among every shape in order of size (module docstring). Feasibility is the same
        either way — some shape fits — so it stays monotone in ``n``."""
        minimal = np.flatnonzero((self.slots >= n) & (self.shrunk_slots < n))
        # Best bound first: no position of a shape can fill better than n over its fewest
        # usable slots at any position, nor touch more than its whole shell.
        bound = np.array([self._upper_bound(i, n) for i in minimal])
        by_bound = np.argsort(-bound, kind="stable")
        return (self._best(m, n, minimal[by_bound], slack=False, bound=bound[by_bound])
                or self._best(m, n, np.flatnonzero(self.slots >= n), slack=True))

    def _upper_bound(self, i: int, n: int) -> float:
        """Largest score shape ``i`` can reach for an ``n``-node job on any machine state."""
        if i not in self._min_usable:
            shape = tuple(int(s) for s in self.shapes[i])
            starts = tuple(1 if s == d else d for s, d in zip(shape, self.topo.dims))
            self._min_usable[i] = int(box_sums(self._usable_table, shape, starts).min())
        prm = self.params
        return prm.fill * min(1.0, n / max(self._min_usable[i], 1)) + prm.bisection * self.bisection[i] + prm.contact

    def _best(self, m: Machine, n: int, candidates: np.ndarray, slack: bool,
              bound: np.ndarray | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Best ``(start, shape)`` among ``candidates`` (shape indices; with ``bound``, their
        upper bounds in descending order, and the walk stops once no later shape can win)."""
        dims = self.topo.dims
        dead: list[np.ndarray] = []
        best, best_key, limit = None, None, np.inf
        for k, i in enumerate(candidates):
            if self.slots[i] > limit:
                break
            if bound is not None and best_key is not None and bound[k] < -best_key[0] - 1e-12:
                break
            shape = tuple(int(s) for s in self.shapes[i])
            if dead and np.any(np.all(np.asarray(dead) <= self.shapes[i], axis=1)):
                continue
            starts = tuple(1 if s == d else d for s, d in zip(shape, dims))  # a whole ring: one start
            both = box_sums(m.both, shape, starts)
            clear = both >> PACK == 0
            if not clear.any():
                dead.append(self.shapes[i])
                continue
            avail = both & ((1 << PACK) - 1)
            ok = clear & (avail >= n)
            if not ok.any():
                continue
            if limit == np.inf and slack:
                limit = self.params.slack * self.slots[i]
            prm = self.params
            # Bound before the costly contact term (at most 1): skip shapes that cannot win.
            base = np.where(ok, prm.fill * n / np.maximum(avail, 1), -np.inf) + prm.bisection * self.bisection[i]
            if best_key is not None and -(base.max() + prm.contact) > best_key[0]:
                continue
            score = base + prm.contact * self._contact(m, shape, starts) if prm.contact else base
            pos = np.flatnonzero(score == score.max())[0]  # lowest start id among the best
            key = (-float(score.max()), int(self.slots[i]))
            if best_key is None or key < best_key:
                best_key, best = key, (tuple(int(c) for c in np.unravel_index(pos, starts)), shape)
        return best

    def _contact(self, m: Machine, shape: tuple[int, int, int], starts: tuple[int, int, int]) -> np.ndarray:
        """Blocked share of the one-router shell around the prism at every start."""
        dims = self.topo.dims
        grown = tuple(min(s + 2, d) if s < d else s for s, d in zip(shape, dims))
        shell = int(np.prod(grown) - np.prod(shape))
        if shell == 0:
            return np.zeros(starts)
        # The shell starts one router before the prism: a box on the grid shifted by one. A whole
        # ring (s == d) has no shell in that dimension and any start gives the same sum.
        return box_sums(m.shell, grown, starts) / shell

    def _prism_routers(self, start: tuple[int, int, int], shape: tuple[int, int, int]) -> np.ndarray:
        """Router ids of the prism, in prism-local order (x slowest, z fastest)."""
        X, Y, Z = self.topo.dims
        xs, ys, zs = ((o + np.arange(s)) % d for o, s, d in zip(start, shape, (X, Y, Z)))
        return ((xs[:, None, None] * Y + ys[None, :, None]) * Z + zs[None, None, :]).ravel()

    def _nodes_in(self, state: st.MachineState, routers: np.ndarray, n: int,
                  prefer: np.ndarray | None) -> np.ndarray:
        p = self.topo.nodes_per_router
        nodes = (routers[:, None] * p + np.arange(p)).ravel()
        nodes = nodes[state.free[nodes] & self.usable[nodes]]
        if prefer is not None:
            nodes = np.concatenate([nodes[prefer[nodes]], nodes[~prefer[nodes]]])
        return nodes[:n].astype(np.int64)


def _key(nodes: np.ndarray) -> bytes:
    """A placement's identity: its node ids, sorted."""
    return np.sort(np.asarray(nodes, np.int64)).tobytes()
