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

import forkcli

# A busy small machine: 200 jobs up to 40 nodes on ft6x6 (54 nodes), so V2 draws move waits.
BASE = ["+topo=ft6x6", "+speedup=v2", "workload=synthetic", "workload.synthetic.n_jobs=200",
        "workload.synthetic.max_nodes=40", "progress=false"]


#: JAX's persistent compilation cache, one folder for this module's commands (set by
#: :func:`_compilation_cache`): the interrupted and the resumed ``trials=640`` run load what the
#: uninterrupted one compiled (~2.5-4 s of compiling each) instead of compiling it again; a hit
#: runs the executable a compile builds. Unlike the suite-wide cache measured and dropped
#: (docs/decisions.md: JAX 0.10 writes an entry non-atomically, so a command reading an entry
#: another process is writing, or one a killed writer left, could warn on its stderr), nothing
#: here reads while another writes: this module's commands run one at a time, and the run that is
#: cut short only reads (every entry it needs is there; it writes none).
_CACHE: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _compilation_cache(tmp_path_factory: pytest.TempPathFactory):
    _CACHE.append(tmp_path_factory.mktemp("jax-cache"))
    yield
    _CACHE.pop()


def command_env() -> dict:
    """The commands' environment: this process' (PYTHONPATH: the checkout first, tests/conftest.py)
    with the module's compilation cache (every compile kept, however short)."""
    return {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(_CACHE[-1]),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def sweep(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return forkcli.run("fattorus.sweep", args, cwd=tmp, env=command_env(), timeout=600)


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
    # trials=2 lies in the range the line named; the seeds' end was the limit (session 45)
    (["trials=3", "seed=4294967294"], "trials=3 with seed=4294967294: the trials' seeds seed .. seed + trials - 1 "
                                      "must stay <= 4294967295, so at most 2 trial(s) from this seed"),
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


# Enough batches of 64 (~0.4 s each here) that a Ctrl-C after the first lands mid-run.
MANY = [*BASE, "sched=fcfs", "policy=to", "trials=640"]


def _interrupted_run(tmp: Path) -> Path:
    """A single ``trials=640`` run stopped by SIGINT once its first batch is kept; its directory."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "fattorus.sweep", *MANY], cwd=tmp, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=command_env())
    deadline = time.monotonic() + 300
    while not list((tmp / "results" / "runs").glob("*/trials.parts/b000000.parquet")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    (run,) = (tmp / "results" / "runs").iterdir()
    assert f"hydra.run.dir={run}" in err and "to resume" in err, err[-2000:]
    assert not (run / "summary.json").exists()
    return run


def test_an_interrupted_trials_run_resumes_its_kept_batches(tmp_path):
    """Ctrl-C keeps the finished batches; the same command with ``hydra.run.dir=`` that
    directory replays only the others, and its table is the one an uninterrupted run writes.
    Settings other than the kept batches' are refused, the batches left alone."""
    whole = sweep(tmp_path, *MANY, f"hydra.run.dir={tmp_path / 'results' / 'whole'}")
    assert whole.returncode == 0, whole.stderr[-2000:]
    (tmp_path / "results" / "runs").mkdir(parents=True)
    run = _interrupted_run(tmp_path)
    kept = sorted(p.name for p in (run / "trials.parts").glob("b*.parquet"))
    assert kept and len(kept) < 10

    other = sweep(tmp_path, *MANY, "seed=3", f"hydra.run.dir={run}")
    assert other.returncode == 2 and "other settings (seed=0 there, 3 now)" in other.stderr, other.stderr[-2000:]
    # Without Hydra's copy of the settings to read first, the app compares what the run
    # recorded of itself (the job log's bytes too) and refuses as well.
    blind = sweep(tmp_path, *MANY, "seed=3", "hydra.output_subdir=null", f"hydra.run.dir={run}")
    assert blind.returncode == 2 and "other settings (config.seed=0 there, 3 now)" in blind.stderr, blind.stderr[-2000:]
    assert sorted(p.name for p in (run / "trials.parts").glob("b*.parquet")) == kept

    resumed = sweep(tmp_path, *MANY, f"hydra.run.dir={run}")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"trials: {64 * len(kept)} of 640 kept" in resumed.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["trials"]["kept"] == 64 * len(kept)
    assert not (run / "trials.parts").exists()
    assert pl.read_parquet(run / "trials.parquet").equals(pl.read_parquet(tmp_path / "results" / "whole" / "trials.parquet"))
    again = sweep(tmp_path, *MANY, f"hydra.run.dir={run}")  # finished now: refused as any run's directory
    assert again.returncode == 2 and "already holds a finished run" in again.stderr


def test_kept_batches_of_other_settings_or_damaged_are_replayed(tmp_path, capsys):
    """:func:`fattorus.app.trials._kept_batches`: batches recorded with other settings are
    dropped (and the record rewritten); an unreadable or short batch file is left out, so its
    trials are replayed; the others are kept as written."""
    from fattorus.app import trials

    parts = tmp_path / "trials.parts"
    settings = {"config": {"seed": 0}, "n": 5, "batch": 2}
    assert trials._kept_batches(parts, settings) == {}  # a first run: the record only
    assert json.loads((parts / "settings.json").read_text())["n"] == 5
    rows = {k: np.arange(2, dtype=np.int32 if k == "jobs" else np.float64) for k in trials._COLUMNS}
    pl.DataFrame(rows).write_parquet(parts / "b000000.parquet")
    (parts / "b000002.parquet").write_bytes(b"not parquet")
    pl.DataFrame({k: v[:1] for k, v in rows.items()}).write_parquet(parts / "b000004.parquet")  # the right length
    pl.DataFrame(rows).write_parquet(parts / "b000006.parquet")  # past n: never read
    kept = trials._kept_batches(parts, settings)
    assert sorted(kept) == [0, 4]
    np.testing.assert_array_equal(kept[0]["mean_wait_s"], rows["mean_wait_s"])
    assert "b000002.parquet: cannot be read" in capsys.readouterr().err
    short = parts / "b000004.parquet"
    pl.DataFrame(rows).write_parquet(short)  # two rows where the last batch holds one
    assert sorted(trials._kept_batches(parts, settings)) == [0]
    with pytest.raises(trials.OtherSettings, match="config.seed=0 there, 1 now"):  # a single run's refusal
        trials._kept_batches(parts, {**settings, "config": {"seed": 1}}, refuse_other=True)
    assert sorted(trials._kept_batches(parts, settings)) == [0]  # left alone
    assert trials._kept_batches(parts, {**settings, "config": {"seed": 1}}) == {}
    assert "made with other settings" in capsys.readouterr().err
    assert not list(parts.glob("b*.parquet"))
    assert json.loads((parts / "settings.json").read_text())["config"] == {"seed": 1}


def test_a_run_directory_is_claimed_by_one_run_at_a_time(tmp_path):
    """An interrupted trials run's directory is resumed only where no running process holds
    its claim (an exclusive lock on ``.fattorus-run``): two resumes at once would share it."""
    import fcntl

    from fattorus.app import sweep as app
    from fattorus.app import trials

    run = tmp_path / "run"
    (run / trials.PARTS).mkdir(parents=True)
    (run / trials.PARTS / "settings.json").write_text("{}")
    (run / trials.PARTS / "b000000.parquet").write_bytes(b"")
    (run / ".fattorus-run").write_text("1\n")
    held = os.open(run / ".fattorus-run", os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run, still going
        assert app._claimed_elsewhere(run)
        with pytest.raises(app.UserError, match="being written by another run"):
            app._claim(run)
    finally:
        os.close(held)
    assert not app._claimed_elsewhere(run)
    app._claim(run)  # no one holds it: this run resumes it, and holds it now
    try:
        assert (run / ".fattorus-run").read_text() == f"{os.getpid()}\n"
        (run / trials.PARTS / "b000000.parquet").unlink()  # no kept batch: an ordinary run's directory
        with pytest.raises(app.UserError, match="already holds another run"):
            app._claim(run)
    finally:
        os.close(app._CLAIMS.pop(run))


def test_a_ctrl_c_after_the_results_are_written_says_the_run_finished(runs, tmp_path):
    """Interrupted between its results and the removal of its batches, a single run is
    finished: the Ctrl-C line says so and the kept batches go."""
    import shutil

    from fattorus.app import cli
    from fattorus.app import sweep as app
    from fattorus.app import trials

    run = shutil.copytree(runs["to", 2, 4], tmp_path / "results" / "runs" / "r")
    (run / trials.PARTS).mkdir()
    (run / trials.PARTS / "b000000.parquet").write_bytes(b"")
    try:
        app._single_run_interrupted(run)
        assert cli._kept_note[0] == cli.finished_note(run)
    finally:
        cli._kept_note[0] = None  # this process's Ctrl-C line, not the test's to keep
    assert not (run / trials.PARTS).exists() and (run / "summary.json").exists()


def test_a_ctrl_c_before_the_first_batch_says_no_batch_was_kept(tmp_path):
    """A ``trials=N`` run interrupted before any batch finished (its parts folder holds only
    its settings): the Ctrl-C line names the batches, not a plain single run, and the run
    directory's stubs go; with one kept batch the resume line counts it in the singular."""
    import json

    from fattorus.app import cli
    from fattorus.app import sweep as app
    from fattorus.app import trials

    run = tmp_path / "results" / "runs" / "r"
    (run / trials.PARTS).mkdir(parents=True)
    (run / trials.PARTS / "settings.json").write_text(json.dumps({"n": 1000}))
    try:
        app._single_run_interrupted(run)
        assert cli._kept_note[0] == trials.NO_BATCH_KEPT and trials.NO_BATCH_KEPT.startswith("no batch of trials")
    finally:
        cli._kept_note[0] = None
    assert not (run / trials.PARTS).exists()
    (run / trials.PARTS).mkdir(parents=True)
    (run / trials.PARTS / "b000000.parquet").write_bytes(b"")
    assert trials.resume_note(run).startswith(f"1 finished batch of trials is kept in {run};")


def test_the_trials_lines_range_shows_both_ends_alike():
    """Session 47's audit: "5–95 %: 0.71–0.895 h" (three figures each, a trailing zero dropped)."""
    from fattorus.app.sweep import _alike

    assert _alike(0.71, 0.895) == ("0.710", "0.895")
    assert _alike(1.19, 2.03) == ("1.19", "2.03")
    assert _alike(12.3, 150.2) == ("12.3", "150")
    assert _alike(0.0012, 0.0031) == ("0.00120", "0.00310")
    assert _alike(0.004, 12.0) == ("0.00400", "12.0")  # the low end keeps its figures (review)
    assert _alike(5.0, 9.997) == ("5.00", "10.0") and _alike(12.0, 1500.2) == ("12.0", "1500")
