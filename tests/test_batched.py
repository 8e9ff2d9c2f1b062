"""The compiled, batched replay engine against the NumPy engine, trial by trial, job by job.

Reference: :func:`fattorus.sched.replay.simulate` (itself checked against a count-based EASY
and the interference-free invariants in ``test_replay.py``). Every trial of a batch — the
logged run times and several V2 speedup draws, so the trials really diverge — must get the
same start time and the same node set for every job.

Most of this file's time is XLA compiling the engines, once per policy, queue discipline,
machine, job count, capacities and batch size: the tests below share those where the
property checked allows (noted where they do).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from fattorus import topology, workload
from fattorus.sched import batched, policy, replay
from fattorus.sched.batched import CapacityError, replay_batch
from fattorus.sched.policy.fattree.ta import TAParams
from fattorus.topology import fattree
from fattorus.workload import speedup

REPO = Path(__file__).resolve().parents[1]
ATLAS = REPO / "data" / "traces" / "LLNL-Atlas-2006-2.1-cln.swf.gz"


def _prepared(scale: float, days: float, start_days: float, ft):
    jobs = workload.load(ATLAS, cores_per_node=8).jobs
    jobs, _ = workload.scale_nodes(jobs, scale, ft.n_nodes)
    jobs = workload.first_days(jobs, days, start_days)
    prep, _ = replay.prepare(workload.with_estimate(jobs), ft.n_nodes)
    return tuple(prep[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes"))


@pytest.fixture(scope="module")
def cab():
    return fattree.load("cab")


@pytest.fixture(scope="module")
def atlas2x(cab):
    """12 busy days of Atlas x2 on Cab (a queue builds up: EASY backfills and reserves)."""
    return _prepared(2, 12, 60, cab)


@pytest.fixture(scope="module")
def v2_runtimes(atlas2x) -> np.ndarray:
    """``(4, J)`` run times of :func:`atlas2x`: the logged ones, then three V2 speedup draws."""
    _, runtime, _, nodes = atlas2x
    scenario = speedup.load("v2")
    rows = [runtime]
    for seed in (0, 1, 2):
        factor = speedup.factors64(scenario, jax.random.PRNGKey(seed), nodes)
        rows.append(runtime * np.asarray(factor, np.float64))
    return np.stack(rows)


@pytest.fixture(scope="module")
def numpy_engine(cab, atlas2x, v2_runtimes):
    """``reference(name, queue, b)``: the NumPy engine's replay of trial ``b`` of
    :func:`v2_runtimes` (default policy parameters), each computed once for the module:
    the node-level and the count-only tests of ``to`` compare against the same replays (each
    was run twice, once per test)."""
    submit, _, estimate, nodes = atlas2x
    done = {}

    def reference(name: str, queue: str, b: int):
        if (name, queue, b) not in done:
            done[name, queue, b] = replay.simulate(submit, v2_runtimes[b], estimate, nodes, cab, policy.make(name, cab),
                                                   queue)
        return done[name, queue, b]

    return reference


@pytest.mark.parametrize("name", ["to", "ta"])
@pytest.mark.parametrize("queue", ["fcfs", "easy"])
def test_every_trial_equals_the_numpy_engine(cab, atlas2x, v2_runtimes, numpy_engine, name, queue):
    """The batch (vmap over trials) against the NumPy engine. The one-trial path (no vmap;
    EASY's backfill pass a real cond) is checked against the NumPy engine by
    :func:`test_ta_heuristics_and_tie_rule_are_honoured` (and, for the count-only engine,
    by the small-machine test): its code is the same for every policy and queue, and every
    one-trial replay is one more compilation."""
    submit, _, estimate, nodes = atlas2x
    runtimes = v2_runtimes
    batch = replay_batch(submit, runtimes, estimate, nodes, cab, queue, name)
    assert batch.start.shape == runtimes.shape
    for b in range(len(runtimes)):
        ref = numpy_engine(name, queue, b)
        np.testing.assert_array_equal(batch.start[b], ref.start, err_msg=f"trial {b}")
        for j in range(len(submit)):
            assert np.array_equal(batch.alloc(b, j), np.sort(ref.alloc[j])), (b, j)
    # The draws change the schedule: the trials are not copies of one another.
    assert not np.array_equal(batch.start[0], batch.start[1])


@pytest.fixture
def calls_to_the_counted_engine(monkeypatch):
    """Counts the compiled calls of the count-only engine; the node-level one must not run."""
    from fattorus.sched import counted

    calls, replay_counts = [], counted.replay
    monkeypatch.setattr(counted, "replay", lambda *a, **k: calls.append(len(a[1])) or replay_counts(*a, **k))
    monkeypatch.setattr(batched, "_replay", lambda *a, **k: pytest.fail("the node-level engine ran"))
    return calls


@pytest.mark.parametrize("queue", ["fcfs", "easy"])
def test_to_without_node_sets_runs_on_counts_with_the_same_start_times(cab, atlas2x, v2_runtimes, numpy_engine, queue,
                                                                     calls_to_the_counted_engine):
    """``to`` with ``record_alloc=False`` takes the count-only engine (fattorus.sched.counted):
    every trial's start times equal the NumPy engine's. (One trial alone, the engine's other
    path, is checked in the small-machine test below, against the count-based reference.)"""
    submit, _, estimate, nodes = atlas2x
    runtimes = v2_runtimes
    batch = replay_batch(submit, runtimes, estimate, nodes, cab, queue, "to", record_alloc=False)
    assert calls_to_the_counted_engine == [len(runtimes)]
    for b in range(len(runtimes)):
        np.testing.assert_array_equal(batch.start[b], numpy_engine("to", queue, b).start, err_msg=f"trial {b}")
    assert not np.array_equal(batch.start[0], batch.start[1])


def test_counted_engine_on_a_small_machine_under_heavy_load_equals_the_count_based_reference(
        calls_to_the_counted_engine):
    """ft6x6 (54 nodes), long queues, many backfills; the independent count-based EASY and
    FCFS of fattorus.sched.reference as the reference, three trials in one batch and, for
    EASY, one alone (the one-trial path: its release and backfill passes real conds; an
    EASY event runs the FCFS pass and, when no head is blocked, FCFS's queue shift, so
    FCFS alone would take no code EASY alone does not)."""
    from fattorus.sched import reference

    ft = fattree.load("ft6x6")
    rng = np.random.default_rng(11)
    J = 400
    # Times on a 100 s grid: a backfill candidate's estimated end often equals the shadow time
    # (the rule is "ends by", <=), and jobs end together.
    submit = 100.0 * np.sort(rng.integers(0, 200, J))
    nodes = rng.choice([1, 2, 3, 5, 8, 13, 20, 30, 54], J)
    estimate = 100.0 * rng.integers(1, 30, J) * rng.choice([1, 1, 2, 4], J)
    runtime = np.minimum(estimate, 100.0 * rng.integers(1, 30, (3, J)))
    batches = {}
    for queue in ("fcfs", "easy"):
        batches[queue] = batch = replay_batch(submit, runtime, estimate, nodes, ft, queue, "to", record_alloc=False)
        for b in range(3):
            ref = reference.schedule(submit.tolist(), runtime[b].tolist(), estimate.tolist(), nodes.tolist(),
                                     ft.n_nodes, easy=queue == "easy")
            np.testing.assert_array_equal(batch.start[b], np.asarray(ref, np.float64), err_msg=f"{queue} {b}")
    lone = replay_batch(submit, runtime[1:2], estimate, nodes, ft, "easy", "to", record_alloc=False)
    np.testing.assert_array_equal(lone.start[0], batches["easy"].start[1])
    assert calls_to_the_counted_engine == [3, 3, 1]


def test_counted_engine_capacity_overflow_is_an_error(calls_to_the_counted_engine):
    """Each overflow with both capacities given (8 and 8; each scenario overflows one of
    them only), then grown by default: both scenarios have 16 jobs and two trials, so they
    share their compiled shapes. FCFS: the overflow flags are raised where a job joins the
    queue or starts, code both disciplines share (and FCFS compiles in about half the time)."""
    ft = fattree.load("ft6")
    J = 16  # whole-machine jobs arriving at once, one at a time on the machine: 15 wait together
    submit, estimate, nodes = np.zeros(J), np.full(J, 100.0), np.full(J, ft.n_nodes)
    runtime = np.stack([np.full(J, 100.0), np.full(J, 50.0)])
    with pytest.raises(CapacityError, match="more than 8 jobs waited at once"):
        replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", record_alloc=False, queue_capacity=8,
                     running_capacity=8)
    # (How capacities grow is shared with the node-level engine and tested below.)
    grown = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", record_alloc=False)
    np.testing.assert_array_equal(grown.start, np.stack([100.0 * np.arange(J), 50.0 * np.arange(J)]))
    # Sixteen one-node jobs: trial 0 one after another, trial 1 all together (16 running).
    submit, estimate, nodes = np.arange(J) * 10.0, np.full(J, 1000.0), np.ones(J, int)
    runtime = np.stack([np.full(J, 5.0), np.full(J, 1000.0)])
    with pytest.raises(CapacityError, match=r"more than 8 jobs ran at once in trial\(s\) \[1\]"):
        replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", record_alloc=False, queue_capacity=8,
                     running_capacity=8)
    grown = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", record_alloc=False)
    np.testing.assert_array_equal(grown.start, np.stack([submit, submit]))


def test_ta_heuristics_and_tie_rule_are_honoured(cab, atlas2x):
    """Non-default sort orders and the high-id tie rule, on EASY; one trial, so also the
    engine's one-trial path (no vmap, the backfill pass a real cond) on a real log."""
    submit, runtime, estimate, nodes = atlas2x
    # As a mapping, as `replay` takes policy parameters (TAParams are checked from it).
    params = dict(t1_pod_order="most", t2_pod_order="most", t2_leaf_order="least", t3_pod_order="least", tie="high_id")
    batch = replay_batch(submit, runtime[None], estimate, nodes, cab, "easy", "ta", params)
    ref = replay.simulate(submit, runtime, estimate, nodes, cab, policy.make("ta", cab, params), "easy")
    np.testing.assert_array_equal(batch.start[0], ref.start)
    assert all(np.array_equal(batch.alloc(0, j), np.sort(ref.alloc[j])) for j in range(len(submit)))


def test_small_machine_heavy_load():
    """ft6x6 (54 nodes) under a random heavy load: every job size class, long queues."""
    ft = fattree.load("ft6x6")
    rng = np.random.default_rng(7)
    J = 300
    submit = np.sort(rng.integers(0, 20_000, J)).astype(np.float64)
    nodes = rng.choice([1, 2, 3, 4, 5, 8, 9, 10, 12, 20, 30, 54], J)
    runtime = rng.integers(10, 3_000, (3, J)).astype(np.float64)
    estimate = runtime.max(axis=0) * rng.choice([1.0, 1.5, 3.0], J)
    for name in ("to", "ta"):
        batch = replay_batch(submit, runtime, estimate, nodes, ft, "easy", name)
        for b in range(3):
            ref = replay.simulate(submit, runtime[b], estimate, nodes, ft, policy.make(name, ft), "easy")
            np.testing.assert_array_equal(batch.start[b], ref.start, err_msg=f"{name} trial {b}")
            assert all(np.array_equal(batch.alloc(b, j), np.sort(ref.alloc[j])) for j in range(J))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(policy="tree_bestfit"), "no compiled engine"),
        (dict(queue="conservative"), "unknown queue"),
        (dict(params=TAParams(relax_after_s=60.0), policy="ta"), "hybrid rule"),
        (dict(runtime=np.array([[5.0, 50.0]])), "runtime <= estimate"),
        (dict(submit=np.array([10.0, 0.0])), "sorted by submit"),
        (dict(nodes=np.array([1, 55])), "1 <= nodes <= machine size"),
        # Session 31 review: an AttributeError (a torus has no leaves; a dict has no fields), an
        # IndexError (no trial).
        (dict(ft=topology.load("torus4")), "replays fat-trees only, got torus3d torus4"),
        (dict(params={"relax_after_s": 60.0}, policy="ta"), "hybrid rule"),
        (dict(params={"t1_pod_ordr": "most"}, policy="ta"), "did you mean 't1_pod_order'"),
        (dict(runtime=np.zeros((0, 2))), "holds no trial"),
    ],
)
def test_bad_inputs_are_one_clear_error(change, message):
    ft = fattree.load("ft6")
    args = dict(submit=np.array([0.0, 10.0]), runtime=np.array([[5.0, 5.0]]), estimate=np.array([10.0, 10.0]),
                nodes=np.array([1, 2]), ft=ft, queue="easy", policy="to", params=None)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        replay_batch(**args)


def test_queue_capacity_overflow_is_an_error_and_the_default_grows(monkeypatch):
    """Thirty jobs arrive at once on a machine that runs one at a time: 29 wait together.
    Every replay here runs with 4 running slots (one job runs at a time), so the overflowing
    replay, the growing ones and the exact one share three compiled shapes (queue 8, 16, 30),
    as does :func:`test_first_capacities_given_are_guesses_that_grow`. FCFS, as EASY would
    start these jobs (whole-machine ones: nothing to backfill) with the same overflow check
    and growth, in about half the compile time."""
    ft = fattree.load("ft6")
    J = 30
    submit = np.zeros(J)
    runtime = np.full((1, J), 100.0)
    estimate = np.full(J, 100.0)
    nodes = np.full(J, ft.n_nodes)  # one job at a time
    with pytest.raises(CapacityError, match="more than 8 jobs waited at once"):
        replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", queue_capacity=8, running_capacity=4)
    monkeypatch.setattr(batched, "_capacities", lambda *a: (8, 4))  # a first guess far too small
    grown = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to")
    assert grown.queue_capacity == J  # 8 -> 16 -> 30 (doubled, never more than the jobs)
    np.testing.assert_array_equal(grown.start[0], 100.0 * np.arange(J))
    exact = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", queue_capacity=J, running_capacity=4)
    np.testing.assert_array_equal(exact.start, grown.start)


def test_running_capacity_overflow_is_an_error_and_only_overflowing_trials_rerun(monkeypatch):
    """Sixteen one-node jobs on an 18-node machine: trial 0 runs them one after another (each
    ends before the next arrives), trial 1 all together; a running-job buffer of 8 holds
    trial 0 only. The first guess of the growing replay is that buffer of 8 (one compiled
    shape with the overflowing replay); one doubling reaches the 16 trial 1 needs. FCFS: every
    job starts as the queue's head on arrival under either discipline, through the same
    start (and overflow check); FCFS compiles in about half the time."""
    ft = fattree.load("ft6")
    J = 16
    submit = np.arange(J) * 10.0
    estimate = np.full(J, 1000.0)
    runtime = np.stack([np.full(J, 5.0), np.full(J, 1000.0)])
    nodes = np.ones(J, int)
    with pytest.raises(CapacityError, match=r"more than 8 jobs ran at once in trial\(s\) \[1\]"):
        replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "ta", running_capacity=8)
    real = batched._capacities
    monkeypatch.setattr(batched, "_capacities", lambda *a: (real(*a)[0], 8))
    calls, run = [], batched._run
    monkeypatch.setattr(batched, "_run", lambda *a: calls.append((len(a[1]), a[-1])) or run(*a))
    grown = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "ta")
    assert grown.running_capacity == J  # 8 -> 16 (= the jobs)
    assert calls == [(2, 8), (1, 16)]  # (trials, capacity): trial 0 fits in 8 and is not replayed again
    for b in range(2):  # every job starts at its submission: the machine never fills
        np.testing.assert_array_equal(grown.start[b], submit)
        ref = replay.simulate(submit, runtime[b], estimate, nodes, ft, policy.make("ta", ft), "fcfs")
        for j in range(J):
            np.testing.assert_array_equal(grown.alloc(b, j), np.sort(ref.alloc[j]))


def test_first_capacities_given_are_guesses_that_grow(monkeypatch):
    """Given first capacities replace the count-based schedule (not called) and still grow."""
    ft = fattree.load("ft6")
    J = 30
    submit, runtime, estimate = np.zeros(J), np.full((1, J), 100.0), np.full(J, 100.0)
    nodes = np.full(J, ft.n_nodes)

    def no_schedule(*a):
        raise AssertionError("the count-based schedule ran")

    monkeypatch.setattr(batched, "_capacities", no_schedule)
    # (8, 4): the queue test's shapes above.
    got = replay_batch(submit, runtime, estimate, nodes, ft, "fcfs", "to", first_capacities=(8, 4))
    assert (got.queue_capacity, got.running_capacity) == (J, 4)
    np.testing.assert_array_equal(got.start[0], 100.0 * np.arange(J))


def test_first_capacities_come_from_the_count_based_schedule():
    """Hand example: jobs 0-1 fill a 4-node machine for 100 s; jobs 2-4 (2 nodes each) arrive
    at 10, 20, 30 and wait; the window reaches from job 2 to job 4 (3 jobs); at most 2 run at
    once. Twice each, as a power of two, at least 32 and at most the job count (5)."""
    submit = np.array([0.0, 0.0, 10.0, 20.0, 30.0])
    runtime = np.array([100.0, 100.0, 50.0, 50.0, 50.0])
    nodes = np.array([2, 2, 2, 2, 2])
    assert batched._capacities(submit, runtime, runtime, nodes, 4, True) == (5, 5)
    many = np.arange(200) * 1.0
    q, c = batched._capacities(many, np.full(200, 1000.0), np.full(200, 1000.0), np.ones(200, int), 100, True)
    # 100 run at once (one node each); the other 100 wait: window 100 -> 256, running 100 -> 256 -> cap 200.
    assert (q, c) == (200, 200)


def test_trials_split_over_several_cpu_devices_give_the_same_schedules():
    """With one CPU device per core (fattorus.devices.use_cpu_cores in a fresh process; at
    least two) a batch of 37 trials goes in chunks of CHUNK over them, the last chunk padded: every trial's start times
    and node sets still equal the NumPy engine's, in trial order. FCFS: the chunking is the
    same for every queue discipline, and each device compiles the engine once (FCFS about
    half of EASY's time); every trial's run times still give it its own schedule (checked)."""
    import os
    import subprocess
    import sys

    code = (
        "import jax\nfrom fattorus import devices\n"
        "if devices.usable_cores() >= 2:\n    devices.use_cpu_cores()\n"
        "else:  # a one-core machine: two devices all the same\n    jax.config.update('jax_num_cpu_devices', 2)\n"
        "import numpy as np\nassert len(jax.devices()) >= 2, jax.devices()\n"
        "from fattorus.sched import batched, policy, replay\nfrom fattorus.topology import fattree\n"
        "ft = fattree.load('ft6')\nrng = np.random.default_rng(3)\nJ = 60\n"
        "submit = np.sort(rng.uniform(0, 2000, J))\nestimate = rng.uniform(50, 400, J)\n"
        "nodes = rng.integers(1, ft.n_nodes + 1, J)\n"
        "runtime = estimate[None] * rng.uniform(0.1, 1.0, (37, J))\n"
        "got = batched.replay_batch(submit, runtime, estimate, nodes, ft, 'fcfs', 'ta')\n"
        "assert batched.CHUNK < 37\n"
        "assert len({tuple(s) for s in got.start}) == 37, 'trials with the same schedule'\n"
        "for b in range(37):\n"
        "    ref = replay.simulate(submit, runtime[b], estimate, nodes, ft, policy.make('ta', ft), 'fcfs')\n"
        "    assert np.array_equal(ref.start, got.start[b]), b\n"
        "    assert all(np.array_equal(np.sort(ref.alloc[j]), got.alloc(b, j)) for j in range(J)), b\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
