"""Writing files atomically and durably: the one way every part of fattorus writes results.

A file is written to a temporary name in its directory, flushed to disk, renamed over its
final name, and the directory flushed, so an interrupted process (or a machine that loses
power) never leaves a half-written file under a final name. The lowest layer: it imports
nothing from the package, so the report, the analysis tools and the app can all use it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
            _fsync(tmp)
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync(path.parent)  # the rename itself reaches the disk
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise
    except Exception as err:
        # A library writer (e.g. Parquet) reports a full disk or a failed write in its own
        # exception type: it is still an I/O failure of this file.
        Path(tmp).unlink(missing_ok=True)
        raise OSError(f"writing {path.name} failed ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") from err
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: When this process loaded the module (seconds since the epoch): temporaries older than it
#: are another, dead process's (:func:`remove_stale_temps`).
_STARTED = time.time()


def remove_stale_temps(directory: str | os.PathLike[str]) -> int:
    """Delete the temporary files :func:`atomic_write` left in ``directory`` (``.NAME.*.tmp``,
    not its subfolders) when its process was killed mid-write — a multirun worker stopped by a
    Ctrl-C cannot clean up as an interrupted single run does. Call it when a run takes its
    directory over; only files older than this process go, so a live concurrent writer's stay.
    Returns how many went."""
    gone = 0
    for tmp in Path(directory).glob(".*.tmp"):
        try:
            # Only a file older than this process: a concurrent writer's (two multiruns of one
            # study share trial folders; only single runs hold a lock) is left alone.
            stale = tmp.is_file() and not tmp.is_symlink() and tmp.stat().st_mtime < _STARTED
        except OSError:
            continue
        if stale:
            tmp.unlink(missing_ok=True)
            gone += 1
    return gone


def _fsync(path: str | os.PathLike[str]) -> None:
    """Flush a file's (or a directory's) content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, data: Any) -> None:
    """Atomically write ``data`` as indented JSON."""
    atomic_write(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
