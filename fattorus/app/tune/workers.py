"""Running trials: in this process, or in worker processes sharing the storage.

``--jobs J``: J worker *processes* (spawned, each with its own workload copy) run
``study.optimize`` against the same storage, taking trials from a shared counter until
``--trials`` have run; Optuna's thread-level ``n_jobs`` would serialise on the GIL. Enqueued
trials (the paper default) run first in the main process. Every trial's sampler is seeded
from ``(--seed, trial number)`` (:mod:`fattorus.app.tune.sampler`), so workers draw
differently (their trials' numbers differ) and a resumed study draws what an uninterrupted
one would; TPE uses the constant liar so workers do not propose the same point at once. With
``--jobs 1`` a study is a deterministic function of the seed and the storage's contents,
however many runs it took; with several workers the history each trial's sampler reads
depends on timing, so only the seeding is reproducible.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fattorus import interrupt
from fattorus.app.cli import is_interrupt
from fattorus.app.tune.display import StatusLine
from fattorus.app.tune.errors import PROG, TuneError, WorkerError
from fattorus.app.tune.objective import make_objective
from fattorus.app.tune.storage import make_sampler, open_storage, open_study, quiet_optuna
from fattorus.app.tune.windows import Setup, load_setup

if TYPE_CHECKING:
    import optuna

    from fattorus.app.tune.cli import Options


def optimize(opts: Options, setup: Setup, take: Callable[[], bool], worker: int, parallel: bool,
             deadline: float | None) -> None:
    """Run trials of the study in this process while ``take()`` grants one and the wall-clock
    ``deadline`` (``time.time()`` seconds; None: none) has not passed. ``worker`` numbers the
    status lines of parallel workers."""
    quiet_optuna()
    storage = open_storage(opts.storage, opts.heartbeat)
    sampler = make_sampler(opts.sampler, opts.seed, parallel)
    study = open_study(opts, storage, sampler)
    objective = make_objective(setup, opts.objectives, prune=not opts.multi)
    status = StatusLine(opts.objectives, len(setup.train), worker if parallel else None, setup.policy)
    while (deadline is None or time.time() < deadline) and take():
        study.optimize(objective, n_trials=1, callbacks=[status], gc_after_trial=False)


def countdown(n: int) -> Callable[[], bool]:
    """A ``take`` for :func:`optimize` that grants ``n`` trials."""
    left = [n]

    def take() -> bool:
        if left[0] <= 0:
            return False
        left[0] -= 1
        return True

    return take


def _worker(opts: Options, remaining: Any, worker: int, deadline: float | None) -> None:
    """Entry point of a worker process: rebuild the setup and run trials while the shared
    counter ``remaining`` (a ``multiprocessing.Value``) grants them; errors in one line."""

    def take() -> bool:
        with remaining.get_lock():
            if remaining.value <= 0:
                return False
            remaining.value -= 1
            return True

    # Started with SIGINT ignored (run_parallel: its imports are not interrupted); from here
    # a Ctrl-C (the terminal's, or the one the tuner passes on) ends the worker's trials.
    interrupt.on_start(PROG)
    interrupt.armed()
    try:
        setup = load_setup(opts.topo, opts.workload, opts.scale, opts.train, (), opts.cores_per_node, opts.policy,
                           opts.speedup)
        optimize(opts, setup, take, worker, True, deadline)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:
        # Optuna's trial bookkeeping can turn a Ctrl-C into another error (seen: an
        # UnboundLocalError from its own cleanup, the KeyboardInterrupt as its context).
        if not is_interrupt(err):
            raise
        sys.exit(130)
    except TuneError as err:
        sys.stderr.write(f"{PROG}: error (worker {worker}): {err}\n")
        sys.exit(2)


def _join(procs: list[Any]) -> None:
    """Wait for the workers; on Ctrl-C pass it on to them and give them a minute to mark their
    trial failed. The wait polls: a plain ``join`` blocks in ``waitpid``, and a SIGINT sent to
    the tuner alone (``kill -INT``) taken by another thread was only seen after every trial
    had run (the study's block wait had the same fault: docs/decisions.md, session 24)."""
    try:
        for p in procs:
            while p.is_alive():
                p.join(timeout=0.2)
    except KeyboardInterrupt:
        for p in procs:
            p.join(timeout=1)  # a terminal's Ctrl-C reached them too: most leave at once
            if p.is_alive():
                try:
                    os.kill(p.pid, signal.SIGINT)
                except OSError:  # gone meanwhile
                    pass
            p.join(timeout=60)
            if p.is_alive():
                p.kill()  # not terminate(): a worker takes SIGTERM as a Ctrl-C (fattorus.interrupt.armed)
                p.join(timeout=5)
        raise


def run_parallel(opts: Options, n_trials: int, deadline: float | None) -> None:
    """``opts.jobs`` spawned worker processes that together run ``n_trials`` trials: each
    takes the next trial from a shared counter, so a worker that draws cheap (pruned) trials
    takes more of them."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # never fork a process that may hold JAX or SQLite state
    remaining = ctx.Value("q", n_trials)
    # _worker is named by its module (fattorus.app.tune.workers), so the spawned child imports it.
    procs = [ctx.Process(target=_worker, args=(opts, remaining, i, deadline), name=f"tune-worker-{i}")
             for i in range(min(opts.jobs, n_trials))]
    # Each worker starts with SIGINT ignored (kept across spawn's exec) so that a Ctrl-C while
    # it imports is no traceback; it arms itself once its imports are done (_worker).
    with interrupt.ignored():
        for p in procs:
            p.start()
    _join(procs)
    bad = [(p.name, p.exitcode) for p in procs if p.exitcode not in (0, None)]
    if any(code == 130 for _, code in bad):
        raise KeyboardInterrupt
    if bad:
        raise WorkerError(f"worker(s) failed ({', '.join(f'{n} exit {c}' for n, c in bad)}); see their messages above; "
                          "finished trials are kept")


def add_trials(opts: Options, setup: Setup, study: optuna.Study) -> None:
    """Run ``opts.trials`` more trials: in this process, or enqueued ones here and the rest in
    ``opts.jobs`` worker processes; no new trial starts after ``opts.timeout``."""
    from optuna.trial import TrialState

    deadline = None if opts.timeout is None else time.time() + opts.timeout
    if not opts.trials:
        return
    if opts.jobs == 1 or opts.trials == 1:
        optimize(opts, setup, countdown(opts.trials), 0, False, deadline)
        return
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    first = min(len(waiting), opts.trials)
    if first:
        # Enqueued trials first, here: two workers could both pop the same waiting trial
        # from an SQLite storage.
        optimize(opts, setup, countdown(first), 0, False, deadline)
    if opts.trials > first and (deadline is None or time.time() < deadline):
        run_parallel(opts, opts.trials - first, deadline)


__all__ = ["add_trials", "countdown", "optimize", "run_parallel"]
