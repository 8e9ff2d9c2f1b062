"""The torus ``prism`` policy and node kinds (issue 12), against brute force and hand-worked values."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

import forkcli
from fattorus import topology, workload
from fattorus.sched import replay
from fattorus.sched import state as st
from fattorus.sched.policy.torus.prism import (Prism, PrismParams, allowed_extents, bisection_per_slot, box_sums,
                                               summed_volume)

from prism_runs import hosts_of, prisms_by_job

ROOT = Path(__file__).resolve().parents[1]
T4 = topology.from_config({"kind": "torus3d", "name": "t4", "dims": [4, 4, 4], "nodes_per_router": 2})


def test_allowed_extents_are_half_or_full():
    assert allowed_extents(8).tolist() == [1, 2, 3, 4, 8]
    assert allowed_extents(5).tolist() == [1, 2, 5]
    assert allowed_extents(24).tolist() == list(range(1, 13)) + [24]
    assert allowed_extents(1).tolist() == [1]


def test_box_sums_equal_brute_force_wrapped_sums():
    rng = np.random.default_rng(0)
    grid = rng.integers(0, 3, size=(5, 4, 6))
    table = summed_volume(grid)
    for shape in [(1, 1, 1), (2, 3, 4), (5, 4, 6), (3, 1, 5)]:
        got = box_sums(table, shape, grid.shape)
        for x, y, z in itertools.product(*map(range, grid.shape)):
            xs, ys, zs = (np.arange(o, o + s) % n for o, s, n in zip((x, y, z), shape, grid.shape))
            assert got[x, y, z] == grid[np.ix_(xs, ys, zs)].sum()


def test_box_sums_with_a_short_reach_equal_brute_force():
    # The search's tables reach half a ring plus a shell past each start (whole rings: one start).
    rng = np.random.default_rng(1)
    grid = rng.integers(0, 5, size=(7, 4, 6))
    table = summed_volume(grid, reach=(4, 2, 3))
    assert table.shape == (12, 7, 10)
    for shape in [(1, 1, 1), (4, 2, 3), (7, 1, 2), (2, 4, 6)]:
        starts = tuple(1 if s == n else n for s, n in zip(shape, grid.shape))
        got = box_sums(table, shape, starts)
        for x, y, z in itertools.product(*map(range, starts)):
            xs, ys, zs = (np.arange(o, o + s) % n for o, s, n in zip((x, y, z), shape, grid.shape))
            assert got[x, y, z] == grid[np.ix_(xs, ys, zs)].sum()


def test_bisection_per_slot_by_hand():
    # Blue Waters, x:y:z = 2:1:2. A 4x2x4 slab: every cut is 16 (x: 8 links x 2, y: 16 x 1,
    # z: 8 x 2), 64 slots -> 0.25. A 4x4x4 cube: y cut 16 x 1 is the weakest, 128 slots -> 0.125.
    # A whole ring in x doubles the x cut: 24x1x1 has cut 1 x 2 x 2 = 4 over 48 slots.
    bw = bisection_per_slot(np.array([[4, 2, 4], [4, 4, 4], [24, 1, 1], [1, 1, 1]]), (24, 24, 24), (2.0, 1.0, 2.0), 2)
    assert bw.tolist() == [0.25, 0.125, 4 / 48, 1.0]


def _brute_most_free(topo, blocked_routers: np.ndarray, avail: np.ndarray) -> int:
    """The most free nodes of any half-or-full prism with no blocked router, by explicit loops
    over every shape and start (0 if none is clear): a job of n nodes fits iff n <= this."""
    dims, most = topo.dims, 0
    for shape in itertools.product(*(allowed_extents(d) for d in dims)):
        for start in itertools.product(*map(range, dims)):
            xs, ys, zs = (np.arange(o, o + s) % d for o, s, d in zip(start, shape, dims))
            box = np.ix_(xs, ys, zs)
            if not blocked_routers[box].any():
                most = max(most, int(avail[box].sum()))
    return most


@pytest.mark.parametrize("seed", range(6))
def test_feasibility_equals_brute_force_and_is_monotone(seed):
    rng = np.random.default_rng(seed)
    pol = Prism(T4)
    machine = st.empty(T4)
    pol.reset(machine)
    busy = rng.random(T4.n_nodes) < rng.uniform(0.1, 0.6)
    state = st.from_nodes(T4, ~busy, np.where(busy, 1, 0).astype(np.int8))
    blocked = busy.reshape(-1, 2).any(1).reshape(T4.dims)
    avail = (~busy).reshape(-1, 2).sum(1).reshape(T4.dims)
    most = _brute_most_free(T4, blocked, avail)
    answers = []
    for n in range(1, 40):
        got = pol.place(state, n)
        assert (got is not None) == (n <= most), n
        answers.append(got is not None)
        if got is not None:
            assert len(got) == n and len(set(got.tolist())) == n and state.free[got].all()
    assert answers == sorted(answers, reverse=True)  # once a size fails, every larger one fails
    # The feasibility-only search (EASY's shadow-time bisection) agrees, each size asked of a
    # fresh policy so that no answer comes from what an earlier size taught its cache.
    for n in range(1, 40):
        fresh = Prism(T4)
        fresh.reset(machine)
        assert fresh.fits(state, n) == answers[n - 1], n
        assert not fresh.pending  # a feasibility question books nothing


def _thunder_on_torus8(days: float, start_days: float = 0.0):
    """Thunder x2 on an 8x8x8 torus with service routers and an XK block: the topology, the
    usable nodes and the replay's columns for ``days`` days from day ``start_days``."""
    t8 = topology.from_config({"kind": "torus3d", "name": "t8k", "dims": [8, 8, 8], "nodes_per_router": 2,
                               "bandwidth": [2, 1, 2],
                               "node_kinds": [{"kind": "XK", "region": {"origin": [6, 0, 0], "shape": [3, 2, 8]}},
                                              {"kind": "service", "routers": [5, 77, 300]}]})
    trace = ROOT / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, t8.n_nodes)
    usable = t8.usable()
    prepared, _ = replay.prepare(workload.first_days(jobs, days, start_days), int(usable.sum()))
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    return t8, usable, cols


#: The window the replays comparing two ways to one schedule run: days 17.5-20.5 of Thunder x2
#: on torus8, 465 jobs with 359 backfilled and 89 blocked heads with a shadow time (66 with
#: ``internal``), over 200 jobs placed inside running prisms. The first 6 days (1,150 jobs,
#: 57 shadow times) cost about four times as much to replay.
BUSY_WINDOW = (3.0, 17.5)


def test_answers_kept_across_machine_changes_change_no_placement(monkeypatch):
    """The search tables and answers kept per machine state (keyed by its free nodes and the
    routers recorded prisms own there) are reused after jobs start and end; a replay that keeps
    nothing, not even within one state, takes the same start times and node sets."""
    from fattorus.sched.policy.torus import prism as prism_module

    t8, usable, cols = _thunder_on_torus8(*BUSY_WINDOW)
    built = []
    machine = Prism._machine
    monkeypatch.setattr(Prism, "_machine", lambda self, state: built.append(1) or machine(self, state))
    # The Python engine's loop (compiled=False): the compiled replay keeps its own answers.
    kept = replay.simulate(*cols, t8, Prism(t8), "easy", usable=usable, compiled=False)
    n_kept = len(built)
    monkeypatch.setattr(prism_module, "MACHINES_KEPT", 0)
    monkeypatch.setattr(prism_module, "_learn", lambda m, n, ok: None)
    built.clear()
    fresh = replay.simulate(*cols, t8, Prism(t8), "easy", usable=usable, compiled=False)
    assert len(built) > 2 * n_kept  # the kept run did reuse tables
    assert kept.backfilled.sum() > 0
    np.testing.assert_array_equal(kept.start, fresh.start)
    assert all(np.array_equal(a, b) for a, b in zip(kept.alloc, fresh.alloc))


@pytest.mark.parametrize("internal", [False, True])
def test_shadow_times_from_release_times_equal_the_engines_bisection(monkeypatch, internal):
    """``Prism.earliest_fit`` (free nodes and held prisms read off release times, no future
    machine states) against the engine's bisection with ``fits`` on future states, which a
    policy without the shortcut gets: the same shadow times, start times and node sets on a
    real log (with ``internal``, small jobs go the engine's way)."""
    t8, usable, cols = _thunder_on_torus8(*BUSY_WINDOW)
    answered = []
    shortcut = Prism.earliest_fit
    monkeypatch.setattr(Prism, "earliest_fit", lambda self, *a: answered.append(r := shortcut(self, *a)) or r)
    fast = replay.simulate(*cols, t8, Prism(t8, PrismParams(internal=internal)), "easy", usable=usable, compiled=False)
    assert sum(a is not None for a in answered) > 50
    monkeypatch.setattr(Prism, "earliest_fit", lambda self, *a: None)
    slow = replay.simulate(*cols, t8, Prism(t8, PrismParams(internal=internal)), "easy", usable=usable, compiled=False)
    assert np.isfinite(fast.shadow).sum() > 50
    np.testing.assert_array_equal(fast.shadow, slow.shadow)
    np.testing.assert_array_equal(fast.start, slow.start)
    assert all(np.array_equal(a, b) for a, b in zip(fast.alloc, slow.alloc))


def _held_idle_routers(topo, params=None):
    """Job A (9 nodes, release 10 s) holds a prism with routers it leaves idle; every node
    outside that prism is busy until 20 s but one, whose router partner stays busy, freed at
    5 s. The policy (told of A's start), the machine and the nodes' release times (s)."""
    pol = Prism(topo, params)
    state = st.empty(topo)
    pol.reset(state)
    a = pol.place(state, 9)
    st.allocate(state, a, pol.footprint(a))
    pol.started(a)
    prism = pol.running[next(iter(pol.running))]
    assert len(np.setdiff1d(np.flatnonzero(prism), a // 2)) >= 1  # a router of A's prism without A's nodes
    outside = np.flatnonzero(~np.repeat(prism, 2))
    e, d = outside[:1], outside[1:]
    release = np.full(topo.n_nodes, np.inf)
    for nodes, t in ((d, 20.0), (e, 5.0)):
        st.allocate(state, nodes, 1)
        release[nodes] = t
    release[a] = 10.0
    return pol, state, release


def test_a_running_prisms_idle_routers_stay_held_until_its_job_ends(torus4):
    """By hand on the 4x4x4 torus (:func:`_held_idle_routers`): a 2-node job fits nowhere at
    5 s (A's idle routers are held), so its shadow time is A's end, 10 s — also by walking the
    future states. Where the shortcut steps aside: a one-router job under ``internal`` (it may
    take A's idle nodes at 5 s already), and a placement recorded but not started."""
    times = np.array([5.0, 10.0, 20.0])
    pol, state, release = _held_idle_routers(torus4)
    assert pol.earliest_fit(state, 2, release, times) == 10.0
    assert next(t for t in times if pol.fits(st.future(state, release <= t), 2)) == 10.0
    assert pol.place(st.future(state, release <= 20.0), 2) is not None and pol.pending
    assert pol.earliest_fit(state, 2, release, times) is None  # pending would hold: the engine walks

    inside, state, release = _held_idle_routers(torus4, PrismParams(internal=True))
    assert inside.earliest_fit(state, 3, release, times) == 10.0  # larger than a router: the shortcut
    assert inside.earliest_fit(state, 1, release, times) is None
    assert next(t for t in times if inside.fits(st.future(state, release <= t), 1)) == 5.0


@pytest.mark.parametrize("compiled", [False, True])
def test_a_long_backfill_keeps_off_the_heads_whole_prism_after_another_backfill_started(torus4, compiled):
    """By hand on the 4x4x4 torus (2 nodes a router; extents 1, 2 or 4): A (20 nodes, 1,000 s)
    starts at 1 s in a 16-router prism. B (96 nodes = 48 routers) needs the whole machine, the
    only prism of 48 routers or more: blocked, shadow time 1,001 s (A's estimated end). C (16
    nodes, 10 s, submitted at 5 s) ends by the shadow time and backfills at 5 s. D (16 nodes,
    1,000 s, also at 5 s) would run past 1,001 s inside B's prism, which is the whole machine:
    refused, so B starts at 1,001 s and D at 1,011 s, when B ends. Session 45's exploratory run
    found D backfilled at 5 s and B delayed to 1,005 s: C's start forgot B's reserved prism,
    and D was kept off the routers of B's reserved nodes only."""
    submit, runtime, nodes = np.array([1.0, 2, 5, 5]), np.array([1000.0, 10, 10, 1000]), np.array([20, 96, 16, 16])
    out = replay.simulate(submit, runtime, runtime.copy(), nodes, torus4, Prism(torus4), "easy", compiled=compiled)
    assert out.start.tolist() == [1.0, 1001.0, 5.0, 1011.0]
    assert out.backfilled.tolist() == [False, False, True, False]
    assert out.shadow[1] == 1001.0


@pytest.mark.parametrize("ends_first", [False, True])
def test_a_long_one_router_backfill_keeps_out_of_a_prism_the_head_reserved(torus4, ends_first):
    """By hand on the 4x4x4 torus under ``internal``: A (20 nodes, 1,000 s) starts at 1 s in a
    16-router prism with idle nodes; B (96 nodes, the whole machine's only prism that holds
    it) is blocked until A's estimated end, 1,001 s. D (one node, 1,000 s, at 5 s) would fit
    on an idle node inside A's prism, but it would still run at 1,001 s on a router of B's
    reserved prism: refused. B starts at 1,001 s; D with it inside B's prism (it ends after
    B, which ``internal_ends_first`` refuses: then at 1,011 s, when B ends). Session 47's
    exploratory run found D backfilled at 5 s and B delayed to 1,005 s (without
    ``internal_ends_first``; with it D never goes inside a prism that ends before it, so that
    case held before the fix too and is kept as the option's)."""
    submit, runtime, nodes = np.array([1.0, 2, 5]), np.array([1000.0, 10, 1000]), np.array([20, 96, 1])
    pol = Prism(torus4, PrismParams(internal=True, internal_ends_first=ends_first))
    out = replay.simulate(submit, runtime, runtime.copy(), nodes, torus4, pol, "easy", compiled=False)
    assert out.start.tolist() == [1.0, 1001.0, 1011.0 if ends_first else 1001.0]
    assert not out.backfilled.any()
    assert out.shadow[1] == 1001.0


def test_internal_jobs_that_would_outlive_their_host_go_elsewhere_with_internal_ends_first(torus4):
    """By hand on the 4x4x4 torus: job A (9 nodes, estimated to end at 100 s) leaves idle nodes
    in its prism. A one-node job ending by 50 s takes one of them under ``internal``; one ending
    by 150 s does too without ``internal_ends_first`` and not with it (it gets a prism of its
    own, outside A's)."""
    def host(params):
        pol = Prism(torus4, params)
        state = st.empty(torus4)
        pol.reset(state)
        a = pol.place(state, 9)
        st.allocate(state, a, pol.footprint(a))
        pol.started(a, 100.0)
        return pol, state, pol.running[next(iter(pol.running))]

    for ends_first, late_inside in ((False, True), (True, False)):
        pol, state, prism = host(PrismParams(internal=True, internal_ends_first=ends_first))
        assert pol.until_dependent == ends_first
        early, late = pol.place(state, 1, until_s=50.0), pol.place(state, 1, until_s=150.0)
        assert prism[early // 2].all()
        assert prism[late // 2].all() == late_inside
        assert pol.fits(state, 1, until_s=150.0)  # elsewhere, in a prism of its own


def test_with_internal_ends_first_no_small_job_outlives_its_host_on_a_real_log():
    """Thunder x2 on torus8 with ``internal`` and ``internal_ends_first``: every job placed
    inside a running prism is estimated to end no later than that prism's job (found from the
    recorded prisms and the start times); without the option some would not."""
    t8, usable, cols = _thunder_on_torus8(*BUSY_WINDOW)
    submit, runtime, estimate, nodes = cols
    late = {}
    for ends_first in (False, True):
        pol = Prism(t8, PrismParams(internal=True, internal_ends_first=ends_first))
        got = replay.simulate(*cols, t8, pol, "easy", usable=usable)
        prisms, inside = prisms_by_job(pol, got)
        assert len(inside) > 20
        late[ends_first] = 0
        for j in inside:
            hosts = hosts_of(j, got, runtime, prisms, 2)
            assert len(hosts) == 1
            h = hosts[0]
            late[ends_first] += got.start[j] + estimate[j] > got.start[h] + estimate[h]
    assert late[True] == 0 and late[False] > 0


def test_blocking_other_kinds_keeps_prisms_off_the_xk_block():
    """On Thunder x2 over torus8 (an XK block of 3 x 2 x 8 routers, service routers), the
    default lets XE prisms hold XK routers (left idle); with ``block_other_kinds`` no prism
    holds one, while service routers may still sit inside prisms."""
    from fattorus.sched.policy.torus.prism import PrismParams

    t8, usable, cols = _thunder_on_torus8(3)
    small = cols[3] <= 256  # the largest prism clear of the XK block holds 8 x 4 x 8 routers
    cols = [c[small] for c in cols]
    names = np.asarray(t8.node_kind_names)[t8.node_kind].reshape(-1, 2)
    xk = (names == "XK").any(axis=1)

    def prism_routers(params):
        pol = Prism(t8, PrismParams.from_mapping(params))
        replay.simulate(*cols, t8, pol, "easy", usable=usable)
        return [pol._prism_routers(tuple(sh[:3]), tuple(sh[3:])) for _, sh in pol.started_prisms if sh[3] > 0]

    assert any(xk[r].any() for r in prism_routers({}))
    blocked = prism_routers({"block_other_kinds": True})
    assert len(blocked) > 10 and not any(xk[r].any() for r in blocked)
    with pytest.raises(ValueError, match="block_other_kinds and internal_ends_first true/false"):
        PrismParams.from_mapping({"block_other_kinds": "yes"})
    with pytest.raises(ValueError, match=r"got unknown \['fil'\] \(did you mean 'fill'\?\)"):
        PrismParams.from_mapping({"fil": 1.0})
    for bad in ({"bisection": float("nan")}, {"contact": "nan"}, {"fill": float("inf")}, {"slack": "inf"},
                {"fill": -1}, {"slack": 0.5}):
        with pytest.raises(ValueError, match="finite numbers >= 0 and slack a finite number >= 1"):
            PrismParams.from_mapping(bad)
    # A job no prism clear of the block can hold is one clear error, under either scheduler:
    # never jobs left unstarted in silence.
    for sched in ("easy", "fcfs"):
        with pytest.raises(ValueError, match="never started: policy 'prism' cannot place a job of 900 nodes"):
            replay.simulate(np.array([0.0, 10.0, 20.0]), np.array([100.0, 100.0, 50.0]), np.array([100.0, 100.0, 50.0]),
                            np.array([4, 900, 2]), t8, Prism(t8, PrismParams(block_other_kinds=True)), sched,
                            usable=usable)


def _bbox_extents(topo, nodes: np.ndarray) -> list[int]:
    """Smallest wrapped interval covering the job's router coordinates, per dimension."""
    coords = topo.router_coords(np.unique(nodes // topo.nodes_per_router))
    out = []
    for c, n in zip(coords, topo.dims):
        u = np.unique(c)
        gaps = np.diff(np.r_[u, u[0] + n]) - 1
        out.append(int(n - gaps.max()))
    return out


def test_prism_keeps_running_jobs_off_each_others_links_on_a_real_log():
    """Thunder x2 on torus8 with service routers and an XK block: no two concurrent jobs share
    a router link (each job's exact dimension-order link set, checked against the routes
    themselves in test_torus; per link, its users' time intervals are disjoint), every recorded
    prism obeys the half-or-full rule with the job inside, and no job runs on another kind."""
    t8, usable, cols = _thunder_on_torus8(4)
    # router 5 = (0, 0, 5) lies in the XK block (x 6..0, y 0): only two service routers count
    assert int(usable.sum()) == 1024 - 2 * 48 - 2 * 2
    pol = Prism(t8)
    got = replay.simulate(*cols, t8, pol, "easy", usable=usable)
    assert len(cols[0]) > 300 and got.backfilled.sum() > 0
    assert all(usable[a].all() for a in got.alloc)
    ids = [np.flatnonzero(t8.job_links(a)) for a in got.alloc]
    link = np.concatenate(ids)
    start = np.repeat(got.start, [len(i) for i in ids])
    end = np.repeat(got.start + cols[1], [len(i) for i in ids])
    order = np.lexsort((start, link))
    link, start, end = link[order], start[order], end[order]
    same = link[1:] == link[:-1]
    assert same.sum() > 0 and (start[1:][same] >= end[:-1][same]).all()
    assert len(pol.started_prisms) == len(cols[0])
    for nodes, (x, y, z, *shape) in pol.started_prisms:
        coords = t8.router_coords(nodes // 2)
        for c, o, s, n in zip(coords, (x, y, z), shape, t8.dims):
            assert s <= n // 2 or s == n
            assert ((c - o) % n < s).all()
        for ext, s, n in zip(_bbox_extents(t8, nodes), shape, t8.dims):
            assert ext <= s


def test_prism_refuses_other_families(conf_topo):
    from fattorus.sched import policy

    topo = conf_topo
    if topo.kind == "torus3d":
        assert "prism" in policy.supporting(topo)
    else:
        with pytest.raises(ValueError, match="does not support"):
            policy.make("prism", topo)


def test_prism_params_errors_are_one_line():
    from fattorus.sched import policy

    for params, words in [({"fil": 1}, "unknown"), ({"fill": "x"}, "numbers"), ({"slack": 0.5}, "slack")]:
        with pytest.raises(ValueError, match=words) as err:
            policy.make("prism", T4, params)
        assert "\n" not in str(err.value)


def test_node_kinds_from_config():
    t = topology.from_config({"kind": "torus3d", "name": "k", "dims": [4, 4, 4], "nodes_per_router": 2,
                              "node_kinds": [{"kind": "XK", "region": {"origin": [3, 0, 0], "shape": [2, 1, 4]}},
                                             {"kind": "service", "nodes": [0, 1]},
                                             {"kind": "service", "scatter": {"fraction": 0.05, "seed": 3}}]})
    assert t.node_kind_names == ("XE", "XK", "service")
    kind = t.node_kind.reshape(4, 4, 4, 2)
    # the XK region wraps from x = 3 to x = 0, y = 0, every z
    assert (kind[[3, 0], 0] == 1).all() and (kind[1:3, 0] != 1).all() and (kind[:, 1:] != 1).all()
    assert kind[0, 0, 0].tolist() == [1, 1]  # inside the XK region: the earlier entry wins
    n_scatter = round(0.05 * 64)
    assert (t.node_kind == 2).sum() == 2 * n_scatter  # nodes 0, 1 were already XK
    assert topology.from_config(t.config()) == t
    assert t.usable("XK").sum() == 16 and t.usable().sum() == 128 - 16 - 2 * n_scatter
    for bad, words in [({"kind": "XK"}, "exactly one"), ({"kind": "XK", "region": {"origin": [0, 0]}}, "region takes exactly"),
                       ({"kind": "XK", "routers": [64]}, "beyond"), ({"kind": "s", "scatter": {"fraction": 2, "seed": 1}}, "bad scatter"),
                       # a negative seed, a fraction where an integer belongs, a bool: refused, not cut
                       ({"kind": "s", "scatter": {"fraction": 0.1, "seed": -1}}, "bad scatter"),
                       ({"kind": "s", "scatter": {"fraction": 0.1, "seed": 1.9}}, "bad scatter"),
                       ({"kind": "XK", "routers": [1.7]}, "bad routers"), ({"kind": "XK", "nodes": [True]}, "bad nodes"),
                       ({"kind": "XK", "routers": [1e30]}, "bad routers"),
                       ({"kind": "XK", "routers": [float("inf")]}, "bad routers")]:
        with pytest.raises(topology.TopologyError, match=words):
            topology.from_config({"kind": "torus3d", "name": "k", "dims": [4, 4, 4], "node_kinds": [bad]})


def test_blue_waters_node_kinds():
    bw = topology.load("bluewaters")
    counts = np.bincount(bw.node_kind, minlength=3)
    assert counts[1] == 15 * 6 * 24 * 2 and counts[2] == 2 * round(0.0282 * 24**3)
    assert counts.sum() == 27_648


def test_feature_takes_the_first_feature_with_enough_idle_nodes():
    from fattorus.sched.policy.torus import Feature, default_features

    # torus 4x4x4: default features are the four xz planes y = 0..3 (4 x 1 x 4 routers, 32 nodes)
    assert default_features((4, 4, 4)) == [{"origin": [0, y, 0], "shape": [4, 1, 4]} for y in range(4)]
    assert len(default_features((24, 24, 24))) == 12 and default_features((24, 24, 24))[1]["origin"] == [0, 2, 0]
    pol = Feature(T4, min_nodes=4)
    machine = st.empty(T4)
    pol.reset(machine)
    x, y, z = T4.router_coords(np.arange(T4.n_nodes) // 2)
    busy = (y == 0) & (x < 2)  # plane y = 0 keeps 16 free nodes
    state = st.from_nodes(T4, ~busy, busy.astype(np.int8))
    got = pol.place(state, 20)
    assert set(y[got]) == {1} and len(got) == 20
    assert set(y[pol.place(state, 16)]) == {0}
    small = pol.place(state, 3)  # below min_nodes: first fit in id order
    assert small.tolist() == np.flatnonzero(state.free)[:3].tolist()
    assert pol.place(state, 33) is not None and pol.size_class(33) == 2 and pol.size_class(20) == 1
    with pytest.raises(ValueError, match=r"features\[0\] shape \[5, 1, 1\] must be 1..\[4, 4, 4\]"):
        Feature(T4, [{"origin": [0, 0, 0], "shape": [5, 1, 1]}])
    with pytest.raises(ValueError, match=r"three coordinates each\), got origin \[0, 0\] and shape \[4, 4, 4\]"):
        Feature(T4, [{"origin": [0, 0], "shape": [4, 4, 4]}])  # the origin is wrong, not the shape
    # An origin off the machine moved the feature by wrapping (session 45): refused; one near a
    # ring's end wraps as meant (x = 3, 0 on the 4-ring).
    for off in ([9, 0, 0], [-3, 0, 0], [0, 4, 0]):
        with pytest.raises(ValueError, match=re.escape(f"features[0] origin {off} must lie on the machine: 0..[3, 3, 3]")):
            Feature(T4, [{"origin": off, "shape": [2, 2, 2]}])
    wrapped = Feature(T4, [{"origin": [3, 0, 0], "shape": [2, 1, 1]}], min_nodes=1)
    assert sorted(set(T4.router_coords(wrapped.features[0] // 2)[0].tolist())) == [0, 3]


def test_feature_jobs_stay_in_one_feature_on_a_real_log():
    from fattorus.sched import policy
    from fattorus.sched.policy.torus import default_features

    t8 = topology.load("torus8")
    trace = ROOT / "data" / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
    jobs, _ = workload.scale_nodes(workload.load(trace, cores_per_node=4).jobs, 2, t8.n_nodes)
    # The engine's schedule itself (replay.simulate): the tables replay.replay adds (each job's
    # APH, compiled by JAX per job size, ~3 s) play no part in where the jobs went.
    prepared, _ = replay.prepare(workload.first_days(jobs, 4), t8.n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    out = replay.simulate(*cols, t8, policy.make("feature", t8, {"min_nodes": 8}), "easy")
    _, y, _ = t8.router_coords(np.arange(t8.n_nodes) // 2)
    planes = [set(range(f["origin"][1], f["origin"][1] + f["shape"][1])) for f in default_features(t8.dims)]
    cap = 2 * 8 * 8 * 2
    asked = 0
    for nodes in out.alloc:
        if 8 <= len(nodes) <= cap:
            asked += 1
            assert any(set(y[np.asarray(nodes)].tolist()) <= p for p in planes)
    assert asked > 50 and out.backfilled.sum() > 0


def test_contact_is_the_blocked_share_of_the_shell_by_brute_force():
    t = topology.from_config({"kind": "torus3d", "name": "c", "dims": [6, 5, 7], "nodes_per_router": 2})
    pol = Prism(t)
    pol.reset(st.empty(t))
    rng = np.random.default_rng(4)
    for shape in [(1, 1, 1), (2, 2, 3), (6, 1, 2), (3, 5, 7), (2, 2, 1)]:
        starts = tuple(1 if s == d else d for s, d in zip(shape, t.dims))
        grown = [min(s + 2, d) if s < d else s for s, d in zip(shape, t.dims)]
        shell = np.prod(grown) - np.prod(shape)
        checked = 0
        for _ in range(3):
            # 30 % of the nodes busy, then one prism of this shape cleared at a random start, so
            # that every shape has clear starts (only clear prisms are ever scored) with a
            # partly blocked shell around them.
            busy = rng.random(t.n_nodes) < 0.3
            clear = [(o + np.arange(s)) % d for o, s, d in zip(rng.integers(0, starts), shape, t.dims)]
            routers = np.ravel_multi_index(np.ix_(*clear), t.dims).ravel()
            busy[(routers[:, None] * 2 + np.arange(2)).ravel()] = False
            m = pol._machine(st.from_nodes(t, ~busy, busy.astype(np.int8)))
            every = np.arange(np.prod(starts))
            got = pol._contact(m, shape, starts, every).reshape(starts)  # the dense path
            # Few starts at a time take the gathers: they must agree with the dense sums everywhere.
            gathered = np.concatenate([pol._contact(m, shape, starts, few)
                                       for few in np.array_split(every, len(every))])
            assert np.array_equal(gathered, got.ravel())
            for start in itertools.product(*map(range, starts)):
                lo = [o - 1 if s < d else o for o, s, d in zip(start, shape, t.dims)]
                outer = m.blocked[np.ix_(*[(o + np.arange(g)) % d for o, g, d in zip(lo, grown, t.dims)])].sum()
                inner = m.blocked[np.ix_(*[(o + np.arange(s)) % d for o, s, d in zip(start, shape, t.dims)])].sum()
                if inner == 0:  # only clear prisms are ever scored
                    assert got[start] == pytest.approx(outer / shell if shell else 0.0)
                    checked += 1
        assert checked >= 3, (shape, checked)


def _brute_scores(topo, blocked: np.ndarray, avail: np.ndarray, prm) -> dict:
    """Every clear half-or-full prism of ``topo`` by explicit loops: (shape, start) -> (free
    usable nodes, blocked share of its one-router shell). Whole rings start at 0 only."""
    dims, out = topo.dims, {}
    for shape in itertools.product(*(allowed_extents(d) for d in dims)):
        grown = [min(s + 2, d) if s < d else s for s, d in zip(shape, dims)]
        shell = np.prod(grown) - np.prod(shape)
        for start in itertools.product(*[range(1) if s == d else range(d) for s, d in zip(shape, dims)]):
            box = np.ix_(*[(o + np.arange(s)) % d for o, s, d in zip(start, shape, dims)])
            if blocked[box].any():
                continue
            lo = [o - 1 if s < d else o for o, s, d in zip(start, shape, dims)]
            outer = blocked[np.ix_(*[(o + np.arange(g)) % d for o, g, d in zip(lo, grown, dims)])].sum()
            out[shape, start] = (int(avail[box].sum()), outer / shell if shell else 0.0)
    return out


def _brute_best(topo, clear: dict, n: int, prm) -> tuple[float, set]:
    """The best score over the candidate shapes the module docstring names (the minimal shapes
    for ``n``; if none fits, every shape up to ``slack`` times the first that fits in order of
    size) and the shapes reaching it. Bisection per slot by :func:`bisection_per_slot` (tested by
    hand), relative to the best of the shapes holding ``n`` slots."""
    dims, p = topo.dims, topo.nodes_per_router
    shapes = list(itertools.product(*(allowed_extents(d) for d in dims)))
    slots = {s: int(np.prod(s)) * p for s in shapes}
    bis = dict(zip(shapes, bisection_per_slot(np.array(shapes), dims, topo.bandwidth, p)))
    best_bis = max(bis[s] for s in shapes if slots[s] >= n)

    def minimal(s):
        smaller = []
        for d in range(3):
            below = [e for e in allowed_extents(dims[d]) if e < s[d]]
            smaller.append(int(np.prod([*s[:d], below[-1], *s[d + 1:]])) * p if below else 0)
        return slots[s] >= n and max(smaller) < n

    fits = {k: v for k, v in clear.items() if v[0] >= n}
    chosen = {k: v for k, v in fits.items() if minimal(k[0])}
    if not chosen and fits:
        limit = prm.slack * min(slots[k[0]] for k in fits)
        chosen = {k: v for k, v in fits.items() if slots[k[0]] <= limit}
    scores = {k: prm.fill * n / a + prm.bisection * bis[k[0]] / best_bis + prm.contact * c
              for k, (a, c) in chosen.items()}
    if not scores:
        return -np.inf, set()
    top = max(scores.values())
    return top, {k[0] for k, v in scores.items() if v >= top - 1e-9}


@pytest.mark.parametrize("seed", range(4))
def test_the_chosen_prism_has_the_best_score_by_brute_force(seed):
    """The best-first search's placement scores as high as every candidate prism scored by
    explicit loops (fill, bisection relative to the shapes that hold the job, contact), on a
    torus whose rings are odd and even and whose y links run at half speed."""
    t = topology.from_config({"kind": "torus3d", "name": "s", "dims": [6, 5, 7], "nodes_per_router": 2,
                              "bandwidth": [2, 1, 2]})
    rng = np.random.default_rng(seed)
    busy = rng.random(t.n_nodes) < rng.uniform(0.0, 0.4)
    state = st.from_nodes(t, ~busy, busy.astype(np.int8))
    blocked = busy.reshape(-1, 2).any(1).reshape(t.dims)
    avail = (~busy).reshape(-1, 2).sum(1).reshape(t.dims)
    pol = Prism(t)
    pol.reset(st.empty(t))
    clear = _brute_scores(t, blocked, avail, pol.params)
    compared = 0
    for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144):
        top, best_shapes = _brute_best(t, clear, n, pol.params)
        got = pol.place(state, n)
        assert (got is None) == (top == -np.inf), n
        if got is None:
            continue
        x, y, z, a, b, c = pol.shape_of[np.asarray(got, np.int64).tobytes()]
        start = tuple(0 if s == d else o for o, s, d in zip((x, y, z), (a, b, c), t.dims))
        free, share = clear[(a, b, c), start]
        bis = bisection_per_slot(np.array([(a, b, c)]), t.dims, t.bandwidth, 2)[0]
        best_bis = max(bisection_per_slot(np.array([s]), t.dims, t.bandwidth, 2)[0]
                       for s in itertools.product(*(allowed_extents(d) for d in t.dims)) if np.prod(s) * 2 >= n)
        score = pol.params.fill * n / free + pol.params.bisection * bis / best_bis + pol.params.contact * share
        assert score == pytest.approx(top, abs=1e-9) and (a, b, c) in best_shapes, (n, (a, b, c), score, top)
        compared += 1
    assert compared >= 6


def test_internal_idle_nodes_take_one_router_jobs_only_with_the_option():
    from fattorus.sched.policy.torus import PrismParams

    for internal in (False, True):
        pol = Prism(T4, PrismParams(internal=internal))
        machine = st.empty(T4)
        pol.reset(machine)
        big = pol.place(machine, 13)  # needs 7 routers: its prism has idle nodes
        st.allocate(machine, big, 1)
        pol.started(big)
        routers = np.flatnonzero(pol.running[next(iter(pol.running))])
        small = pol.place(machine, 1)
        inside = small is not None and small[0] // 2 in routers
        assert inside == internal
        if internal:  # a one-router job inside the prism: no router link of its own, not exposed
            assert not T4.job_links(small).any()
            assert pol.place(machine, 3) is None or not set((pol.place(machine, 3) // 2).tolist()) & set(routers.tolist())


def test_prism_on_blue_waters_from_jobs_parquet(results_path):
    """The CLI on Blue Waters (XK block, service nodes) with Atlas fit to it: from the run's own
    jobs.parquet, no job shares a router link with a concurrent one (recomputed here from each
    job's exact dimension-order link set, pair by pair), every job runs on XE nodes, and the
    run records the fit factor and the usable nodes. (The prisms' half-or-full rule is checked
    from the policy's record in the real-log test above.)"""
    import subprocess
    import sys

    import polars as pl

    out = forkcli.run("fattorus.sweep", ["+topo=bluewaters", "policy=prism", "workload.window_days=1.5",
                                         "progress=false", f"hydra.run.dir={results_path / 'run'}"], cwd=ROOT,
                      timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "x19.57 (fit" in out.stdout
    jobs = pl.read_parquet(results_path / "run" / "jobs.parquet")
    bw = topology.load("bluewaters")
    assert jobs.height > 50 and not jobs["exposed"].any()
    # Every router link's users, as time intervals, must be disjoint: sorted by (link, start),
    # each start comes at or after every earlier end on the same link.
    ids = [np.flatnonzero(bw.job_links(np.asarray(a))) for a in jobs["alloc"].to_list()]
    link = np.concatenate(ids)
    start = np.repeat(jobs["start_s"].to_numpy(), [len(i) for i in ids])
    end = np.repeat(jobs["end_s"].to_numpy(), [len(i) for i in ids])
    order = np.lexsort((start, link))
    link, start, end = link[order], start[order], end[order]
    same = link[1:] == link[:-1]
    assert same.sum() > 0  # links do get reused over time, one job after another
    assert (start[1:][same] >= end[:-1][same]).all()
    usable = bw.usable()
    assert all(usable[np.asarray(a)].all() for a in jobs["alloc"].to_list())
    summary = __import__("json").loads((results_path / "run" / "summary.json").read_text())
    assert summary["usable_nodes"] == 22_548 and summary["config"]["workload"]["scale_factor"] == pytest.approx(22_548 / 1152)


def test_no_prism_or_first_fit_placement_is_more_compact_than_the_ideal():
    """The ideal APH is the most compact placement on the empty machine: no job of a real
    replay (Thunder x2 on torus8, prism and first fit over O2) may beat it — brute-force APH
    of every placement (hops of every pair). Before session 17 the ideal was the L1 ball
    alone, which prism's slabs beat (45 of 282 jobs on Blue Waters)."""
    from fattorus.sched import policy

    t8, usable, cols = _thunder_on_torus8(4)
    beaten = []
    for pol in (Prism(t8), policy.make("first_fit", t8, {"ordering": "O2"})):
        got = replay.simulate(*cols, t8, pol, "easy", usable=usable)
        for a in got.alloc:
            n = len(a)
            if n > 1 and np.asarray(t8.hops(a[:, None], a[None, :])).sum() / (n * (n - 1)) < t8.ideal_aph(n) - 1e-12:
                beaten.append((pol.name, n))
    assert beaten == []


def test_the_ideal_is_at_least_as_compact_as_every_box_prefix_by_brute_force():
    """Every box of routers at router 0 filled in each of the six axis orders (both slots of
    a router together), built node by node and scored by hops over all pairs: none is more
    compact than the torus's ideal allocation, whose APH ideal_aph reports (4x4x4, 2 to 40 nodes)."""
    t4 = topology.load("torus4")
    X, Y, Z = t4.dims
    for n in range(2, 41):
        routers = -(-n // 2)
        ideal = t4.ideal_aph(n)
        nodes = np.asarray(t4.ideal_allocation(n))
        assert ideal == pytest.approx(np.asarray(t4.hops(nodes[:, None], nodes[None, :])).sum() / (n * (n - 1)))
        scored = set()  # many boxes and orders fill the same routers first: each set scored once
        for a, b, c in itertools.product(range(1, X + 1), range(1, Y + 1), range(1, Z + 1)):
            if a * b * c < routers:
                continue
            for order in itertools.permutations(range(3)):
                ext = (a, b, c)
                pts = sorted(itertools.product(range(a), range(b), range(c)), key=lambda q: tuple(q[d] for d in order))
                r = tuple((x * Y + y) * Z + z for x, y, z in pts[:routers])
                if r in scored:
                    continue
                scored.add(r)
                box = (np.array(r)[:, None] * 2 + np.arange(2)).ravel()[:n]
                aph = np.asarray(t4.hops(box[:, None], box[None, :])).sum() / (n * (n - 1))
                assert aph >= ideal - 1e-12, (n, ext, order)
