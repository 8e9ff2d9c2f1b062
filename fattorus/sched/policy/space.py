"""A policy's declared tunable space: named choices a tuner can draw without knowing the policy.

A policy whose heuristics are worth tuning gives its parameters dataclass three class
methods (the :class:`Tunable` protocol): ``search_space()`` (a tuple of :data:`Param`, in
the order a tuner should draw them), ``defaults()`` (the policy's own choices, as a config
mapping) and ``describe(params)`` (a one-line text of a point). The tuner
(:mod:`fattorus.app.tune`) reads only these, so it holds no policy's or family's names.

The declarations say nothing about Optuna except the one thing a stored study depends on:
the *names* under which each choice is recorded. A parameter that may be switched off
(``None`` in the config) carries a :class:`Gate`: a categorical switch recorded under its own
name, drawn first; the value itself is drawn only when the switch is on. Renaming a
parameter or a gate value would orphan the trials of existing studies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol


@dataclasses.dataclass(frozen=True)
class Gate:
    """A switch in front of a parameter that may be ``None`` (off).

    Attributes:
      name: name of the switch as a tuner records it (a categorical of ``(off, on)``).
      off, on: its two values; ``off`` means the parameter is ``None``.
    """

    name: str
    off: str = "never"
    on: str = "after"


@dataclasses.dataclass(frozen=True)
class Categorical:
    """A parameter that takes one of ``choices`` (strings, numbers or booleans)."""

    name: str
    choices: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class IntRange:
    """An integer parameter in ``[low, high]`` (log-uniform when ``log``); ``gate``: may be None."""

    name: str
    low: int
    high: int
    log: bool = False
    gate: Gate | None = None


@dataclasses.dataclass(frozen=True)
class FloatRange:
    """A real parameter in ``[low, high]`` (log-uniform when ``log``); ``gate``: may be None."""

    name: str
    low: float
    high: float
    log: bool = False
    gate: Gate | None = None


#: One declared choice of a search space.
Param = Categorical | IntRange | FloatRange


class Tunable(Protocol):
    """What a tuner needs from a policy's parameters class (see the module docstring)."""

    @classmethod
    def search_space(cls) -> tuple[Param, ...]:
        """The tunable parameters, in drawing order."""
        ...

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The policy's default parameters, as a config mapping (every tunable name)."""
        ...

    @classmethod
    def describe(cls, params: Mapping[str, Any]) -> str:
        """A short one-line text of a point (for progress lines and reports)."""
        ...


__all__ = ["Categorical", "FloatRange", "Gate", "IntRange", "Param", "Tunable"]
