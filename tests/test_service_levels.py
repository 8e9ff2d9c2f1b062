"""Service levels on the flow model (issue 15, item 1): weighted round robin across levels,
max-min within a level — checked by hand, against plain max-min, and against the definition."""

import numpy as np
import pytest

from fattorus.kernels.maxmin import maxmin_rates_numpy
from fattorus.kernels.service_levels import bottleneck_violations, service_level_rates


def four_levels(weight):
    """Level weights padded to four levels with weight 1: levels no flow has are absent
    everywhere, as the solver itself pads the weights to a power of two — the same instance,
    and one compilation for every instance of up to four levels instead of one per power of
    two."""
    return None if weight is None else np.r_[np.asarray(weight, float), np.ones(4 - len(weight))]


def rates(routes, cap, level=None, weight=None, active=None):
    """Rates of the instance, solved padded to 32 flows, 16 links and 4 hops: padding flows are
    inactive (rate 0), padding links unused, padding hops -1 (no link) — the same instance, and
    one compiled shape for every small instance here instead of one per size (compiling was
    ~90 % of this file's time); level weights, where given, padded to four levels
    (:func:`four_levels`). Without levels and weights, the solver's default: one level."""
    routes, cap = np.array(routes), np.array(cap, float)
    F, E = routes.shape[0], len(cap)
    routes_p = np.full((max(F, 32), max(routes.shape[1], 4)), -1)
    routes_p[:F, :routes.shape[1]] = routes
    cap_p = np.r_[cap, np.ones(max(0, 16 - E))]
    act = np.zeros(len(routes_p), bool)
    act[:F] = True if active is None else active
    lv = None if level is None else np.r_[level, np.zeros(len(routes_p) - F, int)]
    out = service_level_rates(routes_p, cap_p, lv, four_levels(weight), active=act)
    assert bool(out.converged)
    return np.asarray(out.rate)[:F]


def test_two_levels_seven_to_two_share_one_link():
    # The paper's example (Section 2.2): weights 7 and 2 send 7 packets of one for 2 of the other.
    np.testing.assert_allclose(rates([[0], [0]], [1.0], [0, 1], [7, 2]), [7 / 9, 2 / 9])


def test_an_idle_level_gives_its_share_away():
    np.testing.assert_allclose(rates([[0]], [1.0], [1], [7, 2]), [1.0])
    # Level 1 present only on link 1: on link 0 level 0 has the whole link.
    np.testing.assert_allclose(rates([[0, -1], [1, -1]], [1.0, 1.0], [0, 1], [1, 8]), [1.0, 1.0])


def test_levels_share_per_level_not_per_flow():
    # Two flows of level A (weight 7) and one of level B (weight 2) on a 9-unit link: A gets 7
    # split max-min fairly (3.5 each), B 2 — a per-flow weighting would give 7:7:2.
    np.testing.assert_allclose(rates([[0], [0], [0]], [9.0], [0, 0, 1], [7, 2]), [3.5, 3.5, 2.0])


def test_a_flow_held_back_elsewhere_leaves_its_level_share_to_its_level():
    # Link 0 (9 units): level A (7) has a1, held to 1 by link 1, and a2; level B (2) has b.
    # Round robin: A keeps its 7 and a2 takes what a1 cannot use (6); b gets 2.
    np.testing.assert_allclose(rates([[0, 1], [0, -1], [0, -1]], [9.0, 1.0], [0, 0, 1], [7, 2]), [1.0, 6.0, 2.0])


def test_a_level_held_back_elsewhere_leaves_its_share_to_the_other_level():
    # A (1) has a; B (8) has b, held to 2 by link 1: a gets the other 7, not its 1/9.
    np.testing.assert_allclose(rates([[0, -1], [0, 1]], [9.0, 2.0], [0, 1], [1, 8]), [7.0, 2.0])


def test_a_cycle_of_bottlenecks_is_resolved():
    # Neither link is the tightest of all its flows at first (worked by hand): b and c are
    # bottlenecked on link 1 (c at its level's 1/9 of 5.4, b at 8/9), a takes the rest of link 0.
    np.testing.assert_allclose(rates([[0, -1], [0, 1], [0, 1]], [9.0, 5.4], [0, 1, 0], [1, 8]), [3.6, 4.8, 0.6])


def test_flows_without_links_and_inactive_flows():
    out = rates([[0], [-1], [0]], [4.0], [0, 0, 0], [1], active=np.array([True, True, False]))
    assert out[0] == pytest.approx(4.0) and np.isinf(out[1]) and out[2] == 0.0


def _instance(rng, n_links=10, n_flows=24, length=4, n_levels=4):
    E, F = rng.integers(2, n_links + 1), rng.integers(1, n_flows + 1)
    L, S = rng.integers(1, length + 1), rng.integers(1, n_levels + 1)
    routes = np.full((F, L), -1)
    for f in range(F):
        k = min(int(rng.integers(1, L + 1)), E)
        routes[f, :k] = rng.choice(E, size=k, replace=False)
    return routes, rng.uniform(0.5, 5, E), rng.integers(0, S, F), rng.integers(1, 9, S).astype(float)


def test_one_level_is_plain_max_min():
    rng = np.random.default_rng(7)
    for _ in range(40):
        routes, cap, _, _ = _instance(rng)
        expect, _ = maxmin_rates_numpy(routes, cap)
        np.testing.assert_allclose(rates(routes, cap), expect, rtol=1e-6)
        # All flows on one level, whatever its weight: still plain max-min.
        np.testing.assert_allclose(rates(routes, cap, np.full(len(routes), 2), [1, 1, 5.0]), expect, rtol=1e-6)


def test_random_networks_satisfy_the_bottleneck_definition():
    rng = np.random.default_rng(11)
    for _ in range(80):
        routes, cap, level, weight = _instance(rng)
        out = rates(routes, cap, level, weight)
        assert len(bottleneck_violations(routes, cap, level, weight, out)) == 0


def test_the_definition_check_can_fail():
    routes, cap, level, weight = np.array([[0], [0]]), np.array([9.0]), np.array([0, 1]), np.array([7.0, 2.0])
    assert len(bottleneck_violations(routes, cap, level, weight, np.array([7.0, 2.0]))) == 0
    assert len(bottleneck_violations(routes, cap, level, weight, np.array([4.5, 4.5]))) > 0  # per-flow fair
    assert len(bottleneck_violations(routes, cap, level, weight, np.array([6.0, 2.0]))) > 0  # link not full
    assert len(bottleneck_violations(routes, cap, level, weight, np.array([8.0, 2.0]))) > 0  # overloaded


def test_raising_a_level_never_slows_its_flows_on_one_link():
    # Monotone on a single link: more weight, more bandwidth for the level's flows.
    prev = 0.0
    for w in (1, 2, 4, 8, 16):
        r = rates([[0], [0], [0]], [1.0], [0, 0, 1], [1, w])[2]
        assert r >= prev - 1e-12
        prev = r


def test_a_cab_sized_network_with_one_level_is_plain_max_min():
    # Thousands of links and flows: group ids and demands need 64-bit sort keys (a float32
    # key, which a host callback can receive when x64 is on only around the call, misorders
    # demands that differ by less than a percent and breaks this equality).
    # Both solves here have four levels (:func:`rates`): one compilation at this size. The
    # one-level solve has every flow on level 0 (the other levels absent everywhere, as the
    # solver pads the weights itself); the default of no levels at all is the small instances'
    # (test_one_level_is_plain_max_min).
    from fattorus import topology
    from fattorus.analysis import bsp

    cab = topology.load("cab")
    rng = np.random.default_rng(0)
    nodes = rng.permutation(cab.n_nodes)[:240]
    src, dst = [], []
    for j, pat in enumerate(["all_to_all", "random_pairs", "nearest_neighbor"]):
        fl = bsp.pattern_flows(pat, 80, 1.0, rng)
        src.append(fl.src + 80 * j)
        dst.append(fl.dst + 80 * j)
    src, dst = np.concatenate(src), np.concatenate(dst)
    routes = cab.host_routes(nodes[src], nodes[dst])  # the family's routes (no JAX routing to compile)
    assert routes.shape[0] > 6000 and cab.n_links > 5000  # thousands of flows and links
    cap = np.asarray(cab.link_bandwidth) * 4e9
    expect, _ = maxmin_rates_numpy(routes, cap)  # the NumPy filling, float64
    one = np.zeros(len(routes), int)
    np.testing.assert_allclose(rates(routes, cap, one, [1.0, 4.0]), expect, rtol=1e-6)
    # Fifteen processes on their own levels: still the definition.
    from fattorus.kernels.service_levels import check

    level = np.where(np.isin(src, rng.choice(240, 15, replace=False)), 1, 0)
    out = rates(routes, cap, level, [1.0, 4.0])
    assert len(check(routes, cap, level, np.array([1.0, 4.0]), out)) == 0


def _padded(routes, cap, level):
    """The instance padded as :func:`rates` pads it (32 flows, 16 links, 4 hops): the arrays
    and the mask of real flows."""
    F, E = routes.shape[0], len(cap)
    routes_p = np.full((32, 4), -1, np.int32)
    routes_p[:F, :routes.shape[1]] = routes
    act = np.zeros(32, bool)
    act[:F] = True
    return routes_p, np.r_[cap, np.ones(16 - E)], np.r_[level, np.zeros(32 - F, int)].astype(np.int32), act


def test_the_exact_finish_tried_after_every_round_meets_the_definition(monkeypatch):
    # chunk=1: after every round of bounds that has not converged, the exact finish
    # (``_polish``: the linear system of the bottleneck structure the bounds point at) is
    # tried, from bounds that can be one round old. On 150 random networks every result must
    # meet the definition (the plain-loop check), and most solves must end by that finish.
    from fattorus.kernels import service_levels as sl

    finished = {"tried": 0, "exact": 0}
    polish = sl._polish

    def counted(*args):
        out = polish(*args)
        finished["tried"] += 1
        finished["exact"] += out is not None
        return out

    monkeypatch.setattr(sl, "_polish", counted)
    rng = np.random.default_rng(23)
    for _ in range(150):
        routes, cap, level, weight = _instance(rng)
        rp, cp, lv, act = _padded(routes, cap, level)
        out = service_level_rates(rp, cp, lv, four_levels(weight), active=act, chunk=1)
        assert bool(out.converged) and out.gap == 0.0
        assert len(bottleneck_violations(routes, cap, level, weight, np.asarray(out.rate)[:len(routes)])) == 0
    # Measured: 194 tries, 115 exact finishes (the other solves converged by their bounds).
    assert finished["exact"] >= 50 and finished["tried"] > finished["exact"]


def test_the_exact_finish_returns_an_allocation_or_nothing():
    # ``_polish`` from arbitrary marks (random numbers: a random bottleneck per flow) must
    # return either rates that meet the definition or None, never anything else; with marks
    # that point at the true bottlenecks (the converged bounds' marks) it finds them.
    from fattorus.kernels import service_levels as sl

    rng = np.random.default_rng(5)
    outcomes = {"none": 0, "rates": 0}
    for _ in range(60):
        routes, cap, level, weight = _instance(rng)
        rp, cp, lv, act = _padded(routes, cap, level)
        S = 1 << (len(weight) - 1).bit_length()
        phi = np.r_[weight, np.ones(S - len(weight))]
        marks = np.where(rp >= 0, rng.uniform(0.1, 5.0, rp.shape), np.inf)
        marks[len(routes):] = np.inf  # padding flows cross no link
        got = sl._polish(rp, cp, lv, phi, marks)
        if got is None:
            outcomes["none"] += 1
            continue
        outcomes["rates"] += 1
        assert len(bottleneck_violations(routes, cap, level, weight, got[:len(routes)])) == 0
    assert outcomes["none"] > 0 and outcomes["rates"] > 0, outcomes


def test_damped_steps_reach_the_allocation_and_stay_inside_their_bounds():
    # ``_damped`` (used where the bounds stall apart; no small network found stalls, so it is
    # driven directly): damped steps of the demand map from zero demands reach a point whose
    # marks meet the definition; and the steps are clipped to [dlo, dhi].
    import jax
    import jax.numpy as jnp

    from fattorus.kernels import service_levels as sl

    rng = np.random.default_rng(9)
    for _ in range(12):
        routes, cap, level, _ = _instance(rng, n_levels=4)
        weight = rng.integers(1, 9, 4).astype(float)  # 4 levels: one compilation
        rp, cp, lv, act = _padded(routes, cap, np.minimum(level, 3))
        level = lv[:len(routes)]
        with jax.enable_x64(True):
            args = tuple(jnp.asarray(x) for x in (rp, cp, lv, weight, np.ones(32, bool)))
            zero, top = jnp.zeros((32, 4), jnp.float64), jnp.full((32, 4), jnp.inf, jnp.float64)
            _, marks = sl._damped(*args, zero, zero, top, 4, 150, jnp.float64(0.5))
            rate = np.where((rp >= 0).any(axis=1), np.asarray(marks).min(axis=1), np.inf)[:len(routes)]
            assert len(bottleneck_violations(routes, cap, level, weight, rate)) == 0
            box = jnp.full((32, 4), 0.25, jnp.float64)
            d, _ = sl._damped(*args, zero, box, box, 4, 3, jnp.float64(0.5))
            assert np.all(np.asarray(d) == 0.25)


def test_an_unconverged_solve_returns_the_midpoint_of_bounds_around_the_allocation():
    # One round and no exact finish that passes: ``converged`` False, the rates the midpoint
    # of the bounds and ``gap`` their widest relative width. Whatever the bounds, they hold
    # the allocation (checked by definition), so every rate is within
    # (hi - lo) / 2 <= gap * rate / (2 - gap) of it.
    rng = np.random.default_rng(3)
    unconverged = 0
    for _ in range(60):
        routes, cap, level, weight = _instance(rng)
        rp, cp, lv, act = _padded(routes, cap, level)
        F = len(routes)
        exact = np.asarray(service_level_rates(rp, cp, lv, four_levels(weight), active=act).rate)[:F]
        assert len(bottleneck_violations(routes, cap, level, weight, exact)) == 0
        out = service_level_rates(rp, cp, lv, four_levels(weight), active=act, chunk=1, max_rounds=1)
        rate = np.asarray(out.rate)[:F]
        if bool(out.converged):
            assert out.gap == 0.0
            continue
        unconverged += 1
        assert 0 < out.gap < 1
        links = (routes >= 0).any(axis=1)
        err = np.abs(rate[links] - exact[links])
        assert np.all(err <= out.gap * rate[links] / (2 - out.gap) * (1 + 1e-9) + 1e-12), (err, out.gap)
    assert unconverged >= 10  # measured: 20 of 60


@pytest.mark.parametrize("change, message", [
    ({"routes": [[0, 3]]}, "route_ids: link id 3 past the 2 links of capacity"),
    ({"routes": [[0, -2]]}, "route_ids: link id -2; link ids run from 0"),
    ({"cap": [1.0, np.nan]}, "capacity: every link's capacity must be a number >= 0"),
    ({"cap": [1.0, -1.0]}, "capacity: every link's capacity must be a number >= 0"),
    ({"level": [2]}, r"level: level 2 outside 0 \.\. 1"),
    ({"level": [-1]}, r"level: level -1 outside 0 \.\. 1"),
    ({"level": [0.5]}, "level: every flow's level must be a whole number"),
    ({"level": [0, 1]}, r"level: one per flow, \(1,\)"),
    ({"weight": [1.0, 0.0]}, "level_weight: every level's weight must be a positive finite number"),
    ({"weight": [1.0, -2.0]}, "level_weight: every level's weight must be a positive finite number"),
    ({"weight": [1.0, np.nan]}, "level_weight: every level's weight must be a positive finite number"),
    ({"weight": [1.0, np.inf]}, "level_weight: every level's weight must be a positive finite number"),
    ({"active": [True, False]}, r"active: one per flow, \(1,\)"),
    ({"routes": [[0.7, 1.2]]}, "route_ids: link ids must be integers"),
    ({"level": ["a"]}, "level: every flow's level must be a whole number"),
])
def test_inputs_no_solve_can_mean_are_refused_in_one_line(change, message):
    # Before: a link id past the capacities landed on a padding link, a level past the weights
    # overloaded a link, weights 0 / negative / NaN gave rates 0 / -inf / inf.
    args = {"routes": [[0, 1]], "cap": [1.0, 2.0], "level": [1], "weight": [1.0, 2.0], "active": [True]}
    args.update(change)
    with pytest.raises(ValueError, match=message) as err:
        service_level_rates(np.array(args["routes"]), np.array(args["cap"]), np.array(args["level"]),
                            np.array(args["weight"]), np.array(args["active"]))
    assert "\n" not in str(err.value)


def test_max_rounds_below_one_is_refused_in_one_line():
    with pytest.raises(ValueError, match="max_rounds: a whole number >= 1"):  # was an UnboundLocalError
        service_level_rates(np.array([[0]]), np.array([1.0]), max_rounds=0)
