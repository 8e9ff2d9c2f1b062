"""Which trial to export, and which one measured the paper's defaults.

Multi-objective export (``--pick``): ``constrained`` (default) takes, among the Pareto front,
the trial with the best first objective whose other objectives are at least as good as the
paper default's (e.g. the fastest schedule that is still as interference-free as the paper's
policy); ``knee`` takes the front trial nearest the ideal point after scaling each objective
to [0, 1] over the front. ``constrained`` falls back to ``knee`` when the default trial has
not finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fattorus.app.tune.display import fmt_values
from fattorus.app.tune.space import POLICY, decode, default_trial_params, describe

if TYPE_CHECKING:
    import optuna

    from fattorus.app.tune.cli import Options

PICKS = ("constrained", "knee")


def is_default(trial: optuna.trial.FrozenTrial, policy: str = POLICY) -> bool:
    """Whether a trial ran the paper's defaults (of the tuned ``policy``)."""
    return dict(trial.params) == default_trial_params(policy)


def default_trial(study: optuna.Study, policy: str = POLICY) -> optuna.trial.FrozenTrial | None:
    """The first finished trial with the paper's defaults, if any."""
    from optuna.trial import TrialState

    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if is_default(t, policy):
            return t
    return None


def _signs(directions: Sequence[Any]) -> np.ndarray:
    """+1 for minimised objectives, -1 for maximised ones (so smaller is better)."""
    return np.array([-1.0 if "max" in str(d).lower() else 1.0 for d in directions])


def knee(front: Sequence[optuna.trial.FrozenTrial], directions: Sequence[Any]) -> optuna.trial.FrozenTrial:
    """The front trial nearest the ideal point, each objective scaled to [0, 1] over the front
    (best = 0); ties to the lower trial number."""
    v = np.array([t.values for t in front], float) * _signs(directions)
    lo, hi = v.min(axis=0), v.max(axis=0)
    scaled = np.where(hi > lo, (v - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    dist = np.sqrt((scaled ** 2).sum(axis=1))
    order = sorted(range(len(front)), key=lambda i: (dist[i], front[i].number))
    return front[order[0]]


def pick_pareto(front: Sequence[optuna.trial.FrozenTrial], directions: Sequence[Any],
                baseline: optuna.trial.FrozenTrial | None, rule: str = "constrained"
                ) -> tuple[optuna.trial.FrozenTrial, str]:
    """Choose the trial to export from a Pareto front; returns ``(trial, rule applied)``.

    ``constrained``: among front trials whose objectives 2.. are all at least as good as the
    baseline's (the paper default), the best first objective (ties: lower number). Falls back
    to ``knee`` without a baseline (or, which cannot happen for a true front, no candidate).
    """
    if not front:
        raise ValueError("empty Pareto front")
    if rule == "constrained" and baseline is not None:
        sign = _signs(directions)
        base = np.asarray(baseline.values, float) * sign
        ok = [t for t in front if np.all(np.asarray(t.values, float)[1:] * sign[1:] <= base[1:] + 1e-12)]
        if ok:
            best = min(ok, key=lambda t: (t.values[0] * sign[0], t.number))
            return best, "constrained"
    return knee(front, directions), "knee"


def same_points(trials: Sequence[optuna.trial.FrozenTrial]) -> list[list[optuna.trial.FrozenTrial]]:
    """Trials grouped by identical parameters, in order of first appearance."""
    groups: dict[tuple, list] = {}
    for t in trials:
        groups.setdefault(tuple(sorted(t.params.items())), []).append(t)
    return list(groups.values())


def _print_front(opts: Options, front: Sequence[Any], chosen: Any, rule: str, base: Any) -> None:
    """The Pareto front, one line per distinct point: ``*`` exported, ``d`` paper default."""
    print(f"[tune {opts.name}] Pareto front ({len(front)} trial(s); * exported by rule '{rule}', "
          "d paper default; repeats of a point listed together):", flush=True)
    for group in same_points(front):
        numbers = [t.number for t in group]
        mark = "*" if chosen.number in numbers else ("d" if base is not None and base.number in numbers else " ")
        label = ",".join(map(str, numbers))
        print(f"  {mark} trial {label:>6}: {fmt_values(opts.objectives, group[0].values)} | "
              f"{describe(*decode(group[0].params, opts.policy), policy=opts.policy)}", flush=True)


def choose(opts: Options, study: optuna.Study, base: Any) -> tuple[Any, str, list]:
    """The trial to export, the rule that chose it and the Pareto front (printed when several
    objectives)."""
    if not opts.multi:
        return study.best_trial, "best", []
    front = sorted(study.best_trials, key=lambda t: t.number)
    chosen, rule = pick_pareto(front, study.directions, base, opts.pick)
    _print_front(opts, front, chosen, rule, base)
    return chosen, rule, front


__all__ = ["PICKS", "choose", "default_trial", "is_default", "knee", "pick_pareto", "same_points"]
