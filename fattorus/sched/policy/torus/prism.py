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
* ``bisection`` — the prism's bisection bandwidth per slot, relative to the best of the shapes
  that hold the job (y links at half speed make 2:1:2 slabs best on Blue Waters). Why per job
  size: bisection per slot falls with a prism's volume, so against the machine's best shape (a
  single router) every prism of a hundred nodes or more scored under 0.09 and the term hardly
  told shapes apart where it matters (session 19);
* ``contact`` — the share of the one-router shell around the prism that is already blocked
  (a prism snug against busy routers leaves what stays free in one piece: less fragmentation).

Within the prism the job takes the free usable nodes in prism-local order (x slowest, z
fastest), preferred nodes first.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from fattorus.args import did_you_mean
from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy, first_fit_among
from fattorus.sched.policy.space import FloatRange, Param

HEURISTICS = ("fill", "bisection", "contact")

#: Machine states whose search tables and answers are kept, least recently used dropped. Why
#: keep them past a change of the running prisms: EASY keeps asking about the same few states
#: (the held machine, the future machines of the shadow-time bisection) across passes — on a
#: month of Atlas fit to Blue Waters, 11,350 questions about 1,024 distinct states, nearly
#: every repeat within the last 16 (the tables of 16 Blue Waters states take ~30 MB).
MACHINES_KEPT = 16
#: Kept machines (most recently asked about first) a new machine state learns from.
INHERIT_FROM = 4
#: Prisms (start, shape) whose routers and usable nodes are kept (:meth:`Prism._prism`): EASY
#: places the same answer many times (cached answers of kept machines).
PRISMS_KEPT = 256


@dataclasses.dataclass(frozen=True)
class PrismParams:
    """Tunable heuristics of :class:`Prism` (config ``policy.params``).

    Attributes:
      fill, bisection, contact: weights of the heuristics in the score (module docstring).
      slack: shapes are tried up to ``slack`` times the slots of the smallest shape that fits.
      internal: let a job that fits on one router (``n <= nodes per router``: its traffic never
        leaves the router) take idle nodes inside a running prism first (the paper's Moab
        option for a prism's internal idle nodes). Not tuned.
      internal_ends_first: with ``internal``, only inside a prism whose job ends (by its
        estimate) no earlier than the small job would: the paper's "limits on the run time" of
        such jobs, so that none outlives its host and keeps the host's routers from the next
        prism. Not tuned.
      block_other_kinds: routers holding a compute node of another kind than the job's (Blue
        Waters' XK block, for XE jobs) count as busy: no prism may hold them. Off (the issue's
        rule: such nodes inside a prism are left idle). Why an option: a replay holds only
        one kind's jobs, so the other kind's region is always idle and an XE prism can take it
        at no cost, which on the real machine its own jobs would use; on is the other bound.
        Service nodes never block. With jobs of several kinds in one replay (``by_job``) the
        kinds are always kept apart (another kind's nodes are never free in a job's view of
        the machine), option or not. Not tuned.
    """

    fill: float = 1.0
    bisection: float = 1.0
    contact: float = 0.5
    slack: float = 2.0
    internal: bool = False
    block_other_kinds: bool = False
    internal_ends_first: bool = False

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any]) -> PrismParams:
        """From config; unknown names or non-numbers are one-line ``ValueError``s."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            hint = did_you_mean(unknown[0], sorted(names))
            raise ValueError(f"policy 'prism' takes {sorted(names)}, got unknown {unknown}{hint}")
        flags = ("internal", "block_other_kinds", "internal_ends_first")
        try:
            if not all(isinstance(params.get(k, False), bool) for k in flags):
                raise ValueError
            out = cls(**{k: (v if k in flags else float(v)) for k, v in params.items()})
        except (TypeError, ValueError):
            raise ValueError(f"policy 'prism': weights and slack must be numbers, internal, block_other_kinds and "
                             f"internal_ends_first true/false, got {dict(params)}") from None
        numbers = (out.fill, out.bisection, out.contact, out.slack)
        # NaN compares false with everything, so it passed the bounds (and broke the scoring).
        if not all(math.isfinite(v) for v in numbers) or out.slack < 1 or min(out.fill, out.bisection, out.contact) < 0:
            raise ValueError(f"policy 'prism': weights must be finite numbers >= 0 and slack a finite number >= 1, "
                             f"got {dict(params)}")
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
        """``fill=1.00 bisection=1.00 contact=0.50 slack=2.00`` (the flags are not tuned)."""
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


def summed_volume(grid: np.ndarray, dtype=np.int32, reach: tuple[int, ...] | None = None) -> np.ndarray:
    """Wrap-around summed-volume table of a 3D ``grid``: prefix sums of the grid tiled so that
    any wrapped box of extents up to ``reach`` (per axis; default the whole grid) starting
    inside the grid is eight lookups. Shape ``(X + rx + 1, Y + ry + 1, Z + rz + 1)``.

    Built from the grid's own prefix sums, then extended along each axis by
    ``T[X + i] = T[X] + T[i]`` (the tiled rows repeat the grid): why not a cumsum of the tiled
    grid — the search builds one table per machine state, and this is ~15x cheaper at
    Blue Waters' size with ``reach`` = half a ring.
    """
    g = grid.astype(dtype)
    rx, ry, rz = g.shape if reach is None else reach
    t = np.zeros(tuple(s + 1 for s in g.shape), dtype)
    t[1:, 1:, 1:] = g.cumsum(0).cumsum(1).cumsum(2)
    t = np.concatenate([t, t[-1:] + t[1:1 + rx]], axis=0)
    t = np.concatenate([t, t[:, -1:] + t[:, 1:1 + ry]], axis=1)
    return np.concatenate([t, t[:, :, -1:] + t[:, :, 1:1 + rz]], axis=2)


def box_sums(table: np.ndarray, shape: tuple[int, int, int], starts: tuple[int, int, int]) -> np.ndarray:
    """Sum over the wrapped box of ``shape`` starting at every position ``(x, y, z)`` with
    ``x < starts[0]`` etc.: ``(starts)`` array, from a :func:`summed_volume` table.

    The inclusion-exclusion of the eight corners, done one axis at a time (three differences
    instead of seven sums of strided slices: ~2x faster, and this is the search's inner loop).
    """
    a, b, c = shape
    nx, ny, nz = starts
    # Only the rows the later differences read (the table reaches past them): less to subtract.
    d = table[a:a + nx, :b + ny, :c + nz] - table[:nx, :b + ny, :c + nz]
    d = d[:, b:b + ny] - d[:, :ny]
    return d[:, :, c:c + nz] - d[:, :, :nz]


def box_sums_at(table: np.ndarray, shape: tuple[int, int, int], starts: tuple[np.ndarray, ...]) -> np.ndarray:
    """Sum over the wrapped box of ``shape`` at the given starts only (``(x, y, z)`` index
    arrays), from a :func:`summed_volume` table: eight gathers per start."""
    a, b, c = shape
    x, y, z = starts
    return (table[x + a, y + b, z + c] - table[x, y + b, z + c] - table[x + a, y, z + c] - table[x + a, y + b, z]
            + table[x, y, z + c] + table[x, y + b, z] + table[x + a, y, z] - table[x, y, z])


def packing(n_routers: int, nodes_per_router: int) -> tuple[int, type]:
    """``(shift, dtype)`` of the ``both`` tables, which pack two counts in one integer — free
    usable nodes + (blocked routers << shift) — so that one box sum answers both questions (why:
    the box sums are the search's cost). int32 when both counts of the whole machine fit in 31
    bits (Blue Waters: 15 + 14): the tables' prefix sums may wrap around, but every box sum is
    exact, since it is computed modulo 2**32 and its true value lies in [0, 2**31)."""
    shift = int(n_routers * nodes_per_router).bit_length()
    return shift, (np.int32 if shift + int(n_routers).bit_length() <= 31 else np.int64)


@dataclasses.dataclass
class Machine:
    """What the search reads off one machine state: routers blocked by running prisms or
    busy usable nodes, and free usable nodes per router, as grids and summed-volume tables
    (``both``: the two packed); and what the searches on it have learnt so far.

    ``dead`` marks the shapes no search may place here: one with a blocked router at every
    position, and every shape containing it (searches on one machine share what they learn).
    ``found``: job size -> the search's ``(start, shape)`` or None. ``fits`` / ``fails``: the
    largest size known to fit, the smallest known not to (feasibility is monotone in size).
    ``slabs``: the first differences of ``both`` along x per (x extent, x starts), shared by
    the box sums of every shape of that x extent (:meth:`box_sums`)."""

    blocked: np.ndarray
    avail: np.ndarray
    both: np.ndarray
    dead: np.ndarray  # (shapes,) bool, filled in by the searches: no clear position here
    found: dict[int, Any] = dataclasses.field(default_factory=dict)
    fits: float = 0
    fails: float = np.inf
    slabs: dict[tuple[int, int], np.ndarray] = dataclasses.field(default_factory=dict)

    def box_sums(self, shape: tuple[int, int, int], starts: tuple[int, int, int]) -> np.ndarray:
        """:func:`box_sums` of ``both``, sharing the first difference (along x, the largest)
        among the shapes of equal x extent asked about on this machine."""
        a, b, c = shape
        nx, ny, nz = starts
        d = self.slabs.get((a, nx))
        if d is None:
            d = self.slabs[(a, nx)] = self.both[a:a + nx] - self.both[:nx]
        d = d[:, b:b + ny, :c + nz] - d[:, :ny, :c + nz]
        return d[:, :, c:c + nz] - d[:, :, :nz]

    @property
    def n_blocked(self) -> int:
        """Blocked routers in the whole machine (a shell never holds more)."""
        return int(np.count_nonzero(self.blocked))


class Prism(Policy):
    """Non-interfering right prisms under the half-or-full rule; see the module docstring."""

    name = "prism"
    families = ("torus3d",)
    needs = None  # no count test: EASY's shadow time comes from earliest_fit (or fits on future machines)
    reads_counts = False  # only the free nodes (and the recorded prisms)

    def __init__(self, topo: Any, params: PrismParams | None = None) -> None:
        super().__init__(topo)
        self.params = params or PrismParams()
        # A small job's place inside a prism then depends on its estimated end, not on its size alone.
        self.until_dependent = self.params.internal and self.params.internal_ends_first
        ext = [allowed_extents(n) for n in topo.dims]
        shapes = np.stack(np.meshgrid(*ext, indexing="ij"), -1).reshape(-1, 3)
        self.slots = shapes.prod(axis=1) * topo.nodes_per_router
        bis = bisection_per_slot(shapes, topo.dims, topo.bandwidth, topo.nodes_per_router)
        self.bisection = bis / bis.max()
        order = np.lexsort((shapes[:, 2], shapes[:, 1], shapes[:, 0], -self.bisection, self.slots))
        self.shapes, self.slots, self.bisection = shapes[order], self.slots[order], self.bisection[order]
        # Best bisection among the shapes from each one on (shapes are in order of size): the
        # best of the shapes that hold n is best_from[first shape with slots >= n].
        self.best_from = np.maximum.accumulate(self.bisection[::-1])[::-1]
        # Slots of each shape with one extent stepped down to the next smaller allowed one (0 if
        # none): a shape is minimal for n when it holds n and no such step still does.
        shrunk = []
        for d in range(3):
            prev = np.r_[0, ext[d]][np.searchsorted(ext[d], self.shapes[:, d])]
            smaller = self.shapes.copy()
            smaller[:, d] = prev
            shrunk.append(smaller.prod(axis=1) * topo.nodes_per_router)
        self.shrunk_slots = np.max(shrunk, axis=0)
        grown = np.where(self.shapes < np.asarray(topo.dims), np.minimum(self.shapes + 2, np.asarray(topo.dims)),
                         self.shapes)
        self.shell = grown.prod(axis=1) - self.shapes.prod(axis=1)  # routers around each shape
        # Farthest a box reaches past a start inside the grid: half a ring plus the shell (a whole
        # ring has one start), so the machine tables need no more.
        self.reach = tuple(min(d, d // 2 + 2) for d in topo.dims)
        self.pack, self.pack_dtype = packing(topo.n_routers, topo.nodes_per_router)
        self.pack_udtype = np.uint32 if self.pack_dtype == np.int32 else np.uint64
        # Python tuples of each shape and of its start grid (a whole ring: one start), made once:
        # the search loop visits thousands of shapes per replay.
        self.shape_t = [tuple(int(v) for v in s) for s in self.shapes]
        self.starts_t = [tuple(1 if v == d else d for v, d in zip(s, topo.dims)) for s in self.shape_t]
        self.usable = np.ones(topo.n_nodes, bool)
        self._foreign = np.zeros(topo.n_routers, bool)  # see _other_kind_routers
        self.machine: st.MachineState | None = None
        self.running: dict[bytes, np.ndarray] = {}  # job nodes -> its prism's routers (bool)
        # Per router, the first node of the running job whose prism holds it (-1: none). Running
        # prisms share no router, and a job's nodes are freed together on every state the engine
        # asks about, so a prism holds there iff that one node is busy (see _owned).
        self._holder = np.full(topo.n_routers, -1, np.int64)
        self._holder_until = np.full(topo.n_routers, np.inf)  # per router, its prism's job's estimated end (s)
        self.pending: dict[bytes, np.ndarray] = {}  # placements not started (yet)
        self.shape_of: dict[bytes, tuple[int, ...]] = {}  # pending placements' (x, y, z, a, b, c)
        self._held_key: bytes | None = None  # the reservation EASY holds (see holding)
        self._kept = False  # whether a forget kept it (then the hold's end drops it)
        # (job nodes, (x, y, z, a, b, c)) of every start, in order: what tests and reports read.
        self.started_prisms: list[tuple[np.ndarray, tuple[int, ...]]] = []
        # Machine key -> Machine (its content: free nodes and the routers recorded prisms own).
        self._machines: collections.OrderedDict[tuple[bytes, bytes], Machine] = collections.OrderedDict()
        self._keys: dict[tuple, tuple[bytes, bytes]] = {}  # (free nodes, record revisions) -> machine key
        self._rev = [0, 0]  # changes of the running / pending records
        self._back: dict[tuple[int, int, int], np.ndarray] = {}  # per start grid: see _one_back
        self._usable: dict[int, tuple[int, int]] = {}  # per shape: fewest, most usable slots at any position
        self._minimal_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per size: see _minimal
        self._usable_table = self._table_of_usable()
        # (start, shape) -> (router mask, usable nodes): see _prism.
        self._prisms: collections.OrderedDict[tuple[tuple[int, int, int], tuple[int, int, int]],
                                              tuple[np.ndarray, np.ndarray]] = collections.OrderedDict()

    # Engine hooks ----------------------------------------------------------------------------
    def reset(self, machine: st.MachineState) -> None:
        """A replay starts: the free nodes now are the usable ones; no prism is running."""
        self.machine, self.usable = machine, machine.free.copy()
        self._foreign = self._other_kind_routers()
        self.running, self.pending, self.shape_of, self.started_prisms = {}, {}, {}, []
        self._held_key, self._kept = None, False
        self._holder = np.full(self.topo.n_routers, -1, np.int64)
        self._holder_until = np.full(self.topo.n_routers, np.inf)
        self._machines, self._keys, self._rev, self._usable = collections.OrderedDict(), {}, [0, 0], {}
        self._minimal_of = {}
        self._usable_table = self._table_of_usable()
        self._prisms = collections.OrderedDict()

    def compiled_run(self, jobs: Any, queue: str, usable: np.ndarray | None, kind_nodes: np.ndarray | None,
                     runtime_at_start: Any, progress: Callable[[int], Any] | None = None) -> Any:
        """The whole replay compiled (:mod:`fattorus.sched.policy.torus.prism_compiled`: same
        decisions, ~3x faster on a month of a log fit to Blue Waters), where it covers the
        settings (not ``internal``, one node kind, run times not decided at start); else None."""
        from fattorus.sched.policy.torus import prism_compiled  # numba loads only when a prism replay runs

        # A subclass may decide otherwise (and its placements get the engine's checks).
        if type(self) is not Prism or not prism_compiled.supports(self, queue, kind_nodes, runtime_at_start):
            return None
        return prism_compiled.run(jobs, self.topo, queue, self, usable, progress)

    def _other_kind_routers(self) -> np.ndarray:
        """``(R,)`` routers that ``block_other_kinds`` keeps out of prisms: those holding a
        node that is neither usable here nor a service node (all False with the option off)."""
        R, p = self.topo.n_routers, self.topo.nodes_per_router
        if not self.params.block_other_kinds:
            return np.zeros(R, bool)
        names = np.asarray(self.topo.node_kind_names)[self.topo.node_kind]
        return (~self.usable & (names != "service")).reshape(R, p).any(axis=1)

    def _table_of_usable(self) -> np.ndarray:
        """Summed-volume table of usable slots per router (for the search's bounds)."""
        R, p = self.topo.n_routers, self.topo.nodes_per_router
        return summed_volume(self.usable.reshape(R, p).sum(axis=1).reshape(self.topo.dims))

    def started(self, nodes: np.ndarray, until_s: float = np.inf) -> None:
        """The placement on ``nodes`` started (to end by ``until_s``, s): its prism is running;
        hypothetical ones are dropped."""
        key = _key(nodes)
        self.running[key] = self.pending[key]
        self._holder[self.running[key]] = nodes[0]
        self._holder_until[self.running[key]] = until_s
        self.started_prisms.append((np.asarray(nodes), self.shape_of[key]))
        self._forget()

    def ended(self, nodes: np.ndarray) -> None:
        """The job on ``nodes`` ended: its prism is free again."""
        routers = self.running.pop(_key(nodes), None)
        if routers is not None:
            self._holder[routers] = -1
            self._holder_until[routers] = np.inf
        self._forget()

    def holding(self, nodes: np.ndarray | None) -> None:
        """EASY holds the blocked head's reserved ``nodes`` (None: no longer): their pending
        prism stays recorded across the backfill starts until then, so that a job that outlives
        the shadow time keeps off the whole prism, not only off the routers of ``nodes`` (spec
        `scheduling.md`: its placement must keep the head's future placement valid)."""
        if nodes is None and self._kept:
            # A start in the pass kept the reservation past a forget: drop it now, as any start
            # would have (the next pass reserves on a new machine, maybe elsewhere).
            self._held_key = None
            self._forget()
        self._held_key = None if nodes is None else _key(np.asarray(nodes))
        self._kept = False

    def _forget(self) -> None:
        """The running prisms changed: drop hypothetical placements but the held reservation's
        (:meth:`holding`). What was learnt about a machine state stays true: it is keyed by the
        state's content (:meth:`_machine_key`)."""
        kept = self._held_key if self._held_key in self.pending else None
        pending, shape_of = self.pending, self.shape_of
        self.pending, self.shape_of, self._keys = {}, {}, {}
        if kept is not None:
            self.pending[kept], self.shape_of[kept] = pending[kept], shape_of[kept]
        self._rev = [self._rev[0] + 1, 0 if kept is None else 1]
        self._kept = kept is not None

    # Placement -------------------------------------------------------------------------------
    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """The job's nodes in the best free prism (module docstring), or None."""
        if n > int(np.count_nonzero(state.free & self.usable)):
            return None
        if self.params.internal and n <= self.topo.nodes_per_router:
            inside = self._inside_a_prism(state, n, prefer, until_s)
            if inside is not None:
                return inside
        m = self._machine_of(state)
        if n >= m.fails:
            return None
        if n not in m.found:
            m.found[n] = self._search(m, n)
            _learn(m, n, m.found[n] is not None)
        found = m.found[n]
        if found is None:
            return None
        start, shape = found
        mask, usable_nodes = self._prism(start, shape)
        nodes = _take(usable_nodes, n, prefer)
        key = _key(nodes)
        if key not in self.pending:
            self.pending[key] = mask
            self.shape_of[key] = (*start, *shape)
            self._rev[1] += 1
        return nodes

    def fits(self, state: st.MachineState, n: int, waited_s: float = 0.0, until_s: float = np.inf) -> bool:
        """Whether :meth:`place` would place an ``n``-node job on ``state``: some allowed shape
        has a clear position with ``n`` free usable nodes. Stops at the first such shape (no
        scoring) and records no placement, so EASY's shadow-time bisection stays cheap."""
        if n > int(np.count_nonzero(state.free & self.usable)):
            return False
        if self.params.internal and n <= self.topo.nodes_per_router:
            return self.place(state, n, waited_s=waited_s, until_s=until_s) is not None
        return self._fits_on(self._machine_of(state), n)

    def _fits_on(self, m: Machine, n: int) -> bool:
        """Whether some allowed shape has a clear position with ``n`` free usable nodes on ``m``."""
        if n >= m.fails:
            return False
        if n <= m.fits:
            return True
        ok = any(not m.dead[i] and self._starts(m, n, i) is not None for i in np.flatnonzero(self.slots >= n))
        _learn(m, n, ok)
        return ok

    def earliest_fit(self, state: st.MachineState, n: int, release_s: np.ndarray, times: np.ndarray) -> float | None:
        """EASY's shadow time without building future machine states: the engine's bisection
        (:func:`fattorus.sched.policy.base.first_fit_among`, same probes) on the free nodes and
        held prisms at each probed time, read off each node's and each prism's release time.

        A node is free at ``t`` if it is free now or released by then; a running prism holds
        at ``t`` until its job's release (:meth:`_owned`). Machines are keyed as
        :meth:`_machine_key` keys the future states, so what is learnt here serves the
        reservation's placement and later passes. None (the engine bisects) when ``internal``
        may answer small jobs from inside a prism, or when placements not started are recorded
        (they would count on future machines too; EASY asks before any is recorded: a pass's
        placements start or fail before its head's reservation, and a start forgets the rest)."""
        if self.pending or (self.params.internal and n <= self.topo.nodes_per_router):
            return None
        holder = self._holder
        first = np.maximum(holder, 0)  # -1 (no prism) reads node 0, masked out
        free_all = state.free if state.free_all is None else state.free_all
        hold_until = np.where((holder >= 0) & ~free_all[first], release_s[first], -np.inf)
        usable = self.usable if state.allowed is None else self.usable & state.allowed  # a view: its kind's
        usable_now = int(np.count_nonzero(state.free & usable))

        def fits_at(t: float) -> bool:
            released = release_s <= t
            if state.allowed is not None:
                released &= state.allowed  # other kinds' nodes stay out of this job's view
            free = state.free | released
            if n > usable_now + int(np.count_nonzero(released & ~state.free & usable)):
                return False
            held = hold_until > t
            mkey = (np.packbits(free).tobytes(), np.packbits(held).tobytes())
            return self._fits_on(self._cached_machine(mkey, lambda: self._machine_from(free, held)), n)

        return first_fit_among(times, fits_at)

    def _machine_key(self, state: st.MachineState) -> tuple[bytes, bytes]:
        """Cache key of ``state``: its free nodes and the routers the recorded prisms own there
        (the running ones; on a hypothetical machine also pending), bit-packed. Why cache: EASY
        asks about the same machine many times per pass (head, shadow-time bisection, backfill
        candidates) and about the same future and held machines across passes; every answer
        depends on these two masks only. Exact, no hash collisions. The owned routers are worked
        out once per free-node set (with the whole machine's, on a view for one node kind: it
        says which other-kind prisms still hold) and revision of the records (``_keys``)."""
        hypothetical = self._hypothetical(state)
        # Bit-packed first: Python hashes a key's bytes, and 8x fewer bytes hash 8x faster.
        free = np.packbits(state.free).tobytes()
        free_all = b"" if state.free_all is None else np.packbits(state.free_all).tobytes()
        rkey = (free, free_all, self._rev[0], self._rev[1] if hypothetical else -1)
        if rkey not in self._keys:
            self._keys[rkey] = (free, np.packbits(self._owned(state, hypothetical)).tobytes())
        return self._keys[rkey]

    def _machine_of(self, state: st.MachineState) -> Machine:
        """The search tables of ``state`` and what was learnt on it (kept for the
        :data:`MACHINES_KEPT` states asked about last)."""
        return self._cached_machine(self._machine_key(state), lambda: self._machine(state))

    def _cached_machine(self, mkey: tuple[bytes, bytes], build: Callable[[], Machine]) -> Machine:
        """The kept machine of key ``mkey`` (:meth:`_machine_key`), or ``build()`` kept."""
        m = self._machines.get(mkey)
        if m is None:
            m = build()
            self._inherit(m)
            self._machines[mkey] = m
            if len(self._machines) > MACHINES_KEPT:
                self._machines.popitem(last=False)
        else:
            self._machines.move_to_end(mkey)
        return m

    def _inside_a_prism(self, state: st.MachineState, n: int, prefer: np.ndarray | None,
                        until_s: float = np.inf) -> np.ndarray | None:
        """``n`` free usable nodes of one router inside a running prism (lowest router id), or
        None; with ``internal_ends_first``, only a prism whose job ends no earlier than
        ``until_s`` (s). The job books no prism: its traffic stays inside its router."""
        R, p = self.topo.n_routers, self.topo.nodes_per_router
        free = (state.free & self.usable).reshape(R, p)
        host = self._owned(state, False)
        if self.params.internal_ends_first:
            host &= self._holder_until >= until_s
        held = self.pending.get(self._held_key) if self._held_key is not None else None
        if held is not None and self._hypothetical(state):
            # EASY asks on the machine with the blocked head's reserved nodes held (a backfill
            # job that outlives the shadow time): a running prism that ends by then may lie in
            # the head's reserved prism, and a job left on one of its routers would block that
            # prism at the shadow time (spec `scheduling.md`, step 3; session 47's exploratory run).
            free_all = state.free if state.free_all is None else state.free_all
            if not free_all[np.frombuffer(self._held_key, np.int64)].any():
                host &= ~held
        hosts = np.flatnonzero(host & (free.sum(axis=1) >= n))
        if len(hosts) == 0:
            return None
        nodes = _take((hosts[0] * p + np.flatnonzero(free[hosts[0]])).astype(np.int64), n, prefer)
        key = _key(nodes)
        if key not in self.pending:
            self.pending[key] = np.zeros(R, bool)
            self.shape_of[key] = (-1, -1, -1, 0, 0, 0)  # no prism of its own
            self._rev[1] += 1
        return nodes

    def _inherit(self, m: Machine) -> None:
        """Carry over to the new machine ``m`` what the searches learnt on the kept machines
        asked about last (:data:`INHERIT_FROM`) whose blocked routers ``m``'s contain, or are
        contained in.

        Every usable node of a router that is not blocked is free, so a clear prism holds the
        same free usable nodes on any machine: where a prism fits depends on the blocked
        routers alone. If every router blocked there is blocked in ``m`` (``m`` is that machine
        with jobs started or a reservation held), a shape blocked everywhere there is blocked
        everywhere in ``m`` and a size that failed there fails in ``m``; the other way round
        (jobs ended), a size that fit there fits in ``m``."""
        for other in list(reversed(self._machines.values()))[:INHERIT_FROM]:
            if not (other.blocked & ~m.blocked).any():
                m.dead |= other.dead
                m.fails = min(m.fails, other.fails)
            if not (m.blocked & ~other.blocked).any():
                m.fits = max(m.fits, other.fits)

    def _owned(self, state: st.MachineState, hypothetical: bool) -> np.ndarray:
        """``(R,)`` routers of the recorded prisms that hold on ``state``: a prism holds while its
        job's nodes are busy there (a future machine frees them). The running prisms in one
        gather (:attr:`_holder`); on a ``hypothetical`` machine also the pending ones, which may
        overlap each other (placements on different machines), one by one."""
        holder = self._holder
        free = state.free if state.free_all is None else state.free_all  # a job of another kind runs on
        owned = (holder >= 0) & ~free[np.maximum(holder, 0)]
        if hypothetical:
            for key, routers in self.pending.items():
                if not free[np.frombuffer(key, np.int64)].any():
                    owned |= routers
        return owned

    def _machine(self, state: st.MachineState) -> Machine:
        """The search tables of ``state`` (its free nodes; the recorded prisms holding there)."""
        return self._machine_from(state.free, self._owned(state, self._hypothetical(state)))

    def _hypothetical(self, state: st.MachineState) -> bool:
        """Whether ``state`` is not the real machine, nor one node kind's view of it (a view
        shares the real machine's free-node array as ``free_all``)."""
        return not (state is self.machine or (self.machine is not None and state.free_all is self.machine.free))

    def _machine_from(self, free_nodes: np.ndarray, owned: np.ndarray) -> Machine:
        """The search tables of the machine whose free nodes are ``free_nodes`` (``(N,)``) and
        whose routers ``owned`` (``(R,)``) are held by recorded prisms."""
        topo, p = self.topo, self.topo.nodes_per_router
        R = topo.n_routers
        # Per-router counts as sums over the p node columns: numpy reduces a length-p last axis
        # slowly, and this runs once per machine state.
        free = (free_nodes & self.usable).reshape(R, p).view(np.int8)
        busy = (~free_nodes & self.usable).reshape(R, p).view(np.int8)
        avail = free[:, 0].astype(np.int64)
        n_busy = busy[:, 0].astype(np.int64)
        for k in range(1, p):
            avail += free[:, k]
            n_busy += busy[:, k]
        # On a hypothetical machine the reservation's (pending) prism counts too.
        blocked = ((n_busy > 0) | owned | self._foreign).reshape(topo.dims)
        avail = avail.reshape(topo.dims)
        packed = avail + (blocked.astype(np.int64) << self.pack)
        return Machine(blocked, avail, summed_volume(packed, self.pack_dtype, self.reach),
                       np.zeros(len(self.shapes), bool))

    def _search(self, m: Machine, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Best ``(start, shape)``, or None: first among the minimal shapes for ``n`` (no extent
        can step down), which fit whenever no service or busy node is in the way; only if none
        fits, among every shape in order of size (module docstring). Feasibility is the same
        either way — some shape fits — so it stays monotone in ``n``."""
        return (self._best_first(m, n, *self._minimal(n))
                or self._in_size_order(m, n, np.flatnonzero(self.slots >= n)))

    def _minimal(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The minimal shapes for ``n`` in visiting order, with their machine-independent upper
        bounds (computed once per size: the same on every machine state)."""
        if n not in self._minimal_of:
            minimal = np.flatnonzero((self.slots >= n) & (self.shrunk_slots < n))
            # Visiting order (it settles which of equal shapes wins): best bound first — no
            # position of a shape can fill better than n over its fewest usable slots at any
            # position, nor touch more than its whole shell.
            bound = np.array([self._upper_bound(i, n) for i in minimal])
            by_bound = np.argsort(-bound, kind="stable")
            self._minimal_of[n] = minimal[by_bound], bound[by_bound]
        return self._minimal_of[n]

    def _upper_bound(self, i: int, n: int) -> float:
        """Largest score shape ``i`` can reach for an ``n``-node job on any machine state."""
        prm = self.params
        return (prm.fill * min(1.0, n / max(self._usable_range(i)[0], 1))
                + prm.bisection * self.bisection[i] / self._best_bisection(n) + prm.contact)

    def _best_bisection(self, n: int) -> float:
        """The best bisection per slot among the shapes that hold ``n`` slots."""
        return float(self.best_from[min(int(np.searchsorted(self.slots, n)), len(self.slots) - 1)])

    def bisection_for(self, n: int) -> np.ndarray:
        """Every shape's bisection per slot relative to the best of the shapes holding ``n``
        slots (the ``bisection`` term of an ``n``-node job; 1 for the best of them)."""
        return self.bisection / self._best_bisection(n)

    def _usable_range(self, i: int) -> tuple[int, int]:
        """Fewest and most usable slots of shape ``i`` at any position (machine-independent)."""
        if i not in self._usable:
            sums = box_sums(self._usable_table, self.shape_t[i], self.starts_t[i])
            self._usable[i] = int(sums.min()), int(sums.max())
        return self._usable[i]

    def _touch(self, m: Machine) -> np.ndarray:
        """This machine's contact bound per shape: a shell holds at most every blocked router."""
        return self.params.contact * np.minimum(1.0, m.n_blocked / np.maximum(self.shell, 1))

    def _starts(self, m: Machine, n: int, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Flat ids of the starts (ascending) where shape ``i`` holds no blocked router and at
        least ``n`` free usable nodes, and those nodes' count there; None if there are none
        (and, where the shape is blocked everywhere, it and every larger shape marked dead)."""
        if self._usable_range(i)[1] < n:  # too few usable slots anywhere, on any machine
            return None
        shape, starts = self.shape_t[i], self.starts_t[i]
        both = m.box_sums(shape, starts)
        # both < 1 << pack: no blocked router in the prism; then both = its free usable nodes.
        # n <= both < 1 << pack is one unsigned comparison.
        at = np.flatnonzero((both - n).view(self.pack_udtype) < (1 << self.pack) - n)
        if len(at):
            return at, both.ravel()[at]
        if both.min() >= 1 << self.pack:
            sx, sy, sz = shape
            m.dead[(self.shapes[:, 0] >= sx) & (self.shapes[:, 1] >= sy) & (self.shapes[:, 2] >= sz)] = True
        return None

    def _scored(self, m: Machine, n: int, i: int, at: np.ndarray, base: np.ndarray,
                touch: float) -> tuple[float, tuple[int, int, int]]:
        """Best score of shape ``i`` over the starts ``at`` (``base``: their fill and bisection
        terms) and the lowest start reaching it."""
        starts = self.starts_t[i]
        score = base + self.params.contact * self._contact(m, self.shape_t[i], starts, at) if touch else base
        top = score.max()
        pos = at[np.flatnonzero(score == top)[0]]
        return float(top), tuple(int(c) for c in np.unravel_index(pos, starts))

    def _best_first(self, m: Machine, n: int, candidates: np.ndarray,
                    bound: np.ndarray) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Best ``(start, shape)`` among ``candidates`` (shape indices with their machine-
        independent upper ``bound``s), or None.

        Best-first: a heap of upper bounds per shape, each tightened in two steps — the box sums
        give the fill term exactly (bound + this machine's contact bound), then the contact term
        the score. The walk stops once no bound reaches the best score, so only shapes that
        could tie or win are ever scored. The winner is the same as visiting every shape in
        ``candidates`` order: highest score, then fewest slots, then earliest in the order.
        """
        prm, touch, bisection = self.params, self._touch(m), self.bisection_for(n)
        heap = [(-(bound[k] - prm.contact + touch[i]), k, None) for k, i in enumerate(candidates)]
        heapq.heapify(heap)
        best, best_key = None, None
        while heap:
            neg_ub, k, data = heapq.heappop(heap)
            if best_key is not None and -neg_ub < -best_key[0] - 1e-12:
                break
            i = int(candidates[k])
            if data is None:  # first step: where the shape fits, and its fill term there
                if m.dead[i] or (found := self._starts(m, n, i)) is None:
                    continue
                at, avail = found
                base = prm.fill * n / avail + prm.bisection * bisection[i]
                heapq.heappush(heap, (-(base.max() + touch[i]), k, (at, base)))
                continue
            top, start = self._scored(m, n, i, *data, touch[i])
            key = (-top, int(self.slots[i]), k)
            if best_key is None or key < best_key:
                best_key, best = key, (start, self.shape_t[i])
        return best

    def _in_size_order(self, m: Machine, n: int,
                       candidates: np.ndarray) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
        """Best ``(start, shape)`` among ``candidates`` (shape indices in order of size) up to
        ``slack`` times the slots of the first that fits, or None."""
        prm, touch, bisection = self.params, self._touch(m), self.bisection_for(n)
        best, best_key, limit = None, None, np.inf
        for i in candidates:
            if self.slots[i] > limit:
                break
            if m.dead[i] or (found := self._starts(m, n, i)) is None:
                continue
            at, avail = found
            limit = min(limit, prm.slack * self.slots[i])
            base = prm.fill * n / avail + prm.bisection * bisection[i]
            # Bound before the costly contact term: skip shapes that cannot win.
            if best_key is not None and -(base.max() + touch[i]) > best_key[0] + 1e-12:
                continue
            top, start = self._scored(m, n, i, at, base, touch[i])
            key = (-top, int(self.slots[i]))
            if best_key is None or key < best_key:
                best_key, best = key, (start, self.shape_t[i])
        return best

    def _contact(self, m: Machine, shape: tuple[int, int, int], starts: tuple[int, int, int],
                 at: np.ndarray) -> np.ndarray:
        """Blocked share of the one-router shell around the prism at the starts ``at`` (flat ids
        into ``starts``)."""
        dims = self.topo.dims
        grown = tuple(min(s + 2, d) if s < d else s for s, d in zip(shape, dims))
        shell = math.prod(grown) - math.prod(shape)  # math.prod: np.prod of a tuple costs ~5 µs a call
        if shell == 0:
            return np.zeros(len(at))
        # The shell is the blocked part of the grown box starting one router before the prism
        # (a whole ring has no shell in that dimension: one start, no shift); the prism itself is
        # clear at every candidate start. Few candidate starts (a busy machine): eight gathers;
        # many: the dense box sums.
        if 16 * len(at) > math.prod(starts):
            # The grown boxes at every start, read one router back in each dimension the prism
            # does not span (a start grid of extent 1 is a whole ring) through a flat index map
            # made once per start grid: no per-candidate index arithmetic.
            both = m.box_sums(grown, starts).ravel()[self._one_back(starts)[at]]
        else:
            x = np.unravel_index(at, starts)
            lo = tuple((c - 1) % d if s < d else c for c, s, d in zip(x, shape, dims))
            both = box_sums_at(m.both, grown, lo)
        return (both >> self.pack) / shell

    def _one_back(self, starts: tuple[int, int, int]) -> np.ndarray:
        """Flat index map of a start grid: each start's flat id -> the flat id of the start one
        step back (wrapping) along every axis of extent > 1."""
        if starts not in self._back:
            grid = np.arange(math.prod(starts)).reshape(starts)
            axes = [ax for ax, k in enumerate(starts) if k > 1]
            self._back[starts] = np.roll(grid, [1] * len(axes), axis=axes).ravel() if axes else grid.ravel()
        return self._back[starts]

    def _prism_routers(self, start: tuple[int, int, int], shape: tuple[int, int, int]) -> np.ndarray:
        """Router ids of the prism, in prism-local order (x slowest, z fastest)."""
        X, Y, Z = self.topo.dims
        xs, ys, zs = ((o + np.arange(s)) % d for o, s, d in zip(start, shape, (X, Y, Z)))
        return ((xs[:, None, None] * Y + ys[None, :, None]) * Z + zs[None, None, :]).ravel()

    def _prism(self, start: tuple[int, int, int], shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """``(R,)`` router mask (read-only) and usable node ids in prism-local order of the
        prism, kept for the :data:`PRISMS_KEPT` prisms asked about last. Machine-independent,
        hence kept: a placement's prism is clear, and every usable node of a router that is not
        blocked is free (a busy one blocks it), so the job's candidates are its usable nodes."""
        key = (start, shape)
        found = self._prisms.get(key)
        if found is None:
            routers = self._prism_routers(start, shape)
            p = self.topo.nodes_per_router
            nodes = (routers[:, None] * p + np.arange(p)).ravel()
            mask = np.zeros(self.topo.n_routers, bool)
            mask[routers] = True
            mask.flags.writeable = False
            found = self._prisms[key] = (mask, nodes[self.usable[nodes]].astype(np.int64))
            if len(self._prisms) > PRISMS_KEPT:
                self._prisms.popitem(last=False)
        else:
            self._prisms.move_to_end(key)
        return found


def _learn(m: Machine, n: int, ok: bool) -> None:
    """Record that ``n`` nodes fit (or not) on ``m``: feasibility is monotone in ``n``
    (:meth:`Prism._search`), so every smaller job fits too, or every larger one fails."""
    if ok:
        m.fits = max(n, m.fits)
    else:
        m.fails = min(n, m.fails)


def _take(nodes: np.ndarray, n: int, prefer: np.ndarray | None) -> np.ndarray:
    """The first ``n`` of ``nodes`` (a copy), those in the ``prefer`` mask first."""
    if prefer is not None:
        nodes = np.concatenate([nodes[prefer[nodes]], nodes[~prefer[nodes]]])
    return nodes[:n].copy()


def _key(nodes: np.ndarray) -> bytes:
    """A placement's identity: its node ids in allocation order, as :meth:`Prism.place`
    returned them — the engine hands that same array to ``started`` and ``ended``. (Not sorted:
    sorting every placement of thousands of nodes was a tenth of a replay.)"""
    return np.asarray(nodes, np.int64).tobytes()
