"""``python -m fattorus.study``: a study file is checked whole before its first block runs.

In process (Hydra's compose API, no replay): the shipped studies pass the check; entries
that are not one ``key=value`` override are refused naming their place; every value of a
swept entry is composed; a bad key is blamed on its entry (file and 0-based place) and no
block is launched. The command-line cases (one stderr line, exit 2, nothing run) are in the
table of ``tests/test_bad_inputs.py``; those of the arguments themselves are here (session 14):
Hydra's own flags (``--cfg job`` ended the first block in Hydra's ``ValueError``), ``--help``
after the file, and a study file that is missing, a folder, unreadable or of another suffix,
through ``main`` with no block launched, and ``--cfg job`` once through the real command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import forkcli
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
    # A config group given a list merges the configs: refused up front, not at block time.
    ("study: s\ncases: [['+topo=[cab,pinot]']]\narms: [[seed=0]]\n",
     "s.yaml: cases[0][0]: +topo=[cab,pinot]: choose one topo config; a list merges them"),
    # A misspelt optional field dropped its overrides without a word (session 31 review).
    ("study: s\ncomon: [policy=nosuch]\ncases: [[policy=to]]\narms: [[seed=0]]\n",
     "s.yaml: unknown field 'comon' (did you mean 'common'?); a study file has study, app, common, cases, arms"),
    # The QoS app's settings check (fattorus.app.qos.check_settings) for a study of that app.
    ("study: q\napp: fattorus.qos\ncases: [[qos=small], [qos=small, +qos.iteratons=5]]\narms: [[seed=0]]\n",
     "s.yaml: cases[1][1]: unknown setting 'qos.iteratons'"),
    # Everything a run checks before reading its log (fattorus.app.sweep.check_run): the
    # policy's family, the scale, the batched engine's limits — not only after earlier blocks ran.
    ("study: s\ncases: [[+topo=cab]]\narms: [[policy=to], [policy=ta, 'seed=0,1', workload.scale=abc]]\n",
     "s.yaml: arms[1][2]: workload.scale='abc'"),
    ("study: s\ncases: [[+topo=cab], [+topo=bluewaters]]\narms: [[policy=first_fit], [policy=ta]]\n",
     "s.yaml: cases[1][0]: policy 'ta' does not support torus3d"),  # without it: Cab, where ta runs
    ("study: s\ncases: [[+topo=cab]]\narms: [[policy=to, trials=3], [policy=to_random, trials=3]]\n",
     "s.yaml: arms[1][1]: trials=3: the batched engine replays policies to and ta"),
    # Found by session 43's exploratory run: kept the last silently.
    ("study: s\nstudy: t\ncases: [[policy=to]]\narms: [[seed=0]]\n", "s.yaml: line 2: key 'study' given twice"),
    ("study: s\ncases: [[policy=to, 'seed=0,1', seed=2]]\narms: [[policy=ta]]\n",
     "s.yaml: cases[0][1] and cases[0][2] both set seed; the first would be dropped"),
    # Found by session 43's exploratory run: refused only when their block started.
    ("study: s\ncases: [[+topo=cab]]\narms: [[seed=0], [seed=1, hydra.sweep.dir=/tmp/x]]\n",
     "s.yaml: arms[1][1]: hydra.sweep.dir=/tmp/x: must lie under a results/ directory"),
    ("study: s\ncases: [[+topo=cab], [workload=file, workload.path=/nonexist.swf]]\narms: [[seed=0]]\n",
     "s.yaml: cases[1] with arms[0]: /nonexist.swf: no such file"),
    # A kind against its scenario's file, caught before the first block (session 46 review:
    # the check read Hydra's run, which a study's pre-check does not have).
    ("study: s\ncases: [[+topo=cab]]\narms: [[seed=0], [+speedup=model, speedup.kind=bins]]\n",
     "speedup.kind=bins: speedup=model is a flow-model scenario"),
], ids=["unknown-option-in-last-arm", "check_settings-key", "check_settings-bins", "check_settings-common", "listed-group", "misspelt-field",
        "qos-check_settings-key", "check_run-scale", "check_run-policy-family", "check_run-batched",
        "duplicate-field", "duplicate-key-in-a-list", "sweep-dir-outside-results", "missing-log",
        "speedup-kind-against-its-file"])
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
    assert line.startswith(f"fattorus.study: error: {path}: arms[2][0]: unknown setting 'sede' (did you mean 'seed'?)")


def test_a_study_renamed_on_the_command_line_says_where_its_results_are(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]):
    """`study=quick` after the file renames the study: each block runs with it alone (not the
    file's name and then the override), and the status lines name it and its folder."""
    path = _study(tmp_path, "study: s\ncommon: [+topo=cab]\ncases: [[policy=to]]\narms: [[seed=0], [seed=1]]\n")
    launched: list[list[str]] = []

    class Block:
        def __init__(self, cmd, **_):
            launched.append(cmd)

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Block)
    monkeypatch.setattr(sys, "argv", ["fattorus.study", str(path), "study=quick", "seed=3"])
    study.main()
    out = capsys.readouterr().out.splitlines()
    assert len(launched) == 2 and all([a for a in cmd if a.startswith("study=")] == ["study=quick"] for cmd in launched)
    assert all(cmd[-1] == "seed=3" for cmd in launched)
    assert out[0].startswith("[study quick] block 1/2")
    assert out[-1].startswith("[study quick] all 2 blocks done") and out[-1].endswith("results in results/sweeps/quick")
    assert study.named_by_overrides({"study": "s"}, ["x=1"]) == ({"study": "s"}, ["x=1"])
    # hydra.sweep.dir given: the closing line names it (it said results/sweeps/<study>).
    monkeypatch.setattr(sys, "argv", ["fattorus.study", str(path), "hydra.sweep.dir=results/elsewhere"])
    study.main()
    assert capsys.readouterr().out.splitlines()[-1].endswith("results in results/elsewhere")
    assert study.sweep_dirs({"study": "s"}, [["a", "hydra.sweep.dir=results/x"], ["b"]]) == ["results/x", "results/sweeps/s"]


def test_extra_arguments_are_checked_and_hydra_flags_refused(tmp_path: Path):
    path = _study(tmp_path, "study: s\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    data = study.load(path)
    with pytest.raises(study.StudyError, match=r"^argument 'sede=1': unknown setting 'sede' \(did you mean 'seed'\?\)"):
        study.check_blocks(data, ["sede=1"], path)
    # A flag among the overrides no longer switches their check off: it is refused itself.
    with pytest.raises(study.StudyError) as err:
        study.check_blocks(data, ["seed=1", "--cfg", "job"], path)
    assert re.fullmatch(r"--cfg: .*: python -m fattorus\.sweep study=s policy=to seed=1 --cfg job", str(err.value))
    # An argument is no YAML list entry: no hint about YAML's commas.
    with pytest.raises(study.StudyError) as err:
        study.check_blocks(data, ["policy"], path)
    assert str(err.value) == "argument 'policy': 'policy' is not a 'key=value' override"


# --- The command line (session 14): Hydra's own flags and mistakes with the study file. ---

SMOKE = paths.repo_root() / "sweeps" / "smoke.yaml"
#: The first trial of sweeps/smoke.yaml, as its own command line.
SMOKE_TRIAL = ("study=smoke workload=atlas sched=easy progress=false workload.window_days=14 +topo=cab "
               "workload.scale=2 policy=to +speedup=none seed=0")


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          *args: str) -> tuple[int, str, str, list[list[str]]]:
    """Run ``study.main`` with ``args`` and no block launched for real: (exit code, stdout,
    stderr, launched command lines)."""
    launched: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, *a, **k: launched.append(cmd) or 0)
    monkeypatch.setattr(sys, "argv", ["fattorus.study", *args])
    with pytest.raises(SystemExit) as exit_:
        study.main()
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err, launched


#: Hydra's flags after the study file, and words of the one line that refuses each.
FLAG_CASES = [
    (["--cfg", "job"], f"--cfg: Hydra shows configs of single runs only, and each block of a study is a --multirun; "
                       f"to see a trial's config, run it alone: python -m fattorus.sweep {SMOKE_TRIAL} --cfg job"),
    (["-c", "hydra"], "-c: Hydra shows configs of single runs only"),
    (["seed=3", "--cfg=all"], f"python -m fattorus.sweep {SMOKE_TRIAL.replace('seed=0', 'seed=3')} --cfg job"),
    (["--info", "defaults"], "--info: Hydra shows configs of single runs only"),
    (["--resolve"], "--cfg job --resolve"),
    (["-p", "topo"], "--cfg job --package PACKAGE"),
    (["--multirun"], "--multirun: every block of a study already runs as a --multirun; leave --multirun out"),
    (["-m"], "-m: every block of a study already runs as a --multirun; leave -m out"),
    (["--multi"], "--multi: every block of a study already runs as a --multirun"),  # argparse's prefixes
    (["--run"], "--run: a study runs every block as a --multirun; to run one trial, use python -m fattorus.sweep"),
    (["--config-name", "other"], "--config-name: a study composes its app's own config"),
    (["-cd", "/tmp"], "-cd: a study composes its app's own config"),
    (["--hydra-help"], "ask the app itself: python -m fattorus.sweep --hydra-help"),
    (["--dry-run"], "unknown option --dry-run: after the study file come key=value overrides"),
]


@pytest.mark.parametrize("args, words", FLAG_CASES, ids=["_".join(args) for args, _ in FLAG_CASES])
def test_hydra_flags_are_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             args: list[str], words: str):
    code, out, err, launched = _main(monkeypatch, capsys, str(SMOKE), *args)
    assert code == 2 and launched == [], err
    (line,) = err.splitlines()
    assert line.startswith("fattorus.study: error: ") and words in line, line


def test_a_flag_before_the_study_file_is_named_as_a_flag(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]):
    code, _, err, launched = _main(monkeypatch, capsys, "--cfg", "job", str(SMOKE))
    assert code == 2 and launched == []
    (line,) = err.splitlines()
    assert line.startswith("fattorus.study: error: --cfg: ") and "python -m fattorus.sweep OVERRIDES" in line


def test_the_config_flags_name_the_study_app(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    qos = paths.repo_root() / "sweeps" / "qos_paper.yaml"
    code, _, err, _ = _main(monkeypatch, capsys, str(qos), "--cfg", "job")
    assert code == 2
    assert err.endswith("run it alone: python -m fattorus.qos study=qos_paper progress=false qos=small "
                        "qos.imbalance=uniform --cfg job\n"), err


@pytest.mark.parametrize("where", [[], ["first"]], ids=["after-the-file", "instead-of-the-file"])
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_anywhere_prints_the_usage_and_runs_nothing(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], flag: str, where: list):
    args = [flag] if where else [str(SMOKE), flag]
    code, out, err, launched = _main(monkeypatch, capsys, *args)
    assert (code, err, launched) == (0, "", [])
    assert out.startswith(study.USAGE + "\n")
    # Every shipped study is listed, once, with the start of its own header comment.
    listed = dict(line.strip().split(": ", 1) for line in out.splitlines() if line.startswith("  sweeps/"))
    shipped = sorted(SMOKE.parent.glob("*.yaml"))
    assert sorted(listed) == [f"sweeps/{f.name}" for f in shipped]
    for f in shipped:
        header = " ".join(ln.lstrip("#").strip() for ln in f.read_text().splitlines()[:3] if ln.startswith("#"))
        assert header.startswith(listed[f"sweeps/{f.name}"].removesuffix(" …")), f.name


def _bad_file(kind: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The arguments of one study-file mistake, made in ``tmp``."""
    if kind == "no-file":
        return []
    if kind == "missing":
        return [str(tmp / "nosuch.yaml")]
    if kind == "missing-suffix":  # s.yaml exists: the line names it
        return [str(_study(tmp, SMOKE.read_text()).with_suffix(""))]
    if kind == "under-a-file":
        return [str(_study(tmp, SMOKE.read_text()) / "more.yaml")]
    if kind == "folder":  # e.g. results/sweeps/<study> instead of the study file
        return [str(tmp)]
    if kind == "fifo":  # reading it would block
        os.mkfifo(tmp / "fifo.yaml")
        return [str(tmp / "fifo.yaml")]
    if kind in ("other-suffix", "gzip-suffix"):  # a valid study by content, still refused by its name
        return [str(_study(tmp, SMOKE.read_text()).rename(tmp / ("s.txt" if kind == "other-suffix" else "s.swf.gz")))]
    if kind == "binary":
        (tmp / "b.yaml").write_bytes(b"\x1f\x8b\x08\xff")
        return [str(tmp / "b.yaml")]
    assert kind == "unreadable"
    path = _study(tmp, SMOKE.read_text())
    path.chmod(0)
    # Root reads a file whatever its mode: the read fails by a patch, as for any other user.
    real = Path.read_text

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    return [str(path)]


@pytest.mark.parametrize("kind, words", [
    ("no-file", "no study file given (usage: python -m fattorus.study sweeps/NAME.yaml"),
    ("missing", "nosuch.yaml: no such study file (the shipped studies are in "),
    ("missing-suffix", "s: no such study file; did you mean"),
    ("under-a-file", "s.yaml/more.yaml: no such study file"),
    ("folder", ": is a folder, not a study file"),
    ("fifo", "fifo.yaml: not a regular file"),
    ("other-suffix", "s.txt: not a study file: its name must end in .yaml or .yml"),
    ("gzip-suffix", "s.swf.gz: not a study file"),
    ("unreadable", "s.yaml: cannot read the study file (Permission denied)"),
    ("binary", "b.yaml: not a text file"),
])
def test_study_file_mistakes_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], kind: str, words: str):
    args = _bad_file(kind, tmp_path, monkeypatch)
    code, out, err, launched = _main(monkeypatch, capsys, *args)
    assert code == 2 and launched == [] and out == "", (out, err)
    (line,) = err.splitlines()
    assert line.startswith("fattorus.study: error: ") and words in line, line


def test_cfg_job_through_the_real_command_line(tmp_path: Path):
    """The reported fault end to end: one line, exit 2, nothing written, and the command the
    line offers instead prints the first trial's config without writing anything either."""
    env = dict(os.environ)  # PYTHONPATH: the checkout first (tests/conftest.py)
    run = lambda module, *args: forkcli.run(module, args, cwd=tmp_path, env=env, timeout=300)  # noqa: E731
    out = run("fattorus.study", str(SMOKE), "--cfg", "job")
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stdout == "", out.stderr[-2000:]
    (line,) = out.stderr.splitlines()
    offered = line.split("run it alone: python -m ", 1)[1].split()
    assert offered == ["fattorus.sweep", *SMOKE_TRIAL.split(), "--cfg", "job"]
    shown = run(*offered)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr[-2000:]
    assert "window_days: 14" in shown.stdout and "name: to" in shown.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_shipped_study_is_found_from_another_folder(tmp_path, monkeypatch):
    """``python -m fattorus.study sweeps/smoke.yaml`` outside the repository reads the shipped
    file (as a workload's relative path is read from the repository); it said "no such study
    file (see sweeps/)" (session 43). A file of that name in the folder itself comes first."""
    monkeypatch.chdir(tmp_path)
    assert study.load("sweeps/smoke.yaml")["study"] == study.load(SMOKE)["study"]
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "smoke.yaml").write_text("study: mine\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    assert study.load("sweeps/smoke.yaml")["study"] == "mine"


def test_yaml_merge_keys_complex_keys_and_deletions_still_load(tmp_path):
    """The duplicate-key loader leaves YAML's merge keys to PyYAML (they loaded before), refuses
    a complex key as YAML does (not a traceback), and '~key' then 'key=v' in one list passes
    (Hydra applies both): the review of session 43's change."""
    merged = _study(tmp_path, "base: &b {common: [policy=to]}\nstudy: s\n<<: *b\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    with pytest.raises(study.StudyError, match="unknown field 'base'"):  # loaded, then checked as a study
        study.load(merged)
    merged.write_text("study: s\n<<: {common: [policy=to]}\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    assert study.load(merged)["common"] == ["policy=to"]
    merged.write_text("study: s\n? [a]\n: 1\ncases: [[policy=to]]\narms: [[seed=0]]\n")
    with pytest.raises(study.StudyError, match="not valid YAML"):
        study.load(merged)
    merged.write_text("study: s\ncases: [[policy=to, '~seed', '+seed=1']]\narms: [[policy=ta]]\n")
    assert study.load(merged)["cases"] == [["policy=to", "~seed", "+seed=1"]]
