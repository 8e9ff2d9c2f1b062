"""The Figure 7-10 analogs as matplotlib Figures, drawn from the frames of :mod:`fattorus.report.aggregate`.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot, no global backend), laid out
by matplotlib's constrained layout, with legends below the axes so that they never cover a
box or a bar, and titles wrapped to the figure's width so that they are never cut off.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from fattorus.files import atomic_write
from fattorus.report.aggregate import aph_axis_top, over_seeds, workload_order
from fattorus.report.labels import bin_labels, order_labels

MIN_WIDTH_IN = 6.4
"""Narrowest figure (inches): one workload with few labels would otherwise leave no room for titles."""
FIGURES = (
    ("fig7_aph_by_size", "Figure 7 analog: average pairwise hops by job size"),
    ("fig8_utilization", "Figure 8 analog: system utilization"),
    ("fig9_makespan", "Figure 9 analog: makespan"),
    ("fig10_wait_by_size", "Figure 10 analog: mean wait by job size"),
)
"""File stem and caption of each figure, in page order."""
TITLE_PT = 12.0
"""matplotlib's default title size ("large" of a 10 pt base), used to wrap titles to the figure width."""


def label_colors(labels: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per label (tab10 in label order)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {label: cmap(i % 10) for i, label in enumerate(labels)}


def new_figure(n_panels: int, panel_w: float, panel_h: float, ncols: int = 2):
    """A Figure with a grid of ``n_panels`` axes of ``panel_w`` x ``panel_h`` inches each.

    At least :data:`MIN_WIDTH_IN` wide; no pyplot, no global backend.
    """
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(n_panels / ncols)
    fig = Figure(figsize=(max(MIN_WIDTH_IN, panel_w * ncols), panel_h * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def wrap_title(text: str, width_in: float, size_pt: float = TITLE_PT) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``size_pt`` points.

    An average character is about 0.6 em wide; one inch is 72 points.
    """
    chars = max(12, int(width_in * 72 / (0.6 * size_pt)))
    return textwrap.fill(text, chars, break_on_hyphens=False)


def offsets(n: int, width: float = 0.8) -> tuple[np.ndarray, float]:
    """Centre offsets of ``n`` side-by-side items in a group of total ``width``, and each item's width."""
    each = width / max(n, 1)
    return (np.arange(n) - (n - 1) / 2) * each, each


def legend_handles(labels: Sequence[str], colors: Mapping[str, Any]) -> list[Any]:
    """Coloured patches for a figure legend."""
    from matplotlib.patches import Patch

    return [Patch(facecolor=colors[label], edgecolor="black", label=label) for label in labels]


def legend_below(fig, handles: Sequence[Any]) -> None:
    """A figure legend below every axes (constrained layout makes room for it), as many columns
    as fit the figure's width, measured with the renderer. Why measured: an estimate from the
    labels' lengths cut the legend at both edges with nine policies (a session-46 report)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    # A figure made without pyplot has a bare canvas: measure on an Agg one (what savefig uses).
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    room = fig.get_figwidth() * fig.dpi - 8  # pixels, a small margin
    for ncols in range(len(handles), 0, -1):
        legend = fig.legend(handles=list(handles), loc="outside lower center", ncols=ncols, fontsize="small")
        if ncols == 1 or legend.get_window_extent(renderer).width <= room:
            return
        legend.remove()


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


def _aph_panel(ax, here: pl.DataFrame, labels: Sequence[str], colors, names: Sequence[str]) -> None:
    """One workload's APH boxes (one per label and bin) with the dashed ideal of the same jobs."""
    shown = sorted(here["bin"].unique().to_list())
    here_labels = [lb for lb in labels if lb in set(here["label"])]
    offs, each = offsets(len(here_labels))
    for off, label in zip(offs, here_labels):
        rows = here.filter(pl.col("label") == label).sort("bin")
        boxes = [{"med": r["median"], "q1": r["p25"], "q3": r["p75"], "whislo": r["min"], "whishi": r["max"]}
                 for r in rows.iter_rows(named=True)]  # fmt: skip
        xs = [shown.index(b) + off for b in rows["bin"]]
        draw_boxes(ax, boxes, xs, each, colors[label])
        for x, ideal in zip(xs, rows["ideal"]):
            if ideal is not None:
                ax.hlines(ideal, x - each / 2, x + each / 2, colors="black", linestyles="dashed", linewidth=1)
    ax.set_xticks(range(len(shown)), [names[b] for b in shown])
    ax.set_xlim(-0.6, max(len(shown), 1) - 0.4)
    if not shown:
        ax.text(0.5, 0.5, "no jobs", transform=ax.transAxes, ha="center")


def figure_aph(runs: pl.DataFrame, stats: pl.DataFrame, edges: Sequence[int]):
    """Figure 7 analog: APH (hops) box plots by size bin, one panel per workload, one box per label.

    The APH axis runs from 0 to :func:`~fattorus.report.aggregate.aph_axis_top` of the data.
    """
    from matplotlib.lines import Line2D

    labels = order_labels(runs["label"])
    colors, names, workloads = label_colors(labels), bin_labels(edges), workload_order(runs)
    fig, axes = new_figure(len(workloads), 1.2 + 1.1 * len(names), 3.4)
    top = aph_axis_top(stats)
    for ax, workload in zip(axes, workloads):
        _aph_panel(ax, stats.filter(pl.col("workload") == workload), labels, colors, names)
        ax.set_ylim(-0.1, top)
        ax.set(xlabel="nodes requested", ylabel="average pairwise hops")
        ax.set_title(wrap_title(workload, ax.get_position().width * fig.get_figwidth()))
    handles = legend_handles(labels, colors)
    if stats["ideal"].is_not_null().any():
        handles.append(Line2D([], [], color="black", linestyle="dashed", label="ideal APH (median over the same jobs)"))
    legend_below(fig, handles)
    fig.suptitle(wrap_title("APH by job size: box p25–p75, whiskers min–max", fig.get_figwidth()))
    return fig


def _workload_axis(fig, ax, workloads: Sequence[str], title: str) -> None:
    """x ticks = workloads (slanted when several), and a title wrapped to the figure's width."""
    if len(workloads) > 1:
        ax.set_xticks(range(len(workloads)), workloads, rotation=20, ha="right")
    else:
        ax.set_xticks(range(len(workloads)), workloads)
    ax.set_xlim(-0.6, len(workloads) - 0.4)
    ax.set_title(wrap_title(title, fig.get_figwidth() - 1.0))  # about an inch goes to the y label


def figure_utilization(runs: pl.DataFrame, stats: pl.DataFrame):
    """Figure 8 analog: utilization (fraction of nodes busy) box plots, one group per workload, one box per label."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    fig, (ax,) = new_figure(1, 1.5 + 0.5 * len(workloads) * max(len(labels), 2), 4.0)
    offs, each = offsets(len(labels))
    for off, label in zip(offs, labels):
        rows = stats.filter(pl.col("label") == label)
        boxes = [{"med": r["median"], "q1": r["p25"], "q3": r["p75"], "whislo": r["p05"], "whishi": r["p95"],
                  "mean": r["mean"]} for r in rows.iter_rows(named=True)]  # fmt: skip
        draw_boxes(ax, boxes, [workloads.index(w) + off for w in rows["workload"]], each, colors[label])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("utilization (fraction of nodes busy)")
    _workload_axis(fig, ax, workloads, "Utilization per minute: box p25–p75, whiskers p5–p95, dot mean")
    legend_below(fig, legend_handles(labels, colors))
    return fig


def _over_runs(runs: pl.DataFrame) -> str:
    """What a bar of Figures 9 and 10 is: a mean over seeds with a std bar where some label of
    some workload has several runs, else one run each (a title promising error bars over a
    single seed read as if the bars were missing)."""
    several = runs.group_by("workload", "label").len()["len"].max() or 0
    return "mean over seeds, error bar ±1 std" if several > 1 else "one run each"


def figure_makespan(runs: pl.DataFrame):
    """Figure 9 analog: makespan (hours) bars, one group per workload, one bar per label."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    fig, (ax,) = new_figure(1, 1.5 + 0.4 * len(workloads) * max(len(labels), 2), 4.0)
    draw_bars(ax, over_seeds(runs, "makespan_h"), workloads, "workload", labels, colors)
    ax.set_ylabel("makespan (hours)")
    _workload_axis(fig, ax, workloads, f"Makespan: {_over_runs(runs)}")
    legend_below(fig, legend_handles(labels, colors))
    return fig


def figure_wait(runs: pl.DataFrame, stats: pl.DataFrame, edges: Sequence[int]):
    """Figure 10 analog: mean wait (hours) by size bin and overall, one panel per workload."""
    labels, workloads = order_labels(runs["label"]), workload_order(runs)
    colors = label_colors(labels)
    names = bin_labels(edges) + ["all"]
    fig, axes = new_figure(len(workloads), 1.2 + 1.1 * len(names), 3.4)
    for ax, workload in zip(axes, workloads):
        here = stats.filter(pl.col("workload") == workload)
        shown = sorted(here["bin"].unique().to_list())
        draw_bars(ax, here, shown, "bin", [lb for lb in labels if lb in set(here["label"])], colors)
        # Waits are never negative: a panel of zero waits read -0.04 .. 0.04 h (autoscale).
        ax.set_ylim(bottom=0.0)
        ax.set_xticks(range(len(shown)), [names[b] for b in shown])
        ax.set(xlabel="nodes requested", ylabel="mean wait (hours)")
        ax.set_title(wrap_title(workload, ax.get_position().width * fig.get_figwidth()))
    legend_below(fig, legend_handles(labels, colors))
    fig.suptitle(wrap_title(f"Mean wait by job size: {_over_runs(runs)}", fig.get_figwidth()))
    return fig


def render_figure(fig, dpi: int = 110) -> tuple[bytes, bytes]:
    """The figure as PNG and SVG bytes (the SVG without a date, so a rerun gives the same file)."""
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi)
    fig.savefig(svg, format="svg", metadata={"Date": None})
    return png.getvalue(), svg.getvalue()


def save_figure(fig, out_dir: Path, stem: str, dpi: int = 110) -> bytes:
    """Write ``stem.png`` and ``stem.svg`` atomically (``fattorus.files``); return the PNG bytes."""
    png, svg = render_figure(fig, dpi)
    atomic_write(out_dir / f"{stem}.png", png)
    atomic_write(out_dir / f"{stem}.svg", svg)
    return png
