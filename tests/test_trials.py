"""``trials=N`` in the study app (fattorus.app.trials): N speedup draws through the batched
engine, checked against N single runs of the NumPy engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
# A busy small machine: 200 jobs up to 40 nodes on ft6x6 (216 nodes), so V2 draws move waits.
BASE = ["+topo=ft6x6", "+speedup=v2", "workload=synthetic", "workload.synthetic.n_jobs=200",
        "workload.synthetic.max_nodes=40", "progress=false"]


def sweep(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fattorus.sweep", *args], cwd=tmp, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("policy", ["to", "ta"])
def test_each_trial_equals_the_single_run_with_its_seed(tmp_path, policy):
    out = sweep(tmp_path, *BASE, f"policy={policy}", "trials=2", "seed=4", f"hydra.run.dir={tmp_path / 'batch'}")
    assert out.returncode == 0, out.stderr[-3000:]
    trials = pl.read_parquet(tmp_path / "batch" / "trials.parquet")
    assert trials["seed"].to_list() == [4, 5]
    summary = json.loads((tmp_path / "batch" / "summary.json").read_text())
    assert summary["trials"]["n"] == 2
    waits = []
    for seed in (4, 5):
        single = sweep(tmp_path, *BASE, f"policy={policy}", f"seed={seed}", f"hydra.run.dir={tmp_path / str(seed)}")
        assert single.returncode == 0, single.stderr[-3000:]
        jobs = pl.read_parquet(tmp_path / str(seed) / "jobs.parquet")
        waits.append(jobs["wait_s"].mean())
        row = trials.filter(pl.col("seed") == seed)
        end = (jobs["end_s"].max() - jobs["submit_s"].min())
        assert row["makespan_s"][0] == pytest.approx(end)
    assert np.allclose(trials["mean_wait_s"].to_numpy(), waits, rtol=0, atol=1e-6)
    assert len(set(np.round(waits, 3))) > 1  # the draws differ, so the comparison means something
    # The batch's own trial 0 is the run's standard output.
    assert summary["wait_s"]["mean"] == pytest.approx(waits[0])


@pytest.mark.parametrize("args, words", [
    (["trials=0"], "trials=0"),
    (["trials=abc"], "trials"),
    (["trials=2", "policy=to_random"], "batched engine"),
    (["trials=2", "+speedup=model"], "speedup=model"),
])
def test_what_the_batched_engine_cannot_do_is_one_line(tmp_path, args, words):
    base = [a for a in BASE if not (a.startswith("+speedup") and any(x.startswith("+speedup") for x in args))]
    out = sweep(tmp_path, *base, *args)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [line for line in out.stderr.strip().splitlines() if "error" in line]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in out.stderr
