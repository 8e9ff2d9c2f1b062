"""A compiled, batched replay engine: many trials of one log in one ``jit``-ed call.

The NumPy engine (:mod:`fattorus.sched.replay`) replays one trial at a time and pays tens of
microseconds of Python and NumPy calls per event. This engine runs the whole event loop as a
``lax.while_loop`` over fixed-size arrays and ``vmap``-s it over trials that share the job
order, sizes and estimates but differ in their run times (speedup-scenario draws, seeds).
Every trial gets exactly the start times and node sets of the NumPy engine (tests compare
job for job); the scheduling rules are those of the spec's `scheduling.md`, as documented in
:mod:`fattorus.sched.replay`:

* completions release their nodes, then submissions join the queue, then one pass runs;
* FCFS starts queue heads while they fit; EASY then computes the head's shadow time (the
  earliest estimated end at which enough nodes are free) and its concrete reservation ``R``
  (nodes released by then first, ``prefer=released``), and backfills later jobs in queue
  order: a job that ends by its estimate at or before the shadow time takes free nodes with
  ``R`` first (``prefer=R``); any other job must fit on the free nodes outside ``R``.

Supported policy: ``to`` (topology-oblivious first fit: lowest node ids, preferred nodes
first). State per trial (all arrays, no Python objects, so ``vmap`` applies):

* per node: free flag, estimated end, actual end (``inf`` where free);
* per job: start time, waiting flag; the queue is the waiting jobs in index order;
* an allocation log: job ``j``'s nodes, ascending, at ``offset[j] .. offset[j] + nodes[j]``.

Times are float64 seconds (``jax.enable_x64`` inside :func:`replay_batch`): a float32 clock
would round submission times of a months-long log to whole seconds or worse.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

POLICIES = ("to",)
QUEUES = ("fcfs", "easy")


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
    """Machine and queue of one trial between events."""

    now: jax.Array  # current event time, s
    free: jax.Array  # (N,) bool
    est_end: jax.Array  # (N,) estimated end of the job on each node, inf where free
    end: jax.Array  # (N,) actual end of the job on each node, inf where free
    n_free: jax.Array  # int32
    start: jax.Array  # (J,) start times, NaN until started
    waiting: jax.Array  # (J,) bool
    hi: jax.Array  # jobs [0, hi) have been submitted
    log: jax.Array  # (P,) allocation log (node ids), P = sum of job sizes


@dataclasses.dataclass(frozen=True)
class BatchResult:
    """Per trial: ``start`` ``(B, J)`` seconds and, if recorded, ``alloc[b][j]`` node ids."""

    start: np.ndarray
    log: np.ndarray | None
    offset: np.ndarray
    nodes: np.ndarray

    def alloc(self, trial: int, job: int) -> np.ndarray:
        """Node ids (ascending) of ``job`` in ``trial``."""
        if self.log is None:
            raise ValueError("this batch was replayed with record_alloc=False")
        o = int(self.offset[job])
        return self.log[trial, o:o + int(self.nodes[job])]


def _lowest(mask: jax.Array, n: jax.Array) -> jax.Array:
    """The ``n`` lowest-indexed True entries of ``mask`` (all of them if fewer)."""
    return mask & (jnp.cumsum(mask) <= n)


def _lowest_preferring(free: jax.Array, prefer: jax.Array, n: jax.Array) -> jax.Array:
    """``n`` free nodes, preferred ones first, each group lowest id first (``to``'s rule)."""
    first = free & prefer
    taken = _lowest(first, n)
    return taken | _lowest(free & ~prefer, n - jnp.sum(first))


def _start_job(s: State, jobs: Jobs, runtime: jax.Array, j: jax.Array, sel: jax.Array) -> State:
    """Start job ``j`` now on the nodes of the bool mask ``sel``."""
    rank = jnp.cumsum(sel) - 1
    slot = jnp.where(sel, jobs.offset[j] + rank, s.log.shape[0])  # out of range: dropped
    return s._replace(
        free=s.free & ~sel,
        est_end=jnp.where(sel, s.now + jobs.estimate[j], s.est_end),
        end=jnp.where(sel, s.now + runtime[j], s.end),
        n_free=s.n_free - jobs.nodes[j],
        start=s.start.at[j].set(s.now),
        waiting=s.waiting.at[j].set(False),
        log=s.log.at[slot].set(jnp.arange(sel.shape[0], dtype=s.log.dtype), mode="drop"),
    )


def _head(s: State) -> tuple[jax.Array, jax.Array]:
    """Index of the first waiting job and whether there is one."""
    return jnp.argmax(s.waiting), jnp.any(s.waiting)


def _fcfs(s: State, jobs: Jobs, runtime: jax.Array) -> State:
    """Start queue heads in order while they fit."""

    def fits(s: State) -> jax.Array:
        head, some = _head(s)
        return some & (jobs.nodes[head] <= s.n_free)

    def start_head(s: State) -> State:
        head, _ = _head(s)
        return _start_job(s, jobs, runtime, head, _lowest(s.free, jobs.nodes[head]))

    return jax.lax.while_loop(fits, start_head, s)


def _reservation(s: State, n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Shadow time and reserved nodes ``R`` of a blocked head of ``n`` nodes.

    The shadow time is the earliest estimated end by which ``n - n_free`` busy nodes are
    released (a sort of the busy nodes' estimated ends: jobs ending together release
    together, so counting nodes is the same as walking jobs). ``R`` takes the nodes released
    by then first, then free ones, each lowest id first.
    """
    k = jnp.clip(n - s.n_free, 1, s.free.shape[0])
    shadow = jnp.sort(s.est_end)[k - 1]
    released = s.est_end <= shadow
    return shadow, _lowest_preferring(s.free | released, released, n)


def _backfill(s: State, jobs: Jobs, runtime: jax.Array, head: jax.Array) -> State:
    """EASY's backfill pass behind a blocked ``head`` (see the module docstring)."""
    shadow, reserved = _reservation(s, jobs.nodes[head])
    idx = jnp.arange(jobs.nodes.shape[0])
    short = s.now + jobs.estimate <= shadow

    def next_candidate(carry: tuple[State, jax.Array]) -> tuple[jax.Array, jax.Array]:
        # Jobs that would fail are skipped in one array expression: a short job needs
        # n <= free nodes, any other job n <= free nodes outside R.
        s, after = carry
        n_held = jnp.sum(s.free & ~reserved)
        ok = s.waiting & (idx > after) & jnp.where(short, jobs.nodes <= s.n_free, jobs.nodes <= n_held)
        return jnp.argmax(ok), jnp.any(ok)

    def more(carry: tuple[State, jax.Array]) -> jax.Array:
        return next_candidate(carry)[1] & (carry[0].n_free > 0)

    def start_one(carry: tuple[State, jax.Array]) -> tuple[State, jax.Array]:
        s, _ = carry
        c, _ = next_candidate(carry)
        n = jobs.nodes[c]
        sel = jnp.where(short[c], _lowest_preferring(s.free, reserved, n), _lowest(s.free & ~reserved, n))
        return _start_job(s, jobs, runtime, c, sel), c

    s, _ = jax.lax.while_loop(more, start_one, (s, head))
    return s


def _step(s: State, jobs: Jobs, runtime: jax.Array, easy: bool) -> State:
    """One event: release what ends now, admit what is submitted now, run one pass."""
    J = jobs.submit.shape[0]
    next_submit = jnp.where(s.hi < J, jobs.submit[jnp.minimum(s.hi, J - 1)], jnp.inf)
    now = jnp.minimum(next_submit, jnp.min(s.end))
    ending = s.end == now
    hi = jnp.searchsorted(jobs.submit, now, side="right").astype(s.hi.dtype)
    idx = jnp.arange(J)
    s = s._replace(
        now=now,
        free=s.free | ending,
        est_end=jnp.where(ending, jnp.inf, s.est_end),
        end=jnp.where(ending, jnp.inf, s.end),
        n_free=s.n_free + jnp.sum(ending, dtype=s.n_free.dtype),
        waiting=s.waiting | ((idx >= s.hi) & (idx < hi)),
        hi=hi,
    )
    s = _fcfs(s, jobs, runtime)
    if not easy:
        return s
    head, some = _head(s)
    return jax.lax.cond(some & (s.n_free > 0), lambda s: _backfill(s, jobs, runtime, head), lambda s: s, s)


def _initial(jobs: Jobs, n_nodes: int, log_size: int) -> State:
    J = jobs.submit.shape[0]
    inf = jnp.full(n_nodes, jnp.inf, jnp.float64)
    return State(
        now=jnp.asarray(-jnp.inf, jnp.float64),
        free=jnp.ones(n_nodes, bool),
        est_end=inf,
        end=inf,
        n_free=jnp.asarray(n_nodes, jnp.int32),
        start=jnp.full(J, jnp.nan, jnp.float64),
        waiting=jnp.zeros(J, bool),
        hi=jnp.asarray(0, jnp.int32),
        log=jnp.full(log_size, -1, jnp.int32),
    )


@partial(jax.jit, static_argnames=("n_nodes", "easy", "log_size"))
def _replay(jobs: Jobs, runtime: jax.Array, n_nodes: int, easy: bool, log_size: int) -> tuple[jax.Array, jax.Array]:
    """Replay one trial to the end; ``vmap``-ed over ``runtime`` by :func:`replay_batch`."""
    J = jobs.submit.shape[0]

    def going(s: State) -> jax.Array:
        return (s.hi < J) | jnp.any(~s.free)

    s = jax.lax.while_loop(going, lambda s: _step(s, jobs, runtime, easy), _initial(jobs, n_nodes, log_size))
    return s.start, s.log


def replay_batch(
    submit: np.ndarray,
    runtime: np.ndarray,
    estimate: np.ndarray,
    nodes: np.ndarray,
    n_nodes: int,
    queue: str = "easy",
    policy: str = "to",
    record_alloc: bool = True,
) -> BatchResult:
    """Replay ``B`` trials of one job table in one compiled call.

    Args:
      submit, estimate, nodes: ``(J,)`` per job, sorted by (submit, job id) as
        :func:`fattorus.sched.replay.prepare` leaves them; seconds and node counts.
      runtime: ``(B, J)`` seconds, one row per trial (e.g. speedup draws); every entry must
        be positive, finite and at most the job's estimate (EASY's reservations rely on it).
      n_nodes: machine size; every job needs ``1 <= nodes <= n_nodes``.
      queue: ``"easy"`` or ``"fcfs"``; policy: ``"to"`` (the only one compiled so far).
      record_alloc: keep every job's node set (``B * sum(nodes)`` int32); off for benchmarks.

    Raises:
      ValueError: on an unsupported queue/policy or inputs that break the rules above.
    """
    if queue not in QUEUES:
        raise ValueError(f"unknown queue discipline {queue!r}; choices: {list(QUEUES)}")
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} has no compiled engine yet; supported: {list(POLICIES)}")
    submit = np.asarray(submit, np.float64)
    estimate = np.asarray(estimate, np.float64)
    nodes = np.asarray(nodes, np.int64)
    runtime = np.atleast_2d(np.asarray(runtime, np.float64))
    _check(submit, runtime, estimate, nodes, n_nodes)
    offset = np.concatenate([[0], np.cumsum(nodes)[:-1]]).astype(np.int32)
    log_size = int(nodes.sum()) if record_alloc else 0
    with jax.enable_x64(True):
        jobs = Jobs(jnp.asarray(submit), jnp.asarray(estimate), jnp.asarray(nodes, jnp.int32), jnp.asarray(offset))
        run = jax.vmap(lambda r: _replay(jobs, r, n_nodes, queue == "easy", log_size))
        start, log = run(jnp.asarray(runtime))
        start, log = np.asarray(start), np.asarray(log)
    return BatchResult(start, log if record_alloc else None, offset, nodes)


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
