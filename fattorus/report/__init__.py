"""Report: the paper's Figures 7-10 and Table I from replay run directories, for any interconnect.

``python -m fattorus.report RESULTS_DIR [--out OUT_DIR]`` finds every run directory under
``RESULTS_DIR`` (a directory holding ``summary.json``, ``jobs.parquet`` and
``utilization.parquet``, see ``docs/outputs.md``) and writes into ``OUT_DIR`` (default
``RESULTS_DIR/report``; either must lie under a ``results/`` directory: a ``RESULTS_DIR``
elsewhere needs ``--out``):

* ``fig7_aph_by_size.{png,svg}``: APH (hops) by job-size bin, one panel per workload
  (workload and topology), one box per run label; box = p25/median/p75, whiskers = min/max
  (as the paper), dashed line = ideal APH of the same jobs (median over the jobs of each
  job's ``ideal_aph``). The APH axis spans the data.
* ``fig8_utilization.{png,svg}``: per-minute utilization per workload and run label
  (box = p25/median/p75, whiskers = p5/p95, dot = mean; seeds pooled).
* ``fig9_makespan.{png,svg}``: makespan (hours) per workload and run label, mean over seeds
  with a +-1 std error bar.
* ``fig10_wait_by_size.{png,svg}``: mean wait (hours) by size bin and overall.
* ``table1.csv`` / ``table1.md``: Table I analog, mean wait (hours), rows = workload,
  columns = run label; mean over seeds, with std and the number of runs.
* ``runs.csv``: one row per run (:func:`load_runs`).
* ``report.html``: one self-contained page (PNGs as base64 data URIs, Table I, every run's
  configuration and topology).

Labels: policy ``to`` -> ``TO``, ``ta`` -> ``TA``, other policies upper-cased; a speedup
scenario other than ``none`` is appended in the paper's spelling (``TA x5``, ``TA V1``). Runs of
one such label that differ in a policy parameter or the flow model's settings are different
arms, and the differing settings are appended (``FIRST_FIT ordering=2Y``), so they are never
averaged together as seeds (:func:`~fattorus.report.load.label_arms`).
Workload label: ``{name}-{scale}x on {topo}`` (``atlas-2x on cab``; no ``-1x``); when runs
with the same label differ in time window or scheduler, that is appended so they are never
averaged together as seeds.

Per-run numbers come from the parquet files, not from ``summary.json`` statistics: mean wait
is the mean of ``wait_s`` over replayed jobs, makespan is ``max(end_s) - min(submit_s)``,
utilization is the mean of the per-minute samples. All times in the outputs are hours. The
report reads run directories only: the machine is known from ``summary.json``'s
``topology`` and ``jobs.parquet``'s ``ideal_aph``, never from ``conf/``.

A run whose tables lack a column the report reads, hold no row, or hold another number of rows
than ``summary.json`` records (``files.<table>.rows``, else ``counts.replayed``) is damaged,
like an unreadable one: refused in one line naming it, or with ``--skip-bad`` skipped with a
warning and counted. Everything is computed before the first file is written.

Exit status: 0 done; 2 a usage or input mistake (no runs, a damaged run, runs that cannot be
combined); 1 the output directory or a file in it cannot be made (the environment, as in the
studies); 141 the reader of stdout went away (``... | head -1``), quietly, after every file
was written (:func:`fattorus.args.run_piped`).

Modules: :mod:`~fattorus.report.labels` (names), :mod:`~fattorus.report.load` (reading),
:mod:`~fattorus.report.aggregate` (statistics), :mod:`~fattorus.report.figures`
(matplotlib), :mod:`~fattorus.report.html` (Table I text and the page).

Notebook use::

    from fattorus.report import load_runs, table1
    runs = load_runs("results")
    table1(runs)
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.report")

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from fattorus import paths
from fattorus.args import OneLineParser
from fattorus.files import atomic_write
from fattorus.report.aggregate import (
    aph_axis_top, aph_box_stats, aph_stats_of, over_seeds, table1, table1_labels, utilization_box_stats,
    utilization_stats_of, wait_by_bin, wait_stats_of, workload_order,
)  # fmt: skip
from fattorus.report.figures import (
    FIGURES, figure_aph, figure_makespan, figure_utilization, figure_wait, render_figure,
)  # fmt: skip
from fattorus.report.html import render_html, runs_table_cells, table1_cells, table1_markdown
from fattorus.report.labels import (
    DEFAULT_EDGES, LABEL_ORDER, bin_index, bin_labels, fmt_hours, label_rank, order_labels, run_label,
    scenario_spelling, topo_name, workload_label,
)  # fmt: skip
from fattorus.report.load import (
    JSON_COLUMNS, RUN_FILES, RUNS_SCHEMA, ReportError, arm_settings, find_run_dirs, jobs_scan, label_arms, load_runs,
    duplicate_seeds, one_line, read_summary, utilization_scan, warn_duplicate_seeds, warn_missing_ideal, warn_trial_draws,
)  # fmt: skip
from fattorus.args import EXIT_BROKEN_PIPE, run_piped

__all__ = [
    "DEFAULT_EDGES", "EXIT_BROKEN_PIPE", "FIGURES", "JSON_COLUMNS", "LABEL_ORDER", "RUN_FILES", "RUNS_SCHEMA",
    "ReportError", "ReportWriteError", "aph_axis_top", "aph_box_stats", "aph_stats_of", "arm_settings",
    "bin_index", "bin_labels", "find_run_dirs", "fmt_hours", "jobs_scan", "label_arms", "label_rank", "load_runs",
    "main", "one_line", "order_labels", "over_seeds", "parse_edges", "read_summary", "render_html", "run_label",
    "run_piped", "runs_table_cells", "scenario_spelling", "table1", "table1_cells", "table1_labels",
    "table1_markdown", "topo_name", "utilization_box_stats", "utilization_scan", "utilization_stats_of",
    "wait_by_bin", "wait_stats_of", "workload_label", "workload_order", "write_report",
]  # fmt: skip


class ReportWriteError(ReportError):
    """The output directory or a file in it cannot be made: the environment, not the inputs
    (exit 1, as the studies; a :class:`ReportError` about the inputs exits 2)."""


def _make_out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ReportWriteError(f"{out}: cannot create output directory: {one_line(err)}") from None


def _figures(runs, root: Path, edges: Sequence[int]) -> dict[str, object]:
    """Every figure of :data:`FIGURES`, keyed by file stem."""
    try:
        aph, util, wait = aph_box_stats(runs, edges), utilization_box_stats(runs), wait_by_bin(runs, edges)
    except Exception as err:  # noqa: BLE001 - schema mismatches across runs surface here
        raise ReportError(f"{root}: cannot combine runs: {one_line(err)}") from None
    return {
        "fig7_aph_by_size": figure_aph(runs, aph, edges),
        "fig8_utilization": figure_utilization(runs, util),
        "fig9_makespan": figure_makespan(runs),
        "fig10_wait_by_size": figure_wait(runs, wait, edges),
    }


def write_report(results_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None, *,
                 edges: Sequence[int] = DEFAULT_EDGES, skip_bad: bool = False) -> Path:  # fmt: skip
    """Read every run under ``results_dir`` and write the report files; return ``report.html``'s path.

    Every table, figure and the page are computed first and only then written, so a run the
    report cannot use stops it before any file (or the output directory) exists, never after
    half of the files. Every file is written atomically (``fattorus.files.atomic_write``); the
    page last. An output directory or file that cannot be made is a :class:`ReportWriteError`
    naming it.
    """
    root = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else root / "report"
    runs = load_runs(root, skip_bad=skip_bad)
    warn_duplicate_seeds(runs)
    warn_missing_ideal(runs)
    warn_trial_draws(runs)
    table = table1(runs)
    files: dict[str, str | bytes] = {
        "table1.csv": table.write_csv(),
        "table1.md": table1_markdown(table, duplicate_seeds(runs)),
        "runs.csv": runs.drop(*JSON_COLUMNS).write_csv(),
    }
    pngs: dict[str, bytes] = {}
    for stem, fig in _figures(runs, root, edges).items():
        pngs[stem], files[f"{stem}.svg"] = render_figure(fig)
        files[f"{stem}.png"] = pngs[stem]
    files["report.html"] = render_html(root, runs, table, pngs)  # dicts keep order: the page is written last
    _make_out_dir(out)
    for name, data in files.items():
        try:
            atomic_write(out / name, data)
        except OSError as err:
            raise ReportWriteError(f"{out / name}: cannot write: {one_line(err)}") from None
    return out / "report.html"


def parse_edges(text: str) -> tuple[int, ...]:
    """``"18,64,256,1024"`` -> increasing positive bin edges in nodes (argparse type)."""
    try:
        edges = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bins must be comma-separated integers, got {text!r}") from None
    if not edges or edges[0] < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise argparse.ArgumentTypeError(f"bins must be increasing positive integers, got {text!r}")
    return edges


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m fattorus.report RESULTS_DIR [--out OUT_DIR] [--bins 18,64,256,1024] [--skip-bad]``."""
    parser = OneLineParser(prog="python -m fattorus.report", error_prefix="fattorus.report",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", help="directory searched recursively for run directories")
    parser.add_argument("--out", default=None, help="output directory, under a results/ directory "
                        "(default RESULTS_DIR/report, when RESULTS_DIR lies under one)")
    parser.add_argument("--bins", type=parse_edges, default=DEFAULT_EDGES,
                        help="size-bin upper edges in nodes, comma-separated and increasing "
                             f"(default {','.join(map(str, DEFAULT_EDGES))})")
    parser.add_argument("--skip-bad", action="store_true", help="warn about and skip unreadable runs")
    args = parser.parse_args(argv)
    # Nothing is written outside a results/ directory (as compare and report.qos): the default
    # folder too, which lay in any RESULTS_DIR (a copy in /tmp got its report/ there).
    if args.out is not None and not paths.under_results(Path(args.out)):
        print(f"fattorus.report: error: --out {args.out}: must lie under a results/ directory "
              "(nothing is written outside the results)", file=sys.stderr)
        return 2
    if args.out is None and Path(args.results_dir).is_dir() and not paths.under_results(Path(args.results_dir)):
        print(f"fattorus.report: error: {args.results_dir} is not under a results/ directory, so its report/ would "
              "be written outside the results: give --out results/NAME", file=sys.stderr)
        return 2
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        # A usage mistake, not the environment: refused as such (it was exit 1, "[Errno 17] File exists").
        print(f"fattorus.report: error: --out {args.out}: is a file; give a folder for the report's files",
              file=sys.stderr)
        return 2
    try:
        page = write_report(args.results_dir, args.out, edges=args.bins, skip_bad=args.skip_bad)
    except ReportError as err:
        print(f"fattorus.report: error: {err}", file=sys.stderr)
        # Unwritable output is the environment (exit 1, as the studies); 2 is for the user's
        # input and usage mistakes.
        return 1 if isinstance(err, ReportWriteError) else 2
    print(f"fattorus.report: wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(run_piped(lambda: interrupt.run("fattorus.report", main)))  # quiet, exit 141, when stdout's reader closes early
