"""The compiled replay on node counts alone: ``to`` when no node sets are asked for.

``to`` (first fit, lowest free node ids) decides only on how many nodes are free: a job fits
iff its size is at most the free count, now, on a future machine or with EASY's reservation
held (the engine's concrete reservation takes the nodes released by the shadow time, and a
long backfill job fits outside it iff it fits in the count EASY calls ``extra``). So its start
times are those of count-based EASY (the property the tests check for the NumPy engine on real
traces), and when :func:`fattorus.sched.batched.replay_batch` is asked for start times only
(``record_alloc=False``: the benchmark, ``trials=N`` in the app) it replays ``to`` here, with
no per-node array at all. Each event then costs a few small kernels over the queue and the
running jobs instead of several passes over every node: what the light-load case of issue 16
measures, the per-event cost of a compiled loop.

State per trial (:class:`CountState`): the free node count, the running jobs in a slot buffer
(estimated end, actual end, nodes; ``inf`` ends mark an empty slot, in no order), and the queue
as in the node-level engine. The rules are those of :mod:`fattorus.sched.batched` (and of the
count-based reference :mod:`fattorus.sched.reference`, written independently): completions,
then submissions, then one pass; FCFS starts the longest run of queue heads that fit; EASY's
shadow time is the earliest estimated end by which enough nodes are free, ``extra`` the nodes
free then beyond the head's, and a later job is backfilled, in queue order, if it fits now and
either ends by the shadow time or fits in ``extra`` (which it then uses up).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class CountState(NamedTuple):
    """One trial between events (all arrays: ``vmap`` applies)."""

    now: jax.Array  # current event time, s
    free: jax.Array  # free nodes
    run_est: jax.Array  # (C,) estimated end of each running job's slot, inf where empty
    run_end: jax.Array  # (C,) actual end, inf where empty
    run_nodes: jax.Array  # (C,) nodes, 0 where empty
    next_end: jax.Array  # the earliest end of a running job (inf if none): the next release
    queue: jax.Array  # (Q,) int32 ids of the waiting jobs, submission order, then padding
    wait: jax.Array  # (Q,) bool: entry i is a job still waiting (a prefix of the queue between events)
    qlen: jax.Array  # waiting jobs (between events: the length of that prefix)
    hi: jax.Array  # jobs [0, hi) have been submitted
    overflow: jax.Array  # more than Q jobs waited at once (results invalid)
    run_overflow: jax.Array  # more than C jobs ran at once (results invalid)


class CountJobs(NamedTuple):
    """Per-job inputs shared by the trials, padded with ``Q`` entries (submit ``inf``):
    ``submit``/``estimate`` float64 s, ``nodes`` int32, and ``next_submit``: the first job
    submitted after job ``j`` (the end of its group of equal submit times), which admits a
    whole group with one gather instead of a binary search."""

    submit: jax.Array
    estimate: jax.Array
    nodes: jax.Array
    next_submit: jax.Array


def _start(s: CountState, start: jax.Array, j, n, est, end) -> tuple[CountState, jax.Array]:
    """Start job ``j`` (``n`` nodes; its estimated end and end, s) now, in the first empty slot;
    its start time is written at once (one element, in place)."""
    slot = jnp.argmax(jnp.isinf(s.run_end))
    s = s._replace(
        free=s.free - n,
        run_est=s.run_est.at[slot].set(est),
        run_end=s.run_end.at[slot].set(end),
        run_nodes=s.run_nodes.at[slot].set(n),
        next_end=jnp.minimum(s.next_end, end),
        run_overflow=s.run_overflow | ~jnp.isinf(s.run_end[slot]),  # no slot was empty
    )
    return s, start.at[j].set(s.now)


def _fcfs(s: CountState, start: jax.Array, jobs: CountJobs,
          runtime: jax.Array) -> tuple[CountState, jax.Array, jax.Array]:
    """Start queue heads while they fit (the waiting entries are a prefix of the queue); also
    returns how many started, ``k`` (their ``wait`` flags are left to the caller)."""

    def fits(c):
        s, _, k = c
        return (k < s.qlen) & (jobs.nodes[s.queue[k]] <= s.free)

    def start_head(c):
        s, start, k = c
        j = s.queue[k]
        s, start = _start(s, start, j, jobs.nodes[j], s.now + jobs.estimate[j], s.now + runtime[j])
        return s, start, k + 1

    return jax.lax.while_loop(fits, start_head, (s, start, jnp.int32(0)))


def _backfill(s: CountState, start: jax.Array, jobs: CountJobs, runtime: jax.Array,
              blocked) -> tuple[CountState, jax.Array]:
    """EASY's backfill behind the blocked head, the first waiting entry (module docstring);
    nothing starts unless ``blocked`` (a waiting head and free nodes: a flag, not a ``cond``,
    under ``vmap``)."""
    nodes = jnp.where(s.wait, jobs.nodes[s.queue], 0)
    est = s.now + jobs.estimate[s.queue]  # the reference adds them the same way
    end = s.now + runtime[s.queue]
    head = jnp.argmax(s.wait)
    # Nodes free by each running job's estimated end (jobs ending together are released
    # together): one comparison matrix over the slots, no sort.
    released = jnp.sum(jnp.where(s.run_est[None, :] <= s.run_est[:, None], s.run_nodes[None, :], 0), axis=1,
                       dtype=s.free.dtype)
    shadow = jnp.min(jnp.where(s.free + released >= nodes[head], s.run_est, jnp.inf))
    extra = s.free + jnp.sum(jnp.where(s.run_est <= shadow, s.run_nodes, 0), dtype=s.free.dtype) - nodes[head]
    short = est <= shadow
    idx = jnp.arange(s.wait.shape[0])

    def next_one(s: CountState, extra, after):
        ok = blocked & s.wait & (idx > after) & (nodes <= s.free) & (short | (nodes <= extra))
        return jnp.argmax(ok), jnp.any(ok)

    def start_one(c):
        s, start, extra, i, _ = c
        s, start = _start(s, start, s.queue[i], nodes[i], est[i], end[i])
        s = s._replace(wait=s.wait.at[i].set(False))
        extra = jnp.where(short[i], extra, extra - nodes[i])
        return (s, start, extra, *next_one(s, extra, i))

    s, start, *_ = jax.lax.while_loop(lambda c: c[4], start_one, (s, start, extra, *next_one(s, extra, head)))
    return s, start


def _compact(s: CountState, n_jobs: int) -> CountState:
    """The waiting entries move to the front of the queue, in order."""
    Q = s.queue.shape[0]
    to = jnp.where(s.wait, jnp.cumsum(s.wait) - 1, Q)
    queue = jnp.full_like(s.queue, n_jobs).at[to].set(s.queue, mode="drop")
    qlen = jnp.sum(s.wait, dtype=s.qlen.dtype)
    return s._replace(queue=queue, wait=jnp.arange(Q) < qlen, qlen=qlen)


def _release(s: CountState) -> CountState:
    """The jobs ending now leave their slots and free their nodes."""
    ending = s.run_end == s.now
    run_end = jnp.where(ending, jnp.inf, s.run_end)
    return s._replace(free=s.free + jnp.sum(jnp.where(ending, s.run_nodes, 0), dtype=s.free.dtype),
                      run_est=jnp.where(ending, jnp.inf, s.run_est), run_end=run_end,
                      run_nodes=jnp.where(ending, 0, s.run_nodes), next_end=run_end.min())


def _event(s: CountState, start: jax.Array, jobs: CountJobs, runtime: jax.Array, easy: bool, n_jobs: int,
           lone: bool) -> tuple[CountState, jax.Array]:
    """One event of one trial: release, admit, one pass; start times written to ``start``.
    ``lone`` (one trial, no ``vmap``): the release, the backfill pass and the queue's
    compaction are real branches, skipped when there is nothing to do (most events of a
    lightly loaded log: each kernel skipped is ~0.2 µs of a few µs per event)."""
    now = jnp.minimum(jobs.submit[s.hi], s.next_end)  # submit is padded with inf
    s = s._replace(now=now)
    s = jax.lax.cond(now == s.next_end, _release, lambda s: s, s) if lone else _release(s)
    hi = jnp.where((jobs.submit[s.hi] == now) & (s.hi < n_jobs), jobs.next_submit[s.hi], s.hi)
    Q = s.queue.shape[0]
    i = jnp.arange(Q, dtype=s.queue.dtype)
    new = (i >= s.qlen) & (i < s.qlen + hi - s.hi)
    s = s._replace(queue=jnp.where(new, s.hi + i - s.qlen, s.queue), wait=s.wait | new, hi=hi,
                   qlen=s.qlen + hi - s.hi, overflow=s.overflow | (s.qlen + hi - s.hi > Q))
    s, start, k = _fcfs(s, start, jobs, runtime)
    # Only heads started: the queue moves up by k (one gather); after a backfill pass it is
    # compacted.
    at = jnp.minimum(i + k, Q - 1)
    shifted = lambda s: s._replace(queue=s.queue[at], wait=i < s.qlen - k, qlen=s.qlen - k)
    if not easy:
        return shifted(s), start
    blocked = (k < s.qlen) & (s.free > 0)
    backfilled = lambda c: (_compact(c[0], n_jobs), c[1])
    s = s._replace(wait=s.wait & (i >= k))
    if lone:
        return jax.lax.cond(blocked, lambda c: backfilled(_backfill(*c, jobs, runtime, blocked)),
                            lambda c: (shifted(c[0]), c[1]), (s, start))
    return backfilled(_backfill(s, start, jobs, runtime, blocked))


def _initial(n_nodes: int, Q: int, C: int, n_jobs: int) -> CountState:
    """The empty machine and queue."""
    inf = jnp.full(C, jnp.inf, jnp.float64)
    return CountState(now=jnp.asarray(-jnp.inf, jnp.float64), free=jnp.asarray(n_nodes, jnp.int32), run_est=inf,
                      run_end=inf, run_nodes=jnp.zeros(C, jnp.int32), next_end=jnp.asarray(jnp.inf, jnp.float64),
                      queue=jnp.full(Q, n_jobs, jnp.int32), wait=jnp.zeros(Q, bool), qlen=jnp.asarray(0, jnp.int32),
                      hi=jnp.asarray(0, jnp.int32), overflow=jnp.asarray(False), run_overflow=jnp.asarray(False))


@partial(jax.jit, static_argnames=("easy", "n_nodes", "n_jobs", "Q", "C"))
def replay(jobs: CountJobs, runtime: jax.Array, easy: bool, n_nodes: int, n_jobs: int, Q: int,
           C: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Replay ``B`` trials (``runtime`` ``(B, J + Q)`` s) to the end or to an overflow: start
    times ``(B, J)`` s and the two overflow flags per trial. As in the node-level engine the
    event loop runs outside ``vmap`` while any trial has work left; one trial runs without
    ``vmap``, so that its backfill pass is a real branch."""
    B = runtime.shape[0]
    s0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (B, *x.shape)), _initial(n_nodes, Q, C, n_jobs))
    start0 = jnp.full(runtime.shape, jnp.nan, jnp.float64)

    def going(s: CountState) -> jax.Array:
        return ((s.hi < n_jobs) | jnp.isfinite(s.next_end)) & ~s.overflow & ~s.run_overflow

    if B == 1:  # the loop carries one trial's arrays as they are (no batch axis to slice off)
        s, start = jax.lax.while_loop(lambda c: going(c[0]),
                                      lambda c: _event(*c, jobs, runtime[0], easy, n_jobs, lone=True),
                                      jax.tree.map(lambda x: x[0], (s0, start0)))
        return start[None, :n_jobs], s.overflow[None], s.run_overflow[None]
    event = jax.vmap(lambda s, start, rt: _event(s, start, jobs, rt, easy, n_jobs, lone=False))
    s, start = jax.lax.while_loop(lambda c: jnp.any(going(c[0])), lambda c: event(*c, runtime), (s0, start0))
    return start[:, :n_jobs], s.overflow, s.run_overflow


def count_jobs(submit: np.ndarray, estimate: np.ndarray, nodes: np.ndarray, Q: int) -> CountJobs:
    """The padded per-job arrays of :func:`replay` (``submit`` sorted; ``Q`` pad entries)."""
    sub = np.concatenate([submit, np.full(Q, np.inf)])
    return CountJobs(jnp.asarray(sub), jnp.asarray(np.concatenate([estimate, np.zeros(Q)])),
                     jnp.asarray(np.concatenate([nodes, np.ones(Q, nodes.dtype)]), jnp.int32),
                     jnp.asarray(np.searchsorted(sub, sub, side="right"), jnp.int32))
