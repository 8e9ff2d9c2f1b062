"""The search space: the tuned policy's declared space plus the queue discipline.

Nothing here knows the policy's parameters. They come from its declaration
(:func:`fattorus.sched.policy.tunable`, :mod:`fattorus.sched.policy.space`); this module
turns the declaration into Optuna draws (:func:`suggest`), reads a stored trial back
(:func:`decode`) and writes a point as trial parameters (:func:`encode`). The recorded names
are the declared ones, with the scheduler under ``sched``, so studies made before the space
was declared by the policy resume unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fattorus.sched.policy import tunable
from fattorus.sched.policy.space import Categorical, IntRange, Param, Tunable

if TYPE_CHECKING:
    import optuna

#: The policy the tuner tunes unless ``--policy`` names another one that declares a space
#: (its config name; the exported config's ``name``).
POLICY = "ta"
#: Queue disciplines searched together with the policy (the first one is the paper's).
SCHEDS = ("easy", "fcfs")
#: Stored in a study's setup: bump it when the space changes so that old studies are refused.
SEARCH_SPACE_VERSION = 1


def policy_params(policy: str = POLICY) -> type[Tunable]:
    """The tuned policy's parameters class (its declared space, defaults and ``describe``)."""
    return tunable(policy)


def full_space(policy: str = POLICY) -> tuple[Param, ...]:
    """Every drawn choice in drawing order: the policy's, then the scheduler (``sched``)."""
    return (*policy_params(policy).search_space(), Categorical("sched", SCHEDS))


def paper_defaults(policy: str = POLICY) -> tuple[dict[str, Any], str]:
    """The paper's policy: the policy's declared defaults (for ``ta`` no hybrid rule) under EASY."""
    return policy_params(policy).defaults(), SCHEDS[0]


def _draw(trial: optuna.Trial, p: Param) -> Any:
    """One declared choice drawn by ``trial`` (a gated one is None when its switch is off)."""
    if isinstance(p, Categorical):
        return trial.suggest_categorical(p.name, list(p.choices))
    gate = p.gate
    if gate is not None and trial.suggest_categorical(gate.name, [gate.off, gate.on]) == gate.off:
        return None
    if isinstance(p, IntRange):
        return trial.suggest_int(p.name, p.low, p.high, log=p.log)
    return trial.suggest_float(p.name, p.low, p.high, log=p.log)


def _read(trial_params: Mapping[str, Any], p: Param) -> Any:
    """The value of one declared choice in a trial's recorded parameters (inverse of :func:`_draw`)."""
    if isinstance(p, Categorical):
        return trial_params[p.name]
    if p.gate is not None and trial_params[p.gate.name] == p.gate.off:
        return None
    value = trial_params[p.name]
    return int(value) if isinstance(p, IntRange) else float(value)


def _write(p: Param, value: Any) -> dict[str, Any]:
    """The recorded parameters of one declared choice's value (inverse of :func:`_read`)."""
    if isinstance(p, Categorical):
        return {p.name: value}
    out: dict[str, Any] = {} if p.gate is None else {p.gate.name: p.gate.off if value is None else p.gate.on}
    if value is not None:
        out[p.name] = int(value) if isinstance(p, IntRange) else float(value)
    return out


def _split(point: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``{policy params..., sched}`` -> ``(policy params, scheduler)``."""
    sched = point.pop("sched")
    return point, str(sched)


def suggest(trial: optuna.Trial, policy: str = POLICY) -> tuple[dict[str, Any], str]:
    """Draw one point of the search space: ``(policy params, scheduler)``."""
    return _split({p.name: _draw(trial, p) for p in full_space(policy)})


def decode(trial_params: Mapping[str, Any], policy: str = POLICY) -> tuple[dict[str, Any], str]:
    """Turn a trial's Optuna parameters back into ``(policy params, scheduler)``."""
    return _split({p.name: _read(trial_params, p) for p in full_space(policy)})


def encode(params: Mapping[str, Any], sched: str, policy: str = POLICY) -> dict[str, Any]:
    """A point as Optuna trial parameters (what :func:`suggest` would record for it)."""
    out: dict[str, Any] = {}
    for p in full_space(policy):
        out.update(_write(p, sched if p.name == "sched" else params[p.name]))
    return out


def default_trial_params(policy: str = POLICY) -> dict[str, Any]:
    """The paper's defaults as Optuna trial parameters (what :func:`suggest` would draw)."""
    return encode(*paper_defaults(policy), policy=policy)


def is_point(trial_params: Mapping[str, Any], policy: str = POLICY) -> bool:
    """Whether recorded parameters hold a whole point of this space (not a hand-made trial)."""
    return all((p.name if isinstance(p, Categorical) or p.gate is None else p.gate.name) in trial_params
               for p in full_space(policy))


def describe(params: Mapping[str, Any], sched: str, policy: str = POLICY) -> str:
    """Short one-line text of a point of the search space."""
    return f"sched={sched} {policy_params(policy).describe(params)}"


__all__ = ["POLICY", "SCHEDS", "SEARCH_SPACE_VERSION", "decode", "default_trial_params", "describe", "encode",
           "full_space", "is_point", "paper_defaults", "policy_params", "suggest"]
