"""The halo study's command line (:mod:`fattorus.app.halo_study`): the paper's Table III figures
only beside a run of the paper's settings, and errors that name the option at fault.

The study's placements and its process run are tested in tests/test_rank_layout.py. References
here: the paper's Table III as printed (11.315 / 7.722 / 2.771 ms, 9 / 16 / 2 hops; ratios worked
by hand: 7.722 / 11.315 = 0.682, 2.771 / 11.315 = 0.245) and the options' documented defaults.
"""

from __future__ import annotations

import json

import pytest

PROG = "fattorus.app.halo_study"


def run(tmp_path, monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """``main(argv)`` in ``tmp_path``: exit code, stdout, stderr (argparse's refusals included)."""
    from fattorus.app import halo_study

    monkeypatch.chdir(tmp_path)
    try:
        code = halo_study.main(list(argv))
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err


def settings(*argv: str) -> dict:
    from fattorus.app import halo_study

    return halo_study.settings(halo_study.parse_args(list(argv)))


def test_the_papers_settings_are_the_defaults_and_table_iii():
    """Table III: Blue Waters, 32 x 32 x 32 partitions, 32 tasks a node, 32 kB messages, a
    12 x 8 x 12 feature, grid_order blocks of 4 x 2 x 4, Topaware 4 x 4 x 4 a Gemini,
    non-periodic: the defaults, written out by hand."""
    from fattorus.app import halo_study

    s = settings()
    hand = {"machine": "bluewaters", "grid": [32, 32, 32], "ranks_per_node": 32, "kib": 32.0,
            "feature": [12, 8, 12], "block": [4, 2, 4], "per_gemini": [4, 4, 4], "periodic": False}
    assert {k: s[k] for k in hand} == hand == halo_study.PAPER_SETTINGS


@pytest.mark.parametrize("argv", [(), ("--origin", "4,10,6"), ("--positions", "3", "--seed", "7"),
                                  ("--ordering", "hilbert"), ("--kib", "32.0"), ("--grid", "32,32,32")])
def test_a_run_of_the_papers_settings_anywhere_is_the_papers_case(argv):
    """Where the paper's feature lay and the ALPS order are not given: any position or order
    is a run of Table III."""
    from fattorus.app import halo_study

    assert halo_study.paper_case(settings(*argv))


@pytest.mark.parametrize("argv", [("--machine", "torus8"), ("--grid", "16,16,16"), ("--ranks-per-node", "16"),
                                  ("--kib", "64"), ("--feature", "12,8,16"), ("--block", "2,4,4"),
                                  ("--per-gemini", "2,4,8"), ("--periodic",)])
def test_a_run_of_any_other_setting_is_not_the_papers_case(argv):
    from fattorus.app import halo_study

    assert not halo_study.paper_case(settings(*argv))


def test_other_settings_show_and_record_no_paper_figures(tmp_path, monkeypatch, capsys):
    """The exploratory tester's run (torus8, a 4 x 4 x 4 feature, a 16^3 grid) printed the
    paper's 0.682 and 16 beside its own figures, and recorded them in summary.json."""
    code, out, err = run(tmp_path, monkeypatch, capsys, "--machine", "torus8", "--feature", "4,4,4",
                         "--grid", "16,16,16", "--positions", "2", "--name", "t8")
    assert code == 0, err
    lines = out.splitlines()
    assert "paper" not in lines[0] and lines[1].split() == ["placement", "time/default", "range", "max", "hops",
                                                           "range"]
    rows = lines[2:5]
    assert [r.split()[0] for r in rows] == ["default", "grid_order", "topaware"]
    assert all(len(r.split()) == 5 for r in rows), rows  # placement, mean, range, hops median, range: no paper
    assert "0.682" not in out and "0.245" not in out
    assert lines[5].startswith("the paper's Table III figures are shown only for the paper's settings")
    assert lines[5].endswith("this run's --machine, --grid, --feature differ")
    summary = json.loads((tmp_path / "results/halo_study/t8/summary.json").read_text())
    assert all("paper" not in g for g in summary["placements"].values())
    assert summary["settings"]["feature"] == [4, 4, 4]


def test_the_papers_settings_show_and_record_table_iii_beside(tmp_path, monkeypatch, capsys):
    """A run of the paper's settings (one position, another ALPS order) prints Table III's
    columns as before, with the paper's figures worked by hand, and records them."""
    code, out, err = run(tmp_path, monkeypatch, capsys, "--origin", "4,10,6", "--ordering", "OY", "--name", "p")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == ("3D halo exchange over 1 feature position(s): time relative to default (mean, range); "
                        "max hops (median, range); the paper's Table III beside")
    assert lines[1] == ("placement    time/default         range   max hops   range   "
                        "paper: time/default max hops")
    paper = {r.split()[0]: r.split()[-2:] for r in lines[2:5]}
    assert paper == {"default": ["1.000", "9"], "grid_order": ["0.682", "16"], "topaware": ["0.245", "2"]}
    assert "shown only" not in out and lines[5].startswith("-> ")
    summary = json.loads((tmp_path / "results/halo_study/p/summary.json").read_text())
    recorded = {k: g["paper"] for k, g in summary["placements"].items()}
    assert recorded["grid_order"]["ms"] == 7.722 and recorded["grid_order"]["max_hops"] == 16
    assert recorded["topaware"]["vs_default"] == pytest.approx(2.771 / 11.315)
    assert recorded["default"] == {"ms": 11.315, "vs_default": 1.0, "max_hops": 9}


@pytest.mark.parametrize("argv, words, not_words", [
    # Each option's own default as its example (all said 12,8,12, the --feature default).
    (("--grid", "0,32,32"), ("--grid '0,32,32'", "e.g. 32,32,32"), ("12,8,12",)),
    (("--block", "0,2,4"), ("--block '0,2,4'", "e.g. 4,2,4"), ("12,8,12",)),
    (("--per-gemini", "4,4"), ("--per-gemini '4,4'", "e.g. 4,4,4"), ("12,8,12",)),
    (("--feature", "12,8"), ("--feature '12,8'", "e.g. 12,8,12"), ()),
    # The options whose values do not tile, by name (was "partitions per Gemini [4, 4, 4] ...").
    (("--grid", "33,32,32"), ("--grid 33,32,32", "--per-gemini 4,4,4", "33 along x is not a multiple of 4"), ()),
    (("--grid", "34,32,32", "--per-gemini", "2,8,4"), ("--grid 34,32,32", "--block 4,2,4 (the default)",
                                                       "34 along x is not a multiple of 4", "multiples of 4,8,4"),
     ("--per-gemini 2,8,4,",)),
    # The default --feature that does not fit, and what would (torus4: 4 x 4 x 4 Geminis).
    (("--machine", "torus4"), ("--feature 12,8,12 (the default) does not fit", "torus4", "at most 4,4,4"), ()),
    (("--feature", "6,8,12"), ("--grid 32,32,32", "--per-gemini 4,4,4", "8,8,8 Geminis", "--feature 6,8,12"),
     ("(the default) does not fit",)),
    # The whole rule ("..." holds only the allowed characters).
    (("--name", "..."), ("--name '...'", "not starting with '.'"), ()),
])
def test_errors_name_the_option_at_fault(tmp_path, monkeypatch, capsys, argv, words, not_words):
    code, out, err = run(tmp_path, monkeypatch, capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"{PROG}: error: "), err
    assert all(w in lines[0] for w in words) and not any(w in lines[0] for w in not_words), lines[0]
    assert "Traceback" not in err and not out and not (tmp_path / "results").exists()


@pytest.mark.parametrize("name, accepted", [("x.", True), ("a.b_c-1", True), ("Z9", True), ("...", False),
                                            (".x", False), ("a/b", False), ("a b", False), ("", False)])
def test_names_accepted_are_unchanged(tmp_path, monkeypatch, capsys, name, accepted):
    """``--origin 0,0,0`` holds no placement (tests/test_rank_layout.py), an error reached
    only after ``--name`` is accepted: a cheap probe of the rule that writes nothing."""
    code, _, err = run(tmp_path, monkeypatch, capsys, "--origin", "0,0,0", "--name", name)
    last = err.strip().splitlines()[-1]  # after the position's progress lines where accepted
    assert code == 2 and last.startswith(f"{PROG}: error: "), err
    assert ("no position could hold every placement" in last) == accepted, err
    assert ("--name" in last) != accepted and (len(err.strip().splitlines()) == 1) != accepted, err
