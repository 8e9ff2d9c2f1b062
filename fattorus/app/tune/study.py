"""One run of the command: open (or resume) the study, add trials, export and compare.

A new study starts with the paper's defaults as its first trial, so "before" is always
measured; before anything is exported that trial must have finished (a dead worker may have
left it unfinished: it is run again first). A study remembers its setup (machine, workload,
scale, training windows, objectives); re-using a name with a different setup is refused.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fattorus.app.tune.choose import choose, default_trial, is_default
from fattorus.app.tune.display import fmt_values
from fattorus.app.tune.errors import TuneError
from fattorus.app.tune.export import export_header, export_policy, report_skeleton, write_comparison
from fattorus.app.tune.objective import OBJECTIVES
from fattorus.app.tune.space import decode, default_trial_params, describe
from fattorus.app.tune.storage import (
    SETUP_ATTR,
    check_setup,
    fail_dead_trials,
    mask,
    open_storage,
    open_study,
    quiet_optuna,
    trial_counts,
)
from fattorus.app.tune.windows import Setup, load_topology, load_setup, window_label
from fattorus.app.tune.workers import add_trials, countdown, optimize

if TYPE_CHECKING:
    import optuna

    from fattorus.app.tune.cli import Options


def ensure_default(opts: Options, setup: Setup, study: optuna.Study) -> optuna.trial.FrozenTrial:
    """The finished paper-default trial, running it first if a dead worker left it unfinished:
    an export is never written without "before" measured on the same windows."""
    import optuna
    from optuna.trial import TrialState

    for _ in range(10):  # queued retries of other trials may run first
        base = default_trial(optuna.load_study(study_name=opts.name, storage=study._storage), setup.policy)
        if base is not None:
            return base
        print(f"[tune {opts.name}] the paper-default trial has not finished (its worker died?); running it now",
              flush=True)
        fail_dead_trials(study)
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if not any(is_default(t, setup.policy) for t in waiting):
            study.enqueue_trial(default_trial_params(setup.policy))
        optimize(opts, setup, countdown(1), 0, False, None)
    raise TuneError(f"study {opts.name!r}: the paper-default trial could not be completed; nothing exported")


def requeue_interrupted(study: optuna.Study) -> int:
    """Queue again, first, the point of every trial a Ctrl-C stopped (the objective marks it;
    Optuna failed it) that has no copy yet, as Optuna's retry callback queues a dead worker's:
    a copy whose ``failed_trial`` names it, so the trial seeds skip it
    (:func:`fattorus.app.tune.sampler.ordinal`). Returns how many were queued."""
    import optuna
    from optuna.trial import TrialState

    from fattorus.app.tune.objective import INTERRUPTED_ATTR
    from fattorus.app.tune.sampler import set_aside

    trials = study.get_trials(deepcopy=False)
    done = set_aside(trials)
    queued = 0
    for t in trials:
        if t.state == TrialState.FAIL and t.user_attrs.get(INTERRUPTED_ATTR) and t.number not in done:
            study.add_trial(optuna.trial.create_trial(
                state=TrialState.WAITING, params=t.params, distributions=t.distributions,
                system_attrs={**t.system_attrs, "failed_trial": t.number, "retry_history": [t.number]}))
            queued += 1
    return queued


def _enqueue_default(study: optuna.Study, policy: str) -> None:
    """Queue the paper's defaults unless a live trial already has them: "before" is always
    measured, first."""
    from optuna.trial import TrialState

    live = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    if not any(is_default(t, policy) for t in study.get_trials(deepcopy=False, states=live)):
        study.enqueue_trial(default_trial_params(policy))


def _refuse_nothing_to_export(opts: Options, study: optuna.Study, storage: optuna.storages.BaseStorage) -> None:
    """``--trials 0`` only exports and compares: refuse it on a study with no finished trial,
    before a default trial is queued or the setup recorded — and drop the study if this run
    just made it, so the corrected command starts afresh (with other windows, say)."""
    import optuna

    counts = trial_counts(study)
    if opts.trials != 0 or counts["complete"]:
        return
    if counts["total"] == 0 and SETUP_ATTR not in study.user_attrs:
        optuna.delete_study(study_name=opts.name, storage=storage)
        _drop_empty_sqlite(opts.storage, storage)
    raise TuneError(f"study {opts.name!r} has no finished trial yet; --trials 0 only exports and compares: "
                    "run some with --trials N")


def _drop_empty_sqlite(url: str, storage: optuna.storages.BaseStorage) -> None:
    """Remove the SQLite file of ``url`` when it holds no study (a refused first run made it:
    the review of session 31 found an empty ``results/tune/NAME.db`` left behind); any other
    storage, or a file holding studies, is left as it is."""
    import optuna

    if not url.startswith("sqlite:///") or url.startswith("sqlite:///:memory:"):
        return
    if optuna.get_all_study_summaries(storage, include_best_trial=False):
        return
    try:
        storage.remove_session()  # type: ignore[attr-defined]
        storage.engine.dispose()  # type: ignore[attr-defined]
    except AttributeError:  # a storage wrapped otherwise: the file stays, as before
        return
    Path(url[len("sqlite:///"):]).expanduser().unlink(missing_ok=True)


def _announce(opts: Options, setup: Setup, before: dict[str, int]) -> None:
    """The line saying what this run is about to do."""
    sizes = ", ".join(f"{window_label(w)}: {t.height}" for w, t in zip(setup.train, setup.train_tables))
    what = ", ".join(f"{o} ({OBJECTIVES[o][0][:3]})" for o in opts.objectives)
    model = ", run times from the bandwidth model" if setup.speedup == "model" else ""
    so_far = f"{before['complete']} complete, {before['pruned']} pruned, {before['fail']} failed"
    print(f"[tune {opts.name}] policy {setup.policy}{model}; {mask(opts.storage)}: {before['total']} trial(s) so far "
          f"({so_far}); adding {opts.trials} with {opts.jobs} worker(s); objective {what}; jobs read per training "
          f"window (before the replay's skips) {{{sizes}}}", flush=True)


def _optimized(opts: Options, study: optuna.Study, before: dict[str, int], opt_wall: float) -> None:
    """Report what the optimisation added; a study without a finished trial is an error."""
    counts = trial_counts(study)
    print(f"[tune {opts.name}] {counts['total'] - before['total']} trial(s) in {opt_wall:.0f} s; study now "
          f"{counts['total']} ({counts['complete']} complete, {counts['pruned']} pruned, {counts['fail']} failed; "
          f"{counts['distinct_points']} distinct points)",
          flush=True)
    if counts["complete"] == 0:
        raise TuneError(f"study {opts.name!r} has no finished trial yet; run some with --trials N")


def _export(opts: Options, setup: Setup, storage: optuna.storages.BaseStorage, study: optuna.Study,
            before: dict[str, int], opt_wall: float) -> dict[str, Any]:
    """Choose the trial, write the policy config and the comparison; returns the report."""
    import optuna

    base = ensure_default(opts, setup, study)
    study = optuna.load_study(study_name=opts.name, storage=storage)
    counts = trial_counts(study)
    chosen, rule, front = choose(opts, study, base)
    params, sched = decode(chosen.params, setup.policy)
    base_values = list(base.values) if base is not None else None
    print(f"[tune {opts.name}] paper default (trial {base.number if base else '-'}): "
          f"{fmt_values(opts.objectives, base_values)}", flush=True)
    print(f"[tune {opts.name}] tuned (trial {chosen.number}): {fmt_values(opts.objectives, chosen.values)} | "
          f"{describe(params, sched, setup.policy)}", flush=True)
    export_policy(opts.export, params, export_header(opts, setup, chosen, counts, rule, base_values, sched),
                  setup.policy)
    print(f"[tune {opts.name}] wrote {opts.export}", flush=True)
    report = report_skeleton(opts, setup, counts, before, opt_wall, base, base_values, chosen, rule, params, sched,
                             front)
    write_comparison(opts, setup, report, params, sched)
    return report


def run(opts: Options) -> dict[str, Any]:
    """Optimise, export and compare; returns the comparison report (also written to disk)."""
    import optuna

    quiet_optuna()
    t_start = time.perf_counter()
    scale = f"scale={opts.scale}" if isinstance(opts.scale, str) else f"x{opts.scale:g}"
    load_topology(opts.topo, opts.policy)  # a machine that cannot be tuned on: its one line before any progress line
    print(f"[tune {opts.name}] loading {opts.workload} {scale} on {opts.topo} ...", flush=True)
    setup = load_setup(opts.topo, opts.workload, opts.scale, opts.train, opts.test, opts.cores_per_node,
                       opts.policy, opts.speedup)
    storage = open_storage(opts.storage, opts.heartbeat)
    study = open_study(opts, storage)
    fail_dead_trials(study)
    _refuse_nothing_to_export(opts, study, storage)
    check_setup(study, setup.fingerprint(opts.objectives), opts.name, opts.storage, setup.config_defaults)
    if opts.trials > 0:  # (--trials 0 runs none: nothing to queue)
        stopped = requeue_interrupted(study)
        if stopped:
            print(f"[tune {opts.name}] {stopped} trial(s) a Ctrl-C stopped midway: their points run again first",
                  flush=True)
    before = trial_counts(study)
    _enqueue_default(study, setup.policy)
    _announce(opts, setup, before)

    t_opt = time.perf_counter()
    add_trials(opts, setup, study)
    opt_wall = time.perf_counter() - t_opt
    study = optuna.load_study(study_name=opts.name, storage=storage)
    _optimized(opts, study, before, opt_wall)
    report = _export(opts, setup, storage, study, before, opt_wall)
    print(f"[tune {opts.name}] done in {time.perf_counter() - t_start:.0f} s", flush=True)
    return report


__all__ = ["ensure_default", "requeue_interrupted", "run"]
