"""Jobs of several node kinds in one replay (issue 12: "jobs may require a node type"):
``workload.node_kind=by_job`` runs each job on the kind its ``node_kind`` column names.

References: the count-based EASY of :mod:`fattorus.sched.reference` with one pool of nodes
per kind (written apart from the engine), the machine's own node kinds, and the time
intervals of the prisms that ran.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fattorus import paths, topology, workload
from fattorus.sched import engine, policy, reference, replay
from fattorus.sched import state as st
from fattorus.sched.policy.torus.prism import Prism
from fattorus.sched.queues import Easy
from prism_runs import hosts_of, prisms_by_job

ROOT = Path(__file__).resolve().parents[1]
#: An 8x8x8 torus with an XK block of 3x2x8 routers (96 nodes) and two service routers outside it.
T8K = topology.from_config({"kind": "torus3d", "name": "t8k", "dims": [8, 8, 8], "nodes_per_router": 2,
                            "bandwidth": [2, 1, 2],
                            "node_kinds": [{"kind": "XK", "region": {"origin": [6, 0, 0], "shape": [3, 2, 8]}},
                                           {"kind": "service", "routers": [5, 77, 300]}]})


def _thunder_two_kinds(days: float, start_days: float = 0.0) -> pl.DataFrame:
    """Thunder x2 on T8K from day ``start_days`` for ``days`` days, its jobs of at most 64
    nodes made XK with probability 0.4 (seed 0): a prepared table with a ``node_kind`` column."""
    trace = ROOT / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, int(T8K.usable("XE").sum()))
    jobs = workload.with_estimate(workload.first_days(jobs, days, start_days))
    rng = np.random.default_rng(0)
    xk = (jobs["nodes"].to_numpy() <= 64) & (rng.random(len(jobs)) < 0.4)
    return jobs.with_columns(pl.Series("node_kind", np.where(xk, "XK", "XE")))


#: ``(days, start_days)`` of the replays below: days 17.5-20.5 of Thunder x2, 465 jobs (119 XK),
#: a busy stretch: 44 blocked heads with a shadow time under the oblivious policies, 54 under
#: prism (at most 256 nodes), 142 jobs placed inside running prisms with ``internal``. The
#: first 10 days (4,285 jobs, 64 blocked heads) cost several times as much to replay.
BUSY = (3.0, 17.5)


def _count_reference(prepared: pl.DataFrame, topo, sched: str) -> np.ndarray:
    names = sorted(set(prepared["node_kind"].to_list()))
    kinds = [names.index(k) for k in prepared["node_kind"].to_list()]
    start = reference.schedule(prepared["submit_s"].to_list(), prepared["runtime_s"].to_list(),
                               prepared["estimate_s"].to_list(), prepared["nodes"].to_list(),
                               [int(topo.usable(k).sum()) for k in names], easy=sched == "easy", kinds=kinds)
    return np.asarray(start, float)


def _kinds_kept(out: pl.DataFrame, kinds: list[str], topo) -> bool:
    names = np.asarray(topo.node_kind_names)
    return all(set(names[topo.node_kind[np.asarray(a)]]) == {k} for a, k in zip(out["alloc"].to_list(), kinds))


@pytest.mark.parametrize("sched", ["easy", "fcfs"])
@pytest.mark.parametrize("policy_name", ["first_fit", "to"])
def test_oblivious_start_times_equal_count_based_easy_with_one_pool_per_kind(policy_name, sched):
    jobs = _thunder_two_kinds(*BUSY)
    params = {"ordering": "O2"} if policy_name == "first_fit" else None
    got = replay.replay(jobs, T8K, policy_name, sched, policy_params=params, node_kind=replay.BY_JOB)
    prepared, _ = replay.prepare(jobs, int(T8K.usable("XE").sum() + T8K.usable("XK").sum()))
    kinds = prepared["node_kind"].to_list()
    assert 50 < kinds.count("XK") < len(kinds) - 100
    np.testing.assert_array_equal(got.jobs["start_s"].to_numpy(), _count_reference(prepared, T8K, sched))
    assert _kinds_kept(got.jobs, kinds, T8K)
    if sched == "easy":
        backfilled = got.jobs["backfilled"].to_numpy()
        # Some jobs backfilled past a head of the other kind, which holds no node of theirs.
        assert backfilled.sum() > 20
    assert got.summary["usable_nodes"] == 1024 - 2 * 2 and got.summary["node_kinds"] == {
        "XE": kinds.count("XE"), "XK": kinds.count("XK")}


def test_the_count_reference_with_one_pool_is_the_plain_one():
    rng = np.random.default_rng(3)
    n = 200
    submit = np.sort(rng.integers(0, 5000, n)).astype(float).tolist()
    runtime = rng.integers(10, 900, n).astype(float).tolist()
    estimate = [r * 2 for r in runtime]
    nodes = rng.integers(1, 40, n).tolist()
    plain = reference.schedule(submit, runtime, estimate, nodes, 64)
    assert reference.schedule(submit, runtime, estimate, nodes, [64], kinds=[0] * n) == plain
    # Two pools, one of them never used: the same as the plain pool for the other.
    assert reference.schedule(submit, runtime, estimate, nodes, [7, 64], kinds=[1] * n) == plain


def test_prisms_of_both_kinds_hold_their_kind_and_never_overlap_while_running():
    # At most 256 nodes: a prism holds no router with a node of another kind (docs/decisions.md),
    # and the largest XE prism clear of the XK block and the service routers holds 256 XE nodes.
    jobs = _thunder_two_kinds(*BUSY).filter(pl.col("nodes") <= 256)
    prepared, _ = replay.prepare(jobs, 1020)
    names = ["XE", "XK"]
    kind = np.searchsorted(names, prepared["node_kind"].to_numpy())
    pol = Prism(T8K)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    got = replay.simulate(*cols, T8K, pol, "easy", kind=kind, kind_nodes=np.stack([T8K.usable(k) for k in names]))
    assert np.isfinite(got.start).all() and got.backfilled.sum() > 0
    node_kind = np.asarray(T8K.node_kind_names)[T8K.node_kind]
    assert all((node_kind[a] == names[k]).all() for a, k in zip(got.alloc, kind))
    # Every started prism, with its job's run interval: concurrent prisms share no router (so,
    # under dimension-order routing, no link).
    prisms, inside = prisms_by_job(pol, got)
    spans = [(got.start[j], got.start[j] + cols[1][j], routers) for j, routers in prisms]
    assert len(spans) == len(got.alloc) and not inside and sum(names[k] == "XK" for k in kind) > 50
    for i, (s1, e1, r1) in enumerate(spans):
        for s2, e2, r2 in spans[i + 1:]:
            if s1 < e2 and s2 < e1:
                assert not r1 & r2


def test_the_table_ii_workload_runs_xe_and_xk_jobs_together_on_blue_waters():
    bw = topology.load("bluewaters")
    cfg = yaml.safe_load(paths.config_file("workload", "bluewaters_table2").read_text())
    # One wave: 203 jobs, 110 XE and 93 XK, submitted together (16 wait, 7 backfilled); two
    # waves took twice the time.
    cfg["synthetic"] = {**cfg["synthetic"], "include_kinds": ["XE", "XK"], "n_waves": 1}
    wl, _ = workload.from_config({**cfg, "scale": 1}, machine_nodes=22548 + 4320)
    got = replay.replay(workload.with_estimate(wl.jobs), bw, "first_fit", "easy", policy_params={"ordering": "O2"},
                        node_kind=replay.BY_JOB)
    kinds = wl.jobs.sort(["submit_s", "job_id"])["node_kind"].to_list()
    assert got.summary["usable_nodes"] == 22548 + 4320 and got.summary["node_kind"] == replay.BY_JOB
    assert got.summary["node_kinds"] == {"XE": kinds.count("XE"), "XK": kinds.count("XK")} and "XK" in kinds
    assert _kinds_kept(got.jobs, kinds, bw)


def test_mistakes_are_one_line_errors():
    jobs = _thunder_two_kinds(1)
    with pytest.raises(ValueError, match="a node_kind column"):
        replay.replay(jobs.drop("node_kind"), T8K, "to", node_kind=replay.BY_JOB)
    with pytest.raises(ValueError, match=r"asks for node kind 'GPU'; 't8k' has compute kinds \['XE', 'XK'\]"):
        replay.replay(jobs.with_columns(pl.lit("GPU").alias("node_kind")), T8K, "to", node_kind=replay.BY_JOB)
    with pytest.raises(ValueError, match="asks for node kind 'service'"):
        replay.replay(jobs.with_columns(pl.lit("service").alias("node_kind")), T8K, "to", node_kind=replay.BY_JOB)
    # Larger than its kind (96 XK nodes) but not than the machine: a counted skip, as a job
    # larger than the machine is; the engine itself refuses such a job in one line.
    jobs = _thunder_two_kinds(2)
    big = jobs.with_columns(pl.when(pl.col("job_id") == jobs["job_id"][0]).then(pl.lit("XK"))
                            .otherwise(pl.col("node_kind")).alias("node_kind"),
                            pl.when(pl.col("job_id") == jobs["job_id"][0]).then(97).otherwise(pl.col("nodes"))
                            .alias("nodes"))
    got = replay.replay(big, T8K, "to", node_kind=replay.BY_JOB)
    assert got.summary["counts"]["skipped"]["too_large"] == 1 and len(got.jobs) == len(jobs) - 1
    xk = engine.Jobs.of([0.0], [10.0], [10.0], [97], T8K.n_nodes, kind=[0])
    with pytest.raises(ValueError, match="asks for 97 nodes; its node kind has 96"):
        engine.run(xk, T8K, Easy(), policy.make("to", T8K), kind_nodes=T8K.usable("XK")[None])
    # A policy that reads group counts cannot be asked on one kind's view of the machine.
    ft = topology.load("ft6")
    one = engine.Jobs.of([0.0], [10.0], [10.0], [2], ft.n_nodes, kind=[0])
    with pytest.raises(ValueError, match="policy 'ta' reads group counts"):
        engine.run(one, ft, Easy(), policy.make("ta", ft), kind_nodes=np.ones((1, ft.n_nodes), bool))


def test_on_a_view_for_one_kind_another_kinds_prism_holds_while_its_job_runs():
    """By hand on a 4x4x4 torus whose x = 0 plane is XK: an XK job's prism holds its routers in
    the XE jobs' view of the machine while the job runs, and no longer on the future machine
    after its end (the view keeps the whole machine's free nodes for that question)."""
    t4k = topology.from_config({"kind": "torus3d", "name": "t4k", "dims": [4, 4, 4], "nodes_per_router": 2,
                                "node_kinds": [{"kind": "XK", "region": {"origin": [0, 0, 0], "shape": [1, 4, 4]}}]})
    xe, xk = t4k.usable("XE"), t4k.usable("XK")
    pol = Prism(t4k)
    machine = st.empty(t4k, xe | xk)
    pol.reset(machine)
    job = pol.place(st.restricted(machine, xk), 3)
    assert set(t4k.node_kind[job]) == {t4k.node_kind_names.index("XK")}
    st.allocate(machine, job, pol.footprint(job))
    pol.started(job)
    prism = pol.running[next(iter(pol.running))]
    assert prism.sum() == 2  # 3 nodes: a prism of two routers, one node of it idle
    assert (pol._owned(st.restricted(machine, xe), True) == prism).all()
    release = np.where(np.isin(np.arange(t4k.n_nodes), job), 10.0, np.inf)
    after = st.restricted(st.future(machine, release <= 10.0, counts=False), xe)
    assert not pol._owned(after, True).any()
    before = st.restricted(st.future(machine, release <= 9.0, counts=False), xe)
    assert (pol._owned(before, True) == prism).all()


def test_prism_shadow_times_of_two_kinds_equal_the_engines_walk_over_views(monkeypatch):
    """``Prism.earliest_fit`` on one kind's view (another kind's prisms released at their
    jobs' ends, its nodes never free) against the engine's bisection with ``fits`` on that
    view of each future machine: same shadow times, starts and node sets."""
    jobs = _thunder_two_kinds(*BUSY).filter(pl.col("nodes") <= 256)
    prepared, _ = replay.prepare(jobs, 1020)
    names = ["XE", "XK"]
    kind = np.searchsorted(names, prepared["node_kind"].to_numpy())
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    kind_nodes = np.stack([T8K.usable(k) for k in names])
    answered = []
    shortcut = Prism.earliest_fit
    monkeypatch.setattr(Prism, "earliest_fit", lambda self, *a: answered.append(r := shortcut(self, *a)) or r)
    fast = replay.simulate(*cols, T8K, Prism(T8K), "easy", kind=kind, kind_nodes=kind_nodes)
    assert sum(a is not None for a in answered) > 50
    monkeypatch.setattr(Prism, "earliest_fit", lambda self, *a: None)
    slow = replay.simulate(*cols, T8K, Prism(T8K), "easy", kind=kind, kind_nodes=kind_nodes)
    assert np.isfinite(fast.shadow).sum() > 20
    np.testing.assert_array_equal(fast.shadow, slow.shadow)
    np.testing.assert_array_equal(fast.start, slow.start)
    assert all(np.array_equal(a, b) for a, b in zip(fast.alloc, slow.alloc))


@pytest.mark.parametrize("internal", [False, True])
def test_one_kind_asked_through_views_is_the_plain_replay(internal):
    """Every job of one kind, replayed through views (``kind_nodes`` with one row): the same
    start times and node sets as the plain replay — a view of the real machine is the real
    machine to the policy (its pending placements do not hold there)."""
    t8 = T8K  # XE jobs only: the XK block and the service routers stay idle inside prisms
    usable = t8.usable("XE")
    trace = ROOT / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, int(usable.sum()))
    # Days 17.5-20.5: 465 jobs, 359 of them backfilled, 89 blocked heads (66 with internal);
    # the first 4 days (882 jobs, 9 blocked heads) took several times as long.
    prepared, _ = replay.prepare(workload.with_estimate(workload.first_days(jobs, 3, 17.5)), int(usable.sum()))
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    params = {"internal": internal}
    plain = replay.simulate(*cols, t8, policy.make("prism", t8, params), "easy", usable=usable)
    viewed = replay.simulate(*cols, t8, policy.make("prism", t8, params), "easy",
                             kind=np.zeros(len(cols[0]), np.int64), kind_nodes=usable[None])
    assert plain.backfilled.sum() > 10
    np.testing.assert_array_equal(plain.start, viewed.start)
    assert all(np.array_equal(a, b) for a, b in zip(plain.alloc, viewed.alloc))


def test_views_with_the_same_free_nodes_of_one_kind_but_not_of_the_other_are_other_machines():
    """By hand on a 4x4x4 torus whose x = 0 plane is XK except its z = 3 row (service): an XK
    job (ends at 10 s) holds a prism over the plane, service routers included; every XE node is
    busy until 20 s but those of routers (1..3, 0, 3). On the XE view of the future machine at
    5 s the XK prism still holds the service router (0, 0, 3), so a 6-node XE job (a 4x1x1
    ring at (y, z) = (0, 3)) does not fit; at 10 s it does. Both views have the same free XE
    nodes: asking about 5 s first must not answer for 10 s."""
    t = topology.from_config({"kind": "torus3d", "name": "t4k", "dims": [4, 4, 4], "nodes_per_router": 2,
                              "node_kinds": [{"kind": "service", "region": {"origin": [0, 0, 3], "shape": [1, 4, 1]}},
                                             {"kind": "XK", "region": {"origin": [0, 0, 0], "shape": [1, 4, 4]}}]})
    xe, xk = t.usable("XE"), t.usable("XK")
    coords = np.stack(t.router_coords(np.arange(t.n_routers)), 1)

    def answers(times):
        pol = Prism(t)
        m = st.empty(t, xe | xk)
        pol.reset(m)
        job = pol.place(st.restricted(m, xk), int(xk.sum()))
        st.allocate(m, job, pol.footprint(job))
        pol.started(job, 10.0)
        keep = np.flatnonzero((coords[:, 1] == 0) & (coords[:, 2] == 3) & (coords[:, 0] > 0))
        busy = xe.copy()
        busy[(keep[:, None] * 2 + np.arange(2)).ravel()] = False
        filler = np.flatnonzero(busy & m.free)
        st.allocate(m, filler, 1)  # XE nodes held by some job until 20 s
        release = np.full(t.n_nodes, np.inf)
        release[job], release[filler] = 10.0, 20.0
        return [pol.fits(st.restricted(st.future(m, release <= at, counts=False), xe), 6) for at in times]

    assert answers([5.0]) == [False] and answers([10.0]) == [True]
    assert answers([5.0, 10.0]) == [False, True]


def test_small_jobs_inside_prisms_keep_their_kind_and_end_before_their_host():
    """Two kinds with ``internal`` and ``internal_ends_first``: a one-router job placed inside a
    running prism is in a prism of its own kind (another kind's nodes are never free in its
    view) and is estimated to end no later than that prism's job."""
    jobs = _thunder_two_kinds(*BUSY).filter(pl.col("nodes") <= 256)
    prepared, _ = replay.prepare(jobs, 1020)
    names = ["XE", "XK"]
    kind = np.searchsorted(names, prepared["node_kind"].to_numpy())
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    pol = policy.make("prism", T8K, {"internal": True, "internal_ends_first": True})
    got = replay.simulate(*cols, T8K, pol, "easy", kind=kind, kind_nodes=np.stack([T8K.usable(k) for k in names]))
    prisms, inside = prisms_by_job(pol, got)
    assert len(inside) > 10
    estimate = cols[2]
    for j in inside:
        (h,) = hosts_of(j, got, cols[1], prisms, 2)
        assert kind[h] == kind[j]
        assert got.start[j] + estimate[j] <= got.start[h] + estimate[h]


def test_a_kind_without_usable_nodes_is_named_not_a_zero_scale():
    """Session 47's exploratory run: a torus whose XK region covers every router replayed its
    XE jobs under `scale=fit` as "workload.scale=0.0: the scale factor must be positive", a
    setting the user never gave. The machine and its counts by kind are named instead."""
    from fattorus.sched.replay import BY_JOB, machine_nodes

    all_xk = topology.from_config({"kind": "torus3d", "name": "t", "dims": [3, 3, 3], "node_kinds": [
        {"kind": "XK", "region": {"origin": [0, 0, 0], "shape": [3, 3, 3]}}]})
    with pytest.raises(topology.TopologyError, match=r"machine 't' has no usable 'XE' nodes \(nodes by kind: "
                                                     r"\{'XE': 0, 'XK': 54\}\)"):
        machine_nodes(all_xk, None)
    assert machine_nodes(all_xk, "XK") == 54 and machine_nodes(all_xk, BY_JOB) == 54
