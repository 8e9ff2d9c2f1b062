"""The allocation-policy contract, over every config in conf/topo × every registered policy
that supports it (the contract: fattorus/sched/policy/base.py).

On random machine histories built by the policy itself: placements are ``n`` distinct free
node ids, disjoint from every running job; the batched count test agrees with ``place`` on
the current and on future states; a policy that only counts nodes places a job exactly when
enough nodes are free; footprints are valid classes; a policy that declares it reads no
group counts answers the same on future states built without them; a policy's own shadow
time (``earliest_fit``) is the first future state it fits on; a policy's compiled replay
(``compiled_run``) takes the engine's decisions.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from fattorus import topology
from fattorus.sched import policy
from fattorus.sched import state as st

CONF = Path(__file__).resolve().parents[1] / "conf" / "topo"


def _load(path: Path):
    return topology.from_config(OmegaConf.to_container(OmegaConf.load(path)))


TOPOS = {p.stem: _load(p) for p in sorted(CONF.glob("*.yaml"))}
CASES = [(t, name) for t, topo in TOPOS.items() for name in policy.supporting(topo)]


def _check_placement(placed, n, state, running):
    n_nodes = state.topo.n_nodes
    assert placed.shape == (n,)
    assert ((placed >= 0) & (placed < n_nodes)).all()
    # n distinct ids (a mask over the machine: np.unique sorted every placement), free, and
    # disjoint from every running job (from the union of their nodes).
    seen = np.zeros(n_nodes, bool)
    seen[placed] = True
    assert seen.sum() == n
    assert state.free[placed].all()
    if running:
        held = np.zeros(n_nodes, bool)
        held[np.concatenate(running)] = True
        assert not held[placed].any()


def _sizes(rng, topo, k=4):
    """Sizes around every grouping level's size, plus random ones."""
    edges = [lvl.size + d for lvl in topo.levels for d in (-1, 0, 1)]
    return sorted({max(1, min(int(s), topo.n_nodes)) for s in edges + list(rng.integers(1, topo.n_nodes + 1, k))})


@pytest.mark.parametrize("topo_name, policy_name", CASES)
def test_policy_contract(topo_name, policy_name):
    topo = TOPOS[topo_name]
    pol = policy.make(policy_name, topo, seed=0)
    assert pol.supports(topo)
    rng = np.random.default_rng(7)
    state, running, release = st.empty(topo), [], np.full(topo.n_nodes, np.inf)
    pol.reset(state)  # the engine's hooks, as a replay calls them
    C = len(topo.levels) + 1
    for step in range(25):
        for n in _sizes(rng, topo):
            asked = pol.fits(state, n)  # first, so that it cannot lean on place's answer
            placed = pol.place(state, n)
            assert asked == (placed is not None), (n, asked)
            if placed is not None:
                _check_placement(placed, n, state, running)
            if pol.needs == st.FREE_ONLY:
                assert (placed is not None) == (n <= state.n_free)
            if pol.needs is not None:
                assert bool(pol.feasible(st.counts(state), n)) == (placed is not None)
            prefer = rng.random(topo.n_nodes) < 0.3
            with_prefer = pol.place(state, n, prefer=prefer)
            if with_prefer is not None:
                _check_placement(with_prefer, n, state, running)
        # Grow the machine with the policy's own placements; release some jobs.
        if running and rng.random() < 0.3:
            nodes = running.pop(int(rng.integers(len(running))))
            st.release(state, nodes, int(state.node_class[nodes[0]]))
            pol.ended(nodes)
            release[nodes] = np.inf
        n = int(rng.integers(1, max(2, state.n_free // 2) + 1)) if state.n_free else 0
        placed = pol.place(state, n) if n else None
        if placed is not None:
            c = pol.footprint(placed)
            assert 1 <= c <= C
            st.allocate(state, placed, c)
            pol.started(placed)
            running.append(placed)
            release[placed] = step + rng.integers(1, 5)
    # Two fresh copies for the shadow-time check, taken before the checks below fill the
    # policy's caches with these very future states (one answers, the other walks).
    answering, walking = copy.deepcopy(pol), copy.deepcopy(pol)
    _check_futures(pol, state, release, rng)
    _check_without_counts(pol, state, release, rng)
    if running:  # a job ends, as between two passes of a replay (its hooks told)
        nodes = running.pop(0)
        st.release(state, nodes, int(state.node_class[nodes[0]]))
        answering.ended(nodes)
        walking.ended(nodes)
        release[nodes] = np.inf
    _check_earliest_fit(answering, walking, state, release, rng)


def _check_earliest_fit(pol, walker, state, release, rng):
    """Where a policy gives ``earliest_fit``, it is the first release time at which ``fits``
    holds on the future state, found here by walking every time in order with a copy of the
    policy (so that neither can answer from what the other learnt)."""
    if pol.time_dependent:
        return
    times = np.unique(release[np.isfinite(release)])
    answered = 0
    for n in _sizes(rng, state.topo, k=12):
        got = pol.earliest_fit(state, n, release, times)
        if got is None:
            continue
        walked = next((float(t) for t in times if walker.fits(st.future(state, release <= t), n)), np.inf)
        assert got == walked, (n, got, walked)
        answered += 1
    # A policy with its own shortcut must have used it here (a job just ended: no hypothetical
    # placement is recorded).
    assert answered > 0 or type(pol).earliest_fit is policy.Policy.earliest_fit


def _check_without_counts(pol, state, release, rng):
    """``reads_counts = False``: on every future state, ``place`` and ``fits`` answer the same
    without the group counts (they are empty there, so reading one fails)."""
    if pol.reads_counts:
        return
    twin = copy.deepcopy(pol)  # asked the same questions in the same order: the same random draws
    for t in np.unique(release[np.isfinite(release)]):
        full, bare = st.future(state, release <= t), st.future(state, release <= t, counts=False)
        assert bare.group_free == () and bare.held == ()
        np.testing.assert_array_equal(bare.free, full.free)
        for n in _sizes(rng, state.topo):
            assert twin.fits(bare, n) == pol.fits(full, n)
            a, b = twin.place(bare, n), pol.place(full, n)
            assert (a is None) == (b is None) and (a is None or np.array_equal(a, b))


def _check_futures(pol, state, release, rng):
    """The batched count test over future instants agrees with ``place`` on each future state."""
    if pol.needs is None:
        return
    times, future = st.futures(state, release, pol.needs)
    states = [st.future(state, release <= t) for t in times]  # each future state, built once
    for n in _sizes(rng, state.topo):
        fits = pol.feasible(future, n, waited_s=np.zeros(len(times)))
        assert fits.shape == times.shape
        for g, at in enumerate(states):
            assert bool(fits[g]) == (pol.place(at, n) is not None)


@pytest.mark.parametrize("topo_name, policy_name", CASES)
def test_a_compiled_replay_takes_the_engines_decisions(topo_name, policy_name):
    """``compiled_run`` is None, or the schedule the engine's loop reaches with the policy:
    the same start times, node sets (in order), backfill flags and shadow times, under EASY
    and FCFS, on a generated load that keeps a queue (every supported config of conf/topo)."""
    from fattorus.sched import engine, queues

    topo = TOPOS[topo_name]
    rng = np.random.default_rng(11)
    n = 60
    submit = np.sort(rng.uniform(0, 3_000, n)).round()
    runtime = rng.uniform(50, 900, n).round()
    jobs = engine.Jobs.of(submit, runtime, runtime * rng.choice([1.0, 2.0], n),
                          np.minimum(rng.geometric(8 / topo.n_nodes, n), topo.n_nodes // 3), topo.n_nodes)
    for queue in (queues.Easy(), queues.Fcfs()):
        compiled = policy.make(policy_name, topo, seed=0).compiled_run(jobs, queue.name, None, None, None)
        if compiled is None:
            continue
        loop = engine.run(jobs, topo, queue, policy.make(policy_name, topo, seed=0), compiled=False)
        np.testing.assert_array_equal(compiled.start, loop.start)
        np.testing.assert_array_equal(compiled.backfilled, loop.backfilled)
        np.testing.assert_array_equal(compiled.shadow, loop.shadow)
        assert all(np.array_equal(a, b) for a, b in zip(compiled.alloc, loop.alloc))


def _queued_load(topo, seed: int, n: int = 60):
    """A generated load that keeps a queue with large heads: sizes from one node to the whole
    machine, run times within their estimates (EASY's guarantee assumes jobs end by them)."""
    from fattorus.sched import engine

    rng = np.random.default_rng(seed)
    submit = np.sort(rng.choice([0, 0, 1, 3, 7, 20, 50], n).cumsum()).astype(float)
    runtime = rng.choice([5.0, 10, 30, 60, 100, 200, 333], n)
    estimate = runtime * rng.choice([1.0, 1.0, 2.0, 1.5], n)
    fractions = rng.choice([0.01, 0.03, 0.06, 0.1, 0.15, 0.25, 0.4, 0.75, 1.0], n)
    nodes = np.clip((fractions * topo.n_nodes).astype(np.int64), 1, topo.n_nodes)
    return engine.Jobs.of(submit, runtime, estimate, nodes, topo.n_nodes)


@pytest.mark.parametrize("topo_name, policy_name", CASES)
def test_easy_starts_every_blocked_head_by_its_shadow_time(topo_name, policy_name):
    """EASY's guarantee (spec `scheduling.md`, step 3): a backfilled job ends by the shadow time
    or keeps the head's future placement valid, so with run times within their estimates a
    blocked head starts at or before the earliest shadow time it was given. Session 45's
    exploratory run found `prism` breaking it (a backfill start forgot the head's reserved
    prism, so a long job took routers of that prism outside the reserved nodes' own): 4 jobs
    on torus4 in tests/test_prism.py by hand; here every policy on every machine of conf/topo,
    the engine's loop and the compiled replay, on generated loads that keep large heads
    waiting. (The engine's loop on machines of up to 10,000 nodes: a `prism` loop on Blue
    Waters takes ~15 s; the compiled replay there takes its decisions, as the test above and
    tests/test_prism_compiled.py check.)"""
    from fattorus.sched import engine, queues

    topo = TOPOS[topo_name]
    blocked_heads = 0
    for seed in (1, 2, 3):
        jobs = _queued_load(topo, seed)
        for compiled in (False, True) if topo.n_nodes <= 10_000 else (True,):
            out = engine.run(jobs, topo, queues.Easy(), policy.make(policy_name, topo, seed=0), compiled=compiled)
            blocked = ~np.isnan(out.shadow)
            late = np.nonzero(blocked & (out.start > out.shadow))[0]
            assert len(late) == 0, (seed, compiled, [(int(j), out.start[j], out.shadow[j]) for j in late[:3]])
            blocked_heads += int(blocked.sum())
    assert blocked_heads > 0


@pytest.mark.parametrize("topo_name", ["torus4", "torus8"])
@pytest.mark.parametrize("params", [{"internal": True}, {"internal": True, "internal_ends_first": True}],
                         ids=["internal", "internal_ends_first"])
def test_easy_keeps_its_guarantee_when_prism_puts_small_jobs_inside_running_prisms(topo_name, params):
    """The test above with `prism`'s ``internal`` option (its default is off): a one-router job
    may take idle nodes inside a running prism. Session 47's exploratory run found a backfill
    job that outlives the shadow time placed inside a running prism that ends before it, on a
    router of the head's reserved prism, so the head started late (2 heads in 10 days of Atlas
    on torus4; these loads catch it on torus4 without ``internal_ends_first``, which by its
    rule never places a job inside a prism that ends before it). The engine's loop (the
    compiled replay does not cover ``internal``)."""
    from fattorus.sched import engine, queues

    topo = TOPOS[topo_name]
    blocked_heads = 0
    for seed in (1, 2, 3, 4):
        jobs = _queued_load(topo, seed, n=80)
        out = engine.run(jobs, topo, queues.Easy(), policy.make("prism", topo, params), compiled=False)
        blocked = ~np.isnan(out.shadow)
        late = np.nonzero(blocked & (out.start > out.shadow))[0]
        assert len(late) == 0, (seed, [(int(j), out.start[j], out.shadow[j]) for j in late[:3]])
        blocked_heads += int(blocked.sum())
    assert blocked_heads > 0


@pytest.mark.parametrize("fault, words", [
    ("duplicate", "some node twice"),
    ("mask", "a bool array of shape (18,); a placement is a 1-D array of node ids"),
    ("too_few", "placed a job of 4 nodes on 3 node(s); a placement has exactly the job's node count"),
    ("busy", "which is not free for it"),
    ("negative", "node id -1; the machine's are 0 .. 17"),
    ("past_the_end", "node id 18; the machine's are 0 .. 17"),
])
@pytest.mark.parametrize("queue", ["fcfs", "easy"])
def test_a_policy_that_breaks_the_placement_contract_is_named_not_replayed(fault, words, queue):
    """Session 47's extension walkthrough: the engine took whatever ``place`` returned, so a
    user's policy with duplicate ids, a mask, too few nodes or busy ones double-booked nodes
    and read utilization over 100 % without a word (or, under EASY, failed far from its cause
    with a TypeError). Now one line naming the policy and the rule, in both disciplines."""
    from fattorus.sched import engine, queues
    from fattorus.sched.policy.oblivious import TopologyOblivious

    ft6 = TOPOS["ft6"]

    class Faulty(TopologyOblivious):
        name = "faulty"

        def place(self, state, n, prefer=None, waited_s=0.0, until_s=np.inf):
            good = super().place(state, n, prefer, waited_s, until_s)
            if good is None or n < 2:
                return good
            busy = np.flatnonzero(~state.free)
            return {"duplicate": np.r_[good[:-1], good[0]], "mask": np.isin(np.arange(18), good),
                    "too_few": good[:-1], "busy": np.r_[good[:-1], busy[:1]] if len(busy) else good,
                    "negative": np.r_[good[:-1], -1], "past_the_end": np.r_[good[:-1], 18]}[fault]

    # job 0 (1 node) runs first, so that a node is busy when the 4-node jobs come
    jobs = engine.Jobs.of(np.array([0.0, 1, 2, 3]), np.array([100.0, 10, 10, 10]), np.array([100.0, 10, 10, 10]),
                          np.array([1, 4, 4, 18]), ft6.n_nodes)
    with pytest.raises(ValueError, match=r"policy 'faulty' placed a job of \d+ nodes on ") as err:
        engine.run(jobs, ft6, queues.Easy() if queue == "easy" else queues.Fcfs(), Faulty(ft6), compiled=False)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_extension_mistakes_in_declarations_are_refused_at_once():
    """Session 47's extension walkthrough: ``families = "torus3d"`` (a string) passed the ``in``
    test by substring, and a second family registered under a held kind replaced the first."""
    import dataclasses

    from fattorus.sched.policy.base import Policy
    from fattorus.topology import FAMILIES, register
    from fattorus.topology.fattree import FatTree

    with pytest.raises(TypeError, match=r"families must be a tuple of topology kinds, e.g. \('torus3d',\), got 'torus3d'"):
        type("Stringly", (Policy,), {"families": "torus3d"})
    before = dict(FAMILIES)
    with pytest.raises(TypeError, match="topology kind 'fattree' is fattorus.topology.fattree.FatTree's"):
        register(dataclasses.dataclass(frozen=True)(type("MyTree", (FatTree,), {"__module__": "mine"})))
    assert FAMILIES == before
    register(FatTree)  # the same class again (a module imported twice): as before
