"""Workloads submitted in waves from a table of applications (the torus paper's Table II).

The Blue Waters scheduler test (torus paper, Section III-B) submitted groups of jobs together
in several waves; each application ran at the node counts and time limits of its Table II row.
A config lists the applications (``apps``: name, node kind, node counts, time limit in
minutes, and optionally ``instances``: how many jobs of each node count a wave submits, one
integer for every count or a list with one per count; default 1) and the waves; every wave
submits the instances of every (application, node count) entry at ``wave * wave_interval_s``,
in table order, with a run time drawn uniformly between ``runtime_fraction`` of the time limit
(the paper shortened its jobs to fit a 3-hour test; users' limits overestimate). With
``same_runtime: {share, seconds}`` each job instead runs ``min(seconds, its limit)`` with
probability ``share`` (the slides: "91% of all jobs had same duration"). All draws come from
``numpy.random.default_rng(seed)``: first every job's fraction, then (only with
``same_runtime``) every job's share draw, so a config without the new keys gives the same
jobs as before they existed.

``include_kinds`` (default ``[XE]``) says which rows enter the table; each job's kind is its
``node_kind`` column. A replay runs every job on one node kind (:func:`fattorus.sched.replay.replay`'s
``node_kind``, default the machine's first), or with ``node_kind=by_job`` each job on its own
kind (XE and XK jobs together on Blue Waters).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from fattorus.workload import SCHEMA, SkipReport, Workload, WorkloadError


def _count(k: Any) -> int:
    """One instance count: a whole number (``2.0`` is 2; ``2.7``, ``inf``, ``True`` or ``"2"`` are refused)."""
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not float(k).is_integer():
        raise ValueError(f"instances must be whole numbers, got {k!r}")
    return int(k)


def _instances(app: Mapping[str, Any], n_sizes: int) -> list[int]:
    """Jobs per wave of each node count of one ``apps`` row (``instances``: an int or a list;
    any sequence, so an OmegaConf ``ListConfig`` too)."""
    raw = app.get("instances", 1)
    many = isinstance(raw, Sequence) and not isinstance(raw, str)
    counts = [_count(k) for k in raw] if many else [_count(raw)] * n_sizes
    if len(counts) != n_sizes:
        raise ValueError(f"instances has {len(counts)} entries for {n_sizes} node counts")
    return counts


def _entries(apps: list[Mapping[str, Any]], include: set[str]) -> tuple[list[tuple[str, str, int, float, int]], int]:
    """``(app, kind, nodes, time limit s, entry id)`` per job of one wave, for rows of an included
    kind, and the number of such (row, node count) entries; the entry id numbers them from 1 in
    table order (an entry with 0 instances keeps its number)."""
    out: list[tuple[str, str, int, float, int]] = []
    entry = 0
    for i, app in enumerate(apps):
        try:
            name, kind = str(app["name"]), str(app.get("kind", "XE"))
            limit_s = 60.0 * float(app["time_limit_min"])
            sizes = [int(n) for n in app["nodes"]]
            counts = _instances(app, len(sizes))
        except (KeyError, TypeError, ValueError) as e:
            raise WorkloadError(f"waves workload: apps[{i}] needs name, nodes (a list of integers), "
                                f"time_limit_min and optionally instances (an integer or one per node count) "
                                f"({type(e).__name__}: {e}), got {dict(app)!r}") from None
        if limit_s <= 0 or any(n < 1 for n in sizes) or any(k < 0 for k in counts):
            raise WorkloadError(f"waves workload: apps[{i}] ({name}): node counts >= 1, instances >= 0 "
                                f"and a positive time limit")
        if kind in include:
            for n, k in zip(sizes, counts):
                entry += 1
                out.extend((name, kind, n, limit_s, entry) for _ in range(k))
    return out, entry


def _same_runtime(cfg: Mapping[str, Any]) -> tuple[float, float] | None:
    """``(share, seconds)`` of the ``same_runtime`` option, or None when it is absent."""
    raw = cfg.get("same_runtime")
    if raw is None:
        return None
    try:
        extra = sorted(set(raw) - {"share", "seconds"})
        if extra:
            raise KeyError(extra)
        share, seconds = float(raw["share"]), float(raw["seconds"])
    except (KeyError, TypeError, ValueError):
        raise WorkloadError(f"waves workload: same_runtime needs share and seconds (numbers), got {raw!r}") from None
    if not (0 <= share <= 1 and seconds > 0):
        raise WorkloadError(f"waves workload: same_runtime share in [0, 1] and seconds > 0, got {share}, {seconds}")
    return share, seconds


def generate(cfg: Mapping[str, Any]) -> Workload:
    """The waves workload a ``waves`` config mapping describes (module docstring)."""
    known = {"seed", "n_waves", "wave_interval_s", "runtime_fraction", "same_runtime", "include_kinds", "apps",
             "cores_per_node"}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise WorkloadError(f"waves workload: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    seed, n_waves = int(cfg.get("seed", 0)), int(cfg.get("n_waves", 6))
    interval = float(cfg.get("wave_interval_s", 1800.0))
    lo, hi = (float(f) for f in cfg.get("runtime_fraction", (0.3, 1.0)))
    if n_waves < 1 or interval < 0 or not 0 < lo <= hi <= 1:
        raise WorkloadError(f"waves workload: n_waves >= 1, wave_interval_s >= 0 and 0 < runtime_fraction "
                            f"low <= high <= 1, got {n_waves}, {interval}, {[lo, hi]}")
    same = _same_runtime(cfg)
    entries, n_entries = _entries(list(cfg.get("apps") or []), set(cfg.get("include_kinds", ["XE"])))
    if not entries:
        raise WorkloadError("waves workload: no job: no application entry of an included kind"
                            + (" has instances > 0" if n_entries else ""))
    rng = np.random.default_rng(seed)
    n = n_waves * len(entries)
    limit = np.tile([e[3] for e in entries], n_waves)
    nodes = np.tile([e[2] for e in entries], n_waves)
    runtime = np.ceil(limit * rng.uniform(lo, hi, n))
    if same is not None:  # drawn after the fractions: configs without the option keep their jobs
        runtime = np.where(rng.random(n) < same[0], np.minimum(np.ceil(same[1]), limit), runtime)
    cores = int(cfg.get("cores_per_node", 32))
    jobs = pl.DataFrame({
        "job_id": np.arange(1, n + 1),
        "submit_s": np.repeat(np.arange(n_waves) * interval, len(entries)).astype(np.float64),
        "runtime_s": runtime,
        "requested_s": limit,
        "procs": nodes * cores,
        "nodes": nodes,
        "status": np.ones(n, np.int32),
        "user": np.tile([e[4] for e in entries], n_waves),  # one "user" per table entry
        "group": pl.Series([None] * n, dtype=pl.Int64),
    }).cast(SCHEMA)  # type: ignore[arg-type]
    jobs = jobs.with_columns(pl.Series("app", [e[0] for e in entries] * n_waves),
                             pl.Series("node_kind", [e[1] for e in entries] * n_waves))
    spec = json.dumps(dict(cfg), sort_keys=True, default=str)
    path = f"waves:seed={seed},n_waves={n_waves},entries={n_entries}"
    if [e[4] for e in entries] != list(range(1, n_entries + 1)):  # not one job per entry a wave
        path += f",jobs_per_wave={len(entries)}"
    return Workload(jobs=jobs, header={"Format": "waves", "Generator": spec, "MaxNodes": str(int(nodes.max()))},
                    path=path,
                    sha256=hashlib.sha256(spec.encode()).hexdigest(), lines=n, skipped=SkipReport())


__all__ = ["generate"]
