"""Synthetic workloads: reproducibility, schema, and the stated distributions.

References are the textbook properties of each distribution (Poisson arrivals: exponential
gaps, mean 1/rate, coefficient of variation 1; the log-uniform pmf written out; lognormal
median and log-space spread), not the generator's own output.
"""

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from omegaconf import OmegaConf

from fattorus import workload
from fattorus.workload import synthetic

REPO = Path(__file__).resolve().parents[1]


def test_same_seed_same_table_different_seed_differs():
    params = synthetic.SyntheticParams(n_jobs=500)
    a, b, c = synthetic.generate(params, 1), synthetic.generate(params, 1), synthetic.generate(params, 2)
    assert a.jobs.equals(b.jobs) and a.sha256 == b.sha256
    assert not a.jobs.equals(c.jobs)
    assert a.path.startswith("synthetic:")


def test_schema_and_invariants():
    params = synthetic.SyntheticParams(n_jobs=3000, max_nodes=100, cores_per_node=4, runtime_max_s=7200)
    jobs = synthetic.generate(params, 0).jobs
    assert dict(jobs.schema) == workload.SCHEMA
    assert jobs.height == 3000
    assert jobs["job_id"].to_list() == list(range(1, 3001))
    assert jobs["nodes"].min() >= 1 and jobs["nodes"].max() <= 100
    assert (jobs["procs"] == jobs["nodes"].cast(pl.Int64) * 4).all()
    assert jobs["runtime_s"].min() >= 1 and jobs["runtime_s"].max() <= 7200
    assert (jobs["requested_s"] >= jobs["runtime_s"]).all()
    assert (jobs["requested_s"] % 60 == 0).all()
    assert (jobs["submit_s"].diff().drop_nulls() >= 0).all()


def test_poisson_arrivals():
    rate = 30.0  # jobs per hour -> mean gap 120 s
    jobs = synthetic.generate(synthetic.SyntheticParams(n_jobs=20000, arrival_rate_per_h=rate), 3).jobs
    gaps = np.diff(np.concatenate([[0.0], jobs["submit_s"].to_numpy()]))
    assert gaps.mean() == pytest.approx(3600 / rate, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.04)
    # Memorylessness: P(gap > 2m | gap > m) = P(gap > m) = e^-1 for m the mean.
    m = 3600 / rate
    assert np.mean(gaps[gaps > m] > 2 * m) == pytest.approx(math.exp(-1), abs=0.03)


def test_log_uniform_sizes_follow_the_pmf():
    max_nodes, n = 16, 40000
    jobs = synthetic.generate(
        synthetic.SyntheticParams(n_jobs=n, max_nodes=max_nodes, size_dist="log_uniform"), 5
    ).jobs
    counts = np.bincount(jobs["nodes"].to_numpy(), minlength=max_nodes + 1)[1:]
    pmf = np.array([math.log((k + 1) / k) / math.log(max_nodes + 1) for k in range(1, max_nodes + 1)])
    assert pmf.sum() == pytest.approx(1.0)
    chi2 = float(np.sum((counts - n * pmf) ** 2 / (n * pmf)))
    assert chi2 < 37.7  # 99.9 % quantile of chi-square with 15 degrees of freedom


def test_pow2_bias():
    max_nodes, n, frac = 256, 20000, 0.75
    jobs = synthetic.generate(
        synthetic.SyntheticParams(n_jobs=n, max_nodes=max_nodes, size_dist="pow2", pow2_fraction=frac), 9
    ).jobs
    nodes = jobs["nodes"].to_numpy()
    is_pow2 = (nodes & (nodes - 1)) == 0
    pmf = {k: math.log((k + 1) / k) / math.log(max_nodes + 1) for k in range(1, max_nodes + 1)}
    p_pow2_lu = sum(p for k, p in pmf.items() if k & (k - 1) == 0)
    expected = frac + (1 - frac) * p_pow2_lu
    assert is_pow2.mean() == pytest.approx(expected, abs=0.015)
    # Exponents of the biased part are uniform over 0..8: each power of two at least frac / 9.
    for j in range(9):
        assert np.mean(nodes == 2**j) > 0.8 * frac / 9


def test_lognormal_runtimes():
    params = synthetic.SyntheticParams(n_jobs=20000, runtime_median_s=600.0, runtime_sigma=0.8, runtime_max_s=10**7)
    runtime = synthetic.generate(params, 11).jobs["runtime_s"].to_numpy()
    assert np.median(runtime) == pytest.approx(600.0, rel=0.04)
    # Rounding up to whole seconds shifts ln(runtime) by less than 1/600.
    assert np.std(np.log(runtime)) == pytest.approx(0.8, rel=0.03)


def test_overestimate_range():
    params = synthetic.SyntheticParams(n_jobs=5000, overestimate_max=2.0)
    jobs = synthetic.generate(params, 4).jobs
    ratio = (jobs["requested_s"] / jobs["runtime_s"]).to_numpy()
    # requested = ceil_to_minute(runtime * U(1, 2)): at least 1, at most 2 plus one minute.
    assert ratio.min() >= 1.0
    assert np.all(jobs["requested_s"].to_numpy() <= 2 * jobs["runtime_s"].to_numpy() + 60)


def test_round_trip_through_swf(tmp_path):
    wl = synthetic.generate(synthetic.SyntheticParams(n_jobs=300, cores_per_node=2), 0)
    path = tmp_path / "syn.swf"
    workload.write_swf(wl.jobs, path, header={k: wl.header[k] for k in ("MaxNodes", "MaxProcs")})
    back = workload.load(path)
    assert back.jobs.equals(wl.jobs)


def test_from_config():
    cfg = OmegaConf.load(REPO / "conf" / "workload" / "synthetic.yaml")
    wl, counts = workload.from_config(cfg, machine_nodes=1296)
    assert wl.jobs.height == cfg.synthetic.n_jobs
    assert counts == {"dropped_by_scaling": 0, "outside_window": 0, "scale_factor": 1.0}
    cfg.synthetic.seed = 1
    assert not workload.from_config(cfg)[0].jobs.equals(wl.jobs)
    cfg.synthetic.bogus = 3
    with pytest.raises(workload.WorkloadError, match="bogus"):
        workload.from_config(cfg)


@pytest.mark.parametrize("field,value", [("n_jobs", -1), ("size_dist", "zipf"), ("overestimate_max", 0.5), ("max_nodes", 0)])
def test_bad_params(field, value):
    with pytest.raises(workload.WorkloadError, match=field):
        synthetic.SyntheticParams(**{field: value})
