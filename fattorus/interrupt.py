"""Ctrl-C on the command line: one line on stderr and exit status 130, never a traceback.

A command meets a Ctrl-C in one of two phases. While it starts — Python importing JAX, Polars
and the package, a second or more, nothing written yet — an interrupt raised as an exception
comes out as a traceback from inside some import, or lands in JAX's garbage-collection hook,
where Python only notes it ("Exception ignored in ...") and the command runs on to its end.
So every entry module calls :func:`on_start` before its imports: until the command's own
work begins, SIGINT leaves at once with one line. :func:`armed` then gives Python's
``KeyboardInterrupt`` back, for commands that keep what they finished and say so (the
studies, the sweep, the tuner); :func:`run` is the whole of it for a command that keeps
nothing (its files are written atomically, so an interrupt never leaves half a file).

:func:`leave` ends a process after an interrupt without the interpreter's teardown: with JAX
work in flight on other threads, the teardown crashed now and then (SIGSEGV: exit 139, not 130).
The lowest layer: imports nothing from the package.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

#: The exit status of an interrupted command (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130

#: Set (to anything) in the environment of a command started by another that reports the
#: interrupt itself (a study's blocks): the inner command then leaves without its own line,
#: so that a Ctrl-C is one line, from the command the user ran.
QUIET = "FATTORUS_QUIET_INTERRUPT"


def say(line: str) -> None:
    """Write ``line`` (an interrupted command's one line) to stderr, unless :data:`QUIET`."""
    if not os.environ.get(QUIET):
        sys.stderr.write(line + "\n")


def _main_thread() -> bool:
    """Signal handlers can only be set from the main thread (a command started in a thread,
    e.g. by a test, keeps the handler it has)."""
    return threading.current_thread() is threading.main_thread()


def leave(code: int) -> NoReturn:
    """End the process with ``code`` now: streams flushed, no interpreter teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            pass
    os._exit(code)


#: Whether this process is a command started from the command line (:func:`on_start` ran):
#: only then do :func:`armed` and :func:`finished` touch its signal handlers, so that a
#: command's ``main`` called in-process (by a test) leaves the caller's handlers alone.
_command = False


def on_start(prog: str) -> None:
    """Until :func:`armed`: a Ctrl-C prints ``PROG: interrupted while starting; nothing was
    run`` and leaves with :data:`INTERRUPTED`."""
    global _command
    if not _main_thread():
        return
    _command = True
    atexit.register(_ignore_at_the_end)  # first of the process' hooks: it runs last

    def _leave(signum: int, frame: Any) -> None:
        try:
            say(f"{prog}: interrupted while starting; nothing was run")
        finally:
            leave(INTERRUPTED)

    signal.signal(signal.SIGINT, _leave)


def _in_gc_callback(frame: Any) -> bool:
    """Whether ``frame`` runs inside a garbage-collection hook (``gc.callbacks``, e.g. JAX's)."""
    hooks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in hooks:
            return True
        frame = frame.f_back
    return False


def _raise(signum: int, frame: Any) -> None:
    """Python's own SIGINT handler (raise ``KeyboardInterrupt``), except inside a garbage
    collection hook: an exception raised there is only noted ("Exception ignored in ...") and
    lost, and the command would run on to its end; so the signal is sent again a moment later."""
    if _in_gc_callback(frame):
        threading.Timer(RETRY_S, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    raise KeyboardInterrupt


#: How long after an interrupt that landed in a garbage-collection hook it is sent again (s).
RETRY_S = 0.05


def armed() -> None:
    """From here a Ctrl-C raises ``KeyboardInterrupt`` again, for the command to catch (never
    inside a garbage-collection hook, where it would be lost: :func:`_raise`). So does SIGTERM
    (``kill PID``, ``timeout``, a batch system's time limit): it ended the command at once,
    exit 143 with no line, a study's running block left behind as an orphan that went on
    writing and a single run's resumable directory unnamed (session 47's exploratory run);
    now it is a Ctrl-C: the same one line, what was kept, the children stopped, exit 130."""
    if _command and _main_thread():
        signal.signal(signal.SIGINT, _raise)
        signal.signal(signal.SIGTERM, _raise)


def finished(code: int = 0) -> None:
    """The command's work is done and written: a Ctrl-C from here on (while the interpreter
    tears down, e.g. joins a worker pool) leaves quietly with ``code`` instead of a traceback
    from inside the teardown; one that lands while this swaps the handler too. Once the exit
    hooks (``atexit``) have run, SIGINT is ignored (:func:`_ignore_at_the_end`): the
    interpreter's last steps give the signal back its default action unless it is ignored,
    and a Ctrl-C then killed the finished command (exit 130 with no line; session 44's
    exploratory run)."""
    global _done
    if not (_command and _main_thread()):
        return
    try:
        signal.signal(signal.SIGINT, lambda signum, frame: leave(code))
        signal.signal(signal.SIGTERM, lambda signum, frame: leave(code))
        _done = True
    except KeyboardInterrupt:  # the Ctrl-C came before the handler changed: the work is done all the same
        leave(code)


#: Whether :func:`finished` ran: the last exit hook then ignores SIGINT.
_done = False


def _ignore_at_the_end() -> None:
    """The exit hook :func:`on_start` registers before the command's imports, so that it runs
    after theirs (hooks run last registered first): a finished command ignores SIGINT from
    here on; while the other hooks run (joining worker pools, closing a W&B run) a Ctrl-C
    still leaves at once with the command's code (:func:`finished`'s handler)."""
    if _done and _main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (in the main thread): child processes started here inherit
    it (across exec), so a Ctrl-C while they import is no traceback; they arm themselves
    (:func:`on_start`, :func:`armed`) once ready."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        yield
    finally:
        if before is not None:
            signal.signal(signal.SIGINT, before)


def run(prog: str, main: Callable[[], int | None]) -> int:
    """``main()``'s exit status (``None`` counts as 0), armed; a Ctrl-C during it prints
    ``PROG: interrupted`` and leaves with :data:`INTERRUPTED`."""
    armed()
    try:
        code = main() or 0
    except KeyboardInterrupt:
        say(f"{prog}: interrupted")
        leave(INTERRUPTED)
    done(code)
    return code


def done(code: int) -> None:
    """:func:`finished`, also when the Ctrl-C lands as it is called (main's work is done)."""
    try:
        finished(code)
    except KeyboardInterrupt:
        leave(code)


def exit_with(code: int | None) -> NoReturn:
    """``sys.exit(code)``, except that an interrupted command (:data:`INTERRUPTED`) leaves
    without the teardown (:func:`leave`)."""
    if code == INTERRUPTED:
        leave(code)
    done(code or 0)
    sys.exit(code)


__all__ = ["INTERRUPTED", "QUIET", "armed", "done", "exit_with", "finished", "ignored", "leave", "on_start", "run", "say"]
