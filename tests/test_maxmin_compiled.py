"""The compiled solves (fattorus.kernels.maxmin_compiled): the goal solve of a
``speedup=model`` replay — hand-worked step times, the NumPy progressive filling (an
independent reference) on random problems, and the JAX goal solve it replaced, bit for bit,
on random problems, on the flows of jobs on every configured machine, and in a whole model
replay — and the full solve the fluid drain uses, against the NumPy filling and bit for bit
against the JAX solver."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from fattorus import workload
from fattorus.analysis import commtime, interference, patterns
from fattorus.kernels.maxmin import DUMP, bucket_size, flow_incidences, maxmin_rates, maxmin_rates_numpy
from fattorus.kernels.maxmin_compiled import (compact_routes, goal_step_time, goal_step_time_compact,
                                              maxmin_rates_compiled, new_workspace)
from fattorus.sched import replay
from fattorus.topology import fattree
from compact_lists import padded

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def _routes(*flows: list[int]) -> np.ndarray:
    width = max(len(f) for f in flows)
    return np.array([f + [-1] * (width - len(f)) for f in flows], np.int32)


def test_step_times_by_hand():
    # One link of 10 shared by three flows: 10/3 each; 20 bytes take 6.
    assert goal_step_time(_routes([0], [0], [0]), np.array([10.0, 20.0, 5.0]), 3, np.float32([10])) == \
        pytest.approx(6.0, rel=1e-6)
    # Link 0 (1) carries f0 and f1, link 1 (2) carries f1 and f2: rates 1/2, 1/2, 3/2.
    routes, cap = _routes([0], [0, 1], [1]), np.float32([1, 2])
    assert goal_step_time(routes, np.array([1.0, 2.0, 3.0]), 3, cap) == pytest.approx(4.0)  # f1: 2 / (1/2)
    assert goal_step_time(routes, np.array([1.0, 2.0, 3.0]), 1, cap) == pytest.approx(2.0)  # f0 alone: 1 / (1/2)
    # A flow with no link takes no time; no own flow: 0.
    assert goal_step_time(_routes([], [0]), np.array([5.0, 1.0]), 1, np.float32([1])) == 0.0
    assert goal_step_time(_routes([0]), np.array([5.0]), 0, np.float32([1])) == 0.0
    with pytest.raises(ValueError, match="workspace of 2 int32"):
        goal_step_time(_routes([0]), np.array([5.0]), 1, np.float32([1, 1]), new_workspace(3))


def test_a_flow_starved_by_a_capacity_of_0_takes_forever_as_in_jax(on_cpu):
    # Link 0 has capacity 0: flow 0 crosses it (rate 0), flow 1 does not (rate 2).
    routes, cap, nbytes = _routes([0, 1], [1]), np.float32([0, 2]), np.array([1.0, 1.0])
    for own, want in [(1, np.inf), (2, np.inf)]:
        assert goal_step_time(routes, nbytes, own, cap) == want
        assert goal_step_time_compact(*compact_routes(routes), nbytes, own, cap) == want
        assert commtime.goal_step_time_jax(routes, nbytes, own, cap) == want
    assert goal_step_time(_routes([1], [0]), nbytes, 1, cap) == pytest.approx(0.5)  # its own link alone


def test_compact_routes_keep_each_route_s_links_in_order():
    routes = _routes([3, -1, 1], [], [-1, -1, 0], [2, 2, 4])  # padding anywhere, a flow with none, a repeat
    lengths, links = compact_routes(routes)
    assert lengths.tolist() == [2, 0, 1, 3] and links.tolist() == [3, 1, 0, 2, 2, 4]
    np.testing.assert_array_equal(padded(lengths, links, 3), _routes([3, 1], [], [0], [2, 2, 4]))


def test_the_compact_goal_solve_refuses_lists_that_do_not_add_up():
    cap = np.float32([1, 1])
    one = np.array([1.0])
    assert goal_step_time_compact(np.array([2]), np.array([0, 1]), one, 1, cap) == pytest.approx(1.0)
    workspace = new_workspace(2)
    for lengths, links in [([3], [0, 1]), ([-1], []), ([2], [0, 2]), ([2], [-1, 0])]:
        with pytest.raises(ValueError, match="goal_step_time_compact"):
            goal_step_time_compact(np.array(lengths), np.array(links, np.int32), one, 1, cap, workspace)
        assert (workspace == -1).all()  # handed back as it came
    with pytest.raises(ValueError, match="goal_step_time_compact"):
        goal_step_time_compact(np.array([1, 1]), np.array([0, 1]), one, 1, cap)  # two flows, one byte count
    # Refused before the workspace is lent: bytes of the wrong shape or kind (a numba typing
    # error after it was filled left it dirty, and the next solve wrong), ids that are not
    # integers or do not fit in int32 (they would be truncated or wrap round), a fractional own.
    lengths, links = np.array([2]), np.array([0, 1])
    for args in [(lengths, links, np.ones((1, 1)), 1), (lengths, links, np.array(["a"]), 1),
                 (np.array([2.0]), links, one, 1), (lengths, np.array([0, 2**32]), one, 1), (lengths, links, one, 0.5)]:
        with pytest.raises(ValueError, match="goal_step_time_compact"):
            goal_step_time_compact(*args, cap, workspace)
        assert (workspace == -1).all()
    assert goal_step_time_compact(lengths, links, one, 1, cap, workspace) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="compact_routes: routes must fit"):
        compact_routes(np.array([[2**32]]))


def _padded(routes: np.ndarray, cap: np.ndarray, flows: int, slots: int, links: int) -> tuple[np.ndarray, np.ndarray]:
    """The same problem for the JAX solvers in one shape, ``(flows, slots)`` routes over
    ``links`` links (each at least the problem's own): more slots ``-1`` (no link), more flows
    with no link at the end (rate ``inf``, they freeze before the first round and add exact
    zeros), more links that no flow crosses (capacity 1). Every real flow crosses the same
    links in the same order, so the JAX solver adds the same floats (the tests below would
    tell); and JAX compiles once per shape, so one shape serves every problem instead of one
    compilation per problem size (compiling was most of this file's time)."""
    F, L = routes.shape
    out = np.full((max(flows, F), max(slots, L)), -1, np.int32)
    out[:F, :L] = routes
    return out, np.r_[cap, np.ones(max(0, links - len(cap)), cap.dtype)]


def _random_problem(rng: np.random.Generator, F: int, E: int, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Routes with padding anywhere (some flows with no link), byte counts, float32 capacities."""
    routes = np.where(rng.random((F, L)) < 0.6, rng.integers(0, E, (F, L)), -1).astype(np.int32)
    routes[rng.random(F) < 0.03] = -1
    nbytes = rng.choice([1.0, 3.0, 4.0, 16.0, 1e6], F)
    cap = rng.uniform(0.5, 10, E).astype(np.float32)
    return routes, nbytes, cap


@pytest.mark.parametrize("seed", range(3))  # each with 0 or 1, 2-3, ~10, ~40 and ~200 filling rounds
def test_random_problems_match_the_numpy_filling_and_the_jax_goal_solve_bit_for_bit(seed, on_cpu):
    rng = np.random.default_rng(seed)
    for F, E, L in [(1, 1, 1), (7, 3, 2), (60, 12, 4), (400, 50, 6), (2000, 300, 7)]:
        routes, nbytes, cap = _random_problem(rng, F, E, L)
        # Repeated links in one route (a torus route does not, a random one may) count once
        # per crossing in both solvers: keep them, both must agree anyway.
        ref, _ = maxmin_rates_numpy(routes, cap.astype(np.float64))
        # The JAX goal solve's problem in the shape of the largest (:func:`_padded`; the goal
        # solve pads the flows to a bucket itself, and its crossing lists, ``sparse``, to a
        # bucket of their count).
        jax_routes, jax_cap = _padded(routes, cap, 2000, 7, 300)
        jax_bytes = np.r_[nbytes, np.zeros(len(jax_routes) - F)]
        for own in sorted({1, F // 3, F}):
            if own == 0:
                continue
            got = goal_step_time(routes, nbytes, own, cap)
            workspace = new_workspace(E)  # lent to the solve and handed back as it came
            assert goal_step_time(routes, nbytes, own, cap, workspace) == got and (workspace == -1).all()
            lengths, links = compact_routes(routes)  # the same crossings as compact lists: the same bits
            assert goal_step_time_compact(lengths, links, nbytes, own, cap, workspace) == got and (workspace == -1).all()
            for sparse in (False, True):
                assert got == commtime.goal_step_time_jax(jax_routes, jax_bytes, own, jax_cap, sparse=sparse), \
                    (F, own, sparse)
            linked = (routes[:own] >= 0).any(axis=1)
            want = float((nbytes[:own][linked] / ref[:own][linked]).max()) if linked.any() else 0.0
            assert got == pytest.approx(want, rel=1e-4)


def test_full_rates_by_hand():
    # Link 0 (1) carries f0 and f1, link 1 (2) carries f1 and f2: rates 1/2, 1/2, 3/2; a flow
    # with no link: inf.
    got = maxmin_rates_compiled(_routes([0], [0, 1], [1], []), np.float32([1, 2]))
    assert got.dtype == np.float32 and got.tolist() == [0.5, 0.5, 1.5, np.inf]


@pytest.mark.parametrize("seed", range(4))
def test_full_rates_match_the_numpy_filling_and_the_jax_solver_bit_for_bit(seed, on_cpu):
    rng = np.random.default_rng(100 + seed)
    for F, E, L in [(1, 1, 1), (7, 3, 2), (60, 12, 4), (400, 50, 6), (3000, 300, 7)]:
        routes, _, cap = _random_problem(rng, F, E, L)
        workspace = new_workspace(E)
        got = maxmin_rates_compiled(routes, cap, workspace)
        assert (workspace == -1).all()  # handed back as it came
        ref, _ = maxmin_rates_numpy(routes, cap.astype(np.float64))
        np.testing.assert_allclose(got, ref, rtol=1e-4)
        # The JAX solver in stages (the default) and from crossing lists: the same floats, on
        # the problem in the shape of the largest (:func:`_padded`), its crossing lists padded
        # as ``flow_incidences`` pads them (flow 0, spare links ``-1 - k``) to one length.
        jax_routes, jax_cap = _padded(routes, cap, 3000, 7, 300)
        assert np.array_equal(got, np.asarray(maxmin_rates(jax_routes, jax_cap).rate)[:F])
        flow, link = flow_incidences(jax_routes, bucket=False)
        pad = bucket_size(3000 * 7) - len(flow)
        inc = (np.r_[flow, np.zeros(pad, np.int32)], np.r_[link, -1 - np.arange(pad, dtype=np.int32) % DUMP])
        assert np.array_equal(got, np.asarray(maxmin_rates(jax_routes, jax_cap, incidences=inc).rate)[:F])


def test_full_rates_refuse_what_the_jax_solver_refuses():
    # A link id past the capacities (an out-of-bounds write, a crash, before the check), an id
    # below -1, a negative capacity; a link of capacity 0 starves its flows (rate 0).
    for routes, cap, words in (([[0, 7]], [1, 1], "link id 7 past the 2 links"), ([[0, -3]], [1.0], "link id -3"),
                               ([[0]], [-1.0], "capacity")):
        with pytest.raises(ValueError, match=words):
            maxmin_rates_compiled(np.array(routes, np.int32), np.float32(cap))
    assert maxmin_rates_compiled(_routes([0], [1]), np.float32([0, 2])).tolist() == [0.0, 2.0]
    # Issue 14 audit: a scalar capacity and float link ids, as the JAX solver refuses them.
    for routes, cap, words in ((_routes([0]), np.float32(1), r"capacity: one per link, an \(E,\) array"),
                               (np.float32([[0]]), np.float32([1]), "route_ids: ids must be integers")):
        with pytest.raises(ValueError, match=words):
            maxmin_rates_compiled(routes, cap)


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_the_goal_solve_refuses_negative_or_nan_byte_counts_and_a_scalar_capacity(bad):
    """A negative or NaN byte count gave a step time of 0 (``nan > 0`` and ``-1 > 0`` are
    false: such a flow was skipped), a scalar capacity was taken as one link: one line each,
    before the workspace is lent (it comes back as it went)."""
    routes, cap, workspace = _routes([0], [0]), np.float32([2]), new_workspace(1)
    assert goal_step_time(routes, np.array([4.0, 0.0]), 2, cap) == pytest.approx(4.0)  # by hand: rate 1 each
    for nbytes in (np.array([bad, 4.0]), np.array([4.0, bad])):
        with pytest.raises(ValueError, match=r"^goal_step_time: byte counts must be numbers >= 0"):
            goal_step_time(routes, nbytes, 2, cap, workspace)
        with pytest.raises(ValueError, match=r"^goal_step_time_compact: byte counts must be numbers >= 0"):
            goal_step_time_compact(*compact_routes(routes), nbytes, 2, cap, workspace)
        assert (workspace == -1).all()
    for solve in (lambda c: goal_step_time(routes, np.ones(2), 2, c),
                  lambda c: goal_step_time_compact(*compact_routes(routes), np.ones(2), 2, c)):
        with pytest.raises(ValueError, match=r"capacity: one per link, an \(E,\) array, got shape \(\)"):
            solve(np.float32(2))


#: One shape for every machine's flows in the JAX solvers (:func:`_padded`): flows (at most
#: 1,211 here), route slots and links (Blue Waters has the most of both).
MACHINE_FLOWS, MACHINE_SLOTS, MACHINE_LINKS = 2048, 38, 138240


def test_every_machine_s_flows_get_the_jax_solver_s_rates(conf_topo, on_cpu):
    jobs = _scattered_jobs(conf_topo, np.random.default_rng(12))
    route_ids, _, _ = commtime._flows(conf_topo, jobs)
    cap = commtime.solver_capacity(conf_topo).astype(np.float32)
    jax_routes, jax_cap = _padded(route_ids, cap, MACHINE_FLOWS, MACHINE_SLOTS, MACHINE_LINKS)
    assert np.array_equal(maxmin_rates_compiled(route_ids, cap),
                          np.asarray(maxmin_rates(jax_routes, jax_cap).rate)[:len(route_ids)])


def _scattered_jobs(topo, rng: np.random.Generator) -> list[commtime.Job]:
    """Three jobs on random nodes of ``topo`` (so that they share links) with keyed patterns."""
    key = jax.random.PRNGKey(int(rng.integers(1 << 30)))
    n = min(48, topo.n_nodes // 3)
    nodes = rng.permutation(topo.n_nodes)[: 3 * n].reshape(3, n)
    names = ["unstructured_mesh", "random_pairs", "stencil4d"]
    return [commtime.Job(nodes[k], patterns.make(p, jax.random.fold_in(key, k), n)) for k, p in enumerate(names)]


def test_every_machine_s_flows_solve_to_the_jax_goal_solve_s_bits(conf_topo, on_cpu):
    rng = np.random.default_rng(11)
    jobs = _scattered_jobs(conf_topo, rng)
    route_ids, nbytes, owner = commtime._flows(conf_topo, jobs)
    cap = commtime.solver_capacity(conf_topo).astype(np.float32)
    sparse = conf_topo.max_route_links >= commtime.SPARSE_ROUTE_SLOTS
    for j in range(len(jobs)):
        # The job's flows first, then the others', as the replay orders a together problem.
        order = np.r_[np.flatnonzero(owner == j), np.flatnonzero(owner != j)]
        own = int((owner == j).sum())
        got = goal_step_time(route_ids[order], nbytes[order], own, cap)
        # The JAX goal solve's problem in every machine's one shape (:func:`_padded`).
        jax_routes, jax_cap = _padded(route_ids[order], cap, MACHINE_FLOWS, MACHINE_SLOTS, MACHINE_LINKS)
        jax_bytes = np.r_[nbytes[order], np.zeros(len(jax_routes) - len(order))]
        assert got == commtime.goal_step_time_jax(jax_routes, jax_bytes, own, jax_cap, sparse=sparse)
        assert got > 0


class _JaxSolves(commtime.ModelRuntimes):
    """The model with every goal solve made by JAX, as before the compiled solve and the
    first-round read (fattorus.kernels.maxmin_first_round)."""

    def _first_round_step(self, flows, nbytes, own, count):
        return None

    def _step(self, route_ids, nbytes, own):
        # Padded to 1,024 flows (the most in the replay below) with flows that cross no link
        # (:func:`_padded`): one compilation of the JAX goal solve instead of one per bucket.
        routes, _ = _padded(route_ids, self._cap_f32, 1024, 0, 0)
        return commtime.goal_step_time_jax(routes, np.r_[nbytes, np.zeros(len(routes) - len(nbytes))], own,
                                           self._cap_f32)


def test_a_model_replay_is_the_jax_solves_replay_bit_for_bit(on_cpu):
    """Two days of Thunder on ft6x6 under ``to`` (jobs slow each other down): every start, end
    and slowdown equals the run whose solves JAX makes."""
    ft = fattree.load("ft6x6")
    log = workload.load(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz", cores_per_node=4).jobs
    scaled, _ = workload.scale_nodes(log, 1, ft.n_nodes)
    jobs = workload.first_days(scaled, 2.0, 10.0)
    mix = interference.parse_mix(interference.DEFAULT_MIX)
    fast = commtime.ModelRuntimes(ft, mix, comm_fraction=0.5, seed=3)
    slow = _JaxSolves(ft, mix, comm_fraction=0.5, seed=3)
    a = replay.replay(jobs, ft, "to", "easy", runtime_model=fast).jobs
    b = replay.replay(jobs, ft, "to", "easy", runtime_model=slow).jobs
    assert a["start_s"].equals(b["start_s"]) and a["end_s"].equals(b["end_s"])
    assert np.array_equal(fast.slowdown, slow.slowdown, equal_nan=True)
    assert np.nanmax(fast.slowdown) > 1.05  # jobs did slow each other down: solves that matter
    assert 0 < fast.first_round and slow.first_round == 0  # some read off round one, bit for bit
