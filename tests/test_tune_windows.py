"""Tuning windows must not overlap, and a resumed study checks the workload settings that
change the job table (cores per node, the run-time ceiling). In-process, seconds each."""

from __future__ import annotations

import re
from pathlib import Path

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
