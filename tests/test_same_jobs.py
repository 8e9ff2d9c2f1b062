"""bench.same_jobs: identical trials pass, added columns are ignored, any changed value fails."""

from __future__ import annotations

import polars as pl

from fattorus.bench import same_jobs


def _write(root, trial, frame):
    (root / trial).mkdir(parents=True)
    frame.write_parquet(root / trial / "jobs.parquet")


def test_same_jobs_detects_changed_values_and_ignores_new_columns(tmp_path):
    base = pl.DataFrame({"start_s": [0.0, float("nan")], "alloc": [[1, 2], [3]]})
    _write(tmp_path / "a", "t1", base)
    _write(tmp_path / "b", "t1", base.with_columns(pl.lit(1.5).alias("ideal_aph")))
    assert same_jobs.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    _write(tmp_path / "a", "t2", base)
    _write(tmp_path / "b", "t2", base.with_columns(pl.Series("start_s", [0.0, 1.0])))
    n, problems = same_jobs.compare(tmp_path / "a", tmp_path / "b")
    assert n == 2 and len(problems) == 1 and "start_s" in problems[0] and problems[0].startswith("t2")
    _write(tmp_path / "a", "t3", base)
    assert any("missing" in p for p in same_jobs.compare(tmp_path / "a", tmp_path / "b")[1])
