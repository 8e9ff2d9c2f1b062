"""Workloads submitted in waves from a table of applications (the torus paper's Table II).

The Blue Waters scheduler test (torus paper, Section III-B) submitted groups of jobs together
in several waves; each application ran at the node counts and time limits of its Table II row.
A config lists the applications (``apps``: name, node kind, node counts, time limit in
minutes) and the waves; every wave submits one instance of every (application, node count)
entry at ``wave * wave_interval_s``, in table order, with a run time drawn uniformly between
``runtime_fraction`` of the time limit (the paper shortened its jobs to fit a 3-hour test;
users' limits overestimate). All draws come from ``numpy.random.default_rng(seed)``.

A replay runs every job on one node kind (:func:`fattorus.sched.replay.replay`'s
``node_kind``); ``include_kinds`` (default ``[XE]``) says which rows enter the table, so XK
jobs are left out unless asked for — then they run on the replay's kind like every other job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from fattorus.workload import SCHEMA, SkipReport, Workload, WorkloadError


def _entries(apps: list[Mapping[str, Any]], include: set[str]) -> list[tuple[str, str, int, float]]:
    """``(app, kind, nodes, time limit s)`` per table entry of an included kind."""
    out = []
    for i, app in enumerate(apps):
        try:
            name, kind = str(app["name"]), str(app.get("kind", "XE"))
            limit_s = 60.0 * float(app["time_limit_min"])
            sizes = [int(n) for n in app["nodes"]]
        except (KeyError, TypeError, ValueError):
            raise WorkloadError(f"waves workload: apps[{i}] needs name, nodes (a list of integers) and "
                                f"time_limit_min, got {dict(app)!r}") from None
        if limit_s <= 0 or any(n < 1 for n in sizes):
            raise WorkloadError(f"waves workload: apps[{i}] ({name}): node counts >= 1 and a positive time limit")
        if kind in include:
            out.extend((name, kind, n, limit_s) for n in sizes)
    return out


def generate(cfg: Mapping[str, Any]) -> Workload:
    """The waves workload a ``waves`` config mapping describes (module docstring)."""
    known = {"seed", "n_waves", "wave_interval_s", "runtime_fraction", "include_kinds", "apps", "cores_per_node"}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise WorkloadError(f"waves workload: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    seed, n_waves = int(cfg.get("seed", 0)), int(cfg.get("n_waves", 6))
    interval = float(cfg.get("wave_interval_s", 1800.0))
    lo, hi = (float(f) for f in cfg.get("runtime_fraction", (0.3, 1.0)))
    if n_waves < 1 or interval < 0 or not 0 < lo <= hi <= 1:
        raise WorkloadError(f"waves workload: n_waves >= 1, wave_interval_s >= 0 and 0 < runtime_fraction "
                            f"low <= high <= 1, got {n_waves}, {interval}, {[lo, hi]}")
    entries = _entries(list(cfg.get("apps") or []), set(cfg.get("include_kinds", ["XE"])))
    if not entries:
        raise WorkloadError("waves workload: no application entry of an included kind")
    rng = np.random.default_rng(seed)
    n = n_waves * len(entries)
    limit = np.tile([e[3] for e in entries], n_waves)
    nodes = np.tile([e[2] for e in entries], n_waves)
    runtime = np.ceil(limit * rng.uniform(lo, hi, n))
    cores = int(cfg.get("cores_per_node", 32))
    jobs = pl.DataFrame({
        "job_id": np.arange(1, n + 1),
        "submit_s": np.repeat(np.arange(n_waves) * interval, len(entries)).astype(np.float64),
        "runtime_s": runtime,
        "requested_s": limit,
        "procs": nodes * cores,
        "nodes": nodes,
        "status": np.ones(n, np.int32),
        "user": np.tile(np.arange(1, len(entries) + 1), n_waves),  # one "user" per table entry
        "group": pl.Series([None] * n, dtype=pl.Int64),
    }).cast(SCHEMA)  # type: ignore[arg-type]
    jobs = jobs.with_columns(pl.Series("app", [e[0] for e in entries] * n_waves),
                             pl.Series("node_kind", [e[1] for e in entries] * n_waves))
    spec = json.dumps(dict(cfg), sort_keys=True, default=str)
    return Workload(jobs=jobs, header={"Format": "waves", "Generator": spec, "MaxNodes": str(int(nodes.max()))},
                    path=f"waves:seed={seed},n_waves={n_waves},entries={len(entries)}",
                    sha256=hashlib.sha256(spec.encode()).hexdigest(), lines=n, skipped=SkipReport())


__all__ = ["generate"]
