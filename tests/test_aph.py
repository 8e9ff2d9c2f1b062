"""APH kernels: closed form vs pairwise, the paper's Figure 2 by hand, ideal APH, random draws."""

import itertools

import jax
import numpy as np
import pytest

from fattorus.kernels import aph
from fattorus.topology import fattree
from fattorus.kernels import montecarlo

MACHINES = ["cab", "pinot", "ft44", "ft6", "ft6x6", "ft6_tapered"]


def _brute_hop_sum(ft, nodes):
    """Sum over ordered pairs of inter-switch hops, by plain Python loops over coordinates."""
    total = 0
    for i, j in itertools.permutations(nodes, 2):
        same_leaf = i // ft.nodes_per_leaf == j // ft.nodes_per_leaf
        same_pod = i // ft.nodes_per_pod == j // ft.nodes_per_pod
        total += 0 if same_leaf else (2 if same_pod else 4)
    return total


def test_figure2_jobs_by_hand():
    # Fat-tree paper, Figure 2 (radix 6, 0-based ids): red {1, 4}, blue {2, 3, 5, 10, 11},
    # yellow {7, 13, 14}. By hand: red 1 pair x 2 hops -> APH 2; blue: 2 same-pod pairs x 2
    # + 6 cross-pod pairs x 4 = 28 per unordered pair set -> 56 / 20 = 2.8; yellow: 2
    # cross-pod pairs x 4 = 8 -> 16 / 6.
    ft = fattree.load("ft6")
    allocs = aph.pad([[1, 4], [2, 3, 5, 10, 11], [7, 13, 14], [0]])
    assert list(np.asarray(aph.hop_sums(ft, allocs))) == [4, 56, 16, 0]
    np.testing.assert_allclose(np.asarray(aph.aph(ft, allocs)), [2.0, 2.8, 16 / 6, 0.0], rtol=1e-6)


def test_the_bare_kernel_lowers_ahead_of_time_as_a_jitted_function_does():
    """``hop_sums_kernel`` is jitted at first use (:mod:`fattorus.lazyjit`); its ``lower``
    (the bench's ahead-of-time compile) is the jitted function's, and the compiled kernel
    gives the figure 2 sums."""
    ft = fattree.load("ft6")
    allocs = aph.pad([[1, 4], [2, 3, 5, 10, 11], [7, 13, 14], [0]])
    compiled = aph.hop_sums_kernel.lower(ft, allocs).compile()
    assert list(np.asarray(compiled(allocs))) == [4, 56, 16, 0]
    assert aph.hop_sums_kernel.__name__ == "hop_sums_kernel" and "ahead-of-time" in aph.hop_sums_kernel.__doc__


@pytest.mark.parametrize("name", MACHINES)
def test_closed_form_equals_pairwise_on_random_allocations(name):
    ft = fattree.load(name)
    rng = np.random.default_rng(42)
    allocs = []
    # 250 allocations of 1 to 256 nodes, padded to 256 (the pairwise sums, every pair of a
    # padded row, were most of this test's time with 1,000 allocations of up to 300 in 512).
    for _ in range(250):
        n = int(rng.integers(1, min(ft.n_nodes, 256) + 1))
        allocs.append(rng.choice(ft.n_nodes, n, replace=False))
    padded = aph.pad(allocs, width=aph.bucket(max(len(a) for a in allocs)))
    closed = np.asarray(aph.hop_sums(ft, padded))
    pairwise = np.asarray(aph.hop_sums_pairwise(ft, padded))
    assert np.array_equal(closed, pairwise)
    # and against the plain-Python definition on a sample
    for i in range(0, 250, 23):
        assert closed[i] == _brute_hop_sum(ft, allocs[i].tolist())


def test_closed_form_equals_pairwise_on_compact_allocations():
    # Contiguous blocks hit whole leaves and pods, the regime where the counts matter most.
    ft = fattree.load("pinot")
    allocs = [np.arange(s, s + n) for s, n in [(0, 18), (5, 40), (300, 400), (0, 1024), (1000, 1592)]]
    padded = aph.pad(allocs, width=2048)
    assert np.array_equal(np.asarray(aph.hop_sums(ft, padded)), np.asarray(aph.hop_sums_pairwise(ft, padded)))


def test_ideal_aph_is_the_minimum_and_matches_compact_fill():
    ft = fattree.load("ft6x6")
    # Brute force over every 4-node and 10-node subset would be large; instead compare with
    # the APH of the first n nodes (fill a leaf, then a pod, then pods) and check it is
    # never beaten by random allocations.
    ideal_sum = lambda n: round(aph.ideal_aph(ft, n) * n * (n - 1))  # noqa: E731
    for n in range(1, ft.n_nodes + 1):
        compact = _brute_hop_sum(ft, list(range(n)))
        assert ideal_sum(n) == compact
    rng = np.random.default_rng(1)
    for n in (4, 10, 20):
        best = min(_brute_hop_sum(ft, rng.choice(ft.n_nodes, n, replace=False).tolist()) for _ in range(300))
        assert best >= ideal_sum(n)
    cab = fattree.load("cab")
    assert aph.ideal_aph(cab, 18) == 0.0 and aph.ideal_aph(cab, 19) > 0
    # One full pod (324 = 18 leaves of 18): 2 * (324^2 - 18 * 18^2) / (324 * 323).
    assert aph.ideal_aph(cab, 324) == pytest.approx(2 * (324**2 - 18 * 18**2) / (324 * 323))
    # One pod plus one node: by hand, (2 * (104977 - 5833) + 4 * (105625 - 104977)) / (325 * 324).
    assert aph.ideal_aph(cab, 325) == pytest.approx(200880 / 105300)


def test_random_allocations_are_uniform_subsets_of_free_nodes_and_deterministic():
    ft = fattree.load("cab")
    free = np.asarray(montecarlo.random_busy_mask(jax.random.PRNGKey(3), ft.n_nodes, 0.6))
    assert free.sum() == ft.n_nodes - round(0.6 * ft.n_nodes)
    keys = jax.random.split(jax.random.PRNGKey(7), 256)
    allocs = np.asarray(montecarlo.random_allocations(keys, free, 50, width=64))
    again = np.asarray(montecarlo.random_allocations(keys, free, 50, width=64))
    assert np.array_equal(allocs, again)
    other = np.asarray(montecarlo.random_allocations(jax.random.split(jax.random.PRNGKey(8), 256), free, 50, width=64))
    assert not np.array_equal(allocs, other)
    for row in allocs:
        chosen = row[row >= 0]
        assert len(chosen) == 50 and len(set(chosen.tolist())) == 50 and free[chosen].all()
    # Uniformity: every free node is drawn about equally often (256 * 50 / free draws each).
    hits = np.bincount(allocs[allocs >= 0], minlength=ft.n_nodes)[free]
    expected = 256 * 50 / free.sum()
    assert hits.min() > 0  # P(a free node never drawn) ~ exp(-25) per node
    assert hits.std() < 3 * np.sqrt(expected)
    # No bias by position in the free list: low and high ids are drawn alike (each half's mean
    # has a standard error of ~0.3 draws).
    half = len(hits) // 2
    assert abs(hits[:half].mean() - hits[half:].mean()) < 2.0


def test_random_allocation_row_is_short_when_too_few_nodes_are_free():
    free = np.zeros(18, bool)
    free[[2, 5, 9]] = True
    rows = np.asarray(montecarlo.random_allocations(jax.random.split(jax.random.PRNGKey(0), 4), free, 5, width=16))
    for row in rows:
        assert sorted(row[row >= 0].tolist()) == [2, 5, 9]


@pytest.mark.parametrize("host", [True, False], ids=["host-rule", "padded-kernel"])
def test_aph_of_variable_sizes_matches_brute_force(host):
    ft = fattree.load("ft6x6")
    rng = np.random.default_rng(5)
    allocs = [rng.choice(ft.n_nodes, int(rng.integers(1, 40)), replace=False) for _ in range(50)]
    got = aph.aph_of(ft, allocs, host=host)
    for a, g in zip(allocs, got):
        n = len(a)
        expected = _brute_hop_sum(ft, a.tolist()) / (n * (n - 1)) if n > 1 else 0.0
        assert g == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("groups", [7, 50_000], ids=["dense-table", "distinct-keys"])
def test_squared_group_counts_by_counting(groups):
    """Both ways :func:`squared_group_counts` counts (a dense table for few groups, distinct
    keys for many) against a Counter per allocation, empty allocations included."""
    from collections import Counter

    from fattorus.topology.base import flat_allocations, squared_group_counts

    rng = np.random.default_rng(groups)
    allocs = [rng.integers(0, groups, int(rng.integers(0, 30))) for _ in range(40)] + [np.array([], np.int64)]
    group, owner = flat_allocations(allocs)
    got = squared_group_counts(owner, group, len(allocs))
    assert got.dtype == np.int64
    assert got.tolist() == [sum(c * c for c in Counter(a.tolist()).values()) for a in allocs]


def test_sharded_batch_on_two_cpu_devices():
    # kernels.md: a batch split across devices gives the same answer. Run in a subprocess so
    # the forced device count does not leak into this process.
    import subprocess
    import sys

    code = (
        "import jax, numpy as np\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n"
        "from fattorus.kernels import aph\nfrom fattorus.topology import fattree\n"
        "assert len(jax.devices()) == 2\n"
        "ft = fattree.load('cab')\n"
        "rng = np.random.default_rng(0)\n"
        "a = aph.pad([rng.choice(ft.n_nodes, 100, replace=False) for _ in range(64)], width=256)\n"
        "mesh = jax.make_mesh((2,), ('b',))\n"
        "x = jax.device_put(a, NamedSharding(mesh, P('b')))\n"
        "s = aph.hop_sums(ft, x)\n"
        "assert np.array_equal(np.asarray(s), np.asarray(aph.hop_sums_pairwise(ft, a)))\n"
        "print('ok', len(s.sharding.device_set))\n"
    )
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok 2")


def _brute_torus_hop_sum(torus, nodes):
    """Sum over ordered pairs of torus hops (ring distance per dimension), pair by pair in
    chunks: no histograms, no JAX. A pair's hops are small (int32 is plenty and several times
    faster than int64 here); each chunk is summed in int64 and the chunks in a Python int."""
    coords = [np.asarray(c, np.int32) for c in torus.coords(np.asarray(nodes))[:3]]
    total = 0
    for i in range(0, len(nodes), 512):
        hops = 0
        for c, n in zip(coords, torus.dims):
            d = np.abs(c[i:i + 512, None] - c[None, :])
            hops = hops + np.minimum(d, n - d)
        total += int(hops.sum(dtype=np.int64))
    return total


def test_aph_of_large_blue_waters_jobs_is_exact_past_int32():
    """Hop sums of Blue Waters jobs can pass 2^31 from ~7,700 nodes (36 hops across) and do for
    a scattered 13,000-node job (~18 hops a pair): its APH equals the pairwise sum (int32 sums
    gave -13.7 for the first 12,000 XE nodes)."""
    from fattorus import topology

    bw = topology.load("bluewaters")
    xe = np.flatnonzero(np.asarray(bw.node_kind) == 0)
    rng = np.random.default_rng(14)
    allocs = [rng.choice(xe, 13000, replace=False), xe[:3]]
    assert not aph.int32_exact(bw, aph.bucket(13000))
    brute = [_brute_torus_hop_sum(bw, a) for a in allocs]
    for host in (True, False):  # the torus's host rule (int64), then the padded kernel under x64
        got = aph.aph_of(bw, allocs, host=host)
        for a, g, b in zip(allocs, got, brute):
            n = len(a)
            assert g == pytest.approx(b / (n * (n - 1)), rel=1e-12)
    assert brute[0] > 2**31 and got[0] * 13000 * 12999 > 2**31  # the case int32 cannot hold
    # The padded-batch kernels called directly (montecarlo.aph_table does) are exact too.
    batch = aph.pad(allocs[:1])
    assert int(np.asarray(aph.hop_sums(bw, batch))[0]) == brute[0]
    assert float(np.asarray(aph.aph(bw, batch))[0]) == pytest.approx(got[0], rel=1e-12)


def test_node_ids_outside_the_machine_are_refused():
    """A node id past the machine gave a number without a word (JAX drops out-of-range
    writes): on ft6 (18 nodes, at most 4 hops) [0, 18] read 6 hops, the closed-form and
    pairwise sums disagreeing (12 and 8). One line now, at every entry point (session 27)."""
    import jax.numpy as jnp

    from fattorus import topology

    ft = topology.load("ft6")
    for call, allocs in ((aph.aph, jnp.array([[0, 18]])), (aph.hop_sums, jnp.array([[0, -3]]))):
        with pytest.raises(ValueError, match=r"node id (18|-3) is not one of the machine's 18 nodes \(0..17; -1 pads\)"):
            call(ft, allocs)
    with pytest.raises(ValueError, match="node id -1 is not one of the machine's 18 nodes"):
        aph.aph_of(ft, [np.array([0, -1])])  # unpadded allocations hold no -1
    with pytest.raises(ValueError, match="node ids must be whole numbers"):
        aph.aph_of(ft, [np.array([0, 1.5])])
    # Two nodes of different pods: 4 hops each way, by hand; padding and an empty job still fine.
    assert float(aph.aph(ft, jnp.array([[0, 17, -1, -1]]))[0]) == 4.0
    assert aph.aph_of(ft, [np.array([0, 17]), np.array([], np.int64)]).tolist() == [4.0, 0.0]


def test_the_monte_carlo_table_marks_cells_whose_draws_are_all_one_allocation(capsys):
    """At 80 % busy on ft6 a cell's busy state leaves as many free nodes as the job asks:
    each of the 1,024 draws is the same allocation (mean = median = p95), which the table
    printed as a distribution (a session-46 report). The row says how many nodes were free,
    and the printed row is marked with a footnote."""
    ft = fattree.load("ft6")
    rows = montecarlo.aph_table(ft, sizes=(4,), busy_fractions=(0.0, 0.8), batch=64)
    assert [r["free"] for r in rows] == [ft.n_nodes, ft.n_nodes - round(0.8 * ft.n_nodes)]
    whole = [r for r in rows if r["nodes"] == r["free"]]
    assert len(whole) == 1 and whole[0]["mean_aph"] == whole[0]["median_aph"] == whole[0]["p95_aph"]
    montecarlo.main(["ft6"])
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "* as many nodes as the busy state leaves free: every draw is the same allocation"
    assert sum(line.endswith(" *") for line in out) >= 1
