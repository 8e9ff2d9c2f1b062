"""The tuner's two kinds of failure, and the program name its messages start with."""

from __future__ import annotations

PROG = "fattorus.tune"


class TuneError(ValueError):
    """A user mistake (option, workload, storage), reported as one line with exit code 2."""


class WorkerError(RuntimeError):
    """A worker process failed (a bug or a lost storage), reported as one line with exit code 1."""


__all__ = ["PROG", "TuneError", "WorkerError"]
