"""Commands whose output's reader leaves early (``| head -1``) end quietly with exit 141 (128 +
SIGPIPE), as a Unix filter does, instead of a ``BrokenPipeError`` traceback or a one-line
"Broken pipe" error with exit 1 (session 42's exploratory run found both)."""

from __future__ import annotations

from pathlib import Path

from fattorus.args import EXIT_BROKEN_PIPE


def _quiet(err: str) -> bool:
    return "Traceback" not in err and "BrokenPipe" not in err and "Broken pipe" not in err and "Exception ignored" not in err


def test_montecarlo_table_read_by_head(reader_that_leaves):
    # lines=0: closed before the table comes (it takes seconds); a reader that takes a line
    # may leave after the whole short table sat in the pipe, and then nothing is broken.
    _, err, code = reader_that_leaves("fattorus.kernels.montecarlo", "ft6x6", lines=0)
    assert code == EXIT_BROKEN_PIPE and _quiet(err), err


def test_a_replay_whose_output_reader_left(reader_that_leaves, tmp_path: Path):
    run = tmp_path / "results" / "run"
    _, err, code = reader_that_leaves("fattorus.sweep", "+topo=ft6x6", "workload=synthetic",
                                      "workload.synthetic.n_jobs=30", "progress=false", f"hydra.run.dir={run}", lines=0)
    assert code == EXIT_BROKEN_PIPE and _quiet(err), err
    assert (run / "summary.json").is_file()  # written before the line that found no reader


def test_interference_whose_output_reader_left(reader_that_leaves, tmp_path: Path):
    """It printed its summary after writing the table: a traceback, exit 1 (session 43)."""
    run = tmp_path / "results" / "run"
    _, err, code = reader_that_leaves("fattorus.sweep", "+topo=ft6x6", "workload=synthetic",
                                      "workload.synthetic.n_jobs=30", "progress=false", f"hydra.run.dir={run}", lines=0)
    assert (run / "summary.json").is_file(), err
    _, err, code = reader_that_leaves("fattorus.interference", str(run), "--instants", "2", lines=0)
    assert code == EXIT_BROKEN_PIPE and _quiet(err), err


def test_a_finished_network_study_whose_output_reader_left(reader_that_leaves, tmp_path: Path):
    """A second run of a finished study prints its table at once (``outputs.report_if_finished``):
    a traceback, exit 1 (session 43); a fresh run was quiet already."""
    args = ("--machine", "ft6x6", "--sizes", "2,8", "--workloads", "2", "--name", "hd")
    _, err, code = reader_that_leaves("fattorus.app.network_study", *args, lines=0, cwd=tmp_path)
    assert code in (0, EXIT_BROKEN_PIPE) and _quiet(err), err
    assert (tmp_path / "results" / "network_study" / "hd").is_dir()
    _, err, code = reader_that_leaves("fattorus.app.network_study", *args, lines=0, cwd=tmp_path)
    assert code == EXIT_BROKEN_PIPE and _quiet(err), err


def test_tune_whose_output_reader_left(reader_that_leaves, tmp_path: Path):
    """It said "error: cannot write: Broken pipe", exit 1 (session 43)."""
    _, err, code = reader_that_leaves("fattorus.tune", "--name", "ti", "--topo", "ft6x6", "--workload", "synthetic",
                                      "--train", "0:1,1:2", "--test", "2:3", "--trials", "2",
                                      "--export", str(tmp_path / "results" / "ti.yaml"), lines=1, cwd=tmp_path)
    assert code == EXIT_BROKEN_PIPE and _quiet(err), err


def test_a_study_whose_output_reader_left_runs_every_block(reader_that_leaves, tmp_path: Path):
    """A block whose output found no reader ended 141 and the study called it a failure ("block 1
    failed (exit 141)", exit 1; session 43): now every block runs, and the study ends 141."""
    (tmp_path / "s.yaml").write_text(
        "study: s\ncommon: [+topo=ft6x6, workload=synthetic, workload.synthetic.n_jobs=30, progress=false, "
        "hydra.launcher.n_jobs=1]\ncases: [[policy=to]]\narms: [[seed=0], [seed=1]]\n")
    _, err, code = reader_that_leaves("fattorus.study", "s.yaml", lines=1, cwd=tmp_path)
    assert code == EXIT_BROKEN_PIPE and _quiet(err) and "failed" not in err, err
    trials = [d for d in (tmp_path / "results" / "sweeps" / "s").iterdir() if (d / "summary.json").is_file()]
    assert len(trials) == 2
