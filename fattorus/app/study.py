"""Run a ready-made study from ``sweeps/*.yaml``: ``python -m fattorus.study sweeps/NAME.yaml``.

A study file names the study and lists ``common`` overrides, ``cases`` (machine and workload
settings) and ``arms`` (policy, speedup scenario, seeds); each entry is a list of Hydra
overrides whose comma-separated values are swept; ``app`` (optional) names the Hydra app,
``fattorus.sweep`` (replays, the default) or ``fattorus.qos`` (the QoS study). Every (case,
arm) pair becomes one ``python -m APP --multirun`` into ``results/sweeps/<study>/``, so the study is the
union of Cartesian products rather than one big product (TO runs need no speedup scenarios).
Trials that already finished are skipped: re-running an interrupted study resumes it.

Extra arguments are passed to every multirun (e.g. ``hydra/launcher=slurm
hydra.launcher.partition=pbatch`` to run on a Slurm cluster).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml


#: The Hydra apps a study file may run (``app:``; default the replay app).
APPS = ("fattorus.sweep", "fattorus.qos")


class StudyError(ValueError):
    """A malformed study file."""


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a study file; errors name the file and the field."""
    p = Path(path)
    if not p.is_file():
        raise StudyError(f"{p}: no such study file (see sweeps/)")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise StudyError(f"{p}: not valid YAML ({' '.join(str(err).split())})") from None
    if not isinstance(data, dict) or not isinstance(data.get("study"), str):
        raise StudyError(f"{p}: needs a 'study' name")
    for field in ("common", "cases", "arms"):
        value = data.get(field, [] if field == "common" else None)
        ok = isinstance(value, list) and (field == "common" or all(isinstance(v, list) for v in value))
        if not ok or (field != "common" and not value):
            raise StudyError(f"{p}: field {field!r} must be a list{' of override lists' if field != 'common' else ''}")
    data.setdefault("common", [])
    app = data.setdefault("app", "fattorus.sweep")
    if app not in APPS:
        raise StudyError(f"{p}: field 'app' must be one of {', '.join(APPS)}, got {app!r}")
    return data


def commands(study: dict[str, Any], extra: list[str]) -> list[list[str]]:
    """The ``--multirun`` command line of every (case, arm) pair (of ``fattorus.sweep``, or of
    the app the study file names in ``app:``)."""
    base = [sys.executable, "-m", study.get("app", "fattorus.sweep"), "--multirun", f"study={study['study']}"]
    return [
        base + [str(o) for o in study["common"]] + [str(o) for o in case] + [str(o) for o in arm] + extra
        for case in study["cases"]
        for arm in study["arms"]
    ]


def main() -> None:
    """Run every multirun of a study file, with a status line per block."""
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python -m fattorus.study sweeps/NAME.yaml [hydra overrides...]")
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    try:
        study = load(sys.argv[1])
    except StudyError as err:
        sys.stderr.write(f"fattorus.study: error: {err}\n")
        sys.exit(2)
    cmds = commands(study, sys.argv[2:])
    t0 = time.perf_counter()
    for i, cmd in enumerate(cmds, 1):
        shown = " ".join(cmd[3:])
        print(f"[study {study['study']}] block {i}/{len(cmds)} ({time.perf_counter() - t0:.0f} s): {shown}", flush=True)
        try:
            code = subprocess.call(cmd)
        except KeyboardInterrupt:
            sys.stderr.write("fattorus.study: interrupted; finished trials are kept, re-run to resume\n")
            sys.exit(130)
        if code != 0:
            sys.stderr.write(f"fattorus.study: block {i} failed (exit {code}): {shown}\n")
            sys.exit(code)
    print(f"[study {study['study']}] all {len(cmds)} blocks done in {time.perf_counter() - t0:.0f} s; "
          f"results in results/sweeps/{study['study']}", flush=True)


if __name__ == "__main__":
    main()
