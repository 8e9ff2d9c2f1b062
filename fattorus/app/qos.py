"""The process-level QoS study app: ``python -m fattorus.qos [qos=small|medium|large] [...]``.

Runs the QoS paper's experiment (:mod:`fattorus.analysis.qos`) for ``qos.placements`` random
placements of its job mix on its fat-tree and writes, into the Hydra run directory under
``results/``:

* ``placements/p<k>.parquet`` — per job of placement ``k``: pattern, iterations isolated /
  default / QoS / final, ``W_default``, ``W_qos``, ``improvement`` (``I_Q / I_D − 1``) and
  ``improvement_final`` (the assignment the algorithm settled on); written as each placement
  finishes, so an interrupted run resumes there (re-run a multirun, or a single run with
  ``hydra.run.dir=`` its directory); ``placements/settings.json`` records the settings they
  are made with, so a resume with other settings is refused (single run) or redone (trial);
* ``jobs.parquet`` — all placements; ``history.parquet`` — per period: mode, score, levels in
  use; ``summary.json`` — per pattern medians and extremes, settings, wall time;
* ``improvement.png`` — the paper's two charts: ``W`` per job type (default vs QoS) and the
  per-job improvement over default, sorted (:mod:`fattorus.report.qos`).

Configuration errors end in one line on stderr (exit 2), before any placement runs: unknown
keys (appended with ``+``) included, and for a multirun every trial's values are checked
before the first trial starts. A single run whose ``hydra.run.dir`` holds a run made with
other settings (``seed`` or ``qos.*``) is refused without touching that directory; a multirun
trial whose results, finished or not, were made with other settings is redone, with a warning.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.qos")

import json
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import polars as pl
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from fattorus import paths, provenance
from fattorus.app import cli, outputs
from fattorus.app.callbacks import ResultsOnly
from fattorus.app.cli import Refusal
from fattorus.app import config as config_mod
from fattorus.args import SEED_MAX
from fattorus.files import atomic_write, remove_stale_temps

config_mod.register()


class UserError(Exception):
    """A configuration mistake: one line, exit 2."""


#: The settings of ``conf/qos_app.yaml`` (``hydra`` is Hydra's own) and of a ``qos`` config
#: (``conf/qos/*.yaml``, read by :func:`run` and :func:`fattorus.analysis.qos.experiment_from`).
#: The QoS config has no schema dataclass, so Hydra accepts any key appended with ``+``: a
#: misspelt one would otherwise be ignored and the run would use the default silently.
APP_KEYS = ("qos", "seed", "study", "progress")
QOS_KEYS = ("name", "system", "bandwidth_GBps", "jobs", "processes", "message_bytes", "placements", "iterations",
            "period_s", "compute_fraction", "imbalance", "traces", "noise", "routing", "threshold", "num_sls",
            "first_weight", "raise_factor", "max_weight", "max_slowdown", "default_periods", "arrivals",
            "arrival_compute_fraction")


def _check_keys(cfg: DictConfig) -> None:
    """Refuse a setting no code reads (as :func:`fattorus.app.sweep.check_settings` does for
    the replay app, whose check is tied to its schema dataclasses)."""
    from fattorus.analysis import bsp

    def check(keys: Any, known: Any, where: str) -> None:
        why = cli.unknown_setting(keys, known, where)
        if why:
            raise UserError(why)

    check([k for k in cfg.keys() if k != "hydra"], APP_KEYS, "")
    if isinstance(cfg.get("qos"), DictConfig):
        check(cfg.qos.keys(), QOS_KEYS, "qos.")
        # Sizes of jobs the mix does not run are harmless, of patterns that do not exist a typo.
        if isinstance(cfg.qos.get("message_bytes"), DictConfig):
            check(cfg.qos.message_bytes.keys(), bsp.PATTERNS, "qos.message_bytes.")


def _topology(cfg: DictConfig) -> Any:
    from fattorus import topology
    from fattorus.topology import TopologyError

    system = cfg.qos.get("system")
    if not isinstance(system, DictConfig):
        raise UserError("qos.system: give the fat-tree's fields (as in conf/topo/cab.yaml, without kind and name)")
    fields = dict(OmegaConf.to_container(system, resolve=True))
    try:
        # qos.name is for display (paths take it through fattorus_component): the machine's own
        # name, which must be a file-name component, is that name made safe.
        topo = topology.from_config({"kind": "fattree", "name": topology.file_safe_name(str(cfg.qos.name)), **fields})
    except (TopologyError, TypeError) as err:
        raise UserError(f"qos.system: {_squash(err)}") from None
    if topo.kind != "fattree":
        raise UserError("qos.system: the QoS study models fat-trees (the paper's InfiniBand systems)")
    return topo


def _experiment(cfg: DictConfig) -> Any:
    from fattorus.analysis import qos

    raw = OmegaConf.to_container(cfg.qos, resolve=True)
    try:
        return qos.experiment_from(raw)
    except ValueError as err:
        raise UserError(str(err)) from None


def _placement_seed(seed: int, k: int) -> int:
    """Seed of placement ``k``: derived from the run's seed (independent streams per k)."""
    return int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


def check_settings(cfg: DictConfig) -> tuple[Any, Any]:
    """Every check a run's settings get, before any placement is computed (and, for a single
    run, before Hydra makes or touches its directory): one-line UserError each. Returns the
    topology and the experiment the settings describe."""
    _check_keys(cfg)
    progress = cfg.get("progress", True)
    if not isinstance(progress, bool):  # `progress=maybe` reaches us as a string
        raise UserError(f"progress={progress!r}: true or false")
    seed = cfg.seed
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:  # true is no seed
        raise UserError(f"seed={seed}: choose an integer between 0 and {SEED_MAX}")
    placements = cfg.qos.get("placements")
    if not isinstance(placements, int) or isinstance(placements, bool) or not 1 <= placements <= 10_000:
        raise UserError(f"qos.placements={placements!r}: choose an integer between 1 and 10000")
    topo = _topology(cfg)
    exp = _experiment(cfg)
    n_needed = exp.processes * sum(k for _, k in exp.jobs)
    if n_needed > topo.n_nodes:
        raise UserError(f"qos: {n_needed} processes need as many nodes; the system has {topo.n_nodes}")
    return topo, exp


def run(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    """Every placement (resuming finished ones), then the tables, summary and figure."""
    from fattorus.analysis import qos
    from fattorus.report import qos as qos_report

    topo, exp = check_settings(cfg)
    seed, placements = cfg.seed, cfg.qos.placements
    # The settings the placements are made with, beside them: an interrupted run is resumed
    # only with the same settings, and Hydra's own copy of the config may be absent
    # (hydra.output_subdir=null) or already rewritten for the new run (a multirun trial).
    if any((out_dir / "placements").glob("*.parquet")):  # resumed: by the code its placements were made with?
        made = outputs.kept_source(out_dir, str(SETTINGS))
        if made:
            print(f"fattorus.qos: warning: {out_dir}: its kept placements were {made}; they are kept (delete "
                  f"{out_dir / 'placements'} to redo them)", file=sys.stderr, flush=True)
    # An earlier attempt's worker killed mid-write (a multirun's Ctrl-C) left its temporaries.
    remove_stale_temps(out_dir)
    remove_stale_temps(out_dir / "placements")
    atomic_write(out_dir / SETTINGS, json.dumps({**_settings(cfg), "fattorus": provenance.stamp()}, indent=2) + "\n")
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    history: list[pl.DataFrame] = []
    solves, solve_s, unconverged = 0, 0.0, 0
    kept = sum((out_dir / "placements" / f"p{k}.parquet").exists() and (out_dir / "placements" / f"h{k}.parquet").exists()
               for k in range(placements))
    if kept:  # as every resumable command says what it kept (session 47's exploratory run)
        print(f"fattorus.qos: resuming {out_dir}: {kept} of {placements} placement(s) made before", file=sys.stderr,
              flush=True)
    # One bar over every placement's periods: a bar per placement restarted its few-seconds
    # clock, so in a log placements shorter than that printed nothing (session 47).
    bar = _bar(cfg, placements * exp.iterations, f"{cfg.qos.name} placements")
    for k in range(placements):
        part = out_dir / "placements" / f"p{k}.parquet"
        hist = out_dir / "placements" / f"h{k}.parquet"
        if part.exists() and hist.exists():
            try:
                kept_rows, kept_hist = pl.read_parquet(part, glob=False).to_dicts(), pl.read_parquet(hist, glob=False)
            except (OSError, pl.exceptions.PolarsError) as err:
                # Damaged (e.g. copied half): a placement is a function of the settings and its
                # seed, so it is made again, the same as it was, rather than ending the run.
                reason = outputs.first_line(err)
                print(f"fattorus.qos: warning: placement {k}: kept results cannot be read ({reason}); made again",
                      file=sys.stderr, flush=True)
            else:
                rows += kept_rows
                history.append(kept_hist)
                if bar is not None:
                    bar.update(exp.iterations)
                continue
        mix, res = qos.run_placement(topo, exp, _placement_seed(seed, k),
                                     progress=(lambda _i: bar.update(1)) if bar is not None else None)
        new = qos.job_rows(mix, res, placement=k)
        h = pl.DataFrame({"placement": k, "period": np.arange(exp.iterations), "mode": res.modes,
                          "score": res.scores, "prioritised": res.n_assigned})
        atomic_write(hist, lambda p: h.write_parquet(p))
        atomic_write(part, lambda p: pl.DataFrame(new).write_parquet(p))
        rows += new
        history.append(h)
        solves, solve_s = solves + res.solves, solve_s + res.solve_s
        if res.unconverged:
            print(f"fattorus.qos: warning: placement {k}: {res.unconverged} of {res.solves} rate solves ended at "
                  f"the midpoint of bounds up to {res.max_gap:.1%} wide (counted in summary.json)", file=sys.stderr)
        unconverged += res.unconverged
    if bar is not None:
        bar.close()
    jobs = pl.DataFrame(rows)
    atomic_write(out_dir / "jobs.parquet", lambda p: jobs.write_parquet(p))
    atomic_write(out_dir / "history.parquet", lambda p: pl.concat(history).write_parquet(p))
    qos_report.figure(rows, out_dir / "improvement.png", title=_title(cfg))
    summary = {"study": "qos", "system": str(cfg.qos.name), "nodes": topo.n_nodes, "seed": seed,
               "placements": placements, "settings": OmegaConf.to_container(cfg.qos, resolve=True),
               "wall_s": time.perf_counter() - t0, "solves_this_run": solves, "solve_s_this_run": solve_s,
               "unconverged_solves_this_run": unconverged,
               "by_pattern": qos.summarize(rows), "fattorus": provenance.stamp()}
    atomic_write(out_dir / "summary.json", json.dumps(summary, indent=2, default=float) + "\n")
    return summary


def _title(cfg: DictConfig) -> str:
    q = cfg.qos
    return (f"{q.name}: imbalance {q.imbalance}, compute {q.compute_fraction:g}, T {q.threshold:g}, "
            f"{q.routing} routing, {q.placements} placements x {q.iterations} periods")


def _bar(cfg: DictConfig, total: int, desc: str) -> Any:
    """The run's progress over its placements' periods: a bar on a terminal, else a line every
    few seconds (a run in a log said nothing for minutes); None with ``progress=false``."""
    if not cfg.get("progress", True):
        return None
    from fattorus.args import progress_bar

    return progress_bar(total, desc, "period", leave=False)


def _one_line(summary: dict[str, Any]) -> str:
    a = summary["by_pattern"]["all"]
    return (f"{summary['system']}: {a['jobs']} jobs, improvement over default median {a['improvement_median']:+.1%} "
            f"(max {a['improvement_max']:+.1%}, min {a['improvement_min']:+.1%}); "
            f"settled assignment median {a['improvement_final_median']:+.1%}")


@hydra.main(config_path=str(paths.conf_dir()), config_name="qos_app", version_base="1.3")
def _app(cfg: DictConfig) -> dict[str, Any] | None:
    logging.getLogger("jax").setLevel(logging.WARNING)
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode.name == "MULTIRUN"
    why = _other_settings(out_dir, cfg)  # finished or unfinished results made otherwise
    if (out_dir / "summary.json").exists() and why is None:
        print(f"[skip] {out_dir} already holds a finished run{outputs.skip_note(out_dir)}", flush=True)
        return json.loads((out_dir / "summary.json").read_text())
    if why is not None:
        if not multirun:  # Checks.on_run_start refuses this before Hydra writes; a last guard
            sys.stderr.write(f"fattorus.qos: error: {_squash(_another_run(out_dir, why))}\n")
            sys.exit(2)
        # As the replay app does with a trial whose job log changed: say so and redo it,
        # rather than skip with results that do not match the trial's settings.
        sys.stderr.write(f"fattorus.qos: warning: {out_dir}: settings changed since this trial ran ({why}); "
                         "re-running it\n")
        _discard_results(out_dir)
    t0 = time.perf_counter()
    try:
        summary = run(cfg, out_dir)
    except UserError as err:
        if multirun:
            # The launcher collects the error and main() prints it in one line; Hydra made the
            # trial's directory before we could check, so take that stub away again.
            cli.discard_trial_stub(out_dir, Path(hc.sweep.dir))
            raise
        # A single run exits here: Hydra would first print the job's overrides on a line of
        # its own.
        cli.discard_stub(out_dir, "qos")
        sys.stderr.write(f"fattorus.qos: error: {_squash(err)}\n")
        sys.exit(2)
    except (KeyboardInterrupt, Exception) as err:
        # A Ctrl-C, also one that landed in the solver's host callback (a ValueError naming it).
        if not multirun and (isinstance(err, KeyboardInterrupt) or cli.is_interrupt(err)):
            _single_run_interrupted(out_dir)
        raise
    if not multirun:  # a Ctrl-C from here on: the run had finished
        cli.kept_on_interrupt(cli.finished_note(out_dir))
    prefix = "[done]" if multirun else "done:"
    print(f"{prefix} {_one_line(summary)} in {time.perf_counter() - t0:.1f} s -> {out_dir}", flush=True)
    return summary


def _settings(cfg: DictConfig) -> dict[str, Any]:
    """What a run's results depend on (``study`` names a sweep, ``progress`` draws a bar),
    through JSON so that it compares equal with what ``summary.json`` recorded."""
    return _with_defaults(json.loads(json.dumps({"seed": cfg.seed, "qos": OmegaConf.to_container(cfg.qos, resolve=True)},
                                                default=float)))


#: Where a run records the settings its placements are made with (:func:`_stored_settings`).
SETTINGS = Path("placements") / "settings.json"

#: Settings added after runs were made, with the value that reproduces those runs: a run
#: recorded without the key was made with it, so it compares equal and is not redone.
ADDED_QOS_DEFAULTS = {"default_periods": 1}


def _with_defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` (``{"seed", "qos"}``) with :data:`ADDED_QOS_DEFAULTS` filled in where absent."""
    if isinstance(settings.get("qos"), dict):
        settings["qos"] = {**ADDED_QOS_DEFAULTS, **settings["qos"]}
    return settings


def _stored_settings(out_dir: Path) -> dict[str, Any] | None:
    """The settings of the run whose results ``out_dir`` holds: from its ``summary.json``, or,
    for an unfinished run (placements but no summary), from ``placements/settings.json``
    (written before its first placement), or for a run made before that file existed from
    Hydra's copy of its config (read before Hydra rewrites it). None when the directory holds
    no results; ``{}`` when it holds results whose settings cannot be read (never equal to a
    run's settings)."""
    summary = out_dir / "summary.json"
    try:
        if summary.exists():
            data = json.loads(summary.read_text())
            return _with_defaults(json.loads(json.dumps({"seed": data["seed"], "qos": data["settings"]}, default=float)))
        if not any((out_dir / "placements").glob("*.parquet")):
            return None
        if (out_dir / SETTINGS).exists():
            stored = json.loads((out_dir / SETTINGS).read_text())
            stored.pop("fattorus", None)  # the code the placements were made with: named when resumed, not compared
            return _with_defaults(stored)
        return _settings(OmegaConf.load(out_dir / ".hydra" / "config.yaml"))
    except Exception:  # noqa: BLE001 - unreadable, damaged or foreign: not this run's settings
        return {}


def _other_settings(out_dir: Path, cfg: DictConfig) -> str | None:
    """How the run held in ``out_dir`` was set up differently from ``cfg`` (a few keys), or
    None when it holds no run or a run with the same settings."""
    stored = _stored_settings(out_dir)
    if stored is None:
        return None
    if not stored:
        return "its settings cannot be read"
    wanted = _settings(cfg)
    if stored == wanted:
        return None

    def flat(d: Any, where: str = "") -> dict[str, Any]:
        if not isinstance(d, dict):
            return {where: d}
        return {k: v for key, sub in d.items() for k, v in flat(sub, f"{where}{key}.").items()} if d else {where: d}

    a, b = flat(stored), flat(wanted)
    diff = [f"{k.rstrip('.')}={a.get(k, '<unset>')} there, {b.get(k, '<unset>')} now"
            for k in sorted(set(a) | set(b)) if a.get(k, "<unset>") != b.get(k, "<unset>")]
    return "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else "")


def _another_run(out_dir: Path, why: str) -> UserError:
    """The refusal of a single run into a directory that holds a run with other settings (the
    wording of :func:`fattorus.app.sweep._claim`)."""
    return UserError(f"{out_dir} already holds another run ({why}); not writing into it: choose another "
                     "hydra.run.dir")


#: A single run's Ctrl-C line when no placement had finished.
NOTHING_KEPT = "no placement had finished: nothing was kept"


def _single_run_interrupted(out_dir: Path) -> None:
    """An interrupted single run: its directory goes if no placement had finished
    (:func:`_discard_unstarted`); the Ctrl-C line says what was kept and, since the directory
    is named by time (the same command would start afresh), the override that resumes it."""
    _discard_unstarted(out_dir)
    cli.kept_on_interrupt(f"finished placements are kept in {out_dir}; re-run with "
                          f"{shlex.quote(f'hydra.run.dir={out_dir}')} to resume" if out_dir.exists()
                          else NOTHING_KEPT)


def _discard_unstarted(out_dir: Path) -> None:
    """Remove a single run's directory that holds no placement yet: Hydra's stubs and the
    settings record written before the first placement (:data:`SETTINGS`) alone."""
    placements = out_dir / SETTINGS.parent
    try:
        if placements.is_dir() and {q.name for q in placements.iterdir()} <= {SETTINGS.name}:
            (out_dir / SETTINGS).unlink(missing_ok=True)
            placements.rmdir()
    except OSError:
        return
    cli.discard_stub(out_dir, "qos")


#: What a run writes beside its placements (:func:`run`): all of it goes when a trial is redone.
RESULT_FILES = ("jobs.parquet", "history.parquet", "improvement.png", "summary.json")


def _discard_results(out_dir: Path) -> None:
    """Remove a multirun trial's results made with other settings before it is redone, so a
    resumed placement can never come from them, nor can ``fattorus.report.qos`` read the old
    tables should the redo be interrupted: the placements, their settings record and every
    file of :data:`RESULT_FILES`."""
    for path in [*(out_dir / "placements").glob("*.parquet"), out_dir / SETTINGS,
                 *(out_dir / name for name in RESULT_FILES)]:
        path.unlink(missing_ok=True)


class Checks(ResultsOnly):
    """Hydra callbacks (``hydra.callbacks`` in ``conf/qos_app.yaml``): the checks that must come
    before Hydra makes or rewrites a run directory.

    * both: the directory must lie under a ``results/`` directory (:class:`ResultsOnly`);
    * ``on_run_start``: a single run's settings are checked, and a ``hydra.run.dir`` that holds
      a run with other settings is refused, before Hydra rewrites the directory's ``.hydra/``
      copy of the config (which would then contradict its ``summary.json``).
    * ``on_multirun_start``: every trial of a multirun (basic sweeper) is composed and checked
      before the first one runs, so a bad value costs one line, not the other trials' work.

    A mistake found here raises :class:`Refusal`; anything else (an interpolation only the
    job can resolve, a config group that does not exist) is left to the run, which reports it
    as before.
    """

    def on_run_start(self, config: DictConfig, **_: Any) -> None:
        """Check a single run (see the class)."""
        super().on_run_start(config)
        try:
            check_settings(config)
            out_dir = Path(str(OmegaConf.select(config, "hydra.run.dir"))).absolute()
            why = _other_settings(out_dir, config)
        except UserError as err:
            raise Refusal(str(err)) from None
        except Exception:  # noqa: BLE001 - left to the run (see the class)
            return
        if why is not None:
            raise Refusal(str(_another_run(out_dir, why)))

    def on_multirun_start(self, config: DictConfig, **_: Any) -> None:
        """Check every trial of a multirun (see the class)."""
        super().on_multirun_start(config)
        from hydra import compose
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        try:
            sweeper = config.hydra.get("sweeper") or {}
            if not str(sweeper.get("_target_", "")).endswith(".BasicSweeper"):
                return  # another sweeper chooses its trials itself: each is checked when it runs
            params = sweeper.get("params") or {}
            args = [f"{k}={v}" for k, v in params.items()] + list(config.hydra.overrides.task)
            batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), None)
        except Exception:  # noqa: BLE001 - left to the sweeper (see the class)
            return
        for trial in (t for batch in batches for t in batch):
            try:
                check_settings(compose(config_name="qos_app", overrides=trial))
            except UserError as err:
                raise Refusal(f"trial {trial}: {err}") from None
            except Exception:  # noqa: BLE001 - left to the trial (see the class)
                continue


def _squash(text: Any) -> str:
    return cli.squash(text)


def main() -> None:
    """Entry point: the Hydra app, every configuration error turned into one line."""
    cli.run_main(_app, "fattorus.qos", (UserError,), interrupted="finished placements are kept",
                 exit_at_once=True, single=NOTHING_KEPT)


if __name__ == "__main__":
    main()
