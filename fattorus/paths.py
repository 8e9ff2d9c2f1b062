"""The one place that finds the repository and its folders: ``conf/``, ``data/``, ``results/``.

fattorus runs from a source checkout (or an editable install of one): the package directory
``fattorus/`` sits beside ``conf/`` (the Hydra config groups: ``topo``, ``policy``,
``workload``, ``speedup``...), ``data/`` (shipped traces and small tables) and ``results/``
(run outputs, never committed; of the working directory, see :func:`results_dir`). Every module that needs one of these folders asks here, so
moving the package (or the configs) means changing this file only.

The lowest layer: it imports nothing from the package, so any module may use it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root: the directory that holds the ``fattorus`` package directory.
ROOT: Path = Path(__file__).resolve().parents[1]


def repo_root() -> Path:
    """The repository root (the directory holding ``fattorus/``, ``conf/`` and ``data/``)."""
    return ROOT


def package_dir() -> Path:
    """The ``fattorus`` package directory (its source files: :mod:`fattorus.provenance`)."""
    return ROOT / "fattorus"


def conf_dir(group: str | None = None) -> Path:
    """``conf/`` of the repository, or its config group ``conf/GROUP`` (e.g. ``"topo"``)."""
    conf = ROOT / "conf"
    return conf if group is None else conf / group


def config_file(group: str, name: str) -> Path:
    """The config ``conf/GROUP/NAME.yaml`` (the file need not exist)."""
    return conf_dir(group) / f"{name}.yaml"


def config_names(group: str) -> list[str]:
    """Names of the configs in ``conf/GROUP`` (file stems, sorted); empty if there is none."""
    return sorted(p.stem for p in conf_dir(group).glob("*.yaml"))


def data_dir() -> Path:
    """``data/`` of the repository (shipped job logs under ``data/traces``)."""
    return ROOT / "data"


def traces_dir() -> Path:
    """``data/traces``: the job logs shipped with the repository (SWF, gzip-compressed)."""
    return data_dir() / "traces"


def results_dir() -> Path:
    """``results/`` of the working directory: the default parent of every output (created by
    the runs, not here). Relative on purpose: Hydra's run directories (``conf/config.yaml``)
    are relative to where a command runs, so every other command writes beside them."""
    return Path("results")


def under_results(path: Path, also: Path | None = None) -> bool:
    """Whether ``path`` is a ``results/`` directory or lies under one (or lies in ``also``):
    where a command's ``--out`` may write (nothing is written outside the results)."""
    resolved = Path(path).resolve()
    around = (resolved, *resolved.parents)
    # As written too, '..' folded but links kept: a results/ that is a link (to scratch
    # storage, on a cluster) resolves to a folder of another name (a session-46 review).
    lexical = Path(os.path.normpath(os.path.abspath(path)))
    return (any(p.name == "results" for p in (*around, lexical, *lexical.parents))
            or (also is not None and Path(also).resolve() in around))


def markdown_target(results: Path, out: str | os.PathLike[str] | None, prog: str, name: str,
                    what: str = "tables") -> tuple[Path | None, str | None, int]:
    """Where a command's Markdown file ``name`` goes, a line to print about it (stderr) and an
    exit code (2: refused): ``--out`` a ``.md`` file, or a folder for ``name``, under a
    ``results/`` directory (elsewhere refused); without it ``results/name`` when ``results``
    lies under one, else nothing (None) and a note saying how to keep ``what``. Nothing is
    written outside the results (compare, report.qos)."""
    if out is not None:
        target = Path(out)
        if not under_results(target):
            return None, (f"{prog}: error: --out {out}: must lie under a results/ directory (nothing is written "
                          "outside the results)"), 2
        if target.is_dir():
            return target / name, None, 0
        if target.suffix != ".md":  # never over a run's summary.json or jobs.parquet by a slip
            return None, f"{prog}: error: --out {out}: give a .md file or a folder (for {name})", 2
        return target, None, 0
    if not under_results(results):
        return None, (f"{prog}: note: {name} not written: {results} is not under a results/ directory (nothing "
                      f"is written outside the results); to keep the {what} add --out results/NAME.md"), 0
    return Path(results) / name, None, 0


__all__ = ["ROOT", "conf_dir", "config_file", "config_names", "data_dir", "repo_root", "results_dir", "traces_dir",
           "markdown_target", "under_results"]
