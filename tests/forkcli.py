"""Run ``python -m fattorus.<cli> ARGS`` as a real process, forked from one that imported the package.

Why: a command a test starts spends ~0.5 s importing (Hydra, OmegaConf, Polars, NumPy, JAX,
the package) and ~0.4 s in the interpreter's teardown before it exits, and the suite starts
several hundred (session 39: a refused command 1.5 -> 0.63 s; the bad-input table 140 -> 38 s).
A *server* process imports the command modules once; each command is then a child forked
from it, with its own working directory, environment, standard streams and exit code. What a
test observes is what a fresh ``subprocess.run([sys.executable, "-m", ...])`` gives
(tests/test_forkcli.py compares the two): the child is a separate process; an uncaught error
prints its traceback and exits 1, ``SystemExit`` sets the code, Ctrl-C ends it by SIGINT; at
its end non-daemon threads are joined, exit handlers run and streams flushed, then it leaves
by ``os._exit`` without tearing the modules down (that teardown would touch, so copy, every
page the fork shares; the server also freezes its heap out of the child's collections).

Fork is done by the server, never by the test process (pytest and its thread pools are
multithreaded). The server imports no JAX backend and runs no Polars query before it forks,
so no worker pool exists to be copied half-locked; the threads alive at a fork are idle ones:
OpenBLAS' and jemalloc's (which register their own fork handlers) and Polars' spill-file
cleaner, whose exit handler the child drops (:func:`_serve`).

A server is started per environment (the environment a command sees at import time is the
one its server had: ``JAX_ENABLE_X64``, ``XLA_FLAGS``, ... are read then; pytest's
per-test ``PYTEST_CURRENT_TEST`` aside, :data:`PER_TEST`), lazily, and kept for the test
process' life; concurrent calls each take their own server.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: What the server imports before its first fork: every command's module (not run) and the
#: heavy libraries they import. JAX is imported (its backends start only when first used).
PRELOAD = ("fattorus.sweep", "fattorus.study", "fattorus.interference", "fattorus.report", "fattorus.qos",
           "fattorus.tune", "fattorus.app.sweep", "fattorus.app.study", "fattorus.app.qos", "fattorus.app.compare",
           "fattorus.app.network_study", "fattorus.app.dragonfly_study", "fattorus.bench", "jax", "jax.numpy")


def _serve() -> dict:
    """The server's loop: one request a line on stdin, answered with the child's pid and then its
    exit code on stdout. Returns only in a forked child, with the request it is to run."""
    import atexit
    import importlib

    # Polars registers an exit handler that waits for its spill-file cleaner thread; a forked
    # child has no such thread (a fork copies only the forking one), so that handler would
    # wait forever (session 39, found by a hung child). Every exit handler the imports
    # register is recorded, and the child keeps all of them but Polars'.
    register, kept = atexit.register, []

    def recording(func, *args, **kwargs):
        if not importing_polars:
            kept.append((func, args, kwargs))
        return register(func, *args, **kwargs)

    atexit.register = recording
    importing_polars = True
    importlib.import_module("polars")
    importing_polars = False
    for name in PRELOAD:
        importlib.import_module(name)
    atexit.register = register
    global _KEPT_EXITS
    _KEPT_EXITS = kept
    # What the imports made is never collected in a child: its garbage collector would walk
    # (and so copy) every page the fork shares.
    gc.collect()
    gc.freeze()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return req
        out.write(f"{pid}\n")
        out.flush()
        _, status = os.waitpid(pid, 0)
        out.write(f"{os.waitstatus_to_exitcode(status)}\n")
        out.flush()
    sys.exit(0)


_KEPT_EXITS: list = []


def _child(req: dict) -> None:
    """In the forked child: become ``python -m <module> <args>`` in the request's folder."""
    import atexit
    import runpy

    atexit._clear()
    for func, args, kwargs in _KEPT_EXITS:
        atexit.register(func, *args, **kwargs)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdin = open(0, closefd=False)  # the server's stdin was the request pipe
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path[0] = os.getcwd()  # as `python -m` sets it
    sys.argv = [req["module"], *req["args"]]
    sys.modules.pop(req["module"], None)  # runpy runs the module's code afresh as __main__
    code = 0
    try:
        runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
    except SystemExit as end:  # as the interpreter reads it: None 0, an int itself, else printed and 1
        if end.code is None or isinstance(end.code, int):
            code = end.code or 0
        else:
            print(end.code, file=sys.stderr)
            code = 1
    except BaseException:  # uncaught: its traceback, exit 1 (a Ctrl-C: killed by SIGINT, as Python does)
        sys.excepthook(*sys.exc_info())
        code = -signal.SIGINT if isinstance(sys.exc_info()[1], KeyboardInterrupt) else 1
    _exit(code)


def _exit(code: int) -> None:
    """The interpreter's exit without its teardown: non-daemon threads joined, exit handlers
    run, streams flushed, then ``os._exit``. Tearing down the modules (and collecting the heap)
    would touch every object the server imported, copying each page the fork shares (~0.4 s a
    command, session 39); nothing of a command's results depends on it."""
    import atexit
    import threading

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: as at a normal exit, nothing to add
            pass
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


class _Server:
    """One server process, for one environment."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=dict(env), cwd="/", bufsize=0)
        # Answers are read straight from the pipe into this buffer: a buffered reader could
        # hold the exit code behind the pid (a command that ends at once) where select() on
        # the pipe cannot see it.
        self.buffer = b""
        if self._line(None) != "ready":
            raise RuntimeError("forkcli: the server did not start")

    def run(self, module: str, args: Sequence[str], cwd: Path, env: Mapping[str, str], out: Path, err: Path,
            timeout: float | None) -> int:
        req = dict(module=module, args=list(args), cwd=str(cwd), env=dict(env), stdout=str(out), stderr=str(err))
        data = (json.dumps(req) + "\n").encode()
        while data:  # a raw pipe may take part of a large request at a time
            data = data[self.proc.stdin.write(data):]
        pid = self._answer(None)
        code = self._answer(timeout)
        if code is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended as the time ran out
                pass
            self._answer(None)
            raise subprocess.TimeoutExpired([module, *args], timeout or 0)
        return code

    def _answer(self, timeout: float | None) -> int | None:
        """The server's next answer (a pid or an exit code); None if none came within ``timeout`` s."""
        line = self._line(timeout)
        if line is None:
            return None
        if not line.lstrip("-").isdigit():
            raise RuntimeError(f"forkcli: the server answered {line!r} (exit code {self.proc.poll()})")
        return int(line)

    def _line(self, timeout: float | None) -> str | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"forkcli: the server ended (exit code {self.proc.wait()})")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


#: Variables a server's environment leaves out: pytest sets ``PYTEST_CURRENT_TEST`` anew for
#: each test (and each of its phases), so an environment copied from ``os.environ`` differed
#: from test to test, and every test started a server of its own (~2.5 s of imports; session
#: 40). No module reads it at import; the child still sees it, from the request's environment.
PER_TEST = frozenset({"PYTEST_CURRENT_TEST"})


def _server_key(env: Mapping[str, str]) -> tuple:
    """The environment a server imports under, as a key: ``env`` less :data:`PER_TEST`."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_TEST))


_idle: dict[tuple, list[_Server]] = {}
_all: list[_Server] = []
_lock = threading.Lock()


def run(module: str, args: Sequence[str], cwd: Path | str, env: Mapping[str, str] | None = None,
        timeout: float | None = 600) -> subprocess.CompletedProcess:
    """``subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env,
    capture_output=True, text=True, timeout=timeout)``, forked from a server that imported
    the package (see the module's docstring)."""
    env = dict(os.environ if env is None else env)
    key = _server_key(env)
    with _lock:
        pool = _idle.setdefault(key, [])
        server = pool.pop() if pool else None
    if server is None:
        server = _Server(dict(key))
        with _lock:
            _all.append(server)
    tag = f"forkcli-{os.getpid()}-{threading.get_ident()}"
    out, err = Path(tempfile.gettempdir()) / f"{tag}.out", Path(tempfile.gettempdir()) / f"{tag}.err"
    try:
        rc = server.run(module, args, Path(cwd).resolve(), env, out, err, timeout)
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    except RuntimeError:  # the server is gone: not handed out again
        raise
    except subprocess.TimeoutExpired:  # the child killed and its code read: the server is sound
        with _lock:
            _idle[key].append(server)
        raise
    finally:
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
    with _lock:
        _idle[key].append(server)
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], rc, stdout, stderr)


@atexit.register
def _close_all() -> None:
    for server in _all:
        try:
            server.close()
        except Exception:  # a server already gone: nothing to close
            pass


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _child(_serve())
