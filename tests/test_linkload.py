"""Link loads and interference: hand-worked Figure 2 example, references, CLI, replay check.

Figure 2 of the fat-tree paper (radix 6, ``ft6``: 3 nodes per leaf, 3 leaves and 3 L2 per
pod, 2 pods, 6 cores, so ``C = 2`` cores per L2), 0-based node ids: red {1, 4}, blue
{2, 3, 5, 10, 11}, yellow {7, 13, 14}; every node of a job sends one unit to every other
node of the job. D-mod-k: destination ``d`` uses L2 index ``d mod 3`` and core
``(d mod 3) * 2 + (d // 3) mod 2``.

Worked by hand (``leafX`` global leaf, ``L2(p,s)``, ``cY`` core):

red   1->4:  leaf0->L2(0,1)->leaf1          4->1: leaf1->L2(0,1)->leaf0
blue  (keys: 2 -> s2,c4; 3 -> s0,c1; 5 -> s2,c5; 10 -> s1,c3; 11 -> s2,c5)
      2->3 leaf0->L2(0,0)->leaf1            2->5 leaf0->L2(0,2)->leaf1
      3->2, 5->2 leaf1->L2(0,2)->leaf0      3<->5, 10<->11 stay on their leaf
      2->10, 3->10, 5->10: leafS->L2(0,1)->c3->L2(1,1)->leaf3
      2->11, 3->11, 5->11: leafS->L2(0,2)->c5->L2(1,2)->leaf3
      10->2, 11->2: leaf3->L2(1,2)->c4->L2(0,2)->leaf0
      10->3, 11->3: leaf3->L2(1,0)->c1->L2(0,0)->leaf1
      10->5, 11->5: leaf3->L2(1,2)->c5->L2(0,2)->leaf1
yellow (keys: 7 -> s1,c2; 13 -> s1,c2; 14 -> s2,c4)
      7->13: leaf2->L2(0,1)->c2->L2(1,1)->leaf4   7->14: leaf2->L2(0,2)->c4->L2(1,2)->leaf4
      13->7, 14->7: leaf4->L2(1,1)->c2->L2(0,1)->leaf2
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import polars as pl
import pytest

from fattorus import paths
from fattorus.topology import fattree
from fattorus.analysis import interference
from fattorus.kernels import linkload
from fattorus.analysis import patterns
from fattorus.topology import fattree_routing as routing
from fattorus.topology.fattree import FatTree

RED, BLUE, YELLOW = [1, 4], [2, 3, 5, 10, 11], [7, 13, 14]


class Names:
    """Link ids from readable endpoint names, through the documented vertex numbering."""

    def __init__(self, ft: FatTree):
        self.ft = ft
        meta = routing.links(ft)
        self.ids = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(meta.src, meta.dst))}
        N, S = ft.n_nodes, ft.l2_per_pod
        self.v = {}
        for n in range(N):
            self.v[f"n{n}"] = n
        for leaf in range(ft.n_leaves):
            self.v[f"leaf{leaf}"] = N + leaf
        for pod in range(ft.pods):
            for s in range(S):
                self.v[f"L2({pod},{s})"] = N + ft.n_leaves + pod * S + s
        for c in range(ft.n_cores):
            self.v[f"c{c}"] = N + ft.n_leaves + ft.pods * S + c

    def __call__(self, a: str, b: str) -> int:
        return self.ids[(self.v[a], self.v[b])]

    def vector(self, expected: dict[tuple[str, str], float]) -> np.ndarray:
        out = np.zeros(routing.n_links(self.ft))
        for (a, b), x in expected.items():
            out[self(a, b)] += x
        return out


def node_links(nodes, per_node):
    out = {}
    for n in nodes:
        leaf = f"leaf{n // 3}"
        out[(f"n{n}", leaf)] = per_node
        out[(leaf, f"n{n}")] = per_node
    return out


RED_LOADS = {
    ("leaf0", "L2(0,1)"): 1, ("L2(0,1)", "leaf1"): 1, ("leaf1", "L2(0,1)"): 1, ("L2(0,1)", "leaf0"): 1,
    **node_links(RED, 1),
}
BLUE_LOADS = {
    # leaf -> L2 (16 flows leave their leaf)
    ("leaf0", "L2(0,0)"): 1, ("leaf0", "L2(0,1)"): 1, ("leaf0", "L2(0,2)"): 2,
    ("leaf1", "L2(0,1)"): 2, ("leaf1", "L2(0,2)"): 4,
    ("leaf3", "L2(1,0)"): 2, ("leaf3", "L2(1,2)"): 4,
    # L2 -> leaf
    ("L2(0,0)", "leaf1"): 3, ("L2(0,2)", "leaf1"): 3, ("L2(0,2)", "leaf0"): 4,
    ("L2(1,1)", "leaf3"): 3, ("L2(1,2)", "leaf3"): 3,
    # L2 -> core (12 cross-pod flows)
    ("L2(0,1)", "c3"): 3, ("L2(0,2)", "c5"): 3, ("L2(1,2)", "c4"): 2, ("L2(1,0)", "c1"): 2, ("L2(1,2)", "c5"): 2,
    # core -> L2
    ("c3", "L2(1,1)"): 3, ("c5", "L2(1,2)"): 3, ("c4", "L2(0,2)"): 2, ("c1", "L2(0,0)"): 2, ("c5", "L2(0,2)"): 2,
    **node_links(BLUE, 4),
}
YELLOW_LOADS = {
    ("leaf2", "L2(0,1)"): 1, ("leaf2", "L2(0,2)"): 1, ("leaf4", "L2(1,1)"): 2,
    ("L2(1,1)", "leaf4"): 1, ("L2(1,2)", "leaf4"): 1, ("L2(0,1)", "leaf2"): 2,
    ("L2(0,1)", "c2"): 1, ("L2(0,2)", "c4"): 1, ("L2(1,1)", "c2"): 2,
    ("c2", "L2(1,1)"): 1, ("c4", "L2(1,2)"): 1, ("c2", "L2(0,1)"): 2,
    **node_links(YELLOW, 2),
}


def a2a_loads(ft: FatTree, nodes: list[int]) -> np.ndarray:
    """Loads of an all-to-all of one unit among ``nodes``; the flows padded (``-1``, 0 bytes)
    to 256, as the interference command pads a job's: one compilation per machine."""
    src, dst, nbytes = patterns.to_nodes(nodes, patterns.all_to_all(None, len(nodes), nbytes=1.0))
    pad = 256 - len(src)
    src, dst = (np.pad(a, (0, pad), constant_values=-1) for a in (src, dst))
    return np.asarray(linkload.flow_link_loads(ft, src, dst, np.pad(nbytes.astype(np.float32), (0, pad))))


@pytest.fixture(scope="module")
def fig2(ft6):
    return np.stack([a2a_loads(ft6, job) for job in (RED, BLUE, YELLOW)])


def test_figure2_link_loads_by_hand(ft6, fig2):
    names = Names(ft6)
    for got, expected in zip(fig2, (RED_LOADS, BLUE_LOADS, YELLOW_LOADS)):
        np.testing.assert_array_equal(got, names.vector(expected))


def test_figure2_interference(ft6, fig2):
    names = Names(ft6)
    res = linkload.interference(ft6, jnp.asarray(fig2))
    shared = set(np.flatnonzero(np.asarray(res.shared)).tolist())
    # Red and blue share the two L1->L2 links leaf0->L2(0,1) and leaf1->L2(0,1).
    assert shared == {names("leaf0", "L2(0,1)"), names("leaf1", "L2(0,1)")}
    np.testing.assert_array_equal(res.shared_links, [2, 2, 0])
    np.testing.assert_array_equal(res.shared_by_level, [[0, 2, 0], [0, 2, 0], [0, 0, 0]])
    # Inter-switch links used: red 4; blue 7 + 5 leaf--L2 and 5 + 5 L2--core = 22; yellow 12.
    np.testing.assert_array_equal(res.links_used, [4, 22, 12])
    # Red: 2 of its 4 link-units are on shared links; blue: 1 + 2 of 16 + 16 + 12 + 12 = 56.
    np.testing.assert_allclose(res.shared_share, [0.5, 3 / 56, 0.0], rtol=1e-6)
    pair = np.asarray(linkload.shared_pairs(ft6, jnp.asarray(fig2)))
    np.testing.assert_array_equal(pair, [[4, 2, 0], [2, 22, 0], [0, 0, 12]])
    # With node--leaf links counted too nothing more is shared (nodes belong to one job).
    res0 = linkload.interference(ft6, jnp.asarray(fig2), min_level=0)
    np.testing.assert_array_equal(res0.shared_links, [2, 2, 0])
    np.testing.assert_array_equal(res0.links_used, [4 + 4, 22 + 10, 12 + 6])


def test_figure2_blue_yellow_share_l2_core_links_with_one_core_per_l2():
    # On ft6 as configured (6 cores, C = 2) D-mod-k sends blue's and yellow's cross-pod
    # flows through different cores (above: blue c1, c3, c4, c5 vs yellow c2, c4 from the
    # other pod), so they share no link. The paper's text says they *can* meet on L2--L3
    # links; with one core per L2 index (3 cores, C = 1) the core is the destination's
    # L2 index alone, and by hand: blue 2,3,5->10 and yellow 7->13 both take
    # L2(0,1)->c1->L2(1,1); blue 2,3,5->11 and yellow 7->14 both take L2(0,2)->c2->L2(1,2).
    ft = FatTree(name="ft6_c3", radix=6, nodes_per_leaf=3, leaves_per_pod=3, pods=2, up_ports=3, core_switches=3)
    names = Names(ft)
    loads = np.stack([a2a_loads(ft, job) for job in (RED, BLUE, YELLOW)])
    res = linkload.interference(ft, jnp.asarray(loads))
    expected = {names("L2(0,1)", "c1"), names("c1", "L2(1,1)"), names("L2(0,2)", "c2"), names("c2", "L2(1,2)"),
                names("leaf0", "L2(0,1)"), names("leaf1", "L2(0,1)")}
    assert set(np.flatnonzero(np.asarray(res.shared)).tolist()) == expected
    np.testing.assert_array_equal(res.shared_by_level, [[0, 2, 0], [0, 2, 4], [0, 0, 4]])
    assert loads[1, names("L2(0,1)", "c1")] == 3 and loads[2, names("L2(0,1)", "c1")] == 1


def test_link_loads_against_python_loop():
    ft = fattree.load("ft6_tapered")
    rng = np.random.default_rng(0)
    src = rng.integers(-1, ft.n_nodes, 500)
    dst = rng.integers(0, ft.n_nodes, 500)
    nbytes = rng.integers(1, 1000, 500).astype(np.float32)
    r = np.asarray(routing.routes(ft, src, dst))
    expected = np.zeros(routing.n_links(ft))
    for row, b in zip(r, nbytes):
        for link in row:
            if link >= 0:
                expected[link] += b
    got = np.asarray(linkload.link_loads(jnp.asarray(r), jnp.asarray(nbytes), routing.n_links(ft)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    fused = np.asarray(linkload.flow_link_loads(ft, src, dst, nbytes))
    np.testing.assert_allclose(fused, expected, rtol=1e-6)
    # Conservation: every valid flow puts its bytes on (hops + 2) links.
    valid = (src >= 0) & (src != dst)
    hops = np.asarray(fattree.hops(ft, src, dst))
    assert np.isclose(got.sum(), float((nbytes * (hops + 2))[valid].sum()), rtol=1e-6)


def test_job_link_loads_vmaps_over_padded_jobs(ft6, fig2):
    allocs = jnp.asarray([[1, 4, -1, -1, -1], [2, 3, 5, 10, 11], [7, 13, 14, -1, -1]], jnp.int32)
    flows = []
    for job in (RED, BLUE, YELLOW):
        t = patterns.all_to_all(None, len(job), nbytes=1.0)
        pad = 20 - t.n_flows
        flows.append((np.pad(t.src, (0, pad), constant_values=-1), np.pad(t.dst, (0, pad), constant_values=-1),
                      np.pad(t.nbytes, (0, pad), constant_values=99.0)))
    src, dst, nb = (jnp.asarray(np.stack(x)) for x in zip(*flows))
    batched = jax.vmap(linkload.job_link_loads, in_axes=(None, 0, 0, 0, 0))(ft6, allocs, src, dst, nb)
    np.testing.assert_array_equal(np.asarray(batched), fig2)


def test_level_stats_by_hand(ft6, fig2):
    blue = fig2[1]
    s = linkload.summarize(ft6, blue, quantiles=(0.5,))
    # Level 1 (leaf--L2, 36 links): loads 1,1,2,2,4,2,4 up and 3,3,4,3,3 down, sum 32.
    assert s["leaf-L2"]["max"] == 4 and s["leaf-L2"]["used"] == 12
    assert s["leaf-L2"]["mean"] == pytest.approx(32 / 36)
    assert s["leaf-L2"]["p50"] == 0
    # Level 2 (L2--core, 2 pods x 3 L2 x 2 cores x 2 directions = 24 links): sum 24, max 3.
    assert s["L2-core"]["max"] == 3 and s["L2-core"]["used"] == 10
    assert s["L2-core"]["mean"] == pytest.approx(1.0)
    # Level 0 (36 node links): 5 nodes x 4 up + 4 down = 40.
    assert s["node-leaf"]["mean"] == pytest.approx(40 / 36) and s["node-leaf"]["used"] == 10
    batch = jax.vmap(lambda x: linkload.level_stats(ft6, x))(jnp.asarray(fig2))
    assert batch.shape == (3, 3, 3 + len(linkload.QUANTILES))


# Command line ---------------------------------------------------------------------------------
def write_run(tmp: Path, topo: str, jobs: list[tuple[int, float, float, list[int]]]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "job_id": [j[0] for j in jobs],
            "start_s": [j[1] for j in jobs],
            "end_s": [j[2] for j in jobs],
            "nodes": [len(j[3]) for j in jobs],
            "job_type": ["T2"] * len(jobs),
            "alloc": pl.Series([np.asarray(j[3], np.int32) for j in jobs], dtype=pl.List(pl.Int32)),
        },
        schema_overrides={"job_id": pl.Int64, "nodes": pl.Int32},
    ).write_parquet(tmp / "jobs.parquet")
    (tmp / "summary.json").write_text(json.dumps({"schema": 1, "config": {"topo": topo}}))
    return tmp


def test_cli_figure2(tmp_path, capsys):
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 100.0, RED), (2, 0.0, 100.0, BLUE), (3, 0.0, 100.0, YELLOW)])
    assert interference.main([str(run), "--pattern-mix", "all_to_all", "--instants", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "jobs exposed at least once: 2/3" in out
    table = pl.read_parquet(run / "interference.parquet").sort(["instant", "job_id"])
    assert table.height == 9 and set(table["pattern"]) == {"all_to_all"}
    first = table.filter(pl.col("instant") == 0)
    assert first["shared_links"].to_list() == [2, 2, 0]
    assert first["shared_leaf_l2"].to_list() == [2, 2, 0] and first["shared_l2_core"].to_list() == [0, 0, 0]
    assert first["exposed"].to_list() == [True, True, False]
    assert first["instant_shared_leaf_l2"].to_list() == [2, 2, 2]
    assert first["flows"].to_list() == [2, 20, 6]
    assert not list(run.glob(".*tmp*"))


def test_cli_only_counts_running_jobs(tmp_path):
    # Red and blue never overlap in time: nobody is exposed.
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 10.0, RED), (2, 10.0, 20.0, BLUE)])
    assert interference.main([str(run), "--pattern-mix", "all_to_all=2,stencil2d=1", "--instants", "5"]) == 0
    table = pl.read_parquet(run / "interference.parquet")
    assert table.height == 5 and table["running_jobs"].max() == 1 and not table["exposed"].any()


def test_cli_errors(tmp_path, capsys):
    assert interference.main([str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert interference.main([str(tmp_path / "empty")]) == 2
    assert "summary.json: missing" in capsys.readouterr().err
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 1.0, [0, 40])])
    assert interference.main([str(run)]) == 2
    assert "beyond" in capsys.readouterr().err
    run = write_run(tmp_path / "run2", "nope", [(1, 0.0, 1.0, [0, 1])])
    assert interference.main([str(run)]) == 2
    assert "unknown topology" in capsys.readouterr().err
    run = write_run(tmp_path / "run3", "ft6", [(1, 0.0, 1.0, [0, 1])])
    assert interference.main([str(run), "--pattern-mix", "bogus=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown pattern" in err and err.count("\n") == 1


HUGE = str(10**23)  # past int64: it reached NumPy (C long) or JAX (overflow) as a traceback


@pytest.mark.parametrize("args, words", [
    (["--seed", HUGE], f"--seed must be from 0 to 4294967295, got {HUGE}"),
    (["--seed", str(2**32)], "--seed must be from 0 to 4294967295, got 4294967296"),
    (["--instants", HUGE], f"--instants must be from 1 to 100,000, got {HUGE}"),
    (["--instants", "3000000000"], "--instants must be from 1 to 100,000"),  # JAX asked for 36 GB at once
    # inf made every pattern probability nan: the draw went on, silently wrong
    (["--pattern-mix", "stencil2d=inf,all_to_all=1"], "weight of pattern 'stencil2d' in --pattern-mix must be a "
                                                      "finite number > 0, got inf"),
    (["--pattern-mix", "stencil2d=1e308,all_to_all=1e308"], "the weights in --pattern-mix sum past the largest float"),
    # summed, a repeated name read as a weight nobody typed (stencil4d=1,stencil4d=2: 3)
    (["--pattern-mix", "stencil2d=1,all_to_all,stencil2d=2"], "pattern 'stencil2d' given more than once in --pattern-mix"),
])
def test_cli_counts_and_weights_past_what_it_takes_are_one_line(tmp_path, capsys, args, words):
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    before = sorted(p.name for p in run.iterdir())
    assert interference.main([str(run), *args]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fattorus.interference: error: ") and words in lines[0], err
    assert "Traceback" not in err and sorted(p.name for p in run.iterdir()) == before  # nothing written


def test_cli_takes_the_largest_seed(tmp_path, capsys):
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    assert interference.main([str(run), "--pattern-mix", "all_to_all", "--instants", "1",
                              "--seed", str(2**32 - 1)]) == 0
    assert (run / "interference.parquet").is_file()


# Replay: topology-aware schedules are interference-free ----------------------------------------
def read_swf(path: Path, n: int, skip: int) -> pl.DataFrame:
    """First ``n`` usable jobs after ``skip`` of a Standard Workload Format trace (hand parser)."""
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            v = line.split()
            job, submit, runtime, procs, req_procs, req_time = (float(v[i]) for i in (0, 1, 3, 4, 7, 8))
            procs = procs if procs > 0 else req_procs
            if runtime > 0 and procs > 0:
                rows.append((int(job), submit, runtime, int(procs), req_time if req_time > 0 else None))
    rows = rows[skip: skip + n]
    t0 = rows[0][1]
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "submit_s": [r[1] - t0 for r in rows],
            "runtime_s": [r[2] for r in rows],
            "nodes": [r[3] for r in rows],
            "requested_s": [r[4] for r in rows],
        },
        schema_overrides={"job_id": pl.Int64, "nodes": pl.Int64, "requested_s": pl.Float64},
    )


# Shipped with the repository (data/traces/README.md has its provenance).
TRACE = paths.traces_dir() / "KTH-SP2-1996-2.1-cln.swf.gz"


def max_jobs_per_link(ft: FatTree, jobs: pl.DataFrame) -> int:
    """Largest number of concurrently running jobs whose ``spread`` traffic shares one
    inter-switch link (counted here from each job's link loads). Every job's flows are padded
    (``-1``, 0 bytes) to one width: one compilation of the load kernel."""
    key = jax.random.PRNGKey(0)
    start = jobs["start_s"].to_numpy()
    end = jobs["end_s"].to_numpy()
    allocs = [np.asarray(a, np.int32) for a in jobs["alloc"].to_list()]
    flows = [patterns.to_nodes(a, patterns.spread(jax.random.fold_in(key, i), len(a))) for i, a in enumerate(allocs)]
    width = 1 << (max(len(src) for src, _, _ in flows) - 1).bit_length()

    def padded(x: np.ndarray, fill: float) -> np.ndarray:
        return np.pad(x, (0, width - len(x)), constant_values=fill)

    used = np.stack([np.asarray(linkload.flow_link_loads(ft, padded(src, -1), padded(dst, -1),
                                                         padded(nbytes.astype(np.float32), 0))) > 0
                     for src, dst, nbytes in flows]) & (ft.link_class >= 1)[None, :]
    worst = 0
    for t in np.unique(start):  # the running set only grows at starts
        running = np.flatnonzero((start <= t) & (t < end))
        worst = max(worst, int(used[running].sum(axis=0).max()))
    return worst


def test_replay_ta_is_interference_free_and_to_is_not():
    from fattorus.sched import replay
    # KTH-SP2: 100 one-processor nodes; a radix-8 tree with 4 nodes per leaf, 4 leaves per
    # pod and 8 pods has 128 nodes (C = 8 cores / 4 L2 = 2 cores per L2).
    ft = FatTree(name="ft8", radix=8, nodes_per_leaf=4, leaves_per_pod=4, pods=8, up_ports=4, core_switches=8)
    jobs = read_swf(TRACE, n=250, skip=5000)
    ta = replay.replay(jobs, ft, "ta", "easy").jobs
    to = replay.replay(jobs, ft, "to", "easy").jobs
    assert max_jobs_per_link(ft, ta) == 1
    assert max_jobs_per_link(ft, to) >= 2


@pytest.mark.parametrize("out, words", [
    ("/nonexistent/dir/x.parquet", "run directory or under a results/"),
    ("RUN/jobs.parquet", "overwrite the run's own"),
    ("RUN/x.csv", ".parquet"),
    ("RUN/jobs.parquet/x.parquet", "jobs.parquet is a file, not a directory"),
])
def test_cli_out_stays_with_the_results(tmp_path, capsys, out, words):
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    before = (run / "jobs.parquet").read_bytes()
    assert interference.main([str(run), "--out", out.replace("RUN", str(run))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and err[0].startswith("fattorus.interference: error:")
    assert (run / "jobs.parquet").read_bytes() == before and not Path("/nonexistent").exists()
    assert interference.main([str(run), "--out", str(run / "other.parquet"), "--instants", "1"]) == 0
    # A missing folder on the way is made, as report's --out (it was refused, session 43).
    assert interference.main([str(run), "--out", str(run / "new" / "x.parquet"), "--instants", "1"]) == 0
    assert (run / "new" / "x.parquet").is_file()


def test_cli_topology_described_in_summary(tmp_path):
    # config.topo may be a mapping with the topology's parameters instead of a name.
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    topo = {"name": "ft6_c3", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 2,
            "up_ports": 3, "core_switches": 3}
    (run / "summary.json").write_text(json.dumps({"config": {"topo": topo}}))
    assert interference.main([str(run), "--pattern-mix", "all_to_all", "--instants", "1"]) == 0
    table = pl.read_parquet(run / "interference.parquet").sort("job_id")
    assert table["shared_links"].to_list() == [2, 2]


def test_the_summary_gives_no_mean_over_no_exposed_job_instant():
    """Means over exposed job-instants only where there are some: with none the line says so
    (it printed 0.000, a value); with one, its own numbers (by hand: 3 links, share 0.25)."""
    from fattorus.analysis import interference

    def table(exposed: list[bool]) -> pl.DataFrame:
        n = len(exposed)
        return pl.DataFrame({"instant": [0] * n, "job_id": list(range(n)), "exposed": exposed, "pattern": ["a"] * n,
                             "instant_shared_core": [3] * n, "shared_core": [3 if e else 0 for e in exposed],
                             "shared_links": [3 if e else 0 for e in exposed],
                             "shared_share": [0.25 if e else 0.0 for e in exposed]})

    quiet = interference.summary_lines(table([False, False]))
    assert "shared links and their traffic share: none (no job-instant was exposed)" in quiet
    assert not any("mean over exposed" in line for line in quiet)
    loud = interference.summary_lines(table([True, False]))
    assert "shared links per exposed job-instant (mean): total 3.0, core 3.0" in loud
    assert "traffic share on shared links (mean over exposed job-instants): 0.250" in loud


def test_cli_output_that_cannot_be_written_exits_1_naming_it(tmp_path, capsys):
    """A read-only output folder: exit 1 (the table made, not kept), one line naming the file
    asked for, not the writer's temporary file (it exited 2 naming ``.i.parquet.t_*.tmp``)."""
    import os

    if os.geteuid() == 0:  # root writes into a read-only folder: make the target a folder instead
        run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
        target = run / "i.parquet"
        target.mkdir()
        (target / "x").write_text("x")
    else:
        run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
        target = run / "i.parquet"
        run.chmod(0o555)
    try:
        assert interference.main([str(run), "--out", str(target), "--instants", "1"]) == 1
    finally:
        run.chmod(0o755)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"fattorus.interference: error: cannot write {target}"), err
    assert ".tmp" not in err[0]


def test_cli_shows_progress_over_the_instants(tmp_path, monkeypatch, capsys):
    """A long run said nothing until its end (``--instants 100000``: minutes; session 43): a
    line every few seconds on stderr when it is not a terminal (every instant here: 0 s)."""
    import fattorus.args

    real = fattorus.args.shown
    monkeypatch.setattr(fattorus.args, "shown", lambda items, prog, desc, unit: real(items, prog, desc, unit, every_s=0))
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    assert interference.main([str(run), "--instants", "3", "--out", str(run / "x.parquet")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "instants" in line]
    assert lines == ["fattorus.interference: instants 0/3", "fattorus.interference: instants 1/3",
                     "fattorus.interference: instants 2/3"], lines


# Interrupted and resumed ---------------------------------------------------------------------------
def _gappy_run(tmp_path: Path) -> Path:
    """Two jobs at the start, one at the end, none between: some instants have no rows."""
    return write_run(tmp_path / "run", "ft6", [(1, 0.0, 30.0, RED), (2, 0.0, 30.0, BLUE), (3, 70.0, 100.0, YELLOW)])


def _stop_at(monkeypatch, call: int) -> list[int]:
    """``exposure`` raises ``KeyboardInterrupt`` at its ``call``-th call (a Ctrl-C in that
    instant); returns the list its calls are counted in."""
    real, calls = interference.exposure, []

    def exposure(ft, loads):
        calls.append(len(loads))
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(ft, loads)

    monkeypatch.setattr(interference, "exposure", exposure)
    return calls


def test_an_interrupted_run_keeps_its_instants_and_resumes_to_the_same_table(tmp_path, monkeypatch, capsys):
    """A Ctrl-C kept nothing (a 100,000-instant run started again, session 43's list): now
    the finished instants are kept beside the table, the same command computes only the
    others, and the table is the one an uninterrupted run writes (that run is the reference)."""
    run = _gappy_run(tmp_path)
    args = [str(run), "--instants", "20", "--seed", "3"]
    assert interference.main([*args, "--out", str(run / "whole.parquet")]) == 0
    whole = pl.read_parquet(run / "whole.parquet")
    busy = whole["instant"].n_unique()
    assert 4 <= busy < 20  # instants with and without running jobs, for the parts to cover
    capsys.readouterr()
    calls = _stop_at(monkeypatch, 3)
    assert interference.main(args) == interference.INTERRUPTED
    err = capsys.readouterr().err.strip().splitlines()
    parts = run / "interference.instants"
    assert err[-1].startswith("fattorus.interference: interrupted; ") and err[-1].endswith(
        f"of 20 instants kept in {parts}, re-run the same command to resume"), err
    assert not (run / "interference.parquet").exists() and (parts / "settings.json").is_file()
    kept = int(err[-1].split("interrupted; ")[1].split(" of")[0])
    assert 2 <= kept < 20  # two busy instants finished before the third's exposure
    monkeypatch.undo()
    calls = _stop_at(monkeypatch, 0)  # counts only
    assert interference.main(args) == 0
    assert f"resuming: {kept} of 20 instants kept in {parts}" in capsys.readouterr().err
    assert len(calls) == busy - 2  # the kept busy instants were not computed again
    assert pl.read_parquet(run / "interference.parquet").equals(whole)
    assert not parts.exists()  # the table holds them now


def test_kept_instants_of_other_settings_are_refused_and_a_damaged_part_is_computed_again(tmp_path, monkeypatch,
                                                                                         capsys):
    run = _gappy_run(tmp_path)
    args = [str(run), "--instants", "12"]
    assert interference.main([*args, "--out", str(run / "whole.parquet")]) == 0
    whole = pl.read_parquet(run / "whole.parquet")
    _stop_at(monkeypatch, 3)
    assert interference.main(args) == interference.INTERRUPTED
    monkeypatch.undo()
    parts = run / "interference.instants"
    before = sorted((p.name, p.read_bytes()) for p in parts.iterdir())
    capsys.readouterr()
    assert interference.main([*args, "--seed", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == (f"fattorus.interference: error: {parts} keeps the instants of an unfinished "
                                        f"run with other settings (seed 0 there, 1 now); re-run it with its own "
                                        f"options to finish it, or delete {parts}"), err
    assert sorted((p.name, p.read_bytes()) for p in parts.iterdir()) == before  # nothing touched
    (first,) = [p for p in parts.glob("i0-*.parquet")]
    first.write_bytes(b"half a file")
    assert interference.main(args) == 0
    assert f"{first}: cannot be read" in capsys.readouterr().err
    assert pl.read_parquet(run / "interference.parquet").equals(whole)


def test_a_table_that_cannot_be_written_keeps_its_instants_for_the_next_run(tmp_path, monkeypatch, capsys):
    run = _gappy_run(tmp_path)
    assert interference.main([str(run), "--instants", "6", "--out", str(run / "whole.parquet")]) == 0
    target = run / "i.parquet"
    target.mkdir()  # a folder where the table goes: its write fails
    (target / "x").write_text("x")
    assert interference.main([str(run), "--instants", "6", "--out", str(target)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"fattorus.interference: error: cannot write {target}") and err[0].endswith(
        f"its 6 instants are kept in {run / 'i.instants'}: the same command writes it without computing them again"), err
    (target / "x").unlink()
    target.rmdir()
    calls = _stop_at(monkeypatch, 0)
    assert interference.main([str(run), "--instants", "6", "--out", str(target)]) == 0
    assert calls == [] and pl.read_parquet(target).equals(pl.read_parquet(run / "whole.parquet"))


def test_a_real_ctrl_c_mid_run_is_one_line_and_130_with_the_instants_kept(tmp_path):
    """The signal itself (not a raised ``KeyboardInterrupt``), through the command's own
    entry: sent by the process to itself in its third instant."""
    import os
    import subprocess
    import sys
    import textwrap

    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 100.0, RED), (2, 0.0, 100.0, BLUE)])
    code = textwrap.dedent(f"""
        import os, signal, time
        from fattorus import interrupt
        interrupt.on_start("fattorus.interference")
        from fattorus.analysis import interference as m
        from fattorus.args import run_piped
        real, calls = m.exposure, []
        def exposure(ft, loads):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(30)
            return real(ft, loads)
        m.exposure = exposure
        interrupt.exit_with(run_piped(lambda: interrupt.run("fattorus.interference",
                                                             lambda: m.main([{str(run)!r}, "--instants", "5"]))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    parts = run / "interference.instants"
    assert out.returncode == 130 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.endswith(f"fattorus.interference: interrupted; 2 of 5 instants kept in {parts}, "
                               "re-run the same command to resume\n"), out.stderr
    assert sorted(p.name for p in parts.iterdir()) == ["i0-2.parquet", "settings.json"]


def test_a_pattern_too_large_for_a_job_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """An all-to-all over the run's largest job past ``patterns.MAX_FLOWS`` ran out of memory
    after minutes (a traceback); now one line, exit 2, nothing written (no kept instants). Here
    the limit is lowered to 20 flows: the 5-node blue job's stencil takes at most 20, its all-to-all 25."""
    run = write_run(tmp_path / "run", "ft6", [(1, 0.0, 5.0, RED), (2, 0.0, 5.0, BLUE)])
    monkeypatch.setattr(patterns, "MAX_FLOWS", 20)
    before = sorted(p.name for p in run.iterdir())
    assert interference.main([str(run), "--pattern-mix", "stencil2d=1,all_to_all=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fattorus.interference: error: --pattern-mix: pattern 'all_to_all' over a job of 5 ranks makes up to "
                   "25 flows, past the 20 one job's traffic may have (it would not fit in memory): give that pattern "
                   "no weight for jobs this large, or run on smaller jobs (the run's job 2 has 5 nodes)"], err
    assert sorted(p.name for p in run.iterdir()) == before
    monkeypatch.setattr(patterns, "MAX_FLOWS", 25)
    assert interference.main([str(run), "--pattern-mix", "stencil2d=1,all_to_all=1"]) == 0


def test_an_instant_out_of_memory_is_one_line_with_the_finished_instants_kept(tmp_path, monkeypatch, capsys):
    """A run past the machine's memory ended in a traceback, its finished instants lost; now one
    line, exit 1, the instants before it kept (the failure simulated at the third instant)."""
    run = _gappy_run(tmp_path)
    real, calls = interference.exposure, []

    def exposure(ft, loads):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError
        return real(ft, loads)

    monkeypatch.setattr(interference, "exposure", exposure)
    assert interference.main([str(run), "--instants", "20"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fattorus.interference: error: out of memory (an allocation failed); "), err
    assert f"of 20 instants kept in {run / 'interference.instants'}" in err[-1]
    assert len(list((run / "interference.instants").glob("i*.parquet"))) >= 1



def test_kept_instants_of_a_reordered_mix_another_backend_or_a_folder_not_ours_are_refused(tmp_path, monkeypatch,
                                                                                           capsys):
    """The mix's order decides which job draws which pattern: a resume with the same weights in
    another order mixed two studies' rows in one table (review, session 44); so did one on
    another JAX backend (float sums). A folder of the parts' name that is not an interference
    run's is neither written into nor taken away."""
    run = _gappy_run(tmp_path)
    args = [str(run), "--instants", "12", "--pattern-mix", "stencil4d=1,random_pairs=1,all_to_all=1"]
    _stop_at(monkeypatch, 3)
    assert interference.main(args) == interference.INTERRUPTED
    monkeypatch.undo()
    parts = run / "interference.instants"
    capsys.readouterr()
    assert interference.main([*args[:-1], "all_to_all=1,random_pairs=1,stencil4d=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(mix stencil4d=1.0,random_pairs=1.0,all_to_all=1.0 there, all_to_all=1.0,random_pairs=1.0," \
        "stencil4d=1.0 now)" in err[0], err
    record = json.loads((parts / "settings.json").read_text())
    here = jax.default_backend()
    assert record["backend"] == here and record["tool"] == "fattorus.interference"
    other_backend = "gpu" if here != "gpu" else "cpu"
    (parts / "settings.json").write_text(json.dumps({**record, "backend": other_backend}))
    assert interference.main(args) == 2
    assert f"backend {other_backend} there, {here} now" in capsys.readouterr().err
    # Another folder under the name the table's kept instants would take: refused, left as it is.
    other = tmp_path / "results" / "r3.instants"
    other.mkdir(parents=True)
    (other / "jobs.parquet").write_bytes(b"someone's")
    assert interference.main([str(run), "--instants", "2", "--out", str(tmp_path / "results" / "r3.parquet")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{other} exists and keeps no instants of an interference run" in err[0], err
    assert sorted(p.name for p in other.iterdir()) == ["jobs.parquet"] and not (tmp_path / "results" / "r3.parquet").exists()
