"""Tuning `prism` on a 3D torus with run times from the bandwidth model (``python -m
fattorus.tune --policy prism --speedup model --objective system_efficiency``).

A small torus (torus8, 1,024 nodes) and a small seeded synthetic workload, so that each
model replay takes seconds. The numbers the study writes are checked against replays run
here with a bandwidth model built here (the run's summary values: utilization times
application efficiency), and the exported config against the study app run as a subprocess.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import optuna
import pytest
import yaml

import forkcli
from fattorus import topology, workload
from fattorus.analysis import commtime, interference
from fattorus.app import tune
from fattorus.sched import replay
from fattorus.sched.policy import PrismParams

ROOT = Path(__file__).resolve().parents[1]
TRAIN, TEST = (0.0, 0.15), (0.15, 0.3)  # days: ~100 jobs each
WORKLOAD = {"name": "tiny_torus", "path": None, "format": "synthetic", "cores_per_node": 1, "scale": 1,
            "window_start_days": 0, "window_days": None,
            "synthetic": {"seed": 3, "n_jobs": 220, "arrival_rate_per_h": 30.0, "max_nodes": 256,
                          "size_dist": "pow2", "pow2_fraction": 0.75, "runtime_median_s": 1800.0,
                          "runtime_sigma": 1.0, "runtime_max_s": 14400.0, "overestimate_max": 3.0, "n_users": 10}}
# conf/speedup/model.yaml, written out rather than read through the tuner.
MIX = "stencil4d=1,unstructured_mesh=1,random_pairs=1,subcomm_a2a=1"


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory) -> Path:
    """The study, run in this process (``--jobs 1``: worker processes would each import and
    compile the bandwidth model again; tests/test_tune.py and test_tune_postgres.py check
    parallel workers, which take trials the same way whatever the policy)."""
    d = tmp_path_factory.mktemp("tune_prism")
    (d / "conf" / "workload").mkdir(parents=True)
    (d / "conf" / "workload" / "tiny_torus.yaml").write_text(yaml.safe_dump(WORKLOAD))
    tune.main(["--name", "p", "--topo", "torus8", "--workload", str(d / "conf" / "workload" / "tiny_torus.yaml"),
               "--scale", "1", "--train", "0:0.15", "--test", "0.15:0.3", "--policy", "prism", "--speedup", "model",
               "--objective", "system_efficiency", "--trials", "3", "--jobs", "1", "--seed", "2", "--sampler", "random",
               "--storage", f"sqlite:///{d}/results/p.db", "--export", str(d / "conf" / "policy" / "prism_tuned_p.yaml"),
               "--out", str(d / "results" / "out")])
    return d


def model_run(params: dict, sched: str, window: tuple[float, float]) -> dict:
    """The replay's summary with a bandwidth model built here (seed 0, c = 0.3)."""
    torus = topology.load("torus8")
    wl, _ = workload.from_config({**WORKLOAD, "scale": 1}, machine_nodes=torus.n_nodes)
    table = workload.first_days(workload.with_estimate(wl.jobs), window[1] - window[0], window[0])
    model = commtime.ModelRuntimes(torus, interference.parse_mix(MIX), 0.3, 0)
    return replay.replay(table, torus, "prism", sched, policy_params=params, runtime_model=model).summary


def test_the_study_tunes_prism_by_system_efficiency(study_dir):
    d = study_dir
    study = optuna.load_study(study_name="p", storage=f"sqlite:///{d}/results/p.db")
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE and len(study.trials) == 3
    base = study.trials[0]
    params, sched = tune.decode(base.params, "prism")
    # prism's defaults (the paper gives no weights), written out; `internal` is not tuned.
    assert (params, sched) == ({"fill": 1.0, "bisection": 1.0, "contact": 0.5, "slack": 2.0}, "easy")
    summary = model_run(params, sched, TRAIN)
    expected = summary["utilization"]["mean"] * summary["runtime_model"]["application_efficiency"]
    assert 0 < expected < 1
    assert base.value == pytest.approx(expected, rel=1e-12)
    assert base.user_attrs["train_metrics"]["application_efficiency"] == pytest.approx(
        summary["runtime_model"]["application_efficiency"], rel=1e-12)
    # The exported point is the study's best trial.
    exported = yaml.safe_load((d / "conf" / "policy" / "prism_tuned_p.yaml").read_text())["params"]
    best = max((t for t in study.trials if t.value is not None), key=lambda t: t.value)
    assert exported == tune.decode(best.params, "prism")[0]
    setup = study.user_attrs["fattorus_tune_setup"]
    assert setup["policy"] == "prism" and setup["speedup"] == "model"
    assert setup["model"] == {"comm_fraction": 0.3, "patterns": MIX}


def test_export_and_comparison_match_independent_replays(study_dir):
    d = study_dir
    exported = yaml.safe_load((d / "conf" / "policy" / "prism_tuned_p.yaml").read_text())
    assert exported["name"] == "prism"
    PrismParams.from_mapping(exported["params"])  # a valid policy config
    report = json.loads((d / "results" / "out" / "comparison.json").read_text())
    assert report["setup"]["policy"] == "prism" and report["setup"]["speedup"] == "model"
    for row in report["rows"]:
        summary = model_run(row["policy_params"], row["sched"], TEST)
        assert row["jobs"] == summary["counts"]["replayed"] > 50
        assert row["utilization"] == pytest.approx(summary["utilization"]["mean"], rel=1e-12)
        app = summary["runtime_model"]["application_efficiency"]
        assert row["application_efficiency"] == pytest.approx(app, rel=1e-12)
        assert row["system_efficiency"] == pytest.approx(summary["utilization"]["mean"] * app, rel=1e-12)
        assert row["exposure_share"] == 0.0  # prism: no two running jobs share a link
    md = (d / "results" / "out" / "comparison.md").read_text()
    assert "| system efficiency |" in md and "Policy `prism`" in md and "bandwidth model" in md


def _app_run(d: Path, policy: str, sched: str, name: str) -> dict:
    """The replay app run as a command on the test window with policy file ``policy`` (from
    the study's conf/policy) and the model: its summary."""
    run_dir = d / "results" / name
    proc = forkcli.run("fattorus.sweep", ["+topo=torus8", f"policy={policy}", f"sched={sched}",
                                          "+speedup=model", "workload=tiny_torus", "workload.scale=1",
                                          f"workload.window_start_days={TEST[0]:g}",
                                          f"workload.window_days={TEST[1] - TEST[0]:g}", "progress=false",
                                          f"hydra.searchpath=[file://{d / 'conf'}]", f"hydra.run.dir={run_dir}"],
                       cwd=ROOT, env={**os.environ, "WANDB_SILENT": "true"}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads((run_dir / "summary.json").read_text())


def test_exported_config_runs_in_the_app_with_the_model(study_dir):
    d = study_dir
    report = json.loads((d / "results" / "out" / "comparison.json").read_text())
    tuned = {r["arm"]: r for r in report["rows"]}["tuned"]
    summary = _app_run(d, "prism_tuned_p", tuned["sched"], "app_run")
    app = summary["runtime_model"]["application_efficiency"]
    assert summary["utilization"]["mean"] * app == pytest.approx(tuned["system_efficiency"], rel=1e-12)
    # This tiny study's best point is prism's default, so the run above cannot tell whether the
    # app applied the file's parameters. A file in the export's format holding another trial's
    # point must give that point's figures (an in-process replay), not the default's.
    study = optuna.load_study(study_name="p", storage=f"sqlite:///{d}/results/p.db")
    exported = yaml.safe_load((d / "conf" / "policy" / "prism_tuned_p.yaml").read_text())
    params, sched = next(tune.decode(t.params, "prism") for t in study.trials
                         if tune.decode(t.params, "prism")[0] != exported["params"])
    (d / "conf" / "policy" / "prism_other_p.yaml").write_text(yaml.safe_dump({**exported, "params": params}))
    got = _app_run(d, "prism_other_p", sched, "app_run_other")
    want = model_run(params, sched, TEST)
    system = [s["utilization"]["mean"] * s["runtime_model"]["application_efficiency"] for s in (got, want)]
    assert system[0] == pytest.approx(system[1], rel=1e-12)
    assert got["counts"]["replayed"] == want["counts"]["replayed"]
    assert system[0] != pytest.approx(tuned["system_efficiency"], rel=1e-6)  # the check can tell them apart


def test_policy_and_model_mistakes_are_one_line(capsys):
    for args, words in [(["--policy", "first_fit"], ["--policy first_fit", "['prism', 'ta']"]),
                        (["--objective", "system_efficiency"], ["system_efficiency", "--speedup model"]),
                        (["--multi", "mean_wait,system_efficiency"], ["--speedup model"])]:
        with pytest.raises(SystemExit) as exit_:
            tune.main(["--name", "x", *args])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and all(w in err[0] for w in words), (args, err)
    with pytest.raises(SystemExit):  # prism places jobs on tori only: refused before any study
        tune.main(["--name", "x", "--policy", "prism", "--topo", "cab", "--storage", "sqlite:///:memory:",
                   "--test", "none"])
    err = capsys.readouterr().err
    assert "policy 'prism' does not support" in err and "Traceback" not in err


def _setup(**kw) -> tune.Setup:
    return tune.Setup(topo=topology.load("ft6"), workload="w", sha256="x", scale=1.0, train=((0.0, 1.0),), test=(),
                      train_tables=(), test_tables=(), **kw)


def test_studies_recorded_before_policy_and_speedup_resume_and_others_are_refused():
    from fattorus.app.tune.storage import SETUP_ATTR, check_setup

    old = _setup().fingerprint(["mean_wait"])
    assert not {"policy", "speedup", "model", "node_kind"} & set(old)  # as studies made before session 16
    study = optuna.create_study()
    study.set_user_attr(SETUP_ATTR, old)
    check_setup(study, _setup(policy="ta", speedup="none").fingerprint(["mean_wait"]), "s", "sqlite://")
    with pytest.raises(tune.TuneError) as err:
        check_setup(study, _setup(policy="prism").fingerprint(["mean_wait"]), "s", "sqlite://")
    assert "policy: study 'ta', now 'prism'" in str(err.value)
    # ...and the other way round: a model study resumed without --speedup model names what differs.
    study = optuna.create_study()
    study.set_user_attr(SETUP_ATTR, _setup(policy="prism", speedup="model").fingerprint(["mean_wait"]))
    with pytest.raises(tune.TuneError) as err:
        check_setup(study, _setup(policy="prism").fingerprint(["mean_wait"]), "s", "sqlite://")
    assert "speedup: study 'model', now 'none'" in str(err.value) and "()" not in str(err.value)


def test_a_node_kind_the_machine_lacks_is_one_line(tmp_path, capsys):
    wl = tmp_path / "wl.yaml"
    wl.write_text(yaml.safe_dump({**WORKLOAD, "node_kind": "XK"}))  # torus8 has compute nodes only
    with pytest.raises(SystemExit) as exit_:
        tune.main(["--name", "nk", "--topo", "torus8", "--workload", str(wl), "--scale", "1", "--train", "0:0.15",
                   "--test", "none", "--policy", "prism", "--trials", "1", "--storage", f"sqlite:///{tmp_path}/results/nk.db",
                   "--export", str(tmp_path / "nk.yaml")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "node_kind" in err[0] and "'XK'" in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "nk.db").exists()  # refused before any study was made


def test_a_decoded_default_prism_point_is_the_default():
    """The held-out comparison replays the tuned arm again only where it is another point: a
    decoded prism trial leaves out the switches it does not tune (internal, ...), so a plain
    equality never saw the default in it (session 47's second review)."""
    from fattorus.app.tune.export import same_point
    from fattorus.sched.policy.torus.prism import PrismParams

    default = PrismParams.defaults()
    tuned = {k: v for k, v in default.items() if k not in ("internal", "internal_ends_first", "block_other_kinds")}
    assert same_point(tuned, default)
    assert not same_point({**tuned, "slack": float(default["slack"]) + 1}, default)
