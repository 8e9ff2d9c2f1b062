"""Command-line conventions shared by every entry point: argparse whose usage errors are one
line, and a quiet end when the reader of a command's output goes away.

Why: the project's rule for bad input is one clear stderr line and exit code 2; argparse's own
``error`` prints the whole usage block first (two or more lines), which buries the message.
Python ignores SIGPIPE, so writing to a pipe whose reader has closed (``... | head -1``) raises
:class:`BrokenPipeError`: a traceback instead of the quiet end a Unix filter has, and, when the
error only comes at the interpreter's final flush of ``sys.stdout``, an ``Exception ignored``
message and exit status 120 (:func:`run_piped`). The commands that print tables (``report``,
``report.qos``, ``app.compare``) write their files before they print, so a reader of stdout
that stops early loses nothing but the rest of the text.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn


#: The largest seed any command takes: ``jax.random.PRNGKey`` and NumPy's generators agree on
#: seeds in ``[0, 2**32)`` (past it, an OverflowError deep in JAX).
SEED_MAX = 2**32 - 1


def did_you_mean(name: str, choices: Iterable[str], prefix: str = "") -> str:
    """`` (did you mean 'PREFIXclosest'?)`` for the choice closest to a misspelt ``name``, or
    ``""`` when none is close (difflib's ratio): the hint every "unknown ..." line carries."""
    import difflib

    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return f" (did you mean {prefix + close[0]!r}?)" if close else ""


#: What :class:`OneLineParser` takes for a value although it starts with a minus.
_NEGATIVE_VALUE = re.compile(r"^-\.?\d[\d.,:eE+-]*$")


class OneLineParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` with one-line errors: ``PREFIX: error: MESSAGE (see
    --help)`` on stderr and exit code 2, no usage block. ``error_prefix`` is what the entry
    point's other errors start with (default: ``prog``)."""

    def __init__(self, *args: Any, error_prefix: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix or self.prog
        # A minus followed by a number or a list of them (digits, '.', ',', ':', an exponent)
        # is a value, not an option (argparse knows only plain negative numbers): `--sizes
        # -1,4` or `--train -1:2` reach the option's own check, which names what is wrong,
        # instead of "expected one argument" (session 43).
        self._negative_number_matcher = _NEGATIVE_VALUE

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.error_prefix}: error: {' '.join(message.split())} (see --help)\n")
        sys.exit(2)


EXIT_BROKEN_PIPE = 141
"""Exit status when the output's reader went away: 128 + SIGPIPE (13), what a shell reports for
a filter killed by SIGPIPE (``yes | head -1``), so that scripts can tell "the reader stopped" from
a failure (1: output not written, 2: usage or input mistake)."""


def _to_devnull(stream: object) -> None:
    """Point the file descriptor under ``stream`` at ``os.devnull``.

    Why the descriptor and not ``sys.stdout = ...``: the interpreter flushes the original
    ``sys.stdout`` object at exit, and what is left in its buffer would raise again; with its
    descriptor on ``/dev/null`` that flush succeeds. A stream without a descriptor (a test's
    capture object, ``None`` under pythonw) has nothing to redirect.
    """
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class ReaderMayLeave:
    """A stand-in for ``sys.stdout`` for a command whose work outlives its printing (a replay,
    whose results are written after its first lines): when the reader leaves (``| head -1``),
    the stream is pointed at ``os.devnull`` and the command goes on quietly, its files written;
    ``left`` tells it to end with :data:`EXIT_BROKEN_PIPE`. Before, the first line without a
    reader stopped the run (its results lost) with "error: Broken pipe"."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.left = stream, False

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._leave()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._leave()

    def _leave(self) -> None:
        self.left = True
        _to_devnull(self.stream)  # what the stream still buffers goes there at its next flush

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def reader_may_leave() -> ReaderMayLeave:
    """``sys.stdout`` as a :class:`ReaderMayLeave` (once: a stand-in already there is kept)."""
    if not isinstance(sys.stdout, ReaderMayLeave):
        sys.stdout = ReaderMayLeave(sys.stdout)
    return sys.stdout


def leave_piped() -> NoReturn:
    """End the process quietly after stdout's (or stderr's) reader left: both streams to
    ``os.devnull``, exit :data:`EXIT_BROKEN_PIPE` (for a command that catches the
    ``BrokenPipeError`` itself, as the Hydra apps' :func:`fattorus.app.cli.run_main`)."""
    _to_devnull(sys.stdout)
    _to_devnull(sys.stderr)
    sys.exit(EXIT_BROKEN_PIPE)


def run_piped(main: Callable[[], int]) -> int:
    """Run a command's ``main`` and return its exit status, or :data:`EXIT_BROKEN_PIPE` quietly
    when stdout's (or stderr's) reader closes early.

    stdout is flushed inside the guard: when stdout is a pipe Python buffers it, so a short
    table is only written at that flush, and a closed pipe would otherwise raise at exit,
    outside any ``try``. Both streams are pointed at ``os.devnull`` afterwards: the process
    ends at once and has nothing more to say to a reader that left.
    """
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _to_devnull(sys.stdout)
        _to_devnull(sys.stderr)
        return EXIT_BROKEN_PIPE


def shown(items: Sequence[Any], prog: str, desc: str, unit: str, every_s: float = 5.0) -> Iterator[Any]:
    """Iterate ``items`` showing progress on stderr: a tqdm bar on a terminal, else a line
    ``PROG: DESC i/n`` at most every ``every_s`` seconds (a log file gets a few lines, not a bar)."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        yield from tqdm(items, desc=desc, unit=unit, leave=False)
        return
    lines = LineProgress(len(items), desc, unit, every_s, line=f"{prog}: {{desc}} {{n}}/{{total}}")
    for item in items:
        lines.report()  # the items done so far, when a line is due
        yield item
        lines.n += 1


def out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says the machine ran out of memory: Python's ``MemoryError``, or XLA's
    ``RESOURCE_EXHAUSTED`` (a ``RuntimeError`` from JAX): the commands turn either into one
    line instead of the allocator's traceback."""
    return isinstance(err, MemoryError) or (isinstance(err, RuntimeError) and "RESOURCE_EXHAUSTED" in str(err))


class LineProgress:
    """A progress bar's ``update``/``close`` for a stderr that is no terminal (a log file,
    ``nohup``, a batch job): a line ``[DESC] i/n UNITs`` at most every ``every_s`` seconds,
    where a bar would fill a log with carriage returns and a silent run looks hung."""

    def __init__(self, total: int, desc: str, unit: str, every_s: float = 5.0,
                 line: str = "[{desc}] {n:,}/{total:,} {unit}s") -> None:
        import time

        self.total, self.desc, self.unit, self.every_s, self.line = int(total), desc, unit, every_s, line
        self.n = 0
        self._clock = time.monotonic
        self._last = self._clock()

    def update(self, n: int = 1) -> None:
        """``n`` more done; a line when ``every_s`` has passed since the last one."""
        self.n += int(n)
        self.report()

    def report(self) -> None:
        """A line (``line`` filled in) when ``every_s`` has passed since the last one."""
        now = self._clock()
        if now - self._last >= self.every_s:
            self._last = now
            print(self.line.format(desc=self.desc, n=self.n, total=self.total, unit=self.unit),
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to take down (the lines stay)."""


def progress_bar(total: int, desc: str, unit: str, every_s: float = 5.0, leave: bool = True) -> Any:
    """Progress of ``total`` steps on stderr: a tqdm bar on a terminal, else
    :class:`LineProgress` lines every ``every_s`` seconds. Both have ``update(n)`` and ``close()``."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, mininterval=1.0, leave=leave)
    return LineProgress(total, desc, unit, every_s)


__all__ = ["EXIT_BROKEN_PIPE", "LineProgress", "OneLineParser", "ReaderMayLeave", "leave_piped", "out_of_memory",
           "progress_bar", "reader_may_leave", "run_piped", "shown"]
