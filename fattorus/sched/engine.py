"""The discrete-event scheduler engine: jobs, a queue discipline and an allocation policy.

``run(jobs, topo, queue=Easy(), policy=TopologyAware(topo))`` replays jobs sorted by
(submit, id) on ``topo``. The engine owns time and the machine: at each event time,
completions release their nodes first, then submissions join the queue, then the queue
discipline (:mod:`fattorus.sched.queues`) runs one scheduling pass, starting jobs through
:meth:`Replay.start_job` on node sets the policy (:mod:`fattorus.sched.policy`) chose. Jobs
run for ``runtime`` and the scheduler plans with ``estimate >= runtime``. The engine knows no
topology family and no policy or queue name.

A run time may also be decided when the job starts (``runtime_at_start``: a model of how its
placement and the jobs running beside it slow it down); it must stay within the job's
estimate, which is what EASY's reservations rely on.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy

if TYPE_CHECKING:  # queues build on this module's Replay
    from fattorus.sched.queues import Queue


@dataclasses.dataclass(frozen=True)
class Jobs:
    """The jobs of a replay, sorted by (submit, id): ``(n,)`` arrays.

    Attributes:
      submit, runtime, estimate: seconds; ``estimate >= runtime`` so EASY's reservations hold.
      nodes: requested nodes, each between 1 and the machine size.
    """

    submit: np.ndarray
    runtime: np.ndarray
    estimate: np.ndarray
    nodes: np.ndarray
    kind: np.ndarray | None = None  # (n,) row of the replay's kind_nodes each job runs on; None: one kind

    @classmethod
    def of(cls, submit, runtime, estimate, nodes, n_nodes: int, kind=None) -> Jobs:
        """Typed copies of the columns, checked (one-line ``ValueError``): a NaN time would
        never compare equal to an event time and stall the loop; columns of other lengths
        failed deep in the loop; jobs out of submit order started late without a word (the
        loop takes them in order); a fractional node count was cut down."""
        columns = {"submit": submit, "runtime": runtime, "estimate": estimate, "nodes": nodes,
                   **({} if kind is None else {"kind": kind})}
        lengths = {name: np.shape(c)[0] if np.ndim(c) == 1 else None for name, c in columns.items()}
        if len(set(lengths.values())) != 1 or None in lengths.values():
            raise ValueError(f"simulate: submit, runtime, estimate, nodes (and kind) must be 1-D arrays of one length, "
                             f"got {lengths}")
        raw_nodes = np.asarray(nodes)
        if raw_nodes.size and not np.array_equal(raw_nodes, np.round(raw_nodes)):
            raise ValueError("simulate: nodes must be whole numbers")
        jobs = cls(np.asarray(submit, np.float64), np.asarray(runtime, np.float64),
                   np.asarray(estimate, np.float64), np.asarray(nodes, np.int64),
                   None if kind is None else np.asarray(kind, np.int64))
        if np.any(np.diff(jobs.submit) < 0):
            raise ValueError("simulate: jobs must come sorted by submit time (then id), as replay() sorts them")
        ok = (np.all(np.isfinite(jobs.submit)) and np.all(np.isfinite(jobs.runtime)) and np.all(jobs.runtime > 0)
              and np.all(jobs.estimate >= jobs.runtime) and np.all((jobs.nodes >= 1) & (jobs.nodes <= n_nodes)))
        if len(jobs.submit) and not ok:
            raise ValueError("simulate: every job needs finite submit, runtime > 0, estimate >= runtime "
                             "and 1 <= nodes <= machine size")
        return jobs

    def __len__(self) -> int:
        return len(self.submit)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What one replay decided, per job (arrays aligned with the jobs).

    Attributes:
      start: ``(n,)`` start times, seconds.
      alloc: per job, its node ids in allocation order.
      backfilled: ``(n,)`` True where the job started ahead of a blocked queue head.
      shadow: ``(n,)`` the earliest shadow time computed while the job was the blocked queue
        head (NaN if it never was).
    """

    start: np.ndarray
    alloc: list[np.ndarray]
    backfilled: np.ndarray
    shadow: np.ndarray
    runtime: np.ndarray | None = None  # (n,) the run times the jobs ran for, seconds


#: ``runtime_at_start(replay, j, nodes, now) -> seconds``: job ``j``'s run time, decided as it
#: starts on ``nodes`` at ``now`` (the jobs running then are in ``replay``); at most its estimate.
RuntimeAtStart = Callable[["Replay", int, np.ndarray, float], float]


@dataclasses.dataclass
class Replay:
    """The mutable record of one replay: machine, queue window and per-job decisions.

    Jobs ``[lo, hi)`` may be waiting (``waiting``); jobs ``< hi`` have been submitted.
    ``version`` is bumped at every change of the machine, so a queue discipline can tell
    whether what it learnt in an earlier pass still holds.
    """

    jobs: Jobs
    policy: Policy
    machine: st.MachineState
    size_class: np.ndarray
    booked: np.ndarray
    start: np.ndarray
    alloc: list[np.ndarray]
    backfilled: np.ndarray
    shadow: np.ndarray
    waiting: np.ndarray
    node_est_end: np.ndarray
    releases: st.Releases = dataclasses.field(default_factory=st.Releases)  # node_est_end grouped by time
    running: list[tuple[float, int]] = dataclasses.field(default_factory=list)
    wakeups: list[float] = dataclasses.field(default_factory=list)
    version: int = 0
    lo: int = 0
    hi: int = 0
    bar: Any = None
    runtime_at_start: RuntimeAtStart | None = None
    runtime: np.ndarray | None = None  # (n,) run times as decided at start (a copy of the jobs')
    kind_nodes: np.ndarray | None = None  # (K, N) bool: the nodes each job kind may run on
    n_size_classes: int = 0  # size classes of the skip rule (per kind with kind_nodes)

    @classmethod
    def new(cls, jobs: Jobs, topo: Any, policy: Policy, usable: np.ndarray | None = None,
            kind_nodes: np.ndarray | None = None) -> Replay:
        """An empty machine (only its ``usable`` nodes free, default all; with ``kind_nodes``,
        the nodes of any kind) and no job submitted yet."""
        n = len(jobs)
        if kind_nodes is not None:
            kind_nodes = np.asarray(kind_nodes, bool)
            usable = kind_nodes.any(axis=0)
        machine = st.empty(topo, usable)
        policy.reset(machine)  # first: a policy's size classes may depend on the usable nodes
        size_class = np.asarray(policy.size_class(jobs.nodes), np.int64)
        C = st.n_classes(topo)
        booked = size_class.copy()  # the class each job is booked under: the links its placement can use; set at start
        if kind_nodes is not None:
            # Feasibility is monotone in the size only among jobs of one kind: one set of classes per kind.
            size_class = size_class + jobs.kind * (C + 1)
            C = len(kind_nodes) * (C + 1) - 1
        return cls(
            jobs=jobs, policy=policy, machine=machine, size_class=size_class,
            booked=booked, start=np.full(n, np.nan),
            alloc=[np.empty(0, np.int64)] * n, backfilled=np.zeros(n, bool), shadow=np.full(n, np.nan),
            waiting=np.zeros(n, bool), node_est_end=np.full(topo.n_nodes, np.inf), runtime=jobs.runtime.copy(),
            kind_nodes=kind_nodes, n_size_classes=C,
        )

    def view(self, state: st.MachineState, j: int) -> st.MachineState:
        """``state`` as job ``j`` sees it: itself with one node kind, else only its kind's nodes
        free (:func:`fattorus.sched.state.restricted`)."""
        if self.kind_nodes is None:
            return state
        return st.restricted(state, self.kind_nodes[self.jobs.kind[j]])

    def free_for(self, jobs: np.ndarray) -> np.ndarray | int:
        """Free nodes each of ``jobs`` could use now (its kind's), or the machine's free count."""
        if self.kind_nodes is None:
            return self.machine.n_free
        per_kind = np.count_nonzero(self.machine.free[None, :] & self.kind_nodes, axis=1)
        return per_kind[self.jobs.kind[jobs]]

    def start_job(self, j: int, placed: np.ndarray, now: float) -> None:
        """Start job ``j`` at ``now`` on the free nodes ``placed`` (checked: :func:`check_placement`)."""
        placed = check_placement(self.policy, placed, int(self.jobs.nodes[j]), self.view(self.machine, j), unique=False)
        self.booked[j] = self.policy.footprint(placed)
        st.allocate(self.machine, placed, int(self.booked[j]))
        if np.count_nonzero(self.machine.free) != self.machine.n_free:  # a node twice: booked once, counted twice
            raise ValueError(f"policy {self.policy.name!r} placed a job of {len(placed)} nodes on some node twice; "
                             "a placement's node ids are distinct")
        self.policy.started(placed, now + self.jobs.estimate[j])
        self.alloc[j] = placed
        self.start[j] = now
        self.waiting[j] = False
        self.node_est_end[placed] = now + self.jobs.estimate[j]
        keys = st.class_group_key(self.machine.layout, self.booked[j], placed)
        self.releases.add(now + self.jobs.estimate[j], j, keys)
        if self.runtime_at_start is not None:
            rt = float(self.runtime_at_start(self, j, placed, now))
            if not 0 < rt <= self.jobs.estimate[j]:
                raise ValueError(f"runtime_at_start gave job {j} {rt} s; it must be in (0, estimate]")
            self.runtime[j] = rt
        heapq.heappush(self.running, (now + self.runtime[j], j))
        self.version += 1
        if self.bar is not None:
            self.bar.update(1)

    def next_event(self) -> float:
        """The next event time: a submission, a completion or a wake-up."""
        hi, jobs = self.hi, self.jobs
        return min(jobs.submit[hi] if hi < len(jobs) else np.inf,
                   self.running[0][0] if self.running else np.inf,
                   self.wakeups[0] if self.wakeups else np.inf)

    def advance(self, now: float) -> None:
        """Consume the events at ``now``: wake-ups, then completions, then submissions."""
        while self.wakeups and self.wakeups[0] <= now:
            heapq.heappop(self.wakeups)
        while self.running and self.running[0][0] == now:
            _, j = heapq.heappop(self.running)
            st.release(self.machine, self.alloc[j], int(self.booked[j]))
            self.policy.ended(self.alloc[j])
            self.node_est_end[self.alloc[j]] = np.inf
            self.releases.drop(self.start[j] + self.jobs.estimate[j], j)
            self.version += 1
        submit = self.jobs.submit
        while self.hi < len(submit) and submit[self.hi] == now:
            self.waiting[self.hi] = True
            self.hi += 1

    def result(self) -> Schedule:
        """The per-job decisions."""
        return Schedule(self.start, self.alloc, self.backfilled, self.shadow, self.runtime)


#: Seconds between two progress lines of a replay whose stderr is no terminal.
progress_every_s = 5.0


def run(jobs: Jobs, topo: Any, queue: "Queue", policy: Policy, progress: bool = False,
        usable: np.ndarray | None = None, runtime_at_start: RuntimeAtStart | None = None,
        kind_nodes: np.ndarray | None = None, compiled: bool = True) -> Schedule:
    """Replay ``jobs`` on ``topo`` under queue discipline ``queue`` and allocation ``policy``.

    ``queue`` is a :class:`fattorus.sched.queues.Queue` (``Fcfs()``, ``Easy()``); it is
    reset here, so one object may serve several runs. ``progress`` shows a progress bar (a
    line every :data:`progress_every_s` seconds where stderr is no terminal).
    ``usable``: ``(N,)`` bool, the nodes the jobs may run on (``topo.usable(kind)``; default
    all); the others stay out of the machine. ``kind_nodes``: ``(K, N)`` bool instead, for jobs
    of several node kinds (``jobs.kind`` says each job's row): a job runs only on its kind's
    nodes, and every question to the policy about it is asked on the machine as that job sees
    it (:meth:`Replay.view`), so the policy must read no group counts (``reads_counts``).
    ``compiled``: let the policy run the whole replay compiled where it can
    (:meth:`Policy.compiled_run`: same decisions); False: always this loop.
    """
    if kind_nodes is not None:
        if jobs.kind is None:
            raise ValueError("kind_nodes needs every job's kind (Jobs.kind)")
        if policy.reads_counts:
            raise ValueError(f"policy '{policy.name}' reads group counts, so it cannot run jobs of several node "
                             f"kinds; choose one that reads only free nodes (to, first_fit, prism, feature)")
        capacity = np.count_nonzero(kind_nodes, axis=1)[jobs.kind] if len(jobs) else np.zeros(0, np.int64)
        too_large = np.flatnonzero(jobs.nodes > capacity)
        if len(too_large):
            j = int(too_large[0])
            raise ValueError(f"a job asks for {int(jobs.nodes[j])} nodes; its node kind has {int(capacity[j])}")
    elif usable is not None and len(jobs) and int(jobs.nodes.max()) > int(np.sum(usable)):
        raise ValueError(f"a job asks for {int(jobs.nodes.max())} nodes; the machine has {int(np.sum(usable))} usable")
    bar = None
    if progress:  # a bar on a terminal, a line every few seconds elsewhere (a log, a batch job)
        from fattorus.args import progress_bar

        bar = progress_bar(len(jobs), f"replay {policy.name}/{queue.name}", "job", every_s=progress_every_s)
    try:  # one bar, whichever loop runs (a policy without a compiled replay showed an empty one first)
        done = policy.compiled_run(jobs, queue.name, usable, kind_nodes, runtime_at_start,
                                   None if bar is None else bar.update) if compiled else None
        if done is not None:
            return done
        replay = Replay.new(jobs, topo, policy, usable, kind_nodes)
        replay.runtime_at_start = runtime_at_start
        replay.bar = bar
        queue.reset(replay)
        while replay.hi < len(jobs) or replay.running:
            now = replay.next_event()
            replay.advance(now)
            queue.schedule(replay, now)
    finally:
        if bar is not None:
            bar.close()
    never = np.flatnonzero(np.isnan(replay.start))
    if len(never):
        # The queue emptied of everything it could start: the largest job left cannot be placed
        # even on the empty machine (the others waited behind it). Never a silent loss of jobs.
        raise unplaceable(policy, int(jobs.nodes[never].max()), len(never))
    return replay.result()


def check_placement(policy: Policy, placed: Any, n: int, state: st.MachineState, unique: bool = True) -> np.ndarray:
    """``placed``, the nodes ``policy`` placed an ``n``-node job on in ``state``, as int64 ids —
    or a one-line ``ValueError`` naming the policy and the rule of the placement contract it
    broke (``fattorus/sched/policy/base.py``: ``n`` distinct node ids of the machine, all
    free there). The engine took any array before session 47: a policy of a user's that
    returned duplicates, a mask, too few nodes or busy ones double-booked nodes and read
    utilization over 100 % without a word, or failed far from its cause. ``unique=False``
    leaves the distinctness to the caller (:meth:`Replay.start_job` reads it off the free
    count after booking, for a fraction of a sort's cost)."""
    arr = np.asarray(placed)
    if arr.ndim != 1 or arr.dtype.kind not in "iu" or len(arr) != n:
        what = f"policy {policy.name!r} placed a job of {n} nodes on"
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(f"{what} a {arr.dtype} array of shape {arr.shape}; a placement is a 1-D array of node "
                             "ids (integers)")
        raise ValueError(f"{what} {len(arr)} node(s); a placement has exactly the job's node count")
    ids = arr.astype(np.int64, copy=False)
    # Each check is one array pass (a replay starts thousands of jobs and EASY reserves for as
    # many heads): a negative id would wrap in the gather, one past the end raises there.
    try:
        free = state.free[ids] if n and ids.min() >= 0 else None
    except IndexError:
        free = None
    if free is None or not free.all():
        what = f"policy {policy.name!r} placed a job of {n} nodes on"
        if free is None:
            bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
            raise ValueError(f"{what} node id {bad}; the machine's are 0 .. {len(state.free) - 1}")
        raise ValueError(f"{what} node {int(ids[~free][0])}, which is not free for it (busy, reserved or another "
                         "kind's)")
    if unique and n > 1:
        seen = np.zeros(len(state.free), bool)  # a scatter, not np.unique's sort
        seen[ids] = True
        if np.count_nonzero(seen) != n:
            raise ValueError(f"policy {policy.name!r} placed a job of {n} nodes on some node twice; a placement's "
                             "node ids are distinct")
    return ids


def unplaceable(policy: Policy, n: int, unstarted: int = 1) -> ValueError:
    """The one-line error for a job of ``n`` nodes that ``policy`` cannot place even on the
    empty machine (``unstarted`` jobs never started because of it). A user's setting, not a
    fault of the replay: a policy option such as prism's ``block_other_kinds`` can rule out
    every placement of a large job."""
    return ValueError(f"{unstarted} job(s) never started: policy '{policy.name}' cannot place a job of {n} nodes "
                      f"even on an empty machine; choose other policy settings or a workload without such jobs "
                      f"(workload.scale)")
