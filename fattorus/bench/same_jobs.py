"""Check that two study result trees hold the same ``jobs.parquet``, trial by trial.

``python -m fattorus.bench.same_jobs BEFORE AFTER`` compares every trial directory of
``BEFORE`` (e.g. a study's ``results/sweeps/<study>`` saved before a change) with the trial of
the same name under ``AFTER``, on every column of the ``BEFORE`` table (columns added since
are ignored): same dtype, equal values, nulls and NaNs in the same places. Prints one line per
differing trial and a final count; exits 1 when any trial differs or is missing.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.bench.same_jobs")

import sys
from pathlib import Path

import polars as pl


def differences(before: pl.DataFrame, after: pl.DataFrame) -> list[str]:
    """Names of the ``before`` columns that differ in ``after`` (missing, or other values)."""
    if before.height != after.height:
        return [f"rows {before.height} != {after.height}"]
    bad = []
    for name in before.columns:
        if name not in after.columns:
            bad.append(f"{name} (missing)")
        elif before[name].dtype != after[name].dtype or not before[name].equals(after[name]):
            bad.append(name)
    return bad


def compare(before_root: Path, after_root: Path) -> tuple[int, list[str]]:
    """(trials compared, one message per differing or missing trial)."""
    problems, n = [], 0
    for jobs in sorted(before_root.glob("*/jobs.parquet")):
        trial = jobs.parent.name
        other = after_root / trial / "jobs.parquet"
        n += 1
        if not other.exists():
            problems.append(f"{trial}: missing under {after_root}")
            continue
        bad = differences(pl.read_parquet(jobs, glob=False), pl.read_parquet(other, glob=False))
        if bad:
            problems.append(f"{trial}: differs in {bad}")
    return n, problems


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m fattorus.bench.same_jobs BEFORE_DIR AFTER_DIR", file=sys.stderr)
        return 2
    before, after = Path(args[0]), Path(args[1])
    for d in (before, after):
        if not d.is_dir():
            print(f"same_jobs: {d} is not a directory", file=sys.stderr)
            return 2
    n, problems = compare(before, after)
    for line in problems:
        print(line)
    print(f"{n - len(problems)}/{n} trials identical in every column of {before}")
    return 1 if problems or n == 0 else 0


if __name__ == "__main__":
    sys.exit(interrupt.run("fattorus.bench.same_jobs", main))
