"""Atomic writes and what a killed writer leaves (fattorus.files)."""

from __future__ import annotations

import os

import polars as pl

from fattorus import files
from fattorus.app import outputs
from fattorus.files import atomic_write, remove_stale_temps


def test_a_run_that_takes_its_directory_over_removes_a_killed_writers_temporaries(tmp_path):
    """A multirun's Ctrl-C can kill a worker inside ``atomic_write``: its ``.jobs.parquet.*.tmp``
    stayed, and the rerun that finished the trial kept it (a session-46 exploratory run). The
    rerun's write removes the temporaries ``atomic_write`` makes (``.NAME.*.tmp`` here, not in
    subfolders) older than its process, and nothing else: a concurrent writer's newer one
    stays (two multiruns of one study share trial folders)."""
    stale = [tmp_path / ".jobs.parquet.m6ojewdm.tmp", tmp_path / ".summary.json.x1y2.tmp"]
    for p in stale:
        p.write_bytes(b"")
        os.utime(p, (files._STARTED - 60, files._STARTED - 60))  # a dead process's, from before this one
    kept = [tmp_path / ".notes", tmp_path / "mine.tmp", tmp_path / "sub" / ".jobs.parquet.q.tmp",
            tmp_path / ".utilization.parquet.live.tmp"]  # the last: a live concurrent writer's (newer)
    kept[2].parent.mkdir()
    for p in kept:
        p.write_text("user's")
        if p.name != ".utilization.parquet.live.tmp":
            os.utime(p, (files._STARTED - 60, files._STARTED - 60))
    jobs = pl.DataFrame({"job_id": [1]})
    util = pl.DataFrame({"t_s": [0.0], "busy_nodes": [1], "utilization": [0.5]})
    outputs.write_run(tmp_path, jobs, util, {"counts": {"replayed": 1}})
    assert not any(p.exists() for p in stale)
    assert all(p.read_text() == "user's" for p in kept)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [
        ".utilization.parquet.live.tmp", "mine.tmp"]
    assert outputs.check_complete(tmp_path) is None
    assert remove_stale_temps(tmp_path) == 0


def test_an_interrupted_atomic_write_leaves_nothing(tmp_path):
    """A writer that fails (or a Ctrl-C inside it) leaves neither the file nor a temporary."""

    def fails(path):
        path.write_text("half")
        raise KeyboardInterrupt

    try:
        atomic_write(tmp_path / "a.json", fails)
    except KeyboardInterrupt:
        pass
    assert list(tmp_path.iterdir()) == []
