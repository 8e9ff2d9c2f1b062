"""Scoring a point: replay the training windows and pool the metrics the objectives read.

* **Objectives** (pooled over all jobs / utilization samples of the windows): ``mean_wait``
  and ``p95_wait`` (seconds, minimised), ``utilization`` (busy share of the machine's
  node-minutes, maximised), ``mean_aph`` (average pairwise hops per job, minimised) and
  ``exposure`` (share of jobs that interfere with a concurrent job, minimised).
* **One trial** replays the training windows in order, one per stage, and reports the
  running value after each, so a median pruner can stop it early (single objective only).
* **Repeated points**: replays are deterministic, so a point that already finished is not
  replayed; its stored result is reused (``same_as_trial``).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fattorus.app.tune.space import POLICY, suggest

if TYPE_CHECKING:  # heavy imports stay lazy so that --help and option errors are instant
    import optuna
    import polars as pl

    from fattorus.app.tune.windows import Setup
    from fattorus.topology import Topology

#: objective name -> (direction, key of :func:`pooled`'s metrics)
OBJECTIVES: dict[str, tuple[str, str]] = {
    "mean_wait": ("minimize", "mean_wait_s"),
    "p95_wait": ("minimize", "p95_wait_s"),
    "utilization": ("maximize", "utilization"),
    "mean_aph": ("minimize", "mean_aph"),
    "exposure": ("minimize", "exposure_share"),
    # Only with --speedup model (the flow model decides run times): utilization x application
    # efficiency, the torus paper's total system efficiency.
    "system_efficiency": ("maximize", "system_efficiency"),
}
METRICS = ("mean_wait_s", "p95_wait_s", "utilization", "mean_aph", "exposure_share")
#: What :func:`pooled` adds when the replays ran with the bandwidth model (``--speedup model``).
MODEL_METRICS = ("application_efficiency", "system_efficiency")
#: Objectives that need ``--speedup model``.
MODEL_OBJECTIVES = ("system_efficiency",)
#: ``--speedup`` choices: the logged run times, or run times from the flow model at each start.
SPEEDUPS = ("none", "model")


@dataclasses.dataclass(frozen=True)
class Sample:
    """The per-job and per-minute arrays of one replay that the objectives need.

    Attributes:
      wait_s: per job, seconds. aph: per job, average pairwise hops. exposed: per job, bool.
      utilization: per simulated minute, busy share of the machine (0..1).
    """

    wait_s: np.ndarray
    aph: np.ndarray
    exposed: np.ndarray
    utilization: np.ndarray
    #: With the bandwidth model: node-seconds the jobs were busy and the work done in them at
    #: the ideal speed (:attr:`fattorus.analysis.commtime.ModelRuntimes.busy_node_s`); else None.
    busy_node_s: float | None = None
    work_node_s: float | None = None


def run_window(table: pl.DataFrame, topo: Topology, params: Mapping[str, Any], sched: str, policy: str = POLICY,
               speedup: str = "none", node_kind: str | None = None) -> Sample:
    """Replay one window with ``policy`` and ``params`` under ``sched``; ``speedup="model"``:
    run times from the flow model at each job start (a fresh model per replay); ``node_kind``:
    the workload's node-kind rule (``conf/workload`` ``node_kind``)."""
    from fattorus.analysis import commtime
    from fattorus.sched import replay

    # As +speedup=model sets it, drawn from seed 0 (a sweep's default).
    model = commtime.model_runtimes(topo) if speedup == "model" else None
    r = replay.replay(table, topo, policy, sched, policy_params=dict(params), node_kind=node_kind,
                      runtime_model=model)
    return Sample(
        wait_s=r.jobs["wait_s"].to_numpy(),
        aph=r.jobs["aph"].to_numpy(),
        exposed=r.jobs["exposed"].to_numpy().astype(bool),
        utilization=r.utilization["utilization"].to_numpy(),
        busy_node_s=None if model is None else model.busy_node_s,
        work_node_s=None if model is None else model.work_node_s,
    )


def run_setup_window(setup: Setup, table: pl.DataFrame, params: Mapping[str, Any], sched: str) -> Sample:
    """:func:`run_window` with the study's machine, policy, speedup and node kind."""
    return run_window(table, setup.topo, params, sched, setup.policy, setup.speedup, setup.node_kind)


def pooled(samples: Sequence[Sample]) -> dict[str, float]:
    """Metrics over all jobs (and all utilization samples) of several replays.

    For one replay they equal its ``summary.json`` values: ``wait_s.mean``, ``wait_s.p95``,
    ``utilization.mean``, ``aph.mean``, ``interference.exposed_share``.

    Returns:
      ``mean_wait_s`` and ``p95_wait_s`` (seconds), ``utilization`` (0..1), ``mean_aph``
      (hops), ``exposure_share`` (0..1), ``jobs`` (count); when every replay ran with the
      bandwidth model also ``application_efficiency`` (work at the ideal speed over busy
      node-seconds, pooled; ``summary.json`` ``runtime_model.application_efficiency`` for one
      replay) and ``system_efficiency`` (``utilization`` times that).
    """
    wait = np.concatenate([s.wait_s for s in samples]) if samples else np.empty(0)
    aph = np.concatenate([s.aph for s in samples]) if samples else np.empty(0)
    exposed = np.concatenate([s.exposed for s in samples]) if samples else np.empty(0, bool)
    util = np.concatenate([s.utilization for s in samples]) if samples else np.empty(0)
    n = len(wait)
    out = {
        "mean_wait_s": float(wait.mean()) if n else 0.0,
        "p95_wait_s": float(np.quantile(wait, 0.95)) if n else 0.0,
        "utilization": float(util.mean()) if len(util) else 0.0,
        "mean_aph": float(aph.mean()) if n else 0.0,
        "exposure_share": float(exposed.mean()) if n else 0.0,
        "jobs": n,
    }
    if samples and all(s.busy_node_s is not None for s in samples):
        busy = sum(s.busy_node_s for s in samples)
        app = sum(s.work_node_s for s in samples) / busy if busy > 0 else 0.0
        out.update(application_efficiency=app, system_efficiency=out["utilization"] * app)
    return out


def metric_of(metrics: Mapping[str, float], objective: str) -> float:
    """The value of ``objective`` in a :func:`pooled` result."""
    return float(metrics[OBJECTIVES[objective][1]])


def _twin(trial: optuna.Trial) -> optuna.trial.FrozenTrial | None:
    """A finished trial of the same study with exactly the same parameters, if any.

    Samplers over a mostly categorical space often propose a point again; its replays would
    give the same numbers, so the earlier result is reused.
    """
    from optuna.trial import TrialState

    params = trial.params
    for t in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.params == params and "train_metrics" in t.user_attrs:
            return t
    return None


def _reuse(trial: optuna.Trial, twin: optuna.trial.FrozenTrial, single: bool) -> float | tuple[float, ...]:
    """Record ``twin``'s results as ``trial``'s (same reports, same metrics) and return its values."""
    if single:
        for step, v in sorted(twin.intermediate_values.items()):
            trial.report(v, step)
    trial.set_user_attr("train_metrics", twin.user_attrs.get("train_metrics"))
    trial.set_user_attr("same_as_trial", twin.number)
    return twin.values[0] if single else tuple(twin.values)


def _replay_windows(trial: optuna.Trial, setup: Setup, params: Mapping[str, Any], sched: str,
                    objectives: tuple[str, ...], prune: bool) -> dict[str, float]:
    """Replay the training windows in order; single objective: report the running value after
    each and stop (``TrialPruned``) when the pruner says so before the last window."""
    import optuna

    single = len(objectives) == 1
    last = len(setup.train_tables) - 1
    samples: list[Sample] = []
    metrics: dict[str, float] = {}
    for step, table in enumerate(setup.train_tables):
        samples.append(run_setup_window(setup, table, params, sched))
        metrics = pooled(samples)
        if single:
            value = metric_of(metrics, objectives[0])
            trial.report(value, step)
            if prune and step < last and trial.should_prune():
                trial.set_user_attr("pruned_after_windows", step + 1)
                raise optuna.TrialPruned(f"running {objectives[0]} {value:.6g} after window {step + 1}")
    return metrics


#: User attribute of a trial a Ctrl-C (KeyboardInterrupt) stopped.
INTERRUPTED_ATTR = "interrupted"


def make_objective(setup: Setup, objectives: Sequence[str], prune: bool = True) -> Callable[[optuna.Trial], Any]:
    """The Optuna objective: replay the training windows in order for a drawn point.

    Single objective: after window ``i`` (step ``i``) the running value (pooled over windows
    ``0..i``) is reported, and the trial is pruned when the pruner says so before the last
    window. Several objectives: no reports (Optuna cannot prune them). The trial's user
    attributes get ``policy_params``, ``sched`` and ``train_metrics`` (all five metrics).
    """
    objectives = tuple(objectives)
    single = len(objectives) == 1

    def objective(trial: optuna.Trial) -> float | tuple[float, ...]:
        trial.set_user_attr(INTERRUPTED_ATTR, False)  # a retried copy's inherited mark is not this trial's
        try:
            return scored(trial)
        except KeyboardInterrupt:
            # Optuna fails the trial; marked, its point runs again when the study resumes
            # (fattorus.app.tune.study.requeue_interrupted) and its number is skipped by the
            # trial seeds (fattorus.app.tune.sampler), so a Ctrl-C does not change the study.
            try:
                trial.set_user_attr(INTERRUPTED_ATTR, True)
            finally:
                raise

    def scored(trial: optuna.Trial) -> float | tuple[float, ...]:
        params, sched = suggest(trial, setup.policy)
        trial.set_user_attr("policy_params", params)
        trial.set_user_attr("sched", sched)
        # Which process ran the trial (host, pid): a trial left RUNNING can be traced to it.
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        twin = _twin(trial)
        if twin is not None:  # replays are deterministic: the same point scores the same
            return _reuse(trial, twin, single)
        metrics = _replay_windows(trial, setup, params, sched, objectives, prune)
        trial.set_user_attr("train_metrics", metrics)
        values = tuple(metric_of(metrics, o) for o in objectives)
        return values[0] if single else values

    return objective


__all__ = ["INTERRUPTED_ATTR", "METRICS", "MODEL_METRICS", "MODEL_OBJECTIVES", "OBJECTIVES", "SPEEDUPS", "Sample", "make_objective",
           "metric_of", "pooled", "run_setup_window", "run_window"]
