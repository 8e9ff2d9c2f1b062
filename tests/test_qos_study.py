"""The QoS study (issue 15, item 4): the flow model with one level is the plain bandwidth
model, adaptive paths are valid and spread load, balanced computation gains little, and the
app writes, resumes and refuses bad settings in one line."""

import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import polars as pl
import pytest
from omegaconf import OmegaConf

from fattorus.analysis import qos
from fattorus.kernels.maxmin import maxmin_rates
from fattorus.paths import config_file
from fattorus.topology import fattree_routing as fr
from fattorus.topology.fattree import FatTree

ROOT = Path(__file__).resolve().parents[1]


def small(**changes):
    cfg = OmegaConf.to_container(OmegaConf.load(config_file("qos", "small")))
    cfg.update(changes)
    return cfg, qos.experiment_from(cfg), FatTree("small", **cfg["system"])


def test_default_level_rates_are_the_plain_bandwidth_model():
    _, exp, topo = small()
    mix = qos.build_mix(topo, exp, np.random.default_rng(0))
    routes = qos.static_routes(topo, mix)
    net = qos.Network(topo, mix, routes, exp.bandwidth, 16)
    plain = np.asarray(maxmin_rates(jnp.asarray(routes), jnp.asarray(net.capacity, jnp.float32)).rate)
    np.testing.assert_allclose(net.rates(()), plain, rtol=1e-5)


def test_adaptive_paths_are_minimal_paths_and_spread_the_load():
    _, exp, topo = small()
    topo = FatTree("two_pods", 8, 4, 4, 2)  # two pods, so paths also choose cores
    cfg, exp, _ = small(jobs={"all_to_all": 1, "random_pairs": 2}, processes=8)
    mix = qos.build_mix(topo, exp, np.random.default_rng(2))
    static = qos.static_routes(topo, mix)
    adaptive = qos.adaptive_routes(topo, mix, np.random.default_rng(0))
    assert adaptive.dtype == static.dtype
    # Same length (minimal), same end links, each hop at the right level.
    np.testing.assert_array_equal((static >= 0).sum(axis=1), (adaptive >= 0).sum(axis=1))
    n = (adaptive >= 0).sum(axis=1)
    np.testing.assert_array_equal(adaptive[:, 0], static[:, 0])
    np.testing.assert_array_equal(adaptive[np.arange(len(n)), n - 1], static[np.arange(len(n)), n - 1])
    np.testing.assert_array_equal(fr.link_level(topo, adaptive), fr.link_level(topo, static))
    # Consecutive links meet at a switch.
    ends = topo.link_ends
    for row in adaptive:
        row = row[row >= 0]
        assert all(ends[a, 1] == ends[b, 0] for a, b in zip(row, row[1:]))

    def max_load(routes):
        load = np.zeros(topo.n_links)
        for row, b in zip(routes, mix.nbytes):
            load[row[row >= 0]] += b
        return load[np.asarray(topo.link_class) > 0].max()

    assert max_load(adaptive) <= max_load(static)


def test_balanced_computation_gains_little():
    # The paper (Section 6.3, 6.11): QoS helps by favouring the processes that compute most;
    # with every process computing the same, there is little to gain.
    def gain(imbalance):
        _, exp, topo = small(iterations=100, noise=0.0, imbalance=imbalance)
        out = []
        for seed in (0, 1):
            _, res = qos.run_placement(topo, exp, seed)
            out.append(res.final / res.default - 1)
        return np.concatenate(out)

    balanced, imbalanced = gain("none"), gain("uniform")
    assert balanced.mean() < imbalanced.mean()
    assert balanced.mean() < 0.02 and imbalanced.max() > balanced.max()


def test_experiment_settings_are_checked_with_the_field_named():
    cfg, _, _ = small()
    for field, value, msg in [("imbalance", "wild", "qos.imbalance"), ("threshold", 0.0, "qos.threshold"),
                              ("num_sls", 17, "qos.num_sls"), ("jobs", {"ring": 2}, "qos.jobs.ring"),
                              ("jobs", {"flood_pairs": 0, "all_to_all": 0}, "qos.jobs: every pattern has 0")]:
        with pytest.raises(ValueError, match=msg):
            qos.experiment_from({**cfg, field: value})
    # Periods of default observation: an integer >= 1; absent (a config older than the
    # setting) it is 1, the paper's line 9.
    for value in (0, -1, 1.5, "x", True, None):
        with pytest.raises(ValueError, match="qos.default_periods"):
            qos.experiment_from({**cfg, "default_periods": value})
    assert qos.experiment_from({**cfg, "default_periods": 10}).params.default_periods == 10
    assert qos.experiment_from({k: v for k, v in cfg.items() if k != "default_periods"}).params.default_periods == 1


def run_app(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Options first: argparse takes the first run of overrides as all of them.
    options = [a for a in args if a.startswith("--")]
    args = [a for a in args if not a.startswith("--")]
    return subprocess.run([sys.executable, "-m", "fattorus.qos", *options, "progress=false", *args], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=600)


def test_app_writes_resumes_and_is_deterministic(tmp_path):
    run_dir = tmp_path / "results" / "qos" / "r"
    args = ["qos.iterations=12", "qos.placements=2", f"hydra.run.dir={run_dir}"]
    out = run_app(tmp_path, *args)
    assert out.returncode == 0, out.stderr
    assert "improvement over default" in out.stdout
    for name in ("jobs.parquet", "history.parquet", "summary.json", "improvement.png", "placements/p1.parquet"):
        assert (run_dir / name).exists(), name
    first = pl.read_parquet(run_dir / "jobs.parquet")
    assert first.height == 16 and set(first["pattern"]) == {"flood_pairs", "nearest_neighbor", "random_pairs", "all_to_all"}
    assert pl.read_parquet(run_dir / "history.parquet").height == 24
    # Interrupted after placement 0: the rerun keeps it and redoes placement 1 identically.
    kept = (run_dir / "placements" / "p0.parquet").stat().st_mtime_ns
    for name in ("jobs.parquet", "summary.json", "placements/p1.parquet", "placements/h1.parquet"):
        (run_dir / name).unlink()
    out = run_app(tmp_path, *args)
    assert out.returncode == 0, out.stderr
    assert (run_dir / "placements" / "p0.parquet").stat().st_mtime_ns == kept
    assert pl.read_parquet(run_dir / "jobs.parquet").equals(first)


def test_app_refuses_bad_settings_in_one_line(tmp_path):
    for args, msg in [(["qos.imbalance=wild"], "qos.imbalance"), (["qos.nodes=3"], "qos.nodes"),
                      (["qos.processes=100"], "need as many nodes"), (["qos=tiny"], "qos/tiny"),
                      # refused for its value (a key the config lacks would be refused too)
                      *[([f"qos.default_periods={v}"], f"qos.default_periods={shown}: choose an integer")
                        for v, shown in (("0", "0"), ("-1", "-1"), ("1.5", "1.5"), ("x", "'x'"))]]:
        out = run_app(tmp_path, *args, f"hydra.run.dir={tmp_path}/results/x")
        assert out.returncode == 2, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0] and "Traceback" not in out.stderr, out.stderr


def test_default_periods_keep_the_default_level_that_many_periods_on_the_flow_model():
    # Sections 6.2 and 6.8: the default level is observed for P x N seconds before the first
    # trial; with N = 4 the history's first four periods are DEFAULT, the fifth is a trial.
    _, exp, topo = small(iterations=8, default_periods=4)
    _, res = qos.run_placement(topo, exp, seed=3)
    assert res.modes[:5] == ["default"] * 4 + ["running"]
    assert list(res.n_assigned[:5]) == [0, 0, 0, 0, 1]


def test_arrivals_and_departures_restart_the_algorithm():
    # The paper's Section 6.7: one segment more than patterns; at each boundary the first job
    # of the next pattern is replaced (same nodes, 35 % compute) and Algorithm 1 restarts.
    _, exp, topo = small(iterations=50, arrivals=True)
    mix, res = qos.run_placement(topo, exp, 0)
    rows = qos.job_rows(mix, res)
    assert len(rows) == 12 and res.restarts == 4
    assert [r["arrived"] for r in rows[8:]] == [10, 20, 30, 40]
    assert [r["pattern"] for r in rows[8:]] == ["flood_pairs", "nearest_neighbor", "random_pairs", "all_to_all"]
    assert [rows[j]["left"] for j in (0, 2, 4, 6)] == [10, 20, 30, 40]
    assert [k for k, m in enumerate(res.modes) if m == "default"] == [0, 10, 20, 30, 40]
    # A job that was present for fewer periods completed fewer iterations alone.
    assert rows[0]["I_isolated"] < rows[1]["I_isolated"]


TINY = ["qos.placements=1", "qos.iterations=5"]


def one_error_line(out) -> str:
    """The refusal's only stderr line (exit 2, no traceback)."""
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fattorus.qos: error: "), out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


def test_app_refuses_unknown_keys_and_non_boolean_progress_before_running(tmp_path):
    # '+' lets Hydra append any key: a misspelt one used to run with the default silently.
    for args, words in [(["+qos.threshhold=0.5"], ["'qos.threshhold'", "did you mean 'threshold'", "num_sls"]),
                        (["+sed=3"], ["'sed'", "did you mean 'seed'"]),
                        (["+qos.message_bytes.ring=8"], ["qos.message_bytes.ring"]),
                        (["progress=maybe"], ["progress='maybe'", "true or false"])]:
        line = one_error_line(run_app(tmp_path, *TINY, *args))
        assert all(w in line for w in words), (args, line)
    assert not (tmp_path / "results").exists()  # refused before Hydra made a run directory


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory) -> dict[str, Path]:
    """One finished single run and one finished multirun of the tiny settings, made once for
    the tests that start from such a run (each works on its own copy: ``copy_of``)."""
    base = tmp_path_factory.mktemp("tiny")
    single, multi = base / "results" / "qos" / "r", base / "sweep"
    assert run_app(base, *TINY, f"hydra.run.dir={single}").returncode == 0
    assert run_app(base, "--multirun", *TINY, f"hydra.sweep.dir={multi}", "hydra.launcher.n_jobs=1").returncode == 0
    return {"single": single, "multi": multi}


def copy_of(made: Path, to: Path) -> Path:
    """A copy of a finished run at ``to`` (what a run there would have left)."""
    import shutil

    shutil.copytree(made, to)
    return to


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_run_directory_holding_a_run_with_other_settings_is_refused_untouched(tmp_path, tiny_runs):
    run_dir = copy_of(tiny_runs["single"], tmp_path / "results" / "qos" / "r")
    args = [*TINY, f"hydra.run.dir={run_dir}"]
    before = tree(run_dir)
    line = one_error_line(run_app(tmp_path, *args, "qos.imbalance=large"))
    assert "already holds another run" in line and "qos.imbalance=uniform there, large now" in line, line
    assert tree(run_dir) == before  # .hydra/ still describes the results beside it
    same = run_app(tmp_path, *args)  # the same settings: a finished run is skipped
    assert same.returncode == 0 and "[skip]" in same.stdout, same.stderr
    # An unfinished run (placements, no summary) is only resumed with its own settings.
    (run_dir / "summary.json").unlink()
    before = tree(run_dir)
    line = one_error_line(run_app(tmp_path, *args, "seed=7"))
    assert "already holds another run" in line and "seed=0 there, 7 now" in line, line
    assert tree(run_dir) == before


def test_a_run_recorded_before_default_periods_existed_is_the_same_run(tmp_path, tiny_runs):
    # Its summary.json lacks the key; it was made observing one default period, so a rerun
    # with default_periods=1 skips it and one with 2 is refused as other settings.
    import json

    run_dir = copy_of(tiny_runs["single"], tmp_path / "results" / "qos" / "r")
    args = [*TINY, f"hydra.run.dir={run_dir}"]
    summary = json.loads((run_dir / "summary.json").read_text())
    del summary["settings"]["default_periods"]
    (run_dir / "summary.json").write_text(json.dumps(summary))
    same = run_app(tmp_path, *args)
    assert same.returncode == 0 and "[skip]" in same.stdout, same.stderr
    line = one_error_line(run_app(tmp_path, *args, "qos.default_periods=2"))
    assert "qos.default_periods=1 there, 2 now" in line, line


def test_a_multirun_checks_every_trial_before_the_first_runs(tmp_path):
    sweep_dir = tmp_path / "sweep"
    out = run_app(tmp_path, "--multirun", *TINY, "qos.threshold=0.5,5", f"hydra.sweep.dir={sweep_dir}",
                  "hydra.launcher.n_jobs=1")
    line = one_error_line(out)
    assert "trial [" in line and "qos.threshold=5" in line, line
    assert "[done]" not in out.stdout  # the good trial did not run first
    assert not sweep_dir.exists() or not [p for p in sweep_dir.iterdir() if p.is_dir()]  # no stub trial


def test_the_checks_hold_with_hydra_flags_after_the_overrides(tmp_path):
    # Ordinary Hydra usage puts --multirun last; the checks must neither break that command
    # line nor be skipped by it (the bad trial is still refused before any runs).
    sweep_dir = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "fattorus.qos", "progress=false", *TINY, "qos.threshold=0.5,5",
                          f"hydra.sweep.dir={sweep_dir}", "hydra.launcher.n_jobs=1", "--multirun"], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=600)
    line = one_error_line(out)
    assert "trial [" in line and "qos.threshold=5" in line, line
    assert "[done]" not in out.stdout


def test_a_refused_trial_leaves_no_stub_directory(tmp_path):
    from fattorus.app.cli import discard_trial_stub

    sweep_dir = tmp_path / "sweep"
    stub, done, outside = sweep_dir / "qos.threshold=5", sweep_dir / "qos.threshold=0.5", tmp_path / "elsewhere"
    for d in (stub, done, outside):
        (d / ".hydra").mkdir(parents=True)
        (d / "qos.log").touch()
    (done / "placements").mkdir()  # results of its own: never removed
    for d in (stub, done, outside):
        discard_trial_stub(d, sweep_dir)
    assert not stub.exists() and done.exists() and outside.exists()


def test_a_multirun_redoes_a_finished_trial_whose_settings_changed(tmp_path, tiny_runs):
    import json

    sweep_dir = copy_of(tiny_runs["multi"], tmp_path / "sweep")
    args = ["--multirun", *TINY, f"hydra.sweep.dir={sweep_dir}", "hydra.launcher.n_jobs=1"]
    summary = next(sweep_dir.glob("*/summary.json"))
    # As if conf/qos/small.yaml had said imbalance: none when the trial ran.
    data = json.loads(summary.read_text())
    data["settings"]["imbalance"] = "none"
    summary.write_text(json.dumps(data))
    out = run_app(tmp_path, *args)
    assert out.returncode == 0 and "[done]" in out.stdout and "[skip]" not in out.stdout, out.stderr[-2000:]
    assert "settings changed since this trial ran (qos.imbalance=none there, uniform now)" in out.stderr
    assert json.loads(summary.read_text())["settings"]["imbalance"] == "uniform"


def test_an_unfinished_run_resumes_without_hydras_copy_of_its_config(tmp_path):
    # hydra.output_subdir=null: no .hydra/ in the run directory. The settings recorded beside
    # the placements decide: the same settings resume (placement 0 kept), others are refused.
    run_dir = tmp_path / "results" / "qos" / "r"
    args = ["qos.placements=2", "qos.iterations=5", f"hydra.run.dir={run_dir}", "hydra.output_subdir=null"]
    assert run_app(tmp_path, *args).returncode == 0
    assert not (run_dir / ".hydra").exists() and (run_dir / "placements" / "settings.json").exists()
    first = pl.read_parquet(run_dir / "jobs.parquet")
    kept = (run_dir / "placements" / "p0.parquet").stat().st_mtime_ns
    for name in ("summary.json", "placements/p1.parquet", "placements/h1.parquet"):
        (run_dir / name).unlink()
    before = tree(run_dir)
    line = one_error_line(run_app(tmp_path, *args, "qos.threshold=0.8"))
    assert "qos.threshold=0.9 there, 0.8 now" in line, line
    assert tree(run_dir) == before
    out = run_app(tmp_path, *args)
    assert out.returncode == 0, out.stderr
    assert (run_dir / "placements" / "p0.parquet").stat().st_mtime_ns == kept
    assert pl.read_parquet(run_dir / "jobs.parquet").equals(first)


def test_a_multirun_redoes_an_unfinished_trial_whose_settings_changed(tmp_path, tiny_runs):
    # Hydra rewrites a trial's .hydra/config.yaml before it runs, so only the recorded
    # settings can tell that its placements were made otherwise.
    import json

    sweep_dir = copy_of(tiny_runs["multi"], tmp_path / "sweep")
    args = ["--multirun", *TINY, f"hydra.sweep.dir={sweep_dir}", "hydra.launcher.n_jobs=1"]
    trial = next(sweep_dir.glob("*/summary.json")).parent
    (trial / "summary.json").unlink()
    good = pl.read_parquet(trial / "placements" / "p0.parquet")
    recorded = trial / "placements" / "settings.json"
    data = json.loads(recorded.read_text())
    data["qos"]["imbalance"] = "none"  # as if conf/qos/small.yaml had said so when it ran
    recorded.write_text(json.dumps(data))
    bad = good.with_columns(pl.col("improvement") * 0 + 9.0)  # placements that must not be reused
    bad.write_parquet(trial / "placements" / "p0.parquet")
    out = run_app(tmp_path, *args)
    assert out.returncode == 0 and "[done]" in out.stdout, out.stderr[-2000:]
    assert "settings changed since this trial ran (qos.imbalance=none there, uniform now)" in out.stderr
    assert pl.read_parquet(trial / "placements" / "p0.parquet").equals(good)
    assert json.loads(recorded.read_text())["qos"]["imbalance"] == "uniform"


def test_a_ctrl_c_inside_a_jax_callback_is_the_one_interrupted_line(capsys):
    """A Ctrl-C that lands in a JAX host callback (the sparse solves) reaches Python as a
    ValueError naming CpuCallback and KeyboardInterrupt: the app says `interrupted` in one
    line and exits 130, as for a plain Ctrl-C; any other ValueError stays an error."""
    from fattorus.app import cli

    def app():
        raise ValueError("INTERNAL: CpuCallback error calling callback: Traceback (most recent call last):\n"
                         "  File \"x.py\", line 1, in f\nKeyboardInterrupt: ")

    with pytest.raises(SystemExit) as exit_:
        cli.run_main(app, "fattorus.qos", (), interrupted="finished placements are kept")
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "fattorus.qos: interrupted; finished placements are kept, re-run to resume\n"

    def other():
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        cli.run_main(other, "fattorus.qos", ())


def test_an_interrupted_single_run_without_a_placement_leaves_no_directory(tmp_path):
    """Interrupted before its first placement, a single run's directory holds Hydra's stubs and
    the settings record only: it is removed; with a placement written it is kept (to resume)."""
    from fattorus.app.qos import _discard_unstarted

    empty, started = tmp_path / "results" / "qos" / "a", tmp_path / "results" / "qos" / "b"
    for d in (empty, started):
        (d / ".hydra").mkdir(parents=True)
        (d / "qos.log").touch()
        (d / "placements").mkdir()
        (d / "placements" / "settings.json").write_text("{}")
    (started / "placements" / "p0.parquet").write_bytes(b"x")
    for d in (empty, started):
        _discard_unstarted(d)
    assert not empty.exists() and (started / "placements" / "settings.json").exists()


def test_summary_improved_share_is_the_settled_assignment_improving_by_more_than_1_percent():
    """summary.json's ``improved_share`` is the report's "improved" (docs/qos.md): jobs whose
    settled assignment improves by more than 1 %, by hand: 2 of 4 overall, 1 of 2 per pattern
    (whole-run improvements, which once decided it at 0.5 %, play no part)."""
    rows = [{"pattern": p, "W_default": 0.1, "W_qos": 0.1, "improvement": imp, "improvement_final": fin}
            for p, imp, fin in (("a", 0.2, 0.02), ("a", 0.2, 0.009), ("b", 0.0, 0.011), ("b", 0.3, -0.1))]
    s = qos.summarize(rows)
    assert s["all"]["improved_share"] == 0.5 and s["a"]["improved_share"] == 0.5 and s["b"]["improved_share"] == 0.5
