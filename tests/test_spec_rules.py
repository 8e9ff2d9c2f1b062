"""Spec rules that had no test of their own, each checked against an independent reference:
a hand-worked expectation written from the spec's wording, or a brute-force recomputation
from the run's per-job table (``jobs.parquet``), never against the code's own figure.

* per-bin wait and APH summaries of ``summary.json`` (metrics-and-outputs.md);
* an unsorted log is sorted by (submit, job id) before the replay (scheduling.md);
* ``ta`` is interference-free on a tapered fat-tree too (allocation.md);
* ``makespan_s`` = last completion - first submission (metrics-and-outputs.md);
* ``ta``'s ``tie=high_id`` rule (allocation.md, "Ties").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fattorus import topology, workload
from fattorus.app import outputs
from fattorus.sched import policy
from fattorus.sched import replay
from fattorus.sched import state as st
from fattorus.topology import fattree_routing as routing
from intervals import concurrent_pairs

# The default job-size bins of metrics-and-outputs.md, written out by hand: (label, lo, hi)
# with inclusive edges; None: no upper edge.
SPEC_BINS = [("1-18", 1, 18), ("19-64", 19, 64), ("65-256", 65, 256), ("257-1024", 257, 1024), (">1024", 1025, None)]


def spec_bin(n: int) -> str:
    """The label of an ``n``-node job's bin, from the spec's list (not the code's)."""
    for label, lo, hi in SPEC_BINS:
        if n >= lo and (hi is None or n <= hi):
            return label
    raise AssertionError(n)


def spec_aph(alloc, k: int, p: int) -> float:
    """APH by the definition (metrics-and-outputs.md), H_T from machines.md: 0 on one leaf,
    2 in one pod, 4 across pods; 0 for a one-node job. A loop over pairs: only for small jobs."""
    a = np.asarray(alloc, np.int64)
    n = len(a)
    if n < 2:
        return 0.0
    same_leaf = (a[:, None] // k) == (a[None, :] // k)
    same_pod = (a[:, None] // p) == (a[None, :] // p)
    hops = np.where(same_leaf, 0, np.where(same_pod, 2, 4)).sum()
    return float(hops) / (n * (n - 1))


def spec_aph_by_counts(sizes_per_leaf: list[int], leaves_per_pod: int) -> float:
    """APH of a job from its node count on each leaf (leaves in id order), by the same
    definition, counting ordered pairs: for large jobs (1,296 nodes) without an n^2 matrix."""
    c = np.asarray(sizes_per_leaf, np.int64)
    n = int(c.sum())
    if n < 2:
        return 0.0
    pods = np.add.reduceat(c, np.arange(0, len(c), leaves_per_pod))
    same_leaf = int((c * (c - 1)).sum())
    same_pod = int((pods * (pods - 1)).sum()) - same_leaf
    cross = n * (n - 1) - same_leaf - same_pod
    return (2 * same_pod + 4 * cross) / (n * (n - 1))


def write_and_read(tmp_path: Path, result: replay.ReplayResult) -> tuple[pl.DataFrame, dict]:
    """The run written as a run directory and read back: ``(jobs.parquet, summary.json)``."""
    outputs.write_run(tmp_path, result.jobs, result.utilization, result.summary)
    return pl.read_parquet(tmp_path / "jobs.parquet"), json.loads((tmp_path / "summary.json").read_text())


# --- a hand-worked run on Cab: one job at each bin edge ------------------------------------
# Cab: 18 nodes a leaf, 18 leaves a pod (324 nodes), 4 pods, 1,296 nodes.
EDGE_SIZES = [1, 18, 19, 64, 65, 256, 257, 1024, 1025]
DELAYS = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
T0 = 500.0  # first submission: not 0, so that makespan must subtract it
EPISODE = 1000.0


def edge_jobs() -> pl.DataFrame:
    """Nine episodes, each on an empty machine: at ``T0 + 1000 e`` a whole-machine blocker
    (1,296 nodes, 100 s) is submitted, then ``DELAYS[e]`` s later a job of ``EDGE_SIZES[e]``
    nodes (10 s). The blocker starts at once (wait 0); the job starts when the blocker ends,
    ``T0 + 1000 e + 100``: it waits ``100 - DELAYS[e]`` (90, 80, ..., 10 s). Under ``to`` on an
    empty machine each job gets the lowest ids: nodes ``0 .. n-1``."""
    rows = []
    for e, (n, d) in enumerate(zip(EDGE_SIZES, DELAYS)):
        t = T0 + EPISODE * e
        rows.append((100 + e, t, 100.0, 1296))
        rows.append((200 + e, t + d, 10.0, n))
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "submit_s": [r[1] for r in rows],
            "runtime_s": [r[2] for r in rows],
            "requested_s": [r[2] for r in rows],
            "nodes": pl.Series([r[3] for r in rows], dtype=pl.Int32),
            "status": pl.Series([1] * len(rows), dtype=pl.Int32),
        }
    )


@pytest.fixture(scope="module")
def edge_run(tmp_path_factory) -> tuple[pl.DataFrame, dict]:
    cab = topology.load("cab")
    result = replay.replay(edge_jobs(), cab, "to", "easy")
    return write_and_read(tmp_path_factory.mktemp("edges"), result)


def test_wait_by_bin_edges_by_hand(edge_run):
    """metrics-and-outputs.md: wait time is reported "by job-size bin", default bins 1-18,
    19-64, 65-256, 257-1024, > 1024 (inclusive upper edges). One job sits at each edge; its
    wait is worked out by hand (:func:`edge_jobs`), the nine blockers (1,296 nodes) wait 0."""
    jobs, summary = edge_run
    # The schedule itself, by hand: blockers at their submission, each job at its blocker's end.
    rows = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    for e, n in enumerate(EDGE_SIZES):
        assert rows[100 + e]["start_s"] == T0 + EPISODE * e
        assert rows[200 + e]["start_s"] == T0 + EPISODE * e + 100.0
    expected = {
        "1-18": {"jobs": 2, "mean": (90 + 80) / 2},  # sizes 1 and 18
        "19-64": {"jobs": 2, "mean": (70 + 60) / 2},  # 19 and 64
        "65-256": {"jobs": 2, "mean": (50 + 40) / 2},  # 65 and 256
        "257-1024": {"jobs": 2, "mean": (30 + 20) / 2},  # 257 and 1024
        ">1024": {"jobs": 10, "mean": 10 / 10},  # 1025 (waits 10) and nine blockers (0)
    }
    by_bin = summary["wait_s"]["by_bin"]
    assert list(by_bin) == [label for label, _, _ in SPEC_BINS]
    for label, want in expected.items():
        assert by_bin[label]["jobs"] == want["jobs"], label
        assert by_bin[label]["mean"] == pytest.approx(want["mean"], abs=1e-9), label


def test_aph_by_bin_edges_by_hand(edge_run):
    """metrics-and-outputs.md: "APH summary per bin" over the default bins, APH by its
    definition (H_T 0 / 2 / 4). The jobs got nodes 0..n-1 (first fit on an empty machine), so
    e.g. 19 nodes: 36 of 342 ordered pairs cross leaves, APH 72/342; 64 nodes (leaves of 18,
    18, 18, 10): 3024 of 4032 pairs cross leaves, APH 1.5."""
    jobs, summary = edge_run
    k, L = 18, 18
    rows = {r["job_id"]: r for r in jobs.iter_rows(named=True)}
    aph: dict[str, list[float]] = {label: [] for label, _, _ in SPEC_BINS}
    for e, n in enumerate(EDGE_SIZES):
        assert sorted(rows[200 + e]["alloc"]) == list(range(n)), n
        per_leaf = [min(k, n - i) for i in range(0, n, k)]
        aph[spec_bin(n)].append(spec_aph_by_counts(per_leaf, L))
        assert sorted(rows[100 + e]["alloc"]) == list(range(1296))
        aph[">1024"].append(spec_aph_by_counts([k] * 72, L))
    assert aph["19-64"][0] == pytest.approx(72 / 342) and aph["19-64"][1] == pytest.approx(1.5)
    by_bin = summary["aph"]["by_bin"]
    assert list(by_bin) == [label for label, _, _ in SPEC_BINS]
    for label, values in aph.items():
        got = by_bin[label]
        assert got["jobs"] == len(values), label
        assert got["mean"] == pytest.approx(np.mean(values), abs=1e-9), label
        assert got["min"] == pytest.approx(min(values), abs=1e-9), label
        assert got["max"] == pytest.approx(max(values), abs=1e-9), label
        assert got["median"] == pytest.approx(float(np.median(values)), abs=1e-9), label


def test_makespan_by_hand(edge_run):
    """metrics-and-outputs.md: "Makespan: last completion - first submission". First
    submission ``T0`` = 500 s; last completion: the 1,025-node job of the last episode,
    ``T0 + 8000 + 100 + 10`` = 8,610 s; makespan 8,110 s."""
    _, summary = edge_run
    assert summary["makespan_s"] == pytest.approx(8110.0)


# --- a real log window: recomputation from jobs.parquet -------------------------------------
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def atlas_window() -> pl.DataFrame:
    """Atlas, node counts doubled, the first 10 days (contended on Cab: jobs wait in every
    bin it fills; submit times in log seconds, the first one about 3.27 M s)."""
    cab = topology.load("cab")
    jobs = workload.load(TRACES / "LLNL-Atlas-2006-2.1-cln.swf.gz", cores_per_node=8).jobs
    scaled, _ = workload.scale_nodes(jobs, 2, cab.n_nodes)
    return workload.first_days(scaled, 10)


@pytest.fixture(scope="module")
def atlas_run(atlas_window, tmp_path_factory) -> tuple[pl.DataFrame, dict]:
    result = replay.replay(atlas_window, topology.load("cab"), "ta", "easy")
    return write_and_read(tmp_path_factory.mktemp("atlas"), result)


def test_by_bin_means_recomputed_from_jobs_parquet(atlas_run):
    """metrics-and-outputs.md: mean wait and APH per size bin. Recomputed from jobs.parquet's
    ``nodes``, ``wait_s`` (itself checked as ``start_s - submit_s``) and ``aph`` with the
    spec's bin edges, job by job in Python."""
    jobs, summary = atlas_run
    nodes = jobs["nodes"].to_list()
    wait = (jobs["start_s"] - jobs["submit_s"]).to_list()
    np.testing.assert_array_equal(jobs["wait_s"].to_numpy(), np.asarray(wait))
    aph = jobs["aph"].to_list()
    groups: dict[str, list[int]] = {label: [] for label, _, _ in SPEC_BINS}
    for i, n in enumerate(nodes):
        groups[spec_bin(n)].append(i)
    waited = 0
    for label, idx in groups.items():
        w, a = summary["wait_s"]["by_bin"][label], summary["aph"]["by_bin"][label]
        assert w["jobs"] == len(idx) and a["jobs"] == len(idx), label
        if not idx:
            continue
        assert w["mean"] == pytest.approx(sum(wait[i] for i in idx) / len(idx), rel=1e-12), label
        assert a["mean"] == pytest.approx(sum(aph[i] for i in idx) / len(idx), rel=1e-12), label
        assert a["min"] == pytest.approx(min(aph[i] for i in idx)) and a["max"] == pytest.approx(max(aph[i] for i in idx))
        waited += w["mean"] > 0
    assert sum(len(v) for v in groups.values()) == len(jobs) == summary["counts"]["replayed"]
    assert waited >= 3  # the comparison covered bins with real waits, not only zeros
    # the aph column itself, by the definition, on a sample of jobs
    for row in jobs.sample(100, seed=2).iter_rows(named=True):
        assert row["aph"] == pytest.approx(spec_aph(row["alloc"], 18, 324))


def test_makespan_recomputed_from_jobs_parquet(atlas_run):
    """metrics-and-outputs.md: "Makespan: last completion - first submission", recomputed as
    max(end_s) - min(submit_s) of jobs.parquet (end_s checked as start_s + runtime_s)."""
    jobs, summary = atlas_run
    end = jobs["start_s"] + jobs["runtime_s"]
    np.testing.assert_allclose(jobs["end_s"].to_numpy(), end.to_numpy())
    assert summary["makespan_s"] == pytest.approx(max(end.to_list()) - min(jobs["submit_s"].to_list()), rel=1e-12)
    assert min(jobs["submit_s"].to_list()) > 1e6  # the subtraction mattered


# --- unsorted logs ---------------------------------------------------------------------------
def test_unsorted_log_is_replayed_in_submit_then_id_order():
    """scheduling.md: "Submission times need not be sorted in the file; the replay sorts
    them"; "Queue order is submission time, ties broken by job id". Four whole-machine jobs
    on ft6 (18 nodes, 100 s each) given as 5@10 s, 9@0 s, 3@0 s, 1@5 s run one at a time in
    queue order 3, 9, 1, 5: starts 0, 100, 200, 300 (9 before 3 in the file: the tie must
    go by id, not by file order)."""
    ft6 = topology.load("ft6")
    jobs = pl.DataFrame(
        {
            "job_id": [5, 9, 3, 1],
            "submit_s": [10.0, 0.0, 0.0, 5.0],
            "runtime_s": [100.0] * 4,
            "requested_s": [100.0] * 4,
            "nodes": pl.Series([18] * 4, dtype=pl.Int32),
        }
    )
    for pol in ("to", "ta"):
        result = replay.replay(jobs, ft6, pol, "easy")
        starts = {r["job_id"]: r["start_s"] for r in result.jobs.iter_rows(named=True)}
        assert starts == {3: 0.0, 9: 100.0, 1: 200.0, 5: 300.0}, pol
        assert result.summary["counts"]["replayed"] == 4
        assert result.summary["makespan_s"] == pytest.approx(400.0)  # last end 400, first submit 0


def test_shuffled_log_window_gives_the_same_schedule(atlas_window):
    """scheduling.md: the replay sorts an unsorted log (ties by job id), so a shuffled copy of
    a real window must give every job the same start time and nodes as the sorted one. The
    window has many jobs sharing a submit time and contention (jobs wait), so a wrong sort
    would show."""
    cab = topology.load("cab")
    ties = atlas_window.filter(pl.col("submit_s").is_duplicated()).height
    assert ties > 20
    shuffled = atlas_window.sample(fraction=1.0, shuffle=True, seed=7)
    assert shuffled["job_id"].to_list() != atlas_window["job_id"].to_list()
    for pol in ("to", "ta"):
        a = replay.replay(atlas_window, cab, pol, "easy").jobs
        b = replay.replay(shuffled, cab, pol, "easy").jobs
        assert (a["wait_s"] > 0).sum() > 50
        ja = {r["job_id"]: (r["start_s"], sorted(r["alloc"])) for r in a.iter_rows(named=True)}
        jb = {r["job_id"]: (r["start_s"], sorted(r["alloc"])) for r in b.iter_rows(named=True)}
        assert ja == jb, pol


# --- ta on a tapered fat-tree ------------------------------------------------------------------
def route_links(ft, allocs: list[np.ndarray]) -> list[set[int]]:
    """Per job, the set of directed links its traffic uses: the topology's static routes
    (``fattree_routing.routes``, D-mod-k) of every ordered pair of its nodes, one batch."""
    src, dst, owner = [], [], []
    for j, a in enumerate(allocs):
        s, d = np.meshgrid(a, a, indexing="ij")
        keep = s != d
        src.append(s[keep])
        dst.append(d[keep])
        owner.append(np.full(int(keep.sum()), j))
    r = np.asarray(routing.routes(ft, np.concatenate(src).astype(np.int32), np.concatenate(dst).astype(np.int32)))
    owner = np.concatenate(owner)
    out: list[set[int]] = [set() for _ in allocs]
    for j in range(len(allocs)):
        links = r[owner == j]
        out[j] = set(links[links >= 0].tolist())
    return out


@pytest.fixture(scope="module")
def kth_window() -> pl.DataFrame:
    """300 jobs of KTH-SP2 (a 100-node log) from job 5,000: on the 36-node ft6_tapered the
    queue is long and T1, T2 and T3 jobs run side by side (jobs over 36 nodes are skipped)."""
    jobs = workload.load(TRACES / "KTH-SP2-1996-2.1-cln.swf.gz").jobs.slice(5000, 300)
    return jobs.with_columns(pl.col("submit_s") - pl.col("submit_s").min())


def test_ta_on_tapered_fattree_shares_no_link(ft6_tapered, kth_window, tmp_path):
    """allocation.md: "The scheme is the same on a tapered fat-tree", so a ``ta`` schedule
    on ft6_tapered (4 nodes and 2 up-ports a leaf) has no two concurrently running jobs whose
    traffic shares a link (the routes between each job's nodes, from jobs.parquet's alloc),
    nor an interfering pair by the spec's leaves/pods definition. Control: under ``to`` the
    same check finds shared links, so it can see them."""
    ft = ft6_tapered
    assert ft.l2_per_pod < ft.nodes_per_leaf  # tapered
    k, p = ft.nodes_per_leaf, ft.nodes_per_pod
    result = replay.replay(kth_window, ft, "ta", "easy")
    jobs, _ = write_and_read(tmp_path, result)
    assert (jobs["wait_s"] > 0).sum() > 100
    allocs = [np.asarray(a, np.int64) for a in jobs["alloc"].to_list()]
    links = route_links(ft, allocs)
    leaves = [set((a // k).tolist()) for a in allocs]
    pods = [set((a // p).tolist()) for a in allocs]
    start, end = jobs["start_s"].to_numpy(), jobs["end_s"].to_numpy()
    checked = multi_pod = multi_leaf = 0
    for a, b in concurrent_pairs(start, end):
        checked += 1
        shared = links[a] & links[b]
        assert not shared, (jobs["job_id"][int(a)], jobs["job_id"][int(b)], sorted(shared))
        leaf_clash = len(leaves[a]) > 1 and len(leaves[b]) > 1 and leaves[a] & leaves[b]
        pod_clash = len(pods[a]) > 1 and len(pods[b]) > 1 and pods[a] & pods[b]
        assert not leaf_clash and not pod_clash, (jobs["job_id"][int(a)], jobs["job_id"][int(b)])
        multi_leaf += len(leaves[a]) > 1 and len(leaves[b]) > 1
        multi_pod += len(pods[a]) > 1 or len(pods[b]) > 1
    assert checked > 500
    assert multi_leaf > 20 and multi_pod > 50  # T2/T3 jobs ran beside each other and beside others

    to = replay.replay(kth_window, ft, "to", "easy").jobs
    to_allocs = [np.asarray(a, np.int64) for a in to["alloc"].to_list()]
    to_links = route_links(ft, to_allocs)
    s, e = to["start_s"].to_numpy(), to["end_s"].to_numpy()
    assert any(to_links[a] & to_links[b] for a, b in concurrent_pairs(s, e))


# --- ta's tie rule ---------------------------------------------------------------------------
def _start(state, pol, n):
    placed = pol.place(state, n)
    st.allocate(state, placed, pol.footprint(placed))
    return placed


def test_ta_tie_high_id_by_hand_on_ft6(ft6):
    """allocation.md, "Ties: lower pod / leaf / node id first", exposed as a named parameter
    that a study may tune: with ``tie=high_id`` the higher pod / leaf id wins a tie. ft6: 3
    nodes a leaf, leaves 0-2 in pod 0 (nodes 0-8), leaves 3-5 in pod 1 (nodes 9-17).
    Whole-leaf requests keep the slot order out of the question."""
    high = policy.make("ta", ft6, {"tie": "high_id"})
    low = policy.make("ta", ft6, {"tie": "low_id"})
    state = st.empty(ft6)
    # T1 of 3, empty machine: pods tie (9 free), leaves tie (3 free) -> pod 1, leaf 5.
    assert sorted(_start(state, high, 3).tolist()) == [15, 16, 17]
    # T1 of 3: pod 1 has 6 free (least, no tie); its leaves 3 and 4 tie at 3 free -> leaf 4.
    assert sorted(high.place(state, 3).tolist()) == [12, 13, 14]
    assert sorted(low.place(state, 3).tolist()) == [9, 10, 11]  # the default picks leaf 3

    # T2 of 4, empty machine: pods tie (9 available) -> pod 1; its leaves tie at 3 free
    # (most first) -> leaf 5 (3 nodes), then leaf 4 (1 node).
    t2 = high.place(st.empty(ft6), 4)
    assert sorted((t2 // 3).tolist()) == [4, 5, 5, 5]
    assert sorted((low.place(st.empty(ft6), 4) // 3).tolist()) == [0, 0, 0, 1]

    # T3 of 12, empty machine: pods tie (9 available, most first) -> pod 1 first, its leaves
    # tie (most first) -> 5, 4, 3, then pod 0's highest leaf 2: nodes 6-17.
    assert sorted(high.place(st.empty(ft6), 12).tolist()) == list(range(6, 18))
    assert sorted(low.place(st.empty(ft6), 12).tolist()) == list(range(0, 12))


def test_ta_tie_high_id_through_replay(ft6):
    """The same rule as a replay's ``policy_params`` (what conf/policy and a study set): one
    3-node job on an empty ft6 gets leaf 5 under ``tie=high_id``, leaf 0 by default; a
    12-node job gets pod 1 and leaf 2 (nodes 6-17)."""
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2],
            "submit_s": [0.0, 1000.0],
            "runtime_s": [10.0, 10.0],
            "nodes": pl.Series([3, 12], dtype=pl.Int32),
        }
    )
    out = replay.replay(jobs, ft6, "ta", "easy", policy_params={"tie": "high_id"}).jobs
    assert sorted(out["alloc"][0].to_list()) == [15, 16, 17]
    assert sorted(out["alloc"][1].to_list()) == list(range(6, 18))
    default = replay.replay(jobs, ft6, "ta", "easy").jobs
    assert sorted(default["alloc"][0].to_list()) == [0, 1, 2]
    assert sorted(default["alloc"][1].to_list()) == list(range(0, 12))
