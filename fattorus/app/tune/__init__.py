"""Optuna studies over a policy's declared heuristics: ``python -m fattorus.tune --name NAME``.

A study searches the tunable space that the ``ta`` policy declares
(:meth:`fattorus.sched.policy.TAParams.search_space`: its sort orders, the tie rule and the
hybrid ``relax_after_s`` knob; the structure is :mod:`fattorus.sched.policy.space`) together
with the queue policy (``easy``/``fcfs``), scoring each trial by scheduler replays of a real
job log on training windows (days counted from the first submission). Then it exports the
best parameters as a ready-to-use policy config (``conf/policy/ta_tuned_<name>.yaml``) and
compares them with the paper's defaults on held-out test windows
(``results/tune/<name>/comparison.{json,md}``).

One concern per module:

* :mod:`~fattorus.app.tune.cli`: options, their checks, ``main``.
* :mod:`~fattorus.app.tune.space`: the declared space as Optuna draws, and back.
* :mod:`~fattorus.app.tune.windows`: the machine, the workload and its windows.
* :mod:`~fattorus.app.tune.objective`: replaying windows and pooling the objectives' metrics.
* :mod:`~fattorus.app.tune.storage`: Optuna storage, heartbeats and retries, samplers, pruners.
* :mod:`~fattorus.app.tune.sampler`: a fresh sampler per trial, seeded from ``(--seed, trial number)``.
* :mod:`~fattorus.app.tune.workers`: running trials here or in worker processes.
* :mod:`~fattorus.app.tune.choose`: the paper-default trial and the trial to export.
* :mod:`~fattorus.app.tune.export`: the tuned policy config and the held-out comparison.
* :mod:`~fattorus.app.tune.display`: formatted values and the per-trial status line.
* :mod:`~fattorus.app.tune.study`: one run of the command, from opening the study to the report.

Progress: one status line per finished trial. Ctrl-C stops cleanly: finished trials are in
the storage (the interrupted one is marked failed) and the same command resumes. Every user
mistake is one line on stderr and exit code 2. ``docs/tuning.md`` has the rest.

The names below were the public (and test-visible) names of the former single module; they
stay importable from here.
"""

from __future__ import annotations

from fattorus.app.tune.choose import PICKS, default_trial, is_default, knee, pick_pareto
from fattorus.app.tune.cli import Options, build_parser, main, parse_args
from fattorus.app.tune.display import METRIC_LABELS, StatusLine, change_text, fmt_value, fmt_values
from fattorus.app.tune.errors import PROG, TuneError, WorkerError
from fattorus.app.tune.export import compare, comparison_markdown, export_policy
from fattorus.app.tune.objective import METRICS, OBJECTIVES, Sample, make_objective, metric_of, pooled, run_window
from fattorus.app.tune.space import (
    POLICY,
    SCHEDS,
    SEARCH_SPACE_VERSION,
    decode,
    default_trial_params,
    describe,
    encode,
    paper_defaults,
    suggest,
)
from fattorus.app.tune.storage import (
    PRUNER_STARTUP_TRIALS,
    SAMPLERS,
    SETUP_ATTR,
    logging_jax,
    make_pruner,
    make_sampler,
    open_storage,
    open_study,
)
from fattorus.app.tune.study import run
from fattorus.app.tune.windows import (
    DAY_S,
    Setup,
    Window,
    load_setup,
    parse_windows,
    window_label,
    windows_label,
    workload_config,
)
from fattorus.app.tune.workers import run_parallel
from fattorus.sched.policy import RELAX_MAX_S, RELAX_MIN_S  # the range of the hybrid rule, kept for callers

__all__ = [
    "DAY_S", "METRICS", "METRIC_LABELS", "OBJECTIVES", "PICKS", "POLICY", "PROG", "PRUNER_STARTUP_TRIALS",
    "RELAX_MAX_S", "RELAX_MIN_S", "SAMPLERS", "SCHEDS", "SEARCH_SPACE_VERSION", "SETUP_ATTR", "Options", "Sample",
    "Setup", "StatusLine", "TuneError", "Window", "WorkerError", "build_parser", "change_text", "compare",
    "comparison_markdown", "decode", "default_trial", "default_trial_params", "describe", "encode", "export_policy",
    "fmt_value", "fmt_values", "is_default", "knee", "load_setup", "logging_jax", "main", "make_objective",
    "make_pruner", "make_sampler", "metric_of", "open_storage", "open_study", "paper_defaults", "parse_args",
    "parse_windows", "pick_pareto", "pooled", "run", "run_parallel", "run_window", "suggest", "window_label",
    "windows_label", "workload_config",
]
