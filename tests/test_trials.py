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
import yaml

# A busy small machine: 200 jobs up to 40 nodes on ft6x6 (54 nodes), so V2 draws move waits.
BASE = ["+topo=ft6x6", "+speedup=v2", "workload=synthetic", "workload.synthetic.n_jobs=200",
        "workload.synthetic.max_nodes=40", "progress=false"]


def sweep(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fattorus.sweep", *args], cwd=tmp, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, int], Path]:
    """Run directory of each (policy, trials, seed) of one multirun of the app over policy
    to/ta x trials 1/2 x seed 4/5: the batches and the single runs they are checked against.
    ``hydra.launcher.n_jobs=1`` runs the eight jobs in turn in one process: one interpreter
    start (~2 s of imports each) instead of one per run; every job is still the app's own
    task from the command line. FCFS: the app hands the discipline to both engines alike
    (the engines' EASY is compared job for job in test_batched.py), the batched engine
    compiles in about half EASY's time, and seeds 4 and 5 still give mean waits over a
    minute apart, far beyond the microsecond the comparison below allows."""
    tmp = tmp_path_factory.mktemp("trials")
    out = sweep(tmp, "--multirun", f"hydra.sweep.dir={tmp / 'results' / 'm'}", "hydra.launcher.n_jobs=1", *BASE,
                "sched=fcfs", "policy=to,ta", "trials=1,2", "seed=4,5")
    assert out.returncode == 0, out.stderr[-3000:]
    found = {}
    for run in (tmp / "results" / "m").iterdir():
        if (run / ".hydra" / "overrides.yaml").is_file():
            given = dict(o.split("=", 1) for o in yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text()))
            found[given["policy"], int(given["trials"]), int(given["seed"])] = run
    assert len(found) == 8, sorted(found)
    return found


@pytest.mark.parametrize("policy", ["to", "ta"])
def test_each_trial_equals_the_single_run_with_its_seed(runs, policy):
    waits, makespans = {}, {}
    for seed in (4, 5):
        jobs = pl.read_parquet(runs[policy, 1, seed] / "jobs.parquet")
        waits[seed] = jobs["wait_s"].mean()
        makespans[seed] = jobs["end_s"].max() - jobs["submit_s"].min()
    assert len(set(np.round(list(waits.values()), 3))) > 1  # the draws differ, so the comparison means something
    # The batch of seed 4 holds trials 4 and 5, both checked; that of seed 5 (trials 5 and 6)
    # gets trial 5 again, now as its trial 0.
    for first in (4, 5):
        batch = runs[policy, 2, first]
        trials = pl.read_parquet(batch / "trials.parquet")
        assert trials["seed"].to_list() == [first, first + 1]
        summary = json.loads((batch / "summary.json").read_text())
        assert summary["trials"]["n"] == 2
        for seed in {first, first + 1} & set(waits):
            row = trials.filter(pl.col("seed") == seed)
            assert row["mean_wait_s"][0] == pytest.approx(waits[seed], rel=0, abs=1e-6)
            assert row["makespan_s"][0] == pytest.approx(makespans[seed])
        # The batch's own trial 0 is the run's standard output.
        assert summary["wait_s"]["mean"] == pytest.approx(waits[first])


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


def test_a_trials_run_without_its_trials_table_is_not_finished(runs, tmp_path):
    """A ``trials=N`` run is finished only with its ``trials.parquet`` of N rows: a re-run
    skipped a trial whose table was lost as "already holds a finished run" (session 27)."""
    import shutil

    from fattorus.app import outputs

    run = shutil.copytree(runs["to", 2, 4], tmp_path / "run")
    assert outputs.check_complete(run) is None
    one = pl.read_parquet(run / "trials.parquet").head(1)
    (run / "trials.parquet").unlink()
    assert outputs.check_complete(run).startswith("trials.parquet is missing or unreadable")
    one.write_parquet(run / "trials.parquet")
    assert outputs.check_complete(run) == "trials.parquet has 1 rows, summary.json says 2"
    single = runs["to", 1, 4]  # trials=1: no table, none expected
    assert not (single / "trials.parquet").exists() and outputs.check_complete(single) is None
