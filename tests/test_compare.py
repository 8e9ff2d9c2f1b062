"""The study comparison table (fattorus.app.compare) on hand-made trials."""

from __future__ import annotations

import json

import polars as pl

from fattorus.app import compare


def _trial(path, policy, params, util, waits, exposed):
    path.mkdir(parents=True)
    cfg = {"topo": "t", "policy": policy, "policy_params": params,
           "workload": {"name": "w", "scale_factor": 2.0}}
    (path / "summary.json").write_text(json.dumps({"config": cfg, "utilization": {"mean": util}}))
    n = len(waits)
    pl.DataFrame({"nodes": [1, 2048][:n], "wait_s": waits, "aph": [0.0, 4.0][:n], "max_hops": [0, 9][:n],
                  "exposed": exposed, "bbox_fill": [1.0, 0.5][:n]}).write_parquet(path / "jobs.parquet")


def test_break_even_is_the_utilization_ratio(tmp_path, capsys):
    _trial(tmp_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    _trial(tmp_path / "b", "prism", {"fill": 1.0}, 0.72, [3600.0, 3600.0], [False, False])
    assert compare.main([str(tmp_path), "--large", "1024"]) == 0
    text = (tmp_path / "compare.md").read_text()
    assert "### w x2 on t" in text
    # prism: 0.9 / 0.72 = 1.25; the reference against itself: 1
    assert "| prism | 2 | 1.00 | 72.0% | 2.00 | 4.00 | 9.0 | 0.0% | 0.75 | 1.250 |" in text
    assert "| first_fit ordering=O2 | 2 | 1.00 | 90.0% | 2.00 | 4.00 | 9.0 | 50.0% | 0.75 | 1.000 |" in text
    assert compare.main([str(tmp_path / "nothing")]) == 2
    assert "no such results directory" in capsys.readouterr().err


def test_damaged_trials_are_named_and_skipped(tmp_path, capsys):
    _trial(tmp_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    _trial(tmp_path / "cut", "prism", {}, 0.7, [0.0, 1.0], [False, False])
    data = (tmp_path / "cut" / "jobs.parquet").read_bytes()
    (tmp_path / "cut" / "jobs.parquet").write_bytes(data[: len(data) // 2])  # a cut parquet file
    _trial(tmp_path / "json", "prism", {}, 0.7, [0.0, 1.0], [False, False])
    (tmp_path / "json" / "summary.json").write_text("{bad")
    assert compare.main([str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "2 damaged trial(s) skipped" in err
    assert str(tmp_path / "cut") in err and str(tmp_path / "json") in err
    assert "first_fit ordering=O2" in (tmp_path / "compare.md").read_text()
