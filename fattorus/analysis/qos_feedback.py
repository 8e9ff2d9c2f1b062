"""The process prioritization algorithm of the QoS paper (its Algorithm 1, Section 3.3).

An iterative, feedback-directed search over service-level assignments. The run is cut into
periods of ``P`` seconds; after each period the algorithm sees the work each job and each
process completed (iterations) and chooses the assignment for the next period:

* ``DEFAULT``: every process on the default level for ``default_periods`` consecutive periods
  (``N``; 1 unless set). The mean work per period over those ``N`` periods, per job and per
  process, is the default performance that later periods are compared with (the paper's
  line 9 observes one period; its Sections 6.2 and 6.8 observe ``P × 10`` seconds "and then
  divide this performance by 10"); candidates are selected from the per-process means; go
  ``RUNNING``. Every return to ``DEFAULT`` observes ``N`` periods afresh.
* ``RUNNING``: the period ran the best assignment so far plus one change — the next candidate
  process raised one step (a process still on the default level gets a new, unused level of
  weight ``first_weight``; a process on its own level has that level's weight multiplied by
  ``raise_factor``, at most ``max_weight``). If the score beats the best score the assignment
  becomes the best and candidates are selected anew from this period's measurements; if not,
  it is rolled back (the next trial starts from the best again: "our algorithm rolls back the
  priority of a candidate process if its increase caused significant slowdowns elsewhere",
  Section 3.1). "Significant" is ``max_slowdown``: a trial that leaves any job more than that
  fraction below its work under the best assignment is rolled back even if the mean improved
  (the paper's line 15 compares the mean only; its text promises limited impact on other jobs).
  Go ``IDLE`` when the best assignment, after this period's accept or rollback, holds every
  service level (the paper's line 19, ``|assignments| = NUM_SLS``: ``num_sls − 1`` processes
  prioritised, the default level being the last; the algorithm "iterates until either no
  service levels or no candidates remain"; a rolled-back trial leaves its level free) or
  when no candidate is left that can be raised (line 20).
* ``IDLE``: run the best assignment; if the score falls below the default performance
  (score < 0), restart from ``DEFAULT`` (the paper's line 23: noise it would otherwise misread
  as contention). A change of the job mix restarts too (:func:`restart`).

The score of a period is the mean over jobs of ``work / default work − 1`` ("the average of
each job's improvement over the default run"). Candidates (``SelectCandidates``): in every job,
the processes whose work is at most ``min(work in the job) / T`` — within a factor ``1/T`` of
the job's slowest; they are tried slowest first. (The pseudo-code's line 41 compares with
``<``, which with ``T = 1`` selects nobody; the text says ``T = 1`` "places only the slowest"
in the set, so the comparison includes equality.) Choices the paper leaves open are listed in
``docs/qos.md`` and ``docs/decisions.md``.

The state is an immutable :class:`Feedback`; :func:`observe` is a pure function of it and one
period's measurements.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DEFAULT, RUNNING, IDLE = "default", "running", "idle"


class Params(NamedTuple):
    """Knobs of the algorithm. ``threshold`` is the paper's ``T`` (0 < T <= 1); ``num_sls``
    its ``NUM_SLS`` (levels a port has, the default level included: at most ``num_sls − 1``
    processes are prioritised); weights are relative to the default level's 1.
    ``max_slowdown``: a trial is rolled back when it leaves any job more than this fraction
    below its work under the best assignment so far, whatever the mean gain (1 or more: the
    pseudo-code's mean alone).
    ``default_periods``: periods (of ``P`` seconds each) the ``DEFAULT`` state runs before the
    default work, the mean per period over them, is fixed (integer >= 1; the paper's line 9
    uses 1, its Sections 6.2 and 6.8 use 10)."""

    threshold: float = 0.9
    num_sls: int = 16
    first_weight: float = 1.0
    raise_factor: float = 2.0
    max_weight: float = 255.0
    max_slowdown: float = 0.05
    default_periods: int = 1


class Feedback(NamedTuple):
    """State between periods. ``assignments`` (what the next period runs) and ``best`` are
    tuples of ``(process, weight)`` sorted by process; ``candidates`` a stack (last tried
    first); ``default_work`` the per-job default work (iterations per period: the mean over
    the last ``default_periods`` default periods), ``best_work`` that of the period that made
    ``best`` the best. While ``DEFAULT`` observes, ``observed`` counts the default periods
    seen so far and ``default_sum`` / ``proc_sum`` total their work per job / per process
    (iterations); ``default_work`` and ``best_work`` are empty until the observation ends —
    at the start, after :func:`restart` and after a restart from ``IDLE`` alike."""

    mode: str = DEFAULT
    assignments: tuple[tuple[int, float], ...] = ()
    best: tuple[tuple[int, float], ...] = ()
    best_score: float = 0.0
    default_work: tuple[float, ...] = ()
    best_work: tuple[float, ...] = ()
    candidates: tuple[int, ...] = ()
    accepted: int = 0
    restarts: int = 0
    observed: int = 0
    default_sum: tuple[float, ...] = ()
    proc_sum: tuple[float, ...] = ()


def start() -> Feedback:
    """The state before the first period: run everything on the default level."""
    return Feedback()


def restart(fb: Feedback) -> Feedback:
    """A job arrived or left: back to the default assignment (keeps the counters)."""
    return Feedback(accepted=fb.accepted, restarts=fb.restarts + 1)


def score(job_work: np.ndarray, default_work: np.ndarray) -> float:
    """Mean over jobs of ``work / default work − 1``."""
    return float(np.mean(np.asarray(job_work, float) / np.asarray(default_work, float) - 1.0))


def select_candidates(proc_work: np.ndarray, job_of: np.ndarray, threshold: float) -> tuple[int, ...]:
    """Processes within ``1 / threshold`` of their job's slowest, as a stack whose last entry
    (tried first) is the slowest process; ties go to the lower process id."""
    proc_work = np.asarray(proc_work, float)
    job_of = np.asarray(job_of)
    n_jobs = int(job_of.max()) + 1 if job_of.size else 0
    slowest = np.full(n_jobs, np.inf)
    np.minimum.at(slowest, job_of, proc_work)
    chosen = np.flatnonzero(proc_work <= slowest[job_of] / threshold)
    # Stack order: most work first, so the least work is popped first.
    order = np.lexsort((-chosen, -proc_work[chosen]))
    return tuple(int(p) for p in chosen[order])


def raised(best: tuple[tuple[int, float], ...], process: int, params: Params) -> tuple[tuple[int, float], ...] | None:
    """``best`` with ``process`` raised one step, or None when it cannot be raised (its level
    is at ``max_weight``, or it needs a new level and none is free)."""
    table = dict(best)
    if process in table:
        w = table[process]
        if w >= params.max_weight:
            return None
        table[process] = min(w * params.raise_factor, params.max_weight)
    else:
        if len(table) >= params.num_sls - 1:
            return None
        table[process] = float(params.first_weight)
    return tuple(sorted(table.items()))


def observe(fb: Feedback, job_work: np.ndarray, proc_work: np.ndarray, job_of: np.ndarray,
            params: Params) -> Feedback:
    """One pass of Algorithm 1's loop after a period that ran ``fb.assignments``: the work
    per job ``(J,)`` and per process ``(P,)`` (iterations in the period; ``job_of`` ``(P,)``
    the job of each process). Returns the state whose ``assignments`` the next period runs."""
    mode, best, best_score, candidates = fb.mode, fb.best, fb.best_score, fb.candidates
    default_work, best_work, accepted = fb.default_work, fb.best_work, fb.accepted
    restarts = fb.restarts
    if mode == DEFAULT:
        # Totals over the default periods seen so far (iterations). The first period starts
        # them from its own values and the mean of one period divides by 1, so
        # default_periods = 1 gives exactly the old single-period numbers.
        job_total, proc_total = np.asarray(job_work, float), np.asarray(proc_work, float)
        if fb.observed:
            job_total = job_total + np.asarray(fb.default_sum)
            proc_total = proc_total + np.asarray(fb.proc_sum)
        observed = fb.observed + 1
        if observed < params.default_periods:
            # Keep observing on the default level (Sections 6.2 and 6.8: P x N seconds).
            return Feedback(DEFAULT, (), (), 0.0, default_work, best_work, (), accepted, restarts, observed,
                            tuple(float(w) for w in job_total), tuple(float(w) for w in proc_total))
        # "divide this performance by 10": the mean work per period of P seconds.
        default_work = best_work = tuple(float(w) for w in job_total / observed)
        best, best_score = fb.assignments, 0.0
        candidates = select_candidates(proc_total / observed, job_of, params.threshold)
        mode = RUNNING
    elif mode == RUNNING:
        s = score(job_work, default_work)
        worst = float(np.min(np.asarray(job_work, float) / np.asarray(best_work, float))) - 1.0
        if s > best_score and worst >= -params.max_slowdown:
            best, best_score, accepted = fb.assignments, s, accepted + 1
            best_work = tuple(float(w) for w in job_work)
            candidates = select_candidates(proc_work, job_of, params.threshold)
        if len(best) >= params.num_sls - 1:
            # Line 19: the best assignment (after this period's accept or rollback) holds every
            # level, so no service level remains: no more raises, not even of a prioritised
            # process's weight. A rolled-back trial that took the last level leaves it free.
            mode, candidates = IDLE, ()
    elif mode == IDLE:
        if score(job_work, default_work) < 0.0:
            mode, restarts = DEFAULT, restarts + 1
    # The assignment of the next period.
    if mode == DEFAULT:
        # Line 23's restart "from scratch": as at the start and after restart(), no default
        # work until the new observation ends (the old one is not what the new is measured by).
        return Feedback(DEFAULT, (), (), 0.0, (), (), (), accepted, restarts)
    if mode == RUNNING:
        stack = list(candidates)
        while stack:
            trial = raised(best, stack.pop(), params)
            if trial is not None:
                return Feedback(RUNNING, trial, best, best_score, default_work, best_work, tuple(stack), accepted,
                                restarts)
        mode, candidates = IDLE, ()
    return Feedback(IDLE, best, best, best_score, default_work, best_work, candidates, accepted, restarts)


def process_levels(assignments: tuple[tuple[int, float], ...], n_procs: int, num_sls: int) -> tuple[np.ndarray, np.ndarray]:
    """Level of every process ``(P,)`` (0: default; the ``k``-th assigned process, in process
    order, level ``k``) and the level weights ``(num_sls,)`` (default 1; unused levels 1)."""
    level = np.zeros(n_procs, np.int32)
    weight = np.ones(num_sls)
    for k, (p, w) in enumerate(assignments, start=1):
        level[p] = k
        weight[k] = w
    return level, weight
