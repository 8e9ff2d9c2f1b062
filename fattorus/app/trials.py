"""``trials=N``: N speedup draws of one configuration through the compiled, batched engine.

``python -m fattorus.sweep +topo=cab +speedup=v2 trials=1000`` replays the same prepared job
table ``N`` times, trial ``t`` with the speedup draw of ``seed + t`` — exactly the run times
the single run with ``seed=seed+t`` gets — in batches of :data:`BATCH` through
:func:`fattorus.sched.batched.replay_batch` (``to``/``ta`` on fat-trees, FCFS/EASY). The run
directory holds the usual outputs of trial 0 (replayed by the NumPy engine, whose start
times the batched trial 0 must equal — checked, an error otherwise) and ``trials.parquet``,
one row per trial:

``trial`` (int32), ``seed`` (int64), ``jobs`` (int32), ``mean_wait_s``, ``median_wait_s``,
``p95_wait_s``, ``makespan_s`` (float64 s, first submit to last end), ``utilization``
(float64: node-seconds used / (usable nodes × makespan), the exact integral of the per-minute
series whose mean ``summary.json`` reports).

``summary.json`` adds ``trials``: ``{"n", "batch", "wall_s", "kept", "mean_wait_s": {"mean", "std",
"p05", "p50", "p95"}, "utilization": {...}}`` (``kept``: trials taken from an interrupted
run's finished batches).

**Interrupted and resumed.** Each finished batch's rows are written at once (atomically) to
``trials.parts/b<first trial>.parquet`` in the run directory, beside ``trials.parts/settings.json``
(what the batches were made with: the run's ``summary.json`` ``config``, ``n`` and the batch
size, and the code's :func:`fattorus.provenance.stamp`). A run that finds batches made with the
same settings keeps them and replays the others (a trial depends on its seed alone, so the
table is the one an uninterrupted run writes); batches made with other settings are dropped,
with a warning. The app removes ``trials.parts/`` once the run's results are written.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from fattorus import provenance
from fattorus.files import atomic_write

#: Trials per compiled call (memory grows with it; 64 keeps a month of Cab under 1 GB).
BATCH = 64


def draws(jobs: pl.DataFrame, n: int, seed: int, runtimes_of: Callable[[int], np.ndarray | None]) -> np.ndarray:
    """``(n, rows)`` run times, seconds: row ``t`` is the draw of ``seed + t`` (aligned with ``jobs``)."""
    base = jobs["runtime_s"].to_numpy().astype(np.float64)
    out = np.empty((n, len(base)))
    for t in range(n):
        rt = runtimes_of(seed + t)
        out[t] = base if rt is None else rt
    return out


def per_trial(submit: np.ndarray, start: np.ndarray, runtime: np.ndarray, nodes: np.ndarray,
              capacity: int) -> dict[str, np.ndarray]:
    """Metrics of each trial from ``(B, J)`` start times and run times."""
    wait = start - submit[None, :]
    end = start + runtime
    makespan = end.max(axis=1) - submit.min()
    used = (runtime * nodes[None, :]).sum(axis=1)
    return {"jobs": np.full(len(start), start.shape[1], np.int32), "mean_wait_s": wait.mean(axis=1),
            "median_wait_s": np.median(wait, axis=1), "p95_wait_s": np.percentile(wait, 95, axis=1),
            "makespan_s": makespan, "utilization": used / (capacity * makespan)}


def run(jobs: pl.DataFrame, ft: Any, policy: str, sched: str, params: dict[str, Any] | None, n: int, seed: int,
        runtimes_of: Callable[[int], np.ndarray | None], trial0_start: np.ndarray,
        progress: bool = False, parts: Path | None = None, identity: dict[str, Any] | None = None,
        batch: int = BATCH, refuse_other: bool = False) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Replay ``n`` trials (module docstring); returns ``trials.parquet``'s table and the
    summary's ``trials`` entry. ``trial0_start``: the NumPy engine's start times of trial 0 in
    prepared order (the cross-check). ``parts``: where finished batches are kept (and taken
    from, when made with the same ``identity``, the run's settings); None keeps nothing.
    ``batch``: trials per compiled call. ``refuse_other``: batches kept with other settings
    raise :class:`OtherSettings` (a single run: the directory is not its own), instead of
    being dropped (a multirun's trial, redone)."""
    from fattorus.sched import batched, replay
    from fattorus.sched.policy.fattree.ta import TAParams

    t0 = time.perf_counter()
    rows = jobs.with_row_index("_row")
    prepared, _ = replay.prepare(rows, ft.n_nodes)
    idx = prepared["_row"].to_numpy().astype(np.int64)
    submit, estimate = prepared["submit_s"].to_numpy(), prepared["estimate_s"].to_numpy()
    nodes = prepared["nodes"].to_numpy().astype(np.int64)
    ta_params = TAParams.from_mapping(params or {}) if policy == "ta" else None
    kept = _kept_batches(parts, {"config": identity, "n": n, "batch": batch}, refuse_other) if parts is not None else {}
    parts_list, capacities = [], None
    for lo in range(0, n, batch):
        if lo in kept:
            parts_list.append(kept[lo])
            continue
        chunk = draws(jobs, min(batch, n - lo), seed + lo, runtimes_of)[:, idx]
        # Later batches start from the capacities the earlier ones needed (no count-based
        # schedule again, no recompilation unless a draw needs more).
        res = batched.replay_batch(submit, chunk, estimate, nodes, ft, sched, policy, ta_params, record_alloc=False,
                                   first_capacities=capacities)
        capacities = (res.queue_capacity, res.running_capacity)
        if lo == 0 and not np.array_equal(res.start[0], trial0_start):
            raise RuntimeError("the batched engine's trial 0 differs from the NumPy engine's: please report")
        parts_list.append(per_trial(submit, res.start, chunk, nodes, ft.n_nodes))
        if parts is not None:
            atomic_write(_batch_file(parts, lo), lambda p, d=parts_list[-1]: pl.DataFrame(d).write_parquet(p))
        if progress:  # a line a batch (seconds to minutes each), on stderr with the other progress
            print(f"[trials] {min(lo + batch, n)}/{n}", file=sys.stderr, flush=True)
    cols = {k: np.concatenate([p[k] for p in parts_list]) for k in parts_list[0]}
    table = pl.DataFrame({"trial": np.arange(n, dtype=np.int32), "seed": seed + np.arange(n, dtype=np.int64), **cols})
    n_kept = sum(len(p["jobs"]) for p in kept.values())
    return table, {"n": n, "batch": batch, "wall_s": time.perf_counter() - t0, "kept": n_kept,
                   "mean_wait_s": _stats(cols["mean_wait_s"]), "utilization": _stats(cols["utilization"])}


#: Per-trial columns of a kept batch, with their dtypes (:func:`per_trial`).
_COLUMNS = {"jobs": pl.Int32, "mean_wait_s": pl.Float64, "median_wait_s": pl.Float64, "p95_wait_s": pl.Float64,
            "makespan_s": pl.Float64, "utilization": pl.Float64}


def _batch_file(parts: Path, lo: int) -> Path:
    return parts / f"b{lo:06d}.parquet"


class OtherSettings(Exception):
    """Kept batches were made with other settings (the message says which, a few keys)."""


def _kept_batches(parts: Path, settings: dict[str, Any], refuse_other: bool = False) -> dict[int, dict[str, np.ndarray]]:
    """The finished batches kept in ``parts`` (first trial -> per-trial columns) when they were
    made with ``settings``; otherwise (or none yet) none, and ``parts`` starts afresh with
    ``settings`` recorded — or, with ``refuse_other``, :class:`OtherSettings` is raised and
    ``parts`` left alone. A batch file that cannot be read, or holds the wrong rows, is made
    again (a trial is a function of the settings and its seed)."""
    record = parts / "settings.json"
    try:
        stored = json.loads(record.read_text()) if record.exists() else None
    except (OSError, ValueError):
        stored = {}
    if isinstance(stored, dict) and stored.get("fattorus") is not None:
        made = provenance.other_source(stored.pop("fattorus"))
    else:
        made = None
    wanted = json.loads(json.dumps(settings, default=str))
    if stored != wanted:
        if stored is not None and any(parts.glob("b*.parquet")):
            if refuse_other:
                raise OtherSettings(differences(stored if isinstance(stored, dict) else {}, wanted))
            _warn(f"{parts}: its batches were made with other settings; dropped, the trials are replayed")
        shutil.rmtree(parts, ignore_errors=True)
        atomic_write(record, json.dumps({**settings, "fattorus": provenance.stamp()}, indent=2, default=str) + "\n")
        return {}
    if made and any(parts.glob("b*.parquet")):
        _warn(f"{parts}: its batches were {made}; they are kept (delete {parts} to replay them)")
    kept: dict[int, dict[str, np.ndarray]] = {}
    n, batch = int(settings["n"]), int(settings["batch"])
    for lo in range(0, n, batch):
        path = _batch_file(parts, lo)
        if not path.exists():
            continue
        try:
            frame = pl.read_parquet(path, glob=False)
            if frame.height != min(batch, n - lo) or dict(frame.schema) != _COLUMNS:
                raise ValueError(f"{frame.height} rows of {list(frame.schema)}")
        except (OSError, ValueError, pl.exceptions.PolarsError) as err:
            _warn(f"{path}: cannot be read ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                  "its trials are replayed")
            continue
        kept[lo] = {k: frame[k].to_numpy() for k in _COLUMNS}
    return kept


#: The folder of a run directory where a ``trials=N`` run keeps its finished batches until its
#: results are written: a single run resumes them with ``hydra.run.dir=`` that directory.
PARTS = "trials.parts"

#: A ``trials=N`` run's Ctrl-C line when no batch had finished: a batch is one compiled call,
#: which a Ctrl-C cannot cut short; it takes effect when the call returns, and only the batches
#: written before it are kept.
NO_BATCH_KEPT = ("no batch of trials had finished (a Ctrl-C takes effect when the running batch's compiled call "
                 "returns; only batches finished before it are kept): nothing was kept")


def resumable(out_dir: Path) -> bool:
    """Whether ``out_dir`` holds an interrupted ``trials=N`` run: kept batches and their
    settings record, no results yet."""
    parts = out_dir / PARTS
    return not (out_dir / "summary.json").exists() and (parts / "settings.json").is_file() and any(
        parts.glob("b*.parquet"))


def resume_note(out_dir: Path) -> str:
    """What a Ctrl-C keeps of a single ``trials=N`` run in ``out_dir`` and the override that
    resumes it (its directory is named by time: the same command alone would start afresh)."""
    import shlex

    done = len(list((out_dir / PARTS).glob("b*.parquet")))
    return (f"{done} finished batch{'' if done == 1 else 'es'} of trials {'is' if done == 1 else 'are'} kept in "
            f"{out_dir}; re-run the same command with "
            f"{shlex.quote(f'hydra.run.dir={out_dir}')} to resume")


def differences(stored: dict[str, Any], wanted: dict[str, Any]) -> str:
    """``key=value there, value now`` for the first few settings that differ (dotted paths)."""
    from fattorus.app.config import config_edits

    there, now = config_edits(wanted, stored), config_edits(stored, wanted)
    diff = [f"{k}={there.get(k, '<unset>')} there, {now.get(k, '<unset>')} now" for k in sorted(set(there) | set(now))]
    return "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else "")


def _warn(text: str) -> None:
    sys.stderr.write(f"fattorus.sweep: warning: {text}\n")
    sys.stderr.flush()


def _stats(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
            "p05": float(np.percentile(x, 5)), "p50": float(np.percentile(x, 50)), "p95": float(np.percentile(x, 95))}
