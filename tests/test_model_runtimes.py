"""speedup=model: run times decided at job start by the flow model (issue 14, item 3)."""

from __future__ import annotations

import types
from pathlib import Path

import jax
import numpy as np
import polars as pl
import pytest

from fattorus import workload
from fattorus.analysis import commtime, interference
from fattorus.sched import policy, replay
from fattorus.topology import fattree

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
MIX = interference.parse_mix(interference.DEFAULT_MIX)


@pytest.fixture(scope="module")
def jobs():
    """Two busy days of Thunder on ft6x6 (54 nodes): long queues, many concurrent jobs."""
    ft = fattree.load("ft6x6")
    jobs = workload.load(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz", cores_per_node=4).jobs
    scaled, _ = workload.scale_nodes(jobs, 1, ft.n_nodes)
    return workload.first_days(scaled, 2.0, 10.0)


@pytest.fixture(scope="module")
def runs(jobs):
    """The model's runs of :func:`jobs` under ``to`` and ``ta`` (seed 3), made once for every
    test that reads them, on the CPU device (:func:`on_cpu`: the shortcut tests compare them
    bit for bit with runs that take no shortcut)."""
    ft = fattree.load("ft6x6")
    out = {}
    with jax.default_device(jax.devices("cpu")[0]):
        for pol in ("to", "ta"):
            model = commtime.ModelRuntimes(ft, MIX, comm_fraction=0.5, seed=3)
            out[pol] = (replay.replay(jobs, ft, pol, "easy", runtime_model=model), model)
    return ft, out


def test_a_hook_returning_the_logged_runtime_changes_nothing(jobs):
    ft = fattree.load("ft6x6")
    prepared, _ = replay.prepare(workload.with_estimate(jobs), ft.n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    plain = replay.simulate(*cols, ft, policy.make("to", ft), "easy")
    hooked = replay.simulate(*cols, ft, policy.make("to", ft), "easy",
                             runtime_at_start=lambda r, j, nodes, now: r.jobs.runtime[j])
    assert np.array_equal(plain.start, hooked.start)
    assert all(np.array_equal(a, b) for a, b in zip(plain.alloc, hooked.alloc))


def test_a_runtime_past_the_estimate_is_refused(jobs):
    ft = fattree.load("ft6x6")
    prepared, _ = replay.prepare(workload.with_estimate(jobs), ft.n_nodes)
    cols = [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")]
    with pytest.raises(ValueError, match="estimate"):
        replay.simulate(*cols, ft, policy.make("to", ft), "easy",
                        runtime_at_start=lambda r, j, nodes, now: r.jobs.estimate[j] * 2)


def test_model_runs_keep_easy_guarantees_and_estimates(runs):
    _, out = runs
    for pol, (result, model) in out.items():
        jobs = result.jobs
        assert (jobs["runtime_s"] <= jobs["estimate_s"]).all()
        heads = jobs.filter(pl.col("shadow_s").is_not_nan())
        assert len(heads) > 5 and (heads["start_s"] <= heads["shadow_s"]).all(), pol
        assert (jobs["end_s"] - jobs["start_s"] - jobs["runtime_s"]).abs().max() < 1e-6
        summary = result.summary["runtime_model"]
        assert summary["jobs"] == len(jobs) and summary["killed_at_estimate"] == model.killed


def test_application_efficiency_is_work_over_busy_node_seconds(runs, jobs):
    """summary.json's application efficiency, recomputed from jobs.parquet, the log and each
    job's slowdown: a job that ran to its end did its logged run time of work; one cut at its
    estimate (its stretched run time past it) did the time it got over its stretch factor.
    Under ta every job ran at the ideal speed."""
    ft, out = runs
    prepared, _ = replay.prepare(workload.with_estimate(jobs), ft.n_nodes)
    logged = dict(zip(prepared["job_id"].to_list(), prepared["runtime_s"].to_list()))
    for pol, (result, model) in out.items():
        t = result.jobs
        base = np.array([logged[i] for i in t["job_id"].to_list()])
        assert np.array_equal(base, model._base)  # rows in the model's job order
        ran, nodes, estimate = (t[c].to_numpy() for c in ("runtime_s", "nodes", "estimate_s"))
        factor = 0.5 + 0.5 * model.slowdown  # comm_fraction 0.5
        cut = base * factor > estimate  # cut at the estimate ...
        killed = base * factor > estimate * (1 + 1e-6)  # ... and killed only past the model's rounding
        assert killed.sum() == result.summary["runtime_model"]["killed_at_estimate"]
        np.testing.assert_allclose(ran[cut], estimate[cut])
        work = np.where(cut, ran / factor, base)
        got = result.summary["runtime_model"]["application_efficiency"]
        assert got == pytest.approx((nodes * work).sum() / (nodes * ran).sum(), rel=1e-12)
        # Killed work counted as lost: only the jobs that ran to their end did work.
        done = result.summary["runtime_model"]["application_efficiency_completed"]
        assert done == pytest.approx((nodes * np.where(killed, 0.0, work)).sum() / (nodes * ran).sum(), rel=1e-12)
        assert (done < got) == bool(killed.any())
    # Under ta jobs communicate (nearly) as in the ideal placement; under to they slow down.
    eff = {pol: r.summary["runtime_model"]["application_efficiency"] for pol, (r, _) in out.items()}
    assert eff["ta"] > 0.99 and eff["to"] < eff["ta"] - 0.01


def test_ta_jobs_run_as_fast_as_alone_and_to_jobs_slow_down(runs):
    """Under ta no two running jobs share a link, so at its start every job communicates as if
    alone in its placement: recomputed here from jobs.parquet, job by job."""
    ft, out = runs
    result, model = out["ta"]
    jobs = result.jobs
    start, end = jobs["start_s"].to_numpy(), jobs["end_s"].to_numpy()
    allocs = [np.asarray(a) for a in jobs["alloc"].to_list()]
    checked = 0
    for j in np.argsort(start)[::7]:  # a sample of the jobs, each with everything running then
        if len(allocs[j]) < 2:
            continue
        running = [k for k in range(len(jobs)) if k != j and start[k] <= start[j] < end[k]]
        if not running:
            continue
        tr = [commtime.Job(allocs[k], _pairs(len(allocs[k]))) for k in [j, *running]]
        together = commtime.step_times(ft, tr)[0]
        alone = commtime.step_times(ft, tr[:1])[0]
        assert together == pytest.approx(alone, rel=1e-5)
        checked += 1
    assert checked > 10
    # Under to, the same model finds jobs that are slowed and some cut at their estimate.
    to_summary = out["to"][0].summary["runtime_model"]
    assert to_summary["max_slowdown"] > 1.05
    assert to_summary["mean_slowdown"] > out["ta"][0].summary["runtime_model"]["mean_slowdown"] - 1e-9


def test_no_two_jobs_running_at_once_under_ta_share_a_leaf_or_pod_in_a_model_replay(runs):
    """The model decides run times at start, so a ``speedup=model`` replay under ``ta`` has
    its own starts and ends: every pair of jobs running at once in it keeps ``ta``'s rule (as
    tests/test_replay.py checks a plain replay): two jobs that span several leaves share no
    leaf, two that span several pods share no pod. (The step-time check above samples every
    7th job; this one takes every concurrent pair, from jobs.parquet's columns alone.)"""
    from intervals import concurrent_pairs

    ft, out = runs
    jobs = out["ta"][0].jobs
    k, p = ft.nodes_per_leaf, ft.nodes_per_pod
    allocs = [np.asarray(a) for a in jobs["alloc"].to_list()]
    leaves = [set((a // k).tolist()) for a in allocs]
    pods = [set((a // p).tolist()) for a in allocs]
    start, end = jobs["start_s"].to_numpy(), jobs["end_s"].to_numpy()
    checked = multi_leaf = multi_pod = 0
    for a, b in concurrent_pairs(start, end):
        checked += 1
        assert not set(allocs[a].tolist()) & set(allocs[b].tolist()), (a, b)  # no node twice
        both_leaves = len(leaves[a]) > 1 and len(leaves[b]) > 1
        both_pods = len(pods[a]) > 1 and len(pods[b]) > 1
        assert not (both_leaves and leaves[a] & leaves[b]), (jobs["job_id"][a], jobs["job_id"][b])
        assert not (both_pods and pods[a] & pods[b]), (jobs["job_id"][a], jobs["job_id"][b])
        multi_leaf += both_leaves
        multi_pod += len(pods[a]) > 1 or len(pods[b]) > 1
    # The rule was exercised: many pairs, pairs of multi-leaf jobs, and jobs over several pods.
    assert checked > 5000 and multi_leaf > 200 and multi_pod > 500, (checked, multi_leaf, multi_pod)


def _pairs(n: int):
    from fattorus.analysis import patterns

    src = np.arange(n)
    return patterns.Traffic(src, (src + 1) % n, np.full(n, 1.0))


def test_same_seed_same_run_and_the_seed_matters(jobs, runs, on_cpu):
    # The module's run under ``to`` (:func:`runs`: seed 3) made again with seed 3 and with
    # seed 2, on the CPU device as the module's runs, whose compilations (solves, pattern
    # draws, hop sums: JAX keys them by shape and default device) the same jobs reuse.
    ft, out = runs
    again = [replay.replay(jobs, ft, "to", "easy", runtime_model=commtime.ModelRuntimes(ft, MIX, 0.5, seed)).jobs
             for seed in (3, 2)]
    assert out["to"][0].jobs["runtime_s"].to_list() == again[0]["runtime_s"].to_list()
    assert out["to"][0].jobs["runtime_s"].to_list() != again[1]["runtime_s"].to_list()


class _NoShortcuts(commtime.ModelRuntimes):
    """The model with every job solved with every running job: no one-router shortcut, no
    ideal-time cache, no restriction to the jobs sharing links with the starting one, no
    renamed-ideal shortcut."""

    def _sharing(self, j, others):
        return others

    def _renamed(self, a, b):
        return False

    def _renamed_placement(self, nodes, ideal_nodes):
        return False

    def bind(self, prepared):
        hook = super().bind(prepared)
        self._local_ok = False
        return hook

    def _slowdown(self, j, nodes, ideal_nodes, running):
        self._ideal.clear()
        return super()._slowdown(j, nodes, ideal_nodes, running)


def _assert_same_runs(a, b, fast, slow):
    """Runs ``a`` (model ``fast``) and ``b`` (model ``slow``) started and ended every job alike,
    with the same slowdowns, bit for bit (the runs are made on the CPU device: :func:`on_cpu`)."""
    assert a["start_s"].equals(b["start_s"]) and a["end_s"].equals(b["end_s"])
    assert np.array_equal(fast.slowdown, slow.slowdown, equal_nan=True)


@pytest.mark.parametrize("pol", ["to", "ta"])
def test_shortcuts_change_no_runtime(jobs, runs, pol, on_cpu):
    # The one-router shortcut (slowdown 1 without a solve, flows left out of later solves),
    # the per-(pattern, size) ideal cache of key-free patterns, solving only the jobs
    # connected to the starting one through shared links, and slowdown 1 without a solve for
    # a job alone whose placement is the ideal one with links renamed are exact: every start,
    # end and slowdown equals the run that solves every job with every running job. The run
    # with the shortcuts is the module's (:func:`runs`: the same jobs, model and seed, on the CPU).
    ft, out = runs
    assert commtime._local_routes_use_node_links_only(ft)
    result, fast = out[pol]
    slow = _NoShortcuts(ft, MIX, comm_fraction=0.5, seed=3)
    a = result.jobs
    b = replay.replay(jobs, ft, pol, "easy", runtime_model=slow).jobs
    _assert_same_runs(a, b, fast, slow)
    one_router = [len(np.unique(np.asarray(x) // ft.nodes_per_leaf)) == 1 for x in a["alloc"].to_list()]
    assert 0 < sum(one_router) < len(one_router) and fast._ideal  # both shortcuts were taken
    assert fast.renamed > 0 and slow.renamed == 0
    if pol == "to":  # a job decided without its traffic had its flows built for a later one
        assert fast.built_late > 0


@pytest.mark.parametrize("machine,pol", [("torus8", "prism"), ("dragonfly_small", "compact")])
def test_shortcuts_change_no_runtime_on_other_families(machine, pol, on_cpu):
    """The same on a torus and a dragonfly (families without a node-level renaming rule:
    the route-level one and the others still apply), on three hours of Thunder: ~140 jobs, with
    jobs slowed (and sped up) by others on both machines and renamed placements on the
    dragonfly, so a shortcut that changed a number would show."""
    from fattorus import topology

    topo = topology.load(machine)
    log = workload.load(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz", cores_per_node=4).jobs
    scaled, _ = workload.scale_nodes(log, 1, topo.n_nodes)
    day = workload.first_days(scaled, 0.125, 10.0)
    fast = commtime.ModelRuntimes(topo, MIX, comm_fraction=0.5, seed=1)
    slow = _NoShortcuts(topo, MIX, comm_fraction=0.5, seed=1)
    a = replay.replay(day, topo, pol, "easy", runtime_model=fast).jobs
    b = replay.replay(day, topo, pol, "easy", runtime_model=slow).jobs
    _assert_same_runs(a, b, fast, slow)
    assert fast.built_late == 0
    # A torus's ideal is the best of several placements (for jobs above two nodes): a placement
    # renamed from one of them need not be the best, so no renaming shortcut is taken there
    # (ModelRuntimes._slowdown).
    assert (fast.renamed == 0) if len(topo.ideal_placements(8)) > 1 else (fast.renamed > 0)


def test_same_network_is_a_renaming_of_links():
    """The renaming test behind the shortcut, against hand-made cases: a consistent one-to-one
    renaming is the same network; two links merged into one, one link split in two, another
    empty slot or another capacity is not."""
    cap = np.array([1.0, 1.0, 1.0, 1.0, 2.0])
    a = np.array([[0, 1], [1, 2], [2, -1]])
    assert commtime.same_network(a, np.array([[3, 0], [0, 1], [1, -1]]), cap)  # 0->3, 1->0, 2->1
    assert not commtime.same_network(a, np.array([[3, 0], [0, 0], [0, -1]]), cap)  # 1 and 2 merged
    assert not commtime.same_network(a, np.array([[3, 0], [1, 2], [2, -1]]), cap)  # link 1 split
    assert not commtime.same_network(a, np.array([[3, 0], [0, 1], [-1, 1]]), cap)  # other slots
    assert not commtime.same_network(a, np.array([[3, 4], [4, 1], [1, -1]]), cap)  # capacity 2
    # And what it buys: renamed networks give the same rates, bit for bit.
    from fattorus.kernels.maxmin import maxmin_rates
    b = np.array([[3, 0], [0, 1], [1, -1]])
    ra = np.asarray(maxmin_rates(a, np.asarray(cap, np.float32)).rate)
    rb = np.asarray(maxmin_rates(b, np.asarray(cap, np.float32)).rate)
    assert np.array_equal(ra, rb) and np.allclose(ra, [0.5, 0.5, 0.5])


def test_fat_tree_renamed_placements_are_renamed_networks():
    """``FatTree.routes_renamed`` against brute force: where it says yes, the D-mod-k routes of
    every ordered pair of the two placements are one network renamed (``same_network``).
    Candidates: the ideal placement shifted, its leaves permuted, each leaf's nodes reordered,
    or each rank moved to a node of the same L2 index and core offset (ranks in another order
    now and then); it must say yes to some and no to others."""
    from fattorus.topology import fattree_routing as fr

    ft = fattree.load("ft6x6")
    k, S, C = ft.nodes_per_leaf, ft.l2_per_pod, fr.cores_per_l2(ft)
    rng = np.random.default_rng(0)
    cap = np.asarray(ft.link_bandwidth)
    every = np.arange(ft.n_nodes)
    answers = {True: 0, False: 0}
    said_yes = []  # (trial, ideal, nodes) of each yes, checked below
    for trial in range(800):
        n = int(rng.integers(2, 30))
        ideal = ft.ideal_allocation(n)
        kind = trial % 4
        if kind == 3:  # each leaf's nodes in an order of its own
            perms = np.array([rng.permutation(k) for _ in range(ft.n_nodes // k)])
            nodes = (ideal // k) * k + perms[ideal // k, ideal % k]
        elif kind == 0:
            step = int(rng.choice([1, S, k, ft.nodes_per_pod]))
            nodes = (ideal + step * int(rng.integers(0, ft.n_nodes))) % ft.n_nodes
        elif kind == 1:
            leaf = rng.permutation(ft.n_nodes // k)
            nodes = leaf[ideal // k] * k + ideal % k
        else:
            free, nodes = np.ones(ft.n_nodes, bool), []
            for x in ideal:
                same = every[free & (every % S == x % S) & ((every // S) % C == (x // S) % C)]
                nodes.append(int(rng.choice(same)))
                free[nodes[-1]] = False
            nodes = np.array(nodes)
        if rng.random() < 0.3:  # ranks in another order
            order = rng.permutation(n)
            ideal, nodes = ideal[order], nodes[order]
        said = ft.routes_renamed(ideal, nodes)
        answers[said] += 1
        if said:
            said_yes.append((trial, ideal, nodes))
    # The routes of every yes, both placements, from one call (``routes`` compiles once per
    # batch shape: one compilation instead of one per job size), then each yes checked alone.
    src, dst = zip(*(np.meshgrid(x, x, indexing="ij") for _, ideal, nodes in said_yes for x in (ideal, nodes)))
    routes = np.asarray(ft.routes(np.concatenate([s.ravel() for s in src]), np.concatenate([d.ravel() for d in dst])))
    routes = np.split(routes, np.cumsum([s.size for s in src])[:-1])
    for k, (trial, ideal, nodes) in enumerate(said_yes):
        assert commtime.same_network(routes[2 * k], routes[2 * k + 1], cap), (trial, ideal, nodes)
    assert answers[True] > 30 and answers[False] > 30
    assert not ft.routes_renamed(np.arange(3), np.arange(4))


def test_fat_tree_renamed_check_compiled_is_the_rule_in_numpy():
    """The compiled check (``fattree_host_routes.routes_renamed``) against its rule written in
    NumPy here: the same L2 index ``node % S`` and core offset ``(node // S) % C`` pair by
    pair, leaves and pods one-to-one. Candidates near the ideal placement (one node moved,
    leaves swapped, ranks reordered, nodes swapped for others of the same L2 index and core
    offset in the first leaves, which may put two leaves' nodes on one) so that both answers
    come often; an id off the machine
    is left to the NumPy check (``None``), which ``FatTree.routes_renamed`` then gives."""
    from fattorus.topology import fattree_host_routes, fattree_routing as fr
    from fattorus.topology.base import one_to_one

    ft = fattree.load("ft6x6")
    k, p, S, C = ft.nodes_per_leaf, ft.nodes_per_pod, ft.l2_per_pod, fr.cores_per_l2(ft)
    rng = np.random.default_rng(4)
    answers = {True: 0, False: 0}
    for trial in range(600):
        n = int(rng.integers(1, 40))
        a = ft.ideal_allocation(n).astype(np.int64)
        b = a.copy()
        kind = trial % 4
        if kind == 3:  # a few nodes each swapped for one of the same L2 index and core offset: leaves may collapse
            a = rng.choice(ft.n_nodes, int(rng.integers(2, 5)), replace=False).astype(np.int64)
            every = np.arange(ft.n_nodes)
            b = np.array([rng.choice(every[(every % S == x % S) & ((every // S) % C == (x // S) % C)
                                           & (every // k < 4)]) for x in a])
        elif kind == 0:
            b[rng.integers(0, n)] = rng.integers(0, ft.n_nodes)
        elif kind == 1:
            leaf = rng.permutation(ft.n_nodes // k)
            b = leaf[a // k] * k + a % k
        else:
            b = (a + k * int(rng.integers(0, ft.n_nodes // k))) % ft.n_nodes
        if rng.random() < 0.3:
            order = rng.permutation(len(a))
            a, b = a[order], b[order]
        want = bool(np.array_equal(a % S, b % S) and np.array_equal((a // S) % C, (b // S) % C)
                    and one_to_one(a // k, b // k) and one_to_one(a // p, b // p))
        assert fattree_host_routes.routes_renamed(ft, a, b) is want, (trial, a, b)
        assert ft.routes_renamed(a, b) is want
        answers[want] += 1
    assert answers[True] > 50 and answers[False] > 50
    off, other = np.array([0, ft.n_nodes], np.int64), np.array([0, ft.n_nodes + 1], np.int64)
    assert fattree_host_routes.routes_renamed(ft, off, off) is None
    assert ft.routes_renamed(off, off) is True and ft.routes_renamed(off, other) is False  # the rule, in NumPy


class _Stand_in(types.SimpleNamespace):
    """A topology's fields with some changed: hashable by identity, as the compiled routing
    (``kernels.routes.route_links``) takes its topology as a static argument."""

    __hash__ = object.__hash__
    __eq__ = object.__eq__


def test_one_router_routes_stay_on_node_links_in_every_family():
    """The shortcut's precondition, by brute force: every ordered pair of nodes on one router
    (leaf switch, Gemini, Aries) routes over node links (class 0) only, all of one bandwidth;
    and the check says no where either fails."""
    from fattorus import topology
    from fattorus.kernels.routes import route_links

    rng = np.random.default_rng(0)
    for name in ("cab", "torus8", "dragonfly_small", "edison"):
        topo = topology.load(name)
        router = np.asarray(topo.group_of(0, np.arange(topo.n_nodes)))
        cls, bw = np.asarray(topo.link_class), np.asarray(topo.link_bandwidth)
        assert commtime._local_routes_use_node_links_only(topo), name
        # Every ordered pair of 40 routers' nodes, routed by the family's ``routes`` compiled
        # (``kernels.routes.route_links``: the torus's and the dragonfly's ``routes`` are eager
        # JAX, which compiles every operation once per shape) in batches of one length, that of
        # the check's own call (one pair per router of two or more nodes): its compilation.
        first = np.flatnonzero(np.r_[True, router[1:] != router[:-1]])
        second = np.minimum(first + 1, topo.n_nodes - 1)
        batch = int(((first + 1 < topo.n_nodes) & (router[second] == router[first])).sum())
        src, dst = [], []
        for r in rng.choice(np.unique(router), size=min(40, len(np.unique(router))), replace=False):
            nodes = np.flatnonzero(router == r)
            s, d = (x.ravel() for x in np.meshgrid(nodes, nodes, indexing="ij"))
            src.append(s[s != d])
            dst.append(d[s != d])
        src, dst = np.concatenate(src), np.concatenate(dst)
        size = -(-len(src) // batch) * batch  # padded with the first pairs again
        links = np.concatenate([np.asarray(route_links(topo, a, b)) for a, b in
                                zip(np.resize(src, size).reshape(-1, batch), np.resize(dst, size).reshape(-1, batch))])
        links = links[:len(src)]
        assert (links >= 0).any(axis=1).all(), name  # node -> router -> node
        assert (cls[links[links >= 0]] == 0).all(), name
        assert np.ptp(bw[cls == 0]) == 0, name
        # Where the precondition fails, the check must say so. One stand-in for both cases (its
        # fields changed in between): the check's compiled routing keys on it, and compiles once.
        uneven = bw.astype(float).copy()
        uneven[np.flatnonzero(cls == 0)[-1]] *= 2
        stand_in = _Stand_in(**{k: getattr(topo, k) for k in ("group_of", "n_nodes", "routes", "host_routes")},
                             link_class=cls, link_bandwidth=uneven)
        assert not commtime._local_routes_use_node_links_only(stand_in), name
        shared = cls.copy()
        shared[cls == 0] = 1
        stand_in.link_class, stand_in.link_bandwidth = shared, bw
        assert not commtime._local_routes_use_node_links_only(stand_in), name
        # Without a host router (the Topology default) the check routes with the compiled one.
        stand_in.host_routes = lambda src, dst: None
        stand_in.link_class, stand_in.link_bandwidth = cls, uneven
        assert not commtime._local_routes_use_node_links_only(stand_in), name
        stand_in.link_class, stand_in.link_bandwidth = cls, bw
        assert commtime._local_routes_use_node_links_only(stand_in), name


def test_compact_lists_written_back_as_padded_rows():
    """The model keeps long routes as compact lists (Blue Waters); its renamed check writes
    them back as padded rows: the routes they came from (padding at each row's end, as the
    host routers pad), and padded routes pass through."""
    from fattorus.kernels.maxmin_compiled import compact_routes

    rng = np.random.default_rng(6)
    lengths = rng.integers(0, 9, 200)
    routes = np.full((200, 8), -1, np.int32)
    for f, n in enumerate(lengths):
        routes[f, :n] = rng.integers(0, 500, n)
    assert np.array_equal(commtime._padded(compact_routes(routes), 8), routes)
    assert commtime._padded(routes, 8) is routes
    assert np.array_equal(commtime._crossing_ids(compact_routes(routes)), routes[routes >= 0])



def test_a_slowdown_of_float32_rounding_cuts_but_is_no_kill(monkeypatch):
    """A job nothing slows reads a slowdown of 1 + ~1e-7 (a ratio of float32 step times): with
    its estimate equal to its logged run time it was cut and counted killed (session 44's
    exploratory run: 39 kills of which 5 such). It is still cut at its estimate (never past it),
    but not counted; one slowed by 1 % is."""
    ft = fattree.load("ft6")
    model = commtime.ModelRuntimes(ft, {"random_pairs": 1.0}, 0.5, 0)
    jobs = pl.DataFrame({"job_id": [1, 2], "submit_s": [0.0, 0.0], "runtime_s": [100.0, 100.0],
                         "requested_s": [100.0, 100.0], "nodes": pl.Series([3, 3], dtype=pl.Int32),
                         "status": pl.Series([1, 1], dtype=pl.Int32)})
    slow = {0: 1.0000001117587156, 1: 1.01}
    monkeypatch.setattr(commtime.ModelRuntimes, "_slowdown", lambda self, j, *a: slow[j])
    monkeypatch.setattr(commtime.ModelRuntimes, "_one_router", lambda self, nodes: False)
    result = replay.replay(jobs, ft, "to", "easy", runtime_model=model)
    t = result.jobs.sort("job_id")
    assert t["runtime_s"].to_list() == [100.0, 100.0]  # both cut at the estimate
    assert model.killed == 1 and result.summary["runtime_model"]["killed_at_estimate"] == 1


def test_kills_of_jobs_without_a_requested_time_are_counted_apart(monkeypatch):
    """A job the log gives no requested time (-1, null) plans with its logged run time, so any
    slowdown cuts it at a time limit the log never stated (session 46's exploratory run: 14 of
    17 kills in a week of Atlas on Cab). summary.json says how many of the kills are such jobs:
    here by hand, jobs 1 and 3 have no requested time, 2 and 3 are slowed past their estimate."""
    ft = fattree.load("ft6")
    model = commtime.ModelRuntimes(ft, {"random_pairs": 1.0}, 0.5, 0)
    jobs = pl.DataFrame({"job_id": [1, 2, 3], "submit_s": [0.0, 0.0, 0.0], "runtime_s": [100.0, 100.0, 100.0],
                         "requested_s": [None, 120.0, None], "nodes": pl.Series([3, 3, 3], dtype=pl.Int32),
                         "status": pl.Series([1, 1, 1], dtype=pl.Int32)})
    slow = {0: 1.0, 1: 1.6, 2: 1.2}  # factors 1.0, 1.3 (past 120 s), 1.1 (past 100 s)
    monkeypatch.setattr(commtime.ModelRuntimes, "_slowdown", lambda self, j, *a: slow[j])
    monkeypatch.setattr(commtime.ModelRuntimes, "_one_router", lambda self, nodes: False)
    result = replay.replay(jobs, ft, "to", "easy", runtime_model=model)
    assert result.jobs.sort("job_id")["runtime_s"].to_list() == [100.0, 120.0, 100.0]
    summary = result.summary["runtime_model"]
    assert (summary["killed_at_estimate"], summary["killed_without_requested_time"]) == (2, 1)


def test_kills_of_jobs_that_ran_to_their_limit_in_the_log_are_counted_apart(monkeypatch):
    """A job that ran to its requested time in the log (a TIMEOUT there) has no slack left: any
    slowdown cuts it (session 47's exploratory run: 299 of 380 kills on an operator's sacct
    log). By hand: job 1 ran 100 of 100 s requested, job 2 100 of 150 s, job 3 none requested;
    all slowed by factor 1.2: jobs 1 and 3 are cut, job 2 is not."""
    ft = fattree.load("ft6")
    model = commtime.ModelRuntimes(ft, {"random_pairs": 1.0}, 0.5, 0)
    jobs = pl.DataFrame({"job_id": [1, 2, 3], "submit_s": [0.0, 0.0, 0.0], "runtime_s": [100.0, 100.0, 100.0],
                         "requested_s": [100.0, 150.0, None], "nodes": pl.Series([3, 3, 3], dtype=pl.Int32),
                         "status": pl.Series([1, 1, 1], dtype=pl.Int32)})
    monkeypatch.setattr(commtime.ModelRuntimes, "_slowdown", lambda self, j, *a: 1.4)  # factor 1.2
    monkeypatch.setattr(commtime.ModelRuntimes, "_one_router", lambda self, nodes: False)
    result = replay.replay(jobs, ft, "to", "easy", runtime_model=model)
    assert result.jobs.sort("job_id")["runtime_s"].to_list() == [100.0, 120.0, 100.0]
    summary = result.summary["runtime_model"]
    assert (summary["killed_at_estimate"], summary["killed_without_requested_time"],
            summary["killed_at_logged_limit"]) == (2, 1, 1)
    from fattorus.app.sweep import _model_part

    assert "2 cut at their estimate (1 with no requested time in the log, 1 that ran to their limit in the log)" in \
        _model_part({"runtime_model": summary})
