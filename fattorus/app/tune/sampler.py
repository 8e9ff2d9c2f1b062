"""The study's sampler: a fresh Optuna sampler for every trial, seeded from ``(--seed, trial number)``.

Why a fresh one per trial: the samplers the tuner uses keep no state between trials but their
random generator. TPE and random read the finished (and, with the constant liar, running)
trials from the storage each time; NSGA-II reads its generations and parent populations from
the storage too (trial and study system attributes; its in-memory search-space cache is
recomputed from the same trials). So a trial's draws are a function of the storage's contents
and the generator's seed. A sampler seeded once per process restarted its stream on every
resume, and a resumed study drew other points than an uninterrupted one (found by an
exploratory user test); seeded per trial, it draws the same points whether or not the
process restarted (with ``--jobs 1``; with several workers the storage a trial sees depends
on timing). Parallel workers still draw differently: their trials' numbers differ.

Imported only once a study runs (Optuna takes a second to load; ``--help`` does not need it).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState


def trial_seed(seed: int, number: int) -> int:
    """The sampler seed of trial ``number`` of a study run with ``--seed seed``: a 32-bit
    integer from NumPy's ``SeedSequence`` of both, so neighbouring trials (and seeds) get
    unrelated streams."""
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def set_aside(trials: Sequence[FrozenTrial]) -> set[int]:
    """Numbers of the failed trials whose point was queued again as a copy (a Ctrl-C's, marked
    by the objective, or a dead worker's, by Optuna's retry callback): the copy's
    ``failed_trial`` system attribute names them."""
    copied = {t.system_attrs.get("failed_trial") for t in trials}
    return {t.number for t in trials if t.state == TrialState.FAIL and t.number in copied}


def ordinal(study: optuna.Study, number: int) -> int:
    """Trial ``number``'s place in the study with the failed trials that a copy replaced left
    out: its sampler's seed. A study a Ctrl-C (or a killed worker) stopped mid-trial then
    draws, from the copy on, what it would have drawn uninterrupted (the samplers read
    complete and pruned trials only, so the failed one leaves no other trace)."""
    trials = study.get_trials(deepcopy=False)
    return number - sum(1 for n in set_aside(trials) if n < number)


#: Study user attribute saying how its trials' seeds are counted: ``ordinal`` (:func:`ordinal`)
#: in a study made since session 47; absent, the trial number, as before (a study made then
#: keeps its seeds: counting its dead workers' retried trials out now would move its later
#: trials onto seeds it already used).
SEEDS_ATTR = "trial_seeds"


def seed_index(study: optuna.Study, number: int) -> int:
    """What trial ``number``'s seed is made from: :func:`ordinal` in a study marked
    :data:`SEEDS_ATTR` ``ordinal``, else the number itself."""
    return ordinal(study, number) if study.user_attrs.get(SEEDS_ATTR) == "ordinal" else number


def new_sampler(kind: str, seed: int, parallel: bool) -> optuna.samplers.BaseSampler:
    """A fresh Optuna sampler of ``kind`` (``tpe``, ``nsga2`` or ``random``) seeded with
    ``seed``; TPE uses the constant liar when ``parallel`` (workers do not propose the same
    point at once)."""
    if kind == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant_liar is experimental
            return optuna.samplers.TPESampler(seed=seed, constant_liar=parallel)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown sampler {kind!r}")  # the option's choices keep users from here


class TrialSeededSampler(optuna.samplers.BaseSampler):
    """Before each trial, replaces its inner sampler by a fresh :func:`new_sampler` seeded with
    :func:`trial_seed` ``(seed, trial number)``, and hands it every call of that trial.

    Optuna calls :meth:`before_trial` once a trial exists (its number known: a new trial's or
    a queued one's) and before any draw, so every draw of trial ``n`` comes from the stream of
    ``(seed, n)``.
    """

    def __init__(self, kind: str, seed: int, parallel: bool = False) -> None:
        self.kind, self.seed, self.parallel = kind, seed, parallel
        self.inner = new_sampler(kind, trial_seed(seed, 0), parallel)  # replaced when the first trial begins

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Start trial ``trial.number`` with a fresh inner sampler seeded for it (for its
        :func:`ordinal`)."""
        self.inner = new_sampler(self.kind, trial_seed(self.seed, seed_index(study, trial.number)), self.parallel)
        self.inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The inner sampler's relative search space."""
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        """The inner sampler's joint draw."""
        return self.inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        """The inner sampler's draw of one parameter."""
        return self.inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        """The inner sampler's bookkeeping of the finished trial."""
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        """Optuna calls this only for thread-parallel ``optimize`` (the tuner uses processes);
        the next trial's sampler is seeded afresh anyway."""
        self.inner.reseed_rng()


__all__ = ["SEEDS_ATTR", "TrialSeededSampler", "new_sampler", "ordinal", "seed_index", "set_aside", "trial_seed"]
