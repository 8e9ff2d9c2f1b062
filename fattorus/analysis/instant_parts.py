"""An interference run's finished instants, kept while it runs: a Ctrl-C loses none of them.

``python -m fattorus.interference`` (:mod:`fattorus.analysis.interference`) writes the rows of
the instants it finished to ``OUT.instants/`` beside its table ``OUT.parquet``: every
:data:`PART_S` seconds, on a Ctrl-C, and before a failed final write, one file
``i<first>-<end>.parquet`` (the rows of instants ``first`` to ``end - 1``, none for an instant
with no job running; written atomically) beside ``settings.json`` (what they were made with:
:func:`settings`, the tool's name, and the code's :func:`fattorus.provenance.stamp`). The same
command run again keeps them and computes only the other instants; every draw is a function
of the seed and a job's or an instant's index, so the table is the one an uninterrupted run
writes. Its files go once the table is written (:func:`remove`: the parts first, the settings
last, so that an interrupted clean-up leaves a folder that still resumes). Kept instants of
other settings are refused (the run would mix two studies), never dropped: finish that run
with its own options, or delete the folder; so is a folder of that name that is not such a
run's (it is never written into or removed). A part that cannot be read is computed again,
with a warning.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from fattorus import provenance
from fattorus.files import atomic_write
from fattorus.topology.base import Topology

#: Seconds between two writes of the finished instants while a run goes on (a Ctrl-C writes
#: them at once; this bounds what a killed process loses).
PART_S = 10.0

PROG = "fattorus.interference"

#: The ``tool`` entry of the folder's ``settings.json``: only a folder that names it is this
#: module's to write into and to empty.
TOOL = "fattorus.interference"

_PART = re.compile(r"i(\d+)-(\d+)\.parquet")


class OtherSettings(ValueError):
    """The folder keeps instants made with other settings (the message says which)."""


def folder_for(target: str | Path) -> Path:
    """Where the table ``target`` (``X.parquet``) keeps its finished instants: ``X.instants``."""
    return Path(target).with_suffix(".instants")


def settings(jobs_path: str | Path, topo: Topology, mix: Mapping[str, float], seed: int, instants: int,
             backend: str) -> dict[str, Any]:
    """What an interference table is a function of: the run's jobs (their file's sha256), the
    machine, the pattern mix in its order (the order the patterns are drawn in), the seed,
    the number of instants and the JAX backend the loads are summed on (JSON-ready)."""
    digest = hashlib.sha256(Path(jobs_path).read_bytes()).hexdigest()
    return {"jobs_sha256": digest, "topo": topo.name, "nodes": int(topo.n_nodes), "links": int(topo.n_links),
            # the weights exact, in order: both set each job's draw
            "mix": ",".join(f"{k}={float(v)!r}" for k, v in mix.items()), "seed": int(seed),
            "instants": int(instants), "backend": str(backend)}


def _differences(old: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    diff = []
    for key in sorted(set(old) | set(now)):
        if old.get(key) != now.get(key):
            there, here = old.get(key, "<unset>"), now.get(key, "<unset>")
            if key == "jobs_sha256":  # the run's jobs.parquet changed (another replay in that folder)
                there, here = str(there)[:12], str(here)[:12]
            diff.append(f"{key} {there} there, {here} now")
    return "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else "")


def _parts(folder: Path) -> list[tuple[int, int, Path]]:
    found = []
    for path in folder.glob("i*-*.parquet"):
        m = _PART.fullmatch(path.name)
        if m:
            found.append((int(m[1]), int(m[2]), path))
    return sorted(found)


def _warn(text: str) -> None:
    print(f"{PROG}: warning: {text}", file=sys.stderr, flush=True)


def open_kept(folder: Path, record: Mapping[str, Any], columns: Mapping[str, pl.DataType]) -> dict[int, tuple[int, pl.DataFrame]]:
    """The instants ``folder`` keeps for ``record`` (:func:`settings`), ``{first: (end, rows)}``,
    after making it (with ``settings.json``) when it is missing or empty. Raises
    :class:`OtherSettings` when it keeps instants of other settings, or is not such a folder
    (nothing touched), and ``OSError`` when it cannot be made."""
    record = {"tool": TOOL, **record}
    stored_path = folder / "settings.json"
    held = sorted(folder.iterdir()) if folder.is_dir() else []
    try:
        stored = json.loads(stored_path.read_text()) if stored_path.is_file() else None
    except (OSError, ValueError) as err:
        stored = f"{stored_path} cannot be read ({getattr(err, 'strerror', None) or err})"
    if not held:
        return _start(folder, record)
    if not (isinstance(stored, dict) and stored.get("tool") == TOOL):
        why = stored if isinstance(stored, str) else "no settings.json of an interference run"
        raise OtherSettings(f"{folder} exists and keeps no instants of an interference run ({why}); it is left as "
                            f"it is: move it, or write the table elsewhere (--out)")
    made = provenance.other_source(stored.pop("fattorus", None))
    diff = _differences(stored, record)
    if diff:
        raise OtherSettings(f"{folder} keeps the instants of an unfinished run with other settings ({diff}); "
                            f"re-run it with its own options to finish it, or delete {folder}")
    parts = _parts(folder)
    if not parts:
        return _start(folder, record)
    if made:
        _warn(f"{folder}: its instants were {made}; they are kept (delete {folder} to compute them again)")
    kept: dict[int, tuple[int, pl.DataFrame]] = {}
    covered = -1
    for first, end, path in parts:
        if not first < end <= record["instants"] or first <= covered:
            _warn(f"{path}: instants {first}-{end - 1} overlap another part or lie past the run's "
                  f"{record['instants']}; computed again")
            continue
        try:
            rows = pl.read_parquet(path, glob=False)
            if dict(rows.schema) != dict(columns):
                raise ValueError(f"columns {list(rows.schema)}")
            if rows.height and not rows["instant"].is_between(first, end - 1).all():
                raise ValueError(f"rows of instants outside {first}-{end - 1}")
        except (OSError, ValueError, pl.exceptions.PolarsError) as err:
            reason = str(err).splitlines()[0] if str(err) else type(err).__name__
            _warn(f"{path}: cannot be read ({reason}); its instants are computed again")
            continue
        kept[first] = (end, rows)
        covered = end - 1
    return kept


def _start(folder: Path, record: Mapping[str, Any]) -> dict[int, tuple[int, pl.DataFrame]]:
    """Make ``folder`` (if missing) and record ``record`` there with this code's stamp: nothing kept yet."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "settings.json", json.dumps({**record, "fattorus": provenance.stamp()}, indent=1) + "\n")
    return {}


def remove(folder: Path) -> None:
    """Take away what :func:`open_kept` and :class:`Keeper` wrote in ``folder`` (its table is
    written): the parts (and a writer's leftover temporary files) first, ``settings.json``
    last, then the folder if nothing else is in it. Interrupted half-way, the folder keeps
    its settings with fewer parts: a re-run resumes from them, computing the rest again."""
    for _, _, path in _parts(folder):
        path.unlink(missing_ok=True)
    for path in folder.glob(".i*-*.parquet.*.tmp"):
        path.unlink(missing_ok=True)
    (folder / "settings.json").unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:  # something else was put there: it stays
        pass


def kept_instants(kept: Mapping[int, tuple[int, pl.DataFrame]]) -> set[int]:
    """Every instant index that ``kept`` covers."""
    return {i for first, (end, _) in kept.items() for i in range(first, end)}


class Keeper:
    """Collects the rows of finished instants and writes each run of consecutive ones to the
    folder (:meth:`add`, :meth:`write`); :attr:`written` holds what it wrote, ``{first: (end, rows)}``."""

    def __init__(self, folder: Path, columns: Mapping[str, pl.DataType], every_s: float = PART_S) -> None:
        self.folder, self.columns, self.every_s = folder, dict(columns), every_s
        self.written: dict[int, tuple[int, pl.DataFrame]] = {}
        self._first: int | None = None
        self._end = 0
        self._rows: list[pl.DataFrame] = []
        self._last = time.monotonic()

    def add(self, instant: int, rows: pl.DataFrame | None) -> None:
        """Instant ``instant`` is finished (``rows``: its rows, None where no job ran); writes
        the ones held when it does not follow them or :attr:`every_s` has passed."""
        if self._first is not None and instant != self._end:
            self.write()
        if self._first is None:
            self._first = instant
        self._end = instant + 1
        if rows is not None:
            self._rows.append(rows)
        if time.monotonic() - self._last >= self.every_s:
            self.write()

    def write(self) -> None:
        """Write the finished instants not yet written (atomically; nothing when none)."""
        if self._first is None:
            return
        rows = pl.concat(self._rows) if self._rows else pl.DataFrame(schema=self.columns)
        atomic_write(self.folder / f"i{self._first}-{self._end}.parquet", lambda p: rows.write_parquet(p))
        self.written[self._first] = (self._end, rows)
        self._first, self._rows, self._last = None, [], time.monotonic()


def table(parts: Mapping[int, tuple[int, pl.DataFrame]], columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """The rows of ``parts`` in instant order (an empty table of ``columns`` when none)."""
    frames = [rows for _, (_, rows) in sorted(parts.items()) if rows.height]
    return pl.concat(frames) if frames else pl.DataFrame(schema=dict(columns))


__all__ = ["PART_S", "TOOL", "Keeper", "OtherSettings", "folder_for", "kept_instants", "open_kept", "remove",
           "settings", "table"]
