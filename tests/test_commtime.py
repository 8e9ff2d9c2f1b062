"""Job step times and slowdowns from the flow model (fattorus.analysis.commtime)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fattorus.analysis import commtime, patterns
from fattorus.analysis.commtime import Job
from fattorus.kernels.maxmin import maxmin_rates, maxmin_rates_numpy
from compact_lists import padded as padded_routes


def _pairs(n: int, nbytes: float = 1.0) -> patterns.Traffic:
    """Rank i sends to rank (i + 1) mod n."""
    src = np.arange(n)
    return patterns.Traffic(src, (src + 1) % n, np.full(n, nbytes))


#: Pairs per ``topo.routes`` call of :func:`_reference_step` (the routing compiles once per shape).
ROUTE_BATCH = 4096


def _reference_step(topo, jobs: list[Job]) -> np.ndarray:
    """Each job's step time with ``jobs`` communicating together, from the definition: the
    NumPy progressive filling (``maxmin_rates_numpy``, not the solvers commtime uses) over the
    D-mod-k routes of every flow between two nodes, the slowest flow's ``bytes / rate``."""
    src, dst, nbytes, owner = [], [], [], []
    for j, job in enumerate(jobs):
        s, d, b = patterns.to_nodes(job.alloc, job.traffic)
        keep = s != d
        src.append(s[keep]), dst.append(d[keep]), nbytes.append(b[keep]), owner.append(np.full(keep.sum(), j))
    src, dst, nbytes, owner = (np.concatenate(x) for x in (src, dst, nbytes, owner))
    # Routed by ``topo.routes`` (JAX, not the host router commtime uses) in batches of
    # ROUTE_BATCH pairs, the last padded with node 0 to itself (no link): one shape to compile.
    pad = -len(src) % ROUTE_BATCH
    s, d = np.r_[src, np.zeros(pad, src.dtype)], np.r_[dst, np.zeros(pad, dst.dtype)]
    routes = np.concatenate([np.asarray(topo.routes(s[i:i + ROUTE_BATCH], d[i:i + ROUTE_BATCH]))
                             for i in range(0, len(s), ROUTE_BATCH)])
    rate, _ = maxmin_rates_numpy(routes[:len(src)], np.asarray(topo.link_bandwidth, np.float64))
    out = np.zeros(len(jobs))
    np.maximum.at(out, owner, nbytes / rate)
    return out


def _ta_jobs(topo, sizes: list[int]) -> list[np.ndarray]:
    """``ta``'s placements of ``sizes`` in order on an empty ``topo`` (each kept): the later
    ones land on leaves and pods away from node 0."""
    from fattorus.sched import policy, state

    ta, machine = policy.make("ta", topo), state.empty(topo)
    out = []
    for n in sizes:
        placed = np.asarray(ta.place(machine, n))
        state.allocate(machine, placed, ta.footprint(placed))
        out.append(placed)
    return out


@pytest.mark.parametrize("name, sizes", [("ft6x6", [5, 9, 2, 12, 3, 7]), ("cab", [18, 100, 40, 7, 400, 36])])
def test_a_job_alone_on_an_isolated_partition_has_slowdown_one(name, sizes):
    """The issue's rule, off node 0: jobs placed by ``ta`` one after another (within a leaf,
    on whole leaves of a pod, on whole pods elsewhere on the machine), each alone with each
    of the four patterns, have slowdown 1 — checked against the definition (step time alone
    over the least step time alone on ``ideal_placements``, both by the NumPy filling) — and
    so do they all together (``ta`` partitions share no link). On random nodes some of the
    same jobs are slower than the ideal by the same definition: the check can tell."""
    from fattorus import topology

    topo = topology.load(name)
    allocs = _ta_jobs(topo, sizes)
    assert sum(a.min() > 0 for a in allocs) == len(allocs) - 1  # all but the first away from node 0
    assert any(len(np.unique(a // topo.nodes_per_pod)) > 1 for a in allocs)  # a job on several pods
    key, rng = jax.random.PRNGKey(3), np.random.default_rng(0)
    scattered_slower = 0
    for k, pattern in enumerate(["stencil4d", "unstructured_mesh", "random_pairs", "grid_a2a"]):
        jobs = [Job(a, patterns.make(pattern, jax.random.fold_in(key, k), len(a))) for a in allocs]
        ideal = np.array([min(_reference_step(topo, [job._replace(alloc=p)])[0]
                              for p in topo.ideal_placements(len(job.alloc))) for job in jobs])
        alone = np.array([_reference_step(topo, [job])[0] for job in jobs])
        np.testing.assert_allclose(alone / ideal, 1.0, rtol=1e-6)  # the definition, independently
        np.testing.assert_allclose(_reference_step(topo, jobs) / ideal, 1.0, rtol=1e-6)  # together
        for j, job in enumerate(jobs):
            got = commtime.slowdowns(topo, [job])
            assert got.slowdown[0] == pytest.approx(1.0, rel=1e-6)
            assert got.ideal[0] == pytest.approx(ideal[j], rel=1e-5)
        np.testing.assert_allclose(commtime.slowdowns(topo, jobs).slowdown, 1.0, rtol=1e-6)
        # The same traffic on random nodes (seeded): by the same definition some jobs slow down
        # (D-mod-k collisions), and commtime agrees.
        for j, job in enumerate(jobs):
            moved = job._replace(alloc=rng.permutation(topo.n_nodes)[:len(job.alloc)])
            want = _reference_step(topo, [moved])[0] / ideal[j]  # the same ideal (computed above)
            assert commtime.slowdowns(topo, [moved]).slowdown[0] == pytest.approx(want, rel=1e-5)
            scattered_slower += want > 1.01
    assert scattered_slower >= 2


def test_no_job_and_a_node_past_the_machine(ft6x6):
    """No job: no step time (was a concatenate error); a node past the machine is named as
    such (it was named as a link id past the links)."""
    assert commtime.step_times(ft6x6, []).shape == (0,)
    with pytest.raises(ValueError, match=r"jobs\[1\]\.alloc: topology 'ft6x6': node id 300 is not one of its 54"):
        commtime.step_times(ft6x6, [Job(np.array([0, 1]), _pairs(2)), Job(np.array([2, 300]), _pairs(2))])


def test_jobs_on_disjoint_leaves_do_not_slow_each_other(ft6):
    # ft6: leaves of 3 nodes. Each job's ring stays inside its own leaf.
    jobs = [Job(np.array([0, 1, 2]), _pairs(3)), Job(np.array([3, 4, 5]), _pairs(3)), Job(np.array([9, 10]), _pairs(2))]
    got = commtime.slowdowns(ft6, jobs)
    assert np.allclose(got.together, got.alone) and np.allclose(got.slowdown, 1.0)


def test_jobs_crossing_the_same_torus_link_slow_each_other_by_hand():
    # torus4 (4x4x4 Geminis, 2 nodes each, x:y:z = 2:1:2, node links 2): job A is nodes 0 <-> 32,
    # job B nodes 1 <-> 33. Nodes 0, 1 sit on router (0,0,0), nodes 32, 33 on (1,0,0), so each
    # job's two flows (4 bytes each way) cross one x link each way, the same one for both jobs.
    # Alone: rate 2, 2 time units; ideal (both ranks on one router): 2; together the x links
    # are halved: 1 each, 4 units, slowdown 2.
    from fattorus import topology

    torus = topology.load("torus4")
    a, b = Job(np.array([0, 32]), _pairs(2, 4.0)), Job(np.array([1, 33]), _pairs(2, 4.0))
    # The routes the model takes (the host router: the eager JAX one compiles every operation).
    ra, rb = (torus.host_routes(j.alloc, j.alloc[::-1]) for j in (a, b))
    shared = set(ra[ra >= 0]) & set(rb[rb >= 0])
    assert len(shared) == 2 and all(torus.link_class_names[torus.link_class[e]] in ("x+", "x-") for e in shared)
    got = commtime.slowdowns(torus, [a, b])
    assert np.allclose(got.alone, 2.0) and np.allclose(got.ideal, 2.0)
    assert np.allclose(got.together, 4.0) and np.allclose(got.slowdown, 2.0)


def test_parallel_cables_of_a_router_pair_share_their_traffic_by_hand():
    # dragonfly_small: routers 0 and 4 (rows 0 and 1 of one column) are joined by 2 black
    # cables of 5.25; node links are 5.25. Jobs A (nodes 0 <-> 8) and B (1 <-> 9) each send 4
    # bytes each way; (src + dst) mod 2 puts both jobs' flows on the same cable. machines.md: a
    # router pair joined by k cables has k times the bandwidth, so the two flows each way
    # share 10.5 and each runs at its node link's 5.25: 4 / 5.25 time units, no slowdown. (Each
    # hop on its own cable, they would share 5.25: twice as long.)
    from fattorus import topology

    t = topology.load("dragonfly_small")
    a, b = Job(np.array([0, 8]), _pairs(2, 4.0)), Job(np.array([1, 9]), _pairs(2, 4.0))
    # The routes the model takes (the host router: the eager JAX one compiles every operation).
    ra, rb = (t.host_routes(j.alloc, j.alloc[::-1]) for j in (a, b))
    shared = sorted(set(ra[ra >= 0]) & set(rb[rb >= 0]))  # the routes name the same black cables
    cls = np.asarray(t.link_class)
    assert len(shared) == 2 and all(t.link_class_names[cls[e]] == "black" for e in shared)
    first, count = t.link_bundles()
    assert all(count[e] == 2 for e in shared)
    np.testing.assert_allclose(commtime.step_times(t, [a, b]), 4.0 / 5.25, rtol=1e-6)
    np.testing.assert_allclose(commtime.slowdowns(t, [a, b]).slowdown, 1.0, rtol=1e-6)
    # The model's capacities: each bundle's first cable holds the pair's 10.5.
    cap = commtime.solver_capacity(t)
    assert all(cap[first[e]] == pytest.approx(10.5) for e in shared)


def test_two_jobs_spread_over_pods_share_links_and_slow_down(ft6):
    # Jobs 0<->9 and 1<->12 (4 bytes each way): D-mod-k sends 0->9 and 1->12 up the same
    # uplink of leaf 0 (9 = 12 mod 3), shared by the two flows: 1/2 each, 8 time units instead
    # of 4 (every link has bandwidth 1). Alone, and in one leaf (ideal), each takes 4.
    a, b = Job(np.array([0, 9]), _pairs(2, 4.0)), Job(np.array([1, 12]), _pairs(2, 4.0))
    route_a, route_b = np.asarray(ft6.routes(np.array([0, 1]), np.array([9, 12])))
    assert len(set(route_a[route_a >= 0]) & set(route_b[route_b >= 0])) == 1  # exactly one shared link
    got = commtime.slowdowns(ft6, [a, b])
    assert np.allclose(got.alone, 4.0) and np.allclose(got.ideal, 4.0)
    assert np.allclose(got.together, 8.0) and np.allclose(got.slowdown, 2.0)


def test_max_min_is_not_monotone_a_competing_flow_can_speed_another_up():
    # Links A (cap 1) and B (cap 2). x crosses A and B, y crosses B. Alone: x = 1 (A full),
    # y = 1. Adding z on A: x = z = 1/2, so y takes 3/2 — y is faster beside z (documented).
    # Before, z is there but inactive (rate 0, on no link): one shape for both solves.
    routes = jnp.array([[0, 1], [1, -1], [0, -1]])
    before = maxmin_rates(routes, jnp.array([1.0, 2.0]), active=jnp.array([True, True, False])).rate
    after = maxmin_rates(routes, jnp.array([1.0, 2.0]), active=jnp.array([True, True, True])).rate
    assert np.allclose(before, [1, 1, 0]) and np.allclose(after, [0.5, 1.5, 0.5])


def test_runtime_factor_by_hand_and_bad_fraction():
    assert np.allclose(commtime.runtime_factor(np.array([1.0, 2.0, 3.0]), 0.3), [1.0, 1.3, 1.6])
    with pytest.raises(ValueError, match="communication fraction"):
        commtime.runtime_factor(np.array([1.0]), 1.5)


def test_real_patterns_on_a_fat_tree_keep_every_time_positive(ft6x6):
    key = jax.random.PRNGKey(0)
    rng = np.random.default_rng(0)
    perm = rng.permutation(ft6x6.n_nodes)
    jobs = [Job(perm[:16], patterns.make("stencil4d", key, 16)),
            Job(perm[16:48], patterns.make("random_pairs", key, 32))]
    got = commtime.slowdowns(ft6x6, jobs)
    assert np.all(got.together > 0) and np.all(np.isfinite(got.slowdown)) and np.all(got.slowdown >= 1.0)


def test_on_a_torus_the_ideal_is_the_best_of_its_compact_placements():
    """The model's ideal on a torus is the least step time alone over the L1 ball and the
    first nodes of every ordering (``Torus3D.ideal_placements``): a job alone on any of them
    has slowdown >= 1 and on the best exactly 1 (brute force over the placements). With the
    ball alone, a job on an ``O2`` slab ran several times faster than "ideal"."""
    from fattorus import topology

    torus = topology.load("torus8")
    key = jax.random.PRNGKey(5)
    for n in (6, 128):  # a job of a few routers and one of an eighth of the machine
        places = torus.ideal_placements(n)
        assert np.array_equal(places[0], torus._ball(n))  # the APH ideal may be a box; the model's list is as before
        assert any(np.array_equal(p, torus.ordering("O2")[:n]) for p in places)
        assert all(len(np.unique(p)) == n for p in places) and len(places) >= 3
        for name in ("stencil4d", "random_pairs", "subcomm_a2a"):
            traffic = patterns.make(name, key, n)
            alone = [commtime.step_times(torus, [Job(p, traffic)])[0] for p in places]
            got = [commtime.slowdowns(torus, [Job(p, traffic)]).slowdown[0] for p in places]
            np.testing.assert_allclose(got, np.array(alone) / min(alone), rtol=1e-12)
            assert min(got) == 1.0
    # Why: on this torus the ball is not the best placement for some of these patterns.
    traffic = patterns.make("subcomm_a2a", key, 128)
    places = torus.ideal_placements(128)
    alone = [commtime.step_times(torus, [Job(p, traffic)])[0] for p in places]
    assert alone[0] > min(alone)


def test_long_routes_are_solved_from_compact_crossings_with_the_same_numbers(monkeypatch, on_cpu):
    """On tori with long routes (>= SPARSE_ROUTE_SLOTS slots) the model solves from compact
    crossing lists; step times and slowdowns are those of the padded routes bit for bit (the
    reference: the same calls with the switch off), and a replay's run times, whose goal
    solves are compiled (kernels.maxmin_compiled), those of the JAX goal solves from compact
    lists and from padded routes. Two scattered jobs (a structured and a random pattern,
    sharing links) make the slowdowns' solves: each solve compiles per flow and crossing
    count, and more jobs only add compilations of the same code. On the CPU device
    (``on_cpu``): a GPU's JAX solves sum in an order of their own (seen on an H200)."""
    from fattorus import topology
    from fattorus.analysis import interference
    from fattorus.topology.torus3d import Torus3D

    torus = Torus3D.from_config({"kind": "torus3d", "name": "torus10", "dims": [10, 10, 10], "nodes_per_router": 2,
                                 "bandwidth": [2.0, 1.0, 2.0]})
    assert torus.max_route_links >= commtime.SPARSE_ROUTE_SLOTS
    rng = np.random.default_rng(4)
    key = jax.random.PRNGKey(2)
    jobs = [Job(rng.choice(torus.n_nodes, n, replace=False), patterns.make(p, jax.random.fold_in(key, k), n))
            for k, (p, n) in enumerate([("stencil4d", 96), ("random_pairs", 200)])]
    sparse = commtime.slowdowns(torus, jobs)
    assert np.all(sparse.together > sparse.alone)  # the two jobs do share links
    # The replay's goal solves too: slowdowns of a short replay on the same torus (jobs of at
    # most 32 nodes: first fit still puts some beside each other, slowed, and each job size
    # is more solver compilations, in every run).
    from fattorus import workload
    from fattorus.sched import replay as rp

    wl, _ = workload.from_config({"name": "s", "path": None, "format": "synthetic", "cores_per_node": 1, "scale": 1,
                                  "window_start_days": 0, "window_days": None,
                                  "synthetic": {"seed": 1, "n_jobs": 10, "arrival_rate_per_h": 40.0, "max_nodes": 32,
                                                "size_dist": "pow2", "pow2_fraction": 0.75, "runtime_median_s": 1800.0,
                                                "runtime_sigma": 1.0, "runtime_max_s": 7200.0,
                                                "overestimate_max": 3.0, "n_users": 5}},
                                 machine_nodes=torus.n_nodes)
    table = workload.with_estimate(wl.jobs)

    def replayed(sparse_jax: bool | None = None):
        """Slowdowns and ends of the replay: its own (compiled) goal solves, or the JAX ones
        from compact lists (``sparse_jax`` True) or padded routes (False)."""
        model = commtime.ModelRuntimes(torus, interference.parse_mix(interference.DEFAULT_MIX), 0.3, 0)
        if sparse_jax is not None:
            def jax_step(flows, b, own):  # the model hands long routes over as compact lists
                r = padded_routes(*flows, torus.max_route_links) if isinstance(flows, tuple) else flows
                # Padded to 1,024 flows (the most here) with flows that cross no link (rate inf,
                # frozen before the first round: the same floats): one flow count to compile.
                pad = max(0, 1024 - len(r))
                r, b = np.r_[r, np.full((pad, r.shape[1]), -1, np.int32)], np.r_[b, np.zeros(pad)]
                return commtime.goal_step_time_jax(r, b, own, model._cap_f32, sparse=sparse_jax)

            model._step = jax_step
            model._first_round_step = lambda *_: None  # every start solved by JAX, none read off round one
        r = rp.replay(table, torus, "first_fit", "easy", runtime_model=model)
        return model.slowdown.copy(), r.jobs["end_s"].to_numpy(), model.first_round

    slow_compiled, end_compiled, read = replayed()
    slow_sparse, end_sparse, _ = replayed(sparse_jax=True)
    slow_padded, end_padded, _ = replayed(sparse_jax=False)
    assert read > 0  # the compiled run read some starts off their first filling round
    monkeypatch.setattr(commtime, "SPARSE_ROUTE_SLOTS", 10 ** 6)  # padded routes everywhere
    padded = commtime.slowdowns(torus, jobs)
    for name in ("alone", "ideal", "together", "slowdown"):
        assert np.array_equal(getattr(sparse, name), getattr(padded, name)), name
    for slow, end in ((slow_sparse, end_sparse), (slow_padded, end_padded)):
        assert np.array_equal(slow_compiled, slow, equal_nan=True) and np.array_equal(end_compiled, end)
    assert np.nanmax(slow_compiled) > 1  # first fit on a torus: some jobs do slow each other down


@pytest.mark.parametrize("completion", commtime.COMPLETIONS)
def test_compiled_step_times_are_the_jax_solver_s_on_every_machine(conf_topo, completion, on_cpu):
    """``step_times(..., compiled=True)`` (the compiled solver, the default on a CPU) against
    the JAX solver's step times (``compiled=False``), bit for bit: three jobs on random nodes
    sharing links, keyed patterns; steady and drained. Jobs of 8 nodes (110 flows, 4-24
    filling rounds): one flow bucket (128) for the JAX solves of both completions (a drain
    moves to a smaller bucket only from 256 flows up), so one compilation per machine; the
    solvers are compared on every machine's flows at 1,200 flows in test_maxmin_compiled.py."""
    rng = np.random.default_rng(21)
    key = jax.random.PRNGKey(5)
    n = min(8, conf_topo.n_nodes // 3)
    nodes = rng.permutation(conf_topo.n_nodes)[: 3 * n].reshape(3, n)
    jobs = [Job(nodes[k], patterns.make(p, jax.random.fold_in(key, k), n))
            for k, p in enumerate(["unstructured_mesh", "random_pairs", "stencil4d"])]
    route_ids, _, owner = commtime._flows(conf_topo, jobs)
    links = [set(route_ids[owner == j].ravel().tolist()) - {-1} for j in range(3)]
    assert links[0] & links[1] or links[0] & links[2] or links[1] & links[2]  # the jobs share links
    want = commtime.step_times(conf_topo, jobs, completion, compiled=False)
    got = commtime.step_times(conf_topo, jobs, completion, compiled=True)
    assert np.array_equal(got, want) and (got > 0).all()


@pytest.mark.parametrize("spec, words", [
    ({"A": {"pattern": "stencil4d", "nbytes": 0}}, "app_patterns.A: pattern 'stencil4d' with {'nbytes': 0}: nbytes must"),
    ({"B": {"pattern": "grid_a2a", "nbytes": float("nan")}}, "app_patterns.B: pattern 'grid_a2a'"),
    ({"C": {"pattern": "unstructured_mesh", "radius": 0}}, "app_patterns.C: pattern 'unstructured_mesh' with "
                                                            "{'radius': 0}: radius must be an integer >= 1"),
])
def test_a_pattern_parameter_the_generator_refuses_is_the_application_s_one_line_error(spec, words):
    """``speedup.app_patterns`` tries each entry on a 64-rank job: a message size <= 0 or NaN
    or a mesh radius of 0 (no flows at all) is refused there, naming the application."""
    with pytest.raises(ValueError) as err:
        commtime.parse_app_patterns(spec)
    assert words in str(err.value) and "\n" not in str(err.value)
