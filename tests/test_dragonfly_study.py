"""The dragonfly study command (fattorus.app.dragonfly_study) on the small dragonfly."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from fattorus import provenance, topology
from fattorus.analysis import parallel_workloads as pw
from fattorus.app import dragonfly_study


def test_node_flows_sum_rank_flows_per_node_pair_and_keep_jobs_apart():
    src, dst, nbytes, owner = pw.node_flows(64, pw.WORKLOADS["WD 4"], ranks=16, ranks_per_node=2)
    assert np.all(src != dst)  # flows within a node dropped
    assert np.all(src // 8 == owner) and np.all(dst // 8 == owner)  # 8 nodes per job, in order
    key = (owner * 64 + src) * 64 + dst
    assert len(np.unique(key)) == len(key) and np.all(nbytes > 0)  # one row per (job, pair)
    with pytest.raises(ValueError, match="do not fit"):
        pw.node_flows(20, pw.WORKLOADS["WD 4"], ranks=16, ranks_per_node=2)


#: The small study's machine and job sizes: four jobs of 12 nodes on the 64 of dragonfly_small.
SMALL = ["--cables", "dragonfly_small", "--ranks", "24", "--ranks-per-node", "2"]


# The real solves here run on the CPU device (conftest.on_cpu), as the resumed study's claim
# to the bit needs: JAX compiles a solve again for each default device, and these
# compilations (each workload's joint solve and its four jobs' shapes) are most of the file's
# time, so every study of WD 4 on the small dragonfly shares one set of them.


@pytest.fixture(scope="module")
def wd4_study(tmp_path_factory):
    """``results/dragonfly_study/t``: the study of WD 4 on the small dragonfly (real solves),
    made once for the tests that read a finished study (a test that changes it works on a copy)."""
    import jax

    base = tmp_path_factory.mktemp("wd4")
    with pytest.MonkeyPatch.context() as mp, jax.default_device(jax.devices("cpu")[0]):
        mp.chdir(base)
        assert dragonfly_study.main(["--workloads", "WD 4", *SMALL, "--name", "t"]) == 0
    return base / "results" / "dragonfly_study" / "t"


def test_study_writes_totals_and_per_job_views(wd4_study):
    base = wd4_study
    totals, jobs = pl.read_parquet(base / "totals.parquet"), pl.read_parquet(base / "jobs.parquet")
    assert set(totals["class"]) == {"green", "black", "blue", "all"}
    assert set(jobs["view"]) == {"individual", "in_workload"} and set(jobs["job"]) == {0, 1, 2, 3}
    # The jobs' shares of the joint solve add up to its traffic: per class, their means sum
    # to the total mean (every link of the class counted in each).
    shares = jobs.filter(pl.col("view") == "in_workload").group_by("class").agg(pl.col("mean_MB").sum())
    for row in shares.iter_rows(named=True):
        total = totals.filter(pl.col("class") == row["class"])["mean_MB"][0]
        assert row["mean_MB"] == pytest.approx(total, rel=1e-4)
    assert json.loads((base / "summary.json").read_text())["ranks"] == 24
    hot = pl.read_parquet(base / "hot_links.parquet")
    assert hot["rank"].to_list() == list(range(10)) and (hot["MB"].diff().drop_nulls() <= 0).all()
    assert hot["MB"][0] == pytest.approx(totals["max_MB"].max())  # the busiest link is the largest class max
    png = base / "WD4_dragonfly_small.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args", [["--workloads", "WD 9"], ["--cables", "cab"], ["--name", "../x"], ["--seed", "-1"],
                                  ["--cables", "dragonfly_small", "--ranks", "48", "--ranks-per-node", "2"]])
def test_mistakes_are_one_line(tmp_path, monkeypatch, capsys, args):
    monkeypatch.chdir(tmp_path)
    assert dragonfly_study.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fattorus.app.dragonfly_study: error:") and not any(tmp_path.iterdir())


def test_a_refused_name_states_the_whole_rule(tmp_path, monkeypatch, capsys):
    """``--name ...`` holds only allowed characters; the message said "letters, digits, '.', '_'
    and '-' only" and no more (a session-46 exploratory report)."""
    monkeypatch.chdir(tmp_path)
    assert dragonfly_study.main(["--name", "..."]) == 2
    assert "starting with a letter or digit" in capsys.readouterr().err


def test_traffic_matrices_put_each_link_in_its_cell():
    from fattorus.report import dragonfly_maps

    df = topology.load("dragonfly_small")
    cls = np.asarray(df.link_class)
    rng = np.random.default_rng(2)
    traffic = rng.uniform(0, 5, df.n_links)
    mats = dragonfly_maps.matrices(df, traffic)
    for name in ("green", "black", "blue"):  # every link of a class lands in its matrix
        assert mats[name].sum() == pytest.approx(traffic[cls == df.link_class_names.index(name)].sum())
    # One green link alone: its bytes sit at (tail column, head column), in its group only.
    green = np.flatnonzero(cls == df.link_class_names.index("green"))[5]
    tail, head = df.link_ends[green] - df.n_nodes
    one = np.zeros(df.n_links)
    one[green] = 7.0
    g, _, jt = df.router_coords(tail)
    _, _, jh = df.router_coords(head)
    assert dragonfly_maps.matrices(df, one, group=int(g))["green"][jt, jh] == 7.0
    assert dragonfly_maps.matrices(df, one, group=(int(g) + 1) % df.groups)["green"].sum() == 0.0


def test_an_unwritable_results_directory_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("")  # a file where the directory should be
    assert dragonfly_study.main(["--workloads", "WD 4", "--cables", "dragonfly_small", "--ranks", "24",
                                 "--ranks-per-node", "2", "--name", "ro"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and "cannot write" in err[0]


@pytest.mark.parametrize("args, words", [
    (["--cables", ","], "--cables: none given"),
    # The loader's list named fat-trees and tori too, which the study then refused.
    (["--cables", "nosuch"], "--cables nosuch: unknown; the dragonflies of conf/topo: dragonfly_small, edison,"),
    (["--cables", "cab"], "--cables cab: a fattree, not a dragonfly; the dragonflies of conf/topo: dragonfly_small,"),
    (["--workloads", " , "], "--workloads: none given"),
    (["--workloads", "WD 4,WD 4", *SMALL], "WD 4 given more than once"),
    (["--workloads", "WD 4", *SMALL, "--valiant", "100000"], "--valiant 100000: at most 3"),
    (["--workloads", "WD 4", *SMALL, "--valiant", "4"], "--valiant 4: at most 3"),  # 4 groups: 3 others at most
    # edison first: the jobs fit it, and only a check before the loop spares its solve and map
    (["--workloads", "WD 4", "--cables", "edison,dragonfly_small", "--ranks", "48", "--ranks-per-node", "2"],
     "do not fit dragonfly_small"),
])
def test_empty_repeated_unbounded_or_unfit_options_are_one_line_before_any_work(tmp_path, monkeypatch, capsys,
                                                                               args, words):
    monkeypatch.chdir(tmp_path)
    assert dragonfly_study.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fattorus.app.dragonfly_study: error:") and words in err[0]
    assert not any(tmp_path.iterdir())


HUGE = str(10**23)  # past int64: what once reached JAX (OverflowError) or NumPy (C long) as a traceback


@pytest.mark.parametrize("option, value", [
    ("--max-iters", HUGE), ("--max-iters", str(2**31)), ("--seed", HUGE), ("--seed", str(2**32)),
    ("--ranks", HUGE), ("--ranks-per-node", HUGE), ("--ranks-per-node", "1025"),
])
def test_counts_past_what_the_solver_takes_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                                          option, value):
    """A count the solve cannot take is refused before ``solves/settings.json`` is written: that
    record made the corrected command an "unfinished study made with other settings"."""
    monkeypatch.chdir(tmp_path)
    run = ["--workloads", "WD 4", *SMALL, "--name", "big"]
    # The option given last overrides SMALL's value of it.
    assert dragonfly_study.main([*run, option, value]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fattorus.app.dragonfly_study: error: {option} {value}: must be from ")
    assert "Traceback" not in err and not any(tmp_path.iterdir())


def test_the_corrected_command_runs_after_a_refused_max_iters(tmp_path, monkeypatch, capsys):
    """The refusal leaves nothing that refuses the corrected command (the solve is stubbed: what
    is tested is that the study's checks let it through to the end, not the solve)."""
    monkeypatch.chdir(tmp_path)
    run = ["--workloads", "WD 4", *SMALL, "--name", "big"]
    assert dragonfly_study.main([*run, "--max-iters", HUGE]) == 2
    capsys.readouterr()
    seen = []

    def solve(topo, wd, args, out):
        seen.append(args.max_iters)
        return ([{"workload": wd, "cables": "x", "class": "green", "max_MB": 1.0, "mean_MB": 1.0, "iterations": 3,
                  "capped": False}], [{"job": 0}], [{"rank": 0}])

    monkeypatch.setattr(dragonfly_study, "solve", solve)
    assert dragonfly_study.main([*run, "--max-iters", "3000"]) == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "results" / "dragonfly_study" / "big" / "summary.json").read_text())
    assert seen == [3000] and summary["max_iters"] == 3000


def test_the_largest_counts_allowed_pass_the_checks():
    args = dragonfly_study.parse(["--max-iters", str(dragonfly_study.MAX_ITERS_MAX), "--seed", str(2**32 - 1),
                                  "--ranks-per-node", str(dragonfly_study.RANKS_PER_NODE_MAX)])
    dragonfly_study.check_bounds(args)  # no error


def test_other_settings_are_refused_and_stale_maps_removed(tmp_path, monkeypatch, capsys, on_cpu):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "results" / "dragonfly_study" / "t"
    base.mkdir(parents=True)
    # An interrupted earlier run (no summary.json) left a map; a file of the user's sits beside it.
    (base / "WD1_dragonfly_small.png").write_bytes(b"stale")
    (base / "notes.png").write_bytes(b"mine")
    (base / "WD1_annotated.png").write_bytes(b"mine too")  # named like a map, but no machine's
    run = ["--workloads", "WD 4", *SMALL, "--name", "t"]
    assert dragonfly_study.main(run) == 0
    assert sorted(p.name for p in base.glob("*.png")) == ["WD1_annotated.png", "WD4_dragonfly_small.png", "notes.png"]
    summary = json.loads((base / "summary.json").read_text())
    assert summary["workloads"] == ["WD 4"] and summary["cables"] == ["dragonfly_small"]
    before = {p.name: p.read_bytes() for p in base.iterdir()}
    capsys.readouterr()
    for other, words in ((["--seed", "1"], "seed: 0 there, 1 now"), (["--valiant", "1"], "valiant"),
                         (["--workloads", "WD 3"], "workloads: ['WD 4'] there, ['WD 3'] now")):
        assert dragonfly_study.main([*run, *other]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("fattorus.app.dragonfly_study: error:") and words in err[0] and "--name" in err[0]
        assert {p.name: p.read_bytes() for p in base.iterdir()} == before  # the earlier results are intact
    # Results written before the lists were recorded: the workloads are read off their totals.
    (base / "summary.json").write_text(json.dumps({k: v for k, v in summary.items() if k not in ("workloads", "cables")}))
    assert dragonfly_study.main([*run, "--workloads", "WD 3"]) == 2 and "WD 3" in capsys.readouterr().err


def test_parallel_cables_share_a_router_pairs_traffic_by_hand():
    """machines.md: a router pair joined by k cables has k times the bandwidth. One flow of
    B bytes between two routers of one column (joined by the black cables only): static
    routing puts all of it on cable (src + dst) mod k and none on its siblings; pooled, each
    of the k cables carries B / k, and the link cost is B / (k x bandwidth)."""
    import argparse

    from fattorus.kernels.adaptive import adaptive_loads

    t = topology.load("dragonfly_small")
    first, count = t.cable_bundles
    cls = np.asarray(t.link_class)
    black = t.link_class_names.index("black")
    k = int(count[cls == black][0])
    assert k >= 2
    # Two routers of group 0 in one column: rows 0 and 1.
    a, b = 0, t.cols
    src, dst = np.array([a * t.nodes_per_router]), np.array([b * t.nodes_per_router])
    paths = np.asarray(t.routes(src, dst))[:, None, :]  # one candidate: the minimal route
    hop = [e for e in paths[0, 0] if e >= 0 and cls[e] == black]
    assert len(hop) == 1
    siblings = np.flatnonzero(first == first[hop[0]])
    assert len(siblings) == k and all((t.link_ends[s] == t.link_ends[hop[0]]).all() for s in siblings)
    nbytes = np.array([6.0e6])
    bw = np.asarray(t.link_bandwidth, np.float64)
    net = cls > 0
    for how in ("static", "pooled"):
        p, w, per_cable = dragonfly_study.pooled(t, paths, bw, how)
        got = adaptive_loads(p, nbytes, w, counted=net, max_iters=0)
        traffic = per_cable(got.traffic)
        if how == "static":
            assert traffic[hop[0]] == pytest.approx(6.0e6)
            assert traffic[[s for s in siblings if s != hop[0]]].sum() == 0
            assert float(got.max_cost) == pytest.approx(6.0e6 / bw[hop[0]])
        else:
            np.testing.assert_allclose(traffic[siblings], 6.0e6 / k)
            assert float(got.max_cost) == pytest.approx(6.0e6 / (k * bw[hop[0]]))
        # Bytes are conserved per link class (the node links carry the flow once each way).
        assert traffic[cls == black].sum() == pytest.approx(6.0e6)
    # The study's records say which: a folder made before the option existed holds static results.
    args = argparse.Namespace(seed=0, ranks=24, ranks_per_node=2, valiant=2, black_first=True, max_iters=200,
                              parallel_cables="pooled")
    assert dragonfly_study.settings(args, ["WD 4"], ["dragonfly_small"])["parallel_cables"] == "pooled"


def test_a_study_made_before_pooled_cables_is_static(tmp_path, monkeypatch, capsys, on_cpu):
    monkeypatch.chdir(tmp_path)
    run = ["--workloads", "WD 4", *SMALL, "--name", "t"]
    assert dragonfly_study.main([*run, "--parallel-cables", "static"]) == 0
    base = tmp_path / "results" / "dragonfly_study" / "t"
    summary = json.loads((base / "summary.json").read_text())
    assert summary["parallel_cables"] == "static"
    totals = pl.read_parquet(base / "totals.parquet")
    assert {"iterations", "capped"} <= set(totals.columns)
    del summary["parallel_cables"]  # as written before session 18
    (base / "summary.json").write_text(json.dumps(summary))
    capsys.readouterr()
    assert dragonfly_study.main(run) == 2  # pooled now, static there
    assert "parallel_cables: 'static' there, 'pooled' now" in capsys.readouterr().err
    assert dragonfly_study.main([*run, "--parallel-cables", "static"]) == 0


def test_many_to_many_sub_communicators_leave_their_router():
    """The paper's Many-to-many loads green and blue links (its Section 5): with 32,768 ranks
    at 24 per node, each sub-communicator is a column of the 32-wide process grid (members
    1,024 ranks apart), so its all-to-all crosses routers and groups; 32 consecutive ranks
    would stay on one router and load no router link."""
    t = topology.load("edison")
    src, dst, nbytes, owner = pw.node_flows(t.n_nodes, ("Many-to-many",), 32_768, 24)
    router = np.asarray(t.group_of(0, np.arange(t.n_nodes)))
    group = np.asarray(t.group_of(1, np.arange(t.n_nodes)))
    off_router = router[src] != router[dst]
    assert nbytes[off_router].sum() > 0.9 * nbytes.sum()
    assert nbytes[group[src] != group[dst]].sum() > 0
    # Every rank sends 32 KiB to each of the 31 other members of its communicator.
    assert nbytes.sum() == pytest.approx(32_768 * 31 * 32 * 1024, rel=1e-9)


def test_an_interrupted_study_resumes_after_its_last_finished_solve(tmp_path, monkeypatch, capsys, on_cpu):
    # On the CPU device (conftest.on_cpu): the resumed tables equal the uninterrupted ones to the bit.
    # Two solves: WD 4 on the small dragonfly and on a copy of it under another name (the
    # study's second cable configuration; its solves have the first's shapes, so they reuse
    # its compilations rather than a second workload's).
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "results" / "dragonfly_study"
    twin = tmp_path / "small_twin.yaml"
    twin.write_text((topology.conf_dir() / "topo" / "dragonfly_small.yaml").read_text()
                    .replace("name: dragonfly_small", "name: small_twin"))
    run = ["--workloads", "WD 4", *SMALL[:1], f"dragonfly_small,{twin}", *SMALL[2:]]
    assert dragonfly_study.main([*run, "--name", "whole"]) == 0
    real, calls = dragonfly_study.solve, []

    def interrupted_at_the_second(topo, wd, *rest):
        calls.append((wd, topo.name))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(topo, wd, *rest)

    monkeypatch.setattr(dragonfly_study, "solve", interrupted_at_the_second)
    capsys.readouterr()
    assert dragonfly_study.main([*run, "--name", "cut"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fattorus.app.dragonfly_study: interrupted; 1 of 2 solves kept") and "re-run" in err[-1]
    assert not (base / "cut" / "summary.json").exists()
    # Other settings may not finish it ...
    for other, key in ((["--seed", "1"], "seed:"), (["--valiant", "1"], "valiant:"), (["--workloads", "WD 3"], "workloads:"),
                       (["--cables", "dragonfly_small"], "cables:")):
        assert dragonfly_study.main([*run, "--name", "cut", *other]) == 2, other
        err = capsys.readouterr().err
        assert "unfinished study" in err and key in err, (other, err)
    # ... the same command does, solving only what was cut; kept solves made by other code are
    # kept and named (the settings record the source).
    settings = base / "cut" / "solves" / "settings.json"
    record = json.loads(settings.read_text())
    assert record["fattorus"] == provenance.stamp()
    settings.write_text(json.dumps({**record, "fattorus": {"version": "0.0.1", "source": "000000000000"}}))
    calls.clear()
    monkeypatch.setattr(dragonfly_study, "solve",
                        lambda topo, wd, *rest: calls.append((wd, topo.name)) or real(topo, wd, *rest))
    assert dragonfly_study.main([*run, "--name", "cut"]) == 0
    err = capsys.readouterr().err
    assert calls == [("WD 4", "small_twin")] and "kept from an earlier run" in err
    assert "its kept parts were made by another fattorus source (000000000000" in err, err
    for name in ("totals.parquet", "jobs.parquet", "hot_links.parquet"):
        assert pl.read_parquet(base / "cut" / name).equals(pl.read_parquet(base / "whole" / name)), name
    assert sorted(p.name for p in (base / "cut").iterdir()) == sorted(p.name for p in (base / "whole").iterdir())


def test_a_kept_solve_that_cannot_be_read_is_solved_again(tmp_path, capsys):
    part, png = tmp_path / "WD4_x.json", tmp_path / "WD4_x.png"
    png.write_bytes(b"map")
    part.write_text(json.dumps([[{"a": 1}], [], [{"b": 2.5}]]))
    assert dragonfly_study._kept(part, png) == ([{"a": 1}], [], [{"b": 2.5}])
    assert dragonfly_study._kept(part, tmp_path / "missing.png") is None  # its maps gone: solved again
    for damaged in ('[[{"a": 1}], [', '{"a": 1}', "[[], []]"):
        part.write_text(damaged)
        capsys.readouterr()
        assert dragonfly_study._kept(part, png) is None
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot be read" in err[0] and "solved again" in err[0]


def test_max_iters_zero_is_recorded_as_capped(tmp_path, monkeypatch, capsys, on_cpu):
    """``--max-iters 0`` solves minimal routes only: no solve reaches the adaptive steady
    state, so every total says ``capped`` and stderr says where it stopped (it said
    ``capped false`` before session 27)."""
    monkeypatch.chdir(tmp_path)
    assert dragonfly_study.main(["--workloads", "WD 4", *SMALL, "--max-iters", "0", "--name", "z"]) == 0
    totals = pl.read_parquet(tmp_path / "results" / "dragonfly_study" / "z" / "totals.parquet")
    assert totals["iterations"].to_list() == [0] * totals.height and totals["capped"].all()
    out = capsys.readouterr()
    assert "stopped at --max-iters 0 before the steady state" in out.err
    # The printed table marks every row and says why (session 43: it looked like steady states).
    table = [line for line in out.out.splitlines() if line.startswith("WD 4")]
    assert len(table) == totals.height and all(" * " in line for line in table), out.out
    assert "* stopped at --max-iters before its steady state" in out.out


def test_a_finished_study_run_again_is_reported_not_redone(tmp_path, monkeypatch, capsys, wd4_study):
    """The same command on a finished study of the same settings prints its totals and solves
    nothing (it solved every workload again; session 27 review)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    run = ["--workloads", "WD 4", *SMALL, "--name", "again"]
    shutil.copytree(wd4_study, tmp_path / "results" / "dragonfly_study" / "again")  # what `run` finished there

    def no_solve(*a, **k):
        raise AssertionError("a finished study was solved again")

    monkeypatch.setattr(dragonfly_study, "solve", no_solve)
    assert dragonfly_study.main(run) == 0
    assert "finished earlier with these settings, nothing run" in capsys.readouterr().out


def test_the_all_links_row_is_the_max_and_mean_over_every_router_link_by_brute_force():
    """Class ``all`` (the paper's "maximum traffic on any link"): a plain loop over the links,
    skipping a node's own links (no class: they carry every path's bytes), gives its max and
    mean; the class rows are those without ``all_links``."""
    t = topology.load("dragonfly_small")
    names = t.link_class_names
    cls = np.asarray(t.link_class)
    rng = np.random.default_rng(5)
    for spike_class in ("node-router", "green", "black", "blue"):
        traffic = rng.uniform(0, 3e6, t.n_links)
        spike = int(np.flatnonzero(cls == names.index(spike_class))[3])
        traffic[spike] = 9e6  # the busiest link, in each class in turn
        rows = dragonfly_study.class_rows(t, traffic, all_links=True, workload="w")
        big, total, count = 0.0, 0.0, 0
        for e in range(t.n_links):
            if names[cls[e]] == "node-router":
                continue
            big, total, count = max(big, traffic[e]), total + traffic[e], count + 1
        assert [r["class"] for r in rows] == ["green", "black", "blue", "all"]
        assert rows[:3] == dragonfly_study.class_rows(t, traffic, workload="w")
        assert rows[3] == {"workload": "w", "class": "all", "max_MB": pytest.approx(big / 1e6),
                           "mean_MB": pytest.approx(total / count / 1e6)}
        assert (rows[3]["max_MB"] == 9.0) == (spike_class != "node-router")


def test_max_vs_def_divides_by_defs_max_of_the_same_workload_and_class(tmp_path, monkeypatch, capsys):
    """``max_vs_DEF`` by hand: stubbed solves give each (workload, cables) literal maxima; the
    ratio pairs a row with DEF's row of its own workload and class, ``all`` included, and the
    printed table shows it (``-`` without DEF among the cables)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(dragonfly_study.LABEL, "dragonfly_small", "DEF")
    monkeypatch.setitem(dragonfly_study.LABEL, "small_k", "small_k")  # a cable variant, as Edison's -K
    (tmp_path / "small_k.yaml").write_text((topology.conf_dir() / "topo" / "dragonfly_small.yaml").read_text()
                                           .replace("name: dragonfly_small", "name: small_k")
                                           .replace("black_per_pair: 2", "black_per_pair: 1"))
    # (max green, max black, max blue, max all) per workload and machine, MB
    maxima = {("WD 4", "DEF"): (40.0, 10.0, 20.0, 40.0), ("WD 4", "small_k"): (40.0, 25.0, 44.0, 44.0),
              ("WD 2", "DEF"): (8.0, 16.0, 5.0, 16.0), ("WD 2", "small_k"): (6.0, 20.0, 4.0, 20.0)}

    def solve(topo, wd, args, out):
        cables = dragonfly_study.LABEL.get(topo.name, topo.name)
        (out / dragonfly_study.png_name(wd, topo.name)).write_bytes(b"map")
        rows = [{"workload": wd, "cables": cables, "class": c, "max_MB": m, "mean_MB": 1.0, "iterations": 1,
                 "capped": False} for c, m in zip(("green", "black", "blue", "all"), maxima[wd, cables])]
        return rows[::-1] if cables == "DEF" else rows, [{"job": 0}], [{"rank": 0}]  # the order must not matter

    monkeypatch.setattr(dragonfly_study, "solve", solve)
    run = ["--workloads", "WD 4,WD 2", "--ranks", "24", "--ranks-per-node", "2"]
    assert dragonfly_study.main([*run, "--cables", f"dragonfly_small,{tmp_path / 'small_k.yaml'}", "--name", "k"]) == 0
    totals = pl.read_parquet(tmp_path / "results" / "dragonfly_study" / "k" / "totals.parquet")
    got = {(r["workload"], r["cables"], r["class"]): r["max_vs_DEF"] for r in totals.iter_rows(named=True)}
    by_hand = {("WD 4", "small_k"): (1.0, 2.5, 2.2, 1.1), ("WD 2", "small_k"): (0.75, 1.25, 0.8, 1.25)}
    for (wd, cables), ratios in by_hand.items():
        for c, ratio in zip(("green", "black", "blue", "all"), ratios):
            assert got[wd, cables, c] == pytest.approx(ratio)
            assert got[wd, "DEF", c] == 1.0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["workload", "cables", "class", "max", "(MB)", "mean", "(MB)", "max", "vs", "DEF",
                              "(ratio)"]
    table = out[:1 + totals.height]
    assert len({len(line) for line in table}) == 1  # aligned: numbers right-justified to one width
    line = "{:8}  {:7}  {:5}  {:>8}  {:>9}  {:>18}".format
    assert line("WD 4", "small_k", "all", "44.00", "1.00", "1.100") in table
    assert dragonfly_study.main([*run, "--cables", str(tmp_path / "small_k.yaml"), "--name", "no_def"]) == 0
    assert line("WD 2", "small_k", "all", "20.00", "1.00", "-") in capsys.readouterr().out
    # A machine that is not a cable variant of DEF's gets no ratio (a 64-node test dragonfly's
    # loads over Edison's read as one), nor does a class whose DEF max is 0 (it printed nan).
    monkeypatch.delitem(dragonfly_study.LABEL, "small_k")
    maxima["WD 2", "DEF"] = (0.0, 16.0, 5.0, 16.0)
    assert dragonfly_study.main([*run, "--cables", f"dragonfly_small,{tmp_path / 'small_k.yaml'}",
                                 "--name", "other"]) == 0
    totals = pl.read_parquet(tmp_path / "results" / "dragonfly_study" / "other" / "totals.parquet")
    got = {(r["workload"], r["cables"], r["class"]): r["max_vs_DEF"] for r in totals.iter_rows(named=True)}
    assert all(v is None for (wd, cables, c), v in got.items() if cables == "small_k")
    assert got["WD 2", "DEF", "green"] is None and got["WD 2", "DEF", "black"] == 1.0
    assert "nan" not in capsys.readouterr().out


def test_the_studys_all_links_row_agrees_with_its_classes_and_hottest_link(wd4_study):
    """A real solve: class ``all`` has the largest class max (the busiest link of hot_links)
    and the class means weighted by each class's number of links."""
    base = wd4_study
    totals = pl.read_parquet(base / "totals.parquet")
    t = topology.load("dragonfly_small")
    cls = np.asarray(t.link_class)
    rows = {r["class"]: r for r in totals.iter_rows(named=True)}
    n = {c: int((cls == t.link_class_names.index(c)).sum()) for c in ("green", "black", "blue")}
    assert rows["all"]["max_MB"] == max(rows[c]["max_MB"] for c in n)
    assert rows["all"]["mean_MB"] == pytest.approx(sum(rows[c]["mean_MB"] * n[c] for c in n) / sum(n.values()))
    assert rows["all"]["max_MB"] == pytest.approx(pl.read_parquet(base / "hot_links.parquet")["MB"][0])
    assert "all" not in set(pl.read_parquet(base / "jobs.parquet")["class"])  # the per-job views as before


def test_a_run_without_name_takes_the_papers_folder_only_with_the_papers_settings():
    """Without ``--name`` the folder is ``paper`` for the paper's settings alone; any other run
    gets ``custom-`` and a digest of its settings, one per settings (session 43: a small trial
    run took ``paper`` and the plain command was then refused)."""
    def record(*argv: str) -> dict:
        args = dragonfly_study.parse(list(argv))
        return dragonfly_study.settings(args, args.workloads.split(","), args.cables.split(","))

    assert dragonfly_study.default_name(record()) == "paper"
    small = dragonfly_study.default_name(record("--ranks", "64", "--cables", "dragonfly_small"))
    other = dragonfly_study.default_name(record("--ranks", "64", "--cables", "dragonfly_small", "--seed", "1"))
    assert small.startswith("custom-") and len(small) == len("custom-") + 8 and other != small
    assert dragonfly_study.default_name(record("--ranks", "64", "--cables", "dragonfly_small")) == small


def test_the_plain_command_names_the_papers_folder(tmp_path, monkeypatch, capsys):
    """Through ``main``'s own path (its lists parsed, its machines loaded and named): the plain
    command's folder is ``paper``, a small run's another (stopped at the folder check)."""
    seen = []

    def stop(out, record):
        seen.append(out.name)
        return "stopped here by the test"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dragonfly_study, "settings_conflict", stop)
    assert dragonfly_study.main([]) == 2
    assert dragonfly_study.main(["--workloads", "WD 1", "--cables", "dragonfly_small", "--ranks", "64"]) == 2
    assert seen[0] == "paper" and seen[1].startswith("custom-") and "stopped here by the test" in capsys.readouterr().err
