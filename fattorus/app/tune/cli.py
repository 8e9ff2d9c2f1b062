"""The command line: options, their checks, and ``main`` (``python -m fattorus.tune --name NAME``).

Every user mistake is one line on stderr and exit code 2; a failed worker process, one line
and exit code 1; Ctrl-C, a line saying the finished trials are kept, and exit code 130.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from fattorus import paths
from fattorus.app.cli import is_interrupt
from fattorus.app.tune.choose import PICKS
from fattorus.app.tune.errors import PROG, TuneError, WorkerError
from fattorus.app.tune.objective import MODEL_OBJECTIVES, OBJECTIVES, SPEEDUPS
from fattorus.app.tune.space import POLICY
from fattorus.app.tune.storage import SAMPLERS, check_url, mask, sqlite_file, storage_key
from fattorus.app.tune.study import run
from fattorus.app.tune.windows import Window, check_held_out, parse_windows
from fattorus.args import SEED_MAX, OneLineParser


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` except where the default is None (the help text says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None:
            return action.help or ""
        return super()._get_help_string(action) or ""


def _add_study_args(p: argparse.ArgumentParser) -> None:
    """Which study, on which machine and workload, trained and tested on which windows."""
    p.add_argument("--name", required=True, help="study name (letters, digits, _ and -): names the storage, "
                   "the exported config and the results directory")
    p.add_argument("--topo", default="cab", help="machine: conf/topo/NAME.yaml or a YAML path")
    p.add_argument("--workload", default="atlas", help="conf/workload/NAME.yaml, a workload YAML path, "
                   "or a job log (SWF or sacct dump)")
    p.add_argument("--cores-per-node", type=int, default=None,
                   help="for a job-log path: cores per node (default: the log's header)")
    p.add_argument("--scale", default="machine", help="node-count multiplier, as the study app's workload.scale: a "
                   "number (Aug-2x: 2), fit (the log's machine scaled to this one) or machine (this machine's "
                   "default load, conf/topo's default_scale: x2 on Cab, fit on the tori and dragonflies; the "
                   "default); jobs pushed past the machine are dropped")
    p.add_argument("--train", default="0:14,14:28", help="training windows START:END in days from the first "
                   "submission, comma-separated; each window is one pruning stage, in order")
    p.add_argument("--test", default="28:42", help="held-out windows for the final comparison ('none': skip it)")
    from fattorus.sched.policy import REGISTRY, TUNABLE

    tunable = ", ".join(f"{name} ({'/'.join(REGISTRY[name][0].families or ('any family',))})" for name in sorted(TUNABLE))
    p.add_argument("--policy", default=POLICY, help=f"the policy whose declared heuristics are tuned: {tunable}")
    p.add_argument("--speedup", choices=list(SPEEDUPS), default="none",
                   help="run times: as logged, or from the flow-level bandwidth model at each job start "
                   "(conf/speedup/model.yaml; needed by the system_efficiency objective)")


def _add_objective_args(p: argparse.ArgumentParser) -> None:
    """What is optimised, and which Pareto-front trial is exported."""
    p.add_argument("--objective", choices=list(OBJECTIVES), default=None,
                   help="single objective (utilization and system_efficiency are maximised, the others "
                   "minimised; system_efficiency needs --speedup model) (default: mean_wait)")
    p.add_argument("--multi", default=None, metavar="OBJ,OBJ",
                   help="multi-objective study over these objectives, e.g. mean_wait,exposure "
                   "(Pareto front; no pruning)")
    p.add_argument("--pick", choices=list(PICKS), default=None,
                   help="multi-objective: Pareto-front trial to export; constrained: best first objective among "
                   "those at least as good as the paper default on the others (the default); knee: nearest the "
                   "ideal point")


def _add_run_args(p: argparse.ArgumentParser) -> None:
    """How many trials, where they are stored, how they are drawn, where results go."""
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
                   help="policy config to write (default: conf/policy/<policy>_tuned_<name>.yaml in the repository)")
    p.add_argument("--out", default=None, help="comparison directory, under a results/ directory (default: "
                   "results/tune/<name>)")
    p.add_argument("--heartbeat", type=float, default=60.0,
                   help="seconds between a running trial's heartbeats in the storage; a trial silent for 3 "
                   "heartbeats (its worker died) is failed and retried when the study resumes")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (every default shown by ``--help``)."""
    p = OneLineParser(
        prog="python -m fattorus.tune",
        error_prefix=PROG,
        description=f"Optuna study over a policy's declared heuristics (default `{POLICY}`: sort orders, tie rule, "
        "hybrid relax_after_s; `prism`: its score weights and slack) and the scheduler, scored by replays of "
        "a workload on training windows; exports "
        "the best as a policy config and compares it with the paper's defaults on held-out windows.",
        formatter_class=_Help,
        epilog="example: python -m fattorus.tune --name atlas2x_cab_rerun --topo cab --workload atlas --scale 2 "
        "--train 0:14,14:28,28:42 --test 42:56,56:70 --trials 40 --jobs 2. Re-running a command adds "
        "trials to the stored study; docs/tuning.md has more.",
    )
    _add_study_args(p)
    _add_objective_args(p)
    _add_run_args(p)
    return p


@dataclasses.dataclass(frozen=True)
class Options:
    """Checked command-line options."""

    name: str
    topo: str
    workload: str
    cores_per_node: int | None
    scale: float | str  # a factor, "fit" or "machine" (the setup keeps the factor used)
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
    policy: str = POLICY
    speedup: str = "none"

    @property
    def multi(self) -> bool:
        """Whether the study has several objectives."""
        return len(self.objectives) > 1

    @property
    def directions(self) -> list[str]:
        """Optuna directions of the objectives."""
        return [OBJECTIVES[o][0] for o in self.objectives]


def _objectives(a: argparse.Namespace) -> tuple[str, ...]:
    """``--objective`` or ``--multi`` (not both) as a checked tuple of objective names."""
    if a.multi is not None and a.objective is not None:
        raise TuneError("give --objective or --multi, not both")
    if a.multi is None:
        return (a.objective or "mean_wait",)
    objectives = tuple(s.strip() for s in a.multi.split(",") if s.strip())
    unknown = [o for o in objectives if o not in OBJECTIVES]
    if unknown:
        raise TuneError(f"--multi {a.multi!r}: unknown objective(s) {unknown}; choose from {list(OBJECTIVES)}")
    if len(objectives) < 2 or len(set(objectives)) != len(objectives):
        raise TuneError(f"--multi {a.multi!r}: needs two or more different objectives")
    return objectives


def _check_policy(a: argparse.Namespace, objectives: Sequence[str]) -> None:
    """A tunable ``--policy``, and ``--speedup model`` where an objective needs it."""
    from fattorus.sched.policy import TUNABLE

    if a.policy not in TUNABLE:
        raise TuneError(f"--policy {a.policy}: declares no tunable heuristics; choose from {sorted(TUNABLE)}")
    needs = [o for o in objectives if o in MODEL_OBJECTIVES]
    if needs and a.speedup != "model":
        raise TuneError(f"objective {needs[0]} needs run times from the bandwidth model: add --speedup model")


def scale_option(text: str | float) -> float | str:
    """``--scale``: ``fit``, ``machine`` or a positive finite number; else a :class:`TuneError`."""
    if text in ("fit", "machine"):
        return str(text)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise TuneError(f"--scale {text}: give a positive number, fit or machine")
    return value


def _check_numbers(a: argparse.Namespace) -> None:
    """Counts, scale and times in range; the first mistake is a :class:`TuneError`."""
    if a.trials < 0:
        raise TuneError(f"--trials {a.trials}: must be >= 0")
    if a.jobs < 1:
        raise TuneError(f"--jobs {a.jobs}: must be >= 1")
    a.scale = scale_option(a.scale)
    if a.timeout is not None and not a.timeout > 0:
        raise TuneError(f"--timeout {a.timeout}: must be a positive number of seconds")
    if not (a.heartbeat > 0 and math.isfinite(a.heartbeat)):
        raise TuneError(f"--heartbeat {a.heartbeat}: must be a positive number of seconds")
    if a.cores_per_node is not None and a.cores_per_node < 1:
        raise TuneError(f"--cores-per-node {a.cores_per_node}: must be >= 1")
    # The project's seed range (NumPy's SeedSequence refuses negative seeds, deep in a worker,
    # after the workload loaded).
    if not 0 <= a.seed <= SEED_MAX:
        raise TuneError(f"--seed {a.seed}: must be an integer from 0 to {SEED_MAX}")


def _first_existing_parent(path: Path) -> Path:
    """The nearest ancestor of ``path`` that exists (the one a write would create folders in)."""
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path(path.absolute().anchor)  # unreachable in practice: the root exists


#: The header line naming the study that exported a config (export.export_header's second
#: line, unchanged since the first tuned configs): ``# study: NAME (STORAGE), trial N (of M ...``.
_STUDY_LINE = re.compile(r"# study: (?P<name>\S+) \((?P<storage>.*)\), trial \d+ \(of ")


def _tuned_by(path: Path) -> tuple[str | None, str | None] | None:
    """Who exported the policy config ``path``: ``None`` if it is not a config an earlier run
    of the tuner wrote (its first line is not the header
    :func:`fattorus.app.tune.export.export_header` writes); else the study's name and its
    storage URL as the header records them (masked), ``(None, None)`` when no header line
    names the study."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = f.readline()
            if not (first.startswith("# Tuned `") and "written by fattorus.tune" in first):
                return None
            for line in f:  # the rest of the comment header
                if not line.startswith("#"):
                    break
                m = _STUDY_LINE.match(line)
                if m:
                    return m["name"], m["storage"]
    except OSError:
        return None
    return None, None


def _sqlite_holds(storage: str, name: str) -> bool | None:
    """Whether the SQLite storage ``storage`` holds a study ``name`` (False: no such file, no
    Optuna tables in it, or no such study), None for a storage of another kind (not read
    here: a server may be down yet)."""
    try:
        database = sqlite_file(storage)
    except Exception:  # noqa: BLE001 - check_url says what is wrong with it
        return None
    if database is None:
        return None
    if not database.is_file():
        return False
    import sqlite3

    try:  # Optuna's schema: one row per study in `studies` (read-only: opening never creates it)
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'studies'").fetchone() is None:
                return False
            return db.execute("SELECT 1 FROM studies WHERE study_name = ?", (name,)).fetchone() is not None
    except sqlite3.Error:
        return None


def _other_study(export: Path, name: str, storage: str) -> str | None:
    """What says that ``--export`` belongs to another study than ``name`` in ``storage`` (its
    header names that study); None if the file may be replaced by this one.

    A study is its name *and* its storage: one name in two databases is two studies with
    their own trials. Storages are compared as :func:`fattorus.app.tune.storage.storage_key`
    reads them: without the password (the header records none), ``postgresql://`` the same as
    ``postgresql+psycopg2://``, a SQLite file by its absolute path (a relative one in the
    header is taken from the current directory: the header does not record the directory
    the export ran in, the repository root as a rule). A file whose header names no study
    (every one the tuner wrote names it; a hand-made one may not) is replaced, as before.

    The same name and storage are not enough where the storage holds no such study (a fresh
    checkout: results/ is not shipped, so the shipped `ta_tuned_atlas2x_cab.yaml` looked like
    the export of the new study of its name and was replaced; session 47's walkthrough of
    docs/tuning.md): a SQLite storage is read for the study; a server's is trusted."""
    written = _tuned_by(export)
    if written is None or written[0] is None:
        return None
    study, stored = written
    if study == name and storage_key(stored or "") == storage_key(storage):
        if _sqlite_holds(storage, name) is False:
            return (f"was written by fattorus.tune for study {study!r} in {stored}, which holds no such study here "
                    f"(a shipped result, or its storage was removed)")
        return None
    return (f"was written by fattorus.tune for study {study!r} in {stored}, not for this one ({name!r} in "
            f"{mask(storage)})")


def _check_paths(export: Path, out: Path | None, name: str, policy: str = POLICY, storage: str | None = None) -> None:
    """Refuse an ``--export`` or ``--out`` path the run could only fail to write, after all
    its trials: a :class:`TuneError` naming the option, the path and what is wrong.

    ``--export`` is a file (written atomically through a temporary file beside it), so it
    must not be a directory; ``--out`` is a directory (``None``: nothing will be written
    there, no test windows), so it must not be a file. For both, the nearest existing
    ancestor must be a directory, or the folders on the way cannot be created. Permissions
    are not checked here (``os.access`` says yes to root); the file system reports those.
    ``--out`` must lie under a ``results/`` directory; ``--export`` replaces only a config an
    earlier tuning of the same study wrote (:func:`_other_study`; ``storage``: the study's
    URL, None: not checked).
    ``name`` (the study's) also makes the example in the ``--export`` messages concrete."""
    example = export.parent / f"{policy}_tuned_{name}.yaml"
    if export.is_dir():
        raise TuneError(f"--export {export}: is a directory; give the policy config file to write, "
                        f"e.g. {export / f'{policy}_tuned_{name}.yaml'}")
    if export.is_file() and _tuned_by(export) is None:
        # A shipped config (policy=to would run the tuned ta from then on) or a user's own file.
        raise TuneError(f"--export {export}: exists and was not written by fattorus.tune; not replacing it: give "
                        f"another file, e.g. {example}")
    other = _other_study(export, name, storage) if storage is not None and export.is_file() else None
    if other:
        # Another study's tuned config (a shipped one, e.g. ta_tuned_atlas2x_cab.yaml): replacing
        # it would silently swap the setting every run of policy=<that file> uses.
        raise TuneError(f"--export {export}: {other}; not replacing it: give another --name or --export file, e.g. "
                        f"{example if example != export else export.parent / f'{policy}_tuned_{name}_2.yaml'}")
    checks = [("--export", export)]
    if out is not None:
        if out.exists() and not out.is_dir():
            raise TuneError(f"--out {out}: exists and is not a directory; give a directory for the comparison "
                            "files (comparison.json, comparison.md)")
        checks.append(("--out", out))
    for option, path in checks:
        parent = _first_existing_parent(path)
        if not parent.is_dir():
            raise TuneError(f"{option} {path}: {parent} is not a directory, so it cannot hold {path.name!r}")
    if out is not None and not paths.under_results(out):
        # As bench's and report's --out: nothing is written outside the results but the exported config.
        raise TuneError(f"--out {out}: must lie under a results/ directory (nothing is written outside the "
                        "results but the exported config)")


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse and check the options; mistakes raise :class:`TuneError` (argparse's exit 2)."""
    a = build_parser().parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", a.name):
        raise TuneError(f"--name {a.name!r}: use letters, digits, '_' and '-' only")
    objectives = _objectives(a)
    if a.pick is not None and len(objectives) < 2:
        # It only chooses among a Pareto front (it was ignored without a word; session 43).
        raise TuneError(f"--pick {a.pick}: chooses among a multi-objective study's Pareto front; give --multi too")
    a.pick = a.pick or "constrained"
    _check_policy(a, objectives)
    _check_numbers(a)
    train = parse_windows(a.train, "--train")
    if not train:
        raise TuneError("--train: give at least one window START:END (days)")
    test = parse_windows(a.test, "--test")
    check_held_out(train, test)
    storage = a.storage or f"sqlite:///results/tune/{a.name}.db"
    # Settings that would be refused only after the workload loaded and the trials ran are
    # refused here, before any of that work.
    check_url(storage)
    export = Path(a.export) if a.export else paths.config_file("policy", f"{a.policy}_tuned_{a.name}")
    out = Path(a.out) if a.out else paths.results_dir() / "tune" / a.name
    # --test none: nothing is written under --out.
    _check_paths(export, out if test else None, a.name, a.policy, storage)
    return Options(
        name=a.name, topo=a.topo, workload=a.workload, cores_per_node=a.cores_per_node, scale=a.scale,
        train=train, test=test, objectives=objectives, pick=a.pick, trials=a.trials, jobs=a.jobs,
        storage=storage, sampler=a.sampler, seed=a.seed, timeout=a.timeout, export=export, out=out,
        heartbeat=float(a.heartbeat), policy=a.policy, speedup=a.speedup,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: ``python -m fattorus.tune --name NAME [options]`` (see ``--help``)."""
    from fattorus import interrupt

    interrupt.armed()  # the start-up's leave-at-once handler (fattorus.interrupt) ends here
    try:
        opts = parse_args(argv)
        run(opts)
    except TuneError as err:
        sys.stderr.write(f"{PROG}: error: {' '.join(str(err).split())}\n")
        sys.exit(2)
    except WorkerError as err:
        sys.stderr.write(f"{PROG}: error: {err}\n")
        sys.exit(1)
    except BrokenPipeError:  # stdout's reader left (| head -1): not a write failure
        from fattorus.args import leave_piped

        leave_piped()
    except OSError as err:  # the file system refused (e.g. results/ is not a writable directory)
        where = f" {err.filename}" if err.filename else ""
        sys.stderr.write(f"{PROG}: error: cannot write{where}: {err.strerror or err}\n")
        sys.exit(1)
    except Exception as err:
        # Optuna's trial bookkeeping can turn a Ctrl-C into another error (seen: an
        # UnboundLocalError from its own cleanup, the KeyboardInterrupt as its context).
        if not is_interrupt(err):
            raise
        _interrupted()
    except KeyboardInterrupt:
        _interrupted()


def _interrupted() -> NoReturn:
    """The tuner's one line after a Ctrl-C, exit 130."""
    sys.stderr.write(f"{PROG}: interrupted; finished trials are kept in the storage, re-run the same "
                     "command to add more, a trial stopped midway first (--trials 0: only export and compare)\n")
    sys.exit(130)


__all__ = ["Options", "build_parser", "main", "parse_args"]
