"""Queue disciplines: FCFS and EASY backfilling (spec `scheduling.md`), as objects.

The queue is in submission order, ties by job id. Both disciplines start jobs from the head
while the policy places the head. **FCFS** stops there. **EASY**, when the head cannot be
placed, walks the running jobs by estimated end (``start + estimate``), releasing jobs with
the same estimated end together into a copy of the machine, until the policy places the head
there: that time is the *shadow time* and that placement the head's reserved node set ``R``.
A later job may start now if the policy places it on the free nodes and either it ends (by
its estimate) at or before the shadow time, or it is placed on the machine with every node
of ``R`` held by the head's footprint class. One reservation, recomputed at every pass.

To make concrete node sets reproduce classic count-based EASY under ``policy=to`` exactly,
the reservation prefers nodes that are busy now (``prefer=released``), and a backfill job
that ends by the shadow time takes reserved nodes first (``prefer=R``); policies that have
no free choice ignore ``prefer``.

Per-pass work is kept proportional to what can change: candidates are filtered by node
count in one array operation; a failed placement of size ``n`` rules out every larger job of
the same size class for the rest of the pass (:class:`FailureSizes`; feasibility is monotone
in the size within a class and only shrinks as jobs start; not for a policy that declares
its answers depend on the job's estimated end, ``until_dependent``); the shadow time is found from
the policy's batched count test over every future instant at once, from the policy's own
``earliest_fit`` where it has one, or by bisection over the distinct estimated ends; a reservation is reused while neither the head nor the machine
changed (:class:`Reservation`); a pass on an unchanged machine only looks at jobs submitted
since the previous one (:class:`PassMemo`).

With jobs of several node kinds (``Replay.kind_nodes``) every question about a job goes to the
policy on the machine as that job sees it (``Replay.view``: only its kind's nodes free), the
size classes are per kind, and the shadow time comes from views of future machines (the
batched count test counts the whole machine). The head's reservation holds nodes of its own
kind only, so a job of another kind backfills whenever its kind has room.
"""

from __future__ import annotations

import abc
import dataclasses
import heapq
from typing import ClassVar

import numpy as np

from fattorus.sched import state as st
from fattorus.sched.engine import Replay, unplaceable
from fattorus.sched.policy.base import first_fit_among


@dataclasses.dataclass
class FailureSizes:
    """Smallest size per size class that failed in this pass, on the machine as it is
    (``now``) and with the head's reservation held (``held``); ``(n_classes + 1,)`` each."""

    now: np.ndarray
    held: np.ndarray

    @classmethod
    def none(cls, n_classes: int, n_nodes: int) -> FailureSizes:
        """No failure yet: every size is worth asking about."""
        return cls(np.full(n_classes + 1, n_nodes + 1), np.full(n_classes + 1, n_nodes + 1))


@dataclasses.dataclass(frozen=True)
class PassMemo:
    """What the previous pass learnt, valid while the machine is at ``version``: ``head``
    could not be placed, every candidate below ``upto`` could not be backfilled (a later
    candidate only becomes harder to backfill as time passes: a job that ended by the shadow
    time may no longer), and the failure sizes (None: no backfill pass ran)."""

    version: int | None = None
    head: int | None = None
    upto: int = 0
    failures: FailureSizes | None = None


@dataclasses.dataclass(frozen=True)
class Reservation:
    """The blocked head's reservation: its shadow time (s) and reserved nodes ``R``, computed
    for ``head`` on the machine at ``version``."""

    head: int
    version: int
    shadow: float
    nodes: np.ndarray


class Queue(abc.ABC):
    """A queue discipline: one scheduling pass at a time, on the engine's :class:`Replay`."""

    name: ClassVar[str] = ""

    def reset(self, replay: Replay) -> None:
        """Forget what earlier passes (or runs) learnt."""
        self.memo = PassMemo()

    @abc.abstractmethod
    def schedule(self, replay: Replay, now: float) -> None:
        """Run one scheduling pass at time ``now`` (seconds)."""
        ...


def start_from_head(replay: Replay, now: float, memo: PassMemo) -> int | None:
    """Start jobs from the queue head while the policy places them; the blocked head or None.

    A head that did not fit on this very machine in the previous pass is not asked again,
    unless the policy's answer depends on how long the job waited.
    """
    jobs, policy = replay.jobs, replay.policy
    unchanged = memo.version == replay.version
    while replay.lo < replay.hi:
        lo = replay.lo
        if not replay.waiting[lo]:
            replay.lo += 1
            continue
        if unchanged and lo == memo.head and not policy.time_dependent:
            return lo
        placed = policy.place(replay.view(replay.machine, lo), int(jobs.nodes[lo]), waited_s=now - jobs.submit[lo],
                              until_s=now + jobs.estimate[lo])
        if placed is None:
            return lo
        replay.start_job(lo, placed, now)
        replay.lo += 1
    return None


def plan_wakeup(replay: Replay, head: int, now: float) -> None:
    """Schedule a pass at the instant the blocked ``head`` may take a relaxed placement."""
    relax = replay.policy.wake_time(replay.jobs.submit[head])
    if relax is not None and relax > now:
        heapq.heappush(replay.wakeups, relax)


class Fcfs(Queue):
    """First come, first served: start from the head while it fits, never skip it."""

    name = "fcfs"

    def schedule(self, replay: Replay, now: float) -> None:
        """One FCFS pass."""
        blocked = start_from_head(replay, now, self.memo)
        if blocked is not None:
            plan_wakeup(replay, blocked, now)
        self.memo = PassMemo(replay.version, blocked, replay.hi)


class Easy(Queue):
    """EASY backfilling with one reservation for the blocked head; see the module docstring."""

    name = "easy"

    def reset(self, replay: Replay) -> None:
        """Forget the pass memo and the cached reservation."""
        super().reset(replay)
        self.reservation: Reservation | None = None

    def schedule(self, replay: Replay, now: float) -> None:
        """One EASY pass: start from the head, then backfill around its reservation."""
        blocked = start_from_head(replay, now, self.memo)
        if blocked is not None:
            plan_wakeup(replay, blocked, now)
        if blocked is None or replay.machine.n_free == 0:
            self.memo = PassMemo(replay.version, blocked, replay.hi)
            return
        head, memo = blocked, self.memo
        reuse = memo.version == replay.version and memo.head == head and memo.failures is not None
        first = max(memo.upto, head + 1) if reuse else head + 1
        window = slice(first, replay.hi)
        nodes = replay.jobs.nodes
        waiting = first + replay.waiting[window].nonzero()[0]
        candidates = waiting[nodes[waiting] <= replay.free_for(waiting)]
        failures = memo.failures if reuse else FailureSizes.none(replay.n_size_classes, replay.machine.topo.n_nodes)
        self.memo = PassMemo(replay.version, head, replay.hi, failures)
        if len(candidates) == 0:
            return
        res = self._reserve(replay, head, now)
        if not replay.shadow[head] <= res.shadow:
            replay.shadow[head] = res.shadow
        if self._backfill(replay, candidates, res, failures, now):
            self.memo = PassMemo()  # the reservation may differ on the new machine

    def _reserve(self, replay: Replay, head: int, now: float) -> Reservation:
        """The head's reservation, reused while neither the head nor the machine changed."""
        cached = self.reservation
        if cached is not None and cached.head == head and cached.version == replay.version:
            return cached
        self.reservation = reserve(replay, head, now)
        return self.reservation

    @staticmethod
    def _backfill(replay: Replay, candidates: np.ndarray, res: Reservation, failures: FailureSizes,
                  now: float) -> bool:
        """Start the candidates EASY allows around ``res``, in queue order; True if any started."""
        # The policy keeps R's record (a prism's extent) across the starts of this pass.
        replay.policy.holding(res.nodes)
        try:
            return Easy._backfill_around(replay, candidates, res, failures, now)
        finally:
            replay.policy.holding(None)

    @staticmethod
    def _backfill_around(replay: Replay, candidates: np.ndarray, res: Reservation, failures: FailureSizes,
                         now: float) -> bool:
        """:meth:`_backfill`'s scan, while the policy holds ``res``."""
        jobs, policy, machine = replay.jobs, replay.policy, replay.machine
        reserved_mask = np.zeros(machine.topo.n_nodes, bool)
        reserved_mask[res.nodes] = True
        held = None  # the machine with R held, built on first need
        short = now + jobs.estimate[candidates] <= res.shadow
        cand_nodes, cand_class = jobs.nodes[candidates], replay.size_class[candidates]
        started, pos = False, 0
        while pos < len(candidates) and machine.n_free > 0:
            # One array expression finds the next candidate worth asking the policy about.
            limit = np.where(short[pos:], failures.now[cand_class[pos:]], failures.held[cand_class[pos:]])
            worth = ((cand_nodes[pos:] < limit) & (cand_nodes[pos:] <= replay.free_for(candidates[pos:]))).nonzero()[0]
            if len(worth) == 0:
                break
            pos += int(worth[0])
            j, n, c = int(candidates[pos]), int(cand_nodes[pos]), int(cand_class[pos])
            if short[pos]:
                placed = policy.place(replay.view(machine, j), n, prefer=reserved_mask, until_s=now + jobs.estimate[j])
                if placed is None and not policy.until_dependent:
                    failures.now[c] = n
                    failures.held[c] = min(n, failures.held[c])
            else:
                if held is None:
                    held = st.with_hold(machine, res.nodes, policy.footprint(res.nodes))
                placed = policy.place(replay.view(held, j), n, until_s=now + jobs.estimate[j])
                if placed is None and not policy.until_dependent:
                    failures.held[c] = n
            pos += 1
            if placed is not None:
                replay.start_job(j, placed, now)
                replay.backfilled[j] = True
                held, started = None, True
        return started


def reserve(replay: Replay, head: int, now: float) -> Reservation:
    """Shadow time and reserved nodes of the blocked ``head`` (see the module docstring).

    Under a hybrid rule the head's feasibility also changes when its wait passes the relax
    threshold (``policy.wake_time``): if that instant comes before the shadow time and the
    head can be placed then, it is the shadow time.
    """
    jobs, policy, machine = replay.jobs, replay.policy, replay.machine
    n, submit = int(jobs.nodes[head]), jobs.submit[head]
    shadow = first_fit_time(replay, head)
    reserved = None
    relax = policy.wake_time(submit)
    if relax is not None and now < relax < shadow:
        released = replay.node_est_end <= relax
        future = replay.view(st.future(machine, released, policy.reads_counts), head)
        reserved = policy.place(future, n, prefer=released, waited_s=relax - submit, until_s=relax + jobs.estimate[head])
        if reserved is not None:
            shadow = relax
    if shadow == np.inf:
        raise unplaceable(policy, n)
    if reserved is None:
        released = replay.node_est_end <= shadow
        future = replay.view(st.future(machine, released, policy.reads_counts), head)
        reserved = policy.place(future, n, prefer=released, waited_s=shadow - submit, until_s=shadow + jobs.estimate[head])
        if reserved is None:  # a policy whose own tests (feasible, fits, earliest_fit) and place() disagree
            raise ValueError(f"policy {policy.name!r}: a job of {n} nodes fits at {shadow:g} s by the policy's own test "
                             f"but place() found no nodes there; the two must agree (fattorus/sched/policy/base.py)")
    # The nodes themselves are checked when the head starts (Replay.start_job: the same
    # place()); checking every reservation too cost the plain replay ~5 %.
    return Reservation(head, replay.version, float(shadow), reserved)


def first_fit_time(replay: Replay, head: int) -> float:
    """Earliest estimated end of running jobs after which the policy can place ``head``
    (``inf`` if none): the policy's count test over the future instants a block at a time, or, for a
    policy without one, its own ``earliest_fit`` where it gives one, else a bisection with
    ``fits`` on future states (feasibility only grows as jobs end)."""
    jobs, policy, machine = replay.jobs, replay.policy, replay.machine
    n, submit = int(jobs.nodes[head]), jobs.submit[head]
    if policy.needs is not None and replay.kind_nodes is None:
        # The instants with at least n free nodes (no placement takes fewer), a block at a
        # time, until the first at which the policy's count test passes.
        for times, future_counts in st.futures_from(machine, replay.releases, policy.needs, min_free=n):
            fits = np.flatnonzero(policy.feasible(future_counts, n, waited_s=times - submit))
            if len(fits):
                return float(times[fits[0]])
        return np.inf
    # The estimated ends of the running jobs: the release times of the busy nodes (nodes held
    # out of the machine are never released), found without sorting every busy node's.
    times = np.unique([replay.start[j] + jobs.estimate[j] for _, j in replay.running])
    if len(times) and not policy.time_dependent:
        # The policy's own shortcut, where it has one (same answer as the bisection below).
        shadow = policy.earliest_fit(replay.view(machine, head), n, replay.node_est_end, times)
        if shadow is not None:
            return shadow
    return first_fit_among(times, lambda t: _fits_after(replay, head, t))


def _fits_after(replay: Replay, head: int, t: float) -> bool:
    """Whether the policy places ``head`` once every job estimated to end by ``t`` has ended."""
    future = st.future(replay.machine, replay.node_est_end <= t, counts=replay.policy.reads_counts)
    jobs = replay.jobs
    return replay.policy.fits(replay.view(future, head), int(jobs.nodes[head]), waited_s=t - jobs.submit[head],
                              until_s=t + jobs.estimate[head])


#: Config name -> queue discipline class (``sched=easy``); used by the app, not the engine.
QUEUES: dict[str, type[Queue]] = {"fcfs": Fcfs, "easy": Easy}
