"""The forked commands of :mod:`forkcli` against real ones: ``subprocess.run([sys.executable,
"-m", ...])`` on the same module is the reference. What a test reads of a command — exit code,
standard output and error, files written in its folder, its environment, exit handlers and
threads finished before it ends — must be the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import forkcli

PROBE = textwrap.dedent("""
    import atexit, os, sys, threading, time
    what = sys.argv[1]
    print("argv", sys.argv[1:], "name", __name__, "path0", sys.path[0] == os.getcwd(), "cwd", os.getcwd())
    print("env", os.environ.get("FORKCLI_PROBE"), "stdin", repr(sys.stdin.read()))
    print("to stderr", file=sys.stderr)
    open("written.txt", "w").write(what)
    if what == "exit-int":
        sys.exit(3)
    if what == "exit-text":
        sys.exit("a message, exit 1")
    if what == "raise":
        raise ValueError("uncaught")
    if what == "interrupt":
        raise KeyboardInterrupt
    if what == "atexit":
        atexit.register(lambda: print("exit handler ran", flush=True))
    if what == "thread":
        def late():
            time.sleep(0.3)
            print("thread finished", flush=True)
        threading.Thread(target=late).start()
    if what == "unflushed":
        sys.stdout.write("no newline, never flushed")
""")


def both(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess, str, str]:
    """The probe run as a real command and forked, each in a folder of its own; returns both
    results and what each wrote in its folder."""
    results, written = [], []
    for how in ("real", "forked"):
        cwd = tmp_path / how
        cwd.mkdir()
        (cwd / "forkcli_probe.py").write_text(PROBE)
        # Buffered output (PYTHONUNBUFFERED off): what a forked command leaves unflushed must come out.
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "FORKCLI_PROBE": "seen"}
        if how == "real":
            out = subprocess.run([sys.executable, "-m", "forkcli_probe", *args], cwd=cwd, env=env, capture_output=True,
                                 text=True, timeout=120, stdin=subprocess.DEVNULL)
        else:
            out = forkcli.run("forkcli_probe", args, cwd=cwd, env=env, timeout=120)
        results.append(out)
        written.append((cwd / "written.txt").read_text())
    return results[0], results[1], written[0], written[1]


@pytest.mark.parametrize("what, code", [("plain", 0), ("exit-int", 3), ("exit-text", 1), ("raise", 1),
                                        ("interrupt", -2), ("atexit", 0), ("thread", 0), ("unflushed", 0)])
def test_a_forked_command_is_the_real_command(tmp_path, what, code):
    real, forked, real_file, forked_file = both(tmp_path, what, "x y")
    assert real.returncode == code and forked.returncode == code, (real.stderr, forked.stderr)
    # The folder is each run's own: the printed cwd differs by its last part only.
    assert forked.stdout.replace("/forked", "/real") == real.stdout
    assert real_file == forked_file == what
    if what in ("raise", "interrupt"):  # a traceback either way, ending in the same line (runpy's frames differ)
        assert "Traceback (most recent call last)" in real.stderr and "Traceback (most recent call last)" in forked.stderr
        assert real.stderr.splitlines()[-1] == forked.stderr.splitlines()[-1]
    else:
        assert forked.stderr == real.stderr


def test_a_command_past_its_timeout_is_killed_and_the_server_serves_the_next(tmp_path):
    (tmp_path / "forkcli_sleeper.py").write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        forkcli.run("forkcli_sleeper", [], cwd=tmp_path, timeout=1)
    (tmp_path / "forkcli_quick.py").write_text("print('next')\n")
    assert forkcli.run("forkcli_quick", [], cwd=tmp_path, timeout=60).stdout == "next\n"


def test_both_answers_already_in_the_pipe_are_read_without_waiting(tmp_path):
    """A command that ends before its caller reads the pid: the exit code is then already in
    the pipe, behind the pid, and must be read at once (a buffered reader held it where
    ``select`` could not see it, and the caller waited for its timeout)."""
    (tmp_path / "forkcli_quick.py").write_text("print('at once')\n")
    server = forkcli._Server(dict(os.environ))
    try:
        out, err = tmp_path / "out", tmp_path / "err"
        req = dict(module="forkcli_quick", args=[], cwd=str(tmp_path), env=dict(os.environ), stdout=str(out),
                   stderr=str(err))
        server.proc.stdin.write((json.dumps(req) + "\n").encode())
        time.sleep(2)  # the child has ended and the server has written both answers
        assert server._answer(None) > 0
        started = time.monotonic()
        assert server._answer(5) == 0
        assert time.monotonic() - started < 1
        assert out.read_text() == "at once\n"
    finally:
        server.close()


def test_tests_share_a_server_and_each_command_sees_its_own_test_name(tmp_path):
    """pytest sets ``PYTEST_CURRENT_TEST`` anew for every test: an environment copied from
    ``os.environ`` must not start a server per test (it did until session 40: ~2.5 s each),
    and the command still reads the variable as its caller set it."""
    (tmp_path / "forkcli_name.py").write_text("import os\nprint(os.environ.get('PYTEST_CURRENT_TEST'))\n")
    base = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    started = len(forkcli._all)
    outs = [forkcli.run("forkcli_name", [], cwd=tmp_path, env={**base, "PYTEST_CURRENT_TEST": name}, timeout=60)
            for name in ("tests/a.py::one (call)", "tests/b.py::two (setup)")]
    outs.append(forkcli.run("forkcli_name", [], cwd=tmp_path, env=base, timeout=60))
    assert [o.stdout for o in outs] == ["tests/a.py::one (call)\n", "tests/b.py::two (setup)\n", "None\n"]
    assert len(forkcli._all) - started <= 1
