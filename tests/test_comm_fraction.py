"""A job's communication fraction c, per pattern, per size bin or drawn from a range (issue 14, item 2)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from fattorus import workload
from fattorus.analysis import comm_fraction as cf
from fattorus.analysis import commtime, interference
from fattorus.sched import replay
from fattorus.topology import fattree

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
KEY = jax.random.PRNGKey(7)


def test_one_number_is_every_jobs_c_exactly():
    spec = cf.parse(0.3)
    assert spec.constant == 0.3 and cf.plain(spec) == 0.3
    assert cf.per_job(spec, KEY, ["a"] * 4, np.array([1, 2, 3, 4])).tolist() == [0.3] * 4


def test_size_bins_take_their_upper_edges_inclusive_by_hand():
    spec = cf.parse({"by_nodes": {"edges": [4, 16], "values": [0.1, 0.5, 0.9]}})
    nodes = np.array([1, 4, 5, 16, 17, 1000])
    assert cf.per_job(spec, KEY, ["x"] * 6, nodes).tolist() == [0.1, 0.1, 0.5, 0.5, 0.9, 0.9]
    assert cf.plain(spec) == {"by_nodes": {"edges": [4, 16], "values": [0.1, 0.5, 0.9]}}


def test_patterns_take_their_values_and_the_rest_the_default():
    spec = cf.parse({"by_pattern": {"stencil4d": 0.8, "random_pairs": 0.05, "default": 0.3}})
    names = ["stencil4d", "random_pairs", "subcomm_a2a", "stencil4d"]
    assert cf.per_job(spec, KEY, names, np.ones(4)).tolist() == [0.8, 0.05, 0.3, 0.8]
    no_default = cf.parse({"by_pattern": {"stencil4d": 0.8}})
    with pytest.raises(ValueError, match=r"no value for pattern\(s\) \['subcomm_a2a'\]"):
        cf.per_job(no_default, KEY, ["stencil4d", "subcomm_a2a"], np.ones(2))


def test_ranges_are_drawn_per_job_from_the_key_and_stay_inside():
    spec = cf.parse([0.2, 0.4])
    assert spec.constant is None
    c = cf.per_job(spec, KEY, ["x"] * 500, np.ones(500))
    assert (c >= 0.2).all() and (c <= 0.4).all() and c.std() > 0.04  # uniform: std 0.2/sqrt(12) = 0.058
    assert np.array_equal(c, cf.per_job(spec, KEY, ["x"] * 500, np.ones(500)))  # the same key, the same draws
    assert not np.array_equal(c, cf.per_job(spec, jax.random.PRNGKey(8), ["x"] * 500, np.ones(500)))
    # Every job draws whether or not its value is a range: making the small jobs' c fixed
    # leaves the large jobs' draws where they were.
    nodes = np.array([1, 100] * 50)
    both = cf.per_job(cf.parse({"by_nodes": {"edges": [8], "values": [[0.0, 1.0], [0.2, 0.4]]}}), KEY, ["x"] * 100, nodes)
    one = cf.per_job(cf.parse({"by_nodes": {"edges": [8], "values": [0.5, [0.2, 0.4]]}}), KEY, ["x"] * 100, nodes)
    assert np.array_equal(both[nodes > 8], one[nodes > 8]) and (one[nodes <= 8] == 0.5).all()


def test_the_draws_use_no_jobs_traffic_key():
    """The model folds a job's index into its key for the job's traffic; the c draws fold a
    constant no job index reaches (0xC0F was job 3,087's key: its traffic and the c draws were
    the same bits)."""
    from fattorus.kernels import threefry

    raw = threefry.key_data(jax.random.PRNGKey(11))
    c = cf.per_job(cf.parse([0.0, 1.0]), raw, ["x"] * 8, np.ones(8))
    assert cf._FOLD >= 2**31
    for j in (0, 1, 3087, 10**6):
        assert not np.allclose(c, threefry.uniform(threefry.fold_in(raw, j), 8))


@pytest.mark.parametrize("value, words", [
    (2, "must be in [0, 1]"), (float("nan"), "must be in [0, 1]"), (True, "a number in [0, 1]"), ("0.3", "a number"),
    ([0.4, 0.2], "lo > hi"), ([0.1], "a range is [lo, hi]"),
    ({"by_nodes": {"edges": [16, 4], "values": [0.1, 0.2, 0.3]}}, "rising"),
    ({"by_nodes": {"edges": [4], "values": [0.1]}}, "one more value than edges"),
    ({"by_nodes": {"edges": [4], "values": [0.1, 1.5]}}, "by_nodes.values[1]"),
    ({"by_pattern": {"stencil4d": -0.1}}, "by_pattern.stencil4d"),
    ({"by_size": {}}, "got keys ['by_size']"),
])
def test_a_value_no_job_can_take_is_refused_naming_it(value, words):
    with pytest.raises(ValueError) as err:
        cf.parse(value)
    assert words in str(err.value) and "speedup.comm_fraction" in str(err.value) and "\n" not in str(err.value)


def test_a_model_replay_stretches_each_job_by_its_own_c():
    """Each job's run time is the logged one times (1 - c) + c * slowdown with c its pattern's
    (by hand from the table below), cut at the estimate; jobs.parquet records that c."""
    ft = fattree.load("ft6x6")
    jobs = workload.load(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz", cores_per_node=4).jobs
    scaled, _ = workload.scale_nodes(jobs, 1, ft.n_nodes)
    window = workload.first_days(scaled, 0.5, 10.0)
    table = {"stencil4d": 0.9, "unstructured_mesh": 0.6, "random_pairs": 0.1, "subcomm_a2a": 0.4}
    mix = interference.parse_mix(interference.DEFAULT_MIX)
    model = commtime.ModelRuntimes(ft, mix, comm_fraction={"by_pattern": table}, seed=2)
    with jax.default_device(jax.devices("cpu")[0]):
        result = replay.replay(window, ft, "to", "easy", runtime_model=model)
    t = result.jobs
    prepared, _ = replay.prepare(workload.with_estimate(window), ft.n_nodes)
    logged = dict(zip(prepared["job_id"].to_list(), prepared["runtime_s"].to_list()))
    base = np.array([logged[i] for i in t["job_id"].to_list()])
    c = np.array([table[p] for p in t["pattern"].to_list()])
    assert np.array_equal(t["comm_fraction"].to_numpy(), c)
    slow = t["slowdown"].to_numpy()
    assert (slow > 1.01).sum() >= 3  # some jobs were slowed, so c matters
    want = np.minimum(base * ((1 - c) + c * slow), t["estimate_s"].to_numpy())
    np.testing.assert_allclose(t["runtime_s"].to_numpy(), want, rtol=1e-12)
    assert result.summary["runtime_model"]["comm_fraction"] == {"by_pattern": table}
