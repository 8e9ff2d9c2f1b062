"""The compiled ``prism`` replay (issue 12) against the engine's Python loop: every decision equal.

The reference is the engine's own loop (``compiled=False``): ``Prism.place`` / ``fits`` /
``earliest_fit`` over summed-volume tables, the queue disciplines of ``fattorus.sched.queues``
— code that shares no line with the compiled replay's bitset search, router release times and
hashed answers, and is itself checked against brute force and hand-worked cases in
test_prism.py. Real logs on tori with service routers and an XK block, odd rings, and Blue
Waters itself; every field of the schedule and every recorded prism must agree.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fattorus import topology, workload
from fattorus.sched import engine, replay
from fattorus.sched.policy.torus import prism_compiled
from fattorus.sched.policy.torus.prism import Prism, PrismParams

from test_prism import _thunder_on_torus8

ROOT = Path(__file__).resolve().parents[1]


def _both(cols, topo, params, sched="easy", usable=None):
    """The replay's schedule and recorded prisms, compiled and from the engine's loop."""
    out = []
    for compiled in (True, False):
        pol = Prism(topo, PrismParams.from_mapping(params))
        got = replay.simulate(*cols, topo, pol, sched, usable=usable, compiled=compiled)
        out.append((got, pol.started_prisms))
    return out


def _assert_same(a, b):
    (got, prisms), (ref, ref_prisms) = a, b
    np.testing.assert_array_equal(got.start, ref.start)
    np.testing.assert_array_equal(got.backfilled, ref.backfilled)
    np.testing.assert_array_equal(got.shadow, ref.shadow)  # NaN where a job never was a blocked head
    np.testing.assert_array_equal(got.runtime, ref.runtime)
    assert all(np.array_equal(x, y) for x, y in zip(got.alloc, ref.alloc))  # same nodes, same order
    assert [s for _, s in prisms] == [s for _, s in ref_prisms]
    assert all(np.array_equal(x, y) for (x, _), (y, _) in zip(prisms, ref_prisms))


@pytest.mark.parametrize("sched,params", [
    ("easy", {}),
    ("easy", {"contact": 0.0}),
    ("easy", {"fill": 0.0, "bisection": 2.0, "slack": 1.0}),
    ("easy", {"fill": 2.0, "bisection": 0.0, "contact": 1.5, "slack": 4.0}),
    ("fcfs", {}),
])
def test_compiled_replay_takes_the_engines_decisions_on_a_real_log(sched, params):
    """Thunder x2 on an 8x8x8 torus with service routers and an XK block (6 days, EASY backfills
    hundreds of jobs): under each heuristic setting, the same start times, node sets in the
    same order, backfill flags, shadow times and prisms."""
    t8, usable, cols = _thunder_on_torus8(6)
    compiled, loop = _both(cols, t8, params, sched, usable)
    assert len(cols[0]) > 400
    if sched == "easy":
        assert loop[0].backfilled.sum() > 20 and np.isfinite(loop[0].shadow).sum() > 20
    _assert_same(compiled, loop)


def test_compiled_replay_keeps_prisms_off_the_xk_block_as_the_engine_does():
    """``block_other_kinds``: routers of the XK block are never in a prism (the compiled
    replay's routers held forever), the same decisions as the engine's loop."""
    t8, usable, cols = _thunder_on_torus8(3)
    small = cols[3] <= 256
    compiled, loop = _both([c[small] for c in cols], t8, {"block_other_kinds": True}, usable=usable)
    _assert_same(compiled, loop)


def test_compiled_replay_on_odd_rings_and_three_nodes_per_router():
    """A 6x5x7 torus with 3 nodes per router and scattered service nodes (rings of 5 and 7
    allow extents 1-2 / 1-3 and the whole ring), a generated heavy load with estimates
    above run times: the engine's decisions."""
    topo = topology.from_config({"kind": "torus3d", "name": "odd", "dims": [6, 5, 7], "nodes_per_router": 3,
                                 "node_kinds": [{"kind": "service", "scatter": {"fraction": 0.05, "seed": 3}}]})
    usable = topo.usable()
    rng = np.random.default_rng(7)
    n = 400
    submit = np.sort(rng.uniform(0, 40_000, n)).round()
    runtime = rng.uniform(60, 4_000, n).round()
    estimate = runtime * rng.choice([1.0, 1.5, 3.0], n)
    nodes = np.minimum(rng.geometric(0.04, n), int(usable.sum()) // 2)
    cols = [submit, runtime, estimate, nodes]
    for sched in ("easy", "fcfs"):
        compiled, loop = _both(cols, topo, {}, sched, usable)
        assert loop[0].backfilled.sum() > 20 or sched == "fcfs"
        _assert_same(compiled, loop)


def test_compiled_replay_on_blue_waters_from_a_log_fit_to_it():
    """Atlas fit to Blue Waters' 22,548 XE nodes (the bench's workload, 3 days): the full
    machine's rings of 24 (column words of 24 bits), the engine's decisions."""
    bw = topology.load("bluewaters")
    usable = bw.usable()
    cfg = {"name": "atlas", "path": str(ROOT / "data" / "traces" / "LLNL-Atlas-2006-2.1-cln.swf.gz"),
           "format": "swf", "cores_per_node": 8, "scale": "fit", "window_days": 3}
    wl, _ = workload.from_config(cfg, machine_nodes=int(usable.sum()))
    prepared, _ = replay.prepare(workload.with_estimate(wl.jobs), int(usable.sum()))
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    compiled, loop = _both(cols, bw, {}, usable=usable)
    assert len(cols[0]) > 150 and loop[0].backfilled.sum() > 5
    _assert_same(compiled, loop)


def test_settings_the_compiled_replay_does_not_cover_run_on_the_engines_loop(monkeypatch):
    """``internal`` placements, jobs of several node kinds, run times decided at start and a
    third ring past 32 routers go to the engine's loop — and nothing else does."""
    t4 = topology.from_config({"kind": "torus3d", "name": "t4", "dims": [4, 4, 4], "nodes_per_router": 2})
    long_z = topology.from_config({"kind": "torus3d", "name": "z40", "dims": [2, 2, 40], "nodes_per_router": 1})
    assert prism_compiled.supports(Prism(t4), "easy", None, None)
    assert prism_compiled.supports(Prism(t4), "fcfs", None, None)
    assert not prism_compiled.supports(Prism(t4, PrismParams(internal=True)), "easy", None, None)
    assert not prism_compiled.supports(Prism(t4), "easy", np.ones((1, t4.n_nodes), bool), None)
    assert not prism_compiled.supports(Prism(t4), "easy", None, lambda *a: 1.0)
    assert not prism_compiled.supports(Prism(long_z), "easy", None, None)
    # a user's subclass (it may place otherwise): the engine's loop, whose placements are checked
    class MyPrism(Prism):
        pass

    from fattorus.sched import engine as engine_mod

    jobs = engine_mod.Jobs.of(np.array([0.0]), np.array([10.0]), np.array([10.0]), np.array([2]), t4.n_nodes)
    assert MyPrism(t4).compiled_run(jobs, "easy", None, None, None) is None
    # The engine asks the policy first, and runs its loop exactly where the answer is None.
    calls = []
    monkeypatch.setattr(engine.Replay, "new", lambda *a, **k: calls.append(1) or _new(*a, **k))
    cols = [np.array([0.0, 5.0]), np.array([10.0, 10.0]), np.array([10.0, 10.0]), np.array([3, 4])]
    replay.simulate(*cols, t4, Prism(t4), "easy")
    assert calls == []
    replay.simulate(*cols, t4, Prism(t4, PrismParams(internal=True)), "easy")
    replay.simulate(*cols, t4, Prism(t4), "easy", compiled=False)
    assert calls == [1, 1]


_new = engine.Replay.new


def test_two_tori_alike_but_for_bandwidth_keep_their_own_shape_bounds():
    """The compiled replay keeps each shape's most usable nodes across replays of one machine;
    shapes are ordered by bisection, which follows the link bandwidths, so a torus that differs
    only in bandwidth must not reuse them (found by review: it placed a job elsewhere)."""
    def torus(bandwidth):
        return topology.from_config({"kind": "torus3d", "name": "t", "dims": [4, 6, 8], "nodes_per_router": 1,
                                     "bandwidth": bandwidth,
                                     "node_kinds": [{"kind": "service", "scatter": {"fraction": 0.3, "seed": 0}}]})
    a, b = torus([1, 1, 1]), torus([1, 4, 1])
    cols = [np.array([0.0]), np.array([10.0]), np.array([10.0]), np.array([23])]
    replay.simulate(*cols, a, Prism(a), "easy", usable=a.usable())  # the compiled replay on a first
    _assert_same(*_both(cols, b, {}, usable=b.usable()))


def test_a_compiled_replay_runs_in_slices_that_report_progress_and_can_be_interrupted():
    """The replay returns to Python every SLICE_JOBS started jobs: the progress callback hears
    of every job once (the engine's bar), the decisions are those of one uninterrupted loop,
    and a Ctrl-C (here raised by the callback) ends it between two slices."""
    t8, usable, cols = _thunder_on_torus8(6)
    jobs = engine.Jobs.of(*cols, t8.n_nodes)
    heard = []
    got = prism_compiled.run(jobs, t8, "easy", Prism(t8), usable, progress=heard.append)
    # A slice ends between two events once SLICE_JOBS jobs have started (a pass may start several).
    assert len(heard) >= 2 and sum(heard) == len(jobs) and min(heard[:-1]) >= prism_compiled.SLICE_JOBS
    ref = replay.simulate(*cols, t8, Prism(t8), "easy", usable=usable, compiled=False)
    np.testing.assert_array_equal(got.start, ref.start)
    assert all(np.array_equal(a, b) for a, b in zip(got.alloc, ref.alloc))

    def interrupt(k):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prism_compiled.run(jobs, t8, "easy", Prism(t8), usable, progress=interrupt)


def test_read_only_job_columns_replay_through_the_one_compiled_version():
    """Job columns read from a table are read-only NumPy views, to numba a type of their own:
    the replay copies them, so one compiled version serves them and a caller's own arrays
    (a second version cost ~11 s of compiling) and both give the same schedule."""
    t4 = topology.load("torus4")
    rng = np.random.default_rng(0)
    runtime = rng.uniform(10, 500, 40)
    cols = [np.sort(rng.uniform(0, 1000, 40)), runtime, 1.5 * runtime, rng.integers(1, 8, 40)]
    got, signatures = [], []
    for writeable in (True, False):
        arrays = [a.copy() for a in cols]
        for a in arrays:
            a.flags.writeable = writeable
        got.append(replay.simulate(*arrays, t4, Prism(t4), "easy"))
        signatures.append(list(prism_compiled._replay.signatures))
    # Other tests in this process may have compiled versions before: the read-only columns add none.
    assert signatures[1] == signatures[0]
    np.testing.assert_array_equal(got[0].start, got[1].start)
    assert all(np.array_equal(a, b) for a, b in zip(got[0].alloc, got[1].alloc))
