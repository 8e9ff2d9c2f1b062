"""Writing a run directory: ``jobs.parquet``, ``utilization.parquet``, ``summary.json``.

Every file is written to a temporary name in the same directory, flushed to disk, and then
renamed, so an interrupted run (or a machine that loses power) never leaves a half-written
file under a final name. ``summary.json`` is written last and records the row count of each
table beside it: a run is finished only when its summary parses and agrees with the files
(:func:`check_complete`, the sweep's resume rule).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from fattorus import provenance
from fattorus.files import atomic_write, remove_stale_temps, write_json

FILES = ("jobs.parquet", "utilization.parquet", "summary.json")


def write_run(out_dir: str | os.PathLike[str], jobs: pl.DataFrame, utilization: pl.DataFrame, summary: dict,
              skipped: pl.DataFrame | None = None) -> Path:
    """Write a replay's files into ``out_dir`` — ``jobs.parquet``, ``utilization.parquet``,
    ``skipped.parquet`` when given (the jobs the replay left out, with their reasons), then
    ``summary.json`` with the row count of each table under ``files`` and the code that made
    them under ``fattorus`` (:func:`fattorus.provenance.stamp`); returns the directory."""
    out = Path(out_dir)
    remove_stale_temps(out)  # an earlier attempt's worker killed mid-write left its temporaries
    atomic_write(out / "jobs.parquet", lambda p: jobs.write_parquet(p))
    atomic_write(out / "utilization.parquet", lambda p: utilization.write_parquet(p))
    files = {"jobs.parquet": {"rows": jobs.height}, "utilization.parquet": {"rows": utilization.height}}
    if skipped is not None:
        atomic_write(out / "skipped.parquet", lambda p: skipped.write_parquet(p))
        files["skipped.parquet"] = {"rows": skipped.height}
    write_json(out / "summary.json", {**summary, "files": files, "fattorus": provenance.stamp()})
    return out


def kept_source(run_dir: str | os.PathLike[str], file: str = "summary.json") -> str | None:
    """Why the results kept in ``run_dir`` may not be this code's (:func:`fattorus.provenance.other_source`
    of the stamp its ``file`` records), or None: their own code, or nothing readable there."""
    old = stored_summary(run_dir, file)
    return provenance.other_source(old.get("fattorus")) if isinstance(old, dict) else None


def check_complete(run_dir: str | os.PathLike[str]) -> str | None:
    """Why ``run_dir`` does not hold a finished run (one line), or None when it does.

    Finished means: ``summary.json`` parses, and each table it lists exists, reads, and has
    the number of rows the summary recorded (``jobs.parquet`` also ``counts.replayed``; a
    ``trials=N`` run's ``trials.parquet`` N rows).
    """
    run = Path(run_dir)
    if not (run / "summary.json").exists():
        return "no summary.json"
    try:
        summary = json.loads((run / "summary.json").read_text())
        expected = dict(summary.get("files") or {})
        expected.setdefault("jobs.parquet", {"rows": summary["counts"]["replayed"]})
        expected.setdefault("utilization.parquet", {"rows": None})
        if summary.get("trials"):  # trials=N: its table is written before the summary, not listed in it
            expected.setdefault("trials.parquet", {"rows": summary["trials"]["n"]})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        return f"summary.json is damaged ({type(err).__name__})"
    for name, meta in expected.items():
        try:
            rows = pl.scan_parquet(run / name, glob=False).select(pl.len()).collect().item()
        except Exception as err:  # noqa: BLE001 - any unreadable table means the trial is incomplete
            return f"{name} is missing or unreadable ({type(err).__name__})"
        if meta.get("rows") is not None and rows != meta["rows"]:
            return f"{name} has {rows} rows, summary.json says {meta['rows']}"
    return None


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s message, or its type's name when it has none: why a kept
    file could not be read, in a one-line report (polars' errors run to several lines)."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def is_complete(run_dir: str | os.PathLike[str]) -> bool:
    """True when ``run_dir`` holds a finished run (:func:`check_complete`)."""
    return check_complete(run_dir) is None


def skip_note(run_dir: str | os.PathLike[str]) -> str:
    """What a ``[skip]`` line adds for a finished run kept in ``run_dir``: who made it when
    that was other code (:func:`kept_source`), else nothing."""
    made = kept_source(run_dir)
    return f" ({made}: kept; delete the folder to redo it)" if made else ""


def start_parts(prog: str, out: str | os.PathLike[str], parts: str, record: dict[str, Any]) -> Path:
    """Open an unfinished study's parts folder ``out/parts`` (made, or resumed): warn on stderr
    when its kept parts were made by other code than this (:func:`kept_source` of its
    ``settings.json``: kept, not redone), then record there ``record`` and this code's stamp.
    Returns the folder."""
    folder = Path(out) / parts
    made = kept_source(folder, "settings.json")
    if made:
        print(f"{prog}: warning: {out}: its kept parts were {made}; they are kept (delete {folder} to redo them)",
              file=sys.stderr)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "settings.json", json.dumps({**record, "fattorus": provenance.stamp()}, indent=1))
    return folder


def stored_summary(out_dir: str | os.PathLike[str], file: str = "summary.json") -> dict | str | None:
    """The ``summary.json`` (or other settings ``file``) a study folder already holds (a dict),
    None when it holds none yet, or why its settings cannot be known (one line ending in "use
    another --name", for a refusal): the studies that refuse to overwrite results of other
    settings read it first."""
    path = Path(out_dir) / file
    try:
        old = json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):
        # Nothing there yet; a file where a folder should be is reported by the write (exit 1).
        return None
    except (OSError, ValueError) as err:  # unreadable or not JSON: its settings are unknown
        return f"{path} cannot be read ({getattr(err, 'strerror', None) or err}); use another --name"
    if not isinstance(old, dict):
        return f"{path} holds no settings; use another --name"
    return old


def finished_study(out_dir: str | os.PathLike[str], tables: Sequence[str]) -> bool:
    """Whether the study folder ``out_dir`` holds a finished study: its ``summary.json`` (written
    last) parses as settings and each of ``tables`` reads. The studies check the settings
    first (a finished study of other settings is refused), so a finished one of the same
    settings needs no work: running the same command again reports it instead of redoing it
    (a ~70-minute fluid network study was recomputed, session 27 review)."""
    if not isinstance(stored_summary(out_dir), dict):
        return False
    try:
        for name in tables:
            pl.scan_parquet(Path(out_dir) / name, glob=False).select(pl.len()).collect()
    except Exception:  # noqa: BLE001 - any unreadable table: not finished, the study runs again
        return False
    return True


def report_if_finished(out_dir: str | os.PathLike[str], tables: Sequence[str], results: Callable[[], str]) -> bool:
    """When ``out_dir`` holds a finished study (:func:`finished_study`), print ``results()``
    (its table, read back) and that nothing was run, and return True; else False."""
    if not finished_study(out_dir, tables):
        return False
    print(results())
    made = kept_source(out_dir)
    print(f"-> {out_dir}: finished earlier with these settings{f' ({made})' if made else ''}, nothing run "
          "(another --name, or deleting the folder, runs it again)")
    return True


def unfinished_conflict(out: str | os.PathLike[str], parts: str, now: dict[str, Any],
                        differences: Callable[[dict[str, Any], dict[str, Any]], list[str]]) -> str | None:
    """Why the study folder ``out`` must not resume the unfinished study it holds (the settings
    in ``out/parts/settings.json``, which its kept parts were made with, differ from ``now``:
    ``differences(recorded, now)`` lists them), or None (none there, or the same settings)."""
    old = stored_summary(Path(out) / parts, "settings.json")
    if not isinstance(old, dict):
        return old
    # The code that made them is named when they are kept (start_parts), not refused.
    diff = differences({k: v for k, v in old.items() if k != "fattorus"}, now)
    if not diff:
        return None
    return (f"{out} holds an unfinished study made with other settings ({'; '.join(diff)}); "
            "re-run it with its own options to finish it, or use another --name")
