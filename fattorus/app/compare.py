"""Compare the policies of a study, per workload: ``python -m fattorus.app.compare RESULTS_DIR``.

Reads every finished trial under ``RESULTS_DIR`` (``summary.json`` + ``jobs.parquet``) and
writes one Markdown table per workload (``compare.md`` in ``RESULTS_DIR``, atomically; also
printed): jobs, mean wait, utilization (the torus paper's *scheduling efficiency*), mean APH
and maximum hops (all jobs, and jobs of at least ``--large`` nodes), the share of jobs whose
routes share a link with a concurrent job (``exposed``), the mean bounding-box fill where the
machine reports one, and the **break-even speedup** against a reference policy.

Break-even: total system efficiency is scheduling efficiency x application efficiency (torus
paper, Section III-B). If a policy's placements run applications at their best (efficiency 1)
and the reference's at ``1/s``, the policy matches the reference's total system efficiency
when ``U_policy = U_ref / s``: the break-even speedup is ``s* = U_ref / U_policy`` (above 1:
the policy gives up utilization, and its applications must run ``s*`` times faster to pay
for it; the paper's reference [8] puts it at 1.25-1.3 for contiguous allocation).
Needs no ``conf/``: everything comes from the trials' own files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import polars as pl

from fattorus.files import atomic_write


def label(config: dict[str, Any]) -> str:
    """``policy`` plus its parameters that differ between arms (e.g. ``first_fit ordering=2Y``)."""
    params = config.get("policy_params") or {}
    shown = " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k == "ordering")
    return f"{config['policy']} {shown}".strip()


def workload_label(config: dict[str, Any]) -> str:
    """``atlas x19.57 on bluewaters`` (the scale factor actually used)."""
    wl = config["workload"]
    return f"{wl['name']} x{float(wl.get('scale_factor', 1.0)):.4g} on {config['topo']}"


def trial_row(trial: Path, large: int) -> dict[str, Any] | None:
    """One table row from a finished trial directory, or None if it is not one."""
    summary_file, jobs_file = trial / "summary.json", trial / "jobs.parquet"
    if not (summary_file.is_file() and jobs_file.is_file()):
        return None
    summary = json.loads(summary_file.read_text())
    jobs = pl.read_parquet(jobs_file)
    big = jobs.filter(pl.col("nodes") >= large)
    row = {
        "workload": workload_label(summary["config"]),
        "policy": label(summary["config"]),
        "jobs": jobs.height,
        "wait_h": float(jobs["wait_s"].mean()) / 3600,
        "util": float(summary["utilization"]["mean"]),
        "aph": float(jobs["aph"].mean()),
        "aph_large": float(big["aph"].mean()) if big.height else float("nan"),
        "max_hops_large": float(big["max_hops"].mean()) if big.height and "max_hops" in jobs.columns else float("nan"),
        "exposed": float(jobs["exposed"].mean()),
        "bbox_fill": float(jobs["bbox_fill"].mean()) if "bbox_fill" in jobs.columns else float("nan"),
    }
    return row


def table(rows: list[dict[str, Any]], reference: str, large: int) -> str:
    """The Markdown tables, one per workload, with the break-even speedup against ``reference``."""
    out = []
    for wl in sorted({r["workload"] for r in rows}):
        group = sorted((r for r in rows if r["workload"] == wl), key=lambda r: r["policy"])
        ref = next((r for r in group if r["policy"] == reference), None)
        out += [f"### {wl}", "",
                f"| policy | jobs | mean wait (h) | utilization | APH | APH (>= {large} nodes) | "
                f"max hops (>= {large} nodes) | exposed | bbox fill | break-even vs {reference} |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in group:
            even = ref["util"] / r["util"] if ref and r["util"] > 0 else float("nan")
            out.append(f"| {r['policy']} | {r['jobs']} | {r['wait_h']:.2f} | {r['util']:.1%} | {r['aph']:.2f} | "
                       f"{r['aph_large']:.2f} | {r['max_hops_large']:.1f} | {r['exposed']:.1%} | "
                       f"{r['bbox_fill']:.2f} | {even:.3f} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line entry; one-line errors, exit 2."""
    p = argparse.ArgumentParser(prog="python -m fattorus.app.compare", description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path, help="a study's results directory (results/sweeps/NAME)")
    p.add_argument("--reference", default="first_fit ordering=O2", help="policy label to compare against "
                   "(default: first fit over the ALPS default ordering)")
    p.add_argument("--large", type=int, default=1024, help="jobs of at least this many nodes count as large")
    a = p.parse_args(argv)
    if not a.results.is_dir():
        print(f"compare: {a.results}: no such results directory", file=sys.stderr)
        return 2
    rows, skipped = [], 0
    for t in sorted(a.results.rglob("summary.json")):
        try:
            row = trial_row(t.parent, a.large)
        except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError) as err:
            # A damaged trial (cut parquet, bad JSON, missing fields): counted and named, not fatal.
            skipped += 1
            print(f"compare: warning: skipped {t.parent}: {' '.join(str(err).split())[:200]}", file=sys.stderr)
            continue
        if row:
            rows.append(row)
    if skipped:
        print(f"compare: {skipped} damaged trial(s) skipped", file=sys.stderr)
    if not rows:
        print(f"compare: {a.results}: no finished trial (summary.json + jobs.parquet)", file=sys.stderr)
        return 2
    text = table(rows, a.reference, a.large)
    atomic_write(a.results / "compare.md", text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["label", "main", "table", "trial_row", "workload_label"]
