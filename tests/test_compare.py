"""The study comparison table (fattorus.app.compare) on hand-made trials."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from fattorus.app import compare
from fattorus.args import EXIT_BROKEN_PIPE


def _trial(path, policy, params, util, waits, exposed, app_eff=None, speedup=None, window=None, edits=None):
    path.mkdir(parents=True)
    cfg = {"topo": "t", "policy": policy, "policy_params": params,
           "workload": {"name": "w", "scale_factor": 2.0, **(window or {})}, **({"speedup": speedup} if speedup else {}),
           **({"speedup_edits": edits} if edits is not None else {})}
    summary = {"config": cfg, "utilization": {"mean": util}}
    if app_eff is not None:
        summary["runtime_model"] = {"application_efficiency": app_eff}
    (path / "summary.json").write_text(json.dumps(summary))
    n = len(waits)
    pl.DataFrame({"nodes": [1, 2048][:n], "wait_s": waits, "aph": [0.0, 4.0][:n], "max_hops": [0, 9][:n],
                  "exposed": exposed, "bbox_fill": [1.0, 0.5][:n]}).write_parquet(path / "jobs.parquet")


def _row_labels(text: str) -> list[str]:
    """The row labels of a compare.md table, in its order."""
    return [line.split(" | ")[0].lstrip("| ") for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| policy")]


def test_break_even_is_the_utilization_ratio(results_path, capsys):
    _trial(results_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    _trial(results_path / "b", "prism", {"fill": 1.0}, 0.72, [3600.0, 3600.0], [False, False])
    assert compare.main([str(results_path), "--large", "1024"]) == 0
    text = (results_path / "compare.md").read_text()
    assert "### w x2 on t" in text
    # prism: 0.9 / 0.72 = 1.25; the reference against itself: 1
    assert "| prism | 2 | 1.00 | 72.0% | 2.00 | 4.00 | 9.0 | 0.0% | 0.75 | 1.250 |" in text
    assert "| first_fit ordering=O2 | 2 | 1.00 | 90.0% | 2.00 | 4.00 | 9.0 | 50.0% | 0.75 | 1.000 |" in text
    assert compare.main([str(results_path / "nothing")]) == 2
    assert "fattorus.app.compare: error: " in (err := capsys.readouterr().err) and "no such results directory" in err
    assert compare.main([str(results_path / "compare.md")]) == 2  # a file: named as such
    assert "compare.md: not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        compare.main([str(results_path), "--large", "-5"])
    assert exit_.value.code == 2 and "--large -5: give a node count >= 1" in capsys.readouterr().err


def test_short_mean_waits_keep_their_digits(results_path):
    """A light load's mean wait of 18 s (0.005 h) read 0.00 h: under 0.1 h two significant
    figures, a trailing zero kept (0.0050)."""
    _trial(results_path / "a", "to", {}, 0.9, [0.0, 36.0], [False, False])
    assert compare.main([str(results_path)]) == 0
    assert "| to | 2 | 0.0050 | 90.0% |" in (results_path / "compare.md").read_text()


def test_damaged_trials_are_named_and_skipped(results_path, capsys):
    _trial(results_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    _trial(results_path / "cut", "prism", {}, 0.7, [0.0, 1.0], [False, False])
    data = (results_path / "cut" / "jobs.parquet").read_bytes()
    (results_path / "cut" / "jobs.parquet").write_bytes(data[: len(data) // 2])  # a cut parquet file
    _trial(results_path / "json", "prism", {}, 0.7, [0.0, 1.0], [False, False])
    (results_path / "json" / "summary.json").write_text("{bad")
    assert compare.main([str(results_path)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "2 damaged trial(s) skipped" in err
    assert str(results_path / "cut") in err and str(results_path / "json") in err
    assert "first_fit ordering=O2" in (results_path / "compare.md").read_text()


def test_reference_that_matches_no_arm(results_path, capsys):
    """A given --reference naming no arm is refused in one line listing the labels, before any write;
    the default is first fit over O2, else `to`; naming no arm it drops the break-even column
    with one note, never ``nan``."""
    _trial(results_path / "a", "to", {}, 0.9, [0.0, 7200.0], [True, False])
    _trial(results_path / "b", "ta", {}, 0.72, [3600.0, 3600.0], [False, False])
    assert compare.main([str(results_path), "--reference", "TO"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "--reference 'TO'" in err[0] and "'ta', 'to'" in err[0], err
    assert captured.out == "" and not (results_path / "compare.md").exists()

    # The default: first fit over O2 (the torus paper's), else `to` (the fat-tree paper's).
    for args in ([], ["--reference", "to"]):
        assert compare.main([str(results_path), *args]) == 0
        text = (results_path / "compare.md").read_text()
        assert "| ta | 2 | 1.00 | 72.0% | 2.00 | 4.00 | 9.0 | 0.0% | 0.75 | 1.250 |" in text
        assert capsys.readouterr().err == ""

    # Neither default names an arm: no break-even column, one note, never `nan`.
    (results_path / "a" / "summary.json").write_text((results_path / "a" / "summary.json").read_text().replace('"to"',
                                                                                                      '"tree_bestfit"'))
    assert compare.main([str(results_path)]) == 0
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "'first_fit ordering=O2' is not an arm" in err[0] and "--reference LABEL" in err[0], err
    assert "'ta', 'tree_bestfit'" in err[0] and "'to' is not an arm" in err[0]
    text = (results_path / "compare.md").read_text()
    assert "nan |\n" not in text and "break-even" not in text
    assert "| ta | 2 | 1.00 | 72.0% | 2.00 | 4.00 | 9.0 | 0.0% | 0.75 |\n" in text


def test_workload_without_the_reference_gets_a_note(results_path, capsys):
    _trial(results_path / "a", "to", {}, 0.9, [0.0, 7200.0], [True, False])
    _trial(results_path / "b", "ta", {}, 0.72, [3600.0, 3600.0], [False, False])
    _trial(results_path / "c", "ta", {}, 0.72, [3600.0, 3600.0], [False, False])
    summary = json.loads((results_path / "c" / "summary.json").read_text())
    summary["config"]["topo"] = "u"
    (results_path / "c" / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(results_path), "--reference", "to"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "w x2 on u" in err[0] and "'to'" in err[0], err
    text = (results_path / "compare.md").read_text()
    on_u = text[text.index("### w x2 on u"):]
    assert "break-even" not in on_u and "nan" not in on_u
    assert "break-even vs to" in text[: text.index("### w x2 on u")]


def test_unwritable_compare_md_is_one_line(results_path, capsys):
    """compare.md that cannot be written is the environment: one line, exit 1 (as the studies;
    2 is for usage and input mistakes)."""
    _trial(results_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    (results_path / "compare.md").mkdir()  # the table's place is taken by a directory
    assert compare.main([str(results_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(results_path / "compare.md") in err[0] and "cannot write" in err[0], err
    assert not [p for p in results_path.iterdir() if p.name.startswith(".compare.md.")], "temporary file left behind"


def test_other_studies_results_are_not_damaged_trials(results_path, capsys):
    """QoS / network-study folders (summary.json without a config, their own jobs.parquet) are skipped and counted."""
    _trial(results_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    for name, summary in (("qos", {"study": "qos", "by_pattern": {}}), ("net", {"seed": 1, "cases": {}})):
        (results_path / name).mkdir()
        (results_path / name / "summary.json").write_text(json.dumps(summary))
        pl.DataFrame({"pattern": ["a2a"]}).write_parquet(results_path / name / "jobs.parquet")
    assert compare.main([str(results_path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 folder(s)" in err[0] and "not replay runs" in err[0], err
    assert "damaged" not in err[0]
    assert "| first_fit ordering=O2 | 2 |" in (results_path / "compare.md").read_text()


def test_reader_that_stops_after_the_first_line_ends_it_quietly(results_path, reader_that_leaves):
    """``compare DIR | head -1``: the pipe is closed after the first line, with most of the table
    still to come; compare ends quietly with exit 141 (128 + SIGPIPE), compare.md complete. Before,
    a BrokenPipeError traceback and exit 1."""
    _trial(results_path / "ref", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False])
    for i in range(40):  # 40 rows of ~3 kB: far more than a pipe holds (64 kB), so writes remain after the close
        _trial(results_path / f"t{i}", f"policy{i:02d}_" + "x" * 3000, {}, 0.8, [0.0, 3600.0], [False, False])
    (first,), err, code = reader_that_leaves("fattorus.app.compare", str(results_path))
    assert code == EXIT_BROKEN_PIPE, err
    assert first == "### w x2 on t\n"
    assert err == "", err  # no traceback, no "Exception ignored" from the final flush
    text = (results_path / "compare.md").read_text()  # written before printing: the early reader loses nothing
    assert text.count("| policy") == 41 and text.endswith("|\n\n")


def test_arms_of_one_policy_with_other_settings_get_their_own_labels(results_path):
    """Two `ta` arms that differ in a heuristic are two rows, each named by the setting, and a
    --reference picks the right one (by hand: 0.8 / 0.64 = 1.25 against the `most` arm); a
    setting both `first_fit` trials share is left out of their labels, `ordering` always shown."""
    _trial(results_path / "a", "ta", {"t1_pod_order": "least", "tie": "low_id"}, 0.64, [0.0, 1.0], [False, False])
    _trial(results_path / "b", "ta", {"t1_pod_order": "most", "tie": "low_id"}, 0.8, [0.0, 1.0], [False, False])
    _trial(results_path / "c", "first_fit", {"ordering": "id", "x": 1}, 0.5, [0.0, 1.0], [True, False])
    _trial(results_path / "d", "first_fit", {"ordering": "O2", "x": 1}, 0.5, [0.0, 1.0], [True, False])
    assert compare.main([str(results_path), "--reference", "ta t1_pod_order=most"]) == 0
    rows = _row_labels((results_path / "compare.md").read_text())
    assert sorted(rows) == ["first_fit ordering=O2", "first_fit ordering=id", "ta t1_pod_order=least",
                            "ta t1_pod_order=most"]
    text = (results_path / "compare.md").read_text()
    assert "| ta t1_pod_order=least | 2 |" in text and text.split("| ta t1_pod_order=least |")[1].splitlines()[0].endswith(" 1.250 |")


def test_arms_of_one_policy_under_other_speedup_scenarios_are_other_rows(results_path, capsys):
    """`ta` under `none` and under `v2` (sweeps/smoke.yaml runs both) are two arms, named by the
    scenario, not one arm run twice; where the table holds several scenarios every row names
    its own (`to speedup=none`)."""
    _trial(results_path / "a", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="none")
    _trial(results_path / "b", "ta", {}, 0.8, [0.0, 1.0], [False, False], speedup="v2")
    _trial(results_path / "c", "to", {}, 0.8, [0.0, 1.0], [True, False], speedup="none")
    assert compare.main([str(results_path), "--reference", "ta speedup=v2"]) == 0
    text = (results_path / "compare.md").read_text()
    rows = _row_labels(text)
    assert sorted(rows) == ["ta speedup=none", "ta speedup=v2", "to speedup=none"]
    assert text.split("| ta speedup=v2 |")[1].splitlines()[0].endswith(" 1.000 |")
    # Under `none` against a `v2` reference: other run times, no break-even (it read 1.600).
    assert text.split("| ta speedup=none |")[1].splitlines()[0].endswith(" – |")
    assert "several trials" not in capsys.readouterr().err


def test_a_scenario_edited_on_the_command_line_is_another_arm(results_path, capsys):
    """Two `ta` runs of `x20`, one with `speedup.classes.0.min_nodes=4096` (its summary records
    `speedup_edits`): two rows named by what the run changed, not one arm run twice."""
    _trial(results_path / "a", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="x20")
    _trial(results_path / "b", "ta", {}, 0.8, [0.0, 1.0], [False, False], speedup="x20")
    summary = json.loads((results_path / "b" / "summary.json").read_text())
    summary["config"]["speedup_edits"] = {"classes.0.min_nodes": 4096}
    (results_path / "b" / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(results_path), "--reference", "ta speedup=x20"]) == 0
    text = (results_path / "compare.md").read_text()
    rows = sorted(_row_labels(text))
    assert rows == ["ta speedup=x20", "ta speedup=x20{classes.0.min_nodes=4096}"]
    assert "several trials" not in capsys.readouterr().err


def test_every_row_names_its_scenario_where_the_table_holds_several(results_path, capsys):
    """`ta` run only under V2 beside `to` under none: both rows name their scenario (the `ta` row
    read as plain `ta` before), and `--reference to` is the only arm whose label starts with
    `to`; a start several labels share names no one arm and is refused in one line."""
    _trial(results_path / "a", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="v2")
    _trial(results_path / "b", "to", {}, 0.8, [0.0, 1.0], [True, False], speedup="none")
    assert compare.main([str(results_path), "--reference", "to"]) == 0
    err = capsys.readouterr().err
    assert "reference 'to' is the arm 'to speedup=none'" in err
    text = (results_path / "compare.md").read_text()
    assert "break-even vs to speedup=none |" in text
    assert text.split("| ta speedup=v2 |")[1].splitlines()[0].endswith(" – |")  # other run times than the reference's
    assert "| to speedup=none |" in text
    assert compare.main([str(results_path), "--reference", "t"]) == 2  # "t" is no label, nor its first whole word
    _trial(results_path / "c", "ta", {}, 0.6, [0.0, 1.0], [False, False], speedup="none")
    assert compare.main([str(results_path), "--reference", "ta"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fattorus.app.compare: error: --reference 'ta' names 2 arms; labels present: "), err
    assert "'ta speedup=none', 'ta speedup=v2', 'to speedup=none'" in err[-1]


def test_a_tuned_configs_runs_are_named_by_the_config(results_path):
    """A run of `policy=ta_tuned_x` records `policy_config` (its policy is still `ta`): its row is
    `ta_tuned_x`, not `ta` with every heuristic spelled out beside the defaults' `ta`."""
    _trial(results_path / "a", "ta", {"relax_after_s": None, "tie": "low_id"}, 0.5, [0.0, 1.0], [False, False])
    _trial(results_path / "b", "ta", {"relax_after_s": 605.3, "tie": "low_id"}, 0.8, [0.0, 1.0], [False, False])
    summary = json.loads((results_path / "b" / "summary.json").read_text())
    summary["config"]["policy_config"] = "ta_tuned_x"
    (results_path / "b" / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(results_path), "--reference", "ta"]) == 0
    text = (results_path / "compare.md").read_text()
    rows = sorted(_row_labels(text))
    assert rows == ["ta", "ta_tuned_x"]
    assert text.split("| ta_tuned_x |")[1].splitlines()[0].endswith(" 0.625 |")  # 0.5 / 0.8, by hand


def test_model_runs_get_the_total_system_efficiency(results_path):
    """utilization x the model's application efficiency; an arm without the model gets a dash."""
    _trial(results_path / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False], app_eff=0.8)
    _trial(results_path / "b", "prism", {"fill": 1.0}, 0.72, [3600.0, 3600.0], [False, False], app_eff=1.0)
    _trial(results_path / "c", "feature", {}, 0.85, [0.0, 0.0], [True, True])
    assert compare.main([str(results_path), "--large", "1024"]) == 0
    text = (results_path / "compare.md").read_text()
    assert "| utilization | system efficiency | APH |" in text
    assert "| first_fit ordering=O2 | 2 | 1.00 | 90.0% | 72.0% | 2.00 |" in text  # 0.9 x 0.8
    assert "| prism | 2 | 1.00 | 72.0% | 72.0% | 2.00 |" in text
    assert "| feature | 2 | 0.00 | 85.0% | – | 2.00 |" in text


def test_an_arm_run_with_several_seeds_gets_one_labelled_row_per_seed(results_path):
    """Rows of one arm that differ only by seed read ``seed=N`` (they read the same before),
    and each is compared with the reference's run of its own seed; an arm with one seed, and
    --reference, keep the label without it."""
    def trial(name, policy, params, util, seed):
        _trial(results_path / name, policy, params, util, [0.0, 3600.0], [False, False])
        summary = json.loads((results_path / name / "summary.json").read_text())
        summary["config"]["seed"] = seed
        (results_path / name / "summary.json").write_text(json.dumps(summary))

    trial("r0", "first_fit", {"ordering": "O2"}, 0.9, 0)
    trial("r1", "first_fit", {"ordering": "O2"}, 0.8, 1)
    trial("p0", "prism", {}, 0.72, 0)
    trial("p1", "prism", {}, 0.5, 1)
    trial("f0", "feature", {}, 0.6, 0)
    assert compare.main([str(results_path), "--reference", "first_fit ordering=O2"]) == 0
    text = (results_path / "compare.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) >= {"prism seed=0", "prism seed=1", "first_fit ordering=O2 seed=0", "first_fit ordering=O2 seed=1",
                         "feature"}
    assert "break-even vs first_fit ordering=O2 (same seed)" in text
    assert rows["prism seed=0"].endswith(" 1.250 |")  # 0.9 / 0.72, seed 0's reference
    assert rows["prism seed=1"].endswith(" 1.600 |")  # 0.8 / 0.5, seed 1's reference
    assert rows["first_fit ordering=O2 seed=1"].endswith(" 1.000 |")
    assert rows["feature"].endswith(" 1.500 |")  # no seed-0 twin needed: 0.9 / 0.6 against seed 0


def test_a_seed_the_reference_lacks_is_marked_and_repeated_runs_are_named(results_path, capsys):
    def trial(name, policy, util, seed):
        _trial(results_path / name, policy, {}, util, [0.0, 3600.0], [False, False])
        summary = json.loads((results_path / name / "summary.json").read_text())
        if seed is not None:
            summary["config"]["seed"] = seed
        (results_path / name / "summary.json").write_text(json.dumps(summary))

    trial("r0", "to", 0.9, 0)
    trial("r1", "to", 0.8, 1)
    trial("p2", "ta", 0.6, 2)      # the reference has no seed-2 run
    trial("p0", "ta", 0.45, 0)
    trial("q", "ta", 0.5, None)    # an old trial without a seed
    trial("again", "to", 0.7, 1)   # seed 1 of the reference run twice
    assert compare.main([str(results_path), "--reference", "to"]) == 0
    captured = capsys.readouterr()
    text = (results_path / "compare.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["ta seed=2"].endswith(" 1.500† |")  # 0.9 / 0.6 against seed 0, marked
    assert rows["ta seed=0"].endswith(" 2.000 |")   # 0.9 / 0.45, its own seed
    assert "ta seed=?" in rows
    assert "† against the reference's seed=0 run" in text
    assert "label(s) name several trials" in captured.err and "to seed=1 (2 rows)" in captured.err


def test_trials_of_other_time_windows_are_other_workloads(results_path, capsys):
    """Two windows of one log (`workload.window_start_days=0,7`) are two tables, each with its
    own reference (by hand: days 7+7, 0.62722 / 0.62715 = 1.000; the window-0 `to` run's
    utilization must not be used there), not one table with repeated arms."""
    for start, u_to, u_ta in ((0.0, 0.37401, 0.5), (7.0, 0.62722, 0.62715)):
        window = {"window_start_days": start, "window_days": 7.0}
        _trial(results_path / f"to{start}", "to", {}, u_to, [0.0, 1.0], [True, False], window=window)
        _trial(results_path / f"ta{start}", "ta", {}, u_ta, [0.0, 1.0], [False, False], window=window)
    assert compare.main([str(results_path), "--reference", "to"]) == 0
    text = (results_path / "compare.md").read_text()
    assert "### w x2 on t [days 0–7]" in text and "### w x2 on t [days 7–14]" in text
    late = text.split("[days 7–14]")[1]
    assert late.split("| ta |")[1].splitlines()[0].endswith(" 1.000 |")
    early = text.split("[days 0–7]")[1].split("###")[0]
    assert early.split("| ta |")[1].splitlines()[0].endswith(" 0.748 |")  # 0.37401 / 0.5
    assert "several trials" not in capsys.readouterr().err


def test_window_utilization_and_the_steady_window_by_hand():
    from fattorus.analysis import metrics

    start, end, nodes = np.array([0.0, 5.0, 30.0]), np.array([10.0, 20.0, 40.0]), np.array([2, 1, 4])
    # [5, 25): 2 nodes x 5 s + 1 node x 15 s = 25 node-seconds over 4 nodes x 20 s.
    assert metrics.window_utilization(start, end, nodes, 4, 5.0, 25.0) == 0.3125
    assert np.isnan(metrics.window_utilization(start, end, nodes, 4, 5.0, 5.0))
    assert metrics.steady_window(np.array([8.0, 0.0, 20.0])) == (5.0, 20.0)  # a quarter in, the last submit


def test_break_even_from_the_steady_window(results_path):
    """Trials whose jobs carry submit, start and end times get the steady utilization and its
    break-even beside the whole-run ones. Two jobs submitted at 0 and 40 s: the window is
    [10, 40). First fit: jobs of 4 nodes on [0, 50) and 2 on [40, 60): 4 x 30 / (4 x 30) = 100 %.
    Prism: 4 nodes on [0, 20) and 2 on [40, 60): 4 x 10 / 120 = 33.3 %; break-even 3.000."""
    for name, policy, params, util, s, e in (("a", "first_fit", {"ordering": "O2"}, 0.8, [0.0, 40.0], [50.0, 60.0]),
                                             ("b", "prism", {}, 0.5, [0.0, 40.0], [20.0, 60.0])):
        path = results_path / name
        path.mkdir()
        cfg = {"topo": "t", "policy": policy, "policy_params": params, "workload": {"name": "w", "scale_factor": 1.0}}
        (path / "summary.json").write_text(json.dumps({"config": cfg, "utilization": {"mean": util}, "usable_nodes": 4}))
        pl.DataFrame({"nodes": [4, 2], "wait_s": [0.0, 0.0], "aph": [0.0, 0.0], "max_hops": [0, 0],
                      "exposed": [False, False], "bbox_fill": [1.0, 1.0], "submit_s": [0.0, 40.0],
                      "start_s": s, "end_s": e}).write_parquet(path / "jobs.parquet")
    assert compare.main([str(results_path)]) == 0
    text = (results_path / "compare.md").read_text()
    assert "| steady utilization | break-even (steady) |" in text
    assert "| 1.600 | 33.3% | 3.000 |" in text  # prism: whole run 0.8 / 0.5, steady 1 / (1/3)
    assert "| 1.000 | 100.0% | 1.000 |" in text
    # Without a reference arm the steady utilization is still shown (it needs none); a window
    # too short for a steady part (NaN) is a dash, not `nan%`.
    (results_path / "compare.md").unlink()
    (results_path / "a" / "summary.json").rename(results_path / "a" / "kept.json")  # no first_fit O2 arm now
    short = results_path / "b" / "jobs.parquet"
    pl.read_parquet(short).with_columns(submit_s=pl.Series([0.0, 0.0])).write_parquet(short)
    assert compare.main([str(results_path)]) == 0
    text = (results_path / "compare.md").read_text()
    assert "| bbox fill | steady utilization |" in text and "break-even" not in text
    assert text.splitlines()[4].endswith("| 1.00 | – |"), text  # prism's row: steady window empty


def test_per_application_speedups_over_the_reference(results_path):
    """By hand, c = 0.5: app A's factors under O2 are 1.5 and 2.5 (mean 2.0), under 2Y 1.0:
    speedup 2.00; app B 1.0 under O2 and 2.0 under 2Y: 0.50; mean over applications 1.25. App
    C ran under O2 only: left out. Runs without applications get no such table."""
    def trial(name, ordering, apps, slowdowns):
        path = results_path / name
        path.mkdir()
        cfg = {"topo": "t", "policy": "first_fit", "policy_params": {"ordering": ordering},
               "workload": {"name": "w", "scale_factor": 1.0}}
        (path / "summary.json").write_text(json.dumps({"config": cfg, "utilization": {"mean": 0.8},
                                                       "runtime_model": {"application_efficiency": 0.6,
                                                                         "comm_fraction": 0.5}}))
        n = len(apps)
        pl.DataFrame({"nodes": [64] * n, "wait_s": [0.0] * n, "aph": [1.0] * n, "max_hops": [2] * n,
                      "exposed": [True] * n, "bbox_fill": [1.0] * n, "app": apps,
                      "slowdown": slowdowns}).write_parquet(path / "jobs.parquet")

    trial("o2", "O2", ["A", "A", "B", "C"], [2.0, 4.0, 1.0, 1.0])
    trial("2y", "2Y", ["A", "B", "A"], [1.0, 3.0, 1.0])
    assert compare.main([str(results_path)]) == 0
    text = (results_path / "compare.md").read_text()
    assert "### w x1 on t: per application, speedup over first_fit ordering=O2" in text
    assert "| A | 2 | 2.00 |" in text and "| B | 1 | 0.50 |" in text and "| C |" not in text
    assert "| mean over applications | | 1.25 |" in text
    # The same arm run twice (one label, two trials): a column each, means included.
    trial("2y_again", "2Y", ["A", "B", "A"], [1.0, 3.0, 1.0])
    assert compare.main([str(results_path)]) == 0
    text = (results_path / "compare.md").read_text()
    assert "| A | 2 | 2.00 | 2.00 |" in text and "| mean over applications | | 1.25 | 1.25 |" in text
    other = results_path / "plain"
    other.mkdir()
    _trial(other / "a", "first_fit", {"ordering": "O2"}, 0.9, [0.0, 7200.0], [True, False], app_eff=0.5)
    _trial(other / "b", "prism", {}, 0.7, [0.0, 1.0], [False, False], app_eff=0.9)
    assert compare.main([str(other)]) == 0
    assert "per application" not in (other / "compare.md").read_text()


def test_a_metric_without_a_value_is_a_dash_not_nan(results_path):
    """Fat-tree jobs have no bounding-box fill, and a study without large jobs has no large-job
    APH: those cells read "–", not "nan" (which would read as a result)."""
    for name, policy in (("a", "to"), ("b", "ta")):
        _trial(results_path / name, policy, {}, 0.8, [0.0], [False])  # one 1-node job: nothing >= 1024 nodes
        jobs = pl.read_parquet(results_path / name / "jobs.parquet").drop("bbox_fill")
        jobs.write_parquet(results_path / name / "jobs.parquet")
    assert compare.main([str(results_path), "--reference", "to"]) == 0
    text = (results_path / "compare.md").read_text()
    assert "nan" not in text
    assert "| ta | 1 | 0.00 | 80.0% | 0.00 | – | – | 0.0% | – | 1.000 |" in text


def test_a_whole_log_run_beside_windowed_ones_reads_whole_log(results_path):
    """A run without a window beside windowed runs of the same log was labelled ``[?]``; it
    is the whole log (session 27). A start without an end reads ``days 7.5–end``."""
    for name, window in (("whole", {"window_start_days": 0, "window_days": None}),
                         ("first", {"window_start_days": 0, "window_days": 3.0}),
                         ("late", {"window_start_days": 7.5, "window_days": None})):
        _trial(results_path / name, "to", {}, 0.5, [0.0, 1.0], [True, False], window=window)
    assert compare.main([str(results_path)]) == 0
    text = (results_path / "compare.md").read_text()
    assert {"### w x2 on t [whole log]", "### w x2 on t [days 0–3]", "### w x2 on t [days 7.5–end]"} <= set(
        text.splitlines()), text


def test_runs_with_another_dirty_line_ceiling_are_another_workload(results_path):
    """``workload.max_runtime_s`` decides which log lines are jobs; a run with another ceiling
    was averaged with default runs as if another seed (it was not recorded). A run that did
    not record one reads as the default, 366 days, as a run of the default does (null; session 27)."""
    _trial(results_path / "old", "to", {}, 0.5, [0.0, 1.0], [True, False])
    _trial(results_path / "default", "to", {}, 0.5, [0.0, 1.0], [True, False], window={"max_runtime_s": None})
    _trial(results_path / "short", "to", {}, 0.4, [0.0, 1.0], [True, False], window={"max_runtime_s": 3600.0})
    assert compare.main([str(results_path)]) == 0
    heads = {line for line in (results_path / "compare.md").read_text().splitlines() if line.startswith("### ")}
    assert heads == {"### w x2 on t [max_runtime_s=default]", "### w x2 on t [max_runtime_s=3600]"}, heads


def test_trials_made_by_several_code_sources_are_noted(results_path, capsys):
    """A difference between arms may be a change of code: trials whose summary.json records
    other fattorus sources (or none) are counted in one note; one source, no note."""
    def stamped(name, source):
        _trial(results_path / name, "first_fit" if name < "c" else "prism", {}, 0.8, [0.0, 1.0], [False, False])
        summary = json.loads((results_path / name / "summary.json").read_text())
        if source is not None:
            summary["fattorus"] = {"version": "0.1.0", "source": source}
        (results_path / name / "summary.json").write_text(json.dumps(summary))

    stamped("a", "aaaaaaaaaaaa")
    stamped("c", "aaaaaaaaaaaa")
    assert compare.main([str(results_path)]) == 0
    assert "fattorus sources" not in capsys.readouterr().err
    stamped("b", "bbbbbbbbbbbb")
    stamped("d", None)
    assert compare.main([str(results_path)]) == 0
    err = capsys.readouterr().err
    assert "fattorus.app.compare: note: these trials were made by 3 fattorus sources (aaaaaaaaaaaa: 2, " in err, err
    assert "bbbbbbbbbbbb: 1" in err and "unrecorded: 1" in err


def test_the_default_reference_note_says_why_to_names_no_arm():
    """Beside ``to speedup=none`` and ``to speedup=v2`` the default ``to`` names two arms: the
    note says so rather than only that the torus paper's default is missing."""
    from fattorus.app import compare

    rows = [{"arm": a, "policy": a.split()[0], "workload": "w"} for a in ("to speedup=none", "to speedup=v2", "ta speedup=v2")]
    ref = compare.default_reference({"w": [r["arm"] for r in rows]})
    refs, notes, code = compare.check_reference(rows, ref, {}, False)
    assert refs == {} and code == 0 and len(notes) == 1
    assert "'first_fit ordering=O2' is not an arm" in notes[0]
    assert "'to' names 2 arms ('to speedup=none', 'to speedup=v2')" in notes[0]


def test_a_trials_run_is_said_to_count_as_its_trial_0(results_path, capsys):
    """compare reads a ``trials=N`` run's trial 0 (its jobs.parquet): a note says so and where
    the draws are (session 43: it said nothing)."""
    _trial(results_path / "a", "to", None, 0.5, [0.0, 10.0], [0.0, 0.0])
    _trial(results_path / "b", "ta", None, 0.4, [0.0, 20.0], [0.0, 0.0])
    summary = json.loads((results_path / "b" / "summary.json").read_text())
    (results_path / "b" / "summary.json").write_text(json.dumps({**summary, "trials": {"n": 8}}))
    assert compare.main([str(results_path)]) == 0
    err = capsys.readouterr().err
    assert f"fattorus.app.compare: note: 1 run(s) hold trials=N draws (first {results_path / 'b'}: 8 draws)" in err, err


def test_each_workload_table_resolves_the_reference_among_its_own_arms(results_path, capsys):
    """Two windows, `to` and `ta` run under `none` in one and under `v2` in the other: the labels
    name the scenario (`to speedup=none`, `to speedup=v2`), and `to` named "2 arms" of the study, so
    neither table had a break-even column (session 43's list). Each table has one `to`: each
    gets its own break-even column against it (by hand: 0.4 / 0.5 = 0.800, 0.6 / 0.5 = 1.200)."""
    for start, speedup, u_to in ((0.0, "none", 0.4), (7.0, "v2", 0.6)):
        window = {"window_start_days": start, "window_days": 7.0}
        _trial(results_path / f"to{start}", "to", {}, u_to, [0.0, 1.0], [True, False], speedup=speedup, window=window)
        _trial(results_path / f"ta{start}", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup=speedup, window=window)
    for argv in ([], ["--reference", "to"]):
        assert compare.main([str(results_path), *argv]) == 0
        text = (results_path / "compare.md").read_text()
        early, late = text.split("[days 7–14]")
        assert "break-even vs to speedup=none |" in early and "break-even vs to speedup=v2 |" in late
        assert early.split("| ta speedup=none |")[1].splitlines()[0].endswith(" 0.800 |")
        assert late.split("| ta speedup=v2 |")[1].splitlines()[0].endswith(" 1.200 |")
        err = capsys.readouterr().err
        assert "no break-even column" not in err and "names 2 arms" not in err, err
        assert "reference 'to' is the arm 'to speedup=none'" in err and "reference 'to' is the arm 'to speedup=v2'" in err
    # Two `to` arms in one table: still refused when given, a note (no column there) by default.
    _trial(results_path / "to0x", "to", {}, 0.45, [0.0, 1.0], [True, False], speedup="v2",
           window={"window_start_days": 0.0, "window_days": 7.0})
    assert compare.main([str(results_path), "--reference", "to"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fattorus.app.compare: error: --reference 'to' names 2 arms of w x2 on t [days 0–7]; "), err
    assert compare.main([str(results_path)]) == 0
    err = capsys.readouterr().err
    assert "no break-even column for w x2 on t [days 0–7]: 'to' names 2 arms there" in err, err
    text = (results_path / "compare.md").read_text()
    assert "break-even vs to speedup=v2 |" in text.split("[days 7–14]")[1]


def test_break_even_only_for_rows_that_ran_the_references_run_times(results_path, capsys):
    """s* = U_ref / U_row presumes the row ran the reference's run times. A `v2` row against a
    `none` reference (its jobs already sped up) read about v2's own speedup (1.162 on
    sweeps/smoke.yaml); it gets "–" in both break-even cells and one line under the table.
    Same scenario, same edits: compared, but for `model` arms (their run times are their own
    placements'); the same scenario edited otherwise (`model{comm_fraction=0.5}`) is not. By hand, jobs of 4
    nodes on [0, 50) (reference) or [0, 20) and 2 on [40, 60), submitted at 0 and 40 s: steady
    window [10, 40), utilization 100 % and 33.3 %; whole run 0.8 / 0.5 = 1.600, steady 3.000."""
    def trial(name, policy, util, speedup, first_end, edits=None):
        path = results_path / "timed" / name
        path.mkdir(parents=True)
        cfg = {"topo": "t", "policy": policy, "policy_params": {}, "workload": {"name": "w", "scale_factor": 1.0},
               "speedup": speedup, "speedup_edits": edits or {}}
        summary = {"config": cfg, "utilization": {"mean": util}, "usable_nodes": 4}
        (path / "summary.json").write_text(json.dumps(summary))
        pl.DataFrame({"nodes": [4, 2], "wait_s": [0.0, 0.0], "aph": [0.0, 0.0], "max_hops": [0, 0],
                      "exposed": [False, False], "bbox_fill": [1.0, 1.0], "submit_s": [0.0, 40.0],
                      "start_s": [0.0, 40.0], "end_s": [first_end, 60.0]}).write_parquet(path / "jobs.parquet")

    trial("to", "to", 0.8, "none", 50.0)
    trial("ta", "ta", 0.5, "none", 20.0)
    trial("ta_v2", "ta", 0.5, "v2", 20.0)
    assert compare.main([str(results_path / "timed"), "--reference", "to"]) == 0
    text = (results_path / "timed" / "compare.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ta")}
    assert rows["ta speedup=none"].endswith("| 1.600 | 33.3% | 3.000 |")
    assert rows["ta speedup=v2"].endswith("| – | 33.3% | – |")  # it read 1.600 and 3.000 as well
    notes = [line for line in text.splitlines() if "speedup=v2 (the reference: speedup=none)" in line]
    assert len(notes) == 1 and "run times are not the reference's" in notes[0], text

    # Two `model` arms: each one's run times come from its own placements, so no break-even
    # either (session 47's audit: TA read 0.998 "vs to" beside system efficiencies 30.5 % and
    # 33.4 %; it read 1.250 here); the same scenario with other edits is another kind of run times.
    _trial(results_path / "model" / "to", "to", {}, 0.8, [0.0, 1.0], [True, False], speedup="model", edits={},
           app_eff=0.9)
    _trial(results_path / "model" / "ta", "ta", {}, 0.64, [0.0, 1.0], [False, False], speedup="model", edits={},
           app_eff=1.0)
    _trial(results_path / "model" / "ta_c", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="model",
           edits={"comm_fraction": 0.5}, app_eff=1.0)
    assert compare.main([str(results_path / "model"), "--reference", "to"]) == 0
    text = (results_path / "model" / "compare.md").read_text()
    assert text.split("| ta speedup=model |")[1].splitlines()[0].endswith(" – |")
    assert text.split("| ta speedup=model{comm_fraction=0.5} |")[1].splitlines()[0].endswith(" – |")
    assert "rows run under speedup=model{comm_fraction=0.5} (the reference: speedup=model)" in text
    assert "Break-even left – between arms whose run times come from the bandwidth model" in text and "| 64.0% |" in text
    assert "Traceback" not in capsys.readouterr().err


def test_reference_is_a_label_or_its_first_whole_words_as_help_says(results_path, capsys):
    """`--reference t` beside `ta ...` and `to ...` was refused as "matches no arm" while the help
    promised "the start of the only label that begins with it". The rule is whole words (`ta`
    must not name `ta_tuned_x`, another config): help says so, and the error says how many
    labels begin with it only inside a word."""
    help_text = " ".join(compare._parser().format_help().split())
    assert "first whole words" in help_text and "start of the only label" not in help_text
    _trial(results_path / "a", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="none")
    _trial(results_path / "b", "ta", {}, 0.5, [0.0, 1.0], [False, False], speedup="v2")
    _trial(results_path / "c", "to", {}, 0.8, [0.0, 1.0], [True, False], speedup="none")
    capsys.readouterr()
    assert compare.main([str(results_path), "--reference", "t"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1, err
    assert "--reference 't' matches no arm: 3 label(s) begin with it only inside a word" in err[0], err
    assert captured.out == "" and not (results_path / "compare.md").exists()
    assert compare.main([str(results_path), "--reference", "to"]) == 0  # a first whole word of one label
    assert "reference 'to' is the arm 'to speedup=none'" in capsys.readouterr().err

    other = results_path / "tuned"
    _trial(other / "a", "ta", {"tie": "low_id"}, 0.5, [0.0, 1.0], [False, False])
    summary = json.loads((other / "a" / "summary.json").read_text())
    summary["config"]["policy_config"] = "ta_tuned_x"
    (other / "a" / "summary.json").write_text(json.dumps(summary))
    _trial(other / "b", "to", {}, 0.8, [0.0, 1.0], [True, False])
    assert compare.main([str(other), "--reference", "ta"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 label(s) begin with it only inside a word" in err[0], err


def test_a_folder_outside_results_is_printed_not_written(results_path, tmp_path_factory, capsys):
    """compare wrote compare.md into any folder, one outside results/ too (the report refuses
    such an --out). Outside results/: the tables are printed, no file written, one note says
    why and how to keep them; --out must lie under a results/ directory (the rule of every
    --out, `paths.under_results`) and be a .md file or a folder."""
    outside = tmp_path_factory.mktemp("study_copy")
    assert "results" not in outside.parts
    _trial(outside / "a", "to", {}, 0.8, [0.0, 1.0], [True, False])
    _trial(outside / "b", "ta", {}, 0.64, [0.0, 1.0], [False, False])
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    assert compare.main([str(outside)]) == 0
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before  # nothing written there
    captured = capsys.readouterr()
    assert "| ta | 2 |" in captured.out and captured.out.rstrip().endswith("|")
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "compare.md not written" in err[0] and "--out results/" in err[0], err

    # --out outside results/: refused in one line before anything is read or written.
    assert compare.main([str(outside), "--out", str(outside / "mine.md")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and "under a results/ directory" in err[0], err
    assert captured.out == "" and sorted(p.relative_to(outside) for p in outside.rglob("*")) == before
    # Not a .md file (a slip onto a run's summary.json): refused too.
    assert compare.main([str(outside), "--out", str(results_path / "x.json")]) == 2
    assert "give a .md file or a folder" in capsys.readouterr().err

    # --out under results/: a file there, or compare.md in a folder there; still nothing outside.
    assert compare.main([str(outside), "--out", str(results_path / "tables" / "study.md")]) == 0
    assert "| ta | 2 |" in (results_path / "tables" / "study.md").read_text() and capsys.readouterr().err == ""
    assert compare.main([str(outside), "--out", str(results_path)]) == 0
    assert "| ta | 2 |" in (results_path / "compare.md").read_text()
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before


def test_mean_waits_are_rounded_as_the_report_rounds_them(results_path):
    """A mean wait of 0.00927 h read `0.00927` in compare and `0.0093` in the report; 12.345 h
    read `12.35` (the report: `12.3`). By hand, the report's rule (two significant digits
    under 0.1 h, one decimal from 10 h): 33.372 s = 0.00927 h -> 0.0093; 44,442 s = 12.345 h
    -> 12.3; 2.5 h -> 2.50."""
    from fattorus.report.labels import fmt_hours

    # d: 37.44 s = 0.0104 h -> 0.010 (two figures with the zero; it read 0.01 beside 0.0093)
    for name, mean_s, shown in (("a", 33.372, "0.0093"), ("b", 44442.0, "12.3"), ("c", 9000.0, "2.50"),
                                ("d", 37.44, "0.010")):
        _trial(results_path / name, "to", {}, 0.8, [0.0, 2 * mean_s], [False, False])
        assert compare.main([str(results_path / name)]) == 0
        cell = (results_path / name / "compare.md").read_text().split("| to | 2 | ")[1].split(" |")[0]
        assert cell == shown == fmt_hours(mean_s / 3600), (name, cell)


def test_workload_labels_keep_close_scales_and_old_runs_apart():
    """Session 47's audit: at four digits scale 2 and 2.0004 shared a label (one table, one the
    other's reference), and a run that recorded no `scale_factor` (made before it was) read x1."""
    def cfg(**wl):
        return {"topo": "cab", "workload": {"name": "atlas", **wl}}

    assert compare.workload_label(cfg(scale_factor=2.0)) == "atlas x2 on cab"
    assert compare.workload_label(cfg(scale_factor=2.0004)) == "atlas x2.0004 on cab"
    assert compare.workload_label(cfg(scale=2)) == "atlas x2 on cab"
    assert compare.workload_label(cfg(scale="fit")) == "atlas xfit on cab"
    assert compare.workload_label(cfg()) == "atlas x1 on cab"


@pytest.mark.parametrize("hours, shown", [
    (295.4, "295"), (99.96, "100"), (99.94, "99.9"), (12.34, "12.3"), (9.996, "10.0"), (9.994, "9.99"), (9.995, "9.99"),
    (0.98, "0.98"), (0.0104, "0.010"), (0.0005, "<0.001"), (-0.0, "0.00"), (0.0, "0.00"), (float("nan"), "—")])
def test_hours_are_classed_by_the_value_as_shown(hours, shown):
    """The paper's style (three figures, two under 0.1 h); session 47's audit: 99.96 read
    "100.0", 9.996 "10.00" (classed by the value before rounding) and -0.0 "-0.00"."""
    from fattorus.report.labels import fmt_hours

    assert fmt_hours(hours) == shown


def test_a_break_even_on_a_half_idle_machine_says_it_reads_little(results_path):
    """Session 47's operator run: on a machine at ~30 % utilization the break-even read 1.007
    beside a +38 % mean wait; utilization there follows the log's demand, not the placements.
    A line under the table says so when the reference ran below half the machine."""
    for util, said in ((0.3, True), (0.8, False)):
        base = results_path / f"u{int(util * 100)}"
        _trial(base / "to", "to", {}, util, [0.0, 1.0], [True, False], speedup="none")
        _trial(base / "ta", "ta", {}, util * 0.99, [0.0, 2.0], [False, False], speedup="none")
        assert compare.main([str(base), "--reference", "to"]) == 0
        text = (base / "compare.md").read_text()
        assert ("The reference ran at 30% utilization: on a machine that is not saturated" in text) == said, text
