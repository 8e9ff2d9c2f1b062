"""Ctrl-C on the command line (fattorus.interrupt): one line, exit 130, never a traceback; an
interrupt is never lost in a garbage-collection hook; a study passes it on to its block.
Each case runs in a process of its own, the signal sent by the process to itself at a set
point (no timing)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from fattorus import interrupt


def _python(code: str, env: dict | None = None, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def test_a_ctrl_c_while_starting_is_one_line_and_130():
    out = _python("""
        import os, signal, time
        from fattorus import interrupt
        interrupt.on_start("fattorus.x")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        print("ran on")
    """)
    assert out.returncode == 130 and out.stdout == ""
    assert out.stderr == "fattorus.x: interrupted while starting; nothing was run\n"


def test_a_ctrl_c_while_a_modules_packages_load_names_the_module(tmp_path):
    """``python -m fattorus.report.qos`` interrupted while the ``fattorus.report`` package
    loads (before the module's own ``on_start``): the line names the module asked for, read
    from the interpreter's command line (it said ``fattorus``). The signal is sent by an audit
    hook at the first import of ``fattorus.report...`` after ``fattorus`` (no timing)."""
    import os

    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import os, signal, sys
        sent = []
        def hook(event, args):
            # The first import once fattorus/__init__ has armed its handler: the packages'.
            if event == "import" and not sent and "fattorus" in sys.modules and args[0].startswith("fattorus.report"):
                sent.append(1)
                os.kill(os.getpid(), signal.SIGINT)
        sys.addaudithook(hook)
    """))
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-m", "fattorus.report.qos", "results"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert out.returncode == 130, out.stderr
    assert out.stderr == "fattorus.report.qos: interrupted while starting; nothing was run\n"


def test_a_command_started_by_a_study_leaves_the_line_to_it():
    out = _python("""
        import os, signal, time
        from fattorus import interrupt
        interrupt.on_start("fattorus.x")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    """, env={interrupt.QUIET: "1"})
    assert out.returncode == 130 and out.stderr == ""


def test_run_turns_a_ctrl_c_into_one_line():
    out = _python("""
        import os, signal, sys, time
        from fattorus import interrupt
        def main():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        sys.exit(interrupt.run("fattorus.x", main))
    """)
    assert out.returncode == 130 and out.stderr == "fattorus.x: interrupted\n"


def test_an_interrupt_that_lands_in_a_gc_hook_is_not_lost():
    # Python only notes an exception raised in a gc hook ("Exception ignored in ...") and the
    # command runs on (seen with JAX's hook). Armed, the interrupt is sent again after the hook.
    code = """
        import gc, os, signal, time
        from fattorus import interrupt
        {arm}
        fired = []
        def hook(phase, info):
            if not fired:
                fired.append(1)
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100000):  # the handler runs here, inside the hook
                    pass
        gc.callbacks.append(hook)
        try:
            gc.collect()
            time.sleep(5)
            print("ran on")
        except KeyboardInterrupt:
            print("interrupted")
    """
    assert _python(code.format(arm='interrupt.on_start("x"); interrupt.armed()')).stdout == "interrupted\n"
    # Python's own handler, for contrast: the interrupt is lost.
    plain = _python(code.format(arm="signal.signal(signal.SIGINT, signal.default_int_handler)"))
    assert plain.stdout == "ran on\n" and "Exception ignored" in plain.stderr


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM"])
def test_a_study_passes_a_ctrl_c_on_to_its_block_and_stops(sent):
    # The block stands in for a multirun: it exits 7 on SIGINT. The study's wait passes the
    # interrupt on (not a kill: the block keeps its finished trials) and re-raises it. A
    # SIGTERM to the study alone (`kill PID`) is taken as a Ctrl-C: it ended the study and
    # left the block running on its own (session 47's exploratory run).
    out = _python("""
        import os, signal, subprocess, sys, threading
        from fattorus import interrupt
        from fattorus.app.study import _wait
        interrupt.on_start("x")
        interrupt.armed()
        block = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; "
                                  "signal.signal(signal.SIGINT, lambda *a: sys.exit(7)); print('ready', flush=True); "
                                  "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
        block.stdout.readline()
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SENT)).start()
        try:
            _wait(block)
        except KeyboardInterrupt:
            print("interrupted", block.returncode)
    """.replace("SENT", sent))
    assert out.stdout == "interrupted 7\n", out.stderr


def test_a_finished_command_leaves_quietly_on_a_late_ctrl_c():
    out = _python("""
        import os, signal, time
        from fattorus import interrupt
        interrupt.on_start("x")
        interrupt.finished(0)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    """)
    assert out.returncode == 0 and out.stderr == ""
    assert interrupt.INTERRUPTED == 130


def test_a_ctrl_c_in_the_interpreters_last_steps_leaves_a_finished_command_its_code():
    """The interpreter gives SIGINT its default action back as it ends, unless it is ignored:
    a Ctrl-C then killed a finished command (exit 130, no line; session 44's exploratory run,
    0.05-0.5 s after ``interference`` wrote its table). Here it comes from an object freed as
    the interpreter ends, after the exit hooks."""
    out = _python("""
        import os, signal, time
        from fattorus import interrupt
        interrupt.on_start("x")
        interrupt.armed()
        class Late:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.3)
        late = Late()
        interrupt.exit_with(3)
    """)
    assert out.returncode == 3 and out.stderr == "", out.stderr


def test_the_other_exit_hooks_of_a_finished_command_still_take_a_ctrl_c():
    """SIGINT is ignored only after every other exit hook (joining worker pools, closing a W&B
    run): the ignoring hook is registered when the command starts, so it runs last (it ran
    first, registered when the work was done; review, session 44)."""
    out = _python("""
        import atexit, signal
        from fattorus import interrupt
        interrupt.on_start("x")
        interrupt.armed()
        atexit.register(lambda: print("ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "live"))
        interrupt.exit_with(3)
    """)
    assert out.returncode == 3 and out.stdout == "live\n" and out.stderr == "", (out.stdout, out.stderr)


def test_a_ctrl_c_as_a_finished_command_changes_its_handler_is_no_traceback():
    """A Ctrl-C that lands while :func:`interrupt.run` hands over to :func:`interrupt.finished`
    (the armed handler still in place) gave a traceback from inside ``finished``; the work is
    done, so the command leaves with its code. The signal's arrival there is simulated: the
    handler swap raises as the armed handler would."""
    out = _python("""
        import signal
        from fattorus import interrupt
        interrupt.on_start("x")
        real = signal.signal
        def swap(signum, handler):
            if callable(handler) and handler is not interrupt._raise:
                raise KeyboardInterrupt
            return real(signum, handler)
        signal.signal = swap
        interrupt.exit_with(interrupt.run("x", lambda: 4))
    """)
    assert out.returncode == 4 and out.stderr == "", out.stderr


@pytest.mark.parametrize("sent", ["SIGINT", "SIGTERM"])
def test_an_interrupted_single_run_says_it_kept_nothing(tmp_path, sent):
    # A single run's directory is named by the time it starts and its results are written at
    # its end: "re-run to resume" (a multirun's words) would be untrue. SIGTERM (`kill PID`,
    # `timeout`, batch systems) ended a run with exit 143 and no line, leaving its stub
    # directory (session 47's exploratory run): now the Ctrl-C's line, exit 130, the stub gone.
    out = _python("""
        from fattorus import interrupt
        interrupt.on_start("fattorus.sweep")
        import os, signal, sys, time
        from fattorus.app import sweep
        def run(cfg, out_dir):
            os.kill(os.getpid(), signal.SENT)
            time.sleep(30)
        sweep.run = run
        sys.argv = ["fattorus.sweep", "+topo=ft6", "workload=synthetic", "progress=false"]
        sweep.main()
    """.replace("SENT", sent), cwd=tmp_path)
    assert out.returncode == 130 and "Traceback" not in out.stderr
    assert out.stderr == "fattorus.sweep: interrupted; a single run writes its results when it ends: nothing was kept\n"
    assert not (tmp_path / "results").exists()  # its stub directory is gone, and the folders it made for it


def test_an_interrupted_single_run_leaves_without_waiting_for_its_threads(tmp_path):
    """A single run's Ctrl-C leaves without the interpreter's teardown: a ``trials=N`` batch's
    worker threads may be inside XLA, and a teardown that met them aborted now and then (exit
    134; session 45's exploratory run). A thread that would run 100 s more stands in for them:
    a teardown would wait for it (timeout); leaving at once does not."""
    out = _python("""
        import os, signal, sys, threading, time
        from fattorus.app import sweep
        def run(cfg, out_dir):
            threading.Thread(target=time.sleep, args=(100,)).start()  # not a daemon: a teardown joins it
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        sweep.run = run
        sys.argv = ["fattorus.sweep", "+topo=ft6", "workload=synthetic", "progress=false"]
        sweep.main()
    """, cwd=tmp_path, timeout=40)
    assert out.returncode == 130 and "nothing was kept" in out.stderr, out.stderr


def test_an_interrupted_single_run_takes_away_the_directories_it_made(tmp_path):
    """A ``hydra.run.dir`` that did not exist goes with its stubs, and so do the parents the
    run made for it; one that was there before stays, without the run's stubs."""
    (tmp_path / "results" / "mine").mkdir(parents=True)
    script = """
        import os, signal, sys, time
        from fattorus.app import sweep
        def run(cfg, out_dir):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        sweep.run = run
        sys.argv = ["fattorus.sweep", "+topo=ft6", "workload=synthetic", "progress=false", "hydra.run.dir=RUN_DIR"]
        sweep.main()
    """
    for run_dir in ("results/new/deeper/run", "results/mine"):
        out = _python(script.replace("RUN_DIR", run_dir), cwd=tmp_path)
        assert out.returncode == 130 and "nothing was kept" in out.stderr, out.stderr
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["mine"]  # results/new went
    assert list((tmp_path / "results" / "mine").iterdir()) == []  # the user's folder stays, its stubs gone


def _qos_interrupted(tmp_path, placements: list[str], in_callback: bool = False) -> subprocess.CompletedProcess:
    """A single QoS run interrupted once ``placements`` (file names) are written; with
    ``in_callback`` the Ctrl-C arrives as JAX reports one that landed in a host callback."""
    return _python(f"""
        import os, signal, sys, time
        from fattorus.app import qos
        def run(cfg, out_dir):
            (out_dir / "placements").mkdir()
            for name in {placements!r}:
                (out_dir / "placements" / name).write_text("{{}}")
            if {in_callback!r}:
                raise ValueError("INTERNAL: CpuCallback error calling callback: KeyboardInterrupt")
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        qos.run = run
        sys.argv = ["fattorus.qos", "qos=small"]
        qos.main()
    """, cwd=tmp_path)


@pytest.mark.parametrize("in_callback", [False, True])
def test_an_interrupted_single_qos_run_names_the_directory_to_resume(tmp_path, in_callback):
    out = _qos_interrupted(tmp_path, ["settings.json", "p0.parquet"], in_callback)
    (run_dir,) = (tmp_path / "results" / "qos").iterdir()
    assert out.returncode == 130
    assert out.stderr == (f"fattorus.qos: interrupted; finished placements are kept in {run_dir.resolve()}; "
                          f"re-run with hydra.run.dir={run_dir.resolve()} to resume\n")
    assert (run_dir / "placements" / "p0.parquet").exists()


def test_a_single_qos_run_interrupted_before_a_placement_says_it_kept_nothing(tmp_path):
    out = _qos_interrupted(tmp_path, ["settings.json"])
    assert out.returncode == 130
    assert out.stderr == "fattorus.qos: interrupted; no placement had finished: nothing was kept\n"
    assert not (tmp_path / "results").exists()  # nor results/qos/, which the run made


@pytest.mark.parametrize("app, argv, line", [
    ("sweep", [], "a single run writes its results when it ends: nothing was kept"),
    ("sweep", ["-m"], "finished runs (and a trials=N run's finished batches) are kept, re-run to resume"),
    ("qos", [], "no placement had finished: nothing was kept"),
    ("qos", ["--multirun"], "finished placements are kept, re-run to resume"),
])
def test_a_ctrl_c_before_the_app_knows_more_tells_a_single_run_from_a_multirun(tmp_path, app, argv, line):
    # In its first second (Hydra composing the config) the app has said nothing yet of what a
    # run keeps: a single run kept nothing, and the same command would not resume it.
    out = _python(f"""
        import os, signal, sys, time
        from fattorus.app import {app} as m
        def _app():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        m._app = _app
        sys.argv = ["fattorus.{app}", *{argv!r}]
        m.main()
    """, cwd=tmp_path)
    assert out.returncode == 130 and out.stderr == f"fattorus.{app}: interrupted; {line}\n", out.stderr


def test_a_ctrl_c_after_a_single_run_finished_names_its_results(tmp_path):
    # Between the results written and the run's last line: the run had finished, and says where.
    out = _python("""
        import os, signal, sys, time
        from fattorus.app import sweep
        def run(cfg, out_dir):
            (out_dir / "summary.json").write_text("{}")
            return {}
        def one_line(summary):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        sweep.run, sweep._one_line = run, one_line
        sys.argv = ["fattorus.sweep", "+topo=ft6", "workload=synthetic", "progress=false"]
        sweep.main()
    """, cwd=tmp_path)
    (run_dir,) = (tmp_path / "results" / "runs").iterdir()
    assert out.returncode == 130
    assert out.stderr == f"fattorus.sweep: interrupted; the run had finished: its results are in {run_dir.resolve()}\n"
    assert (run_dir / "summary.json").exists()
