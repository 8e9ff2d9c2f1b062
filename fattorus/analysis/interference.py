"""Interference exposure of the jobs of a replay run (``python -m fattorus.interference``).

Usage::

    python -m fattorus.interference RUN_DIR [--pattern-mix stencil4d=1,random_pairs=1]
                                            [--seed S] [--instants K] [--topo NAME] [--out FILE]

Reads ``RUN_DIR/jobs.parquet`` (``job_id``, ``start_s``, ``end_s``, ``alloc``, ``nodes``,
``job_type``; docs/outputs.md) and ``RUN_DIR/summary.json`` (its ``topology``, the machine's
full configuration; older runs: ``config.topo`` naming a machine in ``conf/topo`` or giving
its parameters), then:

1. gives each job a communication pattern drawn from the mix (weights, seeded;
   :mod:`fattorus.patterns`), ranks on the job's nodes in allocation order;
2. computes each job's link loads alone (the topology's static routes,
   :func:`fattorus.kernels.linkload.flow_link_loads`), once per job;
3. at ``K`` instants drawn uniformly (seeded) between the first start and the last end,
   stacks the loads of the jobs running then (``start_s <= t < end_s``) and computes each
   job's exposure (:func:`fattorus.kernels.linkload.interference`, inter-switch links only);
4. writes ``RUN_DIR/interference.parquet`` atomically (temporary file, then ``os.replace``),
   one row per running job per instant, and prints a summary.

While it runs it keeps the finished instants in ``RUN_DIR/interference.instants/`` (beside
``--out``'s file likewise): a Ctrl-C loses none, and the same command computes only the
others (:mod:`fattorus.analysis.instant_parts`).

Columns: ``instant`` (int32), ``t_s`` (float64 s), ``running_jobs`` (int32), ``job_id``
(int64), ``nodes`` (int32), ``job_type`` (str), ``pattern`` (str), ``flows`` (int64),
``bytes`` (float64, bytes the job sends), ``links_used`` (int32, inter-switch links its
traffic uses), ``shared_links`` (int32, of those, links also used by another running job),
``shared_<class>`` (int32, the same per inter-switch link class, e.g. ``shared_leaf_l2`` and
``shared_l2_core`` on a fat-tree, ``shared_xp`` ... ``shared_zm`` on a torus), ``shared_share``
(float64, traffic-weighted share of its link load on shared links), ``exposed`` (bool),
``instant_shared_<class>`` (int32, links of that class carrying traffic of more than one
running job at this instant; the same on every row of an instant), ``traffic_<class>``
(float64, the job's traffic on links of that class: bytes summed over the links, i.e. bytes x
hops of the class) and ``shared_traffic_<class>`` (float64, the part of it on links shared
with another running job): a job's traffic exposure by link class (on a dragonfly green,
black, blue).
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.interference")

import json
import math
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from fattorus import paths
from fattorus import topology as topology_mod
from fattorus.args import SEED_MAX, OneLineParser
from fattorus.analysis import instant_parts, patterns
from fattorus.interrupt import INTERRUPTED
from fattorus.files import atomic_write
from fattorus.topology.base import Topology

if TYPE_CHECKING:
    import jax

    from fattorus.kernels import linkload

# JAX (the link-load kernels, the tool's draws) is imported where the interference tool runs:
# a ``speedup=model`` replay takes only the pattern mix and assignment from here.

#: The four pattern kinds of the fat-tree paper's Section V-B, equally likely — with Sub-a2a as
#: ``subcomm_a2a``, all-to-all within rows of 16 consecutive ranks, not the paper's all-to-all
#: along a 3D process grid (``grid_a2a``, the network study's): docs/bandwidth-model.md. The
#: default mix of this tool and of ``speedup=model``.
DEFAULT_MIX = "stencil4d=1,unstructured_mesh=1,random_pairs=1,subcomm_a2a=1"
OUTPUT = "interference.parquet"
#: Sampled instants at most: the table gains a row per running job per instant (with 100 jobs
#: running, 10 million rows at this cap) and each instant is one exposure solve (~1 ms on ft6),
#: so this is already hours and gigabytes on a large machine; past it JAX fails instead (3e9
#: instants asked it for 36 GB at once: a traceback).
INSTANTS_MAX = 100_000


class RunDirError(ValueError):
    """A run directory that cannot be analysed (missing or malformed files)."""


def parse_mix(text: str, option: str = "--pattern-mix") -> dict[str, float]:
    """``"a=2,b=1"`` or ``"a,b"`` (weight 1) -> ``{name: weight}``; names checked, weights > 0.
    ``option``: the setting the text came from, as its errors name it (``speedup.patterns`` in
    the replay app)."""
    mix: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, weight = item.partition("=")
        name = name.strip()
        if name not in patterns.PATTERNS:
            raise ValueError(f"unknown pattern {name!r} in {option}; choices: {sorted(patterns.PATTERNS)}")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"bad weight {weight!r} for pattern {name!r} in {option}") from None
        # An inf weight made every probability nan: a draw went on, silently wrong.
        if not (w > 0 and math.isfinite(w)):
            raise ValueError(f"weight of pattern {name!r} in {option} must be a finite number > 0, got {w}")
        if name in mix:  # summed, it read as a weight nobody typed (stencil4d=1,stencil4d=2: 3)
            raise ValueError(f"pattern {name!r} given more than once in {option}")
        mix[name] = w
    if not mix:
        raise ValueError(f"{option} names no pattern")
    if not math.isfinite(sum(mix.values())):  # finite weights whose sum is inf: the same nan
        raise ValueError(f"the weights in {option} sum past the largest float; give smaller ones (only their "
                         "ratios count)")
    return mix


def _check_same_machine(summary_path: Path, topo: str, given: Topology) -> None:
    """``--topo`` may describe the run's machine (e.g. by a file, under any name), never another
    one: the machine ``given`` must be the one ``summary.json`` records, field by field (its
    ``name`` aside). Where the run records a name only and no shipped machine has it, the names
    (the machine's or its file's) must match."""
    try:
        summary = json.loads(summary_path.read_text())
        ran_on = summary.get("topology") or summary["config"]["topo"]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        return  # nothing to compare with: the named topology is all there is
    name = ran_on.get("name") if isinstance(ran_on, Mapping) else ran_on
    try:
        if isinstance(ran_on, Mapping) and len(ran_on) > 2:
            recorded = topology_mod.from_config(ran_on)
        else:
            recorded = topology_mod.load(str(name))
    except (topology_mod.TopologyError, TypeError, ValueError):
        recorded = None
    if recorded is None:
        if name is not None and name not in (given.name, Path(topo).stem):
            raise RunDirError(f"--topo {topo!r} is another machine than the one the run was replayed on "
                              f"({name!r}); drop --topo or name that machine")
        return
    mine = {k: v for k, v in given.canonical_config().items() if k != "name"}
    theirs = {k: v for k, v in recorded.canonical_config().items() if k != "name"}
    if json.dumps(mine, sort_keys=True, default=str) != json.dumps(theirs, sort_keys=True, default=str):
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        raise RunDirError(f"--topo {topo!r} is another machine than the one the run was replayed on "
                          f"({recorded.name!r}: {', '.join(f'{k} {theirs.get(k)!r}' for k in differ)}; "
                          f"the file has {', '.join(f'{k} {mine.get(k)!r}' for k in differ)}); "
                          "drop --topo or give that machine's file")


def load_run(run_dir: str | Path, topo: str | None = None) -> tuple[Topology, pl.DataFrame]:
    """The run's topology and its ``jobs.parquet`` table; :class:`RunDirError` if unusable."""
    run = Path(run_dir)
    if not run.is_dir():
        raise RunDirError(f"{run}: not a directory")
    jobs_path, summary_path = run / "jobs.parquet", run / "summary.json"
    if topo is not None:  # first whether it names a machine at all: a typo is an unknown topology, not another machine
        try:
            ft = topology_mod.load(topo)
        except (topology_mod.TopologyError, TypeError) as err:
            raise RunDirError(f"--topo: {err}") from None
        if summary_path.is_file():
            _check_same_machine(summary_path, topo, ft)
    else:
        if not summary_path.is_file():
            raise RunDirError(f"{summary_path}: missing (is {run} a replay run directory?)")
        try:
            summary = json.loads(summary_path.read_text())
            if isinstance(summary, dict) and "config" not in summary and "topology" not in summary:
                # Another app's run (a QoS run records "qos", not a replay's config).
                raise RunDirError(f"{summary_path}: no replay's config in it (is {run} a replay run directory? "
                                  f"a fattorus.qos run is not)")
            topo = summary.get("topology") or summary["config"]["topo"]
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
            raise RunDirError(f"{summary_path}: cannot read config.topo ({type(err).__name__}: {err})") from None
        if isinstance(topo, Mapping) and len(topo) <= 2:  # a name only, not a configuration
            topo = topo.get("name")
        if not isinstance(topo, (str, Mapping)):
            raise RunDirError(f"{summary_path}: config.topo must name or describe a topology, got {topo!r}")
        try:
            ft = topology_mod.from_config(topo) if isinstance(topo, Mapping) else topology_mod.load(topo)
        except (topology_mod.TopologyError, TypeError) as err:
            raise RunDirError(f"{summary_path}: {err}") from None
    if not jobs_path.is_file():
        raise RunDirError(f"{jobs_path}: missing (is {run} a replay run directory?)")
    try:
        jobs = pl.read_parquet(jobs_path, glob=False)
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
    from fattorus.kernels import threefry  # numba, loaded on first need

    # jax.random.choice's draws made on the host (no JAX compilation per job count: ~0.7 s a run)
    idx = threefry.choice(key, p / p.sum(), n_jobs)
    return [names[i] for i in idx]


def sample_instants(key: jax.Array, start: np.ndarray, end: np.ndarray, k: int) -> np.ndarray:
    """``k`` sorted instants (s) uniform in ``[min start, max end)``; empty without jobs."""
    if len(start) == 0 or k <= 0:
        return np.zeros(0)
    import jax

    lo, hi = float(np.min(start)), float(np.max(end))
    u = np.sort(np.asarray(jax.random.uniform(key, (k,), minval=0.0, maxval=1.0), np.float64))
    return lo + u * max(hi - lo, 0.0)


def _pad_pow2(n: int, lo: int = 256) -> int:
    return max(lo, 1 << max(n - 1, 0).bit_length())


def job_loads(ft: Topology, alloc: np.ndarray, traffic: patterns.Traffic) -> np.ndarray:
    """``(n_links,)`` float32 loads (bytes) of one job's traffic on its allocation.

    Flows are padded to a power of two so that jobs of similar size share a compilation.
    """
    from fattorus.kernels import linkload

    src, dst, nbytes = patterns.to_nodes(alloc, traffic)
    width = _pad_pow2(len(src))
    pad = width - len(src)
    src = np.pad(src, (0, pad), constant_values=-1)
    dst = np.pad(dst, (0, pad), constant_values=-1)
    nbytes = np.pad(nbytes.astype(np.float32), (0, pad))
    return np.asarray(linkload.flow_link_loads(ft, src, dst, nbytes))


def exposure(ft: Topology, loads: Sequence[np.ndarray]) -> linkload.Interference:
    """:func:`fattorus.kernels.linkload.interference` of the given per-job loads, as NumPy arrays.

    The job axis is padded with all-zero rows to a power of two (which changes nothing) so
    that instants with different numbers of running jobs share a few compilations.
    """
    import jax.numpy as jnp

    from fattorus.kernels import linkload

    n = len(loads)
    if n == 0:
        raise ValueError("exposure needs the loads of at least one job")
    stacked = np.zeros((_pad_pow2(n, lo=8), ft.n_links), np.float32)
    stacked[:n] = np.stack(loads)
    res = linkload.interference(ft, jnp.asarray(stacked))
    per_job = {"links_used", "shared_links", "shared_share", "shared_by_level"}
    return linkload.Interference(
        **{f: np.asarray(getattr(res, f))[:n] if f in per_job else np.asarray(getattr(res, f)) for f in res._fields}
    )


def analyse(
    ft: Topology,
    jobs: pl.DataFrame,
    mix: Mapping[str, float],
    seed: int = 0,
    instants: int = 16,
    pattern_params: Mapping[str, Mapping] | None = None,
    progress: Callable[[Sequence[Any]], Iterable[Any]] | None = None,
) -> pl.DataFrame:
    """Per-job, per-instant interference table of a replay's ``jobs`` (see module docstring);
    ``progress`` wraps the sampled instants as they are worked through (the command line
    shows a bar or a line every few seconds: :func:`fattorus.args.shown`)."""
    frames = [rows for _, rows in instant_rows(ft, jobs, mix, seed, instants, pattern_params, progress=progress)
              if rows is not None]
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema(ft))


def instant_rows(
    ft: Topology,
    jobs: pl.DataFrame,
    mix: Mapping[str, float],
    seed: int = 0,
    instants: int = 16,
    pattern_params: Mapping[str, Mapping] | None = None,
    skip: Collection[int] = (),
    progress: Callable[[Sequence[Any]], Iterable[Any]] | None = None,
) -> Iterator[tuple[int, pl.DataFrame | None]]:
    """:func:`analyse`'s rows one sampled instant at a time, in order: ``(instant, rows)``,
    ``rows`` None where no job ran then. The instants in ``skip`` are left out (an
    interrupted run's kept ones): every draw is a function of the seed and a job's or an
    instant's index, so the others' rows are those of a run that computes them all."""
    import jax

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
        ft.class_name(ft.size_class(len(a))) for a in allocs
    ]
    params = {name: dict((pattern_params or {}).get(name, {})) for name in mix}
    times = sample_instants(k_time, start, end, instants)
    n_links = ft.n_links
    classes = hop_class_columns(ft)
    cache: dict[int, tuple[np.ndarray, int, float]] = {}

    def loads_of(j: int) -> tuple[np.ndarray, int, float]:
        if j not in cache:
            traffic = patterns.make(names[j], jax.random.fold_in(k_traffic, j), len(allocs[j]), **params[names[j]])
            loads = job_loads(ft, allocs[j], traffic) if traffic.n_flows else np.zeros(n_links, np.float32)
            cache[j] = (loads, traffic.n_flows, traffic.total_bytes)
        return cache[j]

    has_nodes = np.array([len(a) > 0 for a in allocs], bool)
    skipped = set(skip)
    todo = [(i, t) for i, t in enumerate(times) if i not in skipped]
    for i, t in todo if progress is None else progress(todo):
        running = np.flatnonzero((start <= t) & (t < end) & has_nodes)
        if len(running) == 0:
            yield i, None
            continue
        got = [loads_of(int(j)) for j in running]
        res = exposure(ft, [g[0] for g in got])
        by_level = np.asarray(res.shared_by_level)
        shared = np.asarray(res.shared)
        cls = np.asarray(ft.link_class)
        inst_shared = {c: int(shared[cls == c].sum()) for c in classes}
        stacked = np.stack([g[0] for g in got]).astype(np.float64)
        on_shared = np.where(shared[None, :], stacked, 0.0)
        yield i, pl.DataFrame(
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
                **{f"shared_{name}": by_level[:, c].astype(np.int32) for c, name in classes.items()},
                "shared_share": np.asarray(res.shared_share, np.float64),
                "exposed": np.asarray(res.shared_links) > 0,
                **{f"instant_shared_{name}": np.full(len(running), inst_shared[c], np.int32)
                   for c, name in classes.items()},
                **{f"traffic_{name}": stacked[:, cls == c].sum(axis=1) for c, name in classes.items()},
                **{f"shared_traffic_{name}": on_shared[:, cls == c].sum(axis=1) for c, name in classes.items()},
            }
        )


def hop_class_columns(topo: Topology) -> dict[int, str]:
    """Column suffix of each inter-switch link class (class index >= 1): ``A-B`` becomes
    ``a_b`` (a fat-tree's classes give the long-standing column names), ``x+`` ``xp``, ``x-`` ``xm``."""
    def column(name: str) -> str:
        name = name.lower()
        if name.endswith(("+", "-")):
            name = name[:-1] + ("p" if name.endswith("+") else "m")
        return name.replace("-", "_")

    return {c: column(n) for c, n in enumerate(topo.link_class_names) if c >= 1}


def schema(topo: Topology) -> dict[str, pl.DataType]:
    """Columns and dtypes of the interference table on ``topo``."""
    per_class = {f"shared_{n}": pl.Int32 for n in hop_class_columns(topo).values()}
    instant = {f"instant_shared_{n}": pl.Int32 for n in hop_class_columns(topo).values()}
    return {
        "instant": pl.Int32, "t_s": pl.Float64, "running_jobs": pl.Int32, "job_id": pl.Int64,
        "nodes": pl.Int32, "job_type": pl.String, "pattern": pl.String, "flows": pl.Int64,
        "bytes": pl.Float64, "links_used": pl.Int32, "shared_links": pl.Int32,
        **per_class, "shared_share": pl.Float64, "exposed": pl.Boolean, **instant,
        **{f"traffic_{n}": pl.Float64 for n in hop_class_columns(topo).values()},
        **{f"shared_traffic_{n}": pl.Float64 for n in hop_class_columns(topo).values()},
    }


def write_atomic(table: pl.DataFrame, path: str | Path) -> Path:
    """Write ``table`` to ``path`` as parquet, atomically."""
    return atomic_write(path, lambda p: table.write_parquet(p))


def summary_lines(table: pl.DataFrame) -> list[str]:
    """Human-readable summary of an interference table (per inter-switch link class)."""
    if table.is_empty():
        return ["no job was running at the sampled instants"]
    rows = len(table)
    exposed = int(table["exposed"].sum())
    jobs = table["job_id"].n_unique()
    jobs_exposed = table.filter(pl.col("exposed"))["job_id"].n_unique()
    classes = [c[len("instant_shared_"):] for c in table.columns if c.startswith("instant_shared_")]
    per_instant = table.group_by("instant").agg(
        pl.len().alias("running"),
        pl.col("exposed").sum().alias("exposed"),
        *(pl.col(f"instant_shared_{c}").first().alias(c) for c in classes),
    )
    by_class = ", ".join(f"{c} mean {per_instant[c].mean():.1f} (max {per_instant[c].max()})" for c in classes)
    per_job = ", ".join(f"{c} {_mean_exposed(table, f'shared_{c}'):.1f}" for c in classes)
    lines = [
        f"instants with running jobs: {per_instant.height}; running jobs per instant: "
        f"mean {per_instant['running'].mean():.1f}, max {per_instant['running'].max()}",
        f"job-instants exposed: {exposed}/{rows} ({exposed / rows:.1%}); "
        f"jobs exposed at least once: {jobs_exposed}/{jobs}",
        f"links shared by >1 job per instant: {by_class}",
    ]
    if exposed:
        lines += [
            f"shared links per exposed job-instant (mean): total {_mean_exposed(table, 'shared_links'):.1f}, {per_job}",
            f"traffic share on shared links (mean over exposed job-instants): {_mean_exposed(table, 'shared_share'):.3f}",
        ]
    else:  # a mean over no job-instant has no value (it printed 0)
        lines.append("shared links and their traffic share: none (no job-instant was exposed)")
    by_pattern = (
        table.group_by("pattern")
        .agg(pl.len().alias("n"), pl.col("exposed").mean().alias("exposed"), pl.col("shared_share").mean().alias("share"))
        .sort("pattern")
    )
    for name, n, exp, share in by_pattern.iter_rows():
        lines.append(f"  {name:<18} job-instants {n:>6}  exposed {exp:6.1%}  shared share (mean over all) {share:.3f}")
    return lines


def _mean_exposed(table: pl.DataFrame, col: str) -> float:
    sel = table.filter(pl.col("exposed"))[col]
    return float(sel.mean()) if len(sel) else 0.0


def _output_path(run_dir: Path, out: str | None) -> Path:
    """Where the table goes: ``RUN_DIR/interference.parquet`` or ``--out``, which must be a
    ``.parquet`` file inside the run directory or a ``results/`` tree (missing folders on the
    way are made at the write; a file on the way is refused), and not one of the run's own
    files."""
    if out is None:
        return run_dir / OUTPUT
    path = Path(out)
    resolved, run = path.resolve(), run_dir.resolve()
    if path.suffix != ".parquet":
        raise ValueError(f"--out {out}: must be a .parquet file")
    if resolved in {run / name for name in ("jobs.parquet", "utilization.parquet")}:
        raise ValueError(f"--out {out}: would overwrite the run's own {path.name}")
    if not paths.under_results(path.parent, also=run_dir):
        raise ValueError(f"--out {out}: must lie in the run directory or under a results/ directory")
    # A missing folder is made at the write (as report's --out); one taken by a file is refused.
    taken = next((p for p in (resolved.parent, *resolved.parent.parents) if p.exists()), None)
    if taken is not None and not taken.is_dir():
        raise ValueError(f"--out {out}: {taken} is a file, not a directory")
    return path


def _check_flows(jobs: pl.DataFrame, mix: Mapping[str, float]) -> None:
    """Before any work: one line when a pattern of the mix would give a job of the run more
    flows (or a larger array) than one job's traffic may have
    (:func:`fattorus.analysis.patterns.check_flows`); it ran out of memory after minutes
    (session 44). Every job size is checked (:func:`fattorus.analysis.patterns.first_refused`)."""
    sizes = jobs.select(pl.col("alloc").list.len().fill_null(0).alias("n"), pl.col("job_id"))
    first = dict(sizes.filter(pl.col("n") >= 2).unique("n", keep="first", maintain_order=True).iter_rows())
    for name in mix:
        refused = patterns.first_refused(name, first)
        if refused is not None:
            n, err = refused
            raise ValueError(f"--pattern-mix: {err} (the run's job {first[n]} has {n:,} nodes)")


def _instants(ft: Topology, jobs: pl.DataFrame, mix: Mapping[str, float], args: Any, parts: Path,
              kept: Mapping[int, tuple[int, pl.DataFrame]], columns: Mapping[str, pl.DataType]) -> instant_parts.Keeper | int:
    """Compute the instants ``kept`` lacks, writing them to ``parts`` as they finish; the
    keeper of what was written, or the exit status (130 on a Ctrl-C, its instants kept; 1
    when they cannot be written)."""
    from fattorus.args import out_of_memory, shown

    done = instant_parts.kept_instants(kept)
    if done:
        print(f"fattorus.interference: resuming: {len(done)} of {args.instants} instants kept in {parts}",
              file=sys.stderr, flush=True)
    keeper = instant_parts.Keeper(parts, columns)

    def keep_finished() -> int:
        """Write what is finished (what can be: a failed write keeps the parts written before)."""
        try:
            keeper.write()
        except (OSError, MemoryError):
            pass
        return len(done) + sum(end - first for first, (end, _) in keeper.written.items())

    try:
        for i, rows in instant_rows(ft, jobs, mix, seed=args.seed, instants=args.instants, skip=done,
                                    progress=lambda todo: shown(todo, "fattorus.interference", "instants", "instant")):
            keeper.add(i, rows)
        keeper.write()
    except KeyboardInterrupt:
        n = keep_finished()
        print(f"fattorus.interference: interrupted; {n} of {args.instants} instants kept in {parts}, "
              "re-run the same command to resume", file=sys.stderr)
        return INTERRUPTED
    except OSError as err:
        print(f"fattorus.interference: error: cannot write {parts}: {err.strerror or err}", file=sys.stderr)
        return 1
    except ValueError as err:  # a job's pattern refused (its traffic past what one job may have): one line
        keep_finished()
        print(f"fattorus.interference: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as err:  # the machine's limit: one line, what was finished kept
        if not out_of_memory(err):
            raise
        n = keep_finished()
        what = ' '.join(str(err).split())[:200] or 'an allocation failed'
        print(f"fattorus.interference: error: out of memory ({what}); {n} of {args.instants} instants kept in "
              f"{parts}: fewer or smaller jobs' patterns need less", file=sys.stderr)
        return 1
    return keeper


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0; 2 on a usage or data error; 1 when
    the table cannot be written)."""
    parser = OneLineParser(
        prog="python -m fattorus.interference",
        error_prefix="fattorus.interference",
        description="Link sharing between concurrently running jobs of a replay run (static routing).",
    )
    parser.add_argument("run_dir", help="replay run directory (jobs.parquet, summary.json)")
    parser.add_argument("--pattern-mix", default=DEFAULT_MIX,
                        help=f"comma-separated NAME[=WEIGHT] (default {DEFAULT_MIX}); names: {', '.join(patterns.PATTERNS)}")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of pattern assignment, traffic and instants, 0 to 2^32 - 1 (default 0)")
    parser.add_argument("--instants", type=int, default=16,
                        help=f"number of sampled instants, 1 to {INSTANTS_MAX:,} (default 16)")
    parser.add_argument("--topo", default=None, help="the run's machine as a topology name or YAML file (default: "
                        "summary.json's config.topo); one other than the run's is refused")
    parser.add_argument("--out", default=None, help=f"output .parquet file in the run directory or under a "
                        f"results/ directory (default RUN_DIR/{OUTPUT})")
    args = parser.parse_args(argv)
    try:
        if not 1 <= args.instants <= INSTANTS_MAX:
            raise ValueError(f"--instants must be from 1 to {INSTANTS_MAX:,}, got {args.instants}")
        if not 0 <= args.seed <= SEED_MAX:
            raise ValueError(f"--seed must be from 0 to {SEED_MAX}, got {args.seed}")
        target = _output_path(Path(args.run_dir), args.out)
        mix = parse_mix(args.pattern_mix)
        ft, jobs = load_run(args.run_dir, args.topo)
        _check_flows(jobs, mix)
        parts = instant_parts.folder_for(target)
        import jax

        record = instant_parts.settings(Path(args.run_dir) / "jobs.parquet", ft, mix, args.seed, args.instants,
                                        jax.default_backend())
    except (RunDirError, ValueError, OSError) as err:
        print(f"fattorus.interference: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    columns = schema(ft)
    try:
        kept = instant_parts.open_kept(parts, record, columns)
    except instant_parts.OtherSettings as err:  # before any work
        print(f"fattorus.interference: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # where the table and its kept instants go cannot be written
        print(f"fattorus.interference: error: cannot write {target}: {err.strerror or err} (making {parts}, where "
              "its finished instants are kept while it runs)", file=sys.stderr)
        return 1
    code = _instants(ft, jobs, mix, args, parts, kept, columns)
    if isinstance(code, int):
        return code
    table = instant_parts.table({**kept, **code.written}, columns)
    try:
        out = write_atomic(table, target)
    except OSError as err:  # the table was made and could not be kept: exit 1, naming the file asked for
        print(f"fattorus.interference: error: cannot write {target}: {err.strerror or err}; its {args.instants} "
              f"instant{'s are' if args.instants != 1 else ' is'} kept in {parts}: the same command writes it without computing them again",
              file=sys.stderr)
        return 1
    instant_parts.remove(parts)  # the table holds every instant now
    print(f"{ft.name}: {len(jobs)} jobs, {args.instants} instants, mix {mix}, seed {args.seed}")
    for line in summary_lines(table):
        print(line)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    from fattorus.args import run_piped

    interrupt.exit_with(run_piped(lambda: interrupt.run("fattorus.interference", main)))  # quiet, exit 141, when stdout's reader closes early
