"""Optuna studies over the ``ta`` policy's heuristics: ``python -m fattorus.tune --name NAME``.

A study searches the named heuristics of the interference-free topology-aware policy
(:class:`fattorus.policy.TAParams`: the six T1/T2/T3 pod/leaf sort orders, the tie rule and
the hybrid ``relax_after_s`` knob) together with the queue policy (``easy``/``fcfs``), scoring
each trial by scheduler replays of a real job log on training windows (days counted from the
first submission). Then it exports the best parameters as a ready-to-use policy config
(``conf/policy/ta_tuned_<name>.yaml``) and compares them with the paper's defaults on held-out
test windows (``results/tune/<name>/comparison.{json,md}``).

* **One trial** replays the training windows in order, one per stage. After each window it
  reports the running objective (pooled over the windows replayed so far) and a
  :class:`optuna.pruners.MedianPruner` stops trials whose partial replays are already worse
  than the median of finished trials at the same stage. Multi-objective studies (``--multi``)
  are not pruned (Optuna cannot prune them).
* **Objectives** (pooled over all jobs / utilization samples of the windows): ``mean_wait``
  and ``p95_wait`` (seconds, minimised), ``utilization`` (busy share of the machine's
  node-minutes, maximised), ``mean_aph`` (average pairwise hops per job, minimised) and
  ``exposure`` (share of jobs that interfere with a concurrent job, minimised).
* **Storage** is any SQLAlchemy URL (default ``sqlite:///results/tune/<name>.db``); the study
  is loaded if it exists, so re-running the same command adds trials. A new study starts with
  the paper's defaults as its first trial, so "before" is always measured. A study remembers
  its setup (machine, workload, scale, training windows, objectives); re-using a name with a
  different setup is refused.
* **Parallel trials** (``--jobs J``): J worker *processes* (spawned, each with its own
  workload copy) run ``study.optimize`` against the same storage, taking trials from a shared
  counter until ``--trials`` have run; Optuna's thread-level ``n_jobs`` would serialise on the
  GIL. Enqueued trials (the paper default) run first in the main process. Each worker's
  sampler is seeded from ``(--seed, trials already in the study, worker index)``; TPE uses
  the constant liar so workers do not propose the same point at once.
* **Repeated points**: a sampler may propose a point that already finished; replays are
  deterministic, so its stored result is reused instead of replaying (``same_as_trial``).
* **Determinism**: with ``--jobs 1`` a study is a deterministic function of the seed and the
  storage's contents (replays are deterministic). With several workers the interleaving of
  trials depends on timing, so only each worker's own draws are reproducible.
* **Multi-objective export** (``--pick``): ``constrained`` (default) takes, among the Pareto
  front, the trial with the best first objective whose other objectives are at least as good
  as the paper default's (e.g. the fastest schedule that is still as interference-free as the
  paper's policy); ``knee`` takes the front trial nearest the ideal point after scaling each
  objective to [0, 1] over the front. ``constrained`` falls back to ``knee`` when the default
  trial has not finished.

Progress: one status line per finished trial. Ctrl-C stops cleanly: finished trials are in
the storage (the interrupted one is marked failed) and the same command resumes. Every user
mistake is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import math
import os
import re
import socket
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fattorus.sched.policy import ORDERS, TIES, TAParams

if TYPE_CHECKING:  # heavy imports stay lazy so that --help and option errors are instant
    import optuna
    import polars as pl

    from fattorus.topology.fattree import FatTree

PROG = "fattorus.tune"
DAY_S = 86400.0

#: objective name -> (direction, key of :func:`pooled`'s metrics, unit for display)
OBJECTIVES: dict[str, tuple[str, str]] = {
    "mean_wait": ("minimize", "mean_wait_s"),
    "p95_wait": ("minimize", "p95_wait_s"),
    "utilization": ("maximize", "utilization"),
    "mean_aph": ("minimize", "mean_aph"),
    "exposure": ("minimize", "exposure_share"),
}
METRICS = ("mean_wait_s", "p95_wait_s", "utilization", "mean_aph", "exposure_share")
METRIC_LABELS = {
    "mean_wait_s": "mean wait",
    "p95_wait_s": "p95 wait",
    "utilization": "utilization",
    "mean_aph": "mean APH (hops)",
    "exposure_share": "exposure share",
}

ORDER_KEYS = ("t1_pod_order", "t1_leaf_order", "t2_pod_order", "t2_leaf_order", "t3_pod_order", "t3_leaf_order")
SCHEDS = ("easy", "fcfs")
RELAX_MIN_S = 600.0  # 10 minutes
RELAX_MAX_S = 7 * DAY_S  # 7 days
PRUNER_STARTUP_TRIALS = 5  # finished trials before the median pruner may prune
SAMPLERS = ("tpe", "nsga2", "random")
PICKS = ("constrained", "knee")
SETUP_ATTR = "fattorus_tune_setup"
SEARCH_SPACE_VERSION = 1

Window = tuple[float, float]  # [start, end) in days from the first submission


class TuneError(ValueError):
    """A user mistake (option, workload, storage), reported as one line with exit code 2."""


class WorkerError(RuntimeError):
    """A worker process failed (a bug or a lost storage), reported as one line with exit code 1."""


# ---------------------------------------------------------------------------------------
# Search space


def paper_defaults() -> tuple[dict[str, Any], str]:
    """The paper's policy: :class:`TAParams` defaults (no hybrid rule) under EASY."""
    return dataclasses.asdict(TAParams()), "easy"


def default_trial_params() -> dict[str, Any]:
    """The paper's defaults as Optuna trial parameters (what :func:`suggest` would draw)."""
    params, sched = paper_defaults()
    out: dict[str, Any] = {k: params[k] for k in ORDER_KEYS}
    out["tie"] = params["tie"]
    out["relax"] = "never" if params["relax_after_s"] is None else "after"
    if params["relax_after_s"] is not None:
        out["relax_after_s"] = float(params["relax_after_s"])
    out["sched"] = sched
    return out


def suggest(trial: optuna.Trial) -> tuple[dict[str, Any], str]:
    """Draw one point of the search space: ``(ta policy params, scheduler)``.

    Space: each of the six sort orders in ``least``/``most``; ``tie`` in ``low_id``/``high_id``;
    ``relax`` in ``never``/``after`` and, when ``after``, ``relax_after_s`` log-uniform in
    [600 s, 7 days]; ``sched`` in ``easy``/``fcfs``.
    """
    params: dict[str, Any] = {k: trial.suggest_categorical(k, list(ORDERS)) for k in ORDER_KEYS}
    params["tie"] = trial.suggest_categorical("tie", list(TIES))
    relax = trial.suggest_categorical("relax", ["never", "after"])
    params["relax_after_s"] = (
        trial.suggest_float("relax_after_s", RELAX_MIN_S, RELAX_MAX_S, log=True) if relax == "after" else None
    )
    sched = trial.suggest_categorical("sched", list(SCHEDS))
    return params, sched


def decode(trial_params: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Turn a trial's Optuna parameters back into ``(ta policy params, scheduler)``."""
    params: dict[str, Any] = {k: trial_params[k] for k in ORDER_KEYS}
    params["tie"] = trial_params["tie"]
    params["relax_after_s"] = float(trial_params["relax_after_s"]) if trial_params["relax"] == "after" else None
    return params, str(trial_params["sched"])


def describe(params: Mapping[str, Any], sched: str) -> str:
    """Short one-line text of a point of the search space."""
    def o(k: str) -> str:
        return str(params[k])

    relax = params.get("relax_after_s")
    relax_txt = "never" if relax is None else f"{relax:.0f} s ({relax / 3600:.2f} h)"
    return (f"sched={sched} t1={o('t1_pod_order')}/{o('t1_leaf_order')} t2={o('t2_pod_order')}/{o('t2_leaf_order')} "
            f"t3={o('t3_pod_order')}/{o('t3_leaf_order')} tie={o('tie')} relax={relax_txt}")


# ---------------------------------------------------------------------------------------
# Options


def parse_windows(text: str, option: str) -> tuple[Window, ...]:
    """``"0:14,14:28"`` -> ``((0.0, 14.0), (14.0, 28.0))``: days from the first submission.

    Each window is ``START:END`` with ``0 <= START < END`` (numbers, days). ``none`` (or an
    empty string) is no window.
    """
    text = text.strip()
    if text.lower() in ("", "none"):
        return ()
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*:\s*([0-9]*\.?[0-9]+)\s*", part)
        if not m:
            raise TuneError(f"{option} {text!r}: each window is START:END in days (e.g. 0:14,14:28), got {part!r}")
        a, b = float(m.group(1)), float(m.group(2))
        if not b > a:
            raise TuneError(f"{option} {text!r}: window {part.strip()!r} must end after it starts")
        out.append((a, b))
    return tuple(out)


def window_label(w: Window) -> str:
    """``(0.0, 14.0)`` -> ``"0:14"``."""
    return ":".join(f"{x:g}" for x in w)


def windows_label(ws: Sequence[Window]) -> str:
    """Windows as they are written on the command line."""
    return ",".join(window_label(w) for w in ws) or "none"


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` except where the default is None (the help text says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None:
            return action.help or ""
        return super()._get_help_string(action) or ""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{PROG}: error: {message} (see --help)\n")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (every default shown by ``--help``)."""
    p = _Parser(
        prog="python -m fattorus.tune",
        description="Optuna study over the `ta` policy's heuristics (sort orders, tie rule, hybrid "
        "relax_after_s) and the scheduler, scored by replays of a job log on training windows; exports "
        "the best as a policy config and compares it with the paper's defaults on held-out windows.",
        formatter_class=_Help,
        epilog="example: python -m fattorus.tune --name atlas2x_cab --topo cab --workload atlas --scale 2 "
        "--train 0:14,14:28,28:42 --test 42:56,56:70 --trials 40 --jobs 2. Re-running a command adds "
        "trials to the stored study; docs/tuning.md has more.",
    )
    p.add_argument("--name", required=True, help="study name (letters, digits, _ and -): names the storage, "
                   "the exported config and the results directory")
    p.add_argument("--topo", default="cab", help="machine: conf/topo/NAME.yaml or a YAML path")
    p.add_argument("--workload", default="atlas", help="conf/workload/NAME.yaml, a workload YAML path, "
                   "or a job log (SWF or sacct dump)")
    p.add_argument("--cores-per-node", type=int, default=None,
                   help="for a job-log path: cores per node (default: the log's header)")
    p.add_argument("--scale", type=float, default=2.0, help="node-count multiplier (Aug-2x: 2); jobs pushed "
                   "past the machine are dropped")
    p.add_argument("--train", default="0:14,14:28", help="training windows START:END in days from the first "
                   "submission, comma-separated; each window is one pruning stage, in order")
    p.add_argument("--test", default="28:42", help="held-out windows for the final comparison ('none': skip it)")
    p.add_argument("--objective", choices=list(OBJECTIVES), default=None,
                   help="single objective (utilization is maximised, the others minimised) "
                   "(default: mean_wait)")
    p.add_argument("--multi", default=None, metavar="OBJ,OBJ",
                   help="multi-objective study over these objectives, e.g. mean_wait,exposure "
                   "(Pareto front; no pruning)")
    p.add_argument("--pick", choices=list(PICKS), default="constrained",
                   help="multi-objective: Pareto-front trial to export; constrained: best first objective among "
                   "those at least as good as the paper default on the others; knee: nearest the ideal point")
    p.add_argument("--trials", type=int, default=40, help="trials to add in this run (0: only export and compare)")
    p.add_argument("--jobs", type=int, default=1, help="parallel worker processes sharing the storage")
    p.add_argument("--storage", default=None, help="any SQLAlchemy URL, e.g. postgresql://user@host/db "
                   "(default: sqlite:///results/tune/<name>.db)")
    p.add_argument("--sampler", choices=list(SAMPLERS), default="tpe",
                   help="Optuna sampler (tpe handles single and multiple objectives; nsga2: NSGA-II)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds of optimisation after which no new trial starts (default: no limit)")
    p.add_argument("--export", default=None,
                   help="policy config to write (default: conf/policy/ta_tuned_<name>.yaml in the repository)")
    p.add_argument("--out", default=None, help="comparison directory (default: results/tune/<name>)")
    p.add_argument("--heartbeat", type=float, default=60.0,
                   help="seconds between a running trial's heartbeats in the storage; a trial silent for 3 "
                   "heartbeats (its worker died) is failed and retried when the study resumes")
    return p


@dataclasses.dataclass(frozen=True)
class Options:
    """Checked command-line options."""

    name: str
    topo: str
    workload: str
    cores_per_node: int | None
    scale: float
    train: tuple[Window, ...]
    test: tuple[Window, ...]
    objectives: tuple[str, ...]
    pick: str
    trials: int
    jobs: int
    storage: str
    sampler: str
    seed: int
    timeout: float | None
    export: Path
    out: Path
    heartbeat: float = 60.0

    @property
    def multi(self) -> bool:
        """Whether the study has several objectives."""
        return len(self.objectives) > 1

    @property
    def directions(self) -> list[str]:
        """Optuna directions of the objectives."""
        return [OBJECTIVES[o][0] for o in self.objectives]


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse and check the options; mistakes raise :class:`TuneError` (argparse's exit 2)."""
    a = build_parser().parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", a.name):
        raise TuneError(f"--name {a.name!r}: use letters, digits, '_' and '-' only")
    if a.multi is not None and a.objective is not None:
        raise TuneError("give --objective or --multi, not both")
    if a.multi is not None:
        objectives = tuple(s.strip() for s in a.multi.split(",") if s.strip())
        unknown = [o for o in objectives if o not in OBJECTIVES]
        if unknown:
            raise TuneError(f"--multi {a.multi!r}: unknown objective(s) {unknown}; choose from {list(OBJECTIVES)}")
        if len(objectives) < 2 or len(set(objectives)) != len(objectives):
            raise TuneError(f"--multi {a.multi!r}: needs two or more different objectives")
    else:
        objectives = (a.objective or "mean_wait",)
    if a.trials < 0:
        raise TuneError(f"--trials {a.trials}: must be >= 0")
    if a.jobs < 1:
        raise TuneError(f"--jobs {a.jobs}: must be >= 1")
    if not (a.scale > 0 and math.isfinite(a.scale)):
        raise TuneError(f"--scale {a.scale}: must be a positive number")
    if a.timeout is not None and not a.timeout > 0:
        raise TuneError(f"--timeout {a.timeout}: must be a positive number of seconds")
    if not (a.heartbeat > 0 and math.isfinite(a.heartbeat)):
        raise TuneError(f"--heartbeat {a.heartbeat}: must be a positive number of seconds")
    if a.cores_per_node is not None and a.cores_per_node < 1:
        raise TuneError(f"--cores-per-node {a.cores_per_node}: must be >= 1")
    train = parse_windows(a.train, "--train")
    if not train:
        raise TuneError("--train: give at least one window START:END (days)")
    test = parse_windows(a.test, "--test")
    from fattorus.topology.fattree import conf_dir

    return Options(
        name=a.name,
        topo=a.topo,
        workload=a.workload,
        cores_per_node=a.cores_per_node,
        scale=float(a.scale),
        train=train,
        test=test,
        objectives=objectives,
        pick=a.pick,
        trials=a.trials,
        jobs=a.jobs,
        storage=a.storage or f"sqlite:///results/tune/{a.name}.db",
        sampler=a.sampler,
        seed=a.seed,
        timeout=a.timeout,
        export=Path(a.export) if a.export else conf_dir() / "policy" / f"ta_tuned_{a.name}.yaml",
        out=Path(a.out) if a.out else Path("results") / "tune" / a.name,
        heartbeat=float(a.heartbeat),
    )


# ---------------------------------------------------------------------------------------
# Workload and windows


@dataclasses.dataclass(frozen=True, eq=False)
class Setup:
    """What trials replay: the machine and the job tables of each window.

    Attributes:
      ft: the machine.
      workload: the workload's name; ``sha256`` the log file's digest.
      scale: node-count multiplier applied before windowing.
      train, test: windows, days from the first submission of the scaled table.
      train_tables, test_tables: the jobs submitted in each window (with ``estimate_s``).
    """

    ft: FatTree
    workload: str
    sha256: str
    scale: float
    train: tuple[Window, ...]
    test: tuple[Window, ...]
    train_tables: tuple[pl.DataFrame, ...]
    test_tables: tuple[pl.DataFrame, ...]

    def fingerprint(self, objectives: Sequence[str]) -> dict[str, Any]:
        """What must not change when a study is resumed."""
        return {
            "topo": self.ft.name,
            "workload": self.workload,
            "workload_sha256": self.sha256,
            "scale": self.scale,
            "train": windows_label(self.train),
            "objectives": list(objectives),
            "search_space": SEARCH_SPACE_VERSION,
        }


def workload_config(spec: str, cores_per_node: int | None) -> dict[str, Any]:
    """A ``conf/workload/*.yaml`` mapping for ``--workload`` (a name, a YAML path, or a log)."""
    import yaml

    from fattorus.topology.fattree import conf_dir

    named = conf_dir() / "workload" / f"{spec}.yaml"
    path = Path(spec).expanduser()
    if re.fullmatch(r"[A-Za-z0-9_-]+", spec) and named.is_file():
        cfg = yaml.safe_load(named.read_text())
    elif path.suffix in (".yaml", ".yml") and path.is_file():
        try:
            cfg = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            raise TuneError(f"--workload {spec}: not valid YAML ({' '.join(str(err).split())})") from None
        if not isinstance(cfg, dict):
            raise TuneError(f"--workload {spec}: not a workload config (a mapping with name, path, format, ...)")
    elif path.is_file():
        cfg = {"name": path.name.split(".")[0], "path": str(path.resolve()), "format": "auto"}
    else:
        choices = sorted(p.stem for p in (conf_dir() / "workload").glob("*.yaml"))
        raise TuneError(f"--workload {spec!r}: neither a conf/workload name {choices} nor an existing file")
    if cores_per_node is not None:
        cfg["cores_per_node"] = cores_per_node
    return dict(cfg)


def load_setup(topo: str, workload_spec: str, scale: float, train: Sequence[Window], test: Sequence[Window],
               cores_per_node: int | None = None) -> Setup:
    """Load the machine and the workload, scale it, and cut the windows.

    Windows are cut exactly as the study app does (``workload.scale=S
    workload.window_start_days=A workload.window_days=B-A``): scale first, then count days
    from the first submission of the scaled table.
    """
    from fattorus import workload
    from fattorus.topology import fattree
    from fattorus.topology.fattree import TopologyError

    try:
        ft = fattree.load(topo)
    except (TopologyError, OSError, ValueError) as err:
        raise TuneError(f"--topo {topo}: {err}") from None
    cfg = workload_config(workload_spec, cores_per_node)
    cfg.update(scale=scale, window_start_days=0, window_days=None)
    try:
        wl, _counts = workload.from_config(cfg, machine_nodes=ft.n_nodes)
    except (OSError, ValueError) as err:  # WorkloadError is a ValueError
        raise TuneError(f"--workload {workload_spec}: {' '.join(str(err).split())}") from None
    jobs = workload.with_estimate(wl.jobs)
    span = jobs["submit_s"].max()
    origin = jobs["submit_s"].min()
    span_days = 0.0 if span is None or origin is None else (float(span) - float(origin)) / DAY_S

    def cut(ws: Sequence[Window], option: str) -> tuple[pl.DataFrame, ...]:
        tables = []
        for a, b in ws:
            t = workload.first_days(jobs, b - a, a)
            if t.height == 0:
                raise TuneError(f"{option}: window {window_label((a, b))} holds no jobs "
                                f"(the workload's submissions span {span_days:.1f} days)")
            tables.append(t)
        return tuple(tables)

    return Setup(
        ft=ft,
        workload=str(cfg.get("name", workload_spec)),
        sha256=wl.sha256,
        scale=float(scale),
        train=tuple(train),
        test=tuple(test),
        train_tables=cut(train, "--train"),
        test_tables=cut(test, "--test"),
    )


# ---------------------------------------------------------------------------------------
# Replays and metrics


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


def run_window(table: pl.DataFrame, ft: FatTree, params: Mapping[str, Any], sched: str) -> Sample:
    """Replay one window with the ``ta`` policy and ``params`` under ``sched``."""
    from fattorus.sched import replay

    r = replay.replay(table, ft, "ta", sched, policy_params=dict(params))
    return Sample(
        wait_s=r.jobs["wait_s"].to_numpy(),
        aph=r.jobs["aph"].to_numpy(),
        exposed=r.jobs["exposed"].to_numpy().astype(bool),
        utilization=r.utilization["utilization"].to_numpy(),
    )


def pooled(samples: Sequence[Sample]) -> dict[str, float]:
    """Metrics over all jobs (and all utilization samples) of several replays.

    For one replay they equal its ``summary.json`` values: ``wait_s.mean``, ``wait_s.p95``,
    ``utilization.mean``, ``aph.mean``, ``interference.exposed_share``.

    Returns:
      ``mean_wait_s`` and ``p95_wait_s`` (seconds), ``utilization`` (0..1), ``mean_aph``
      (hops), ``exposure_share`` (0..1), ``jobs`` (count).
    """
    wait = np.concatenate([s.wait_s for s in samples]) if samples else np.empty(0)
    aph = np.concatenate([s.aph for s in samples]) if samples else np.empty(0)
    exposed = np.concatenate([s.exposed for s in samples]) if samples else np.empty(0, bool)
    util = np.concatenate([s.utilization for s in samples]) if samples else np.empty(0)
    n = len(wait)
    return {
        "mean_wait_s": float(wait.mean()) if n else 0.0,
        "p95_wait_s": float(np.quantile(wait, 0.95)) if n else 0.0,
        "utilization": float(util.mean()) if len(util) else 0.0,
        "mean_aph": float(aph.mean()) if n else 0.0,
        "exposure_share": float(exposed.mean()) if n else 0.0,
        "jobs": n,
    }


def metric_of(metrics: Mapping[str, float], objective: str) -> float:
    """The value of ``objective`` in a :func:`pooled` result."""
    return float(metrics[OBJECTIVES[objective][1]])


def make_objective(setup: Setup, objectives: Sequence[str], prune: bool = True) -> Callable[[optuna.Trial], Any]:
    """The Optuna objective: replay the training windows in order for a drawn point.

    Single objective: after window ``i`` (step ``i``) the running value (pooled over windows
    ``0..i``) is reported, and the trial is pruned when the pruner says so before the last
    window. Several objectives: no reports (Optuna cannot prune them). The trial's user
    attributes get ``policy_params``, ``sched`` and ``train_metrics`` (all five metrics).
    """
    import optuna

    objectives = tuple(objectives)
    single = len(objectives) == 1
    last = len(setup.train_tables) - 1

    def objective(trial: optuna.Trial) -> float | tuple[float, ...]:
        params, sched = suggest(trial)
        trial.set_user_attr("policy_params", params)
        trial.set_user_attr("sched", sched)
        # Which process ran the trial (host, pid): a trial left RUNNING can be traced to it.
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        twin = _twin(trial)
        if twin is not None:  # replays are deterministic: the same point scores the same
            if single:
                for step, v in sorted(twin.intermediate_values.items()):
                    trial.report(v, step)
            trial.set_user_attr("train_metrics", twin.user_attrs.get("train_metrics"))
            trial.set_user_attr("same_as_trial", twin.number)
            return twin.values[0] if single else tuple(twin.values)
        samples: list[Sample] = []
        metrics: dict[str, float] = {}
        for step, table in enumerate(setup.train_tables):
            samples.append(run_window(table, setup.ft, params, sched))
            metrics = pooled(samples)
            if single:
                value = metric_of(metrics, objectives[0])
                trial.report(value, step)
                if prune and step < last and trial.should_prune():
                    trial.set_user_attr("pruned_after_windows", step + 1)
                    raise optuna.TrialPruned(f"running {objectives[0]} {value:.6g} after window {step + 1}")
        trial.set_user_attr("train_metrics", metrics)
        values = tuple(metric_of(metrics, o) for o in objectives)
        return values[0] if single else values

    return objective


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


# ---------------------------------------------------------------------------------------
# Display


def fmt_value(objective_or_metric: str, v: float | None) -> str:
    """Human-readable value of an objective or metric."""
    key = OBJECTIVES[objective_or_metric][1] if objective_or_metric in OBJECTIVES else objective_or_metric
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if key.endswith("_s"):
        return f"{v:,.0f} s ({v / 3600:.2f} h)"
    if key in ("utilization", "exposure_share"):
        return f"{v:.2%}"
    return f"{v:.4f}"


def fmt_values(objectives: Sequence[str], values: Sequence[float] | None) -> str:
    """``mean_wait 1,234 s (0.34 h), exposure 1.20%``."""
    if values is None:
        return "-"
    return ", ".join(f"{o} {fmt_value(o, v)}" for o, v in zip(objectives, values))


class StatusLine:
    """Study callback: one status line per finished trial (number, value, best so far, params)."""

    def __init__(self, objectives: Sequence[str], n_windows: int, worker: int | None = None) -> None:
        self.objectives = tuple(objectives)
        self.n_windows = n_windows
        self.tag = "" if worker is None else f" w{worker}"
        self.t0 = time.perf_counter()

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """Print the line for ``trial``."""
        from optuna.trial import TrialState

        elapsed = time.perf_counter() - self.t0
        what = describe(*decode(trial.params)) if "relax" in trial.params else str(trial.params)
        if trial.state == TrialState.PRUNED:
            step = trial.last_step
            val = trial.intermediate_values.get(step) if step is not None else None
            result = (f"pruned after window {(step or 0) + 1}/{self.n_windows} "
                      f"(running {self.objectives[0]} {fmt_value(self.objectives[0], val)})")
        elif trial.state == TrialState.COMPLETE:
            result = fmt_values(self.objectives, trial.values)
            if "same_as_trial" in trial.user_attrs:
                result += f" (same point as trial {trial.user_attrs['same_as_trial']}, not replayed)"
        else:
            result = trial.state.name.lower()
        if len(self.objectives) == 1:
            try:
                best = study.best_trial
                best_txt = f"best {fmt_value(self.objectives[0], best.value)} (trial {best.number})"
            except ValueError:
                best_txt = "best -"
        else:
            best_txt = f"front {len(study.best_trials)} trial(s)"
        took = trial.duration.total_seconds() if trial.duration is not None else float("nan")
        print(f"[trial {trial.number}{self.tag} {took:.1f} s, {elapsed:.0f} s in] {result} | {best_txt} | {what}",
              flush=True)


# ---------------------------------------------------------------------------------------
# Storage, samplers, workers


def _mask(url: str) -> str:
    """The storage URL without its password (safe to print and to write into files)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy understands: show nothing secret
        return re.sub(r"://[^@/]*@", "://***@", url)


def open_storage(url: str, heartbeat: float = 60.0) -> optuna.storages.BaseStorage:
    """An Optuna RDB storage for any SQLAlchemy URL; SQLite files get their directory created
    and a long lock timeout (several worker processes write to the same file).

    A running trial beats every ``heartbeat`` seconds; one silent for three heartbeats (its
    worker was killed) is marked failed when any process of the study next starts a trial,
    and :class:`optuna.storages.RetryFailedTrialCallback` puts its point back in the queue, so
    a resumed study retries it."""
    import optuna

    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        Path(url[len("sqlite:///"):]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 120}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            retry = optuna.storages.RetryFailedTrialCallback(max_retry=3)
            return optuna.storages.RDBStorage(url, engine_kwargs=kwargs or None, heartbeat_interval=max(1, round(heartbeat)),
                                              grace_period=max(3, round(3 * heartbeat)), failed_trial_callback=retry)
    except Exception as err:  # noqa: BLE001 - bad URL, missing driver, unreachable server
        msg = " ".join(str(err).split("\n")[0].split())
        raise TuneError(f"--storage {_mask(url)}: {type(err).__name__}: {msg}") from None


def make_sampler(kind: str, seed: int, n_existing: int, worker: int, parallel: bool) -> optuna.samplers.BaseSampler:
    """A sampler seeded from ``(seed, trials already in the study, worker index)``, so a
    resumed study does not redraw its first trials and parallel workers draw differently."""
    import optuna

    s = int(np.random.SeedSequence([seed, n_existing, worker]).generate_state(1)[0])
    if kind == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant_liar is experimental
            return optuna.samplers.TPESampler(seed=s, constant_liar=parallel)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=s)
    return optuna.samplers.RandomSampler(seed=s)


def make_pruner(multi: bool) -> optuna.pruners.BasePruner:
    """Median pruning after each training window (none for multi-objective studies)."""
    import optuna

    if multi:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=0)


def open_study(opts: Options, storage: optuna.storages.BaseStorage, sampler: optuna.samplers.BaseSampler | None = None
               ) -> optuna.Study:
    """Create or load the study ``opts.name`` in ``storage``."""
    import optuna

    try:
        return optuna.create_study(storage=storage, study_name=opts.name, directions=opts.directions,
                                   sampler=sampler, pruner=make_pruner(opts.multi), load_if_exists=True)
    except Exception as err:  # noqa: BLE001
        raise TuneError(f"study {opts.name!r} in {_mask(opts.storage)}: {' '.join(str(err).split())}") from None


def _quiet_optuna() -> None:
    import optuna

    # The status line replaces Optuna's per-trial INFO logs; failed-trial warnings (an
    # interrupted trial) would print a traceback for a Ctrl-C.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    logging_jax()


def logging_jax() -> None:
    """JAX announces at INFO level each accelerator backend it does not find; not news."""
    import logging

    logging.getLogger("jax").setLevel(logging.WARNING)


def _optimize(opts: Options, setup: Setup, take: Callable[[], bool], worker: int, n_existing: int, parallel: bool,
              deadline: float | None) -> None:
    """Run trials of the study in this process while ``take()`` grants one and the wall-clock
    ``deadline`` (``time.time()`` seconds; None: none) has not passed."""
    _quiet_optuna()
    storage = open_storage(opts.storage, opts.heartbeat)
    sampler = make_sampler(opts.sampler, opts.seed, n_existing, worker, parallel)
    study = open_study(opts, storage, sampler)
    objective = make_objective(setup, opts.objectives, prune=not opts.multi)
    status = StatusLine(opts.objectives, len(setup.train), worker if parallel else None)
    while (deadline is None or time.time() < deadline) and take():
        study.optimize(objective, n_trials=1, callbacks=[status], gc_after_trial=False)


def _countdown(n: int) -> Callable[[], bool]:
    """A ``take`` for :func:`_optimize` that grants ``n`` trials."""
    left = [n]

    def take() -> bool:
        if left[0] <= 0:
            return False
        left[0] -= 1
        return True

    return take


def _worker(opts: Options, remaining: Any, worker: int, n_existing: int, deadline: float | None) -> None:
    """Entry point of a worker process: rebuild the setup and run trials while the shared
    counter ``remaining`` (a ``multiprocessing.Value``) grants them; errors in one line."""

    def take() -> bool:
        with remaining.get_lock():
            if remaining.value <= 0:
                return False
            remaining.value -= 1
            return True

    try:
        setup = load_setup(opts.topo, opts.workload, opts.scale, opts.train, (), opts.cores_per_node)
        _optimize(opts, setup, take, worker, n_existing, True, deadline)
    except KeyboardInterrupt:
        sys.exit(130)
    except TuneError as err:
        sys.stderr.write(f"{PROG}: error (worker {worker}): {err}\n")
        sys.exit(2)


def run_parallel(opts: Options, n_trials: int, n_existing: int, deadline: float | None) -> None:
    """``opts.jobs`` spawned worker processes that together run ``n_trials`` trials: each
    takes the next trial from a shared counter, so a worker that draws cheap (pruned) trials
    takes more of them."""
    import multiprocessing as mp

    target = importlib.import_module("fattorus.app.tune")._worker  # importable by the spawned child
    ctx = mp.get_context("spawn")  # never fork a process that may hold JAX or SQLite state
    remaining = ctx.Value("q", n_trials)
    procs = [ctx.Process(target=target, args=(opts, remaining, i, n_existing, deadline), name=f"tune-worker-{i}")
             for i in range(min(opts.jobs, n_trials))]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join()
    except KeyboardInterrupt:
        for p in procs:  # they got the same SIGINT; let them mark their trial failed and exit
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
        raise
    bad = [(p.name, p.exitcode) for p in procs if p.exitcode not in (0, None)]
    if any(code == 130 for _, code in bad):
        raise KeyboardInterrupt
    if bad:
        raise WorkerError(f"worker(s) failed ({', '.join(f'{n} exit {c}' for n, c in bad)}); see their messages above; "
                          "finished trials are kept")


# ---------------------------------------------------------------------------------------
# Choosing, exporting, comparing


def is_default(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether a trial ran the paper's defaults."""
    return dict(trial.params) == default_trial_params()


def default_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The first finished trial with the paper's defaults, if any."""
    from optuna.trial import TrialState

    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if is_default(t):
            return t
    return None


def _signs(directions: Sequence[Any]) -> np.ndarray:
    """+1 for minimised objectives, -1 for maximised ones (so smaller is better)."""
    return np.array([-1.0 if "max" in str(d).lower() else 1.0 for d in directions])


def knee(front: Sequence[optuna.trial.FrozenTrial], directions: Sequence[Any]) -> optuna.trial.FrozenTrial:
    """The front trial nearest the ideal point, each objective scaled to [0, 1] over the front
    (best = 0); ties to the lower trial number."""
    v = np.array([t.values for t in front], float) * _signs(directions)
    lo, hi = v.min(axis=0), v.max(axis=0)
    scaled = np.where(hi > lo, (v - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    dist = np.sqrt((scaled ** 2).sum(axis=1))
    order = sorted(range(len(front)), key=lambda i: (dist[i], front[i].number))
    return front[order[0]]


def pick_pareto(front: Sequence[optuna.trial.FrozenTrial], directions: Sequence[Any],
                baseline: optuna.trial.FrozenTrial | None, rule: str = "constrained"
                ) -> tuple[optuna.trial.FrozenTrial, str]:
    """Choose the trial to export from a Pareto front; returns ``(trial, rule applied)``.

    ``constrained``: among front trials whose objectives 2.. are all at least as good as the
    baseline's (the paper default), the best first objective (ties: lower number). Falls back
    to ``knee`` without a baseline (or, which cannot happen for a true front, no candidate).
    """
    if not front:
        raise ValueError("empty Pareto front")
    if rule == "constrained" and baseline is not None:
        sign = _signs(directions)
        base = np.asarray(baseline.values, float) * sign
        ok = [t for t in front if np.all(np.asarray(t.values, float)[1:] * sign[1:] <= base[1:] + 1e-12)]
        if ok:
            best = min(ok, key=lambda t: (t.values[0] * sign[0], t.number))
            return best, "constrained"
    return knee(front, directions), "knee"


def _same_points(trials: Sequence[optuna.trial.FrozenTrial]) -> list[list[optuna.trial.FrozenTrial]]:
    """Trials grouped by identical parameters, in order of first appearance."""
    groups: dict[tuple, list] = {}
    for t in trials:
        groups.setdefault(tuple(sorted(t.params.items())), []).append(t)
    return list(groups.values())


def export_policy(path: Path, params: Mapping[str, Any], header: Sequence[str]) -> Path:
    """Write a ``conf/policy`` config (``name: ta``, ``params``) with a comment header, atomically."""
    import yaml

    from fattorus.files import atomic_write

    body = yaml.safe_dump({"name": "ta", "params": dict(params)}, sort_keys=False, default_flow_style=False)
    text = "".join(f"# {line}\n" for line in header) + body
    return atomic_write(path, text)


def compare(setup: Setup, tuned_params: Mapping[str, Any], tuned_sched: str) -> list[dict[str, Any]]:
    """Replay the test windows with the paper's defaults and with the tuned point.

    Returns one row per arm (``paper_default``, ``tuned``): its ``sched`` and
    ``policy_params``, the :func:`pooled` metrics over all test windows, and ``windows``
    (the same metrics per window).
    """
    rows = []
    default_params, default_sched = paper_defaults()
    for arm, params, sched in (("paper_default", default_params, default_sched),
                               ("tuned", dict(tuned_params), tuned_sched)):
        samples = []
        per_window = []
        for w, table in zip(setup.test, setup.test_tables):
            t0 = time.perf_counter()
            s = run_window(table, setup.ft, params, sched)
            samples.append(s)
            m = pooled([s])
            per_window.append({"window": window_label(w), **m})
            print(f"[compare] {arm} on window {window_label(w)}: {m['jobs']} jobs, mean wait "
                  f"{fmt_value('mean_wait_s', m['mean_wait_s'])} ({time.perf_counter() - t0:.1f} s)", flush=True)
        rows.append({"arm": arm, "sched": sched, "policy_params": dict(params), **pooled(samples),
                     "windows": per_window})
    return rows


def comparison_markdown(report: Mapping[str, Any]) -> str:
    """The comparison as a Markdown table (metrics in rows, arms in columns, relative change)."""
    base, tuned = report["rows"]
    lines = [
        f"# Tuning study `{report['study']}`: tuned vs paper defaults on held-out windows",
        "",
        f"Machine `{report['setup']['topo']}`, workload `{report['setup']['workload']}` x{report['setup']['scale']:g}; "
        f"objective(s) {', '.join(report['objectives'])}; trained on windows {report['setup']['train']}, "
        f"tested on {report['setup']['test']} ({base['jobs']} jobs). Tuned = trial {report['tuned']['trial']} "
        f"({report['tuned']['describe']}).",
        "",
        "| metric | paper default | tuned | change |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key in METRICS:
        b, t = base[key], tuned[key]
        change = change_text(key, b, t)
        lines.append(f"| {METRIC_LABELS[key]} | {fmt_value(key, b)} | {fmt_value(key, t)} | {change} |")
    return "\n".join(lines) + "\n"


def change_text(key: str, before: float, after: float) -> str:
    """Change of a metric: percentage points for shares, relative change otherwise."""
    if key in ("utilization", "exposure_share"):
        return f"{(after - before) * 100:+.2f} pp"
    if before:
        return f"{(after - before) / before:+.1%}"
    return "0" if after == before else "n/a"


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    base, tuned = rows
    out = [f"{'held-out':<18}{'paper default':>24}{'tuned':>24}{'change':>12}"]
    for key in METRICS:
        b, t = base[key], tuned[key]
        change = change_text(key, b, t)
        out.append(f"{METRIC_LABELS[key]:<18}{fmt_value(key, b):>24}{fmt_value(key, t):>24}{change:>12}")
    return "\n".join(out)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------
# The command


def _fail_dead_trials(study: optuna.Study) -> None:
    """Fail (and so re-queue, see :func:`open_storage`) trials whose worker stopped beating."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental API
        optuna.storages.fail_stale_trials(study)


def _ensure_default(opts: Options, setup: Setup, study: optuna.Study, n_existing: int) -> optuna.trial.FrozenTrial:
    """The finished paper-default trial, running it first if a dead worker left it unfinished:
    an export is never written without "before" measured on the same windows."""
    import optuna
    from optuna.trial import TrialState

    for _ in range(10):  # queued retries of other trials may run first
        base = default_trial(optuna.load_study(study_name=opts.name, storage=study._storage))
        if base is not None:
            return base
        print(f"[tune {opts.name}] the paper-default trial has not finished (its worker died?); running it now",
              flush=True)
        _fail_dead_trials(study)
        waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if not any(is_default(t) for t in waiting):
            study.enqueue_trial(default_trial_params())
        _optimize(opts, setup, _countdown(1), 0, n_existing, False, None)
    raise TuneError(f"study {opts.name!r}: the paper-default trial could not be completed; nothing exported")


def _counts(study: optuna.Study) -> dict[str, int]:
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    counts = {"total": len(trials), **{s.name.lower(): sum(t.state == s for t in trials)
                                       for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}}
    ran = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    counts["distinct_points"] = len({tuple(sorted(t.params.items())) for t in ran})
    return counts


def _export_header(opts: Options, setup: Setup, chosen: Any, counts: dict, rule: str, base_values: Any,
                   sched: str) -> list[str]:
    """Comment lines heading an exported policy config: where it came from and how to run it."""
    return [
        "Tuned `ta` heuristics written by fattorus.tune (python -m fattorus.tune); see docs/tuning.md.",
        f"study: {opts.name} ({_mask(opts.storage)}), trial {chosen.number} (of {counts['total']} trials)"
        f"{'' if not opts.multi else f', Pareto pick: {rule}'}",
        f"objective: {', '.join(f'{o} ({d})' for o, d in zip(opts.objectives, opts.directions))} on "
        f"{setup.workload} x{setup.scale:g} on {setup.ft.name}, training windows (days) {windows_label(setup.train)}",
        f"value: {fmt_values(opts.objectives, chosen.values)}; "
        f"paper defaults: {fmt_values(opts.objectives, base_values)}",
        f"date: {_now()}",
        f"the study also chose the scheduler: run with sched={sched}, e.g.",
        f"  python -m fattorus.sweep +topo={setup.ft.name} policy={opts.export.stem} sched={sched}",
    ]


def _report(opts: Options, setup: Setup, counts: dict, before: dict, opt_wall: float, base: Any, base_values: Any,
            chosen: Any, rule: str, params: Mapping[str, Any], sched: str, front: Sequence[Any]) -> dict[str, Any]:
    """The comparison report of a run (written to ``comparison.json``), without its rows yet."""
    return {
        "study": opts.name,
        "storage": _mask(opts.storage),
        "date": _now(),
        "objectives": list(opts.objectives),
        "directions": list(opts.directions),
        "setup": {"topo": setup.ft.name, "workload": setup.workload, "workload_sha256": setup.sha256,
                  "scale": setup.scale, "train": windows_label(setup.train), "test": windows_label(setup.test)},
        "trials": counts,
        "this_run": {"trials_added": counts["total"] - before["total"], "optimize_wall_s": opt_wall,
                     "jobs": opts.jobs, "seed": opts.seed, "sampler": opts.sampler},
        "paper_default": {"trial": base.number if base else None, "train_values": base_values,
                          "train_metrics": base.user_attrs.get("train_metrics") if base else None},
        "tuned": {"trial": chosen.number, "rule": rule, "train_values": list(chosen.values),
                  "train_metrics": chosen.user_attrs.get("train_metrics"), "policy_params": params,
                  "sched": sched, "describe": describe(params, sched), "export": str(opts.export)},
        "pareto_front": [{"trial": t.number, "values": list(t.values), "describe": describe(*decode(t.params))}
                         for t in front],
        "rows": [],
    }


def _add_trials(opts: Options, setup: Setup, study: optuna.Study, n_existing: int) -> None:
    """Run ``opts.trials`` more trials: in this process, or enqueued ones here and the rest in
    ``opts.jobs`` worker processes; no new trial starts after ``opts.timeout``."""
    from optuna.trial import TrialState

    deadline = None if opts.timeout is None else time.time() + opts.timeout
    if not opts.trials:
        return
    if opts.jobs == 1 or opts.trials == 1:
        _optimize(opts, setup, _countdown(opts.trials), 0, n_existing, False, deadline)
        return
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    first = min(len(waiting), opts.trials)
    if first:
        # Enqueued trials first, here: two workers could both pop the same waiting trial
        # from an SQLite storage.
        _optimize(opts, setup, _countdown(first), 0, n_existing, False, deadline)
    if opts.trials > first and (deadline is None or time.time() < deadline):
        run_parallel(opts, opts.trials - first, n_existing + first, deadline)


def _choose(opts: Options, study: optuna.Study, base: Any) -> tuple[Any, str, list]:
    """The trial to export, the rule that chose it and the Pareto front (printed when several
    objectives)."""
    if not opts.multi:
        return study.best_trial, "best", []
    front = sorted(study.best_trials, key=lambda t: t.number)
    chosen, rule = pick_pareto(front, study.directions, base, opts.pick)
    print(f"[tune {opts.name}] Pareto front ({len(front)} trial(s); * exported by rule '{rule}', "
          "d paper default; repeats of a point listed together):", flush=True)
    for group in _same_points(front):
        numbers = [t.number for t in group]
        mark = "*" if chosen.number in numbers else ("d" if base is not None and base.number in numbers else " ")
        label = ",".join(map(str, numbers))
        print(f"  {mark} trial {label:>6}: {fmt_values(opts.objectives, group[0].values)} | "
              f"{describe(*decode(group[0].params))}", flush=True)
    return chosen, rule, front


def run(opts: Options) -> dict[str, Any]:
    """Optimise, export and compare; returns the comparison report (also written to disk)."""
    import optuna

    _quiet_optuna()
    t_start = time.perf_counter()
    print(f"[tune {opts.name}] loading {opts.workload} x{opts.scale:g} on {opts.topo} ...", flush=True)
    setup = load_setup(opts.topo, opts.workload, opts.scale, opts.train, opts.test, opts.cores_per_node)
    storage = open_storage(opts.storage, opts.heartbeat)
    study = open_study(opts, storage)
    _fail_dead_trials(study)
    fp = setup.fingerprint(opts.objectives)
    old = study.user_attrs.get(SETUP_ATTR)
    if old is None:
        study.set_user_attr(SETUP_ATTR, fp)
    elif old != fp:
        diff = "; ".join(f"{k}: study {old.get(k)!r}, now {fp.get(k)!r}" for k in fp if old.get(k) != fp.get(k))
        raise TuneError(f"study {opts.name!r} in {_mask(opts.storage)} was made with another setup ({diff}); "
                        "use another --name or the original options")
    from optuna.trial import TrialState

    before = _counts(study)
    live = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    if not any(is_default(t) for t in study.get_trials(deepcopy=False, states=live)):
        study.enqueue_trial(default_trial_params())  # "before" is always measured, first
    n_existing = before["total"]
    sizes = ", ".join(f"{window_label(w)}: {t.height}" for w, t in zip(setup.train, setup.train_tables))
    what = ", ".join(f"{o} ({OBJECTIVES[o][0][:3]})" for o in opts.objectives)
    print(f"[tune {opts.name}] {_mask(opts.storage)}: {before['total']} trial(s) so far "
          f"({before['complete']} complete, {before['pruned']} pruned); adding {opts.trials} with "
          f"{opts.jobs} worker(s); objective {what}; training jobs per window {{{sizes}}}", flush=True)

    t_opt = time.perf_counter()
    _add_trials(opts, setup, study, n_existing)
    opt_wall = time.perf_counter() - t_opt
    study = optuna.load_study(study_name=opts.name, storage=storage)
    counts = _counts(study)
    print(f"[tune {opts.name}] {counts['total'] - before['total']} trial(s) in {opt_wall:.0f} s; study now "
          f"{counts['total']} ({counts['complete']} complete, {counts['pruned']} pruned, {counts['fail']} failed; "
          f"{counts['distinct_points']} distinct points)",
          flush=True)
    if counts["complete"] == 0:
        raise TuneError(f"study {opts.name!r} has no finished trial yet; run some with --trials N")

    base = _ensure_default(opts, setup, study, n_existing)
    study = optuna.load_study(study_name=opts.name, storage=storage)
    counts = _counts(study)
    chosen, rule, front = _choose(opts, study, base)
    params, sched = decode(chosen.params)
    base_values = list(base.values) if base is not None else None
    print(f"[tune {opts.name}] paper default (trial {base.number if base else '-'}): "
          f"{fmt_values(opts.objectives, base_values)}", flush=True)
    print(f"[tune {opts.name}] tuned (trial {chosen.number}): {fmt_values(opts.objectives, chosen.values)} | "
          f"{describe(params, sched)}", flush=True)

    export_policy(opts.export, params, _export_header(opts, setup, chosen, counts, rule, base_values, sched))
    print(f"[tune {opts.name}] wrote {opts.export}", flush=True)
    report = _report(opts, setup, counts, before, opt_wall, base, base_values, chosen, rule, params, sched, front)
    from fattorus.files import atomic_write, write_json

    if setup.test:
        report["rows"] = compare(setup, params, sched)
        print(_table(report["rows"]), flush=True)
        write_json(opts.out / "comparison.json", report)
        atomic_write(opts.out / "comparison.md", comparison_markdown(report))
        print(f"[tune {opts.name}] wrote {opts.out / 'comparison.json'} and comparison.md", flush=True)
    print(f"[tune {opts.name}] done in {time.perf_counter() - t_start:.0f} s", flush=True)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: ``python -m fattorus.tune --name NAME [options]`` (see ``--help``)."""
    try:
        opts = parse_args(argv)
        run(opts)
    except TuneError as err:
        sys.stderr.write(f"{PROG}: error: {' '.join(str(err).split())}\n")
        sys.exit(2)
    except WorkerError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted; finished trials are kept in the storage, re-run the same "
                         "command to add more (--trials 0: only export and compare)\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
