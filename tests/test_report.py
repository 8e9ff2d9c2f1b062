"""Tests of the report command (fattorus.report) on hand-built run directories."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import forkcli
from fattorus import report
from fattorus.args import EXIT_BROKEN_PIPE

REPO = Path(__file__).resolve().parent.parent
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
H = 3600.0

# (relative dir, policy, speedup, seed, workload name, scale, topo, waits in seconds, aph per job)
RUNS = [
    ("sweepA/0", "to", "none", 0, "atlas", 2, "cab", [0.0, 3600.0, 7200.0], [0.0, 2.5, 3.2]),
    ("sweepA/1", "ta", "none", 0, "atlas", 2, "cab", [3600.0, 7200.0, 10800.0], [0.0, 1.0, 1.9]),
    ("sweepA/2", "ta", "none", 1, "atlas", 2, "cab", [7200.0, 10800.0, 14400.0], [0.0, 1.2, 1.9]),
    ("sweepB/x/0", "ta", "v2", 0, "atlas", 2, "cab", [1800.0, 3600.0, 10800.0], [0.0, 1.0, 1.8]),
    ("other/run", "to", "none", 0, "atlas", 1, "pinot", [0.0, 0.0, 1800.0], [0.0, 2.9, 3.5]),
    ("other/run2", "tree_bestfit", "none", 0, "atlas", 2, "cab", [900.0, 900.0, 900.0], [0.0, 2.0, 2.0]),
]
NODES = [1, 30, 300]  # one job in each of the bins 1-18, 19-64, 257-1024
# The engine's ideal APH of each job (the report only reads it): 1 node, 30 nodes (a full
# 18-node switch and 12 on a second, pairs across them 2 hops), 300 nodes (one group of 324).
IDEAL_APH = [0.0, 2 * (30**2 - 18**2 - 12**2) / (30 * 29), 2 * (300**2 - 16 * 18**2 - 12**2) / (300 * 299)]
RUNTIME_S = 3600.0
# summary.json's ``topology``: the machine's full config as the engine records it.
TOPOLOGY = {
    "cab": {"kind": "fattree", "name": "cab", "radix": 36, "nodes_per_leaf": 18, "leaves_per_pod": 18, "pods": 4,
            "up_ports": 18, "core_switches": 36},
    "pinot": {"kind": "fattree", "name": "pinot", "radix": 36, "nodes_per_leaf": 18, "leaves_per_pod": 18,
              "pods": 8, "up_ports": 18, "core_switches": 36},
    "torus8": {"kind": "torus3d", "name": "torus8", "dims": [8, 8, 8], "nodes_per_router": 2,
               "bandwidth": [2.0, 1.0, 2.0]},
}  # fmt: skip
N_NODES = {"cab": 1296, "pinot": 2592, "torus8": 1024}



def write_run(run_dir: Path, policy, speedup, seed, name, scale, topo, waits, aph, util, *,
              ideal=IDEAL_APH, old_format=False, params=None, summary_extra=None) -> None:  # fmt: skip
    """One run directory per docs/outputs.md (``old_format``: no ``ideal_aph``, no ``topology``;
    ``params``: ``config.policy_params``; ``summary_extra``: more top-level ``summary.json`` keys)."""
    run_dir.mkdir(parents=True)
    submit = np.array([0.0, 60.0, 120.0])
    start = submit + np.asarray(waits)
    end = start + RUNTIME_S
    pl.DataFrame(
        {
            "job_id": pl.Series([1, 2, 3], dtype=pl.Int64),
            "submit_s": submit, "start_s": start, "end_s": end,
            "nodes": pl.Series(NODES, dtype=pl.Int32),
            "runtime_s": [RUNTIME_S] * 3, "estimate_s": [2 * RUNTIME_S] * 3,
            "wait_s": pl.Series(waits, dtype=pl.Float64),
            "job_type": ["T1", "T2", "T2"],
            "aph": pl.Series(aph, dtype=pl.Float64),
            "alloc": pl.Series([list(range(n)) for n in NODES], dtype=pl.List(pl.Int32)),
            "backfilled": [False, True, False],
            **({} if old_format else {"ideal_aph": pl.Series(ideal, dtype=pl.Float64)}),
        }
    ).write_parquet(run_dir / "jobs.parquet")  # fmt: skip
    n_nodes = N_NODES[topo]
    pl.DataFrame(
        {
            "t_s": np.arange(len(util)) * 60.0,
            "busy_nodes": pl.Series((np.asarray(util) * n_nodes).round(), dtype=pl.Int32),
            "utilization": util,
        }
    ).write_parquet(run_dir / "utilization.parquet")
    summary = {
        "schema": 1,
        "config": {"topo": topo, "policy": policy, "sched": "easy", "speedup": speedup, "seed": seed,
                   "workload": {"name": name, "path": "/x/atlas.swf", "sha256": "ab" * 32, "scale": scale,
                                "window_start_days": 0, "window_days": 30}},  # fmt: skip
        "n_nodes": n_nodes,
        "counts": {"read": 4, "replayed": 3, "skipped": {"too_large": 1, "bad_runtime": 0}},
        "makespan_s": float(end.max() - submit.min()),
        "replay_wall_s": 1.25,
        **({} if old_format else {"topology": TOPOLOGY[topo]}),
        **(summary_extra or {}),
    }
    if params is not None:
        summary["config"]["policy_params"] = params
    (run_dir / "summary.json").write_text(json.dumps(summary))


def write_results(root: Path, runs=RUNS) -> Path:
    """``runs`` (rows of :data:`RUNS`) under ``root``, beside a folder that is not a run."""
    for i, (rel, *args) in enumerate(runs):
        write_run(root / rel, *args, util=[0.1 * (i + 1), 0.5, 0.9, 0.7])
    decoy = root / "notarun"  # summary.json alone is not a run
    decoy.mkdir()
    (decoy / "summary.json").write_text("{}")
    return root


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results")


# Tests of how the report ends (its files, its refusals, its errors) need runs to report but
# not the six of RUNS: a report draws every figure before it writes a file, and with one
# workload and label that costs half the time (four figures, each as PNG and SVG).


@pytest.fixture
def one_run(tmp_path: Path) -> Path:
    """The first run of :data:`RUNS` alone."""
    return write_results(tmp_path / "results", RUNS[:1])


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """The first two runs of :data:`RUNS` (``sweepA/0``, ``sweepA/1``): one to damage, one left to report."""
    return write_results(tmp_path / "results", RUNS[:2])


def expected_table() -> dict[tuple[str, str], list[float]]:
    """Per (workload, label): each run's mean wait in hours, computed by hand from RUNS."""
    out: dict[tuple[str, str], list[float]] = {}
    names = {("to", "none"): "TO", ("ta", "none"): "TA", ("ta", "v2"): "TA V2", ("tree_bestfit", "none"): "TREE_BESTFIT"}
    for _, policy, speedup, _, name, scale, topo, waits, _ in RUNS:
        workload = f"{name}-{scale}x on {topo}" if scale != 1 else f"{name} on {topo}"
        out.setdefault((workload, names[(policy, speedup)]), []).append(sum(waits) / len(waits) / H)
    return out


def test_labels_and_bins():
    assert report.run_label("to", "none") == "TO"
    assert report.run_label("ta", None) == "TA"
    assert report.run_label("ta", "x5") == "TA x5"
    assert report.run_label("ta", "v1") == "TA V1"
    assert report.run_label("tree_bestfit", "none") == "TREE_BESTFIT"
    labels = ["TREE_BESTFIT", "TA V2", "TA", "TA x20", "TO", "TA V1", "TA x5", "TA x10", "ABC"]
    assert report.order_labels(labels) == ["TO", "TA", "TA x5", "TA x10", "TA x20", "TA V1", "TA V2", "ABC", "TREE_BESTFIT"]
    # outside the paper's: by policy, then scenario (TA model sorted before TO model by name)
    assert report.order_labels(["TA model", "TO V2", "TO model", "TA", "TO V1", "TO", "TA V2{min_nodes=4}"]) == [
        "TO", "TA", "TO V1", "TO V2", "TO model", "TA V2{min_nodes=4}", "TA model"]
    # an arm's settings are no scenario; other policies by name (the torus study's columns)
    assert report.order_labels(["PRISM", "FIRST_FIT ordering=O2", "FEATURE", "TA model", "TA relax_after_s=3600"]) == [
        "TA relax_after_s=3600", "TA model", "FEATURE", "FIRST_FIT ordering=O2", "PRISM"]
    cfg = {"topo": "cab", "workload": {"name": "atlas", "scale": 2}}
    assert report.workload_label(cfg) == "atlas-2x on cab"
    assert report.workload_label({"topo": "pinot", "workload": {"name": "aug", "scale": 1}}) == "aug on pinot"
    # scale=fit (tori, dragonflies): the recorded factor, or the word when none was recorded
    fit = {"topo": "edison", "workload": {"name": "atlas", "scale": "fit", "scale_factor": 5.0}}
    assert report.workload_label(fit) == "atlas-5x on edison"
    # six significant digits: factors that agree to four are different workloads, not seeds
    two = [{"topo": "cab", "workload": {"name": "atlas", "scale": f}} for f in (2.0, 2.0004)]
    assert [report.workload_label(c) for c in two] == ["atlas-2x on cab", "atlas-2.0004x on cab"]
    assert report.workload_label({"topo": "edison", "workload": {"name": "atlas", "scale": "fit"}}) == "atlas-fit on edison"
    from fattorus.report.load import _scale

    assert _scale(fit["workload"]) == 5.0 and _scale({"scale": "fit"}) is None and _scale({"scale": 2}) == 2.0
    assert report.bin_labels((18, 64, 256, 1024)) == ["1-18", "19-64", "65-256", "257-1024", ">1024"]


def test_load_runs_and_table1_match_hand_means(results: Path):
    runs = report.load_runs(results)
    assert len(runs) == len(RUNS)
    assert set(runs["run"]) == {rel for rel, *_ in RUNS}
    # makespan = last end - first submit = 120 + last wait + runtime - 0 (the last job waits longest here)
    to = runs.filter(pl.col("run") == "sweepA/0").row(0, named=True)
    assert to["makespan_h"] == pytest.approx((120.0 + 7200.0 + RUNTIME_S) / H)
    assert to["util_mean"] == pytest.approx(np.mean([0.1, 0.5, 0.9, 0.7]))
    assert to["skipped"] == 1 and to["replay_wall_s"] == 1.25

    table = report.table1(runs)
    assert table.columns[:5] == ["workload", "TO", "TA", "TA V2", "TREE_BESTFIT"]
    assert table["workload"].to_list() == ["atlas-2x on cab", "atlas on pinot"]
    expected = expected_table()
    for (workload, label), values in expected.items():
        row = table.filter(pl.col("workload") == workload).row(0, named=True)
        assert row[label] == pytest.approx(np.mean(values))
        assert row[f"{label} n"] == len(values)
        if len(values) > 1:
            assert row[f"{label} std"] == pytest.approx(np.std(values, ddof=1))
        else:
            assert row[f"{label} std"] is None
    assert table.filter(pl.col("workload") == "atlas on pinot")["TA"].to_list() == [None]
    # the two TA seeds: 2 h and 3 h
    assert expected[("atlas-2x on cab", "TA")] == [2.0, 3.0]


def test_aph_box_stats_pool_seeds(results: Path):
    runs = report.load_runs(results)
    stats = report.aph_box_stats(runs)
    ta = stats.filter((pl.col("workload") == "atlas-2x on cab") & (pl.col("label") == "TA") & (pl.col("bin") == 1))
    row = ta.row(0, named=True)  # the 30-node job of both TA seeds: APH 1.0 and 1.2
    assert (row["jobs"], row["min"], row["max"]) == (2, 1.0, 1.2)
    assert row["median"] == pytest.approx(1.1)
    assert row["ideal"] == pytest.approx(IDEAL_APH[1])  # jobs.parquet's ideal_aph, as the engine wrote it
    assert set(stats["bin"]) == {0, 1, 3}  # 1, 30 and 300 nodes
    waits = report.wait_by_bin(runs)
    all_ta = waits.filter((pl.col("workload") == "atlas-2x on cab") & (pl.col("label") == "TA") & (pl.col("bin") == 5))
    assert all_ta["mean"].item() == pytest.approx(2.5) and all_ta["n"].item() == 2
    big_ta = waits.filter((pl.col("workload") == "atlas-2x on cab") & (pl.col("label") == "TA") & (pl.col("bin") == 3))
    assert big_ta["mean"].item() == pytest.approx((10800.0 + 14400.0) / 2 / H)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_files_and_html(results: Path, capsys):
    out = results / "out"
    assert report.main([str(results), "--out", str(out)]) == 0
    assert "report.html" in capsys.readouterr().out
    for stem, _ in report.FIGURES:
        width, height = png_size((out / f"{stem}.png").read_bytes())
        assert width > 200 and height > 150
        assert "<svg" in (out / f"{stem}.svg").read_text()
    assert not list(out.glob(".*.tmp")), "temporary files left behind"
    umask = os.umask(0o022)
    os.umask(umask)
    assert (out / "report.html").stat().st_mode & 0o777 == 0o666 & ~umask

    csv = pl.read_csv(out / "table1.csv")
    assert csv.filter(pl.col("workload") == "atlas-2x on cab")["TA"].item() == pytest.approx(2.5)
    md = (out / "table1.md").read_text()
    assert "| workload | TO | TA | TA V2 | TREE_BESTFIT |" in md
    assert "| atlas-2x on cab | 1.00 | 2.50 ± 0.71 (n=2) | 1.50 | 0.25 |" in md
    assert "| atlas on pinot | 0.17 | — | — | — |" in md
    assert len(pl.read_csv(out / "runs.csv")) == len(RUNS)

    page = (out / "report.html").read_text()
    for text in ("2.50 ± 0.71 (n=2)", "1.00", "1.50", "0.25", "0.17", "TREE_BESTFIT", "sweepB/x/0",
                 "config.workload.sha256", "replay_wall_s", "1.25"):  # fmt: skip
        assert text in page, text
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(report.FIGURES)
    assert png_size(base64.b64decode(images[0]))[0] > 200
    assert "http://" not in page and "https://" not in page  # no external assets


def test_default_out_dir_and_rerun(one_run: Path):
    results = one_run
    assert report.main([str(results)]) == 0
    first = (results / "report" / "table1.csv").read_text()
    assert report.main([str(results)]) == 0  # the report directory itself is not a run
    assert (results / "report" / "table1.csv").read_text() == first


def test_runs_differing_in_scheduler_are_not_averaged(results: Path):
    summary_path = results / "sweepA" / "2" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["config"]["sched"] = "fcfs"
    summary_path.write_text(json.dumps(summary))
    table = report.table1(report.load_runs(results))
    assert "atlas-2x on cab [fcfs]" in table["workload"].to_list()
    assert table.filter(pl.col("workload") == "atlas-2x on cab [easy]")["TA"].item() == pytest.approx(2.0)


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("sha256", "cd" * 32, "log cdcdcdcdcdcd"),  # another log under the same name (every workload=file run)
    ("node_kind", "XK", "node_kind=XK"),
    ("cores_per_node", 16, "cores_per_node=16"),
], ids=["log", "node_kind", "cores_per_node"])  # fmt: skip
def test_runs_of_another_log_or_node_kind_are_not_averaged(results: Path, key, value, shown):
    summary_path = results / "sweepA" / "2" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["config"]["workload"][key] = value
    summary_path.write_text(json.dumps(summary))
    table = report.table1(report.load_runs(results))
    assert f"atlas-2x on cab [{shown}]" in table["workload"].to_list()
    assert len(table.filter(pl.col("workload").str.starts_with("atlas-2x on cab"))) == 2
    assert table.filter(pl.col("workload") == f"atlas-2x on cab [{shown}]")["TA"].item() == pytest.approx(3.0)


def test_unreadable_run_is_one_line_error(two_runs: Path, capsys):
    results = two_runs
    (results / "sweepA" / "1" / "jobs.parquet").write_bytes(b"not parquet")
    assert report.main([str(results), "--out", str(results / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.count("unreadable parquet") == 1 and "sweepA/1/jobs.parquet: unreadable parquet" in err, err
    assert report.main([str(results), "--out", str(results / "out"), "--skip-bad"]) == 0
    assert "skipped" in capsys.readouterr().err


def test_empty_dir_exits_2_with_one_line(tmp_path: Path):
    empty = tmp_path / "results" / "empty"
    empty.mkdir(parents=True)
    proc = forkcli.run("fattorus.report", [str(empty)], cwd=REPO, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "no run directories" in proc.stderr and "Traceback" not in proc.stderr
    assert not (empty / "report").exists()


def test_old_outputs_without_ideal_aph_warn_once_and_draw_no_ideal(tmp_path: Path, capsys):
    """Runs written before ``ideal_aph``/``topology`` existed still report; Figure 7 has no ideal for them."""
    root = tmp_path / "results" / "old"  # the report is written under results/ only
    write_run(root / "a", "to", "none", 0, "atlas", 2, "cab", [0.0, 60.0, 120.0], [0.0, 2.5, 3.2],
              util=[0.5, 0.6], old_format=True)  # fmt: skip
    write_run(root / "b", "ta", "none", 0, "atlas", 2, "cab", [0.0, 60.0, 120.0], [0.0, 1.0, 1.9], util=[0.5, 0.6])
    assert report.main([str(root), "--out", str(root / "out")]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "ideal_aph" in line]
    assert len(warnings) == 1 and "1 of 2 runs" in warnings[0] and "first a" in warnings[0]
    runs = report.load_runs(root)
    assert runs["has_ideal_aph"].to_list() == [False, True] and runs["topo_kind"].to_list() == [None, "fattree"]
    stats = report.aph_box_stats(runs)
    assert stats.filter(pl.col("label") == "TO")["ideal"].to_list() == [None, None, None]
    assert stats.filter(pl.col("label") == "TA", pl.col("bin") == 1)["ideal"].item() == pytest.approx(IDEAL_APH[1])


def test_trials_runs_are_said_to_count_as_their_trial_0(tmp_path: Path, capsys):
    """A ``trials=N`` run's row is its trial 0 (its jobs.parquet), not its N draws: one warning
    names how many such runs and where the draws are (session 43: the report said nothing)."""
    root = tmp_path / "results" / "mix"  # the report is written under results/ only
    write_run(root / "a", "ta", "v2", 0, "atlas", 2, "cab", [0.0, 60.0, 120.0], [0.0, 1.0, 1.9], util=[0.5],
              summary_extra={"trials": {"n": 4, "batch": 64}})  # fmt: skip
    write_run(root / "b", "to", "v2", 0, "atlas", 2, "cab", [0.0, 60.0, 120.0], [0.0, 2.5, 3.2], util=[0.5])
    assert report.main([str(root), "--out", str(root / "out")]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "trials=N" in line]
    assert warnings == ["fattorus.report: warning: 1 run(s) hold trials=N draws (first a: 4 draws): each counts here "
                        "as its trial 0 (its jobs.parquet); the draws' statistics are in its trials.parquet and "
                        "summary.json's trials entry"]
    runs = report.load_runs(root)
    assert dict(zip(runs["run"], runs["trials"])) == {"a": 4, "b": None}
    # Without a trials=N run: no such line.
    (root / "a" / "summary.json").write_text(json.dumps({k: v for k, v in json.loads(
        (root / "a" / "summary.json").read_text()).items() if k != "trials"}))
    assert report.main([str(root), "--out", str(root / "out2")]) == 0
    assert "trials=N" not in capsys.readouterr().err


def test_aph_axis_spans_torus_hop_counts(tmp_path: Path):
    """A torus study's APH (here up to 9 hops) is not clipped at a fat-tree's 4 hops."""
    root = tmp_path / "torus"
    write_run(root / "r", "first_fit", "none", 0, "thunder", 1, "torus8", [0.0, 0.0, 0.0], [0.0, 5.5, 9.0],
              util=[0.5], ideal=[0.0, 3.1, 6.2])  # fmt: skip
    runs = report.load_runs(root)
    stats = report.aph_box_stats(runs)
    fig = report.figure_aph(runs, stats, report.DEFAULT_EDGES)
    top = fig.axes[0].get_ylim()[1]
    assert top == report.aph_axis_top(stats) == pytest.approx(9.25)
    assert "torus8" in report.runs_table_cells(runs)[1][0]  # the topology config is shown, not looked up


def test_a_panel_of_zero_waits_starts_at_zero(tmp_path: Path):
    """Figure 10's wait axis starts at 0 h: a light workload whose jobs never waited showed an
    axis from -0.04 h."""
    root = tmp_path / "light"
    write_run(root / "r", "to", "none", 0, "atlas", 1, "cab", [0.0, 0.0, 0.0], [0.0, 1.0, 2.0], util=[0.1])
    runs = report.load_runs(root)
    fig = report.figure_wait(runs, report.wait_by_bin(runs), report.DEFAULT_EDGES)
    assert fig.axes[0].get_ylim()[0] == 0.0 and fig.axes[0].get_ylim()[1] > 0
    # One run: no "error bar ±1 std" promised (session 27); a second seed brings it back.
    assert fig._suptitle.get_text() == "Mean wait by job size: one run each"
    write_run(root / "r1", "to", "none", 1, "atlas", 1, "cab", [0.0, 0.0, 0.0], [0.0, 1.0, 2.0], util=[0.1])
    runs = report.load_runs(root)
    fig = report.figure_wait(runs, report.wait_by_bin(runs), report.DEFAULT_EDGES)
    assert fig._suptitle.get_text() == "Mean wait by job size: mean over seeds, error bar ±1 std"


def _extent(artist, renderer):
    return artist.get_window_extent(renderer)


def test_one_workload_figures_keep_titles_and_legends_clear(results: Path):
    """With one workload, Figures 8 and 9: titles inside the image, the legend overlapping no axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    runs = report.load_runs(results).filter(pl.col("workload") == "atlas-2x on cab")
    figures = {"fig8": report.figure_utilization(runs, report.utilization_box_stats(runs)),
               "fig9": report.figure_makespan(runs),
               "fig7": report.figure_aph(runs, report.aph_box_stats(runs), report.DEFAULT_EDGES),
               "fig10": report.figure_wait(runs, report.wait_by_bin(runs), report.DEFAULT_EDGES)}  # fmt: skip
    for name, fig in figures.items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # runs the constrained layout
        renderer = canvas.get_renderer()
        page = fig.bbox.padded(1.0)
        texts = [ax.title for ax in fig.axes] + ([fig._suptitle] if fig._suptitle else [])
        texts += [t for ax in fig.axes for t in ax.get_xticklabels() + [ax.xaxis.label, ax.yaxis.label]]
        for text in texts:
            if text.get_text():
                box = _extent(text, renderer)
                assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (
                    name, text.get_text(), box, fig.bbox)
        (legend,) = fig.legends
        box = _extent(legend, renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1, (name, "legend outside the image")
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), (name, "legend covers the axes")


def test_a_legend_of_many_policies_stays_inside_the_image(tmp_path: Path):
    """Nine policies on one machine: the APH figure's legend (nine labels and the ideal line)
    was cut at both edges ("OMPACT", a session-46 report); every figure's legend lies inside
    the image, in as many columns as fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    root = tmp_path / "many"
    policies = ["to", "ta", "compact", "random_group", "random_router", "random_chassis", "round_robin_node",
                "round_robin_router", "to_random"]
    for i, policy in enumerate(policies):
        write_run(root / policy, policy, "none", 0, "atlas", 2, "cab", [0.0, 60.0 * i, 120.0], [0.0, 1.0, 2.0],
                  util=[0.5, 0.6])
    runs = report.load_runs(root)
    assert runs.height == 9
    for name, fig in (("fig7", report.figure_aph(runs, report.aph_box_stats(runs), report.DEFAULT_EDGES)),
                      ("fig8", report.figure_utilization(runs, report.utilization_box_stats(runs))),
                      ("fig10", report.figure_wait(runs, report.wait_by_bin(runs), report.DEFAULT_EDGES))):
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        (legend,) = fig.legends
        box, page = _extent(legend, canvas.get_renderer()), fig.bbox
        assert page.x0 <= box.x0 and box.x1 <= page.x1, (name, box, page)
        assert len(legend.get_texts()) >= 9


def _rewrite(path: Path, change) -> None:
    """Replace a Parquet file by ``change(frame)``."""
    change(pl.read_parquet(path)).write_parquet(path)


@pytest.mark.parametrize(
    ("table", "change", "why"),
    [
        ("jobs.parquet", lambda f: f.drop("nodes"), "jobs.parquet lacks column(s) nodes"),
        ("jobs.parquet", lambda f: f.head(0), "jobs.parquet has 0 rows, summary.json says 3"),
        ("utilization.parquet", lambda f: f.head(0), "utilization.parquet has no rows"),
    ],
)  # fmt: skip
def test_damaged_run_is_refused_before_any_file(two_runs: Path, capsys, table, change, why):
    """A run lacking a column the report reads, or with fewer rows than its summary records, is a
    damaged run: refused in one line naming it before anything is written, or skipped and counted."""
    results = two_runs
    _rewrite(results / "sweepA" / "1" / table, change)
    out = results / "out"
    assert report.main([str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sweepA/1" in err[0] and why in err[0] and "Traceback" not in err[0], err
    assert not out.exists(), "files written before the refusal"
    assert report.main([str(results), "--out", str(out), "--skip-bad"]) == 0
    err = capsys.readouterr().err
    assert f"skipped {results / 'sweepA' / '1'}: damaged run: {why}" in err
    assert "1 of 2 runs skipped" in err
    runs = pl.read_csv(out / "runs.csv")
    assert runs["run"].to_list() == ["sweepA/0"]


def test_row_count_recorded_under_files_is_checked(results: Path, capsys):
    """``summary.json``'s ``files.<table>.rows`` (what the sweep writes) is checked like ``counts.replayed``."""
    path = results / "sweepA" / "2" / "summary.json"
    summary = json.loads(path.read_text())
    summary["files"] = {"jobs.parquet": {"rows": 3}, "utilization.parquet": {"rows": 806}}
    path.write_text(json.dumps(summary))
    assert report.main([str(results), "--out", str(results / "out")]) == 2
    err = capsys.readouterr().err
    assert "sweepA/2: damaged run: utilization.parquet has 4 rows, summary.json says 806" in err


def test_unwritable_output_is_one_line(one_run: Path, capsys):
    """Output that cannot be written is the environment: one line, exit 1 (as the studies; 2 is
    for usage and input mistakes)."""
    results = one_run
    out = results / "out"
    (out / "table1.md").mkdir(parents=True)  # a file's place taken by a directory
    assert report.main([str(results), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "table1.md" in err[0] and "cannot write" in err[0] and "Traceback" not in err[0], err


def test_output_folder_that_cannot_be_made_exits_1(one_run: Path, capsys):
    results = one_run
    blocker = results / "a_file"
    blocker.write_text("not a folder")
    assert report.main([str(results), "--out", str(blocker / "report")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot create output directory" in err[0] and str(blocker) in err[0], err
    # --out naming the file itself: a usage mistake (exit 2), said as such (was 1, "[Errno 17] File exists").
    assert report.main([str(results), "--out", str(blocker)]) == 2
    assert capsys.readouterr().err == f"fattorus.report: error: --out {blocker}: is a file; give a folder for the report's files\n"


def test_closed_stdout_ends_quietly(one_run: Path, reader_that_leaves):
    """``python -m fattorus.report DIR | head -0``: the reader closes the pipe before the one line
    comes; the report ends quietly with exit 141 (128 + SIGPIPE), every file written. Before, the
    interpreter's final flush raised BrokenPipeError ("Exception ignored ...", exit 120)."""
    results = one_run
    out = results / "out"
    # lines=0: closed long before the report prints (it takes seconds): no reader left
    _, err, code = reader_that_leaves("fattorus.report", str(results), "--out", str(out), lines=0)
    assert code == EXIT_BROKEN_PIPE, err
    assert "BrokenPipe" not in err and "Traceback" not in err and "Exception ignored" not in err, err
    assert (out / "report.html").is_file() and (out / "table1.md").is_file()


def test_runs_differing_in_a_policy_setting_are_separate_arms(tmp_path: Path, capsys):
    """The torus study's first fit over several orderings (policy.params.ordering), one seed each,
    are arms, not seeds of one "FIRST_FIT": labelled apart, not averaged, no duplicate-seed warning.
    Likewise speedup=model runs with another comm_fraction (recorded under runtime_model). A label
    whose runs agree on their settings stays as it was (PRISM)."""
    root = tmp_path / "results" / "torus"  # the report is written under results/ only
    one_min = [0.5]
    orderings = {"id": [0.0, 0.0, 0.0], "O2": [3600.0, 3600.0, 3600.0], "2Y": [7200.0, 7200.0, 7200.0]}
    for ordering, waits in orderings.items():
        write_run(root / f"ff_{ordering}", "first_fit", "none", 0, "thunder", 1, "torus8", waits, [0.0, 1.0, 2.0],
                  util=one_min, params={"ordering": ordering})  # fmt: skip
    # a second seed of O2: averaged with the first
    write_run(root / "ff_O2_s1", "first_fit", "none", 1, "thunder", 1, "torus8", [7200.0] * 3, [0.0, 1.0, 2.0],
              util=one_min, params={"ordering": "O2"})  # fmt: skip
    for i, fill in enumerate((1, 1.0)):  # one setting, recorded as 1 or 1.0: seeds of one arm
        write_run(root / f"prism_{i}", "prism", "none", i, "thunder", 1, "torus8", [1800.0] * 3, [0.0, 1.0, 1.0],
                  util=one_min, params={"fill": fill})  # fmt: skip
    for c in (0.1, 0.3):
        model = {"comm_fraction": c, "patterns": {"stencil4d": 1}, "jobs": 3, "mean_slowdown": 1.0 + c}
        write_run(root / f"model_{c}", "prism", "model", 0, "thunder", 1, "torus8", [c * H] * 3, [0.0, 1.0, 1.0],
                  util=one_min, params={"fill": 1.0}, summary_extra={"runtime_model": model})  # fmt: skip

    runs = report.load_runs(root)
    assert sorted(set(runs["label"])) == [
        "FIRST_FIT ordering=2Y", "FIRST_FIT ordering=O2", "FIRST_FIT ordering=id", "PRISM",
        "PRISM model comm_fraction=0.1", "PRISM model comm_fraction=0.3",
    ]  # fmt: skip
    table = report.table1(runs).row(0, named=True)
    assert table["FIRST_FIT ordering=id"] == 0.0 and table["FIRST_FIT ordering=id n"] == 1
    assert table["FIRST_FIT ordering=O2"] == pytest.approx(1.5) and table["FIRST_FIT ordering=O2 n"] == 2
    assert table["FIRST_FIT ordering=2Y"] == pytest.approx(2.0) and table["FIRST_FIT ordering=2Y n"] == 1
    assert table["PRISM"] == pytest.approx(0.5) and table["PRISM n"] == 2
    assert table["PRISM model comm_fraction=0.1"] == pytest.approx(0.1)

    assert report.main([str(root), "--out", str(root / "out")]) == 0
    err = capsys.readouterr().err
    assert "have seed" not in err, err  # no arm is taken for a re-run of another
    assert " FIRST_FIT ordering=2Y |" in (root / "out" / "table1.md").read_text()


def test_label_arms_marks_a_setting_a_run_does_not_record():
    """A run that does not record a setting its label's other runs differ in is kept apart ("?")."""
    runs = pl.DataFrame({"label": ["FIRST_FIT", "FIRST_FIT", "TA"],
                         "arm": ['{"ordering": "O2"}', "{}", '{"hybrid": "true"}']})  # fmt: skip
    assert report.label_arms(runs)["label"].to_list() == ["FIRST_FIT ordering=O2", "FIRST_FIT ordering=?", "TA"]
    # Beside a setting that tells the arms apart, a "?" of a setting the run has no use for is
    # left out (session 43: "to comm_fraction=? patterns=? speedup=none"); where leaving it
    # out would name two arms alike, it stays.
    model = '{"comm_fraction": "0.3", "patterns": "p", "speedup": "model"}'
    runs = pl.DataFrame({"label": ["TO"] * 4, "arm": [model, '{"speedup": "none"}', '{"speedup": "v2"}',
                                                      '{"comm_fraction": "0.5", "speedup": "model"}']})
    assert report.label_arms(runs)["label"].to_list() == [
        "TO comm_fraction=0.3 patterns=p speedup=model", "TO speedup=none", "TO speedup=v2",
        "TO comm_fraction=0.5 speedup=model"]
    # Two runs that leaving the "?" out would name alike keep it.
    runs = pl.DataFrame({"label": ["TO"] * 3, "arm": ['{"a": "1", "b": "2"}', '{"a": "1"}', '{"a": "1", "b": "3"}']})
    assert report.label_arms(runs)["label"].to_list() == ["TO b=2", "TO b=?", "TO b=3"]
    summary = {"config": {"policy_params": {"ordering": "2Y", "w": {"a": 2.0}}},
               "runtime_model": {"comm_fraction": 0.25, "patterns": {"a2a": 1}, "mean_slowdown": 1.5}}
    assert report.arm_settings(summary) == {"ordering": "2Y", "w.a": "2", "comm_fraction": "0.25",
                                            "patterns": '{"a2a":1}'}  # fmt: skip


def test_a_speedup_scenario_edited_on_the_command_line_is_another_arm():
    """The scenario's name with what a run changed of its file (``config.speedup_edits``): two
    runs of ``x20`` that differ in a class's smallest job are two arms, not seeds of one."""
    plain = {"config": {"policy_params": {}, "speedup": "x20", "speedup_edits": {}}}
    edited = {"config": {"policy_params": {}, "speedup": "x20",
                         "speedup_edits": {"classes.0.min_nodes": 4096, "cap": 256.0}}}
    old = {"config": {"policy_params": {}, "speedup": "x20"}}  # before speedup_edits: its name
    assert report.arm_settings(plain) == report.arm_settings(old) == {"speedup": "x20"}
    assert report.arm_settings(edited) == {"speedup": "x20{cap=256, classes.0.min_nodes=4096}"}
    runs = pl.DataFrame({"label": ["TA x20"] * 2, "arm": [json.dumps(report.arm_settings(s)) for s in (plain, edited)]})
    assert report.label_arms(runs)["label"].to_list() == ["TA x20 speedup=x20",
                                                          "TA x20 speedup=x20{cap=256, classes.0.min_nodes=4096}"]


def test_output_outside_the_results_is_refused(results: Path, tmp_path: Path, capsys):
    """--out must lie under a results/ directory (nothing is written outside the results),
    checked before anything is read or written; so must the default RESULTS_DIR/report (a
    copy of the runs in another folder got its report/ there, while compare and report.qos
    wrote nothing there: session 46)."""
    elsewhere = tmp_path / "elsewhere" / "report"
    assert report.main([str(results), "--out", str(elsewhere)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"fattorus.report: error: --out {elsewhere}: must lie under a results/ directory")
    assert not elsewhere.parent.exists()
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    assert report.main([str(copy)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (f"fattorus.report: error: {copy} is not under a results/ directory, so its report/ would be "
                    "written outside the results: give --out results/NAME")
    assert not (copy / "report").exists()
    assert report.main([str(copy), "--out", str(results / "from_copy")]) == 0
    assert (results / "from_copy" / "report.html").exists() and not (copy / "report").exists()


def test_table_i_names_runs_that_share_a_seed(tmp_path: Path):
    """Two runs of one arm with one seed (a re-run) count as two runs in Table I's mean, std
    and n; table1.md and the page now say so under the table (before session 27: stderr only)."""
    root = tmp_path / "dup"
    for name in ("a", "b"):
        write_run(root / name, "to", "none", 0, "atlas", 1, "cab", [0.0, 60.0, 120.0], [0.0, 1.0, 2.0], util=[0.5])
    out = Path(report.write_report(root)).parent
    note = "Runs sharing a seed, each counted as a run: 2 runs of atlas on cab / TO have seed 0."
    assert note in (out / "table1.md").read_text()
    assert note in (out / "report.html").read_text()
    single = tmp_path / "one"
    write_run(single / "a", "to", "none", 0, "atlas", 1, "cab", [0.0, 60.0, 120.0], [0.0, 1.0, 2.0], util=[0.5])
    assert "sharing a seed" not in (Path(report.write_report(single)).parent / "table1.md").read_text()
