"""The numbers behind Table I and each figure, as Polars frames.

Each statistic has a pure core over an in-memory (or lazy) table of jobs or samples, named
``*_of``, and a wrapper that feeds it every run's files through :mod:`fattorus.report.load`.
Groups are ``(workload, label)``: runs of one workload and label are seeds of one setting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from fattorus.report.labels import DEFAULT_EDGES, bin_index, order_labels
from fattorus.report.load import SECONDS_PER_HOUR, jobs_scan, utilization_scan

APH_AXIS_MIN_TOP = 1.0
"""Smallest top of the APH axis (hops), so a study of single-switch jobs still shows a scale."""


def workload_order(runs: pl.DataFrame) -> list[str]:
    """Workloads in the order of ``runs`` (as :func:`fattorus.report.load.load_runs` sorts them)."""
    return runs["workload"].unique(maintain_order=True).to_list()


def over_seeds(runs: pl.DataFrame, column: str) -> pl.DataFrame:
    """Mean, sample std (null for one run) and run count ``n`` of ``column`` per (workload, label)."""
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
    """Run labels (mean columns) of a :func:`table1` frame: the first third of the columns after
    ``workload`` (means, stds, counts in label order). By position, not by suffix: a label of
    its own ending in " n" or " std" (a study's arm named so) is a label too."""
    cols = table.columns[1:]
    return cols[: len(cols) // 3]


def aph_stats_of(jobs: pl.DataFrame | pl.LazyFrame, edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:
    """Min/p25/median/p75/max APH (hops) per (workload, label, size bin) of a table of jobs.

    ``jobs`` has ``workload``, ``label``, ``nodes``, ``aph`` and ``ideal_aph`` (hops; null
    where unknown). Jobs without an APH are left out. ``ideal`` is the median over the same
    jobs of each job's ideal APH, so a box is compared with the ideal of its own jobs; null
    when no job of the group has one. Quantiles interpolate linearly.
    """
    aph = pl.col("aph")
    return (
        jobs.lazy()
        .filter(aph.is_not_null() & aph.is_not_nan())
        .with_columns(bin_index("nodes", edges))
        .group_by("workload", "label", "bin")
        .agg(
            jobs=pl.len(), min=aph.min(), p25=aph.quantile(0.25, "linear"), median=aph.median(),
            p75=aph.quantile(0.75, "linear"), max=aph.max(), ideal=pl.col("ideal_aph").median(),
        )  # fmt: skip
        .sort("workload", "label", "bin")
        .collect()
    )


def aph_box_stats(runs: pl.DataFrame, edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:
    """:func:`aph_stats_of` over the jobs of every run in ``runs``, seeds pooled."""
    return aph_stats_of(jobs_scan(runs, ["nodes", "aph", "ideal_aph"]), edges)


def aph_axis_top(stats: pl.DataFrame) -> float:
    """Top of the APH axis (hops): the largest max or ideal APH in ``stats``, with headroom.

    From the data, not from a machine's diameter: a torus job can span many more hops than a
    fat-tree job. Rounded up to a whole hop plus a quarter so the top whisker stays clear of
    the frame; at least :data:`APH_AXIS_MIN_TOP`.
    """
    tops = [stats[c].cast(pl.Float64).drop_nans().max() for c in ("max", "ideal") if c in stats.columns]
    top = max((float(v) for v in tops if v is not None), default=0.0)
    return max(APH_AXIS_MIN_TOP, math.ceil(top) + 0.25)


def utilization_stats_of(samples: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """p5/p25/median/p75/p95/mean of per-minute utilization (fraction) per (workload, label).

    ``samples`` has ``workload``, ``label`` and ``utilization``; quantiles interpolate linearly.
    """
    u = pl.col("utilization")
    return (
        samples.lazy()
        .group_by("workload", "label")
        .agg(
            p05=u.quantile(0.05, "linear"), p25=u.quantile(0.25, "linear"), median=u.median(),
            p75=u.quantile(0.75, "linear"), p95=u.quantile(0.95, "linear"), mean=u.mean(),
        )  # fmt: skip
        .sort("workload", "label")
        .collect()
    )


def utilization_box_stats(runs: pl.DataFrame) -> pl.DataFrame:
    """:func:`utilization_stats_of` over the samples of every run in ``runs``, seeds pooled."""
    return utilization_stats_of(utilization_scan(runs))


def wait_stats_of(jobs: pl.DataFrame | pl.LazyFrame, overall: pl.DataFrame,
                  edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:  # fmt: skip
    """Mean wait (hours) per (workload, label, size bin): the mean over runs of each run's bin mean.

    ``jobs`` has ``rid`` (run id), ``workload``, ``label``, ``nodes`` and ``wait_s``
    (seconds); ``overall`` has ``rid``, ``workload``, ``label`` and ``wait_mean_h`` (each
    run's mean wait, hours), which becomes bin ``len(edges) + 1``, "all jobs" (as Table I).
    ``std`` is the sample std over runs (null for one run), ``n`` the number of runs.
    """
    per_run = (
        jobs.lazy()
        .with_columns(bin_index("nodes", edges))
        .group_by("rid", "workload", "label", "bin")
        .agg(wait_h=pl.col("wait_s").mean() / SECONDS_PER_HOUR)
        .collect()
    )
    all_jobs = overall.select(
        pl.col("rid").cast(pl.Int64), "workload", "label",
        pl.lit(len(edges) + 1, pl.Int32).alias("bin"), pl.col("wait_mean_h").alias("wait_h"),
    )  # fmt: skip
    both = pl.concat([per_run.with_columns(pl.col("bin").cast(pl.Int32)), all_jobs], how="vertical_relaxed")
    w = pl.col("wait_h")
    return both.group_by("workload", "label", "bin").agg(mean=w.mean(), std=w.std(), n=w.count()).sort(
        "workload", "label", "bin"
    )


def wait_by_bin(runs: pl.DataFrame, edges: Sequence[int] = DEFAULT_EDGES) -> pl.DataFrame:
    """:func:`wait_stats_of` over the jobs of every run in ``runs`` (``rid`` = row of ``runs``)."""
    overall = runs.with_row_index("rid").select("rid", "workload", "label", "wait_mean_h")
    return wait_stats_of(jobs_scan(runs, ["nodes", "wait_s"]), overall, edges)
