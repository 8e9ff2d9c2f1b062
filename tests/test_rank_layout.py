"""The torus paper's task placements (:mod:`fattorus.analysis.rank_layout`) and the halo study.

References: brute-force enumerations (neighbours, Topaware's best offset), hand-worked
layouts, and invariants of the placements (a logical grid of adjacent Geminis puts every halo
message within one hop; a skipped Gemini adds one).
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import forkcli
from fattorus import topology
from fattorus.analysis import patterns
from fattorus.analysis import rank_layout as rl
from fattorus.topology.torus3d import Torus3D


def torus(dims=(6, 6, 6), service_routers=()) -> Torus3D:
    cfg = {"kind": "torus3d", "name": "t", "dims": list(dims), "nodes_per_router": 2, "bandwidth": [2.0, 1.0, 2.0]}
    if service_routers:
        cfg["node_kinds"] = [{"kind": "service", "routers": list(service_routers)}]
    return topology.from_config(cfg)


def router(t: Torus3D, x: int, y: int, z: int) -> int:
    return (x * t.dims[1] + y) * t.dims[2] + z


@pytest.mark.parametrize("periodic", [False, True])
def test_halo_messages_are_the_face_neighbours(periodic):
    dims = (3, 4, 5)
    tr = rl.cartesian_halo(dims, 1024.0, periodic)
    want = set()
    for a in itertools.product(*map(range, dims)):
        for d, step in itertools.product(range(3), (1, -1)):
            b = list(a)
            b[d] += step
            if not periodic and not 0 <= b[d] < dims[d]:
                continue
            b[d] %= dims[d]
            if tuple(b) != a:
                want.add(((a[0] * 4 + a[1]) * 5 + a[2], (b[0] * 4 + b[1]) * 5 + b[2]))
    got = list(zip(tr.src.tolist(), tr.dst.tolist()))
    assert len(got) == len(set(got)) == len(want) and set(got) == want
    assert (tr.nbytes == 1024.0).all()


def test_smp_and_grid_order_by_hand():
    assert rl.smp(8, 4).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # 4 x 2 x 2 grid, blocks of 2 x 1 x 2: block (i, j) = (x // 2, y), row-major over (2, 2, 1).
    got = rl.grid_order((4, 2, 2), (2, 1, 2))
    by_hand = [((x // 2) * 2 + y) for x in range(4) for y in range(2) for z in range(2)]
    assert got.tolist() == by_hand
    with pytest.raises(rl.LayoutError, match="does not tile"):
        rl.grid_order((4, 2, 2), (3, 1, 2))
    with pytest.raises(rl.LayoutError, match="do not fill"):
        rl.smp(10, 4)


def test_topaware_on_a_clean_torus_puts_every_message_within_one_hop():
    t = torus()
    routers = rl.feature_routers(t, (1, 2, 0), (5, 4, 6))
    dims, per = (8, 6, 8), (2, 2, 2)  # a 4 x 3 x 4 logical grid of Geminis
    ta = rl.topaware(t, routers, dims, per)
    tr = rl.cartesian_halo(dims, 1.0)
    assert ta.skipped == 0 and ta.geminis.shape == (4, 3, 4)
    hops = t.hops(ta.node[tr.src], ta.node[tr.dst])
    assert hops.max() == 1
    counts = np.bincount(ta.node, minlength=t.n_nodes)  # 4 partitions a node, on 48 Geminis' 96 nodes
    assert sorted(set(counts.tolist())) == [0, 4] and (counts > 0).sum() == 96
    # The grid sits in the feature, its Geminis adjacent along each dimension.
    x, y, z = t.router_coords(ta.geminis)
    assert np.isin(ta.geminis, routers).all()
    assert ((np.diff(x, axis=0) % 6) == 1).all() and ((np.diff(y, axis=1) % 6) == 1).all()
    assert ((np.diff(z, axis=2) % 6) == 1).all()


def _best_skips(t: Torus3D, routers: np.ndarray, L: tuple[int, int, int]) -> int:
    """Brute force: the fewest Geminis any offset and low-z start must skip."""
    whole = t.usable().reshape(-1, 2).all(1)[routers]
    sx, sy, sz = routers.shape
    best = None
    for z0, y0, x0 in itertools.product(range(sz), range(sy - L[1] + 1), range(sx - L[0] + 1)):
        worst = 0
        for i, j in itertools.product(range(L[0]), range(L[1])):
            got, z = 0, z0
            while z < sz and got < L[2]:
                got += bool(whole[x0 + i, y0 + j, z])
                z += 1
            if got < L[2]:
                worst = None
                break
            worst = max(worst, (z - z0) - L[2])
        if worst is not None and (best is None or worst < best):
            best = worst
    return best


def test_topaware_skips_unusable_geminis_as_few_as_any_offset_allows():
    rng = np.random.default_rng(3)
    t0 = torus((6, 6, 8))
    routers_all = rl.feature_routers(t0, (0, 0, 0), (5, 4, 8))
    service = rng.choice(routers_all.ravel(), 9, replace=False)
    t = torus((6, 6, 8), service_routers=service.tolist())
    routers = rl.feature_routers(t, (0, 0, 0), (5, 4, 8))
    dims, per = (6, 4, 10), (2, 2, 2)  # 3 x 2 x 5 Geminis
    ta = rl.topaware(t, routers, dims, per)
    assert ta.skipped == _best_skips(t, routers, (3, 2, 5))
    assert t.usable()[ta.node].all()  # no rank on a service node
    tr = rl.cartesian_halo(dims, 1.0)
    assert t.hops(ta.node[tr.src], ta.node[tr.dst]).max() == 1 + ta.skipped


def test_topaware_refuses_what_does_not_fit():
    t = torus()
    routers = rl.feature_routers(t, (0, 0, 0), (2, 2, 2))
    with pytest.raises(rl.LayoutError, match="does not fit"):
        rl.topaware(t, routers, (6, 2, 2), (1, 1, 2))
    with pytest.raises(rl.LayoutError, match="split over 2 nodes"):
        rl.topaware(t, routers, (2, 2, 3), (1, 1, 3))
    with pytest.raises(rl.LayoutError, match="does not fit the"):
        rl.feature_routers(t, (0, 0, 0), (7, 1, 1))


def test_as_job_puts_each_rank_on_its_node():
    t = torus()
    rng = np.random.default_rng(0)
    nodes = rng.choice(t.n_nodes, 6, replace=False)
    node_of_rank = np.repeat(nodes, 4)[rng.permutation(24)]
    tr = rl.cartesian_halo((2, 3, 4), 8.0)
    job = rl.as_job(node_of_rank, tr)
    src, dst, nbytes = patterns.to_nodes(job.alloc, job.traffic, job.ranks_per_node)
    assert (src == node_of_rank[tr.src]).all() and (dst == node_of_rank[tr.dst]).all() and (nbytes == 8.0).all()
    with pytest.raises(rl.LayoutError, match="same number"):
        rl.as_job(np.array([0, 0, 1]), rl.cartesian_halo((3, 1, 1), 1.0))


def run_study(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return forkcli.run("fattorus.app.halo_study", args, cwd=cwd, timeout=300)


def test_the_study_ranks_the_placements_as_the_paper_does(tmp_path):
    """At one feature position on Blue Waters (the paper's Table III settings): Topaware
    faster than grid_order, faster than the default, and Topaware's longest message one hop
    plus the Geminis it skipped; results only under results/."""
    out = run_study(tmp_path, "--origin", "4,10,6", "--name", "one")
    assert out.returncode == 0, out.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["results"]
    summary = json.loads((tmp_path / "results/halo_study/one/summary.json").read_text())
    s = summary["placements"]
    assert s["topaware"]["vs_default"]["mean"] < s["grid_order"]["vs_default"]["mean"] < 1.0
    import polars as pl

    rows = pl.read_parquet(tmp_path / "results/halo_study/one/positions.parquet")
    ta = rows.filter(pl.col("placement") == "topaware").row(0, named=True)
    assert ta["max_hops"] == 1 + ta["skipped"]
    # Other settings into the same folder: refused, nothing rewritten.
    before = (tmp_path / "results/halo_study/one/summary.json").read_bytes()
    again = run_study(tmp_path, "--origin", "4,10,6", "--kib", "64", "--name", "one")
    assert again.returncode == 2 and "other settings" in again.stderr and len(again.stderr.splitlines()) == 1
    assert "(kib: 32.0 there, 64.0 now)" in again.stderr  # the setting that differs is named
    assert (tmp_path / "results/halo_study/one/summary.json").read_bytes() == before


@pytest.mark.parametrize("args, words", [
    (("--feature", "30,8,12"), "does not fit"),
    (("--block", "3,2,4", "--origin", "0,8,0"), "holds 24 partitions"),
    (("--machine", "cab"), "is a fattree"),
    (("--grid", "32,32"), "three integers"),
    (("--ordering", "nope"), "choices"),
    (("--positions", "0"), "--positions"),
    (("--name", "../x"), "--name"),
    (("--kib", "1e308", "--origin", "4,10,6"), "--kib"),
    (("--kib", "0"), "--kib must be a number in (0, "),  # the setting at fault alone (was both named)
    (("--ranks-per-node", "0"), "--ranks-per-node must be >= 1, got 0"),
    (("--origin", "4,24,6"), "--origin '4,24,6': past the bluewaters torus of 24x24x24 Geminis"),  # was wrapped silently
    (("--origin", "4,10,6", "--positions", "5"), "argument --positions: not allowed with argument --origin"),
    (("--positions", "32", "--origin", "4,10,6"), "argument --origin: not allowed with argument --positions"),
    (("--grid", "2097152,2097152,2097152"), "ranks do not fit"),
])
def test_bad_settings_are_one_line(tmp_path, monkeypatch, capsys, args, words):
    """In-process (the command line's own ``main``; its process start is the test above)."""
    from fattorus.app import halo_study

    monkeypatch.chdir(tmp_path)
    try:
        code = halo_study.main(list(args))
    except SystemExit as stop:  # argparse's refusals
        code = stop.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], err
    assert not (tmp_path / "results").exists()


def test_a_position_that_cannot_hold_topaware_is_skipped_not_the_study(tmp_path, monkeypatch, capsys):
    """An 8 x 8 x 9 feature leaves Topaware one spare Gemini a pencil: some drawn positions
    have a pencil with two service Geminis. Those are skipped with a line each; the others
    are the study (seed 1 draws such a position first)."""
    from fattorus.app import halo_study

    monkeypatch.chdir(tmp_path)
    assert halo_study.main(["--feature", "8,8,9", "--positions", "8", "--seed", "1", "--name", "f"]) == 0
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if "skipped" in line]
    summary = json.loads((tmp_path / "results/halo_study/f/summary.json").read_text())
    assert skipped and summary["positions"] == 8 - len(skipped) >= 1


def test_runs_without_name_get_a_folder_per_settings():
    """``table3`` for the paper's settings; any other settings their grid and a digest of
    them, so two runs of other settings do not share a folder (every non-default run was
    ``32x32x32``, and the second was refused; session 43)."""
    from fattorus.app import halo_study

    def named(*argv: str) -> str:
        args = halo_study.parse_args(list(argv))
        return halo_study.default_name(halo_study.settings(args), args.origin is None)

    assert named() == "table3"
    one, other = named("--positions", "1"), named("--kib", "64")
    assert one.startswith("32x32x32-") and other.startswith("32x32x32-") and one != other
    assert named("--origin", "4,10,6") != "table3" and named("--positions", "1") == one


def test_a_lone_position_that_holds_no_placement_says_why_in_its_error(tmp_path, monkeypatch, capsys):
    """``--origin 0,0,0`` (its feature's pencils meet service Geminis) ended with only "no
    position could hold every placement" (session 44's second exploratory run): the error line
    gives the position's reason."""
    from fattorus.app import halo_study

    monkeypatch.chdir(tmp_path)
    assert halo_study.main(["--origin", "0,0,0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("fattorus.app.halo_study: error: no position could hold every placement (position [0, 0, 0]: "
                       "no 8 x 8 z-pencils of the feature hold 8 usable Geminis each)"), err
