"""The declared search space (``TAParams.search_space``) as the tuner records it.

Stored studies hold trials under these parameter names and distributions; the literals below
are what studies made before the space was declared by the policy contain, so a change here
means existing study databases no longer resume.
"""

from __future__ import annotations

import optuna
import pytest

from fattorus.app import tune
from fattorus.app.tune import space
from fattorus.sched import policy
from fattorus.sched.policy.space import Categorical, FloatRange, IntRange

# What the tuner recorded before the space moved into the policy (trial 0 of every study).
STORED_DEFAULT = {"t1_pod_order": "least", "t1_leaf_order": "least", "t2_pod_order": "least",
                  "t2_leaf_order": "most", "t3_pod_order": "most", "t3_leaf_order": "most", "tie": "low_id",
                  "relax": "never", "sched": "easy"}


def test_default_trial_params_are_the_stored_ones():
    assert tune.default_trial_params() == STORED_DEFAULT
    assert list(tune.default_trial_params()) == list(STORED_DEFAULT)  # drawing order too


def test_recorded_distributions_are_the_stored_ones():
    trial = optuna.trial.FixedTrial({**STORED_DEFAULT, "relax": "after", "relax_after_s": 3600.0})
    params, sched = tune.suggest(trial)
    dists = trial.distributions
    assert dists["relax_after_s"] == optuna.distributions.FloatDistribution(600.0, 7 * 86400.0, log=True)
    assert dists["relax"] == optuna.distributions.CategoricalDistribution(["never", "after"])
    assert dists["tie"] == optuna.distributions.CategoricalDistribution(["low_id", "high_id"])
    assert dists["sched"] == optuna.distributions.CategoricalDistribution(["easy", "fcfs"])
    assert dists["t2_leaf_order"] == optuna.distributions.CategoricalDistribution(["least", "most"])
    assert params["relax_after_s"] == 3600.0 and sched == "easy"


@pytest.mark.parametrize("relax", [None, 600.0, 77914.25])
def test_encode_decode_round_trip(relax):
    params = {**policy.TAParams.defaults(), "t1_leaf_order": "most", "tie": "high_id", "relax_after_s": relax}
    recorded = tune.encode(params, "fcfs")
    assert ("relax_after_s" in recorded) == (relax is not None)
    assert tune.decode(recorded) == (params, "fcfs")
    assert tune.suggest(optuna.trial.FixedTrial(recorded)) == (params, "fcfs")
    policy.TAParams.from_mapping(params)  # a valid policy config


def test_describe_text_is_unchanged():
    assert tune.describe(*tune.paper_defaults()) == (
        "sched=easy t1=least/least t2=least/most t3=most/most tie=low_id relax=never")
    params = {**policy.TAParams.defaults(), "relax_after_s": 5400.0}
    assert tune.describe(params, "fcfs").endswith("relax=5400 s (1.50 h)")


@pytest.mark.parametrize("name", sorted(policy.TUNABLE))
def test_declared_defaults_lie_in_the_declared_space(name):
    params_cls = policy.tunable(name)
    defaults = params_cls.defaults()
    for p in params_cls.search_space():
        value = defaults[p.name]
        if isinstance(p, Categorical):
            assert value in p.choices, p
        elif value is None:
            assert p.gate is not None, p
        else:
            assert isinstance(p, (IntRange, FloatRange)) and p.low <= value <= p.high, p


def test_untunable_policy_is_a_one_line_error():
    with pytest.raises(ValueError, match="declares no tunable parameters"):
        policy.tunable("to")
    assert space.POLICY in policy.TUNABLE
