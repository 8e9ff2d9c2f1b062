"""How values and trials are shown: formatted metrics and one status line per finished trial."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fattorus.app.tune.objective import OBJECTIVES
from fattorus.app.tune.space import POLICY, decode, describe, is_point

if TYPE_CHECKING:
    import optuna

METRIC_LABELS = {
    "mean_wait_s": "mean wait",
    "p95_wait_s": "p95 wait",
    "utilization": "utilization",
    "mean_aph": "mean APH (hops)",
    "exposure_share": "exposure share",
    "application_efficiency": "application efficiency",
    "system_efficiency": "system efficiency",
}

#: Metrics shown as percentages (changes in percentage points).
SHARES = ("utilization", "exposure_share", "application_efficiency", "system_efficiency")


def fmt_value(objective_or_metric: str, v: float | None) -> str:
    """Human-readable value of an objective or metric."""
    key = OBJECTIVES[objective_or_metric][1] if objective_or_metric in OBJECTIVES else objective_or_metric
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if key.endswith("_s"):
        return f"{v:,.0f} s ({v / 3600:.2f} h)"
    if key in SHARES:
        return f"{v:.2%}"
    return f"{v:.4f}"


def fmt_values(objectives: Sequence[str], values: Sequence[float] | None) -> str:
    """``mean_wait 1,234 s (0.34 h), exposure 1.20%``."""
    if values is None:
        return "-"
    return ", ".join(f"{o} {fmt_value(o, v)}" for o, v in zip(objectives, values))


def change_text(key: str, before: float, after: float) -> str:
    """Change of a metric: percentage points for shares, relative change otherwise."""
    if key in SHARES:
        return f"{(after - before) * 100:+.2f} pp"
    if before:
        return f"{(after - before) / before:+.1%}"
    return "0" if after == before else "n/a"


class StatusLine:
    """Study callback: one status line per finished trial (number, value, best so far, params)."""

    def __init__(self, objectives: Sequence[str], n_windows: int, worker: int | None = None,
                 policy: str = POLICY) -> None:
        self.objectives = tuple(objectives)
        self.policy = policy
        self.n_windows = n_windows
        self.tag = "" if worker is None else f" w{worker}"
        self.t0 = time.perf_counter()

    def _result(self, trial: optuna.trial.FrozenTrial) -> str:
        """The trial's outcome: its values, where it was pruned, or its state."""
        from optuna.trial import TrialState

        if trial.state == TrialState.PRUNED:
            step = trial.last_step
            val = trial.intermediate_values.get(step) if step is not None else None
            return (f"pruned after window {(step or 0) + 1}/{self.n_windows} "
                    f"(running {self.objectives[0]} {fmt_value(self.objectives[0], val)})")
        if trial.state == TrialState.COMPLETE:
            result = fmt_values(self.objectives, trial.values)
            if "same_as_trial" in trial.user_attrs:
                result += f" (same point as trial {trial.user_attrs['same_as_trial']}, not replayed)"
            return result
        return trial.state.name.lower()

    def _best(self, study: optuna.Study) -> str:
        """The best trial so far (single objective) or the size of the Pareto front."""
        if len(self.objectives) > 1:
            return f"front {len(study.best_trials)} trial(s)"
        try:
            best = study.best_trial
        except ValueError:
            return "best -"
        return f"best {fmt_value(self.objectives[0], best.value)} (trial {best.number})"

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """Print the line for ``trial``."""
        elapsed = time.perf_counter() - self.t0
        what = (describe(*decode(trial.params, self.policy), policy=self.policy)
                if is_point(trial.params, self.policy) else str(trial.params))
        took = trial.duration.total_seconds() if trial.duration is not None else float("nan")
        print(f"[trial {trial.number}{self.tag} {took:.1f} s, {elapsed:.0f} s in] {self._result(trial)} | "
              f"{self._best(study)} | {what}", flush=True)


__all__ = ["METRIC_LABELS", "StatusLine", "change_text", "fmt_value", "fmt_values"]
