"""Communication time of jobs from the flow-level bandwidth model, and their slowdown under
interference (issue 14, items 1–2).

A job is an allocation (node ids in allocation order) and a rank-level traffic pattern
(:mod:`fattorus.analysis.patterns`; rank ``i`` on node ``alloc[i // ranks_per_node]``). One
step of its pattern sends every flow once; with the flows' weighted max-min fair rates
(:func:`fattorus.kernels.maxmin.maxmin_rates`) over the topology's static routes and link
bandwidths, the job's step time is its slowest flow's ``bytes / rate``
(:func:`fattorus.kernels.maxmin.step_time`). Units: bytes and the topology's bandwidth unit
(GB/s on the tori and dragonflies, 1 per link on a fat-tree), so times are in
``bytes / bandwidth unit`` — only their ratios (slowdowns) are used.

Per job, :func:`slowdowns` gives the step time

* ``alone``: the job by itself in its placement (its own traffic still contends),
* ``ideal``: by itself in the topology's ideal compact placement of its size,
* ``together``: with every other job of the set running at the same time,

and ``slowdown = together / ideal``. A job's run time then scales as
``(1 − c) + c · slowdown`` for a communication fraction ``c`` (:func:`runtime_factor`).

Max-min fairness is not monotone: adding a flow can *raise* another flow's rate (it slows a
third flow that was taking bandwidth the second could use), so a job can run faster beside
another job than alone. The model reports that as it is (``together < alone``); tests
check the properties that do hold (an isolated job has slowdown 1; jobs on disjoint links do
not affect each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from fattorus.analysis import patterns
from fattorus.kernels.maxmin import maxmin_rates, step_time
from fattorus.topology.base import Topology


class Job(NamedTuple):
    """A running job for the model: its nodes (allocation order) and its rank-level traffic."""

    alloc: np.ndarray
    traffic: patterns.Traffic
    ranks_per_node: int = 1


class Slowdown(NamedTuple):
    """Per job ``(J,)`` step times (bytes / bandwidth unit) and ``slowdown = together / ideal``."""

    alone: np.ndarray
    ideal: np.ndarray
    together: np.ndarray
    slowdown: np.ndarray


def _flows(topo: Topology, jobs: Sequence[Job]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Route ids ``(F, L)``, bytes ``(F,)`` and owning job ``(F,)`` of every job's flows."""
    src, dst, nbytes, owner = [], [], [], []
    for j, job in enumerate(jobs):
        s, d, b = patterns.to_nodes(job.alloc, job.traffic, job.ranks_per_node)
        src.append(s)
        dst.append(d)
        nbytes.append(np.broadcast_to(np.asarray(b, np.float64), np.shape(s)))
        owner.append(np.full(len(s), j, np.int32))
    src, dst = np.concatenate(src), np.concatenate(dst)
    if len(src) == 0:
        return np.zeros((0, topo.max_route_links), np.int32), np.zeros(0), np.zeros(0, np.int32)
    return np.asarray(topo.routes(src, dst), np.int32), np.concatenate(nbytes), np.concatenate(owner)


def step_times(topo: Topology, jobs: Sequence[Job]) -> np.ndarray:
    """Step time of each job when all of ``jobs`` run at once, ``(J,)``."""
    route_ids, nbytes, owner = _flows(topo, jobs)
    if len(nbytes) == 0:
        return np.zeros(len(jobs))
    cap = jnp.asarray(np.asarray(topo.link_bandwidth, np.float32))
    rates = maxmin_rates(jnp.asarray(route_ids), cap).rate
    return np.asarray(step_time(rates, jnp.asarray(nbytes, jnp.float32), jnp.asarray(owner), len(jobs)), np.float64)


def slowdowns(topo: Topology, jobs: Sequence[Job]) -> Slowdown:
    """Step times alone, in the ideal placement and together, and the slowdowns (module
    docstring). A job whose ideal step time is 0 (no traffic leaves its nodes) has slowdown 1."""
    together = step_times(topo, jobs)
    alone = np.array([step_times(topo, [job])[0] for job in jobs])
    ideal = np.array([step_times(topo, [job._replace(alloc=topo.ideal_allocation(len(job.alloc)))])[0]
                      for job in jobs])
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(ideal > 0, together / np.where(ideal > 0, ideal, 1), 1.0)
    return Slowdown(alone, ideal, together, slow)


def runtime_factor(slowdown: np.ndarray, comm_fraction: float | np.ndarray) -> np.ndarray:
    """Run-time multiplier ``(1 − c) + c · slowdown`` of jobs that spend a fraction ``c`` of
    their ideal run time communicating."""
    c = np.asarray(comm_fraction, np.float64)
    if np.any((c < 0) | (c > 1)):
        raise ValueError(f"communication fraction must be in [0, 1], got {comm_fraction}")
    return (1 - c) + c * np.asarray(slowdown, np.float64)
