"""Seeded synthetic workloads, for tests and for users without a job log (spec scenarios.md).

The generator is deliberately simple and every choice is a parameter of
:class:`SyntheticParams`:

- arrivals: a Poisson process, ``arrival_rate_per_h`` jobs per hour (exponential
  inter-arrival times; the first job arrives after one inter-arrival time);
- sizes (nodes): ``"log_uniform"`` draws ``x ~ U(0, ln(max_nodes + 1))`` and takes
  ``floor(e^x)``, so ``P(N = k) = ln((k + 1) / k) / ln(max_nodes + 1)`` for ``1 <= k <= max``;
  ``"pow2"`` draws, with probability ``pow2_fraction``, a power of two ``2^j`` with ``j``
  uniform over ``0..floor(log2 max_nodes)``, else a log-uniform size as above (real logs are
  dominated by powers of two);
- runtimes: lognormal with median ``runtime_median_s`` and log-space standard deviation
  ``runtime_sigma``, rounded up to whole seconds and clipped to ``[1, runtime_max_s]``;
- requested walltime: ``runtime * U(1, overestimate_max)`` rounded up to whole minutes, so
  never below the runtime (users overestimate).

The result is a :class:`fattorus.workload.Workload` with the usual jobs schema; the same
parameters and seed give the same table, bit for bit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from fattorus.args import SEED_MAX
from fattorus.workload import SCHEMA, SkipReport, Workload, WorkloadError

SIZE_DISTS = ("log_uniform", "pow2")
#: The most jobs one synthetic workload draws (~0.9 GB of table at this size).
MAX_JOBS = 10_000_000


@dataclasses.dataclass(frozen=True)
class SyntheticParams:
    """Parameters of the synthetic workload generator (units in the names)."""

    n_jobs: int = 1000
    arrival_rate_per_h: float = 30.0  # Poisson arrival rate, jobs per hour
    max_nodes: int = 256  # largest job, nodes
    size_dist: str = "pow2"  # "log_uniform" or "pow2"
    pow2_fraction: float = 0.75  # pow2 only: share of jobs drawn as exact powers of two
    runtime_median_s: float = 1800.0  # lognormal median, s
    runtime_sigma: float = 1.5  # lognormal sigma of ln(runtime)
    runtime_max_s: float = 86400.0  # runtimes are clipped here, s
    overestimate_max: float = 3.0  # requested = runtime * U(1, overestimate_max)
    cores_per_node: int = 1  # procs = nodes * cores_per_node
    n_users: int = 50  # users drawn uniformly from 1..n_users

    def __post_init__(self) -> None:
        # Types first: `max_nodes=abc` or `n_jobs=1.5` ended in a TypeError traceback from the
        # range checks below or from NumPy (session 47's walkthrough of the docs).
        wrong = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            kind = {"int": "an integer", "float": "a number", "str": "a name"}[f.type]
            ok = (isinstance(value, str) if f.type == "str" else
                  not isinstance(value, bool) and isinstance(value, (int, np.integer) if f.type == "int"
                                                             else (int, float, np.integer, np.floating)))
            if not ok:
                wrong.append(f"workload.synthetic.{f.name}={value!r} ({kind})")
        if wrong:
            raise WorkloadError(f"synthetic workload: wrong type of setting(s) {', '.join(wrong)}")
        checks = {
            "n_jobs": 1 <= self.n_jobs <= MAX_JOBS,  # 0 replayed nothing; 10**10 asked for ~75 GiB
            "arrival_rate_per_h": self.arrival_rate_per_h > 0,
            "max_nodes": self.max_nodes >= 1,
            "size_dist": self.size_dist in SIZE_DISTS,
            "pow2_fraction": 0.0 <= self.pow2_fraction <= 1.0,
            "runtime_median_s": self.runtime_median_s > 0,
            "runtime_sigma": self.runtime_sigma >= 0,
            "runtime_max_s": self.runtime_max_s >= 1,
            "overestimate_max": self.overestimate_max >= 1,
            "cores_per_node": self.cores_per_node >= 1,
            "n_users": self.n_users >= 1,
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"workload.synthetic.{k}={getattr(self, k)!r}" for k in bad)
            hint = f" (n_jobs: 1 .. {MAX_JOBS:,})" if "n_jobs" in bad else ""
            raise WorkloadError(f"synthetic workload: invalid setting(s) {values}{hint}")


def log_uniform_sizes(rng: np.random.Generator, n: int, max_nodes: int) -> np.ndarray:
    """``n`` sizes ``floor(e^x)``, ``x ~ U(0, ln(max_nodes + 1))``: ``P(k) ∝ ln((k+1)/k)``."""
    x = rng.uniform(0.0, np.log(max_nodes + 1.0), n)
    # floor(exp(x)) can reach max_nodes + 1 only by rounding at the top edge.
    return np.clip(np.floor(np.exp(x)), 1, max_nodes).astype(np.int64)


def pow2_sizes(rng: np.random.Generator, n: int, max_nodes: int, fraction: float) -> np.ndarray:
    """Sizes that are a power of two (uniform exponent) with probability ``fraction``."""
    top = int(np.floor(np.log2(max_nodes)))
    powers = 2 ** rng.integers(0, top + 1, n)
    return np.where(rng.uniform(size=n) < fraction, powers, log_uniform_sizes(rng, n, max_nodes))


def generate(params: SyntheticParams, seed: int) -> Workload:
    """A synthetic workload drawn with ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    n = params.n_jobs
    # Each quantity takes its own child stream, so changing one distribution's parameters
    # leaves the others' draws unchanged.
    r_arr, r_size, r_run, r_req, r_user = rng.spawn(5)
    submit = np.cumsum(r_arr.exponential(3600.0 / params.arrival_rate_per_h, n))
    if params.size_dist == "log_uniform":
        nodes = log_uniform_sizes(r_size, n, params.max_nodes)
    else:
        nodes = pow2_sizes(r_size, n, params.max_nodes, params.pow2_fraction)
    runtime = np.ceil(r_run.lognormal(np.log(params.runtime_median_s), params.runtime_sigma, n))
    runtime = np.clip(runtime, 1.0, np.floor(params.runtime_max_s))
    requested = np.ceil(runtime * r_req.uniform(1.0, params.overestimate_max, n) / 60.0) * 60.0
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_s": submit,
            "runtime_s": runtime,
            "requested_s": requested,
            "procs": nodes * params.cores_per_node,
            "nodes": nodes,
            "status": np.ones(n, np.int32),
            "user": r_user.integers(1, params.n_users + 1, n),
            "group": pl.Series([None] * n, dtype=pl.Int64),
        }
    ).cast(SCHEMA)  # type: ignore[arg-type]
    spec = json.dumps({"seed": seed, **dataclasses.asdict(params)}, sort_keys=True)
    header = {
        "Format": "synthetic",
        "Generator": spec,
        "MaxNodes": str(params.max_nodes),
        "MaxProcs": str(params.max_nodes * params.cores_per_node),
    }
    return Workload(
        jobs=jobs,
        header=header,
        path=f"synthetic:seed={seed},n_jobs={n},size_dist={params.size_dist}",
        sha256=hashlib.sha256(spec.encode()).hexdigest(),
        lines=n,
        skipped=SkipReport(),
    )


def from_config(cfg: Mapping[str, Any]) -> Workload:
    """Workload from a ``workload`` config with ``format: synthetic`` (``conf/workload/synthetic.yaml``).

    ``cfg["synthetic"]`` holds :class:`SyntheticParams` fields and ``seed`` (default 0);
    ``cores_per_node`` at the top level is used when the mapping does not set it.
    """
    raw = dict(cfg.get("synthetic") or {})
    seed = raw.pop("seed", 0) or 0
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= SEED_MAX:
        # NumPy's own refusal ("expected non-negative integer") named no setting.
        raise WorkloadError(f"workload.synthetic.seed={seed!r}: a whole number in 0 .. {SEED_MAX}")
    from_top = "cores_per_node" not in raw and bool(cfg.get("cores_per_node"))
    if from_top:
        raw["cores_per_node"] = cfg.get("cores_per_node")
    known = {f.name for f in dataclasses.fields(SyntheticParams)}
    unknown = sorted(set(raw) - known)
    if unknown:
        names = ", ".join(f"workload.synthetic.{k}" for k in unknown)
        raise WorkloadError(f"synthetic workload: unknown setting(s) {names} (known: {', '.join(sorted(known))})")
    try:
        params = SyntheticParams(**raw)
    except WorkloadError as err:  # the setting as the user gave it
        if from_top:
            raise WorkloadError(str(err).replace("workload.synthetic.cores_per_node", "workload.cores_per_node")) from None
        raise
    return generate(params, seed)


__all__ = ["SIZE_DISTS", "SyntheticParams", "from_config", "generate", "log_uniform_sizes", "pow2_sizes"]
