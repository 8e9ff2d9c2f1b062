"""Interference exposure of the jobs of a replay run (``python -m fattorus.interference``).

Usage::

    python -m fattorus.interference RUN_DIR [--pattern-mix stencil4d=1,random_pairs=1]
                                            [--seed S] [--instants K] [--topo NAME] [--out FILE]

Reads ``RUN_DIR/jobs.parquet`` (``job_id``, ``start_s``, ``end_s``, ``alloc``, ``nodes``,
``job_type``; docs/outputs.md) and ``RUN_DIR/summary.json`` (``config.topo`` names the
topology in ``conf/topo``, or is a mapping with its parameters), then:

1. gives each job a communication pattern drawn from the mix (weights, seeded;
   :mod:`fattorus.patterns`), ranks on the job's nodes in allocation order;
2. computes each job's link loads alone (:mod:`fattorus.routing` D-mod-k routes,
   :func:`fattorus.linkload.link_loads`), once per job;
3. at ``K`` instants drawn uniformly (seeded) between the first start and the last end,
   stacks the loads of the jobs running then (``start_s <= t < end_s``) and computes each
   job's exposure (:func:`fattorus.linkload.interference`, inter-switch links only);
4. writes ``RUN_DIR/interference.parquet`` atomically (temporary file, then ``os.replace``),
   one row per running job per instant, and prints a summary.

Columns: ``instant`` (int32), ``t_s`` (float64 s), ``running_jobs`` (int32), ``job_id``
(int64), ``nodes`` (int32), ``job_type`` (str), ``pattern`` (str), ``flows`` (int64),
``bytes`` (float64, bytes the job sends), ``links_used`` (int32, inter-switch links its
traffic uses), ``shared_links`` (int32, of those, links also used by another running job),
``shared_leaf_l2`` / ``shared_l2_core`` (int32, the same by level), ``shared_share``
(float64, traffic-weighted share of its link load on shared links), ``exposed`` (bool),
``instant_shared_leaf_l2`` / ``instant_shared_l2_core`` (int32, links of that level carrying
traffic of more than one running job at this instant; the same on every row of an instant).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import polars as pl

from fattorus.topology import fattree
from fattorus.kernels import linkload
from fattorus.analysis import patterns
from fattorus.topology import fattree_routing as routing
from fattorus.files import atomic_write
from fattorus.topology.fattree import FatTree

#: The four patterns of the fat-tree paper's Section V-B, equally likely.
DEFAULT_MIX = "stencil4d=1,unstructured_mesh=1,random_pairs=1,subcomm_a2a=1"
OUTPUT = "interference.parquet"


class RunDirError(ValueError):
    """A run directory that cannot be analysed (missing or malformed files)."""


def parse_mix(text: str) -> dict[str, float]:
    """``"a=2,b=1"`` or ``"a,b"`` (weight 1) -> ``{name: weight}``; names checked, weights > 0."""
    mix: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, weight = item.partition("=")
        name = name.strip()
        if name not in patterns.PATTERNS:
            raise ValueError(f"unknown pattern {name!r} in --pattern-mix; choices: {sorted(patterns.PATTERNS)}")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"bad weight {weight!r} for pattern {name!r} in --pattern-mix") from None
        if not w > 0:
            raise ValueError(f"weight of pattern {name!r} must be > 0, got {w}")
        mix[name] = mix.get(name, 0.0) + w
    if not mix:
        raise ValueError("--pattern-mix names no pattern")
    return mix


def _check_same_machine(summary_path: Path, topo: str) -> None:
    """``--topo`` may describe the run's machine (e.g. by a file), never another one."""
    try:
        ran_on = json.loads(summary_path.read_text())["config"]["topo"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return  # nothing to compare with: the named topology is all there is
    name = ran_on.get("name") if isinstance(ran_on, Mapping) else ran_on
    wanted = Path(topo).stem if Path(topo).suffix else topo
    if name is not None and wanted != name:
        raise RunDirError(f"--topo {topo!r} is another machine than the one the run was replayed on ({name!r}); "
                          "drop --topo or name that machine")


def load_run(run_dir: str | Path, topo: str | None = None) -> tuple[FatTree, pl.DataFrame]:
    """The run's topology and its ``jobs.parquet`` table; :class:`RunDirError` if unusable."""
    run = Path(run_dir)
    if not run.is_dir():
        raise RunDirError(f"{run}: not a directory")
    jobs_path, summary_path = run / "jobs.parquet", run / "summary.json"
    if topo is not None and summary_path.is_file():
        _check_same_machine(summary_path, topo)
    if topo is None:
        if not summary_path.is_file():
            raise RunDirError(f"{summary_path}: missing (is {run} a replay run directory?)")
        try:
            summary = json.loads(summary_path.read_text())
            topo = summary["config"]["topo"]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise RunDirError(f"{summary_path}: cannot read config.topo ({type(err).__name__}: {err})") from None
        if isinstance(topo, Mapping) and "radix" not in topo:
            topo = topo.get("name")
        if not isinstance(topo, (str, Mapping)):
            raise RunDirError(f"{summary_path}: config.topo must name or describe a topology, got {topo!r}")
    try:
        ft = fattree.from_config(topo) if isinstance(topo, Mapping) else fattree.load(topo)
    except (fattree.TopologyError, TypeError) as err:
        raise RunDirError(f"{summary_path}: {err}") from None
    if not jobs_path.is_file():
        raise RunDirError(f"{jobs_path}: missing (is {run} a replay run directory?)")
    try:
        jobs = pl.read_parquet(jobs_path)
    except Exception as err:  # polars raises several error types for a bad file
        raise RunDirError(f"{jobs_path}: unreadable parquet ({type(err).__name__}: {err})") from None
    missing = [c for c in ("job_id", "start_s", "end_s", "alloc") if c not in jobs.columns]
    if missing:
        raise RunDirError(f"{jobs_path}: missing column(s) {missing}")
    try:
        jobs = jobs.with_columns(pl.col("alloc").cast(pl.List(pl.Int32)))
    except Exception as err:
        raise RunDirError(f"{jobs_path}: column alloc is not a list of node ids ({err})") from None
    bad = jobs.filter(pl.col("alloc").list.eval(pl.element() >= ft.n_nodes).list.any())
    if len(bad):
        raise RunDirError(f"{jobs_path}: job {bad['job_id'][0]} uses node ids beyond {ft.name}'s {ft.n_nodes} nodes")
    return ft, jobs


def assign_patterns(key: jax.Array, n_jobs: int, mix: Mapping[str, float]) -> list[str]:
    """One pattern name per job, drawn independently with probabilities ``mix`` (normalised)."""
    names = list(mix)
    p = np.asarray([mix[n] for n in names], np.float64)
    idx = np.asarray(jax.random.choice(key, len(names), (n_jobs,), p=jnp.asarray(p / p.sum())))
    return [names[i] for i in idx]


def sample_instants(key: jax.Array, start: np.ndarray, end: np.ndarray, k: int) -> np.ndarray:
    """``k`` sorted instants (s) uniform in ``[min start, max end)``; empty without jobs."""
    if len(start) == 0 or k <= 0:
        return np.zeros(0)
    lo, hi = float(np.min(start)), float(np.max(end))
    u = np.sort(np.asarray(jax.random.uniform(key, (k,), minval=0.0, maxval=1.0), np.float64))
    return lo + u * max(hi - lo, 0.0)


def _pad_pow2(n: int, lo: int = 256) -> int:
    return max(lo, 1 << max(n - 1, 0).bit_length())


def job_loads(ft: FatTree, alloc: np.ndarray, traffic: patterns.Traffic) -> np.ndarray:
    """``(n_links,)`` float32 loads (bytes) of one job's traffic on its allocation.

    Flows are padded to a power of two so that jobs of similar size share a compilation.
    """
    src, dst, nbytes = patterns.to_nodes(alloc, traffic)
    width = _pad_pow2(len(src))
    pad = width - len(src)
    src = np.pad(src, (0, pad), constant_values=-1)
    dst = np.pad(dst, (0, pad), constant_values=-1)
    nbytes = np.pad(nbytes.astype(np.float32), (0, pad))
    return np.asarray(linkload.flow_link_loads(ft, src, dst, nbytes))


def exposure(ft: FatTree, loads: Sequence[np.ndarray]) -> linkload.Interference:
    """:func:`fattorus.linkload.interference` of the given per-job loads, as NumPy arrays.

    The job axis is padded with all-zero rows to a power of two (which changes nothing) so
    that instants with different numbers of running jobs share a few compilations.
    """
    n = len(loads)
    if n == 0:
        raise ValueError("exposure needs the loads of at least one job")
    stacked = np.zeros((_pad_pow2(n, lo=8), routing.n_links(ft)), np.float32)
    stacked[:n] = np.stack(loads)
    res = linkload.interference(ft, jnp.asarray(stacked))
    per_job = {"links_used", "shared_links", "shared_share", "shared_by_level"}
    return linkload.Interference(
        **{f: np.asarray(getattr(res, f))[:n] if f in per_job else np.asarray(getattr(res, f)) for f in res._fields}
    )


def analyse(
    ft: FatTree,
    jobs: pl.DataFrame,
    mix: Mapping[str, float],
    seed: int = 0,
    instants: int = 16,
    pattern_params: Mapping[str, Mapping] | None = None,
) -> pl.DataFrame:
    """Per-job, per-instant interference table of a replay's ``jobs`` (see module docstring)."""
    root = jax.random.PRNGKey(seed)
    k_assign, k_time, k_traffic = jax.random.split(root, 3)
    n_jobs = len(jobs)
    names = assign_patterns(k_assign, n_jobs, mix)
    start = jobs["start_s"].to_numpy().astype(np.float64)
    end = jobs["end_s"].to_numpy().astype(np.float64)
    allocs = [np.asarray(a if a is not None else [], np.int32) for a in jobs["alloc"].to_list()]
    job_ids = jobs["job_id"].cast(pl.Int64).to_numpy()
    nodes = jobs["nodes"].cast(pl.Int32).to_numpy() if "nodes" in jobs.columns else np.array([len(a) for a in allocs], np.int32)
    types = jobs["job_type"].cast(pl.String).to_list() if "job_type" in jobs.columns else [
        fattree.JOB_TYPE_NAMES[int(fattree.job_type(ft, len(a)))] for a in allocs
    ]
    params = {name: dict((pattern_params or {}).get(name, {})) for name in mix}
    times = sample_instants(k_time, start, end, instants)
    n_links = routing.n_links(ft)
    cache: dict[int, tuple[np.ndarray, int, float]] = {}

    def loads_of(j: int) -> tuple[np.ndarray, int, float]:
        if j not in cache:
            traffic = patterns.make(names[j], jax.random.fold_in(k_traffic, j), len(allocs[j]), **params[names[j]])
            loads = job_loads(ft, allocs[j], traffic) if traffic.n_flows else np.zeros(n_links, np.float32)
            cache[j] = (loads, traffic.n_flows, traffic.total_bytes)
        return cache[j]

    has_nodes = np.array([len(a) > 0 for a in allocs], bool)
    frames = []
    for i, t in enumerate(times):
        running = np.flatnonzero((start <= t) & (t < end) & has_nodes)
        if len(running) == 0:
            continue
        got = [loads_of(int(j)) for j in running]
        res = exposure(ft, [g[0] for g in got])
        by_level = np.asarray(res.shared_by_level)
        shared = np.asarray(res.shared)
        inst_shared = [int(shared[sl].sum()) for sl in routing.level_slices(ft)]
        frames.append(
            pl.DataFrame(
                {
                    "instant": np.full(len(running), i, np.int32),
                    "t_s": np.full(len(running), t, np.float64),
                    "running_jobs": np.full(len(running), len(running), np.int32),
                    "job_id": job_ids[running].astype(np.int64),
                    "nodes": nodes[running].astype(np.int32),
                    "job_type": [types[j] for j in running],
                    "pattern": [names[j] for j in running],
                    "flows": np.array([g[1] for g in got], np.int64),
                    "bytes": np.array([g[2] for g in got], np.float64),
                    "links_used": np.asarray(res.links_used, np.int32),
                    "shared_links": np.asarray(res.shared_links, np.int32),
                    "shared_leaf_l2": by_level[:, 1].astype(np.int32),
                    "shared_l2_core": by_level[:, 2].astype(np.int32),
                    "shared_share": np.asarray(res.shared_share, np.float64),
                    "exposed": np.asarray(res.shared_links) > 0,
                    "instant_shared_leaf_l2": np.full(len(running), inst_shared[1], np.int32),
                    "instant_shared_l2_core": np.full(len(running), inst_shared[2], np.int32),
                }
            )
        )
    if not frames:
        return pl.DataFrame(schema=SCHEMA)
    return pl.concat(frames)


SCHEMA = {
    "instant": pl.Int32, "t_s": pl.Float64, "running_jobs": pl.Int32, "job_id": pl.Int64,
    "nodes": pl.Int32, "job_type": pl.String, "pattern": pl.String, "flows": pl.Int64,
    "bytes": pl.Float64, "links_used": pl.Int32, "shared_links": pl.Int32,
    "shared_leaf_l2": pl.Int32, "shared_l2_core": pl.Int32, "shared_share": pl.Float64,
    "exposed": pl.Boolean, "instant_shared_leaf_l2": pl.Int32, "instant_shared_l2_core": pl.Int32,
}


def write_atomic(table: pl.DataFrame, path: str | Path) -> Path:
    """Write ``table`` to ``path`` as parquet, atomically."""
    return atomic_write(path, lambda p: table.write_parquet(p))


def summary_lines(table: pl.DataFrame) -> list[str]:
    """Human-readable summary of an interference table."""
    if table.is_empty():
        return ["no job was running at the sampled instants"]
    rows = len(table)
    exposed = int(table["exposed"].sum())
    jobs = table["job_id"].n_unique()
    jobs_exposed = table.filter(pl.col("exposed"))["job_id"].n_unique()
    per_instant = table.group_by("instant").agg(
        pl.len().alias("running"),
        pl.col("exposed").sum().alias("exposed"),
        pl.col("instant_shared_leaf_l2").first().alias("leaf_l2"),
        pl.col("instant_shared_l2_core").first().alias("l2_core"),
    )
    lines = [
        f"instants with running jobs: {per_instant.height}; running jobs per instant: "
        f"mean {per_instant['running'].mean():.1f}, max {per_instant['running'].max()}",
        f"job-instants exposed: {exposed}/{rows} ({exposed / rows:.1%}); "
        f"jobs exposed at least once: {jobs_exposed}/{jobs}",
        f"links shared by >1 job per instant: leaf-L2 mean {per_instant['leaf_l2'].mean():.1f} "
        f"(max {per_instant['leaf_l2'].max()}), L2-core mean {per_instant['l2_core'].mean():.1f} "
        f"(max {per_instant['l2_core'].max()})",
        f"shared links per exposed job-instant (mean): total "
        f"{_mean_exposed(table, 'shared_links'):.1f}, leaf-L2 {_mean_exposed(table, 'shared_leaf_l2'):.1f}, "
        f"L2-core {_mean_exposed(table, 'shared_l2_core'):.1f}",
        f"traffic share on shared links (mean over exposed job-instants): {_mean_exposed(table, 'shared_share'):.3f}",
    ]
    by_pattern = (
        table.group_by("pattern")
        .agg(pl.len().alias("n"), pl.col("exposed").mean().alias("exposed"), pl.col("shared_share").mean().alias("share"))
        .sort("pattern")
    )
    for name, n, exp, share in by_pattern.iter_rows():
        lines.append(f"  {name:<18} job-instants {n:>6}  exposed {exp:6.1%}  mean shared share {share:.3f}")
    return lines


def _mean_exposed(table: pl.DataFrame, col: str) -> float:
    sel = table.filter(pl.col("exposed"))[col]
    return float(sel.mean()) if len(sel) else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0, or 2 on a usage/data error)."""
    parser = argparse.ArgumentParser(
        prog="python -m fattorus.interference",
        description="Link sharing between concurrently running jobs of a replay run (D-mod-k routing).",
    )
    parser.add_argument("run_dir", help="replay run directory (jobs.parquet, summary.json)")
    parser.add_argument("--pattern-mix", default=DEFAULT_MIX,
                        help=f"comma-separated NAME[=WEIGHT] (default {DEFAULT_MIX}); names: {', '.join(patterns.PATTERNS)}")
    parser.add_argument("--seed", type=int, default=0, help="seed of pattern assignment, traffic and instants")
    parser.add_argument("--instants", type=int, default=16, help="number of sampled instants (default 16)")
    parser.add_argument("--topo", default=None, help="topology name overriding summary.json's config.topo")
    parser.add_argument("--out", default=None, help=f"output file (default RUN_DIR/{OUTPUT})")
    args = parser.parse_args(argv)
    try:
        if args.instants < 1:
            raise ValueError(f"--instants must be >= 1, got {args.instants}")
        mix = parse_mix(args.pattern_mix)
        ft, jobs = load_run(args.run_dir, args.topo)
        table = analyse(ft, jobs, mix, seed=args.seed, instants=args.instants)
        out = write_atomic(table, args.out or Path(args.run_dir) / OUTPUT)
    except (RunDirError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{ft.name}: {len(jobs)} jobs, {args.instants} instants, mix {mix}, seed {args.seed}")
    for line in summary_lines(table):
        print(line)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
