"""Bulk-synchronous jobs for the process-level QoS study (issue 15; QoS paper, Section 5).

A job is a set of MPI processes, one per node, that repeat timesteps: every process computes
for its own time ``c_p`` (seconds), then exchanges the messages of the job's pattern; a step
ends when the slowest process has computed and received its messages. Patterns (the paper's
microbenchmarks, Section 5.3), as flows ``(src, dst, bytes)`` between process ranks:

* ``flood_pairs``: rank ``x`` and ``n/2 + x`` exchange (both directions);
* ``nearest_neighbor``: a 2D grid without wrap-around (``grid_dims(n, 2)``), every process
  exchanges with its up to four neighbours;
* ``random_pairs``: each rank of the lower half is matched with a random rank of the upper
  half (a random matching, drawn from the run's seed), and the pair exchanges;
* ``all_to_all``: every process sends to every other.

Timing in the flow model (:func:`process_times`): with the flows' steady-state rates ``r_f``
(every message of every running job in flight at once), the message ``f`` from ``s`` to
``d`` arrives at ``c_s + bytes_f / r_f``; process ``p`` is done at
``max(c_p, arrival of every message it sends or receives)`` and the job's step time is the
largest of those. A packet simulator would also see *when* messages overlap (a process that
computes little sends early, while the others still compute); the flow model charges every
message the contention of the whole step — it overstates contention, and it has no head-of-line
blocking (``docs/qos.md``).

Compute times (:func:`compute_times`): ``c_p`` drawn once per process, uniformly in
``[0, Y]`` (the paper's static tests), ``[0.9 Y, Y]`` (``small`` imbalance), ``Y`` for one
process and 0 for the others (``large``), or ``Y`` for all (``none``: perfectly balanced),
with ``Y`` chosen so the process that computes longest spends ``compute_fraction`` of its step
computing when the job runs alone: ``Y = f / (1 - f) * T_comm`` with ``T_comm`` the job's
communication time alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fattorus.analysis.patterns import grid_dims

PATTERNS = ("flood_pairs", "nearest_neighbor", "random_pairs", "all_to_all")
IMBALANCE = ("uniform", "small", "large", "none")


class Flows(NamedTuple):
    """Flows between process ranks of one job: ``src``, ``dst`` (int) and ``nbytes`` (bytes)."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray


def _pairs(a: np.ndarray, b: np.ndarray, nbytes: float) -> Flows:
    src = np.concatenate([a, b]).astype(np.int64)
    dst = np.concatenate([b, a]).astype(np.int64)
    return Flows(src, dst, np.full(src.shape, float(nbytes)))


def pattern_flows(name: str, n: int, nbytes: float, rng: np.random.Generator | None = None) -> Flows:
    """Flows of one timestep of pattern ``name`` over ``n`` processes, ``nbytes`` per message.

    ``random_pairs`` draws its matching from ``rng`` (required for it)."""
    if n < 2:
        raise ValueError(f"pattern {name}: a job needs at least 2 processes, got {n}")
    half = n // 2
    if name == "flood_pairs":
        x = np.arange(half)
        return _pairs(x, half + x, nbytes)
    if name == "random_pairs":
        if rng is None:
            raise ValueError("random_pairs needs a random generator")
        x = np.arange(half)
        return _pairs(x, half + rng.permutation(n - half)[:half], nbytes)
    if name == "nearest_neighbor":
        rows, cols = grid_dims(n, 2)
        r, c = np.divmod(np.arange(n), cols)
        src, dst = [], []
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ok = (r + dr >= 0) & (r + dr < rows) & (c + dc >= 0) & (c + dc < cols)
            src.append(np.arange(n)[ok])
            dst.append(((r + dr) * cols + (c + dc))[ok])
        s, d = np.concatenate(src), np.concatenate(dst)
        return Flows(s, d, np.full(s.shape, float(nbytes)))
    if name == "all_to_all":
        s, d = np.nonzero(~np.eye(n, dtype=bool))
        return Flows(s.astype(np.int64), d.astype(np.int64), np.full(s.shape, float(nbytes)))
    raise ValueError(f"unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")


def compute_times(imbalance: str, n: int, y: float, rng: np.random.Generator) -> np.ndarray:
    """Per-process compute seconds ``(n,)`` for an imbalance kind (module docstring)."""
    if imbalance == "uniform":
        return rng.uniform(0.0, y, n)
    if imbalance == "small":
        return rng.uniform(0.9 * y, y, n)
    if imbalance == "large":
        c = np.zeros(n)
        c[rng.integers(n)] = y
        return c
    if imbalance == "none":
        return np.full(n, float(y))
    raise ValueError(f"unknown imbalance {imbalance!r}; choose from {', '.join(IMBALANCE)}")


def compute_scale(compute_fraction: float, t_comm: float) -> float:
    """``Y``: the longest compute time that makes ``compute_fraction`` of a step compute when
    communication alone takes ``t_comm`` seconds."""
    if not 0.0 <= compute_fraction < 1.0:
        raise ValueError(f"compute_fraction must be in [0, 1), got {compute_fraction}")
    return compute_fraction / (1.0 - compute_fraction) * t_comm


def process_times(compute: np.ndarray, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                  rate: np.ndarray) -> np.ndarray:
    """Time (s) at which each process has computed and sent and received all its messages.

    ``compute`` ``(P,)`` seconds per process; flows ``src``/``dst`` (process ids), ``nbytes``
    and ``rate`` (bytes/s; ``inf``: no link) ``(F,)``. A flow at rate 0 never arrives (inf).
    """
    with np.errstate(divide="ignore"):
        t = np.where(np.isinf(rate), 0.0, nbytes / rate)
    arrive = compute[src] + t
    done = np.array(compute, dtype=float)
    np.maximum.at(done, src, arrive)
    np.maximum.at(done, dst, arrive)
    return done


def job_steps(done: np.ndarray, job_of: np.ndarray, n_jobs: int) -> np.ndarray:
    """Step time of each job ``(n_jobs,)``: its slowest process's ``done`` time."""
    out = np.zeros(n_jobs)
    np.maximum.at(out, job_of, done)
    return out


def flow_levels(src: np.ndarray, dst: np.ndarray, proc_level: np.ndarray) -> np.ndarray:
    """Service level of each flow from its processes' levels (QoS paper, Section 4.1): a
    message uses the level of its sender when the sender was given one, else its receiver's,
    else the default level 0."""
    ls, ld = proc_level[src], proc_level[dst]
    return np.where(ls > 0, ls, ld)
