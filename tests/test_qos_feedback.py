"""Algorithm 1 of the QoS paper (issue 15, item 3): candidates, raises, the state machine on
a scripted environment, and on the flow model every accept and rollback checked against the
rule recomputed from the measured work."""

import numpy as np

from fattorus.analysis import qos_feedback as qf

P = qf.Params(threshold=0.9, num_sls=4, first_weight=1.0, raise_factor=2.0, max_weight=4.0, max_slowdown=0.05)


def test_candidates_are_within_one_over_t_of_their_jobs_slowest_slowest_first():
    work = np.array([10.0, 10.5, 20.0, 5.0, 5.4, 9.0])
    job = np.array([0, 0, 0, 1, 1, 1])
    stack = qf.select_candidates(work, job, 0.9)
    # job 0: min 10, thresh 11.1 -> 0, 1; job 1: min 5, thresh 5.56 -> 3, 4.
    assert set(stack) == {0, 1, 3, 4}
    assert stack[-1] == 3 and stack[-2] == 4  # popped first: the least work
    # T = 1 "places only the slowest" of each job (Section 6.6): the comparison includes it.
    assert set(qf.select_candidates(work, job, 1.0)) == {0, 3}
    assert set(qf.select_candidates(work, job, 0.01)) == set(range(6))


def test_raise_steps_and_limits():
    assert qf.raised((), 5, P) == ((5, 1.0),)
    assert qf.raised(((5, 1.0),), 5, P) == ((5, 2.0),)
    assert qf.raised(((5, 4.0),), 5, P) is None  # at max_weight
    full = ((1, 1.0), (2, 1.0), (3, 1.0))  # num_sls 4: the default level and three more
    assert qf.raised(full, 7, P) is None
    assert qf.raised(full, 2, P) == ((1, 1.0), (2, 2.0), (3, 1.0))


def test_process_levels():
    level, weight = qf.process_levels(((2, 4.0), (5, 2.0)), 6, 4)
    np.testing.assert_array_equal(level, [0, 0, 1, 0, 0, 2])
    np.testing.assert_array_equal(weight, [1, 4, 2, 1])


def scripted(assignments, base=np.array([10.0, 10.0])):
    """Two jobs; prioritising process 1 helps job 0 by 10 %; process 4 helps job 1 by 20 % but
    slows job 0 by 8 % (more than max_slowdown); every other raise costs both jobs 1 %."""
    work = base.copy()
    for p, _ in assignments:
        if p == 1:
            work = work * np.array([1.10, 1.0])
        elif p == 4:
            work = work * np.array([0.92, 1.20])
        else:
            work = work * 0.99
    return work


def proc_work(assignments):
    # Processes 1 and 4 are the slowest of their jobs unless prioritised.
    w = np.array([10.0, 9.0, 10.0, 10.0, 9.0, 10.0])
    for p, _ in assignments:
        w[p] = 10.0
    return w


JOB = np.array([0, 0, 0, 1, 1, 1])


def test_state_machine_accepts_improvements_and_rolls_back_harmful_trials():
    fb = qf.start()
    seen = []
    for _ in range(12):
        seen.append((fb.mode, fb.assignments))
        fb = qf.observe(fb, scripted(fb.assignments), proc_work(fb.assignments), JOB, P)
    assert seen[0] == (qf.DEFAULT, ())
    # First trial: the slowest candidate (processes 1 and 4 tie; the lower id is popped first).
    assert seen[1][1] in (((1, 1.0),), ((4, 1.0),))
    # Process 1 is accepted; process 4 alone gains more on average but slows job 0 by 8 %.
    assert (1, 1.0) in fb.best and all(p != 4 for p, _ in fb.best)
    assert fb.mode == qf.IDLE and fb.accepted >= 1
    # Without the slowdown limit the mean alone decides (the pseudo-code's line 15).
    loose = P._replace(max_slowdown=1.0)
    fb = qf.start()
    for _ in range(12):
        fb = qf.observe(fb, scripted(fb.assignments), proc_work(fb.assignments), JOB, loose)
    assert any(p == 4 for p, _ in fb.best)


def test_idle_restarts_when_work_falls_below_default():
    fb = qf.start()
    for _ in range(12):
        fb = qf.observe(fb, scripted(fb.assignments), proc_work(fb.assignments), JOB, P)
    assert fb.mode == qf.IDLE
    fb = qf.observe(fb, np.array([5.0, 5.0]), proc_work(fb.assignments), JOB, P)  # a noise event
    assert fb.mode == qf.DEFAULT and fb.assignments == () and fb.restarts == 1
    # A job arrival restarts too.
    assert qf.restart(fb).mode == qf.DEFAULT and qf.restart(fb).restarts == 2


def test_when_nothing_can_be_raised_it_idles_on_the_best():
    # One extra level at its maximum weight: after the first raise nothing is left to try.
    tight = P._replace(num_sls=2, max_weight=1.0)
    fb = qf.start()
    for _ in range(6):
        fb = qf.observe(fb, scripted(fb.assignments), proc_work(fb.assignments), JOB, tight)
    assert fb.mode == qf.IDLE and fb.assignments == fb.best and len(fb.best) == 1


def test_on_the_flow_model_every_accept_and_rollback_follows_the_rule():
    # Algorithm 1 on the small system's flow model. For each period that ran a trial, the
    # decision is recomputed from the measured work by the rule itself (line 15 and the
    # max_slowdown veto): accepted iff the mean of work / default work - 1 beats the best
    # score so far and no job falls more than 5 % below its work under the best — default and
    # best work tracked here, not read from the state. An accepted trial becomes the best; a
    # rolled-back one is dropped, and the next trial is the best plus one raise, so the
    # rolled-back process goes back to its level in the best (the only place the algorithm
    # lowers a level). Four levels (the default one and three to give) keep the rate solver to
    # three padded shapes, each a JAX compilation.
    from omegaconf import OmegaConf

    from fattorus.analysis import bsp, qos
    from fattorus.kernels.service_levels import service_level_rates
    from fattorus.paths import config_file
    from fattorus.topology.fattree import FatTree

    cfg = OmegaConf.to_container(OmegaConf.load(config_file("qos", "small")))
    cfg.update(iterations=40, noise=0.0, num_sls=4)
    exp = qos.experiment_from(cfg)
    params = exp.params
    topo = FatTree("small", **cfg["system"])
    counts = {"accepted": 0, "rolled_back": 0, "lowered": 0}
    for seed in (1, 5):
        rng = np.random.default_rng(seed)
        mix = qos.build_mix(topo, exp, rng)
        net = qos.Network(topo, mix, qos.static_routes(topo, mix), exp.bandwidth, params.num_sls)
        # Each job alone on the machine (as ``net.isolated_rates()``, to within 1e-9): its
        # flows active, the others inactive, over the mix's own routes — one padded shape.
        alone = np.empty(len(mix.src))
        for j in range(len(mix.patterns)):
            sel = mix.flow_job == j
            alone[sel] = np.asarray(service_level_rates(net.routes, net.capacity, active=sel).rate)[sel]
        comm = np.zeros(len(mix.patterns))
        np.maximum.at(comm, mix.flow_job, qos._transfer(mix.nbytes, alone))
        compute = np.concatenate([bsp.compute_times("uniform", exp.processes, bsp.compute_scale(0.65, c), rng)
                                  for c in comm])
        fb = qf.start()
        default = best_work = None
        best, best_score = (), 0.0
        for _ in range(exp.iterations):
            done, steps = qos._steps(mix, compute, net.rates(fb.assignments))
            work = exp.period_s / steps
            out = qf.observe(fb, work, exp.period_s / done, mix.job_of, params)
            if fb.mode == qf.DEFAULT:  # one default period (default_periods 1)
                default = best_work = work
            elif fb.mode == qf.RUNNING:
                assert fb.best == best and np.allclose(fb.default_work, default)
                s = float(np.mean(work / default - 1))
                accept = s > best_score and float(np.min(work / best_work)) - 1 >= -params.max_slowdown
                trial, base = dict(fb.assignments), dict(best)
                (p,) = [q for q in trial if trial[q] != base.get(q)]  # the trial's one raise
                if accept:
                    assert out.best == fb.assignments and out.accepted == fb.accepted + 1
                    best, best_score, best_work = fb.assignments, s, work
                    counts["accepted"] += 1
                else:
                    assert out.best == best and out.accepted == fb.accepted
                    counts["rolled_back"] += 1
                    if out.mode == qf.RUNNING:
                        # The next trial: the best plus one raise of another process; p back at
                        # its level in the best (lowered from the trial's).
                        nxt = dict(out.assignments)
                        assert nxt.get(p) == base.get(p) and trial[p] > base.get(p, 0.0)
                        counts["lowered"] += 1
                        (q,) = [r for r in nxt if nxt[r] != base.get(r)]
                        step = params.first_weight if q not in base else min(base[q] * params.raise_factor,
                                                                             params.max_weight)
                        assert q != p and nxt[q] == step
            fb = out
    # Measured: 6 accepted, 63 rolled back, each followed by a trial (the process lowered).
    assert counts["accepted"] >= 2 and counts["lowered"] >= 5, counts


# The default performance over N periods (the paper's Sections 6.2 and 6.8: "we observe the
# default performance for P x 10 seconds and then divide this performance by 10"), worked by
# hand with N = 3, two jobs (processes 0-2 and 3-5) and T = 1 (only each job's slowest).
# One level to give (num_sls 2, max weight 1): after one accepted raise the algorithm idles.
N3 = qf.Params(threshold=1.0, num_sls=2, first_weight=1.0, raise_factor=2.0, max_weight=1.0, max_slowdown=0.05,
               default_periods=3)
# Per period: (job work, process work), iterations.
DEFAULT_PERIODS = [(np.array([9.0, 12.0]), np.array([10.0, 8.0, 10.0, 10.0, 10.0, 8.0])),
                   (np.array([10.0, 9.0]), np.array([11.0, 11.0, 9.0, 9.0, 12.0, 11.0])),
                   (np.array([11.0, 12.0]), np.array([9.0, 11.0, 10.0, 10.0, 8.0, 11.0]))]
# By hand: job means (9 + 10 + 11) / 3 = 10 and (12 + 9 + 12) / 3 = 11; process means
# (30, 30, 29, 29, 30, 30) / 3, so the slowest are process 2 (job 0) and process 3 (job 1),
# both 29/3, and the lower id is tried first. Period 1 alone would pick processes 1 and 5
# (8 each), period 3 alone processes 0 and 4.


def test_default_work_is_the_mean_over_default_periods_and_defaults_run_exactly_n_periods():
    fb, ran = qf.start(), []
    for job_work, proc in DEFAULT_PERIODS:
        ran.append((fb.mode, fb.assignments))
        fb = qf.observe(fb, job_work, proc, JOB, N3)
    # Exactly three periods ran on the default level; the fourth runs the first trial.
    assert ran == [(qf.DEFAULT, ())] * 3
    assert fb.mode == qf.RUNNING
    assert fb.default_work == (10.0, 11.0) and fb.best_work == (10.0, 11.0)
    assert fb.assignments == ((2, 1.0),) and fb.candidates == (3,)
    # The trial is scored against the mean: (11/10 - 1 + 11/11 - 1) / 2 = 0.05 (against
    # period 1 alone it would be (11/9 - 1 + 11/12 - 1) / 2 = 0.069).
    fb = qf.observe(fb, np.array([11.0, 11.0]), np.array([10.0, 10.0, 10.0, 10.0, 10.0, 10.0]), JOB, N3)
    assert fb.accepted == 1 and fb.best == ((2, 1.0),) and abs(fb.best_score - 0.05) < 1e-12
    assert fb.mode == qf.IDLE  # nothing left to raise


def test_a_restart_observes_default_periods_again():
    fb = qf.start()
    for job_work, proc in DEFAULT_PERIODS:
        fb = qf.observe(fb, job_work, proc, JOB, N3)
    fb = qf.observe(fb, np.array([11.0, 11.0]), np.full(6, 10.0), JOB, N3)
    assert fb.mode == qf.IDLE
    # Below the default (9/10 - 1 + 9/11 - 1 < 0): back to DEFAULT for three periods.
    fb = qf.observe(fb, np.array([9.0, 9.0]), np.full(6, 10.0), JOB, N3)
    assert fb.mode == qf.DEFAULT and fb.restarts == 1
    again = [(np.array([8.0, 8.0]), np.array([10.0, 10.0, 10.0, 10.0, 10.0, 9.0])),
             (np.array([8.0, 10.0]), np.array([10.0, 10.0, 10.0, 10.0, 10.0, 9.0])),
             (np.array([11.0, 9.0]), np.array([10.0, 10.0, 10.0, 10.0, 10.0, 9.0]))]
    ran = []
    for job_work, proc in again:
        ran.append((fb.mode, fb.assignments))
        fb = qf.observe(fb, job_work, proc, JOB, N3)
    assert ran == [(qf.DEFAULT, ())] * 3
    # New default by hand: (8 + 8 + 11) / 3 = 9 and (8 + 10 + 9) / 3 = 9; the earlier
    # observation's periods do not count. Process 5 (9) is job 1's slowest and the least work
    # of all, so it is tried first; processes 0-2 tie in job 0 (10 each), lower id next.
    assert fb.mode == qf.RUNNING and fb.default_work == (9.0, 9.0)
    assert fb.assignments == ((5, 1.0),) and fb.candidates == (2, 1, 0)
    # A job arrival or departure (restart) observes three periods afresh too.
    fb = qf.restart(fb)
    for job_work, proc in again[:2]:
        fb = qf.observe(fb, job_work, proc, JOB, N3)
        assert fb.mode == qf.DEFAULT and fb.assignments == ()
    fb = qf.observe(fb, *again[2], JOB, N3)
    assert fb.mode == qf.RUNNING and fb.default_work == (9.0, 9.0)


def test_one_default_period_is_the_single_period_reading():
    # default_periods = 1 (the default): period 1 alone is the default, by hand (9, 12); its
    # slowest processes are 1 and 5 (8 each), process 1 tried first.
    for params in (N3._replace(default_periods=1), qf.Params(threshold=1.0, num_sls=2, max_weight=1.0)):
        fb = qf.observe(qf.start(), *DEFAULT_PERIODS[0], JOB, params)
        assert fb.mode == qf.RUNNING and fb.default_work == (9.0, 12.0) and fb.best_work == (9.0, 12.0)
        assert fb.assignments == ((1, 1.0),) and fb.candidates == (5,)


def test_once_every_level_is_in_use_it_idles_without_raising_weights():
    """The paper's line 19: |assignments| = NUM_SLS ends the search, although the prioritised
    processes' weights could still be raised (line 30) and candidates remain."""
    roomy = P._replace(num_sls=3, max_weight=64.0, max_slowdown=1.0)

    def helpful(assignments):  # every raise helps both jobs a little: every trial is accepted
        return np.array([10.0, 10.0]) * 1.01 ** sum(np.log2(2 * w) for _, w in assignments)

    fb, seen = qf.start(), []
    for _ in range(10):
        fb = qf.observe(fb, helpful(fb.assignments), proc_work(fb.assignments), JOB, roomy)
        seen.append((fb.mode, fb.assignments))
    # DEFAULT -> first level (weight 1) -> second level: both extra levels in use, then IDLE
    # on that assignment for good; the weights stay 1 although raising them would help.
    running = [a for m, a in seen if m == qf.RUNNING]
    assert [len(a) for a in running] == [1, 2]
    assert fb.mode == qf.IDLE and len(fb.best) == 2 and all(w == 1.0 for _, w in fb.best)
    assert all(m == qf.IDLE and a == fb.best for m, a in seen[len(running):])
    # With levels free the same environment goes on, raising weights too (line 30).
    more = roomy._replace(num_sls=8)
    fb = qf.start()
    for _ in range(10):
        fb = qf.observe(fb, helpful(fb.assignments), proc_work(fb.assignments), JOB, more)
    assert fb.mode == qf.RUNNING and max(w for _, w in fb.best) > 1.0


def test_a_rolled_back_trial_leaves_its_level_free():
    """Line 19 with the rollback: a trial that took the last level and was rolled back leaves
    the best one level short, so the search goes on with the other candidates."""
    roomy = P._replace(threshold=0.95, num_sls=3, max_weight=64.0, max_slowdown=1.0)

    def proc(assignments):  # processes 1 and 4 are their jobs' slowest until prioritised
        w = np.array([10.0, 9.0, 10.0, 10.0, 9.5, 10.0])
        for p, _ in assignments:
            w[p] = 10.0
        return w

    def work(assignments):  # prioritising 1 helps, giving 4 the last level hurts
        ps = [p for p, _ in assignments]
        return np.array([10.0, 10.0]) * (1.05 if 1 in ps else 1.0) * (0.90 if 4 in ps else 1.0)

    fb, seen = qf.start(), []
    for _ in range(3):
        fb = qf.observe(fb, work(fb.assignments), proc(fb.assignments), JOB, roomy)
        seen.append(fb)
    # DEFAULT -> trial {1} (accepted) -> trial {1, 4} (both levels in use; rolled back) -> on
    assert seen[0].assignments == ((1, 1.0),) and seen[1].assignments == ((1, 1.0), (4, 1.0))
    assert seen[2].best == ((1, 1.0),) and seen[2].mode == qf.RUNNING
    assert len(seen[2].assignments) == 2 and (4, 1.0) not in seen[2].assignments


def test_a_restart_from_idle_starts_from_scratch_as_the_start_and_an_arrival_do():
    """Line 23's restart (score below the default while IDLE) leaves no default work behind,
    as the start and :func:`qf.restart` (a job arrived or left) leave none: the periods that
    observe the default again are measured against nothing (history's score 0), not against
    the old observation (it once kept it)."""
    fb = qf.start()
    for _ in range(12):
        fb = qf.observe(fb, scripted(fb.assignments), proc_work(fb.assignments), JOB, P)
    assert fb.mode == qf.IDLE and fb.default_work == (10.0, 10.0)
    fb = qf.observe(fb, np.array([5.0, 5.0]), proc_work(fb.assignments), JOB, P)  # a noise event
    assert fb.mode == qf.DEFAULT and fb.restarts == 1
    assert fb.default_work == () and fb.best_work == ()
    assert (qf.start().default_work, qf.restart(fb).default_work) == ((), ())
    # The new observation, and only it, is the default from then on (by hand: 8 and 12).
    fb = qf.observe(fb, np.array([8.0, 12.0]), np.full(6, 10.0), JOB, P)
    assert fb.mode == qf.RUNNING and fb.default_work == (8.0, 12.0)
