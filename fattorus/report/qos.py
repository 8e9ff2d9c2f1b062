"""Charts and tables of the process-level QoS study (issue 15), drawn as the QoS paper does.

:func:`figure` writes one run's two charts (the paper's Figures 3–19): left, per job type, the
distribution of ``W = I / I_isolated − 1`` with every process on the default level (grey) and
with QoS (white); right, every job's improvement over default ``I_Q / I_D − 1``, sorted from
the greatest improvement to the greatest degradation (filled: the whole run, exploring periods
included, as the paper counts it; line: the assignment the algorithm settled on).

``python -m fattorus.report.qos DIR`` reads every ``jobs.parquet`` under ``DIR`` (a run or a
sweep directory) and prints one row per run and job type: median ``W`` default / QoS, median,
mean, best and worst improvement (the whole run), the same for the settled assignment, and the
share of jobs the settled assignment improves by more than 1 %; it writes ``DIR/qos_report.md``
with the same table (``--out PATH``: that ``.md`` file, or ``qos_report.md`` in that folder;
nothing is written outside a ``results/`` directory: for a ``DIR`` elsewhere the table is
printed only, with a note, and an ``--out`` elsewhere is refused). A run whose ``jobs.parquet`` or ``summary.json`` cannot be read (damaged,
or a summary that is not a JSON object) is skipped with a warning line. Exit status: 0 done;
2 a usage or input mistake; 1 ``qos_report.md`` cannot be written (one line, as
``fattorus.report``); 141 the reader of stdout went away (``... | head -1``), quietly, the file
already written (:func:`fattorus.args.run_piped`).
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.report.qos")

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fattorus.files import atomic_write
from fattorus.args import run_piped

LABELS = {"flood_pairs": "Flood-Pairs", "nearest_neighbor": "Nearest-Neighbor", "random_pairs": "Random-Pairs",
          "all_to_all": "All-to-all"}


def figure(rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path:
    """Draw one run's two charts into ``path`` (PNG) atomically; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    patterns = [p for p in LABELS if any(r["pattern"] == p for r in rows)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 1.3]})
    data, pos, colors = [], [], []
    for i, p in enumerate(patterns):
        for k, (field, color) in enumerate((("W_default", "0.7"), ("W_qos", "white"))):
            data.append([r[field] for r in rows if r["pattern"] == p])
            pos.append(3 * i + k)
            colors.append(color)
    box = left.boxplot(data, positions=pos, widths=0.8, patch_artist=True)
    for patch, color in zip(box["boxes"], colors):
        patch.set_facecolor(color)
    left.axhline(0, ls="--", color="k", lw=0.8)
    left.set_xticks([3 * i + 0.5 for i in range(len(patterns))], [LABELS[p] for p in patterns], fontsize=8)
    left.set_ylabel("W = I / I_isolated - 1")
    left.legend([box["boxes"][0], box["boxes"][1]], ["Default", "QoS"], fontsize=8)
    imp = np.sort(np.array([r["improvement"] for r in rows]))[::-1]
    fin = np.sort(np.array([r["improvement_final"] for r in rows]))[::-1]
    x = np.arange(len(imp))
    right.bar(x, imp, color="0.5", label="whole run (exploring periods included)")
    right.plot(x, fin, color="k", lw=1.2, label="settled assignment")
    right.axhline(0, color="k", lw=0.8)
    right.set_xlabel("job (sorted)")
    right.set_ylabel("I_QoS / I_default - 1")
    right.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110))
    finally:
        plt.close(fig)


#: The per-job columns of a QoS run's jobs.parquet that the table reads.
QOS_COLUMNS = frozenset({"pattern", "W_default", "W_qos", "improvement", "improvement_final"})


def table(root: str | Path, skipped: list[Path] | None = None) -> list[dict[str, Any]]:
    """One row per run under ``root`` and job type (plus ``all``): medians and extremes; the
    damaged runs passed over (each with a warning) are appended to ``skipped`` when given."""
    import polars as pl

    out = []
    for jobs in sorted(Path(root).rglob("jobs.parquet")):
        run = jobs.parent
        try:
            df = pl.read_parquet(jobs, glob=False)
        except (OSError, pl.exceptions.PolarsError) as err:
            print(f"fattorus.report.qos: warning: skipped {jobs}: {' '.join(str(err).split())[:200]}", file=sys.stderr)
            if skipped is not None:
                skipped.append(run)
            continue
        if not QOS_COLUMNS <= set(df.columns):  # a scheduler replay's jobs.parquet, not a QoS run's
            continue
        name = run.name if run != Path(root) else Path(root).name
        summary = run / "summary.json"
        system = "?"
        if summary.exists():
            try:
                data = json.loads(summary.read_text())
                if not isinstance(data, dict):
                    raise ValueError(f"a JSON {type(data).__name__}, not an object")
            except (OSError, ValueError) as err:  # damaged like an unreadable jobs.parquet: skipped
                print(f"fattorus.report.qos: warning: skipped {run}: {summary.name}: "
                      f"{' '.join(str(err).split())[:200]}", file=sys.stderr)
                if skipped is not None:
                    skipped.append(run)
                continue
            system = data.get("system", "?")
        for pat in [*LABELS, "all"]:
            sel = df if pat == "all" else df.filter(pl.col("pattern") == pat)
            if sel.height == 0:
                continue
            out.append({"run": name, "system": system, "pattern": LABELS.get(pat, pat), "jobs": sel.height,
                        "W_default": sel["W_default"].median(), "W_qos": sel["W_qos"].median(),
                        "improvement": sel["improvement"].median(), "mean": sel["improvement"].mean(),
                        "improved": float((sel["improvement_final"] > 0.01).mean()), "best": sel["improvement"].max(),
                        "worst": sel["improvement"].min(), "settled": sel["improvement_final"].median(),
                        "settled_best": sel["improvement_final"].max(), "settled_worst": sel["improvement_final"].min()})
    return out


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table as Markdown (changes as signed percentages; ``improved``, a share of jobs, unsigned)."""
    head = ["run", "system", "pattern", "jobs", "W_default", "W_qos", "improvement", "mean", "best", "worst",
            "settled", "settled_best", "settled_worst", "improved"]
    # The medians say so beside the mean (a session-46 report read them as means).
    shown = {"W_default": "W_default median", "W_qos": "W_qos median", "improvement": "improvement median",
             "settled": "settled median"}
    lines = ["| " + " | ".join(shown.get(h, h) for h in head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        # + 0.0: a change that rounds to zero reads +0.0%, not -0.0% (a negative zero's sign).
        cells = [str(r[h]) if h in ("run", "system", "pattern", "jobs") else f"{r[h]:.1%}" if h == "improved"
                 else f"{round(r[h], 3) + 0.0:+.1%}" for h in head]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _take_out(args: list[str]) -> tuple[list[str], str | None, str | None]:
    """``args`` without ``--out PATH`` / ``--out=PATH``, the path, and a usage mistake (or None)."""
    rest, out = [], None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--out" or a.startswith("--out="):
            if out is not None:
                return rest, None, "--out given twice"
            if a == "--out":
                if i + 1 >= len(args):
                    return rest, None, "--out needs a path (a .md file or a folder under a results/ directory)"
                out, i = args[i + 1], i + 2
                continue
            out = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    return rest, out, None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fattorus.report.qos DIR [--out PATH]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m fattorus.report.qos RESULTS_DIR [--out PATH]  (a QoS run or a sweep of them: writes "
             "qos_report.md there, or to --out, under a results/ directory)")
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    args, out, mistake = _take_out(args)
    flags = [a for a in args if a.startswith("-") and a != "-"]
    if mistake or flags or len(args) != 1:
        # The argument at fault named (it printed the usage alone; session 43).
        why = (mistake if mistake else f"unknown option {flags[0]!r}" if flags else
               "no results directory given" if not args else f"one results directory, got {len(args)}: {args}")
        print(f"fattorus.report.qos: error: {why} ({usage})", file=sys.stderr)
        return 2
    root = Path(args[0])
    if not root.is_dir():
        why = "not a directory (give a QoS run's or a sweep's folder)" if root.exists() else "no such directory"
        print(f"fattorus.report.qos: error: {root}: {why}", file=sys.stderr)
        return 2
    from fattorus import paths

    target, line, code = paths.markdown_target(root, out, "fattorus.report.qos", "qos_report.md", "table")
    if code:  # before any run is read
        print(line, file=sys.stderr)
        return code
    skipped: list[Path] = []
    rows = table(root, skipped)
    if not rows:
        # Every QoS run damaged is not "none there" (session 43: it said so after skipping them).
        why = (f"no readable QoS run under it ({len(skipped)} skipped as damaged, above)" if skipped
               else "no jobs.parquet of a QoS run under it")
        print(f"fattorus.report.qos: error: {root}: {why}", file=sys.stderr)
        return 2
    text = markdown(rows)
    if target is not None:
        try:
            atomic_write(target, text)
        except OSError as err:  # the environment (read-only folder, full disk), not the input: exit 1
            print(f"fattorus.report.qos: error: {target}: cannot write: {' '.join(str(err).split())[:200]}",
                  file=sys.stderr)
            return 1
    else:
        print(line, file=sys.stderr)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(run_piped(lambda: interrupt.run("fattorus.report.qos", main)))  # quiet, exit 141, when stdout's reader closes early (| head -1)
