"""``python -m fattorus.study``: a study file is checked whole before its first block runs.

In process (Hydra's compose API, no replay): the shipped studies pass the check; entries
that are not one ``key=value`` override are refused naming their place; every value of a
swept entry is composed; a bad key is blamed on its entry (file and 0-based place) and no
block is launched. The command-line cases (one stderr line, exit 2, nothing run) are in the
table of ``tests/test_bad_inputs.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fattorus import paths
from fattorus.app import study

SHIPPED = sorted(p.name for p in (paths.repo_root() / "sweeps").glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_studies_pass_the_check(name: str):
    path = paths.repo_root() / "sweeps" / name
    study.check_blocks(study.load(path), ["hydra.launcher.n_jobs=1"], path)


@pytest.mark.parametrize("entry", ["seed=0", "seed=0,1", "+topo=cab", "++seed=3", "~trials", "seed=range(0,3)",
                                   "hydra/launcher=basic", "workload.path='/a dir/log.swf'", "bins=[18,64]",
                                   # whitespace inside Hydra's own syntax is one override
                                   "seed=range(0, 3)", "seed=choice(0, 1)", "bins=[18, 64]",
                                   "qos.jobs={flood_pairs: 2, all_to_all: 2}"])
def test_single_overrides_are_accepted(entry: str):
    assert study.override_error(entry) is None


@pytest.mark.parametrize("entry, words", [
    ({"policy": "to"}, "YAML mapping, not a 'key=value' string (write policy=to)"),
    ({"progress": False}, "(write progress=false)"),
    (2, "not a 'key=value' string (YAML splits"),
    (["a=1"], "not a 'key=value' string"),
    ("+topo=ft6 workload=synthetic", "holds whitespace"),
    ("seed=0 ", "holds whitespace"),
    ("policy", "not a 'key=value' override"),
    ("=3", "not a 'key=value' override"),
    ("seed=[1,2", "'seed=[1,2':"),
    ("seed=interval(0,1)", "not intervals"),
])
def test_entries_that_are_not_one_override_are_refused(entry, words: str):
    why = study.override_error(entry)
    assert why is not None and words in why and "\n" not in why


def test_every_value_of_a_swept_entry_is_composed_once_at_least():
    block = [(None, "study=s"), ("cases[0][0]", "a=1,2"), ("arms[0][0]", "b=x,y,z"), ("arms[0][1]", "a=3,4")]
    combos = study._combinations(block)
    texts = [sorted(t for _, t in c) for c in combos]
    # A later entry for a key replaces an earlier one (Hydra's basic sweeper): a=1,2 is gone.
    assert all("a=1" not in t and "a=2" not in t for t in texts)
    assert {v for t in texts for v in t} == {"study=s", "a=3", "a=4", "b=x", "b=y", "b=z"}
    assert len(combos) == 1 + 1 + 2  # linear in the values, not their product


def _study(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, words", [
    # A bad key in the last arm is blamed on its entry, with the swept value that fails.
    ("study: s\ncases: [[+topo=cab, 'workload.scale=1,2']]\narms: [[policy=to], [policy=ta, '+speedup=none,nosuch']]\n",
     "s.yaml: arms[1][1] (+speedup=nosuch): In 'config': Could not find 'speedup/nosuch'"),
    # The replay app's own settings check (fattorus.app.sweep.check_settings) runs too.
    ("study: s\ncases: [[policy=to]]\narms: [[seed=0], ['+sede=1']]\n", "s.yaml: arms[1][0]: unknown setting 'sede'"),
    ("study: s\ncases: [[policy=to], ['bins=[5,5]']]\narms: [[seed=0]]\n", "s.yaml: cases[1][0]: bins=[5, 5]"),
    ("study: s\ncommon: [trials=0]\ncases: [[policy=to]]\narms: [[seed=0]]\n", "s.yaml: common[0]: trials=0"),
    # The QoS app's settings check (fattorus.app.qos.check_settings) for a study of that app.
    ("study: q\napp: fattorus.qos\ncases: [[qos=small], [qos=small, +qos.iteratons=5]]\narms: [[seed=0]]\n",
     "s.yaml: cases[1][1]: unknown setting 'qos.iteratons'"),
], ids=["unknown-option-in-last-arm", "check_settings-key", "check_settings-bins", "check_settings-common",
        "qos-check_settings-key"])
def test_a_bad_key_is_blamed_on_its_entry(tmp_path: Path, text: str, words: str):
    path = _study(tmp_path, text)
    with pytest.raises(study.StudyError) as err:
        study.check_blocks(study.load(path), [], path)
    assert words in str(err.value) and str(path) in str(err.value), err.value


def test_a_refused_study_launches_no_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]):
    path = _study(tmp_path, "study: s\ncases: [[policy=to]]\narms: [[seed=0], [policy=to], [sede=0]]\n")
    launched: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, *a, **k: launched.append(cmd) or 0)
    monkeypatch.setattr(sys, "argv", ["fattorus.study", str(path)])
    with pytest.raises(SystemExit) as exit_:
        study.main()
    assert exit_.value.code == 2 and launched == []
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"fattorus.study: error: {path}: arms[2][0]: Could not override 'sede'")


def test_extra_arguments_are_checked_unless_hydra_flags_are_among_them(tmp_path: Path):
    path = _study(tmp_path, "study: s\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    data = study.load(path)
    with pytest.raises(study.StudyError, match=r"^argument 'sede=1': Could not override 'sede'"):
        study.check_blocks(data, ["sede=1"], path)
    study.check_blocks(data, ["--cfg", "job"], path)  # Hydra's to interpret, as before
