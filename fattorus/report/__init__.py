"""Report: the fat-tree paper's Figures 7-10 and Table I from replay run directories.

``python -m fattorus.report RESULTS_DIR [--out OUT_DIR]`` finds every run directory under
``RESULTS_DIR`` (a directory holding ``summary.json``, ``jobs.parquet`` and
``utilization.parquet``, see ``docs/outputs.md``) and writes into ``OUT_DIR`` (default
``RESULTS_DIR/report``):

* ``fig7_aph_by_size.{png,svg}``: APH by job-size bin, one panel per workload (workload and
  topology), one box per run label; box = p25/median/p75, whiskers = min/max (as the paper),
  dashed line = ideal APH of the same jobs (median over the jobs of each job's ideal).
* ``fig8_utilization.{png,svg}``: per-minute utilization per workload and run label
  (box = p25/median/p75, whiskers = p5/p95, dot = mean; seeds pooled).
* ``fig9_makespan.{png,svg}``: makespan (hours) per workload and run label, mean over seeds
  with a +-1 std error bar.
* ``fig10_wait_by_size.{png,svg}``: mean wait (hours) by size bin and overall.
* ``table1.csv`` / ``table1.md``: Table I analog, mean wait (hours), rows = workload,
  columns = run label; mean over seeds, with std and the number of runs.
* ``runs.csv``: one row per run (:func:`load_runs`).
* ``report.html``: one self-contained page (PNGs as base64 data URIs, Table I, every run's
  configuration).

Labels: policy ``to`` -> ``TO``, ``ta`` -> ``TA``, other policies upper-cased; a speedup
scenario other than ``none`` is appended in the paper's spelling (``TA x5``, ``TA V1``).
Workload label: ``{name}-{scale}x on {topo}`` (``atlas-2x on cab``; no ``-1x``); when runs
with the same label differ in time window or scheduler, that is appended so they are never
averaged together as seeds.

Per-run numbers come from the parquet files, not from ``summary.json`` statistics: mean wait
is the mean of ``wait_s`` over replayed jobs, makespan is ``max(end_s) - min(submit_s)``,
utilization is the mean of the per-minute samples. All times in the outputs are hours.

Notebook use::

    from fattorus.report import load_runs, table1
    runs = load_runs("results")
    table1(runs)
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from fattorus.files import atomic_write

RUN_FILES = ("summary.json", "jobs.parquet", "utilization.parquet")
DEFAULT_EDGES = (18, 64, 256, 1024)
"""Upper edges (nodes) of the default size bins 1-18, 19-64, 65-256, 257-1024, >1024."""
LABEL_ORDER = ("TO", "TA", "TA x5", "TA x10", "TA x20", "TA V1", "TA V2")
SECONDS_PER_HOUR = 3600.0
KNOWN_TOPOS = {"cab": (18, 18, 4), "pinot": (18, 18, 8), "ft44": (22, 22, 22)}
"""Fallback ``(k nodes per leaf, L leaves per pod, P pods)`` when ``conf/topo`` is missing."""
FIGURES = (
    ("fig7_aph_by_size", "Figure 7 analog: average pairwise hops by job size"),
    ("fig8_utilization", "Figure 8 analog: system utilization"),
    ("fig9_makespan", "Figure 9 analog: makespan"),
    ("fig10_wait_by_size", "Figure 10 analog: mean wait by job size"),
)


class ReportError(Exception):
    """A problem with the inputs, reported as one line and exit code 2."""


# Discovery and labels ---------------------------------------------------------------------
def find_run_dirs(results_dir: str | os.PathLike) -> list[Path]:
    """Every directory under ``results_dir`` (itself included) holding all of :data:`RUN_FILES`, sorted."""
    root = Path(results_dir)
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if all(name in filenames for name in RUN_FILES):
            found.append(Path(dirpath))
    return sorted(found)


def scenario_spelling(speedup: str | None) -> str:
    """The paper's spelling of a speedup scenario (``v1`` -> ``V1``, ``x5`` -> ``x5``); ``""`` for none."""
    name = "" if speedup is None else str(speedup).strip()
    if name.lower() in ("", "none", "null"):
        return ""
    if name.lower() in ("v1", "v2"):
        return name.upper()
    return name


def run_label(policy: str, speedup: str | None = None) -> str:
    """Column label of a run: ``TO``, ``TA``, ``TA x5``, ``TA V2``, ``TREE_BESTFIT``, ..."""
    base = str(policy).strip().upper()
    scenario = scenario_spelling(speedup)
    return f"{base} {scenario}" if scenario else base


def label_rank(label: str) -> tuple[int, str]:
    """Sort key putting labels in the paper's order (:data:`LABEL_ORDER`), then others by name."""
    if label in LABEL_ORDER:
        return (LABEL_ORDER.index(label), "")
    return (len(LABEL_ORDER), label)


def order_labels(labels: Iterable[str]) -> list[str]:
    """Distinct labels in report order."""
    return sorted(set(labels), key=label_rank)


def topo_name(topo: Any) -> str:
    """Name of the ``config.topo`` entry (a name string, or a mapping with a ``name``)."""
    if isinstance(topo, Mapping):
        return str(topo.get("name", "?"))
    return str(topo)


def workload_label(config: Mapping[str, Any]) -> str:
    """Row label of a run's workload: ``atlas-2x on cab`` (``atlas on cab`` at scale 1)."""
    workload = config.get("workload") or {}
    if not isinstance(workload, Mapping):
        workload = {"name": workload}
    name = str(workload.get("name", "?"))
    scale = workload.get("scale", 1)
    if scale not in (None, 1, 1.0):
        name = f"{name}-{float(scale):g}x"
    return f"{name} on {topo_name(config.get('topo', '?'))}"


# Bins and ideal APH --------------------------------------------------------------------------
def bin_labels(edges: Sequence[int] = DEFAULT_EDGES) -> list[str]:
    """Labels of the size bins with upper edges ``edges``: ``1-18``, ..., ``>1024`` (as summary.json)."""
    labels, lo = [], 1
    for hi in edges:
        labels.append(f"{lo}-{hi}")
        lo = hi + 1
    return labels + [f">{edges[-1]}"]


def bin_index(column: str = "nodes", edges: Sequence[int] = DEFAULT_EDGES) -> pl.Expr:
    """Polars expression: index of the size bin of each job (0 for ``nodes <= edges[0]``)."""
    return pl.sum_horizontal([(pl.col(column) > e).cast(pl.Int32) for e in edges]).alias("bin")


def ideal_aph(n: int | np.ndarray, nodes_per_leaf: int, nodes_per_pod: int) -> np.ndarray:
    """Ideal APH (hops) of ``n``-node jobs: fill one leaf, then one pod, then pods; 0 for ``n < 2``."""
    n = np.asarray(n, dtype=np.int64)
    k, p = nodes_per_leaf, nodes_per_pod
    s_leaf = (n // k) * k * k + (n % k) ** 2
    s_pod = (n // p) * p * p + (n % p) ** 2
    total = 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)
    pairs = n * (n - 1)
    return np.where(n >= 2, total / np.maximum(pairs, 1), 0.0)


def topo_shape(topo: Any) -> tuple[int, int, int] | None:
    """``(k nodes per leaf, p nodes per pod, N nodes)`` of a fat-tree, or None when unknown."""
    try:
        from fattorus.topology import fattree

        ft = fattree.from_config(dict(topo)) if isinstance(topo, Mapping) else fattree.load(str(topo))
        return ft.nodes_per_leaf, ft.nodes_per_pod, ft.n_nodes
    except Exception:  # noqa: BLE001 - any failure means "use the fallback table"
        shape = KNOWN_TOPOS.get(topo_name(topo))
        if shape is None:
            return None
        k, leaves, pods = shape
        return k, k * leaves, k * leaves * pods


def ideal_aph_expr(n: pl.Expr, k: pl.Expr, p: pl.Expr) -> pl.Expr:
    """Polars form of :func:`ideal_aph` for a column of node counts and per-row ``k``, ``p``."""
    n, k, p = n.cast(pl.Int64), k.cast(pl.Int64), p.cast(pl.Int64)
    s_leaf = (n // k) * k * k + (n % k) * (n % k)
    s_pod = (n // p) * p * p + (n % p) * (n % p)
    total = 2 * (s_pod - s_leaf) + 4 * (n * n - s_pod)
    return pl.when(n >= 2).then(total / (n * (n - 1))).otherwise(0.0)


def topo_shapes(runs: pl.DataFrame) -> pl.DataFrame:
    """``workload -> (k, p)`` for the workloads whose topology is a known fat-tree."""
    pairs = runs.select("workload", "topo").unique(maintain_order=True)
    rows = [(w, *shape[:2]) for w, t in pairs.iter_rows() if (shape := topo_shape(t)) is not None]
    return pl.DataFrame(rows, schema={"workload": pl.String, "k": pl.Int64, "p": pl.Int64}, orient="row")


# Reading runs ------------------------------------------------------------------------------
def one_line(err: BaseException) -> str:
    """An exception as a single line (for the one-line error contract)."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


def read_summary(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a run, checked to hold a ``config`` with ``policy`` and ``topo``."""
    path = run_dir / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: unreadable: {one_line(err)}") from None
    config = summary.get("config") if isinstance(summary, dict) else None
    if not isinstance(config, dict) or "policy" not in config or "topo" not in config:
        raise ReportError(f"{path}: no config.policy / config.topo (see docs/outputs.md)")
    return summary


def job_metrics(path: Path) -> dict[str, Any]:
    """Mean/median wait (h), makespan (h), mean APH and job count of one ``jobs.parquet``."""
    frame = (
        pl.scan_parquet(path)
        .select(
            jobs=pl.len(),
            wait_mean_h=pl.col("wait_s").mean() / SECONDS_PER_HOUR,
            wait_median_h=pl.col("wait_s").median() / SECONDS_PER_HOUR,
            makespan_h=(pl.col("end_s").max() - pl.col("submit_s").min()) / SECONDS_PER_HOUR,
            aph_mean=pl.col("aph").mean(),
        )
        .collect()
    )
    return frame.row(0, named=True)


def utilization_metrics(path: Path) -> dict[str, Any]:
    """Mean and median of the per-minute utilization (fraction 0..1) of one ``utilization.parquet``."""
    frame = (
        pl.scan_parquet(path)
        .select(util_mean=pl.col("utilization").mean(), util_median=pl.col("utilization").median())
        .collect()
    )
    return frame.row(0, named=True)


def skipped_total(counts: Mapping[str, Any]) -> int | None:
    """Total of ``counts.skipped`` (a number or a mapping reason -> number)."""
    skipped = counts.get("skipped")
    if isinstance(skipped, Mapping):
        return int(sum(v for v in skipped.values() if isinstance(v, (int, float))))
    return int(skipped) if isinstance(skipped, (int, float)) else None


def run_row(run_dir: Path, root: Path) -> dict[str, Any]:
    """One row of :func:`load_runs` for ``run_dir``; raises :class:`ReportError` if unreadable."""
    summary = read_summary(run_dir)
    config = summary["config"]
    workload = config.get("workload") if isinstance(config.get("workload"), Mapping) else {}
    counts = summary.get("counts") if isinstance(summary.get("counts"), Mapping) else {}
    try:
        jobs = job_metrics(run_dir / "jobs.parquet")
        util = utilization_metrics(run_dir / "utilization.parquet")
    except Exception as err:  # noqa: BLE001 - polars raises several kinds; all mean "unreadable"
        raise ReportError(f"{run_dir}: unreadable parquet: {one_line(err)}") from None
    seed = config.get("seed")
    return {
        "run": str(run_dir.relative_to(root)) if run_dir != root else ".",
        "path": str(run_dir.resolve()),
        "label": run_label(config["policy"], config.get("speedup")),
        "workload": workload_label(config),
        "topo": topo_name(config["topo"]),
        "policy": str(config["policy"]),
        "speedup": str(config.get("speedup", "none")),
        "sched": str(config.get("sched", "")),
        "seed": int(seed) if isinstance(seed, (int, float)) else None,
        "workload_name": str(workload.get("name", "?")),
        "scale": float(workload.get("scale", 1) or 1),
        "window_start_days": workload.get("window_start_days"),
        "window_days": workload.get("window_days"),
        "n_nodes": summary.get("n_nodes"),
        **jobs,
        **util,
        "read": counts.get("read"),
        "replayed": counts.get("replayed"),
        "skipped": skipped_total(counts),
        "replay_wall_s": summary.get("replay_wall_s"),
        "config": json.dumps(config, sort_keys=True),
        "counts": json.dumps(counts, sort_keys=True),
    }


RUNS_SCHEMA = {
    "run": pl.String, "path": pl.String, "label": pl.String, "workload": pl.String,
    "topo": pl.String, "policy": pl.String, "speedup": pl.String, "sched": pl.String,
    "seed": pl.Int64, "workload_name": pl.String, "scale": pl.Float64,
    "window_start_days": pl.Float64, "window_days": pl.Float64, "n_nodes": pl.Int64,
    "jobs": pl.Int64, "wait_mean_h": pl.Float64, "wait_median_h": pl.Float64,
    "makespan_h": pl.Float64, "aph_mean": pl.Float64, "util_mean": pl.Float64,
    "util_median": pl.Float64, "read": pl.Int64, "replayed": pl.Int64, "skipped": pl.Int64,
    "replay_wall_s": pl.Float64, "config": pl.String, "counts": pl.String,
}  # fmt: skip
"""Columns of :func:`load_runs` (times in hours, utilization as a fraction)."""


def progress(items: Sequence[Any], desc: str, every_s: float = 5.0) -> Iterator[Any]:
    """Iterate ``items`` showing progress on stderr: tqdm on a terminal, else a line every ``every_s``."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        yield from tqdm(items, desc=desc, unit="run", leave=False)
        return
    last = time.monotonic()
    for i, item in enumerate(items):
        now = time.monotonic()
        if now - last >= every_s:
            print(f"fattorus.report: {desc} {i}/{len(items)}", file=sys.stderr, flush=True)
            last = now
        yield item


def disambiguate(runs: pl.DataFrame) -> pl.DataFrame:
    """Append the time window and/or scheduler to workload labels shared by runs that differ in them."""
    window = pl.format("days {}+{}", pl.col("window_start_days"), pl.col("window_days"))
    for extra in (window.fill_null("?"), pl.col("sched").fill_null("?")):
        distinct = extra.n_unique().over("workload") > 1
        runs = runs.with_columns(
            workload=pl.when(distinct).then(pl.format("{} [{}]", "workload", extra)).otherwise("workload")
        )
    return runs


def load_runs(results_dir: str | os.PathLike, *, skip_bad: bool = False) -> pl.DataFrame:
    """One row per run directory under ``results_dir`` (columns :data:`RUNS_SCHEMA`).

    Sorted by topology, workload, label (paper order) and seed. Raises :class:`ReportError`
    when there is no run or, unless ``skip_bad`` (then a warning on stderr), a run is unreadable.
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory")
    run_dirs = find_run_dirs(root)
    if not run_dirs:
        raise ReportError(f"{root}: no run directories (none holds {', '.join(RUN_FILES)})")
    rows = []
    for run_dir in progress(run_dirs, "reading runs"):
        try:
            rows.append(run_row(run_dir, root))
        except ReportError as err:
            if not skip_bad:
                raise
            print(f"fattorus.report: warning: skipped {err}", file=sys.stderr)
    if not rows:
        raise ReportError(f"{root}: no readable run directories")
    runs = pl.DataFrame(rows, schema=RUNS_SCHEMA, strict=False)
    runs = disambiguate(runs)
    rank = pl.col("label").replace_strict(
        {label: i for i, label in enumerate(LABEL_ORDER)}, default=len(LABEL_ORDER), return_dtype=pl.Int64
    )
    return runs.sort(["topo", "workload", rank, "label", "seed", "run"], nulls_last=True)


def warn_duplicate_seeds(runs: pl.DataFrame) -> None:
    """Warn on stderr when runs of one (workload, label) share a seed (a re-run counted twice)."""
    dup = runs.filter(pl.col("seed").is_not_null()).group_by("workload", "label", "seed").len().filter(pl.col("len") > 1)
    for workload, label, seed, n in dup.sort("workload", "label", "seed").iter_rows():
        print(f"fattorus.report: warning: {n} runs of {workload} / {label} have seed {seed}", file=sys.stderr)


# Aggregates --------------------------------------------------------------------------------
def workload_order(runs: pl.DataFrame) -> list[str]:
    """Workloads in the order of ``runs`` (as :func:`load_runs` sorts them)."""
    return runs["workload"].unique(maintain_order=True).to_list()


def over_seeds(runs: pl.DataFrame, column: str) -> pl.DataFrame:
    """Mean, sample std and run count of ``column`` per (workload, label)."""
    return runs.group_by("workload", "label", maintain_order=True).agg(
        mean=pl.col(column).mean(), std=pl.col(column).std(), n=pl.col(column).count()
    )


def table1(runs: pl.DataFrame) -> pl.DataFrame:
    """Table I analog: mean wait (hours), one row per workload, one column per run label.

    A cell is the mean over the runs (seeds) of that workload and label of each run's mean
    wait; ``"{label} std"`` holds the sample std over runs (null for one run) and
    ``"{label} n"`` the number of runs. Columns: ``workload``, the means in label order, the
    stds, the counts.
    """
    stats = over_seeds(runs, "wait_mean_h")
    labels = order_labels(runs["label"])
    table = pl.DataFrame({"workload": workload_order(runs)})
    for suffix, field in (("", "mean"), (" std", "std"), (" n", "n")):
        for label in labels:
            part = stats.filter(pl.col("label") == label).select("workload", pl.col(field).alias(label + suffix))
            table = table.join(part, on="workload", how="left", maintain_order="left")
    return table


def table1_labels(table: pl.DataFrame) -> list[str]:
    """Run labels (mean columns) of a :func:`table1` frame."""
    return [c for c in table.columns[1:] if not c.endswith((" std", " n"))]


def fmt_hours(value: float | None) -> str:
    """Hours in the paper's style: 3 significant-ish figures (``295``, ``12.3``, ``0.98``); ``—`` if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if 0 < abs(value) < 0.001:
        return "<0.001"
    if 0 < abs(value) < 0.1:
        return f"{value:.2g}"  # a lightly loaded machine: keep two figures, not "0.00"
    return f"{value:.2f}"


def table1_cells(table: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of Table I: ``mean`` or ``mean ± std (n=…)`` when several runs."""
    labels = table1_labels(table)
    body = []
    for row in table.iter_rows(named=True):
        cells = [row["workload"]]
        for label in labels:
            n = row[f"{label} n"]
            text = fmt_hours(row[label])
            if n and n > 1:
                text += f" ± {fmt_hours(row[f'{label} std'])} (n={n})"
            cells.append(text)
        body.append(cells)
    return ["workload", *labels], body


def table1_markdown(table: pl.DataFrame) -> str:
    """Table I as GitHub Markdown."""
    header, body = table1_cells(table)
    lines = [
        "Mean wait (hours); mean ± sample std over n runs (seeds) where several exist.",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def jobs_scan(runs: pl.DataFrame, columns: Sequence[str]) -> pl.LazyFrame:
    """Lazy concatenation of ``columns`` of every run's jobs.parquet with ``workload`` and ``label``."""
    return _scan(runs, "jobs.parquet", columns)


def utilization_scan(runs: pl.DataFrame) -> pl.LazyFrame:
    """Lazy concatenation of every run's utilization samples with ``workload`` and ``label``."""
    return _scan(runs, "utilization.parquet", ["utilization"])


def _scan(runs: pl.DataFrame, filename: str, columns: Sequence[str]) -> pl.LazyFrame:
    parts = [
        pl.scan_parquet(Path(path) / filename)
        .select(columns)
        .with_columns(rid=pl.lit(i, pl.Int64), workload=pl.lit(workload), label=pl.lit(label))
        for i, (path, workload, label) in enumerate(runs.select("path", "workload", "label").iter_rows())
    ]
    return pl.concat(parts, how="vertical_relaxed")


def aph_box_stats(runs: pl.DataFrame, edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:
    """Min/p25/median/p75/max APH (hops) per (workload, label, size bin), jobs of all seeds pooled.

    ``ideal`` is the median over the same jobs of each job's ideal APH (null when the
    topology is not a known fat-tree), so a box is compared with the ideal of its own jobs.
    """
    aph = pl.col("aph")
    return (
        jobs_scan(runs, ["nodes", "aph"])
        .filter(aph.is_not_null() & aph.is_not_nan())
        .join(topo_shapes(runs).lazy(), on="workload", how="left")
        .with_columns(bin_index("nodes", edges), ideal=ideal_aph_expr(pl.col("nodes"), pl.col("k"), pl.col("p")))
        .group_by("workload", "label", "bin")
        .agg(
            jobs=pl.len(), min=aph.min(), p25=aph.quantile(0.25, "linear"), median=aph.median(),
            p75=aph.quantile(0.75, "linear"), max=aph.max(), ideal=pl.col("ideal").median(),
        )  # fmt: skip
        .collect()
    )


def utilization_box_stats(runs: pl.DataFrame) -> pl.DataFrame:
    """p5/p25/median/p75/p95/mean of per-minute utilization per (workload, label), seeds pooled."""
    u = pl.col("utilization")
    return (
        utilization_scan(runs)
        .group_by("workload", "label")
        .agg(
            p05=u.quantile(0.05, "linear"), p25=u.quantile(0.25, "linear"), median=u.median(),
            p75=u.quantile(0.75, "linear"), p95=u.quantile(0.95, "linear"), mean=u.mean(),
        )  # fmt: skip
        .collect()
    )


def wait_by_bin(runs: pl.DataFrame, edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:
    """Mean wait (hours) per (workload, label, size bin): mean over runs of each run's bin mean.

    Bin ``len(edges) + 1`` is "all jobs" (each run's overall mean wait, as Table I).
    """
    per_run = (
        jobs_scan(runs, ["nodes", "wait_s"])
        .with_columns(bin_index("nodes", edges))
        .group_by("rid", "workload", "label", "bin")
        .agg(wait_h=pl.col("wait_s").mean() / SECONDS_PER_HOUR)
        .collect()
    )
    overall = runs.with_row_index("rid").select(
        pl.col("rid").cast(pl.Int64), "workload", "label",
        pl.lit(len(edges) + 1, pl.Int32).alias("bin"), pl.col("wait_mean_h").alias("wait_h"),
    )  # fmt: skip
    both = pl.concat([per_run.with_columns(pl.col("bin").cast(pl.Int32)), overall], how="vertical_relaxed")
    w = pl.col("wait_h")
    return both.group_by("workload", "label", "bin").agg(mean=w.mean(), std=w.std(), n=w.count())


# Figures -----------------------------------------------------------------------------------
def label_colors(labels: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per label (tab10 in label order)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {label: cmap(i % 10) for i, label in enumerate(labels)}


def new_figure(n_panels: int, panel_w: float, panel_h: float, ncols: int = 2):
    """A matplotlib Figure (no pyplot, no global backend) with a grid of ``n_panels`` axes."""
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(n_panels / ncols)
    fig = Figure(figsize=(panel_w * ncols, panel_h * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def offsets(n: int, width: float = 0.8) -> tuple[np.ndarray, float]:
    """Centre offsets of ``n`` side-by-side items in a group of total ``width``, and each item's width."""
    each = width / max(n, 1)
    return (np.arange(n) - (n - 1) / 2) * each, each


def legend_handles(labels: Sequence[str], colors: Mapping[str, Any]) -> list[Any]:
    """Coloured patches for a figure legend."""
    from matplotlib.patches import Patch

    return [Patch(facecolor=colors[label], edgecolor="black", label=label) for label in labels]


def draw_boxes(ax, stats: list[dict[str, Any]], positions: Sequence[float], width: float, color: Any) -> None:
    """Boxes from precomputed statistics (``bxp``), no fliers, filled with ``color``."""
    if not stats:
        return
    ax.bxp(
        stats, positions=list(positions), widths=width * 0.85, showfliers=False, patch_artist=True,
        showmeans=any("mean" in s for s in stats), manage_ticks=False,
        boxprops={"facecolor": color, "edgecolor": "black", "linewidth": 0.8},
        medianprops={"color": "black", "linewidth": 1.2},
        meanprops={"marker": "o", "markersize": 3, "markerfacecolor": "white", "markeredgecolor": "black"},
    )  # fmt: skip


def figure_aph(runs: pl.DataFrame, stats: pl.DataFrame, edges: Sequence[int]):
    """Figure 7 analog: APH box plots by size bin, one panel per workload, one box per label."""
    labels, colors, names = order_labels(runs["label"]), label_colors(order_labels(runs["label"])), bin_labels(edges)
    workloads = workload_order(runs)
    fig, axes = new_figure(len(workloads), 1.2 + 1.1 * len(names), 3.4)
    for ax, workload in zip(axes, workloads):
        here = stats.filter(pl.col("workload") == workload)
        shown = sorted(here["bin"].unique().to_list())
        here_labels = [lb for lb in labels if lb in set(here["label"])]
        offs, each = offsets(len(here_labels))
        for off, label in zip(offs, here_labels):
            rows = here.filter(pl.col("label") == label).sort("bin")
            boxes = [
                {"med": r["median"], "q1": r["p25"], "q3": r["p75"], "whislo": r["min"], "whishi": r["max"]}
                for r in rows.iter_rows(named=True)
            ]
            xs = [shown.index(b) + off for b in rows["bin"]]
            draw_boxes(ax, boxes, xs, each, colors[label])
            for x, ideal in zip(xs, rows["ideal"]):
                if ideal is not None:
                    ax.hlines(ideal, x - each / 2, x + each / 2, colors="black", linestyles="dashed", linewidth=1)
        ax.set_xticks(range(len(shown)), [names[b] for b in shown])
        ax.set_xlim(-0.6, max(len(shown), 1) - 0.4)
        ax.set_ylim(-0.1, 4.2)
        ax.set(title=workload, xlabel="nodes requested", ylabel="average pairwise hops")
        if not shown:
            ax.text(0.5, 0.5, "no jobs", transform=ax.transAxes, ha="center")
    handles = legend_handles(labels, colors)
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], color="black", linestyle="dashed", label="ideal APH (median over the same jobs)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 5), fontsize="small")
    fig.suptitle("APH by job size: box p25–p75, whiskers min–max")
    return fig


def figure_utilization(runs: pl.DataFrame, stats: pl.DataFrame):
    """Figure 8 analog: utilization box plots, one group per workload, one box per label."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    fig, (ax,) = new_figure(1, 1.5 + 0.5 * len(workloads) * max(len(labels), 2), 3.6)
    offs, each = offsets(len(labels))
    for off, label in zip(offs, labels):
        rows = stats.filter(pl.col("label") == label)
        boxes, pos = [], []
        for r in rows.iter_rows(named=True):
            boxes.append({"med": r["median"], "q1": r["p25"], "q3": r["p75"], "whislo": r["p05"],
                          "whishi": r["p95"], "mean": r["mean"]})  # fmt: skip
            pos.append(workloads.index(r["workload"]) + off)
        draw_boxes(ax, boxes, pos, each, colors[label])
    ax.set_xticks(range(len(workloads)), workloads, rotation=20, ha="right")
    ax.set_xlim(-0.6, len(workloads) - 0.4)
    ax.set_ylim(0, 1.05)
    ax.set(ylabel="utilization (fraction of nodes busy)", title="Utilization per minute: box p25–p75, whiskers p5–p95, dot mean")
    fig.legend(handles=legend_handles(labels, colors), loc="outside right upper", fontsize="small")
    return fig


def draw_bars(ax, stats: pl.DataFrame, groups: list[Any], group_col: str, labels: Sequence[str], colors) -> None:
    """Grouped bars of ``mean`` with ``std`` error bars: one group per value of ``group_col``."""
    offs, each = offsets(len(labels))
    for off, label in zip(offs, labels):
        rows = stats.filter(pl.col("label") == label)
        x = [groups.index(g) + off for g in rows[group_col]]
        err = [s if s is not None and n > 1 else 0.0 for s, n in zip(rows["std"], rows["n"])]
        ax.bar(x, rows["mean"].fill_null(0.0).to_list(), width=each * 0.9, yerr=err, capsize=2,
               color=colors[label], edgecolor="black", linewidth=0.5)  # fmt: skip
    ax.set_xlim(-0.6, len(groups) - 0.4)


def figure_makespan(runs: pl.DataFrame):
    """Figure 9 analog: makespan (hours) bars, one group per workload, one bar per label."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    fig, (ax,) = new_figure(1, 1.5 + 0.4 * len(workloads) * max(len(labels), 2), 3.6)
    draw_bars(ax, over_seeds(runs, "makespan_h"), workloads, "workload", labels, colors)
    ax.set_xticks(range(len(workloads)), workloads, rotation=20, ha="right")
    ax.set(ylabel="makespan (hours)", title="Makespan: mean over seeds, error bar ±1 std")
    fig.legend(handles=legend_handles(labels, colors), loc="outside right upper", fontsize="small")
    return fig


def figure_wait(runs: pl.DataFrame, stats: pl.DataFrame, edges: Sequence[int]):
    """Figure 10 analog: mean wait (hours) by size bin and overall, one panel per workload."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    names = bin_labels(edges) + ["all"]
    fig, axes = new_figure(len(workloads), 1.2 + 1.1 * len(names), 3.2)
    for ax, workload in zip(axes, workloads):
        here = stats.filter(pl.col("workload") == workload)
        shown = sorted(here["bin"].unique().to_list())
        here_labels = [lb for lb in labels if lb in set(here["label"])]
        draw_bars(ax, here, shown, "bin", here_labels, colors)
        ax.set_xticks(range(len(shown)), [names[b] for b in shown])
        ax.set(title=workload, xlabel="nodes requested", ylabel="mean wait (hours)")
    fig.legend(handles=legend_handles(labels, colors), loc="outside lower center", ncols=min(len(labels), 6), fontsize="small")
    fig.suptitle("Mean wait by job size: mean over seeds, error bar ±1 std")
    return fig


# Writing -----------------------------------------------------------------------------------
def save_figure(fig, out_dir: Path, stem: str, dpi: int = 110) -> bytes:
    """Write ``stem.png`` and ``stem.svg`` atomically; return the PNG bytes."""
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi)
    fig.savefig(svg, format="svg", metadata={"Date": None})
    atomic_write(out_dir / f"{stem}.png", png.getvalue())
    atomic_write(out_dir / f"{stem}.svg", svg.getvalue())
    return png.getvalue()


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one dict with dotted keys."""
    if not isinstance(data, Mapping):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def html_table(header: Sequence[str], body: Iterable[Sequence[Any]], cls: str = "") -> str:
    """An escaped HTML table."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if c is None else str(c))}</td>" for c in cells) + "</tr>"
        for cells in body
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def runs_table_cells(runs: pl.DataFrame) -> tuple[list[str], list[list[Any]]]:
    """Header and cells of the per-run configuration table (config + counts flattened)."""
    records = []
    for r in runs.iter_rows(named=True):
        record = {"run": r["run"], "label": r["label"], "workload": r["workload"]}
        record.update(flatten(json.loads(r["config"]), "config"))
        record.update(flatten(json.loads(r["counts"]), "counts"))
        record.update({
            "n_nodes": r["n_nodes"], "replay_wall_s": r["replay_wall_s"], "jobs": r["jobs"],
            "mean wait (h)": fmt_hours(r["wait_mean_h"]), "makespan (h)": fmt_hours(r["makespan_h"]),
            "mean utilization": None if r["util_mean"] is None else f"{r['util_mean']:.3f}",
        })  # fmt: skip
        records.append(record)
    header: list[str] = []
    for record in records:
        header += [k for k in record if k not in header]
    return header, [[rec.get(k) for k in header] for rec in records]


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:1em 0}
th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
.scroll{overflow-x:auto} .runs{font-size:11px}
img{max-width:100%;border:1px solid #ddd}
figcaption{color:#444;font-size:13px}
"""


def render_html(results_dir: Path, runs: pl.DataFrame, table: pl.DataFrame, pngs: Mapping[str, bytes]) -> str:
    """The self-contained report page: figures as data URIs, Table I, per-run configuration."""
    header, body = table1_cells(table)
    run_header, run_body = runs_table_cells(runs)
    figures = "".join(
        f'<figure id="{stem}"><img alt="{html.escape(title)}" src="data:image/png;base64,'
        f'{base64.b64encode(pngs[stem]).decode()}"><figcaption>{html.escape(title)} '
        f'(<a href="{stem}.svg">SVG</a>)</figcaption></figure>'
        for stem, title in FIGURES
        if stem in pngs
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>fattorus report</title>"
        f"<style>{CSS}</style></head><body>"
        f"<h1>fattorus report</h1><p>{len(runs)} runs under <code>{html.escape(str(results_dir))}</code>; "
        f"{runs['workload'].n_unique()} workloads; labels {html.escape(', '.join(order_labels(runs['label'])))}.</p>"
        "<h2>Table I analog: mean wait (hours)</h2>"
        "<p>Mean over runs (seeds) of each run's mean wait; ± sample std and n=runs where several.</p>"
        f"{html_table(header, body, 'table1')}"
        f"<h2>Figures</h2>{figures}"
        f"<h2>Runs</h2><div class='scroll'>{html_table(run_header, run_body, 'runs')}</div>"
        "</body></html>\n"
    )


def write_report(results_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None, *,
                 edges: Sequence[int] = DEFAULT_EDGES, skip_bad: bool = False) -> Path:  # fmt: skip
    """Read every run under ``results_dir`` and write the report files; return ``report.html``'s path."""
    root = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else root / "report"
    runs = load_runs(root, skip_bad=skip_bad)
    warn_duplicate_seeds(runs)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ReportError(f"{out}: cannot create output directory: {one_line(err)}") from None
    table = table1(runs)
    atomic_write(out / "table1.csv", table.write_csv())
    atomic_write(out / "table1.md", table1_markdown(table))
    atomic_write(out / "runs.csv", runs.drop("config", "counts").write_csv())
    try:
        aph_stats, util_stats, wait_stats = aph_box_stats(runs, edges), utilization_box_stats(runs), wait_by_bin(runs, edges)
    except Exception as err:  # noqa: BLE001 - schema mismatches across runs surface here
        raise ReportError(f"{root}: cannot combine runs: {one_line(err)}") from None
    figures = {
        "fig7_aph_by_size": lambda: figure_aph(runs, aph_stats, edges),
        "fig8_utilization": lambda: figure_utilization(runs, util_stats),
        "fig9_makespan": lambda: figure_makespan(runs),
        "fig10_wait_by_size": lambda: figure_wait(runs, wait_stats, edges),
    }
    pngs = {stem: save_figure(make(), out, stem) for stem, make in figures.items()}
    page = out / "report.html"
    atomic_write(page, render_html(root, runs, table, pngs))
    return page


def parse_edges(text: str) -> tuple[int, ...]:
    """``"18,64,256,1024"`` -> increasing positive bin edges (argparse type)."""
    try:
        edges = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bins must be comma-separated integers, got {text!r}") from None
    if not edges or edges[0] < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise argparse.ArgumentTypeError(f"bins must be increasing positive integers, got {text!r}")
    return edges


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m fattorus.report RESULTS_DIR [--out OUT_DIR] [--bins 18,64,256,1024] [--skip-bad]``."""
    parser = argparse.ArgumentParser(prog="python -m fattorus.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", help="directory searched recursively for run directories")
    parser.add_argument("--out", default=None, help="output directory (default RESULTS_DIR/report)")
    parser.add_argument("--bins", type=parse_edges, default=DEFAULT_EDGES, help="size-bin upper edges in nodes")
    parser.add_argument("--skip-bad", action="store_true", help="warn about and skip unreadable runs")
    args = parser.parse_args(argv)
    try:
        page = write_report(args.results_dir, args.out, edges=args.bins, skip_bad=args.skip_bad)
    except ReportError as err:
        print(f"fattorus.report: error: {err}", file=sys.stderr)
        return 2
    print(f"fattorus.report: wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
