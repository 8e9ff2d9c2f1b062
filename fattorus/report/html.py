"""Text renderings of the report: Table I as cells and Markdown, the per-run table, the HTML page.

The page is self-contained (figures as PNG data URIs, no external assets) and its wide
tables scroll sideways inside their own box, so the page itself never gets wider than the
window.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from fattorus.report.aggregate import table1_labels
from fattorus.report.figures import FIGURES
from fattorus.report.load import duplicate_seeds
from fattorus.report.labels import fmt_hours, order_labels


def table1_cells(table: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and text cells of Table I (hours): ``mean`` or ``mean ± std (n=…)`` when several runs."""
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


def table1_markdown(table: pl.DataFrame, duplicates: Sequence[str] = ()) -> str:
    """Table I as GitHub Markdown; ``duplicates`` (:func:`fattorus.report.load.duplicate_seeds`)
    are named under it: such runs count as separate runs in the mean, std and n (they were
    only a warning on stderr before session 27)."""
    header, body = table1_cells(table)
    lines = [
        "Mean wait (hours); mean ± sample std over n runs (seeds) where several exist.",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    if duplicates:
        lines += ["", "Runs sharing a seed, each counted as a run: " + "; ".join(duplicates) + "."]
    return "\n".join(lines) + "\n"


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one dict with dotted keys."""
    if not isinstance(data, Mapping):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def html_table(header: Sequence[str], body: Iterable[Sequence[Any]], cls: str = "") -> str:
    """An escaped HTML table, wrapped in a box that scrolls sideways when the table is wider than the page."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if c is None else str(c))}</td>" for c in cells) + "</tr>"
        for cells in body
    )
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'


def _run_record(r: Mapping[str, Any]) -> dict[str, Any]:
    """One run's row of the configuration table: its labels, config, topology, counts and results."""
    record = {"run": r["run"], "label": r["label"], "workload": r["workload"]}
    record.update(flatten(json.loads(r["config"]), "config"))
    if r.get("topology"):
        record.update(flatten(json.loads(r["topology"]), "topology"))
    record.update(flatten(json.loads(r["counts"]), "counts"))
    record.update({
        "n_nodes": r["n_nodes"], "replay_wall_s": r["replay_wall_s"], "jobs": r["jobs"],
        "mean wait (h)": fmt_hours(r["wait_mean_h"]), "makespan (h)": fmt_hours(r["makespan_h"]),
        "mean utilization": None if r["util_mean"] is None else f"{r['util_mean']:.3f}",
    })  # fmt: skip
    return record


def runs_table_cells(runs: pl.DataFrame) -> tuple[list[str], list[list[Any]]]:
    """Header and cells of the per-run configuration table (config, topology and counts flattened)."""
    records = [_run_record(r) for r in runs.iter_rows(named=True)]
    header: list[str] = []
    for record in records:
        header += [k for k in record if k not in header]
    return header, [[rec.get(k) for k in header] for rec in records]


# Long cell values (paths, hashes) may wrap at any character in the runs table; each table
# scrolls inside its own box (.scroll) rather than widening the page.
CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 2em;max-width:1400px}
.scroll{overflow-x:auto;max-width:100%;border:1px solid #eee}
table{border-collapse:collapse;font-size:13px;margin:0}
th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
.runs{font-size:11px} .runs td{white-space:normal;overflow-wrap:anywhere;min-width:4em;max-width:24em}
figure{margin:1em 0;max-width:100%} img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{color:#444;font-size:13px} code{overflow-wrap:anywhere}
"""


def figures_html(pngs: Mapping[str, bytes]) -> str:
    """One ``<figure>`` per PNG of :data:`~fattorus.report.figures.FIGURES`, as a data URI, with a link to its SVG."""
    return "".join(
        f'<figure id="{stem}"><img alt="{html.escape(title)}" src="data:image/png;base64,'
        f'{base64.b64encode(pngs[stem]).decode()}"><figcaption>{html.escape(title)} '
        f'(<a href="{stem}.svg">SVG</a>)</figcaption></figure>'
        for stem, title in FIGURES
        if stem in pngs
    )


def _duplicates_html(duplicates: Sequence[str]) -> str:
    """The note under Table I naming runs that share a seed (empty when none)."""
    if not duplicates:
        return ""
    return f"<p class='note'>Runs sharing a seed, each counted as a run: {html.escape('; '.join(duplicates))}.</p>"


def render_html(results_dir: Path, runs: pl.DataFrame, table: pl.DataFrame, pngs: Mapping[str, bytes]) -> str:
    """The self-contained report page: figures as data URIs, Table I, per-run configuration."""
    header, body = table1_cells(table)
    run_header, run_body = runs_table_cells(runs)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><title>fattorus report</title>"
        f"<style>{CSS}</style></head><body>"
        f"<h1>fattorus report</h1><p>{len(runs)} runs under <code>{html.escape(str(results_dir))}</code>; "
        f"{runs['workload'].n_unique()} workloads; labels {html.escape(', '.join(order_labels(runs['label'])))}.</p>"
        "<h2>Table I analog: mean wait (hours)</h2>"
        "<p>Mean over runs (seeds) of each run's mean wait; ± sample std and n=runs where several.</p>"
        f"{html_table(header, body, 'table1')}"
        f"{_duplicates_html(duplicate_seeds(runs))}"
        f"<h2>Figures</h2>{figures_html(pngs)}"
        f"<h2>Runs</h2>{html_table(run_header, run_body, 'runs')}"
        "</body></html>\n"
    )
