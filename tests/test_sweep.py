"""The study app, run for real in subprocesses: every config group value, errors, resume, W&B."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml

import forkcli
from fattorus import provenance

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["workload=synthetic", "workload.synthetic.n_jobs=120", "workload.synthetic.max_nodes=16", "progress=false"]

JOBS_SCHEMA = {
    "job_id": pl.Int64,
    "submit_s": pl.Float64,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "nodes": pl.Int32,
    "runtime_s": pl.Float64,
    "estimate_s": pl.Float64,
    "wait_s": pl.Float64,
    "job_type": pl.String,
    "aph": pl.Float64,
    "alloc": pl.List(pl.Int32),
}


def sweep(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return forkcli.run("fattorus.sweep", args, cwd=cwd, env={**os.environ, "WANDB_SILENT": "true", **(env or {})},
                                          timeout=600)


def check_run_dir(d: Path) -> dict:
    """The documented schema (docs/outputs.md), and consistency between the three files."""
    assert (d / ".hydra" / "config.yaml").exists()
    jobs = pl.read_parquet(d / "jobs.parquet", glob=False)
    for col, dtype in JOBS_SCHEMA.items():
        assert jobs.schema[col] == dtype, col
    util = pl.read_parquet(d / "utilization.parquet", glob=False)
    assert util.columns[:3] == ["t_s", "busy_nodes", "utilization"]
    assert ((util["t_s"].diff().drop_nulls() - 60.0).abs() < 1e-6).all()
    summary = json.loads((d / "summary.json").read_text())
    for key in ("config", "counts", "makespan_s", "wait_s", "utilization", "aph", "replay_wall_s", "n_nodes"):
        assert key in summary
    assert summary["counts"]["replayed"] == len(jobs)
    assert summary["wait_s"]["mean"] == pytest.approx(jobs["wait_s"].mean() if len(jobs) else 0.0)
    assert summary["config"]["workload"]["sha256"]
    for j in jobs.iter_rows(named=True):
        assert len(j["alloc"]) == j["nodes"] and j["wait_s"] == pytest.approx(j["start_s"] - j["submit_s"])
    return summary


GROUPS = [
    ("+topo", ["cab", "pinot", "ft44", "ft6", "ft6x6", "ft6_tapered"], "topo"),  # tori: test_torus
    ("+speedup", ["none", "x5", "x10", "x20", "v1", "v2"], "speedup"),
    ("policy", ["to", "to_random", "first_fit", "ta", "tree_bestfit", "random_router", "random_group",
                "round_robin_node", "round_robin_router", "compact"], "policy"),
    ("sched", ["fcfs", "easy"], "sched"),
]


@pytest.mark.parametrize("override, values, key", GROUPS, ids=[g[2] for g in GROUPS])
def test_every_config_group_value_runs(results_path, override, values, key):
    extra = [] if key == "topo" else ["+topo=ft6x6"]
    out = sweep("--multirun", f"hydra.sweep.dir={results_path}", "hydra.launcher.n_jobs=1",
                f"{override}={','.join(values)}", *extra, *SMALL)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted(p.parent for p in results_path.glob("*/summary.json"))
    assert len(runs) == len(values)
    seen = {check_run_dir(d)["config"][key] for d in runs}
    assert seen == set(values)


def test_workloads_real_traces_and_a_users_file(results_path):
    swf = results_path / "mine.swf"
    # 3 jobs of a 2-core-per-node machine: 4 procs -> 2 nodes, 1 proc -> 1 node, 6 -> 3 nodes.
    swf.write_text(
        "; MaxNodes: 18\n; MaxProcs: 36\n"
        "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 10 0 50 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "3 20 0 70 6 -1 -1 6 -1 -1 1 2 1 -1 -1 -1 -1 -1\n"
    )
    out = sweep(f"hydra.run.dir={results_path / 'file'}", "+topo=ft6", f"workload.path={swf}", "workload.cores_per_node=2",
                "workload.name=mine", "progress=false")
    assert out.returncode == 0, out.stderr[-3000:]
    summary = check_run_dir(results_path / "file")
    jobs = pl.read_parquet(results_path / "file" / "jobs.parquet").sort("job_id")
    assert jobs["nodes"].to_list() == [2, 1, 3]
    assert jobs["estimate_s"].to_list() == [200.0, 100.0, 70.0]
    assert summary["config"]["workload"]["name"] == "mine"
    out = sweep("--multirun", f"hydra.sweep.dir={results_path / 'real'}", "hydra.launcher.n_jobs=1", "+topo=cab",
                "workload=atlas,thunder", "workload.window_days=1", "progress=false")
    assert out.returncode == 0, out.stderr[-3000:]
    names = {check_run_dir(p.parent)["config"]["workload"]["name"] for p in (results_path / "real").glob("*/summary.json")}
    assert names == {"atlas", "thunder"}


def test_main_command_form_and_documented_defaults(results_path):
    # A quarter day of Atlas (15 jobs replayed): the form is what is checked, not the window's length.
    out = sweep(f"hydra.run.dir={results_path / 'main'}", "+topo=pinot", "+speedup=v2", "workload.window_days=0.25",
                "policy=to", "sched=fcfs", "workload.scale=2", "seed=7", "progress=false")
    assert out.returncode == 0, out.stderr[-3000:]
    c = check_run_dir(results_path / "main")["config"]
    assert (c["topo"], c["speedup"], c["policy"], c["sched"], c["seed"], c["workload"]["scale"], c["speedup_edits"]) == (
        "pinot", "v2", "to", "fcfs", 7, 2.0, {})
    out = sweep(f"hydra.run.dir={results_path / 'defaults'}", *SMALL)
    assert out.returncode == 0, out.stderr[-3000:]
    c = check_run_dir(results_path / "defaults")["config"]
    assert (c["topo"], c["speedup"], c["policy"], c["sched"]) == ("cab", "none", "ta", "easy")
    assert "policy_config" not in c  # only a named variant (a tuned config) records one


@pytest.mark.parametrize(
    "args, words",
    # An unknown topology, key or policy, a non-number scale and topo= without '+' are cases of
    # tests/test_bad_inputs.py's table (the same one-line check): not repeated here.
    [
        (["+topo=cab", "+worklaod.scale=3"], "did you mean 'workload'"),
        (["+topo=cab", "+workload.scael=3"], "'workload.scael'"),
        (["+topo=cab", "policy.params.tie=sideways", *SMALL], "tie"),
        (["+topo=cab", "workload=file"], "workload.path"),
        (["+topo=cab", "workload.path=/no/such/log.swf"], "/no/such/log.swf"),
        # Refused before the log is read (no skip line of the default log before the error):
        (["+topo=cab", "logger.name=wandbb"], "logger.name='wandbb'"),
        (["+topo=cab", "policy=prism"], "does not support fattree"),
        (["+topo=cab", "+speedup=model", "speedup.comm_fraction=2"], "comm_fraction"),
        (["+topo=cab", "trials=4", "policy=tree_bestfit"], "batched engine"),
        # the value given is named (it read "relax_after_s=null", as if that were the value)
        (["+topo=cab", "trials=4", "policy.params.relax_after_s=100"],
         "policy.params.relax_after_s=100 needs relax_after_s=null"),
        # trials is one number: trials.batch read "Value '{}' of type 'dict' could not be converted to Integer"
        (["+topo=cab", "trials.batch=8"], "trials.batch=8: trials is a single value"),
        # a value of the wrong type, in words (it read "Value 'abc' of type 'str' could not be
        # converted to Integer", "... str is not a ListConfig, list or tuple.")
        (["+topo=cab", "seed=abc"], "seed=abc: seed takes an integer"),
        (["+topo=cab", "progress=abc"], "progress=abc: progress takes true or false"),
        (["+topo=cab", "logger=wandb", "logger.tags=notalist"], "logger.tags=notalist: logger.tags takes a list"),
        # the node OmegaConf failed on: a list's element, a parent that is a single value
        (["+topo=cab", "bins=[a,b]"], "bins=[a,b]: bins[0] takes an integer"),
        (["+topo=cab", "seed.x.y=1"], "seed.x.y=1: seed is a single value (an integer), it holds no setting 'x.y'"),
    ],
)
def test_bad_overrides_give_one_line_errors(results_path, args, words):
    out = sweep(f"hydra.run.dir={results_path}", *args)
    assert out.returncode != 0
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("fattorus.sweep: error:") and words in lines[0]
    assert "Traceback" not in out.stderr + out.stdout


def test_rerun_multirun_skips_finished_trials(results_path):
    args = ["--multirun", f"hydra.sweep.dir={results_path}", "hydra.launcher.n_jobs=1", "+topo=ft6x6", "policy=to,ta", *SMALL]
    first = sweep(*args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.count("[done]") == 2
    stamp = {p: p.stat().st_mtime_ns for p in results_path.glob("*/jobs.parquet")}
    # Remove one finished trial: the re-run redoes exactly that one.
    victim = sorted(stamp)[0]
    (victim.parent / "summary.json").unlink()
    # The other one is kept, but its skip line says it was made by other code (a study should
    # not mix code versions unknowingly): the run records the code's source digest.
    kept = sorted(stamp)[1].parent / "summary.json"
    summary = json.loads(kept.read_text())
    assert summary["fattorus"] == provenance.stamp()
    kept.write_text(json.dumps({**summary, "fattorus": {"version": "0.0.1", "source": "000000000000"}}))
    second = sweep(*args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.count("[skip]") == 1 and second.stdout.count("[done]") == 1
    skip = next(line for line in second.stdout.splitlines() if line.startswith("[skip]"))
    assert str(kept.parent) in skip and "made by another fattorus source (000000000000" in skip, skip
    for p, t in stamp.items():
        assert (p.stat().st_mtime_ns == t) == (p != victim)



def test_wandb_offline_run_holds_the_summary_metrics(results_path):
    home = results_path / "home"
    home.mkdir()
    out = sweep(f"hydra.run.dir={results_path}", "+topo=ft6x6", "logger=wandb", *SMALL,
                env={"WANDB_MODE": "offline", "WANDB_API_KEY": "", "WANDB_DIR": str(results_path), "HOME": str(home)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert not [p for p in home.rglob("*") if p.is_file()]  # W&B's cache and staging stay with the run
    summary = json.loads((results_path / "summary.json").read_text())
    files = list(results_path.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 1
    data = files[0].read_bytes()
    # Summary items are protobuf (key, value_json) pairs: each key followed closely by its
    # JSON value.
    for key, value in [("jobs/replayed", summary["counts"]["replayed"]), ("wait_s/mean", summary["wait_s"]["mean"])]:
        m = re.search(re.escape(key.encode()) + rb".{1,6}?" + re.escape(json.dumps(value).encode()), data, re.S)
        assert m, (key, value)
    assert b"by_bin" in data and b"utilization_curve" in data


def test_wandb_online_without_a_key_is_one_line_before_the_replay(results_path):
    """``logger.mode=online`` (or ``WANDB_MODE=online``) without a W&B key ended in a 30-line
    traceback from wandb.init after the replay (a session-46 walkthrough of the README): one
    line, exit 2, before anything is replayed or written."""
    home = results_path.parent / "home"
    home.mkdir()
    env = {"WANDB_API_KEY": "", "HOME": str(home), "NETRC": str(home / "none")}
    for extra, where in ((["logger.mode=online"], "logger.mode=online"), ([], "WANDB_MODE=online")):
        out = sweep(f"hydra.run.dir={results_path / 'run'}", "+topo=ft6x6", "logger=wandb", *extra, *SMALL,
                    env={**env, **({} if extra else {"WANDB_MODE": "online"})})
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
        assert lines[0].startswith(f"fattorus.sweep: error: {where}: no W&B API key"), lines
        assert not (results_path / "run").exists()


def test_a_user_logged_in_to_wandb_any_way_it_reads_is_not_refused(tmp_path, monkeypatch):
    """The online check must never refuse a logged-in user: each place W&B reads credentials
    from (wandb.sdk.lib.wbauth) counts — the environment, a netrc entry for its host (or a
    private server's, WANDB_BASE_URL), its settings file; with none of them it says no."""
    from fattorus.app import logger

    for var in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_BASE_URL", "NETRC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    assert not logger.has_api_key()
    monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    assert logger.has_api_key()
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.setenv("WANDB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    assert logger.has_api_key()
    monkeypatch.delenv("WANDB_IDENTITY_TOKEN_FILE")
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine example.org\n  login me\n  password x\n")
    netrc.chmod(0o600)
    assert not logger.has_api_key()  # another site's entry is no W&B key
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "k" * 40 + "\n")
    assert logger.has_api_key()
    netrc.write_text("machine wb.example.org\n  login user\n  password x\n")
    assert not logger.has_api_key()
    monkeypatch.setenv("WANDB_BASE_URL", "https://wb.example.org")
    assert logger.has_api_key()
    netrc.write_text("machine localhost:8080\n  login user\n  password x\n")  # W&B's local server, by netloc
    monkeypatch.setenv("WANDB_BASE_URL", "http://LocalHost:8080")
    assert logger.has_api_key()
    monkeypatch.delenv("WANDB_BASE_URL")
    netrc.unlink()
    (tmp_path / "wandb_config").mkdir()
    (tmp_path / "wandb_config" / "settings").write_text("[default]\napi_key = " + "k" * 40 + "\n")
    assert logger.has_api_key()


def test_a_wandb_refusal_after_the_replay_is_one_line_with_the_results_kept(tmp_path, monkeypatch):
    """What W&B refuses only at wandb.init (a key it rejects, no network) comes after the
    results are written: a one-line LoggingError saying where they are (the sweep exits 1)."""
    import wandb

    from fattorus.app import logger
    from fattorus.sched import replay
    from fattorus.topology import fattree

    def refuse(**kwargs):
        raise wandb.errors.CommError("Network error (ConnectionError),\n entering retry loop.")

    monkeypatch.setattr(wandb, "init", refuse)
    for var in ("WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR", "WANDB_ARTIFACT_DIR"):  # restored after
        monkeypatch.setenv(var, str(tmp_path / "results" / "wandb_home" / var))
    jobs = pl.DataFrame({"job_id": [1], "submit_s": [0.0], "runtime_s": [60.0], "requested_s": [120.0],
                         "nodes": pl.Series([2], dtype=pl.Int32), "status": pl.Series([1], dtype=pl.Int32)})
    result = replay.replay(jobs, fattree.load("ft6"), "to", "easy",
                           config={"topo": "ft6", "policy": "to", "sched": "easy", "speedup": "none", "seed": 0,
                                   "workload": {"name": "w", "scale": 1}})
    with pytest.raises(logger.LoggingError) as err:
        logger.log_run({"mode": "online", "project": "p"}, {}, result, tmp_path / "results" / "run")
    text = str(err.value)
    assert "\n" not in text and text.startswith("W&B: Network error (ConnectionError), entering retry loop.")
    assert str(tmp_path / "results" / "run") in text


@pytest.mark.parametrize("app", ["fattorus.sweep", "fattorus.qos"])
def test_the_slurm_launcher_composes(tmp_path, app):
    # The README's Slurm path: the launcher config must compose (no joblib-only keys leak in).
    out = forkcli.run(app, ["hydra/launcher=slurm", "hydra.launcher.partition=p", "--cfg", "hydra"], cwd=ROOT,
                            timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SlurmLauncher" in out.stdout and "partition: p" in out.stdout


def test_run_directory_names_the_scale_used_and_a_tuned_policy_config(tmp_path):
    """`workload.scale=machine` (the default) names the machine's default load in the directory
    (Pinot: x3, conf/topo/pinot.yaml), not the word; a tuned config of `ta` is named by its
    config, so it reads apart from a plain `ta` run."""
    out = sweep("+topo=pinot", "policy=ta_tuned_atlas2x_cab", "workload.window_days=1", "progress=false", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    (run,) = (tmp_path / "results" / "runs").iterdir()
    assert re.fullmatch(r"[0-9_-]+_pinot-ta_tuned_atlas2x_cab-easy-atlas-x3-none-s0-p[0-9]+", run.name), run.name
    summary = check_run_dir(run)
    assert summary["config"]["policy"] == "ta" and summary["config"]["workload"]["scale_factor"] == 3
    # ... and its summary and done line name the config too (compare and the report read it).
    assert summary["config"]["policy_config"] == "ta_tuned_atlas2x_cab"
    assert "done: pinot ta_tuned_atlas2x_cab/easy " in out.stdout, out.stdout[-500:]
    # Without +topo the default machine's load (Cab: x2 in conf/topo/cab.yaml); a topology
    # without a default_scale: x1; a number or fit as given.
    from fattorus.app.config import policy_label, resolved_scale

    # A config that is a policy of its own is no variant: policy=to_random policy.name=to ran `to`.
    assert [policy_label("to", "to_random"), policy_label("ta", "ta_tuned_x"), policy_label("to", "ta")] == \
        ["to", "ta_tuned_x", "to"]

    assert [resolved_scale("machine", 1, None), resolved_scale("machine", 1, "ft6x6"), resolved_scale(2.5, 3, "pinot"),
            resolved_scale("fit", 3, "pinot"), resolved_scale("machine", "fit", "bluewaters")] == ["2", "1", "2.5", "fit", "fit"]


def test_a_refused_run_leaves_no_run_directory(tmp_path):
    out = sweep("workload.scale=-2", cwd=tmp_path)
    assert out.returncode == 2 and "scale factor" in out.stderr
    # Hydra's stub directory is removed, and the results/runs/ it made for it (session 43).
    assert not (tmp_path / "results").exists()
    # A setting refused after the replay would have cost the whole replay and left its results.
    out = sweep("logger.name=nosuch", cwd=tmp_path)
    assert out.returncode == 2 and "logger.name" in out.stderr
    assert not (tmp_path / "results").exists()
    (tmp_path / "results" / "runs").mkdir(parents=True)  # a folder that was there: it stays, empty
    out = sweep("logger=wandb", "logger.mode=bogus", cwd=tmp_path)
    assert out.returncode == 2 and "logger.mode='bogus'" in out.stderr
    assert not list((tmp_path / "results" / "runs").iterdir())


def test_directories_outside_results_and_a_held_run_directory_are_refused_before_anything_is_written(tmp_path):
    """``hydra.run.dir`` / ``hydra.sweep.dir`` outside a ``results/`` directory: one line, exit
    2, nothing made or replaced (a user's own folder kept its ``jobs.parquet``); a single run
    into a directory holding a finished run: one line, exit 2 (a user mistake), and that run's
    config copy is not rewritten. (And a scenario edited on the command line is recorded.)"""
    own = tmp_path / "mine"
    own.mkdir()
    (own / "jobs.parquet").write_text("precious")
    for args, key in [([f"hydra.run.dir={own}"], "hydra.run.dir"),
                      (["--multirun", f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.launcher.n_jobs=1"],
                       "hydra.sweep.dir")]:
        out = sweep(*args, "+topo=ft6x6", *SMALL)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and f"{key}=" in lines[0], out.stderr
        assert "must lie under a results/ directory" in lines[0]
    assert [p.name for p in own.iterdir()] == ["jobs.parquet"] and (own / "jobs.parquet").read_text() == "precious"
    assert not (tmp_path / "sweep").exists()
    run = tmp_path / "results" / "run"
    # (A scenario edited on the command line: the summary says what the run changed of its file.)
    assert sweep(f"hydra.run.dir={run}", "+topo=ft6x6", "+speedup=x5", "speedup.classes.0.min_nodes=8",
                 *SMALL).returncode == 0
    config = json.loads((run / "summary.json").read_text())["config"]
    assert config["speedup"] == "x5" and config["speedup_edits"] == {"classes.0.min_nodes": 8}
    copy = (run / ".hydra" / "config.yaml").read_text()
    out = sweep(f"hydra.run.dir={run}", "+topo=ft6x6", "seed=3", *SMALL)
    assert out.returncode == 2 and "already holds a finished run" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert (run / ".hydra" / "config.yaml").read_text() == copy


def test_rerun_redoes_trials_whose_job_log_changed(results_path):
    log = results_path / "jobs.swf"
    rows = [f"{i} {i * 60} 0 600 4 -1 -1 4 1200 -1 1 1 1 -1 -1 -1 -1 -1" for i in range(1, 6)]
    log.write_text("\n".join(rows) + "\n")
    args = ["--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1", "+topo=ft6x6",
            "workload=file", f"workload.path={log}", "workload.cores_per_node=1", "progress=false"]
    assert sweep(*args).returncode == 0
    again = sweep(*args)
    assert again.stdout.count("[skip]") == 1
    log.write_text("\n".join(rows + ["6 400 0 600 8 -1 -1 8 1200 -1 1 1 1 -1 -1 -1 -1 -1"]) + "\n")
    changed = sweep(*args)
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert changed.stdout.count("[done]") == 1 and "changed since this trial ran" in changed.stderr
    assert "damaged trial" not in changed.stderr  # it said "damaged trial (None)" too before session 27
    summary = json.loads(next((results_path / "sweep").glob("*/summary.json")).read_text())
    assert summary["counts"]["replayed"] == 6


def test_a_log_path_under_a_named_workload_is_flagged(results_path):
    log = results_path / "jobs.swf"
    log.write_text("\n".join(f"{i} {i * 60} 0 600 4 -1 -1 4 1200 -1 1 1 1 -1 -1 -1 -1 -1" for i in range(1, 4)) + "\n")
    borrowed = sweep(f"hydra.run.dir={results_path / 'a'}", "+topo=ft6x6", f"workload.path={log}", "progress=false")
    assert borrowed.returncode == 0 and "keeps atlas's name" in borrowed.stderr
    own = sweep(f"hydra.run.dir={results_path / 'b'}", "+topo=ft6x6", "workload=file", f"workload.path={log}",
                "workload.cores_per_node=1", "progress=false")
    assert own.returncode == 0 and "warning" not in own.stderr


def test_a_failed_multirun_trial_is_one_line_naming_it(results_path):
    out = sweep("--multirun", f"hydra.sweep.dir={results_path}", "hydra.launcher.n_jobs=1", "+topo=ft6x6",
                "workload.scale=-2,1", *SMALL)
    assert out.returncode == 2
    assert "Error executing job" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "trial [" in errors[0] and "workload.scale=-2" in errors[0]


def test_a_bad_value_in_a_multiruns_list_is_refused_before_any_trial_runs(results_path):
    """Every trial's settings are checked before the first runs (session 45's exploratory run:
    `workload.scale=0` last in a list was refused only after the other trials had run). The
    bad value is the list's last: nothing runs, nothing is written (the sweep's folder is never
    made). With more trials than are all checked, every value of every list still is."""
    from fattorus.app import sweep as sweep_app

    out = sweep("--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1", "+topo=ft6x6",
                "workload.scale=1,2,0", *SMALL)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "trial [" in errors[0] and "workload.scale=0: the scale factor must be" in errors[0], errors
    assert not (results_path / "sweep").exists() and "done" not in out.stdout

    import hydra

    from fattorus import paths
    from fattorus.app import config as config_mod

    config_mod.register()
    checked: list[list[str]] = []
    real = sweep_app.check_run
    sweep_app.check_run = lambda cfg, machines=None: checked.append([cfg.seed, cfg.workload.scale])
    try:
        with hydra.initialize_config_dir(config_dir=str(paths.conf_dir()), version_base="1.3"):
            sweep_app.check_trials(["+topo=ft6x6", "seed=0,1,2,3", "workload.scale=1,2,3"], check_all_first=2)
    finally:
        sweep_app.check_run = real
    # Hydra's order (the last list varies fastest): the first two trials, then each first trial
    # with a value not met yet: scale 3 (seed 0), then seeds 1, 2 and 3 (scale 1).
    assert checked == [[0, 1], [0, 2], [0, 3], [1, 1], [2, 1], [3, 1]], checked


def test_a_multirun_reads_a_machine_from_a_folder_on_hydras_searchpath(results_path, tmp_path):
    """A machine YAML kept outside conf/ (``hydra.searchpath``, as the tuner's exported command
    names one) ran in a single run but a multirun was refused ("Could not find 'topo/...'"):
    the trials' up-front check composed without the search path (session 47's exploratory
    run). Both trials run on the user's 9-node tree."""
    (tmp_path / "mine" / "topo").mkdir(parents=True)
    (tmp_path / "mine" / "topo" / "ft_mine.yaml").write_text(yaml.safe_dump(
        {"kind": "fattree", "name": "ft_mine", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 1,
         "up_ports": 3, "core_switches": 3}))
    out = sweep("--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1",
                f"hydra.searchpath=[file://{tmp_path / 'mine'}]", "+topo=ft_mine", "policy=to,ta", "workload=synthetic",
                "workload.synthetic.n_jobs=30", "workload.synthetic.max_nodes=4", "progress=false")
    assert out.returncode == 0, out.stderr[-2000:]
    summaries = [json.loads(p.read_text()) for p in (results_path / "sweep").glob("*/summary.json")]
    assert sorted(s["config"]["policy"] for s in summaries) == ["ta", "to"]
    assert {s["n_nodes"] for s in summaries} == {9}


def test_a_rerun_redoes_trials_whose_own_machine_or_scenario_file_changed(results_path, tmp_path):
    """Session 47's exploratory run: a study rerun after the operator edited their machine
    file (1,000 -> 800 nodes) or their speedup scenario kept every finished trial ("already
    holds a finished run"), only the log's checksum being compared. Now a trial whose machine,
    scenario or policy parameters differ from what it ran with is run again, with a warning."""
    mine = tmp_path / "mine"
    (mine / "topo").mkdir(parents=True)
    (mine / "speedup").mkdir()
    tree = {"kind": "fattree", "name": "ft_mine", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 2,
            "up_ports": 3, "core_switches": 6}
    (mine / "topo" / "ft_mine.yaml").write_text(yaml.safe_dump(tree))
    scenario = yaml.safe_load((ROOT / "conf" / "speedup" / "x10.yaml").read_text())
    (mine / "speedup" / "mine10.yaml").write_text(yaml.safe_dump({**scenario, "name": "mine10"}))
    args = ("--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1",
            f"hydra.searchpath=[file://{mine}]", "+topo=ft_mine", "+speedup=mine10", "policy=to",
            "workload=synthetic", "workload.synthetic.n_jobs=30", "workload.synthetic.max_nodes=4", "progress=false")
    assert sweep(*args).returncode == 0
    again = sweep(*args)
    assert again.returncode == 0 and "[skip]" in again.stdout and "re-running" not in again.stderr
    (mine / "topo" / "ft_mine.yaml").write_text(yaml.safe_dump({**tree, "pods": 1, "core_switches": 3}))
    out = sweep(*args)
    assert out.returncode == 0 and "its machine 'ft_mine' changed since this trial ran (core_switches, pods)" in out.stderr, out.stderr
    (summary,) = [json.loads(p.read_text()) for p in (results_path / "sweep").glob("*/summary.json")]
    assert summary["n_nodes"] == 9
    (mine / "speedup" / "mine10.yaml").write_text(yaml.safe_dump({**scenario, "name": "mine10", "classes": [
        {**scenario["classes"][0], "min_nodes": 2}]}))
    out = sweep(*args)
    assert out.returncode == 0 and "its speedup scenario 'mine10' changed since this trial ran" in out.stderr, out.stderr


def test_a_users_machine_hidden_by_a_shipped_one_of_its_name_is_refused(results_path, tmp_path):
    """A user's ``topo/cab.yaml`` on ``hydra.searchpath`` (a 9-node tree named cab): Hydra
    reads conf/ first, so ``+topo=cab`` replayed the shipped 1,296-node Cab without a word
    (session 47's exploratory run). Refused in one line, in a single run and in a multirun,
    before any directory is made. And a machine given as a file path (``+topo=DIR/topo/x.yaml``)
    gets the search-path form to use, not Hydra's "Could not find 'topo//...'"."""
    (tmp_path / "mine" / "topo").mkdir(parents=True)
    (tmp_path / "mine" / "topo" / "cab.yaml").write_text(yaml.safe_dump(
        {"kind": "fattree", "name": "cab", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 1,
         "up_ports": 3, "core_switches": 3}))
    searchpath = f"hydra.searchpath=[file://{tmp_path / 'mine'}]"
    for args in ([f"hydra.run.dir={results_path / 'one'}", "+topo=cab"],
                 ["--multirun", f"hydra.sweep.dir={results_path / 'many'}", "+topo=pinot,cab"]):
        out = sweep(*args, searchpath, *SMALL)
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
        assert f"{tmp_path / 'mine' / 'topo' / 'cab.yaml'} is hidden by the shipped topo 'cab'" in lines[0]
    assert not any(results_path.iterdir())
    out = sweep(f"hydra.run.dir={results_path / 'path'}", f"+topo={tmp_path / 'mine' / 'topo' / 'cab.yaml'}", *SMALL)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "conf/topo/cab.yaml is a shipped config of this file's name: rename the file" in out.stderr
    (tmp_path / "mine" / "topo" / "cab.yaml").rename(tmp_path / "mine" / "topo" / "my_tree.yaml")
    out = sweep(f"hydra.run.dir={results_path / 'path'}", f"+topo={tmp_path / 'mine' / 'topo' / 'my_tree.yaml'}", *SMALL)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"give 'hydra.searchpath=[file://{tmp_path / 'mine'}]' +topo=my_tree" in out.stderr


def test_a_multirun_with_a_very_long_override_gets_a_short_stable_directory(results_path):
    """`bins=[1,...,200]` makes an override name of ~700 bytes, past what a file system allows
    in one name (255): the trial's directory is cut to 200 bytes and ends in a hash of the
    whole name, the same on a rerun (which then skips the finished trial)."""
    from fattorus.app.config import MAX_COMPONENT_BYTES, path_component

    bins = "bins=[" + ",".join(str(i) for i in range(1, 201)) + "]"
    assert path_component("a" * 300) != path_component("a" * 299 + "b")
    assert path_component("short=1") == "short=1"
    args = ["--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1", "+topo=ft6x6", bins, *SMALL]
    out = sweep(*args)
    assert out.returncode == 0, out.stderr[-2000:]
    (trial,) = [d for d in (results_path / "sweep").iterdir() if d.is_dir()]
    assert len(trial.name.encode()) == MAX_COMPONENT_BYTES and trial.name.startswith("+topo=ft6x6,bins=[1,2,3,")
    check_run_dir(trial)
    assert sweep(*args).stdout.count("[skip]") == 1
    # `[` in a directory name is no glob pattern to the readers (polars globs by default).
    from fattorus.app import compare
    from fattorus.report.load import load_runs

    assert load_runs(results_path / "sweep").height == 1
    assert compare.main([str(results_path / "sweep")]) == 0 and "| ta |" in (results_path / "sweep" / "compare.md").read_text()


def test_the_done_line_counts_every_job_left_out_by_reason(results_path):
    """Jobs the replay cannot run are counted in summary.json and named in the run's last line
    (by hand: one job with -3 nodes, one cancelled before it started; two replayed)."""
    log = results_path / "jobs.swf"
    log.write_text("1 0 0 600 4 -1 -1 4 1200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "2 60 0 600 -3 -1 -1 -3 1200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "3 120 0 600 4 -1 -1 4 1200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "4 180 0 0 4 -1 -1 4 1200 -1 5 1 1 -1 -1 -1 -1 -1\n")
    out = sweep(f"hydra.run.dir={results_path / 'run'}", "+topo=ft6x6", "workload=file", f"workload.path={log}",
                "workload.cores_per_node=1", "progress=false")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 jobs (2 not replayed: cancelled_before_start 1, bad_nodes 1)," in out.stdout
    summary = check_run_dir(results_path / "run")
    skipped = summary["counts"]["skipped"]
    assert skipped["cancelled_before_start"] == 1 and skipped["bad_nodes"] == 1
    # Which jobs, not only how many (session 27): skipped.parquet, listed in summary.json.
    left = pl.read_parquet(results_path / "run" / "skipped.parquet")
    assert left.select("job_id", "reason").rows() == [(2, "bad_nodes"), (4, "cancelled_before_start")]
    assert summary["files"]["skipped.parquet"] == {"rows": 2}


def test_a_refused_multirun_trial_leaves_no_directory(results_path):
    """A trial refused when it runs (its window starts after the log ends: only the log says
    so, so the check before the multirun lets it through) is one line and leaves no stub
    directory among the trials (as a refused single run leaves none); the other trial runs.
    (A value every run refuses, `seed=-1`, now stops the multirun before it starts: the test above.)"""
    out = sweep("--multirun", f"hydra.sweep.dir={results_path / 'sweep'}", "hydra.launcher.n_jobs=1", "+topo=ft6x6",
                "workload.window_start_days=1000,0", *SMALL)
    assert out.returncode != 0 and "window_start_days=1000 starts after the log ends" in out.stderr, out.stderr[-2000:]
    (trial,) = [d.name for d in (results_path / "sweep").iterdir() if d.is_dir()]
    assert trial.startswith("+topo=ft6x6,") and "workload.window_start_days=0," in trial, trial


@pytest.mark.parametrize("app", ["fattorus.sweep", "fattorus.qos"])
def test_help_says_what_the_app_does_before_hydras_lists(app: str):
    """``--help`` opens with the app's own usage and summary (Hydra's default said only "sweep is
    powered by Hydra"), then Hydra's groups; the replay's names the README's main command."""
    out = forkcli.run(app, ["--help"], cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.startswith(f"python -m {app} ")
    assert out.stdout.index("results/") < out.stdout.index("== Configuration groups ==")
    assert "powered by Hydra" not in out.stdout
    if app == "fattorus.sweep":
        main_command = re.search(r"python -m fattorus\.sweep \+topo=\S+ \+speedup=\S+", (ROOT / "README.md").read_text())
        assert main_command and main_command.group(0) in out.stdout


def test_the_dirty_line_notice_names_the_first_ones_field(tmp_path):
    """The one-line notice names the first dirty line's field and value, not just its reason
    (it said only "line 3 (non-numeric field)" before session 27)."""
    from fattorus import workload
    from fattorus.app.sweep import _skip_line

    path = tmp_path / "log.swf"
    path.write_text("1 0 -1 50 8 -1 -1 8 60 -1 1 1 1 -1 1 -1 -1 -1\n2 5 -1 12a4 8 -1 -1 8 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    line = _skip_line(workload.load(path, cores_per_node=1))
    assert line == f"fattorus.sweep: {path}: skipped 1 dirty line(s): 1 non-numeric field; first: line 2 " \
                   "(non-numeric field, field 4: 12a4)"


def test_the_done_lines_mean_wait_of_seconds_is_in_seconds():
    """A mean wait of seconds read "0.00 h" (session 27 review); hours from 0.01 h on."""
    from fattorus.app.sweep import _wait

    assert [_wait(s) for s in (0.0, 5.94, 35.9, 36.0, 7 * 3600 + 36)] == ["0.00 h", "5.94 s", "35.9 s", "0.01 h", "7.01 h"]


def test_the_scale_line_names_jobs_no_window_holds():
    """With a window, jobs of unknown submit time are left out as outside_window: the scale line
    says how many (without a window the done line counts them as bad_submit; session 27)."""
    from fattorus.app.sweep import _scale_line

    counts = {"scale_factor": 2.0, "dropped_by_scaling": 3, "outside_window": 9, "unknown_submit": 4}
    line = _scale_line({"name": "thunder", "scale": 2, "window_days": 2}, counts, 1296)
    assert line == ("workload thunder: node counts x2, nodes' = ceil(nodes x factor); 3 job(s) of the window dropped, "
                    "scaled past the 1296 usable nodes; 4 job(s) of the log have no submit time: no window holds them")
    plain = _scale_line({"name": "thunder", "scale": 2}, {"scale_factor": 2.0, "dropped_by_scaling": 3}, 1296)
    assert plain.endswith("3 job(s) of the log dropped, scaled past the 1296 usable nodes")


def test_the_interference_tool_names_a_qos_run_as_no_replay(tmp_path):
    """A QoS run's folder read as "cannot read config.topo (KeyError: 'config')"; it is named as
    no replay run directory (session 27 review)."""
    import pytest

    from fattorus.analysis.interference import RunDirError, load_run

    (tmp_path / "summary.json").write_text(json.dumps({"qos": {"system": "small"}, "jobs": 16}))
    with pytest.raises(RunDirError, match="no replay's config in it .* a fattorus.qos run is not"):
        load_run(tmp_path)


def test_the_interference_tools_topo_file_must_be_the_runs_machine_whatever_its_name(tmp_path):
    """``interference --topo FILE`` was checked by the file's stem against the run's machine
    name: another machine in a file named like the run's went through (its exposure and links
    counted on the wrong tree), and the run's own machine in a file of another name (or with
    another ``name:``) was refused (session 47's exploratory run). Now field by field."""
    import polars as pl
    import pytest

    from fattorus.analysis.interference import RunDirError, load_run

    ft6 = {"kind": "fattree", "name": "ft6", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 2,
           "up_ports": 3, "core_switches": 6}
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"config": {"topo": "ft6"}, "topology": ft6}))
    pl.DataFrame({"job_id": [1], "start_s": [0.0], "end_s": [1.0], "alloc": [[0, 1]]}).write_parquet(run / "jobs.parquet")

    def machine_file(file_name: str, **changes) -> str:
        path = tmp_path / file_name
        path.write_text(yaml.safe_dump({**ft6, **changes}))
        return str(path)

    same_renamed = machine_file("mine.yaml", name="my_tree")
    assert load_run(run, same_renamed)[0].n_nodes == 18
    # the same machine with its defaults left out (up_ports = nodes_per_leaf, cores = radix)
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump({k: v for k, v in ft6.items() if k not in ("up_ports", "core_switches")}))
    assert load_run(run, str(bare))[0].n_nodes == 18
    other = machine_file("ft6.yaml", pods=1)
    with pytest.raises(RunDirError, match=r"another machine .*\('ft6': pods 2; the file has pods 1\)"):
        load_run(run, other)


@pytest.mark.parametrize("raised, shown", [
    ('MemoryError("Allocation failed (probably too large).")', "Allocation failed (probably too large)."),
    # XLA's is a RuntimeError (RESOURCE_EXHAUSTED), not a MemoryError (review, session 44)
    ('RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 92341796864 bytes.")',
     "RESOURCE_EXHAUSTED: Out of memory allocating 92341796864 bytes."),
])
def test_a_run_out_of_memory_is_one_line_and_leaves_no_run_directory(tmp_path, raised, shown):
    """A run past the machine's memory (a flow model of millions of flows a job) ended in the
    allocator's traceback and left its stub directory in results/runs/ (session 44's exploratory
    run): now one line, exit 1, the directory it made taken away. The allocation failure is
    simulated in the replay."""
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        from fattorus.sched import replay
        def replay_(*args, **kwargs):
            raise {raised}
        replay.replay = replay_
        from fattorus.app import sweep
        sys.argv = ["fattorus.sweep", "+topo=ft6", "workload=synthetic", "progress=false"]
        sweep.main()
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith(
        f"fattorus.sweep: error: out of memory ({shown}): this run needs more memory than this computer has free"), out.stderr
    assert not (tmp_path / "results").exists()


def test_the_qos_apps_help_lists_its_own_group_only():
    """The QoS app's ``--help`` listed every group of conf/, the replay's ``topo``, ``policy``,
    ... too (session 44's exploratory run): its template lists ``qos`` alone, with every
    configuration conf/qos/ holds."""
    out = forkcli.run("fattorus.qos", ["--help"], cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    groups = out.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    listed = [line for line in groups.splitlines() if ": " in line and not line.startswith("Compose")]
    shipped = ", ".join(sorted(p.stem for p in (ROOT / "conf" / "qos").glob("*.yaml")))
    assert listed == [f"qos: {shipped}"], listed


def test_the_replays_help_lists_its_groups_and_not_the_qos_apps():
    """The replay's ``--help`` listed the QoS app's ``qos`` group beside its own (session 44's
    "found and left"): its template lists every group of conf/ but ``qos``, each with every
    configuration its folder holds, read at ``--help`` time (a policy exported by the tuner
    appears without editing the template)."""
    out = forkcli.run("fattorus.sweep", ["--help"], cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    groups = out.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    listed = [line for line in groups.splitlines() if ": " in line and not line.startswith("Compose")]
    folders = sorted(d for d in (ROOT / "conf").iterdir() if d.is_dir() and d.name not in ("hydra", "qos"))
    assert listed == [f"{d.name}: {', '.join(sorted(p.stem for p in d.glob('*.yaml')))}" for d in folders], listed
    assert "qos:" not in groups and "python -m fattorus.qos" in out.stdout
