"""The study app: ``python -m fattorus.sweep +topo=pinot +speedup=v2 [overrides]``.

One run replays a workload on a machine with an allocation policy, a queue policy and a
speedup scenario, and writes ``jobs.parquet``, ``utilization.parquet`` and ``summary.json``
into its Hydra run directory under ``results/``. ``--multirun`` runs the Cartesian product of
comma-separated overrides (locally in parallel with ``hydra/launcher=joblib``, or on a Slurm
cluster with ``hydra/launcher=submitit_slurm``); a trial whose directory already holds a
finished run is skipped, so an interrupted sweep resumes where it stopped.

When ``+topo`` or ``+speedup`` is omitted the run uses ``topo=cab`` / ``speedup=none``
(:data:`fattorus.config.DEFAULT_TOPO`, :data:`fattorus.config.DEFAULT_SPEEDUP`). Every user
mistake (unknown option, wrong key or value, unreadable workload) ends in one line on stderr
and exit code 2, never a stack trace.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.sweep")

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, ListConfig, OmegaConf

from fattorus import devices, paths, yamlfile
from fattorus.app import callbacks, cli
from fattorus.app import config as config_mod
from fattorus.app import outputs
from fattorus.app.callbacks import ResultsOnly, selected_dir
from fattorus.app.cli import Refusal
from fattorus.args import SEED_MAX, out_of_memory  # every command's seed range (also importable from here)

config_mod.register()


class UserError(Exception):
    """A mistake in the user's configuration or input, reported as one line (exit 2)."""


class RunError(Exception):
    """The environment failed the run (disk full, read-only results, ...): one line, exit 1."""


class RunChecks(ResultsOnly):
    """``hydra.callbacks`` of the replay app (``conf/config.yaml``): a run's or sweep's
    directory under a ``results/`` directory (:class:`~fattorus.app.callbacks.ResultsOnly`),
    and a single run's ``hydra.run.dir`` that already holds a run refused before Hydra rewrites
    that run's config copy (``.hydra/``), which would then contradict its ``summary.json``
    (:func:`_claim` refuses a run that claims it later)."""

    def on_run_start(self, config: DictConfig, **_: Any) -> None:
        """Check a single run's directory (see the class)."""
        from fattorus.app import trials

        super().on_run_start(config)
        out_dir = selected_dir(config, "hydra.run.dir")
        if out_dir is None:
            return
        if trials.resumable(out_dir):  # an interrupted trials=N run (a single run's, or a multirun trial's)
            why = _other_job(out_dir, config)
            if why is not None:
                raise Refusal(_other_trials(out_dir, why))
            if _claimed_elsewhere(out_dir):
                raise Refusal(f"{out_dir} is being written by another run now; not writing into it")
            cli.kept_on_interrupt(trials.resume_note(out_dir))  # its batches stay, from the first moment
        elif (out_dir / ".fattorus-run").exists() or (out_dir / "summary.json").exists():
            raise Refusal(_held(out_dir))


    def on_multirun_start(self, config: DictConfig, **_: Any) -> None:
        """A multirun: its directory (see the class), then every trial's settings checked as a
        run checks them before reading its log (:func:`check_trials`), so that a bad value in a
        list is refused before the first trial runs, not after the others finished."""
        super().on_multirun_start(config)
        check_trials(list(config.hydra.overrides.task), [o for o in config.hydra.overrides.hydra
                                                         if cli.override_key(o) == "hydra.searchpath"])


#: A multirun's first trials all checked before it starts (each ~0.1-0.2 s to compose and
#: check); past them only a trial with an override value no checked trial had: every value of
#: every list is checked (sum, not product, of the lists' lengths), and its combinations with
#: the others as far as these first trials reach.
CHECK_ALL_FIRST = 64


def check_trials(task_overrides: list[str], searchpath: list[str] = (), check_all_first: int = CHECK_ALL_FIRST) -> None:
    """Expand a multirun's overrides into its trials (Hydra's basic sweeper's product) and run
    :func:`check_run` on each composed config (each machine built once; past the first
    ``check_all_first`` trials only those with an override no checked trial had). Raises
    :class:`~fattorus.app.cli.Refusal` naming the first trial refused and why, in the words the
    trial itself would have used. ``hydra.*`` overrides are left out (no check reads them) but
    the ``searchpath`` ones (``hydra.searchpath=[...]``): the trials compose from the folders
    they add (a user's machine or workload YAML kept outside ``conf/``, as the tuner's exported
    commands name one)."""
    from hydra import compose
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    mine = [o for o in task_overrides if not cli.override_key(o).startswith("hydra")]
    parsed = OverridesParser.create().parse_overrides(mine)
    trials = [t for batch in BasicSweeper.split_arguments(parsed, None) for t in batch]
    machines: dict[str, Any] = {}
    seen: set[str] = set()
    for n, trial in enumerate(trials):
        if n >= check_all_first and seen.issuperset(trial):
            continue
        seen.update(trial)
        try:
            check_run(compose(config_name="config", overrides=[*searchpath, *trial]), machines)
        except (HydraException, OmegaConfBaseException) as err:  # said as a run says them
            raise cli.Refusal(f"trial {trial}: {cli.hydra_error(err)}") from None
        except (UserError, ValueError, TypeError) as err:
            raise cli.Refusal(f"trial {trial}: {err}") from None


def _held(out_dir: Path) -> str:
    if (out_dir / "summary.json").exists():  # the same settings or not: its results stand (session 47)
        return (f"{out_dir} already holds a finished run; not writing into it (its results stay; leave "
                "hydra.run.dir out for a new directory)")
    return f"{out_dir} already holds another run; not writing into it (leave hydra.run.dir out for a new directory)"


def _other_trials(out_dir: Path, why: str) -> str:
    return (f"{out_dir} holds an interrupted trials run with other settings ({why}); not writing into it: resume it "
            "with the settings it ran with, or leave hydra.run.dir out for a new directory")


#: Job settings that do not change what a run computes (as ``hydra.job.config.override_dirname``'s exclusions).
_NOT_RESULTS = ("progress", "logger", "study")


def _other_job(out_dir: Path, config: DictConfig) -> str | None:
    """How the interrupted run in ``out_dir`` was set up differently from ``config`` — its job
    settings against Hydra's copy of them there (``hydra.output_subdir``), read before Hydra
    rewrites it; a few keys — or None when they agree or there is no copy to read. The app
    then compares what the run recorded of itself (:func:`fattorus.app.trials.run`: the job
    log's bytes included) and refuses other settings."""
    from fattorus.app import trials

    subdir = OmegaConf.select(config, "hydra.output_subdir", default=None)
    copy = out_dir / str(subdir) / "config.yaml" if subdir else None
    if copy is None or not copy.is_file():
        return None
    try:
        stored = OmegaConf.to_container(OmegaConf.load(copy), resolve=False)
        wanted = OmegaConf.to_container(config, resolve=False)
    except Exception:  # noqa: BLE001 - a damaged copy: the app's own comparison decides
        return None
    wanted.pop("hydra", None)
    a, b = ({k: v for k, v in d.items() if k not in _NOT_RESULTS} for d in (stored, wanted))
    return None if a == b else trials.differences(a, b)


TRIALS_MAX = 100_000


def check_settings(cfg: DictConfig) -> None:
    """Top-level settings a replay cannot mean anything with: one-line UserError each."""
    import dataclasses

    from fattorus.app import config as schema

    def check_keys(node: Any, cls: type, where: str) -> None:
        why = cli.unknown_setting(node.keys(), [f.name for f in dataclasses.fields(cls)], where)
        if why:
            raise UserError(why)

    check_keys(cfg, schema.Config, "")
    for group, cls in (("workload", schema.WorkloadConf), ("sched", schema.SchedConf), ("logger", schema.LoggerConf),
                       ("policy", schema.PolicyConf), ("speedup", schema.SpeedupConf)):
        if cfg.get(group) is not None:
            check_keys(cfg[group], cls, f"{group}.")
    seed = cfg.seed
    if not 0 <= int(seed) <= SEED_MAX:
        raise UserError(f"seed={seed}: choose an integer between 0 and {SEED_MAX}")
    trials = cfg.get("trials", 1)
    if not isinstance(trials, int) or not 1 <= trials <= TRIALS_MAX:
        raise UserError(f"trials={trials}: choose an integer between 1 and {TRIALS_MAX}")
    if int(seed) + trials - 1 > SEED_MAX:  # trial t draws with seed + t
        raise UserError(f"trials={trials} with seed={seed}: the trials' seeds seed .. seed + trials - 1 must stay "
                        f"<= {SEED_MAX}, so at most {SEED_MAX - int(seed) + 1} trial(s) from this seed")
    # Checked here too, not only where a run meets them (the results path, the log's window):
    # fattorus.study's check of every block before the first then refuses them in one line.
    from fattorus import workload

    try:
        schema.safe_name(cfg.study, "study")
        workload.check_window(OmegaConf.to_container(cfg.workload, resolve=True))
    except ValueError as err:
        raise UserError(str(err)) from None
    from fattorus.analysis import metrics

    try:
        metrics.check_bins(cfg.bins)
    except ValueError as err:
        raise UserError(str(err)) from None


def _stderr_line(text: str) -> None:
    """``text`` and its newline in ONE write: parallel trials share stderr, and a line written
    in two pieces can be cut by another worker's line."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _warn_borrowed_workload(wl_cfg: dict[str, Any]) -> None:
    """One warning line when ``workload.path`` replaces the log of a named workload other than
    ``file``: the run keeps that workload's name, scale and cores per node."""
    hc = _hydra()
    if hc is None:
        return
    choice = hc.runtime.choices.get("workload")
    overridden = any(cli.override_key(o) == "workload.path" for o in hc.overrides.task)
    if overridden and choice not in (None, "file"):
        _stderr_line(f"fattorus.sweep: warning: workload.path={wl_cfg.get('path')} with workload={choice}: the run "
                     f"keeps {choice}'s name, scale and cores per node; use workload=file for a log of your own")


#: Settings one kind of speedup scenario reads and the other ignores (``conf/speedup``).
_MODEL_ONLY = ("comm_fraction", "patterns", "app_patterns")
_BINS_ONLY = ("cap", "classes")
#: ``logger.*`` settings that only ``logger=wandb`` reads.
_WANDB_ONLY = ("project", "entity", "mode", "group", "tags")


def _warn_ignored(cfg: DictConfig) -> None:
    """One warning line per setting given on the command line that the chosen configuration
    never reads (session 42: ``+speedup=v2 speedup.comm_fraction=0.3`` ran v2 as if it were
    not there): model-only keys with an assumed-factor scenario and back, ``logger.*`` without
    ``logger=wandb``. A multirun's trials share a process where the launcher allows
    (``hydra.launcher.n_jobs=1``; otherwise one per worker): each line is said once a
    process, not once a trial."""
    hc = _hydra()
    if hc is None:
        return
    given = {cli.override_key(o): o for o in hc.overrides.task}
    lines = []
    speedup = cfg.get("speedup")
    if speedup is not None:
        ignored = _BINS_ONLY if speedup.get("kind") == "model" else _MODEL_ONLY
        for key in ignored:
            if f"speedup.{key}" in given:
                lines.append(f"fattorus.sweep: warning: {given[f'speedup.{key}']} is ignored with speedup={speedup.name} "
                             f"(it applies to {'assumed-factor scenarios' if key in _BINS_ONLY else 'speedup=model'})")
    if cfg.get("logger") is not None and cfg.logger.get("name") != "wandb":
        for key in _WANDB_ONLY:
            if f"logger.{key}" in given:
                lines.append(f"fattorus.sweep: warning: {given[f'logger.{key}']} is ignored without logger=wandb")
    for line in lines:
        if line not in _WARNED:
            _WARNED.add(line)
            _stderr_line(line)


#: The warning lines this process has said (:func:`_warn_ignored`).
_WARNED: set[str] = set()


def _skip_line(wl: Any, prog: str = "fattorus.sweep") -> str | None:
    """One line summarising a log's dirty lines (None when there are none)."""
    sk = wl.skipped
    if not sk.total:
        return None
    reasons = ", ".join(f"{n} {r}" for r, n in sorted(sk.counts.items()))  # "2 non-numeric field, ..."
    e = sk.entries[0] if sk.entries else None
    # The first one's field and value too ("field 4: 12a4"): what to look for at that line.
    first = f"; first: line {e.line} ({e.reason}{', ' + e.detail if e.detail else ''})" if e else ""
    return f"{prog}: {wl.path}: skipped {sk.total} dirty line(s): {reasons}{first}"


def _fill_default(cfg: DictConfig, group: str, default: str) -> str:
    """Load ``conf/GROUP/DEFAULT.yaml`` into ``cfg[group]`` when the group was not given; the
    chosen config's ``name`` (a machine or scenario file without one, an empty one or a list:
    one line naming the file, not OmegaConf's "Key 'name' is not in struct")."""
    if cfg.get(group) is not None:
        node = cfg[group]
        name = node.get("name") if isinstance(node, DictConfig) else None
        if name is None:
            where = _group_source(group) or f"the {group} config"
            what = "a mapping of settings" if not isinstance(node, DictConfig) else "a name: field"
            raise UserError(f"{where}: needs {what} (e.g. name: my_{group})")
        return str(name)
    path = paths.config_file(group, default)
    loaded = OmegaConf.load(path)
    cfg[group] = loaded if group == "topo" else OmegaConf.merge(OmegaConf.structured(config_mod.SpeedupConf), loaded)
    return default


#: ``logger.name`` values: no logging, or Weights & Biases.
LOGGERS = ("none", "wandb")


class Checked(NamedTuple):
    """What :func:`check_run` made of a run's settings (the replay goes on with these)."""

    topo_name: str
    speedup_name: str
    topo_cfg: dict[str, Any]
    topo: Any
    scenario: Any
    policy_params: Any
    runtime_model: Any


def _check_speedup_kind(speedup: DictConfig, name: str) -> None:
    """``speedup.kind`` is the scenario file's: ``bins`` (assumed factors, the default) or
    ``model`` (the flow model). Why checked: any other word ran a plain replay labelled with
    the scenario, and a kind typed against its file ran the other kind under the file's name
    (``+speedup=v2 speedup.kind=model``: v2's draws and the model, labelled v2;
    ``+speedup=model speedup.kind=bins``: the logged run times, labelled model)."""
    kind = speedup.get("kind", "bins")
    if kind not in ("bins", "model"):
        raise UserError(f"speedup.kind={kind!r}: bins (assumed factors) or model (the flow model); the scenario's "
                        "file sets it: choose the scenario with +speedup=NAME")
    if kind == "model" and speedup.get("classes"):
        raise UserError(f"speedup.kind=model with speedup={name}'s assumed-factor bins (classes): the flow model "
                        "decides run times alone; choose +speedup=model")
    # Against the scenario's shipped file (its name is its file's stem), Hydra's run or not
    # (a study's pre-check composes without one): a kind nobody typed agrees with it already.
    shipped = config_mod.shipped_speedup(str(name)) if name else None
    if shipped is not None:
        own = shipped["kind"]
        if own != kind:
            raise UserError(f"speedup.kind={kind}: speedup={name} is a{'n assumed-factor' if own == 'bins' else ' flow-model'} "
                            f"scenario (its file: kind {own}); choose the scenario with +speedup=NAME")


def check_run(cfg: DictConfig, topologies: dict[str, Any] | None = None) -> Checked:
    """Every check of a run's settings that needs no job log: one-line :class:`UserError`
    (or ``ValueError``) each. The replay runs it before reading the log — a typo costs one
    line, not a replay, and a refused run writes no results — and ``fattorus.study`` runs it
    over every block before the first starts. ``topologies``: built machines by config, kept
    across calls (the study's pre-check builds each machine once)."""
    from fattorus import topology, workload
    from fattorus.sched import policy
    from fattorus.sched import replay
    from fattorus.workload import speedup

    check_settings(cfg)
    topo_name = _fill_default(cfg, "topo", config_mod.DEFAULT_TOPO)
    speedup_name = _fill_default(cfg, "speedup", config_mod.DEFAULT_SPEEDUP)
    _check_speedup_kind(cfg.speedup, speedup_name)
    if cfg.sched.name not in replay.SCHEDULERS:
        raise UserError(f"sched.name={cfg.sched.name!r}: choose one of {list(replay.SCHEDULERS)}")
    if cfg.policy.name not in policy.NAMES:
        raise UserError(f"policy.name={cfg.policy.name!r}: choose one of {list(policy.NAMES)}")
    if cfg.logger.name not in LOGGERS:
        raise UserError(f"logger.name={cfg.logger.name!r}: choose one of {list(LOGGERS)}")
    if cfg.logger.name == "wandb":
        from fattorus.app import logger

        try:
            logger.check_settings(OmegaConf.to_container(cfg.logger, resolve=True))
        except ValueError as err:
            raise UserError(str(err)) from None
    workload.check_scale(cfg.workload.get("scale", "machine"))
    workload.check_source(OmegaConf.to_container(cfg.workload, resolve=True))  # a missing log: before a study's first block
    topo_cfg = OmegaConf.to_container(cfg.topo, resolve=True)
    key = json.dumps(topo_cfg, sort_keys=True, default=str)
    ft = topologies.get(key) if topologies is not None else None
    if ft is None:
        try:
            ft = topology.from_config(topo_cfg)
        except topology.TopologyError as err:  # named by its file and line, where Hydra says which file
            source = _group_source("topo", topo_cfg.get("name")) if isinstance(topo_cfg, dict) else None
            hc = _hydra()
            if source is None or (hc is not None and any(cli.override_key(o).startswith("topo.")
                                                         for o in hc.overrides.task)):
                raise  # (a value the command line set is not the file's line)
            raise UserError(yamlfile.located(source, str(err), topo_cfg)) from None
        if topologies is not None:
            topologies[key] = ft
    scenario = speedup.from_config(OmegaConf.to_container(cfg.speedup, resolve=True))
    policy_params = OmegaConf.to_container(cfg.policy.params, resolve=True)
    try:
        policy.make(cfg.policy.name, ft, policy_params)  # a wrong family or parameter: one-line ValueError
    except ValueError as err:
        if cfg.policy.name not in policy.supporting(ft) and not _chose("policy"):
            # The user chose a machine only: say where the policy came from (conf/config.yaml's default).
            raise ValueError(f"{err} (policy '{cfg.policy.name}' is the default: choose one with policy=NAME)") from None
        raise
    runtime_model = _runtime_model(cfg, ft)
    if int(cfg.get("trials", 1)) > 1:
        _check_batched(cfg, ft)
    return Checked(topo_name, speedup_name, topo_cfg, ft, scenario, policy_params, runtime_model)


def run(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    """Replay one configuration and write its run directory; returns the summary."""
    from fattorus import workload
    from fattorus.sched import replay

    topo_name, speedup_name, topo_cfg, ft, scenario, policy_params, runtime_model = check_run(cfg)
    n_trials = int(cfg.get("trials", 1))
    wl_cfg = OmegaConf.to_container(cfg.workload, resolve=True)
    wl, transform_counts = _load_workload(wl_cfg, topo_cfg, ft)
    _warn_borrowed_workload(wl_cfg)  # after loading: an unreadable log is one error line alone
    _warn_ignored(cfg)
    skip_line = _skip_line(wl)
    if skip_line:
        _stderr_line(skip_line)
    jobs = workload.with_estimate(wl.jobs)
    runtime_s = _speedup_runtimes(scenario, int(cfg.seed), jobs)
    key_choices = _key_choices(cfg, topo_name, speedup_name, wl_cfg, wl, transform_counts, ft)
    result = replay.replay(
        jobs,
        ft,
        cfg.policy.name,
        cfg.sched.name,
        policy_params=policy_params,
        seed=int(cfg.seed),
        runtime_s=runtime_s,
        bins=tuple(int(b) for b in cfg.bins),
        config=key_choices,
        extra_skips={"dropped_by_scaling": transform_counts.get("dropped_by_scaling", 0)},
        progress=bool(cfg.progress),  # a bar on a terminal, else a line every few seconds
        node_kind=wl_cfg.get("node_kind"),
        runtime_model=runtime_model,
    )
    if n_trials > 1:
        _run_trials(cfg, ft, scenario, jobs, result, out_dir, n_trials)
    _write(result, out_dir)
    if n_trials > 1:
        from fattorus.app import trials

        shutil.rmtree(out_dir / trials.PARTS, ignore_errors=True)  # the finished batches, now in trials.parquet
    if cfg.logger.name == "wandb":
        from fattorus.app import logger

        try:
            logger.log_run(OmegaConf.to_container(cfg.logger, resolve=True), OmegaConf.to_container(cfg, resolve=True),
                           result, out_dir)
        except logger.LoggingError as err:  # the environment (a key refused, no network): exit 1, one line
            raise RunError(str(err)) from None
    return result.summary


def _key_choices(cfg: DictConfig, topo_name: str, speedup_name: str, wl_cfg: dict[str, Any], wl: Any,
                 transform_counts: dict[str, Any], ft: Any) -> dict[str, Any]:
    """The run's key choices for ``summary.json`` ``config``."""
    variant = _policy_variant(cfg)
    return {
        "topo": topo_name,
        "policy": str(cfg.policy.name),
        **({"policy_config": variant} if variant else {}),
        "policy_params": OmegaConf.to_container(cfg.policy.params, resolve=True),
        "sched": str(cfg.sched.name),
        "speedup": speedup_name,
        # What the run changed of that scenario's file: another scenario under the same name.
        "speedup_edits": config_mod.speedup_edits(speedup_name, OmegaConf.to_container(cfg.speedup, resolve=True)),
        # The scenario as the run read it (a user's own file may change under the same name).
        "speedup_sha256": _settings_digest(OmegaConf.to_container(cfg.speedup, resolve=True)),
        "seed": int(cfg.seed),
        "study": str(cfg.study),
        "workload": {
            **{k: wl_cfg.get(k) for k in ("name", "format", "cores_per_node", "scale", "window_start_days", "window_days")},
            "path": wl.path,
            "sha256": wl.sha256,
            "lines": wl.lines,
            "parse_skipped": wl.skipped.total,
            "parse_skipped_by_reason": dict(wl.skipped.counts),
            "parse_skipped_first": [e._asdict() for e in wl.skipped.entries[:5]],
            # sacct job-step rows (not jobs, not dirty): with them the line counts add up.
            "parse_steps": wl.skipped.steps,
            # The dirty-line ceiling changes which lines are jobs: the report tells such runs apart.
            # As given (null: the default, 366 days), as runs that did not record it read.
            "max_runtime_s": wl_cfg.get("max_runtime_s"),
            "outside_window": transform_counts.get("outside_window", 0),
            **({"unknown_submit": transform_counts["unknown_submit"]} if "unknown_submit" in transform_counts else {}),
            "scale_factor": transform_counts.get("scale_factor", 1.0),
            "node_kind": wl_cfg.get("node_kind") or ft.default_job_kind,
        },
    }


def _hydra() -> Any:
    """This Hydra run's ``HydraConfig``, or None outside one (a test calling the app's functions)."""
    try:
        return HydraConfig.get()
    except ValueError:
        return None


def _group_source(group: str, name: str | None = None) -> Path | None:
    """The YAML file this run's ``group`` config came from (:func:`callbacks.group_source`),
    or None outside a Hydra run."""
    hc = _hydra()
    return None if hc is None else callbacks.group_source(hc, group, name)


def _chose(group: str) -> bool:
    """Whether the command line sets ``group`` (``policy=...``); True outside a Hydra run."""
    hc = _hydra()
    return hc is None or any(cli.override_key(o).split(".", 1)[0] == group for o in hc.overrides.task)


def _policy_variant(cfg: DictConfig) -> str | None:
    """The tuned config the run chose (``policy=ta_tuned_atlas2x_cab``: a named variant of its
    policy, :func:`fattorus.app.config.policy_label`), else None. Recorded in ``summary.json`` as
    ``policy_config`` so that the run's line, ``compare`` and the report name it as its directory
    does: its ``name`` is the policy's (``ta``)."""
    hc = _hydra()
    choice = None if hc is None else hc.runtime.choices.get("policy")
    if choice is None:
        return None
    from fattorus.app.config import policy_label

    shown = policy_label(cfg.policy.name, choice)
    return shown if shown != str(cfg.policy.name) else None


def _load_workload(wl_cfg: dict[str, Any], topo_cfg: dict[str, Any], ft: Any) -> tuple[Any, dict[str, Any]]:
    """The workload scaled for the machine's usable nodes; prints the scaling it used.
    ``scale=machine`` is resolved in ``wl_cfg`` (so ``summary.json`` records the number used)."""
    from fattorus import topology, workload

    if wl_cfg.get("scale") == "machine":  # the machine's default load (conf/topo: default_scale)
        wl_cfg["scale"] = topo_cfg.get("default_scale", 1)
    if wl_cfg.get("log_nodes") is not None and wl_cfg.get("scale") != "fit":
        _stderr_line(f"fattorus.sweep: warning: workload.log_nodes={wl_cfg['log_nodes']} is read only with "
                     f"workload.scale=fit; this run scales by x{wl_cfg.get('scale')}")
    from fattorus.sched.replay import BY_JOB, machine_nodes

    try:
        usable = machine_nodes(ft, wl_cfg.get("node_kind"))
    except topology.TopologyError as err:
        if "has no usable" in str(err):  # the machine's node_kinds, not the setting
            raise UserError(str(err)) from None
        raise UserError(f"workload.node_kind: {err} (or {BY_JOB}: each job on the kind its node_kind column "
                        f"names)") from None
    wl, counts = workload.from_config(wl_cfg, machine_nodes=usable, machine_scale=topo_cfg.get("default_scale", 1))
    print(_scale_line(wl_cfg, counts, usable), flush=True)  # stdout: stderr is for problems
    return wl, counts


def _scale_line(wl_cfg: dict[str, Any], counts: dict[str, Any], usable: int) -> str:
    """The one line that says which load a run used (the scaling is part of the result)."""
    from fattorus import workload

    factor = counts.get("scale_factor", 1.0)
    # fit's factor is usable / the log's machine nodes, so the log's size is read back from it.
    # (Only for fit: a tiny factor given as a number, 1e-308, made usable / factor infinite.)
    how = f"fit: {usable} usable nodes / the log's machine of {round(usable / factor)}" if wl_cfg.get("scale") == "fit" \
        else ""
    start_days, days = workload.check_window(wl_cfg)  # the window from_config cut (checked before the replay)
    windowed = bool(start_days) or days is not None
    unknown = counts.get("unknown_submit", 0)
    # Without a window the replay counts them as bad_submit; a window leaves them out: say so.
    no_time = f"; {unknown} job(s) of the log have no submit time: no window holds them" if unknown else ""
    return (f"workload {wl_cfg.get('name')}: node counts x{factor:.4g}{f' ({how})' if how else ''}, "
            f"nodes' = ceil(nodes x factor); {counts.get('dropped_by_scaling', 0)} job(s) of the "
            f"{'window' if windowed else 'log'} dropped, scaled past the {usable} usable nodes{no_time}")


def _check_batched(cfg: DictConfig, topo: Any) -> None:
    """``trials > 1`` runs through the compiled engine: say in one line what it cannot do."""
    params = OmegaConf.to_container(cfg.policy.params, resolve=True) or {}
    if topo.kind != "fattree" or cfg.policy.name not in ("to", "ta"):
        raise UserError(f"trials={cfg.trials}: the batched engine replays policies to and ta on fat-trees; "
                        f"got policy {cfg.policy.name} on {topo.kind} {topo.name} (run seeds as a multirun instead)")
    if params.get("relax_after_s") is not None:
        raise UserError(f"trials={cfg.trials}: the batched engine has no hybrid rule: policy.params.relax_after_s="
                        f"{params['relax_after_s']} needs relax_after_s=null (or run seeds as a multirun)")
    if cfg.speedup.get("kind", "bins") == "model":
        raise UserError(f"trials={cfg.trials}: speedup=model decides run times during the replay; "
                        "the batched engine needs them before (use a multirun over seeds)")


def _run_trials(cfg: DictConfig, ft: Any, scenario: Any, jobs: Any, result: Any, out_dir: Path, n: int) -> None:
    """Trials 0..n-1 through the batched engine: trials.parquet and the summary's ``trials``."""
    from fattorus.app import trials
    from fattorus.files import atomic_write

    hc = _hydra()
    multirun = hc is not None and hc.mode.name == "MULTIRUN"
    from fattorus.workload import speedup

    if speedup.draws_nothing(scenario):  # n copies of one replay, reported as "± 0" without a word why
        _stderr_line(f"fattorus.sweep: warning: trials={n} with speedup={scenario.name}: the scenario draws nothing "
                     "(no size class has two bins to choose from), so every trial replays the same run times")
    try:
        table, info = trials.run(jobs, ft, cfg.policy.name, cfg.sched.name,
                                 OmegaConf.to_container(cfg.policy.params, resolve=True), n, int(cfg.seed),
                                 lambda s: _speedup_runtimes(scenario, s, jobs), result.jobs["start_s"].to_numpy(),
                                 progress=bool(cfg.progress), parts=out_dir / trials.PARTS,
                                 identity={k: v for k, v in result.summary["config"].items() if k not in _NOT_RESULTS},
                                 refuse_other=not multirun)  # a multirun's trial is redone; a single run's directory is not its own
    except trials.OtherSettings as err:
        raise UserError(_other_trials(out_dir, str(err))) from None
    except OSError as err:  # a batch could not be kept
        raise RunError(f"cannot write the results to {out_dir}: {err.strerror or err}") from None
    try:
        atomic_write(out_dir / "trials.parquet", lambda p: table.write_parquet(p))
    except OSError as err:
        raise RunError(f"cannot write the results to {out_dir}: {err.strerror or err}") from None
    result.summary["trials"] = info
    if info["kept"]:
        print(f"trials: {info['kept']} of {n} kept from the interrupted run in {out_dir}", flush=True)
    s = info["mean_wait_s"]
    unit, per = _wait_unit(s["mean"])  # as the done line (0.00156 h beside its "4.3 s" read as two figures)
    low, high = _alike(s["p05"] / per, s["p95"] / per)
    print(f"trials: {n} draws, mean wait {s['mean'] / per:.3g} {unit} ± {s['std'] / per:.2g} "
          f"(5–95 %: {low}–{high} {unit}), {info['wall_s']:.1f} s", flush=True)


def _runtime_model(cfg: DictConfig, topo: Any) -> Any:
    """The flow model deciding run times at job start (``speedup.kind: model``), or None."""
    if cfg.speedup.get("kind", "bins") != "model":
        return None
    from fattorus.analysis import comm_fraction, commtime, interference

    try:
        mix = interference.parse_mix(str(cfg.speedup.get("patterns", interference.DEFAULT_MIX)), "speedup.patterns")
        raw = cfg.speedup.get("comm_fraction", 0.3)
        c = comm_fraction.parse(OmegaConf.to_container(raw) if isinstance(raw, (DictConfig, ListConfig)) else raw)
        apps = cfg.speedup.get("app_patterns")
        if apps is not None and not isinstance(apps, DictConfig):
            raise ValueError(f"app_patterns must map application names to patterns, got {apps!r}")
        by_app = commtime.parse_app_patterns(OmegaConf.to_container(apps) if apps is not None else None)
        comm_fraction.check_patterns(c, set(mix) | {name for name, _ in (by_app or {}).values()})
    except (TypeError, ValueError) as err:
        raise UserError(f"speedup={cfg.speedup.get('name')}: {err}") from None
    return commtime.ModelRuntimes(topo, mix, c, int(cfg.seed), app_patterns=by_app or None)


def _speedup_runtimes(scenario: Any, seed: int, jobs: Any) -> Any:
    """Run times after the speedup scenario (None when it changes nothing), seconds, float64."""
    if not scenario.classes:
        return None
    import numpy as np

    from fattorus.kernels import threefry
    from fattorus.workload import speedup

    # One key per run, derived from the seed; fold_in keeps it independent of any other
    # draw made from the same seed (e.g. a random policy). JAX's key and bits, made on the
    # host: a run needing no other JAX work never loads it (~1 s).
    key = threefry.seed_key(seed, 0x5EED)
    nodes = jobs["nodes"].fill_null(0).to_numpy()
    factor = np.asarray(speedup.factors64(scenario, key, nodes), dtype=np.float64)
    return jobs["runtime_s"].to_numpy() * factor  # float64: exact for unchanged jobs


def _write(result: Any, out_dir: Path) -> None:
    """Write the run's files; a run that replayed nothing is an error, not a quiet success."""
    counts = result.summary["counts"]
    if counts["replayed"] == 0:
        skipped = ", ".join(f"{r} {n}" for r, n in sorted(counts["skipped"].items()) if n) or "none"
        raise UserError(f"no job was replayed: {counts['read']} read, skipped by reason: {skipped} "
                        "(check workload.scale, the window and the machine size)")
    try:
        outputs.write_run(out_dir, result.jobs, result.utilization, result.summary, result.skipped)
    except OSError as err:
        raise RunError(f"cannot write the results to {out_dir}: {err.strerror or err}") from None


def _wait_unit(seconds: float) -> tuple[str, float]:
    """The unit a wait of ``seconds`` reads in and its size in seconds: hours, or seconds under
    36 s (a light load's waits of seconds read "0.00 h")."""
    return ("h", 3600.0) if seconds >= 36 or seconds == 0 else ("s", 1.0)


def _wait(seconds: float) -> str:
    """A mean wait for the done line: hours to two decimals, or seconds (:func:`_wait_unit`)."""
    unit, per = _wait_unit(seconds)
    return f"{seconds / per:{'.2f' if unit == 'h' else '.3g'}} {unit}"


def _span(seconds: float) -> str:
    """A makespan for the done line: days to one decimal, or hours under 2.4 h (a one-hour
    workload read "makespan 0.0 d")."""
    return f"{seconds / 86400:.1f} d" if seconds >= 8640 else f"{seconds / 3600:.2g} h"


def _one_line(summary: dict[str, Any]) -> str:
    # Here, not at the top: the report package loads matplotlib (~60 ms on every start).
    from fattorus.report.labels import policy_name

    c = summary["config"]
    wl = c["workload"]
    factor = wl.get("scale_factor")
    scale = f"{float(factor):.4g}" if isinstance(factor, (int, float)) else wl["scale"]
    # Every job the replay left out, by reason (summary.json `counts.skipped`), but those the
    # scaling dropped: the scale line before said so.
    left_out = {r: n for r, n in summary["counts"].get("skipped", {}).items() if n and r != "dropped_by_scaling"}
    skipped = (f" ({sum(left_out.values())} not replayed: " + ", ".join(f"{r} {n}" for r, n in left_out.items()) + ")"
               if left_out else "")
    return (
        f"{c['topo']} {policy_name(c)}/{c['sched']} speedup={c['speedup']} seed={c['seed']} "
        f"workload={wl['name']} x{scale}: "
        f"{summary['counts']['replayed']} jobs{skipped}, mean wait {_wait(summary['wait_s']['mean'])}, "
        f"utilization {summary['utilization']['mean']:.1%}, makespan {_span(summary['makespan_s'])}, "
        f"{_model_part(summary)}replay {summary['replay_wall_s']:.1f} s"
    )


def _model_part(summary: dict) -> str:
    """The done line's words on the flow model's run times (``speedup=model``; else nothing):
    the mean and largest slowdown and the jobs cut at their estimate."""
    model = summary.get("runtime_model") or {}
    if model.get("mean_slowdown") is None:
        return ""
    cut, unrequested = model.get("killed_at_estimate", 0), model.get("killed_without_requested_time", 0)
    at_limit = model.get("killed_at_logged_limit", 0)
    # A job the log gave no requested time has its logged run time as its estimate, and one
    # that ran to its limit in the log has no slack left: any slowdown cuts either.
    parts = [f"{unrequested} with no requested time in the log"] * bool(unrequested) + \
        [f"{at_limit} that ran to their limit in the log"] * bool(at_limit)
    of_them = f" ({', '.join(parts)})" if parts else ""
    return (f"slowdown mean {model['mean_slowdown']:.3g} (max {model['max_slowdown']:.3g}), "
            f"{cut} cut at their estimate{of_them}, ")


#: A single run's Ctrl-C line: its results are written when it ends.
NOTHING_KEPT = "a single run writes its results when it ends: nothing was kept"


def _single_run_interrupted(out_dir: Path) -> None:
    """What a Ctrl-C keeps of a single run: the run had finished (its results are written);
    or a ``trials=N`` run's finished batches, with the override that resumes them
    (:func:`fattorus.app.trials.resume_note`); otherwise nothing, and a directory of stubs
    alone goes."""
    from fattorus.app import trials

    parts = out_dir / trials.PARTS
    if outputs.check_complete(out_dir) is None:  # interrupted after its results were written
        shutil.rmtree(parts, ignore_errors=True)
        cli.kept_on_interrupt(cli.finished_note(out_dir))
    elif trials.resumable(out_dir):
        cli.kept_on_interrupt(trials.resume_note(out_dir))
    else:
        was_trials = parts.is_dir()
        shutil.rmtree(parts, ignore_errors=True)  # its settings record alone
        cli.discard_stub(out_dir, "runs")
        if out_dir in _CLAIMS and out_dir.is_dir():  # a directory that was there before: its stubs go
            cli.discard_named_stub(out_dir)
        cli.kept_on_interrupt(trials.NO_BATCH_KEPT if was_trials else NOTHING_KEPT)


# An absolute path: the app runs as `python -m fattorus.sweep` (a shim), so Hydra cannot
# resolve a path relative to the caller.
@hydra.main(config_path=str(paths.conf_dir()), config_name="config", version_base="1.3")
def _app(cfg: DictConfig) -> dict[str, Any] | None:
    from fattorus.topology import TopologyError
    from fattorus.workload.speedup import SpeedupError
    from fattorus.workload import WorkloadError

    # JAX announces at INFO level each accelerator backend it does not find; not news here.
    logging.getLogger("jax").setLevel(logging.WARNING)
    from fattorus.args import reader_may_leave

    reader_may_leave()  # in a multirun's worker too: a reader that left never stops a trial
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode.name == "MULTIRUN"
    if multirun:
        why = outputs.check_complete(out_dir)
        stale = _stale(out_dir, cfg) if why is None else None
        if why is None and stale is None:
            # A skipped trial is not logged (again): say so where W&B logging was asked for.
            wandb = "; not logged to W&B (a trial is logged when it runs)" if cfg.logger.name == "wandb" else ""
            # Kept, but a study mixing code versions should know it (outputs.skip_note).
            print(f"[skip] {out_dir} already holds a finished run{outputs.skip_note(out_dir)}{wandb}", flush=True)
            return json.loads((out_dir / "summary.json").read_text())
        if stale is not None:
            _stderr_line(f"fattorus.sweep: warning: {out_dir}: {stale}; re-running it")
        elif (out_dir / "summary.json").exists():
            _stderr_line(f"fattorus.sweep: warning: {out_dir}: damaged trial ({why}); re-running it")
    t0 = time.perf_counter()
    try:
        if not multirun:
            _claim(out_dir)
        summary = run(cfg, out_dir)
    except KeyboardInterrupt:
        if not multirun:
            _single_run_interrupted(out_dir)
        raise
    except (UserError, RunError, TopologyError, SpeedupError, WorkloadError, ValueError, OSError, MemoryError,
            RuntimeError) as err:
        if isinstance(err, RuntimeError) and not out_of_memory(err):
            raise
        error = err if isinstance(err, (UserError, RunError)) else (
            RunError(f"{err.strerror or err}: {getattr(err, 'filename', '') or ''}".rstrip(": "))
            if isinstance(err, OSError) else _out_of_memory(err) if out_of_memory(err) else UserError(str(err)))
        if multirun:  # the launcher collects it; main() prints it in one line
            if isinstance(error, UserError):  # a refused trial leaves no directory (as a single run)
                cli.discard_trial_stub(out_dir, Path(hc.sweep.dir))
            raise error from None
        # A single run exits here: Hydra would first print the job's overrides on a line of
        # its own.
        if isinstance(error, UserError) or out_of_memory(err):  # nothing of the run is kept
            cli.discard_stub(out_dir, "runs")
            if out_dir in _CLAIMS and out_dir.is_dir():  # a directory the user named: its stubs go
                cli.discard_named_stub(out_dir)
        sys.stderr.write(f"fattorus.sweep: error: {_squash(error)}\n")
        sys.exit(1 if isinstance(error, RunError) else 2)
    if not multirun:  # a Ctrl-C from here on: the run had finished
        cli.kept_on_interrupt(cli.finished_note(out_dir))
    prefix = "[done]" if multirun else "done:"
    finished = ""
    if multirun:
        sweep_dir = Path(hc.sweep.dir)
        n_done = sum(1 for d in sweep_dir.iterdir() if outputs.is_complete(d)) if sweep_dir.is_dir() else 0
        finished = f" ({n_done} finished in {sweep_dir})"
    print(f"{prefix} {_one_line(summary)} in {time.perf_counter() - t0:.1f} s -> {out_dir}{finished}", flush=True)
    return summary


def _alike(low: float, high: float) -> tuple[str, str]:
    """Two ends of a range each to three figures, trailing zeros kept (``0.710–0.895``, not
    ``0.71–0.895``: session 47's audit; ``0.00400–12.0``), whole numbers from 1,000 on."""
    def three(x: float) -> str:
        return f"{x:.0f}" if abs(x) >= 999.5 else f"{x:#.3g}".rstrip(".")

    return three(low), three(high)


def _settings_digest(settings: Any) -> str:
    """sha256 of a resolved settings mapping (key order aside)."""
    import hashlib

    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def _stale(out_dir: Path, cfg: DictConfig) -> str | None:
    """Why the finished trial in ``out_dir`` must run again (its log's bytes, its machine, its
    scenario or its policy parameters changed since), or None; its ``summary.json`` read once."""
    try:
        summary = json.loads((out_dir / "summary.json").read_text())
        recorded = summary["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(recorded, dict):
        return None
    return _changed_log(recorded) or _changed_settings(summary, recorded, cfg)


def _changed_settings(summary: dict[str, Any], recorded: dict[str, Any], cfg: DictConfig) -> str | None:
    """Why a finished trial's results are stale though its log is not: the machine or the
    speedup scenario its files name now differ from what it ran with (a user's own YAML on
    ``hydra.searchpath`` edited under the same name: the rerun kept the old results; session
    47's exploratory run), or its policy parameters do; None when they agree or the trial did
    not record them (made before: kept, as before). ``recorded``: the summary's ``config``."""
    from fattorus import topology

    if cfg.get("topo") is not None and isinstance(summary.get("topology"), dict):
        try:
            now = topology.from_config(OmegaConf.to_container(cfg.topo, resolve=True)).canonical_config()
            then = topology.from_config(summary["topology"]).canonical_config()
        except (topology.TopologyError, TypeError, ValueError):
            now = then = None
        if now is not None and now != then:
            keys = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
            return f"its machine {then.get('name')!r} changed since this trial ran ({', '.join(keys)})"
    if "speedup_sha256" in recorded and cfg.get("speedup") is not None:
        if _settings_digest(OmegaConf.to_container(cfg.speedup, resolve=True)) != recorded["speedup_sha256"]:
            return f"its speedup scenario {recorded.get('speedup')!r} changed since this trial ran"
    if "policy_params" in recorded:
        if OmegaConf.to_container(cfg.policy.params, resolve=True) != recorded["policy_params"]:
            return f"its policy parameters ({recorded.get('policy_config') or recorded.get('policy')}) changed since"
    return None


def _changed_log(recorded: dict[str, Any]) -> str | None:
    """Why a finished trial's results are stale — its job log's bytes changed since (the
    sha256 its summary's ``config``, ``recorded``, holds) — or None."""
    import hashlib

    try:
        wl = recorded["workload"]
        path, then = Path(wl["path"]), wl["sha256"]
        if not (path.is_file() and then):
            return None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if digest == then else f"the job log {path} changed since this trial ran"


#: The directories this process claimed and their claim files' descriptors (locked until it
#: exits): see :func:`_claim`; a refused run takes away only stubs it claimed itself.
_CLAIMS: dict[Path, int] = {}


def _claim(out_dir: Path) -> None:
    """Mark ``out_dir`` as this run's own and hold it (an exclusive ``flock`` on its
    ``.fattorus-run`` until the process ends); refuse a directory another run already claimed
    (a single run never writes into a directory holding another run's files), unless it holds
    an interrupted ``trials=N`` run that no process holds any more: this run resumes it."""
    from fattorus.app import trials

    path = out_dir / ".fattorus-run"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        if not trials.resumable(out_dir):
            raise UserError(_held(out_dir)) from None
        fd = os.open(path, os.O_WRONLY)
    if not _lock(fd):
        os.close(fd)
        raise UserError(f"{out_dir} is being written by another run now; not writing into it")
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _CLAIMS[out_dir] = fd


def _lock(fd: int) -> bool:
    """Take an exclusive lock on ``fd`` without waiting; False when another process holds it."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _claimed_elsewhere(out_dir: Path) -> bool:
    """Whether a running process holds ``out_dir``'s claim (:func:`_claim`)."""
    try:
        fd = os.open(out_dir / ".fattorus-run", os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _lock(fd)
    finally:
        os.close(fd)  # closing releases a lock taken here


def _out_of_memory(err: BaseException) -> RunError:
    """The one line of a run that ran out of memory (the machine's limit, not a setting's
    mistake: exit 1), where it was a traceback from the allocator."""
    what = " ".join(str(err).split())[:200] or "an allocation failed"
    return RunError(f"out of memory ({what}): this run needs more memory than this computer has free; a smaller "
                    "interconnect (topo: its size sets the tables' size), a smaller workload.scale or window or "
                    "(speedup=model) patterns with fewer flows per job need less")


def _squash(text: Any) -> str:
    return cli.squash(text)


def main() -> None:
    """Entry point: runs the Hydra app and turns every configuration error into one line."""
    problem = cli.other_apps_group(sys.argv[1:]) or cli.unchosen_group(sys.argv[1:])
    if problem:
        sys.stderr.write(f"fattorus.sweep: error: {problem}\n")
        sys.exit(2)
    devices.use_cpu_cores()  # trials=N splits its batches over them
    # A single run leaves a Ctrl-C without the interpreter's teardown, as the QoS app does: a
    # trials=N batch's worker threads may still be inside XLA, and a teardown that met them
    # aborted now and then (exit 134, "FATAL: exception not rethrown"; session 45's exploratory
    # run, 2 of ~25 tries). A multirun's teardown stops its launcher's workers: kept.
    cli.run_main(_app, "fattorus.sweep", (UserError,), (RunError,), single=NOTHING_KEPT,
                 interrupted="finished runs (and a trials=N run's finished batches) are kept",
                 exit_at_once=not cli.is_multirun(sys.argv[1:]))


if __name__ == "__main__":
    main()
