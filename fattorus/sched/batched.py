"""A compiled, batched replay engine: many trials of one log in one ``jit``-ed call.

The NumPy engine (:mod:`fattorus.sched.replay`) replays one trial at a time and pays tens of
microseconds of Python and NumPy calls per event. This engine runs the whole event loop as a
``lax.while_loop`` over fixed-size arrays, each iteration one event of every trial of a
batch (``vmap`` over trials that share the job order, sizes and estimates but differ in
their run times: speedup-scenario draws, seeds). On a CPU the trials go in chunks over one
device per core (:func:`_run`); on an accelerator as one batch.
Every trial gets exactly the start times and node sets of the NumPy engine (tests compare
job for job); the scheduling rules are those of the spec's `scheduling.md`, as documented in
:mod:`fattorus.sched.replay`:

* completions release their nodes, then submissions join the queue, then one pass runs;
* FCFS starts queue heads while they fit; EASY then computes the head's shadow time (the
  earliest estimated end at which enough nodes are free) and its concrete reservation ``R``
  (nodes released by then first, ``prefer=released``), and backfills later jobs in queue
  order: a job that ends by its estimate at or before the shadow time takes free nodes with
  ``R`` first (``prefer=R``); any other job must fit on the free nodes outside ``R``.

Policies (:mod:`fattorus.sched.policy.fattree.compiled`): ``to`` (first fit, lowest node ids,
preferred nodes first) and ``ta`` (Algorithm 1 of the fat-tree paper). ``to`` asked for start
times only (``record_alloc=False``) runs on node counts alone (:mod:`fattorus.sched.counted`:
its decisions depend on nothing else), several times cheaper per event. State per trial
(:class:`State`; all arrays, no Python objects, so ``vmap`` applies):

* per node: free flag, booked footprint class, estimated end, actual end (``inf`` where free),
  and the policy's per-switch counts of them, kept up to date;
* the running jobs' estimated (and actual) ends, sorted: the candidates for the shadow time;
* the queue: waiting job ids in submission order; start times are written per event;
* an allocation log: job ``j``'s nodes, ascending, at ``offset[j] .. offset[j] + nodes[j]``.

Times are float64 seconds (``jax.enable_x64`` inside :func:`replay_batch`): a float32 clock
would round submission times of a months-long log to whole seconds or worse.
"""

from __future__ import annotations

import dataclasses
import queue as queue_mod
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fattorus.devices import jax_on_cpu
from fattorus.sched import counted
from fattorus.sched.policy.fattree import compiled as bp
from fattorus.sched.policy.fattree.compiled import CompiledPolicy
from fattorus.topology.fattree import FatTree

QUEUES = ("fcfs", "easy")
#: Trials per compiled call on a CPU (see :func:`_run`); an accelerator takes the whole batch.
CHUNK = 16


class CapacityError(ValueError):
    """A trial needed more queue or running-job capacity than the compiled engine was given."""


class Jobs(NamedTuple):
    """Per-job inputs shared by every trial, sorted by (submit, job id).

    ``submit``/``estimate``: ``(J,)`` float64 seconds; ``nodes``: ``(J,)`` int32;
    ``offset``: ``(J,)`` int32, start of each job's slice in the allocation log.
    """

    submit: jax.Array
    estimate: jax.Array
    nodes: jax.Array
    offset: jax.Array


class State(NamedTuple):
    """Machine and queue of one trial between events. Nothing in it is as long as the
    log: a pass (FCFS, backfill) carries it through its loops, and under ``vmap`` every loop
    iteration selects every array it carries."""

    now: jax.Array  # current event time, s
    free: jax.Array  # (N,) bool
    est_end: jax.Array  # (N,) estimated end of the job on each node, inf where free
    end: jax.Array  # (N,) actual end of the job on each node, inf where free
    node_class: jax.Array  # (N,) int8 footprint class booked on each busy node, 0 where free
    counts: bp.Counts  # the policy's per-switch node counts (free, booked by class), kept up to date
    run_est: jax.Array  # (C,) estimated ends of the running jobs, ascending, inf padded
    run_end: jax.Array  # (C,) their actual ends, in the same order
    queue: jax.Array  # (Q,) int32 ids of the waiting jobs, ascending (submission order), then padding
    wait: jax.Array  # (Q,) bool: queue entry i is a job still waiting
    hi: jax.Array  # jobs [0, hi) have been submitted
    overflow: jax.Array  # bool: more than Q jobs were waiting at once (results invalid)
    run_overflow: jax.Array  # bool: more than C jobs ran at once (results invalid)
    log: jax.Array  # (P,) allocation log (node ids), P = sum of job sizes (0 when not recorded)


@dataclasses.dataclass(frozen=True)
class BatchResult:
    """Per trial: ``start`` ``(B, J)`` seconds and, if recorded, ``alloc(b, j)`` node ids;
    ``queue_capacity``/``running_capacity``: the queue and running-job capacities the
    batch ran with."""

    start: np.ndarray
    log: np.ndarray | None
    offset: np.ndarray
    nodes: np.ndarray
    queue_capacity: int
    running_capacity: int

    def alloc(self, trial: int, job: int) -> np.ndarray:
        """Node ids (ascending) of ``job`` in ``trial``."""
        if self.log is None:
            raise ValueError("this batch was replayed with record_alloc=False")
        o = int(self.offset[job])
        return self.log[trial, o:o + int(self.nodes[job])]


class Queued(NamedTuple):
    """The queue entries' jobs for one pass, ``(Q,)`` each: nodes, estimate and run time
    (s), allocation-log offset. Gathered once per event so that a pass's loops hold these
    short arrays, not the log-long ones (under ``vmap`` a loop selects every batched array it
    closes over, at every iteration)."""

    nodes: jax.Array
    estimate: jax.Array
    runtime: jax.Array
    offset: jax.Array


def _start_job(s: State, q: Queued, pol: CompiledPolicy, p, placed) -> State:
    """Start the job at queue entry ``p`` now on ``placed`` (node mask, nodes per switch)."""
    sel, taken = placed
    cls = bp.footprint_class(pol, taken)
    # Insert the job into the sorted running-job buffer (a shift, not a sort).
    est, end = s.now + q.estimate[p], s.now + q.runtime[p]
    pos = jnp.sum(s.run_est <= est)
    i = jnp.arange(s.run_est.shape[0])
    shift = lambda a, v: jnp.where(i < pos, a, jnp.where(i == pos, v, jnp.roll(a, 1)))
    s = s._replace(run_est=shift(s.run_est, est), run_end=shift(s.run_end, end),
                   run_overflow=s.run_overflow | jnp.isfinite(s.run_est[-1]), wait=s.wait.at[p].set(False))
    if s.log.shape[0]:  # allocations recorded
        rank = jnp.cumsum(sel) - 1
        slot = jnp.where(sel, q.offset[p] + rank, s.log.shape[0])  # out of range: dropped
        s = s._replace(log=s.log.at[slot].set(jnp.arange(sel.shape[0], dtype=s.log.dtype), mode="drop"))
    return s._replace(
        free=s.free & ~sel,
        node_class=jnp.where(sel, cls, s.node_class),
        counts=s.counts + bp.booked(pol, taken, cls),
        est_end=jnp.where(sel, est, s.est_end),
        end=jnp.where(sel, end, s.end),
    )


def _head(s: State) -> tuple[jax.Array, jax.Array]:
    """Queue entry of the first waiting job and whether there is one."""
    return jnp.argmax(s.wait), jnp.any(s.wait)


def _fcfs(s: State, q: Queued, pol: CompiledPolicy) -> State:
    """Start queue heads in order while the policy places them."""

    def fits(s: State) -> jax.Array:
        p, some = _head(s)
        n = q.nodes[p]
        return some & (n <= bp.limits(pol, s.counts)[bp.size_class(pol, n)])

    def start_head(s: State) -> State:
        p, _ = _head(s)
        return _start_job(s, q, pol, p, bp.place(pol, s.free, s.counts, q.nodes[p]))

    return jax.lax.while_loop(fits, start_head, s)


def _future(s: State, pol: CompiledPolicy, t) -> tuple[jax.Array, bp.Counts, jax.Array]:
    """The machine once every node whose job ends (by its estimate) at or before ``t`` is free:
    free mask, the policy's counts, and the released nodes."""
    released = s.est_end <= t
    return s.free | released, bp.released(pol, s.counts, released, s.node_class), released


def _shadow(s: State, pol: CompiledPolicy, n) -> jax.Array:
    """Earliest estimated end at which the policy could place the head (``n`` nodes).

    Feasibility only grows as nodes are released, so a bisection over the running jobs'
    estimated ends (kept sorted in ``run_est``) finds the first feasible one (jobs ending
    together are released together: every candidate time releases all nodes ending by then).
    """
    times = s.run_est  # ascending; empty slots are inf
    cls = bp.size_class(pol, n)

    def feasible(i):
        return bp.limits(pol, _future(s, pol, times[i])[1])[cls] >= n

    def halve(bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        ok = feasible(mid)
        return jnp.where(ok, lo, mid + 1), jnp.where(ok, mid, hi)

    n_running = jnp.sum(jnp.isfinite(times))
    lo, _ = jax.lax.while_loop(lambda b: b[0] < b[1], halve, (jnp.int32(0), n_running.astype(jnp.int32) - 1))
    return times[lo]


def _backfill(s: State, q: Queued, pol: CompiledPolicy, head, blocked) -> State:
    """EASY's backfill pass behind the blocked job at queue entry ``head`` (module docstring);
    nothing happens unless ``blocked`` (a waiting head and free nodes). Why a flag and not a
    ``cond``: under ``vmap`` a ``cond`` on a per-trial flag runs both branches and selects
    between two copies of the whole state."""
    n_head = q.nodes[head]
    shadow = _shadow(s, pol, n_head)
    free_then, counts_then, released = _future(s, pol, shadow)
    reserved, reserved_taken = bp.place(pol, free_then, counts_then, n_head, prefer=released)
    held_class = bp.footprint_class(pol, reserved_taken)
    # Candidates are the queue's jobs, in queue order; the queue does not move during a pass.
    idx = jnp.arange(s.queue.shape[0])
    nodes = q.nodes
    short = s.now + q.estimate <= shadow
    cls = bp.size_class(pol, nodes)

    reserved_per_group = bp.per_group(pol, reserved)

    def candidate(s: State, after):
        # Jobs that would fail are skipped in one array expression: placement is monotone in
        # the size within a class, so each class has a largest size that fits, now (short
        # jobs) or with R held (the others). The held machine's counts go on to start_one.
        held = bp.held(pol, s.counts, s.free, reserved, held_class, reserved_per_group)
        # Both machines in one call (one set of small kernels, not two).
        both = jax.vmap(lambda c: bp.limits(pol, c))(jax.tree.map(lambda a, b: jnp.stack([a, b]), s.counts, held))
        now_limit, held_limit = both[0][cls], both[1][cls]
        ok = s.wait & (idx > after) & (nodes <= jnp.where(short, now_limit, held_limit))
        return jnp.argmax(ok), jnp.any(ok) & jnp.any(s.free) & blocked, held

    def start_one(carry):
        s, i, _, held = carry
        # One placement for both kinds (under vmap a cond would run both): a short job
        # prefers R, a long one holds it.
        hold = reserved & ~short[i]
        counts = jax.tree.map(lambda a, b: jnp.where(short[i], a, b), s.counts, held)
        placed = bp.place(pol, s.free & ~hold, counts, nodes[i], prefer=reserved & short[i])
        s = _start_job(s, q, pol, i, placed)
        return (s, *candidate(s, i))

    return jax.lax.while_loop(lambda carry: carry[2], start_one, (s, *candidate(s, head)))[0]


def _event(s: State, start: jax.Array, jobs: Jobs, runtime: jax.Array, pol: CompiledPolicy, easy: bool,
           n_jobs: int, lone: bool = False) -> tuple[State, jax.Array]:
    """One event: release what ends now, admit what is submitted now, run one pass; the start
    times of the jobs started are written to ``start``. A trial that has finished stays as it
    is (its next event time is inf and nothing happens at it). ``lone``: one trial, not under
    ``vmap``, where a ``cond`` runs one branch: the backfill pass is skipped when no head is
    blocked (most events of a lightly loaded log)."""
    now = jnp.minimum(jobs.submit[s.hi], s.run_end.min())  # submit is padded with inf
    ending = s.end == now
    # The jobs ending now leave the running-job buffer; the rest move up, in order.
    stay = s.run_end != now
    to = jnp.where(stay, jnp.cumsum(stay) - 1, s.run_est.shape[0])
    compact = lambda a: jnp.full_like(a, jnp.inf).at[to].set(a, mode="drop")
    hi = jnp.minimum(jnp.searchsorted(jobs.submit, now, side="right"), n_jobs).astype(s.hi.dtype)
    # The jobs submitted now join the end of the queue (it stays in submission order).
    Q = s.queue.shape[0]
    i = jnp.arange(Q, dtype=s.queue.dtype)
    qlen = jnp.sum(s.wait, dtype=s.queue.dtype)
    new = (i >= qlen) & (i < qlen + hi - s.hi)
    s = s._replace(
        now=now,
        free=s.free | ending,
        est_end=jnp.where(ending, jnp.inf, s.est_end),
        end=jnp.where(ending, jnp.inf, s.end),
        node_class=jnp.where(ending, jnp.int8(0), s.node_class),
        counts=bp.released(pol, s.counts, ending, s.node_class),
        run_est=compact(s.run_est),
        run_end=compact(s.run_end),
        queue=jnp.where(new, s.hi + i - qlen, s.queue),
        wait=s.wait | new,
        hi=hi,
        # A job that finds the queue full would be silently left out: flag and stop.
        overflow=s.overflow | (qlen + hi - s.hi > Q),
    )
    admitted = s.wait
    q = Queued(jobs.nodes[s.queue], jobs.estimate[s.queue], runtime[s.queue], jobs.offset[s.queue])
    s = _fcfs(s, q, pol)
    if easy:
        head, some = _head(s)
        blocked = some & jnp.any(s.free)
        if lone:
            s = jax.lax.cond(blocked, lambda s: _backfill(s, q, pol, head, blocked), lambda s: s, s)
        else:
            s = _backfill(s, q, pol, head, blocked)
    started = admitted & ~s.wait  # every job started in this event started now
    start = start.at[jnp.where(started, s.queue, start.shape[0])].set(now, mode="drop")
    # The jobs still waiting move to the front of the queue, in order.
    to = jnp.where(s.wait, jnp.cumsum(s.wait) - 1, Q)
    queue = jnp.full_like(s.queue, n_jobs).at[to].set(s.queue, mode="drop")
    return s._replace(queue=queue, wait=i < jnp.sum(s.wait)), start


def _initial(n_nodes: int, n_leaves: int, log_size: int, Q: int, C: int, n_jobs: int) -> State:
    inf = jnp.full(n_nodes, jnp.inf, jnp.float64)
    return State(
        now=jnp.asarray(-jnp.inf, jnp.float64),
        free=jnp.ones(n_nodes, bool),
        est_end=inf,
        end=inf,
        node_class=jnp.zeros(n_nodes, jnp.int8),
        counts=bp.Counts(jnp.full(n_leaves, n_nodes // n_leaves, jnp.int32), jnp.zeros(n_leaves, jnp.int32),
                         jnp.zeros(n_leaves, jnp.int32)),
        run_est=jnp.full(C, jnp.inf, jnp.float64),
        run_end=jnp.full(C, jnp.inf, jnp.float64),
        queue=jnp.full(Q, n_jobs, jnp.int32),
        wait=jnp.zeros(Q, bool),
        hi=jnp.asarray(0, jnp.int32),
        overflow=jnp.asarray(False),
        run_overflow=jnp.asarray(False),
        log=jnp.full(log_size, -1, jnp.int32),
    )


@partial(jax.jit, static_argnames=("pol", "easy", "log_size", "n_jobs", "Q", "C"))
def _replay(jobs: Jobs, runtime: jax.Array, pol: CompiledPolicy, easy: bool, log_size: int, n_jobs: int,
            Q: int, C: int) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Replay ``B`` trials (``runtime`` ``(B, J + Q)``) to the end or to an overflow.

    The event loop runs outside ``vmap`` while any trial has work left, each iteration one
    event of every trial: a finished trial's event changes nothing, so no per-trial select
    over the whole state (and no select at all over the ``(B, J)`` start times) is needed."""
    B = runtime.shape[0]
    s0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (B, *x.shape)), _initial(pol.n_nodes, pol.n_leaves, log_size, Q, C, n_jobs))
    start0 = jnp.full(runtime.shape, jnp.nan, jnp.float64)

    def going(s: State) -> jax.Array:
        return ((s.hi < n_jobs) | jnp.isfinite(s.run_end[:, 0])) & ~s.overflow & ~s.run_overflow

    if B == 1:  # one trial: no vmap, so conds skip work (see _event)
        one = lambda s, start, rt: _event(s, start, jobs, rt, pol, easy, n_jobs, lone=True)
        event = lambda s, start, rt: jax.tree.map(lambda x: x[None], one(*jax.tree.map(lambda x: x[0], (s, start, rt))))
    else:
        event = jax.vmap(lambda s, start, rt: _event(s, start, jobs, rt, pol, easy, n_jobs))
    s, start = jax.lax.while_loop(lambda c: jnp.any(going(c[0])), lambda c: event(*c, runtime), (s0, start0))
    return start[:, :n_jobs], s.log, s.overflow, s.run_overflow


def replay_batch(
    submit: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    nodes: np.ndarray,
    ft: FatTree,
    queue: str = "easy",
    policy: str = "to",
    params=None,
    record_alloc: bool = True,
    queue_capacity: int | None = None,
    running_capacity: int | None = None,
    first_capacities: tuple[int, int] | None = None,
) -> BatchResult:
    """Replay ``B`` trials of one job table in one compiled call.

    Args:
      submit, estimate, nodes: ``(J,)`` per job, sorted by (submit, job id) as
        :func:`fattorus.sched.replay.prepare` orders them; seconds and node counts.
      runtime: ``(B, J)`` seconds, one row per trial (e.g. speedup draws); every entry must
        be positive, finite and at most the job's estimate (EASY's reservations rely on it).
      ft: the machine; every job needs ``1 <= nodes <= ft.n_nodes``.
      queue: ``"easy"`` or ``"fcfs"``; policy: ``"to"`` or ``"ta"`` (``params``: its
        :class:`~fattorus.sched.policy.fattree.ta.TAParams` or a mapping of them, without the
        hybrid rule).
      record_alloc: keep every job's node set (``B * sum(nodes)`` int32); off for benchmarks.
      queue_capacity: ``Q``, the most jobs that may wait at once (each event's work is
        proportional to it). None: start from twice what the count-based
        reference schedule needs (:func:`_capacities`) and double until no trial overflows.
      running_capacity: ``C``, the most jobs that may run at once (the sorted buffer of
        estimated ends behind EASY's shadow time). None: as for the queue.
      first_capacities: ``(queue, running)`` first guesses in place of the count-based
        schedule's (they still grow on overflow): e.g. what an earlier batch of the same job
        table ended with (its :class:`BatchResult` capacities), to skip that schedule.

    Raises:
      CapacityError: a trial had more than ``queue_capacity`` jobs waiting, or more than
        ``running_capacity`` running, at once.
      ValueError: on an unsupported queue/policy or inputs that break the rules above.
    """
    if queue not in QUEUES:
        raise ValueError(f"unknown queue discipline {queue!r}; choices: {list(QUEUES)}")
    pol = bp.compile_policy(policy, ft, params)
    submit = np.asarray(submit, np.float64)
    estimate = np.asarray(estimate, np.float64)
    nodes = np.asarray(nodes, np.int64)
    runtime = np.atleast_2d(np.asarray(runtime, np.float64))
    _check(submit, runtime, estimate, nodes, ft.n_nodes)
    if runtime.shape[0] == 0:
        raise ValueError("replay_batch: runtime holds no trial (shape (0, J)); give at least one row")
    J = len(submit)
    most_running = max(1, min(J, ft.n_nodes))  # every running job holds a node
    Q, C = queue_capacity, running_capacity
    if Q is None or C is None:
        guess_q, guess_c = (_capacities(submit, runtime[0], estimate, nodes, ft.n_nodes, queue == "easy")
                            if first_capacities is None else (max(1, min(J, int(x))) for x in first_capacities))
        Q = guess_q if Q is None else Q
        C = min(most_running, guess_c) if C is None else C
    if int(Q) < 1:
        raise ValueError(f"replay_batch: queue_capacity must be a positive integer, got {queue_capacity!r}")
    if int(C) < 1:
        raise ValueError(f"replay_batch: running_capacity must be a positive integer, got {running_capacity!r}")
    offset = np.concatenate([[0], np.cumsum(nodes)[:-1]]).astype(np.int32)
    start, log, Q, C = _replay_until_it_fits(submit, runtime, estimate, nodes, offset, pol, queue == "easy",
                                             record_alloc, int(Q), int(C), queue_capacity is None,
                                             running_capacity is None, most_running)
    return BatchResult(start, log if record_alloc else None, offset, nodes, Q, C)


def _replay_until_it_fits(submit, runtime, estimate, nodes, offset, pol: CompiledPolicy, easy: bool,
                          record_alloc: bool, Q: int, C: int, grow_q: bool, grow_c: bool,
                          most_running: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Run the trials with capacities ``Q`` and ``C``; a trial that overflowed is replayed
    again with the capacity it ran out of doubled (the others' results stand), where that
    capacity may grow (``grow_q``/``grow_c``), else a :class:`CapacityError`: never a
    silently truncated queue. Returns start times, allocation logs and the final ``Q``, ``C``."""
    J, B = len(submit), len(runtime)
    start = np.full((B, J), np.nan)
    log = np.full((B, int(nodes.sum()) if record_alloc else 0), -1, np.int32)
    todo = np.arange(B)
    while True:
        got, got_log, overflow, run_overflow = _run(submit, runtime[todo], estimate, nodes, offset, pol, easy,
                                                    record_alloc, Q, C)
        ok = ~overflow & ~run_overflow
        start[todo[ok]], log[todo[ok]] = got[ok], got_log[ok]
        if ok.all():
            return start, log, Q, C
        if overflow.any():
            if not grow_q or Q >= J:
                raise CapacityError(
                    f"replay_batch: more than {Q} jobs waited at once in trial(s) "
                    f"{todo[overflow][:5].tolist()}: raise queue_capacity (at most {J} needed)")
            Q = min(J, 2 * Q)
        if run_overflow.any():
            if not grow_c or C >= most_running:
                raise CapacityError(
                    f"replay_batch: more than {C} jobs ran at once in trial(s) "
                    f"{todo[run_overflow][:5].tolist()}: raise running_capacity "
                    f"(at most {most_running} needed)")
            C = min(most_running, 2 * C)
        todo = todo[~ok]


def _capacities(submit: np.ndarray, runtime: np.ndarray, estimate: np.ndarray, nodes: np.ndarray, n_nodes: int,
                easy: bool) -> tuple[int, int]:
    """First queue and running-job capacities to try, from the workload: twice what the
    count-based reference schedule (:mod:`fattorus.sched.reference`, one trial's run times)
    needs, as a power of two (at least 32, at most the job count). An estimate only: a trial
    that needs more is replayed with more (:func:`replay_batch`)."""
    from fattorus.sched import reference

    J = len(submit)
    if J == 0:
        return 1, 1
    start = np.asarray(reference.schedule(submit.tolist(), runtime.tolist(), estimate.tolist(), nodes.tolist(),
                                          n_nodes, easy), np.float64)
    # At a submission time t the queue holds the jobs submitted by t that had not started
    # before t.
    waiting = np.searchsorted(submit, submit, side="right") - np.searchsorted(np.sort(start), submit, side="left")
    most_waiting = int(waiting.max())
    # Jobs running at once: at most the count just after each start.
    ends = np.sort(start + runtime)
    running = np.arange(1, J + 1) - np.searchsorted(ends, np.sort(start), side="right")
    pow2 = lambda n: 1 << max(5, int(2 * n - 1).bit_length())
    return min(J, pow2(most_waiting)), min(J, pow2(int(running.max())))


def _run(submit, runtime, estimate, nodes, offset, pol: CompiledPolicy, easy: bool, record_alloc: bool, Q: int,
         C: int):
    """Pad the per-job arrays and run the compiled batch: split over the default backend's
    devices when it has several (one CPU device per core, :mod:`fattorus.devices`), each part
    in its own thread (XLA's CPU backend runs one computation on one core)."""
    J = len(submit)
    pad = lambda a, v: np.concatenate([a, np.full(Q, v, a.dtype)])
    log_size = int(nodes.sum()) if record_alloc else 0
    rt = np.concatenate([runtime, np.ones((len(runtime), Q))], axis=1)
    # On an accelerator the lockstep batch is what pays (thousands of trials per call); the
    # chunks are for CPUs (see below).
    chunk = CHUNK if jax_on_cpu() else max(1, len(rt))
    devices = jax.devices()[:-(-len(rt) // chunk)]

    def part(rows: np.ndarray, device) -> tuple[np.ndarray, ...]:
        with jax.enable_x64(True), jax.default_device(device):
            if pol.name == "to" and not record_alloc:  # start times only: counts decide (counted.py)
                cj = counted.count_jobs(submit, estimate, nodes, Q)
                got, over, run_over = counted.replay(cj, jnp.asarray(rows), easy, pol.n_nodes, J, Q, C)
                return np.asarray(got), np.zeros((len(rows), 0), np.int32), np.asarray(over), np.asarray(run_over)
            jobs = Jobs(jnp.asarray(pad(submit, np.inf)), jnp.asarray(pad(estimate, 0.0)),
                        jnp.asarray(pad(nodes, 1), jnp.int32), jnp.asarray(pad(offset, 0)))
            out = _replay(jobs, jnp.asarray(rows), pol, easy, log_size, J, Q, C)
            return tuple(np.asarray(x) for x in out)

    # Trials go in chunks of CHUNK (the last padded with copies of its last row, dropped
    # after: one compiled shape), each device taking the next chunk when it is free. Why
    # chunks: lockstep trials wait for the slowest of their chunk, and a large chunk's state
    # leaves the CPU caches (measured on 2 cores: 16-32 trials per call 10-15 % faster per
    # trial than 128).
    if len(rt) <= chunk:
        chunks, keep = [rt], len(rt)
    else:
        n_chunks = -(-len(rt) // chunk)
        padded = np.concatenate([rt, np.repeat(rt[-1:], n_chunks * chunk - len(rt), axis=0)])
        chunks, keep = np.split(padded, n_chunks), len(rt)
    if len(devices) == 1:
        parts = [part(c, devices[0]) for c in chunks]
    else:
        free = queue_mod.SimpleQueue()
        for d in devices:
            free.put(d)

        def on_free_device(rows: np.ndarray) -> tuple[np.ndarray, ...]:
            device = free.get()
            try:
                return part(rows, device)
            finally:
                free.put(device)

        with ThreadPoolExecutor(len(devices)) as pool:
            parts = list(pool.map(on_free_device, chunks))
    return tuple(np.concatenate(x)[:keep] for x in zip(*parts))


def _check(submit: np.ndarray, runtime: np.ndarray, estimate: np.ndarray, nodes: np.ndarray, n_nodes: int) -> None:
    J = len(submit)
    if runtime.shape[1] != J or len(estimate) != J or len(nodes) != J:
        raise ValueError(f"replay_batch: runtime has {runtime.shape[1]} jobs per trial, submit {J}, "
                         f"estimate {len(estimate)}, nodes {len(nodes)}")
    if J and np.any(np.diff(submit) < 0):
        raise ValueError("replay_batch: jobs must be sorted by submit time")
    if not (np.all(np.isfinite(submit)) and np.all(np.isfinite(runtime)) and np.all(runtime > 0)
            and np.all(runtime <= estimate) and np.all((nodes >= 1) & (nodes <= n_nodes))):
        raise ValueError("replay_batch: every job needs finite submit, 0 < runtime <= estimate "
                         "and 1 <= nodes <= machine size")
