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

``machine_nodes`` (optional) is the size of the machine the table was written for: the
workload header's ``MaxNodes``, which ``workload.scale=fit`` reads as the log's machine size.
Without it the header has no ``MaxNodes`` and ``fit`` refuses (the largest job is not the
machine). Every number is checked: a bad one is one ``WorkloadError`` line naming its field
(and its ``apps`` row).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from fattorus.workload import SCHEMA, SkipReport, Workload, WorkloadError


_MAX_NODES = 2**31 - 1  # the jobs table's ``nodes`` column is Int32
_APP_KEYS = ("name", "kind", "nodes", "time_limit_min", "instances")


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _is_list(v: Any) -> bool:
    """A list (any sequence, so an OmegaConf ``ListConfig`` too), not a string or a mapping."""
    return isinstance(v, Sequence) and not isinstance(v, (str, bytes, Mapping))


def _real(v: Any, field: str, *, above: float | None = None, at_least: float | None = None) -> float:
    """One finite number (``nan``, ``inf``, ``True`` or ``"5"`` are refused), above/at least a bound."""
    if not _is_number(v) or not np.isfinite(float(v)):
        raise WorkloadError(f"waves workload: {field} must be a finite number, got {v!r}")
    x = float(v)
    if (above is not None and not x > above) or (at_least is not None and not x >= at_least):
        bound = f"> {above:g}" if above is not None else f">= {at_least:g}"
        raise WorkloadError(f"waves workload: {field} must be {bound}, got {v!r}")
    return x


def _whole(v: Any, field: str, lo: int, hi: int | None = None) -> int:
    """One whole number in ``[lo, hi]`` (``2.0`` is 2; ``2.7``, ``inf``, ``True`` or ``"2"`` are refused)."""
    if not _is_number(v) or not np.isfinite(float(v)) or not float(v).is_integer():
        raise WorkloadError(f"waves workload: {field} must be a whole number, got {v!r}")
    k = int(v)
    if k < lo or (hi is not None and k > hi):
        raise WorkloadError(f"waves workload: {field} must be " + (f"in [{lo}, {hi}]" if hi is not None else f">= {lo}")
                            + f", got {v!r}")
    return k


def _count(k: Any) -> int:
    """One instance count: a whole number (``2.0`` is 2; ``2.7``, ``inf``, ``True`` or ``"2"`` are refused)."""
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not float(k).is_integer():
        raise ValueError(f"instances must be whole numbers, got {k!r}")
    return int(k)


def _instances(app: Mapping[str, Any], n_sizes: int) -> list[int]:
    """Jobs per wave of each node count of one ``apps`` row (``instances``: an int or a list;
    any sequence, so an OmegaConf ``ListConfig`` too)."""
    raw = app.get("instances", 1)
    counts = [_count(k) for k in raw] if _is_list(raw) else [_count(raw)] * n_sizes
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
        if not isinstance(app, Mapping):
            raise WorkloadError(f"waves workload: apps[{i}] must be a mapping (name, kind, nodes, time_limit_min, "
                                f"instances), got {app!r}")
        row = f"apps[{i}]" + (f" ({app['name']})" if "name" in app else "")
        unknown = sorted(str(k) for k in set(app) - set(_APP_KEYS))
        if unknown:
            raise WorkloadError(f"waves workload: {row}: unknown key(s) {', '.join(unknown)} (known: {', '.join(_APP_KEYS)})")
        if "nodes" in app and not _is_list(app["nodes"]):
            raise WorkloadError(f"waves workload: {row}.nodes must be a list of whole numbers, got {app['nodes']!r}")
        try:
            name, kind = str(app["name"]), str(app.get("kind", "XE"))
            limit_min = app["time_limit_min"]
            raw_sizes = list(app["nodes"])
            counts = _instances(app, len(raw_sizes))
        except (KeyError, TypeError, ValueError) as e:
            raise WorkloadError(f"waves workload: apps[{i}] needs name, nodes (a list of integers), "
                                f"time_limit_min and optionally instances (an integer or one per node count) "
                                f"({type(e).__name__}: {e}), got {dict(app)!r}") from None
        limit_s = 60.0 * _real(limit_min, f"{row}.time_limit_min", above=0)
        sizes = [_whole(n, f"{row}.nodes[{j}]", 1, _MAX_NODES) for j, n in enumerate(raw_sizes)]
        if any(k < 0 for k in counts):
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
             "cores_per_node", "machine_nodes"}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise WorkloadError(f"waves workload: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    seed = _whole(cfg.get("seed", 0), "seed", 0)
    n_waves = _whole(cfg.get("n_waves", 6), "n_waves", 1)
    interval = _real(cfg.get("wave_interval_s", 1800.0), "wave_interval_s", at_least=0)
    fractions = cfg.get("runtime_fraction", (0.3, 1.0))
    if not _is_list(fractions) or len(fractions) != 2:
        raise WorkloadError(f"waves workload: runtime_fraction must be [low, high], two numbers, got {fractions!r}")
    lo, hi = (_real(f, "runtime_fraction", above=0) for f in fractions)
    if not lo <= hi <= 1:
        raise WorkloadError(f"waves workload: runtime_fraction must be 0 < low <= high <= 1, got {[lo, hi]}")
    cores = _whole(cfg.get("cores_per_node", 32), "cores_per_node", 1, _MAX_NODES)
    machine = cfg.get("machine_nodes")
    if machine is not None:
        machine = _whole(machine, "machine_nodes", 1, _MAX_NODES)
    kinds = cfg.get("include_kinds", ["XE"])
    if not _is_list(kinds) or not all(isinstance(k, str) for k in kinds):
        raise WorkloadError(f"waves workload: include_kinds must be a list of node kinds (e.g. [XE, XK]), got {kinds!r}")
    apps = cfg.get("apps")
    if apps is not None and not _is_list(apps):
        raise WorkloadError(f"waves workload: apps must be a list of rows ({{name, kind, nodes, time_limit_min}}), "
                            f"got {type(apps).__name__}")
    same = _same_runtime(cfg)
    listed = {str(row.get("kind", "XE")) for row in (apps or []) if isinstance(row, Mapping)}
    absent = [k for k in kinds if k not in listed]
    if absent and listed:  # a typo dropped that kind's jobs without a word (session 47's walkthrough)
        raise WorkloadError(f"waves workload: include_kinds names {absent}, a kind no apps row has "
                            f"(the rows' kinds: {sorted(listed)})")
    entries, n_entries = _entries(list(apps or []), set(kinds))
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
    header = {"Format": "waves", "Generator": spec}
    if machine is not None:  # the machine the table was written for (scale=fit reads it); never the largest job
        header["MaxNodes"] = str(machine)
    return Workload(jobs=jobs, header=header,
                    path=path,
                    sha256=hashlib.sha256(spec.encode()).hexdigest(), lines=n, skipped=SkipReport())


__all__ = ["generate"]
