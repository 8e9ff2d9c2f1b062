"""Tuning windows must not overlap, and a resumed study checks the workload settings that
change the job table (cores per node, the run-time ceiling). In-process, seconds each."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from fattorus.app import tune
from fattorus.app.tune.cli import parse_args
from fattorus.app.tune.storage import SETUP_ATTR, check_setup
from fattorus.app.tune.windows import check_held_out, load_setup, parse_windows

ROOT = Path(__file__).resolve().parents[1]


def test_overlapping_windows_are_refused_naming_both():
    for option in ("--train", "--test"):
        with pytest.raises(tune.TuneError) as err:
            parse_windows("0:14,7:21", option)
        msg = str(err.value)
        assert "\n" not in msg and "0:14" in msg and "7:21" in msg and "overlap" in msg and option in msg
    for text in ("0:14,2:3", "5:10,0:6", "0:1,0.5:0.75,2:3"):  # contained, given out of order, not adjacent
        with pytest.raises(tune.TuneError, match="overlap"):
            parse_windows(text, "--train")
    # [start, end): touching ends share no day.
    assert parse_windows("0:14,14:28", "--train") == ((0.0, 14.0), (14.0, 28.0))
    assert parse_windows("14:28,0:14", "--train") == ((14.0, 28.0), (0.0, 14.0))


def test_the_makefile_tune_target_still_parses():
    line = next(x for x in (ROOT / "Makefile").read_text().splitlines() if "fattorus.tune" in x)
    train, test = re.search(r"--train (\S+)", line)[1], re.search(r"--test (\S+)", line)[1]
    tr, te = parse_windows(train, "--train"), parse_windows(test, "--test")
    check_held_out(tr, te)
    assert len(tr) == 3 and len(te) == 2
    # Its study is none of the shipped tuned configs' (their storages are not shipped, so on a
    # fresh checkout it would be refused rather than replace one; session 47: `--name
    # atlas2x_cab` replaced the shipped config).
    import subprocess

    name = re.search(r"--name (\S+)", line)[1]
    listed = subprocess.run(["git", "ls-files", "conf/policy"], cwd=ROOT, capture_output=True, text=True)
    files = ([ROOT / f for f in listed.stdout.split()] if listed.returncode == 0 and listed.stdout  # tracked only:
             else list((ROOT / "conf" / "policy").glob("*.yaml")))  # a `make tune` run adds its own
    shipped = {m[1] for p in files if "_tuned_" in p.name and (m := re.search(r"^# study: (\S+) ", p.read_text(), re.M))}
    assert "atlas2x_cab" in shipped and name not in shipped


def test_a_test_window_overlapping_training_is_refused():
    with pytest.raises(tune.TuneError) as err:
        check_held_out(parse_windows("0:14,14:28", "--train"), parse_windows("30:42,20:30", "--test"))
    msg = str(err.value)
    assert "--test window 20:30" in msg and "--train window 14:28" in msg and "\n" not in msg
    check_held_out(parse_windows("0:14", "--train"), parse_windows("14:28", "--test"))
    check_held_out(parse_windows("0:14", "--train"), ())
    # ...and on the command line, before anything loads.
    with pytest.raises(tune.TuneError, match="held out"):
        parse_args(["--name", "x", "--train", "0:14", "--test", "7:21", "--storage", "sqlite:///:memory:"])


SWF = "; MaxProcs: 64\n; MaxNodes: 16\n" + "".join(
    f"{i} {i * 3600} 0 {1800 * (1 + i % 2)} {4 * (1 + i % 3)} -1 -1 {4 * (1 + i % 3)} {1800 * (1 + i % 2)}"
    " -1 1 1 1 -1 -1 -1 -1 -1\n" for i in range(1, 30))


@pytest.fixture
def log(tmp_path) -> Path:
    p = tmp_path / "tiny.swf"
    p.write_text(SWF)
    return p


def _setup(spec, cpn=None):
    return load_setup("ft6", str(spec), 1.0, ((0.0, 0.5),), (), cpn)


def test_a_resume_with_other_cores_per_node_is_refused(log):
    a, b = _setup(log), _setup(log, 1)
    assert a.train_tables[0]["nodes"].sum() != b.train_tables[0]["nodes"].sum()  # another job table
    study = optuna.create_study()
    check_setup(study, a.fingerprint(["mean_wait"]), "s", "sqlite://", a.config_defaults)
    check_setup(study, _setup(log).fingerprint(["mean_wait"]), "s", "sqlite://", a.config_defaults)  # same: resumes
    with pytest.raises(tune.TuneError) as err:
        check_setup(study, b.fingerprint(["mean_wait"]), "s", "sqlite://", b.config_defaults)
    assert "cores_per_node: study None, now 1" in str(err.value) and "\n" not in str(err.value)


def test_a_resume_with_another_run_time_ceiling_is_refused(log, tmp_path):
    def config(**kw):
        p = tmp_path / f"w{len(kw)}.yaml"
        p.write_text(yaml.safe_dump({"name": "tiny", "path": str(log), "format": "swf", **kw}))
        return p

    a, b = _setup(config()), _setup(config(max_runtime_s=3000))
    assert a.train_tables[0].height != b.train_tables[0].height  # the ceiling drops the hour-long jobs (dirty lines)
    study = optuna.create_study()
    check_setup(study, a.fingerprint(["mean_wait"]), "s", "sqlite://", a.config_defaults)
    with pytest.raises(tune.TuneError, match=r"max_runtime_s: study 31622400\.0, now 3000\.0"):
        check_setup(study, b.fingerprint(["mean_wait"]), "s", "sqlite://", b.config_defaults)


def test_a_study_recorded_before_cores_per_node_resumes_at_the_config_value_only(log, tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text(yaml.safe_dump({"name": "tiny", "path": str(log), "format": "swf", "cores_per_node": 4}))
    same, other = _setup(cfg), _setup(cfg, 1)
    legacy = {k: v for k, v in same.fingerprint(["mean_wait"]).items() if k not in ("cores_per_node", "max_runtime_s")}
    study = optuna.create_study()
    study.set_user_attr(SETUP_ATTR, legacy)
    with pytest.raises(tune.TuneError) as err:  # another value than the config's: refused, saying it was assumed
        check_setup(study, other.fingerprint(["mean_wait"]), "s", "sqlite://", other.config_defaults)
    assert "cores_per_node: study 4 (not recorded: the workload config's), now 1" in str(err.value)
    assert study.user_attrs[SETUP_ATTR] == legacy
    # --cores-per-node at the config's value (or left out) resumes, and the record is completed.
    check_setup(study, _setup(cfg, 4).fingerprint(["mean_wait"]), "s", "sqlite://", same.config_defaults)
    assert study.user_attrs[SETUP_ATTR]["cores_per_node"] == 4
    with pytest.raises(tune.TuneError, match=r"cores_per_node: study 4, now 1"):
        check_setup(study, other.fingerprint(["mean_wait"]), "s", "sqlite://", other.config_defaults)


def _compose(overrides: list[str]) -> Any:
    """The study app's configuration for these command-line overrides (Hydra, as the app)."""
    from hydra import compose, initialize_config_dir

    from fattorus.app import config  # noqa: F401 - registers the app's schema

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        return compose("config", overrides=overrides)


def _sweep_args(spec: str, cores_per_node: int | None = None, scale: float = 1.0, topo: str = "ft6") -> list[str]:
    """The overrides of the exported header's sweep command for ``--workload spec``, split as a
    shell would (without ``python -m fattorus.sweep``); the export is named ``ta``, so that the
    app finds a policy of that name."""
    import shlex

    from fattorus import topology
    from fattorus.app.tune.export import sweep_command

    opts = parse_args(["--name", "x", "--topo", topo, "--workload", spec, "--storage", "sqlite://", "--export",
                       "/nonexistent/ta.yaml", *(["--cores-per-node", str(cores_per_node)] if cores_per_node else [])])
    setup = tune.Setup(topo=topology.load(topo), workload="w", sha256="x", scale=scale, train=((0.0, 1.0),), test=(),
                       train_tables=(), test_tables=())
    words = shlex.split(sweep_command(opts, setup, "fcfs"))
    assert words[:3] == ["python", "-m", "fattorus.sweep"]
    return words[3:]


def test_the_sweep_command_names_the_studys_workload(tmp_path, log):
    """The header's command replayed Atlas at the machine's load whatever the study's
    workload (an exploratory user test). Each way of naming a workload, composed by Hydra as
    the app does, gives the workload the tuner loaded (values written out here)."""
    # A conf/workload name: the config as it is (conf/workload/thunder.yaml), the scale the study's.
    args = _sweep_args("thunder", scale=1.0, topo="cab")
    assert args == ["+topo=cab", "policy=ta", "sched=fcfs", "workload=thunder", "workload.scale=1"]
    cfg = _compose(args)
    assert (cfg.workload.name, cfg.workload.path, cfg.workload.cores_per_node, cfg.workload.scale) == (
        "thunder", "data/traces/LLNL-Thunder-2007-1.1-cln.swf.gz", 4, 1)
    # A job log: its absolute path, --cores-per-node, a fit factor to the last bit.
    args = _sweep_args(str(log), cores_per_node=2, scale=1024 / 1152)
    cfg = _compose(args)
    assert "workload=file" in args and "workload.scale=0.8888888888888888" in args
    assert (cfg.workload.path, cfg.workload.format, cfg.workload.cores_per_node, cfg.workload.scale) == (
        str(log), "auto", 2, 1024 / 1152)
    # A workload YAML elsewhere: its settings on top of conf/workload/file.yaml.
    wl = tmp_path / "mine.yaml"
    wl.write_text(yaml.safe_dump({"name": "mine", "path": str(log), "format": "swf", "cores_per_node": 4,
                                  "max_runtime_s": 3000, "node_kind": "XE", "scale": 7, "window_days": 3}))
    cfg = _compose(_sweep_args(str(wl), scale=2.0))
    assert {k: cfg.workload[k] for k in ("name", "path", "format", "cores_per_node", "max_runtime_s", "node_kind",
                                         "scale", "window_days")} == {
        "name": "mine", "path": str(log), "format": "swf", "cores_per_node": 4, "max_runtime_s": 3000.0,
        "node_kind": "XE", "scale": 2, "window_days": None}  # the study's scale; no window (the tuner cut its own)
    # A workload YAML in a config folder's workload/ (a synthetic one: a mapping the command
    # line cannot merge into file.yaml): that folder on Hydra's search path.
    (tmp_path / "conf" / "workload").mkdir(parents=True)
    synthetic = {"seed": 3, "n_jobs": 220, "arrival_rate_per_h": 30.0, "size_dist": "pow2", "runtime_max_s": 14400.0}
    tiny = {"name": "tiny", "path": None, "format": "synthetic", "cores_per_node": 1, "scale": 1,
            "window_start_days": 2, "window_days": None, "synthetic": synthetic}
    (tmp_path / "conf" / "workload" / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    args = _sweep_args(str(tmp_path / "conf" / "workload" / "tiny.yaml"), cores_per_node=2)
    assert f"hydra.searchpath=[file://{tmp_path / 'conf'}]" in args and "workload=tiny" in args
    cfg = _compose(args)
    assert (cfg.workload.name, cfg.workload.format, cfg.workload.cores_per_node, cfg.workload.window_start_days) == (
        "tiny", "synthetic", 2, 0)
    assert dict(cfg.workload.synthetic) == synthetic
    # ...and elsewhere, the header says to copy it into conf/workload/ first.
    elsewhere = tmp_path / "tiny2.yaml"
    elsewhere.write_text(yaml.safe_dump(tiny))
    from fattorus.app.tune.windows import sweep_workload

    named = sweep_workload(str(elsewhere), None)
    assert named.overrides[0] == ("workload", "tiny2") and "conf/workload/tiny2.yaml" in (named.note or "")


def test_the_sweep_command_names_a_machine_given_as_a_yaml_path(tmp_path, log):
    """``--topo`` as a YAML path wrote ``+topo=NAME``, which Hydra looks up in conf/topo only
    (a session-45 exploratory report). A YAML in a config folder's ``topo/``: that folder on
    the search path, shared with a workload YAML's in one ``hydra.searchpath`` (a second
    override would replace the first); Hydra composes both. Elsewhere: a note to copy it."""
    conf, wconf = tmp_path / "a" / "conf", tmp_path / "b" / "conf"
    (conf / "topo").mkdir(parents=True)
    (wconf / "workload").mkdir(parents=True)
    # The file's stem, not the machine's name, is Hydra's option name.
    mine = yaml.safe_load((ROOT / "conf" / "topo" / "ft6.yaml").read_text()) | {"name": "myft"}
    (conf / "topo" / "mytopo.yaml").write_text(yaml.safe_dump(mine))
    tiny = {"name": "tiny", "path": str(log), "format": "auto", "cores_per_node": 2, "scale": 1,
            "window_start_days": 0, "window_days": None, "synthetic": {"seed": 1}}
    (wconf / "workload" / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    args = _sweep_args(str(wconf / "workload" / "tiny.yaml"), topo=str(conf / "topo" / "mytopo.yaml"))
    assert [a for a in args if a.startswith("hydra.searchpath=")] == [
        f"hydra.searchpath=[file://{conf},file://{wconf}]"]
    assert "+topo=mytopo" in args and "workload=tiny" in args
    cfg = _compose(args)
    assert (cfg.topo.name, cfg.workload.name) == ("myft", "tiny")
    # The app's own conf/topo, by path: its name, no search path.
    assert _sweep_args(str(log), topo=str(ROOT / "conf" / "topo" / "ft6.yaml"))[0] == "+topo=ft6"
    # Elsewhere: +topo=STEM and the header's note says where to put the file first.
    from fattorus.app.tune.export import sweep_topology

    (tmp_path / "other.yaml").write_text(yaml.safe_dump(mine))
    named = sweep_topology(str(tmp_path / "other.yaml"), "myft")
    assert named.overrides == (("+topo", "other"),) and "conf/topo/other.yaml" in (named.note or "")
    # A stem that names a shipped machine: Hydra searches the app's conf/ first and would replay
    # the shipped cab (a session-46 review); the note says to rename the file, no search path.
    (conf / "topo" / "cab.yaml").write_text(yaml.safe_dump(mine))
    named = sweep_topology(str(conf / "topo" / "cab.yaml"), "myft")
    assert named.overrides == (("+topo", "cab"),) and "renamed" in (named.note or "")
