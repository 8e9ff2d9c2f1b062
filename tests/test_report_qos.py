"""The QoS study's table (``python -m fattorus.report.qos``): what it reads and refuses."""

from __future__ import annotations

import json

import polars as pl
import pytest

from fattorus.report import qos
from fattorus.args import EXIT_BROKEN_PIPE


def _qos_run(path, improvements):
    path.mkdir(parents=True)
    n = len(improvements)
    pl.DataFrame({"pattern": ["flood_pairs"] * n, "W_default": [0.5] * n, "W_qos": [0.25] * n,
                  "improvement": improvements, "improvement_final": improvements}).write_parquet(path / "jobs.parquet")


def test_the_table_reads_qos_runs_and_passes_over_other_runs(tmp_path, capsys):
    _qos_run(tmp_path / "sweep" / "a", [0.1, -0.02, 0.3])
    replay = tmp_path / "sweep" / "replay"
    replay.mkdir(parents=True)
    pl.DataFrame({"job_id": [1], "wait_s": [0.0]}).write_parquet(replay / "jobs.parquet")  # a scheduler run
    (tmp_path / "sweep" / "cut").mkdir()
    (tmp_path / "sweep" / "cut" / "jobs.parquet").write_bytes(b"PAR1 not really")
    assert qos.main([str(tmp_path / "sweep")]) == 0
    out = capsys.readouterr()
    # one run, its pattern row and "all": median improvement of (0.3, 0.1, -0.02) is +10.0 %
    assert out.out.count("| a |") == 2 and "+10.0%" in out.out and "Traceback" not in out.err
    assert "skipped" in out.err and "cut" in out.err


def test_a_directory_without_qos_runs_and_help(tmp_path, capsys):
    replay = tmp_path / "replay"
    replay.mkdir()
    pl.DataFrame({"job_id": [1]}).write_parquet(replay / "jobs.parquet")
    assert qos.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no jobs.parquet of a QoS run" in err[0]
    assert qos.main(["--help"]) == 0 and "usage" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["DIR", "--bogus"], "error: unknown option '--bogus' (usage: "),  # was the usage line alone
    ([], "error: no results directory given (usage: "),
    (["DIR", "DIR"], "error: one results directory, got 2: "),
    (["FILE"], "FILE: not a directory (give a QoS run's or a sweep's folder)"),  # said "no such directory"
    (["DIR/nothing"], "DIR/nothing: no such directory"),
])
def test_command_line_mistakes_name_the_argument(tmp_path, capsys, args, words):
    (tmp_path / "FILE").write_text("x")
    swap = {"DIR": str(tmp_path), "FILE": str(tmp_path / "FILE"), "DIR/nothing": str(tmp_path / "nothing")}
    assert qos.main([swap.get(a, a) for a in args]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    for key in ("DIR/nothing", "FILE", "DIR"):
        words = words.replace(key, swap[key])
    assert line.startswith("fattorus.report.qos: ") and words in line, line


def test_every_run_damaged_is_said_so(tmp_path, capsys):
    """Only damaged runs: the error counts them (it said "no jobs.parquet of a QoS run")."""
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "jobs.parquet").write_bytes(b"PAR1 not really")
    assert qos.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"fattorus.report.qos: error: {tmp_path}: no readable QoS run under it (1 skipped as damaged, above)"


def test_unwritable_table_is_one_line_exit_1(tmp_path, capsys):
    """qos_report.md that cannot be written: one line, exit 1 (it was a traceback)."""
    tmp_path = tmp_path / "results"  # written only under a results/ directory
    _qos_run(tmp_path / "a", [0.1, 0.2])
    (tmp_path / "qos_report.md").mkdir()  # the table's place is taken by a directory
    assert qos.main([str(tmp_path)]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "qos_report.md" in err[0] and "cannot write" in err[0], err
    assert captured.out == ""


def test_reader_that_stops_after_the_first_line_ends_it_quietly(tmp_path, reader_that_leaves):
    """``python -m fattorus.report.qos DIR | head -1``: quiet, exit 141, qos_report.md complete."""
    tmp_path = tmp_path / "results"  # written only under a results/ directory
    for i in range(20):  # 40 rows of ~4 kB (a long system name): more than a pipe holds (64 kB)
        _qos_run(tmp_path / f"r{i:02d}", [0.1, 0.2])
        (tmp_path / f"r{i:02d}" / "summary.json").write_text(json.dumps({"system": "s" * 4000}))
    (first,), err, code = reader_that_leaves("fattorus.report.qos", str(tmp_path))
    assert code == EXIT_BROKEN_PIPE, err
    assert first.startswith("| run | system |") and err == "", err
    text = (tmp_path / "qos_report.md").read_text()  # written before printing: the early reader loses nothing
    assert text.count("\n| r") == 40  # two rows (Flood-Pairs, all) of each of the 20 runs


def test_a_change_that_rounds_to_zero_reads_plus_zero():
    """-0.00004 (and -0.0) print +0.0%, not -0.0%; real changes keep their sign (by hand); the
    improved share is a share, unsigned (it read +100.0% before session 27)."""
    row = {"run": "a", "system": "s", "pattern": "p", "jobs": 3, "W_default": 0.5, "W_qos": 0.25,
           "improvement": -0.00004, "mean": -0.0, "best": 0.4189, "worst": -0.101, "settled": 0.0,
           "settled_best": 0.00051, "settled_worst": -0.0006, "improved": 1.0}
    line = qos.markdown([row]).splitlines()[-1]
    assert line == ("| a | s | p | 3 | +50.0% | +25.0% | +0.0% | +0.0% | +41.9% | -10.1% | +0.0% | +0.1% | -0.1% "
                    "| 100.0% |")


def test_a_damaged_summary_is_skipped_with_a_warning_as_a_damaged_table_is(tmp_path, capsys):
    """A run whose summary.json is not JSON, or JSON but not an object, beside a readable
    jobs.parquet: one warning line naming it, the run skipped (it was a traceback); the other
    runs are reported; with only such runs the command ends as with none (exit 2)."""
    tmp_path = tmp_path / "results"  # written only under a results/ directory
    _qos_run(tmp_path / "good", [0.1, 0.3])
    (tmp_path / "good" / "summary.json").write_text(json.dumps({"system": "small"}))
    for name, text in (("cut", "{broken"), ("list", "[1, 2]")):
        _qos_run(tmp_path / name, [0.5])
        (tmp_path / name / "summary.json").write_text(text)
    assert qos.main([str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    warnings = out.err.strip().splitlines()
    assert len(warnings) == 2 and all(w.startswith("fattorus.report.qos: warning: skipped ") for w in warnings)
    assert any("cut" in w and "summary.json" in w for w in warnings)
    assert any("list" in w and "not an object" in w for w in warnings)
    rows = [line for line in out.out.splitlines() if line.startswith("| good |")]
    assert len(rows) == 2 and all("| small |" in r for r in rows) and "| cut |" not in out.out
    (tmp_path / "good" / "jobs.parquet").unlink()
    assert qos.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "no readable QoS run under it (2 skipped as damaged, above)" in err[-1]


def test_nothing_is_written_outside_a_results_directory(tmp_path, capsys):
    """``report.qos /tmp/copy`` wrote qos_report.md into any folder (``/tmp`` too: a session-46
    exploratory run). Outside ``results/`` the table is printed with a note and no file; ``--out``
    under ``results/`` keeps it (a .md file, or a folder for qos_report.md); elsewhere it is
    refused before any run is read."""
    elsewhere = tmp_path / "copy"
    _qos_run(elsewhere / "a", [0.1, 0.3])
    assert qos.main([str(elsewhere)]) == 0
    out = capsys.readouterr()
    assert "| a |" in out.out and not (elsewhere / "qos_report.md").exists()
    (note,) = out.err.splitlines()
    assert note.startswith("fattorus.report.qos: note: qos_report.md not written") and "--out results/" in note
    keep = tmp_path / "results" / "tables"
    keep.mkdir(parents=True)
    assert qos.main([str(elsewhere), "--out", str(keep / "q.md")]) == 0 and "| a |" in (keep / "q.md").read_text()
    assert qos.main([str(elsewhere), f"--out={keep}"]) == 0 and "| a |" in (keep / "qos_report.md").read_text()
    capsys.readouterr()
    for bad, words in ((str(tmp_path / "x.md"), "must lie under a results/ directory"),
                       (str(keep / "q.parquet"), "give a .md file or a folder")):
        assert qos.main([str(elsewhere), "--out", bad]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert words in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "results"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["a"]


def test_the_header_says_which_columns_are_medians(tmp_path, capsys):
    """W_default, W_qos, improvement and settled are medians, beside a mean column: the header
    says so (it read the bare names). By hand: improvements 0.1, 0.2, 0.6 have median +20.0 %
    and mean +30.0 %."""
    _qos_run(tmp_path / "results" / "a", [0.1, 0.2, 0.6])
    assert qos.main([str(tmp_path / "results")]) == 0
    header, _, row = capsys.readouterr().out.splitlines()[:3]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[4:8] == ["W_default median", "W_qos median", "improvement median", "mean"]
    assert cells[10] == "settled median"
    values = [c.strip() for c in row.strip("|").split("|")]
    assert values[6:8] == ["+20.0%", "+30.0%"]
