"""Writing a run directory: ``jobs.parquet``, ``utilization.parquet``, ``summary.json``.

Every file is written to a temporary name in the same directory and then renamed, so an
interrupted run never leaves a half-written file under a final name, and ``summary.json``
is written last: its presence marks a finished run (the sweep's resume rule).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Any

import polars as pl

FILES = ("jobs.parquet", "utilization.parquet", "summary.json")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes | str | Callable[[Path], object]) -> Path:
    """Write ``path`` atomically: a temporary file in the same directory, then a rename.

    ``data`` is the content (bytes or text) or a function that writes a given path (e.g.
    ``lambda p: table.write_parquet(p)``). The file gets the usual ``0o666 & ~umask``
    permissions (a bare ``mkstemp`` file would be private). Returns ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        if callable(data):
            os.close(fd)
            data(Path(tmp))
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, data: Any) -> None:
    """Atomically write ``data`` as indented JSON."""
    atomic_write(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def write_run(out_dir: str | os.PathLike[str], jobs: pl.DataFrame, utilization: pl.DataFrame, summary: dict) -> Path:
    """Write a replay's three files into ``out_dir`` (summary last); returns the directory."""
    out = Path(out_dir)
    atomic_write(out / "jobs.parquet", lambda p: jobs.write_parquet(p))
    atomic_write(out / "utilization.parquet", lambda p: utilization.write_parquet(p))
    write_json(out / "summary.json", summary)
    return out


def is_complete(run_dir: str | os.PathLike[str]) -> bool:
    """True when every output file of a run exists (``summary.json`` is written last)."""
    return all((Path(run_dir) / f).exists() for f in FILES)
