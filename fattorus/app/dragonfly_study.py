"""The dragonfly paper's study: WD 1–4 on Edison under each cable configuration.

``python -m fattorus.app.dragonfly_study [--workloads "WD 2,WD 4"] [--cables edison,edison_k]
[--ranks 32768] [--ranks-per-node 24] [--valiant 2] [--no-black-first] [--max-iters 3000]
[--seed 0] [--name NAME]``

For each workload (:mod:`fattorus.analysis.parallel_workloads`) and cable configuration
(``conf/topo/edison*.yaml``): one adaptive steady-state solve of all four jobs together
(:func:`fattorus.kernels.adaptive.adaptive_loads`, router links counted; candidates: both
minimal routes and ``--valiant`` Valiant routes per node pair), each job's share of
it ("in workload", :func:`~fattorus.kernels.adaptive.job_traffic`), and one solve per job
alone in its placement ("individual"). Per link class (green, black, blue): the maximum and
the mean traffic over every link of the class, MB; in the totals also class ``all``, over
every router link (the paper's "maximum traffic on any link", its Fig. 9). Writes
``results/dragonfly_study/NAME/`` under the current directory (``NAME``: ``--name``, else ``paper`` for the paper's settings and ``custom-<digest>`` for others): ``totals.parquet`` (workload,
cables, class, max_MB, mean_MB, iterations, capped, max_vs_DEF: the max over DEF's of the same
workload and class, for Edison's cable variants when DEF is among the cables and its max is
above 0, else null), ``jobs.parquet`` (workload, cables, job,
pattern, view, class, max_MB, mean_MB), ``hot_links.parquet`` (the 10 busiest router links of each run:
class, MB, both ends as group/row/column), ``summary.json`` and per workload and machine a PNG of its traffic
matrices (green between columns, black between rows, blue between groups:
:mod:`fattorus.report.dragonfly_maps`); prints the totals as an aligned table.

Everything is checked before the first solve (and before anything is written): the workloads
and cable configurations (none empty or repeated), every count in its range (``--seed`` 0 to
2^32 - 1, ``--max-iters`` at most 10^7, ``--ranks-per-node`` at most 1024), the jobs fitting
every machine, ``--valiant`` at most the machines' ``groups - 1`` (a Valiant route passes
through one group other than its ends', so more candidates would only be empty padding), and
that ``NAME`` does not hold results made with other settings (those recorded in
``summary.json``: seed, ranks, ranks per node, valiant, black first, max iterations, workloads,
cables): use another ``--name`` or the original options. Each finished solve (a workload on a
machine) is kept in ``NAME/solves/`` until the study ends: Ctrl-C is one line (exit 130) and
the same command resumes with the next solve; an unfinished study of other settings is refused
the same way; on a finished study of the same settings the same command prints its totals
again and solves nothing. A run into a folder left without ``summary.json`` removes the maps
there that it does not draw.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.app.dragonfly_study")

import argparse
import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import polars as pl

from fattorus import interrupt, paths, provenance, topology
from fattorus.analysis import parallel_workloads as pw
from fattorus.analysis.commtime import on_bundles, solver_capacity
from fattorus.app import outputs
from fattorus.args import SEED_MAX, OneLineParser
from fattorus.files import atomic_write
from fattorus.kernels.adaptive import adaptive_loads, job_traffic, valiant_paths
from fattorus.paths import conf_dir, results_dir
from fattorus.report import dragonfly_maps

#: The command's name, first word of its error, note and interrupt lines.
PROG = "fattorus.app.dragonfly_study"

CABLES = ("edison", "edison_2k", "edison_k", "edison_b", "edison_bk")
LABEL = {"edison": "DEF", "edison_2k": "-2K", "edison_k": "-K", "edison_b": "-B", "edison_bk": "+B-K"}
#: The options recorded in ``summary.json`` that the results depend on (besides the lists of
#: workloads and cable configurations).
SETTINGS = ("seed", "ranks", "ranks_per_node", "valiant", "black_first", "max_iters", "parallel_cables")


#: The class of the totals row over every router link (green, black and blue together).
ALL = "all"


def class_rows(topo, traffic: np.ndarray, *, all_links: bool = False, **key) -> list[dict]:
    """Max and mean MB per router-link class of ``traffic`` ``(n_links,)``; with ``all_links``
    one more row, class ``"all"``: the max and mean over every router link (each parallel
    cable one link; a node's own links are no class and not counted), the paper's "maximum
    traffic on any link" (its Fig. 9)."""
    cls = np.asarray(topo.link_class)
    groups = [(name, cls == k) for k, name in enumerate(topo.link_class_names) if k and (cls == k).any()]
    if all_links:
        groups.append((ALL, cls > 0))
    return [{**key, "class": name, "max_MB": float(traffic[on].max() / 1e6), "mean_MB": float(traffic[on].mean() / 1e6)}
            for name, on in groups]


def hot_links(topo, traffic: np.ndarray, k: int = 10, **key) -> list[dict]:
    """The ``k`` router links with the most traffic: class, MB and both ends' (group, row, column)."""
    cls = np.asarray(topo.link_class)
    ranked = [int(e) for e in np.argsort(-np.where(cls > 0, traffic, -np.inf), kind="stable")[:k]]
    ends = topo.link_ends - topo.n_nodes
    rows = []
    for rank, e in enumerate(ranked):
        (gt, it, jt), (gh, ih, jh) = (topo.router_coords(int(r)) for r in ends[e])
        rows.append({**key, "rank": rank, "link": e, "class": topo.link_class_names[cls[e]],
                     "MB": float(traffic[e] / 1e6), "tail": f"g{gt} r{it} c{jt}", "head": f"g{gh} r{ih} c{jh}"})
    return rows


def png_name(wd: str, cfg: str) -> str:
    """The file name of the traffic maps of workload ``wd`` on configuration ``cfg``."""
    return f"{wd.replace(' ', '')}_{cfg}.png"


def pooled(topo, paths: np.ndarray, bw: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """Paths and link bandwidths for the solve, and a function from the solve's traffic per
    link to traffic per cable. ``how``: ``pooled`` — the parallel cables of a router pair are
    one link of their summed bandwidth (``topo.link_bundles()``: every path's hop moves to
    the bundle's first cable, whose bandwidth becomes the bundle's), and each cable carries an
    equal share of the bundle's traffic; ``static`` — each hop stays on the cable its route
    names (``(src + dst) mod k``)."""
    if how == "static":
        return paths, bw, lambda traffic: np.asarray(traffic, np.float64)
    first, count = topo.link_bundles()
    # Each hop on its bundle's first cable, which holds the bundle's bandwidth: as the flow model solves.
    return on_bundles(topo, paths), solver_capacity(topo), lambda traffic: np.asarray(traffic, np.float64)[first] / count


def solve(topo, wd: str, args: argparse.Namespace, out: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """Totals and per-job rows of one workload on one machine; its traffic maps as a PNG."""
    jobs = pw.WORKLOADS[wd]
    src, dst, nbytes, owner = pw.node_flows(topo.n_nodes, jobs, args.ranks, args.ranks_per_node, args.seed)
    paths = valiant_paths(topo, src, dst, k=args.valiant, seed=args.seed, black_first=args.black_first)
    paths, bw, per_cable = pooled(topo, paths, np.asarray(topo.link_bandwidth, np.float64), args.parallel_cables)
    net = np.asarray(topo.link_class) > 0
    b = np.asarray(nbytes, np.float64)
    joint = adaptive_loads(paths, b, bw, counted=net, max_iters=args.max_iters)
    key = {"workload": wd, "cables": LABEL.get(topo.name, topo.name)}
    traffic = per_cable(joint.traffic)
    iterations = int(joint.iterations)
    # Stopped by the cap, not by the stopping rule: the steady state was not reached. With
    # --max-iters 0 that is every solve (minimal routes only, no adaptive step).
    capped = iterations >= args.max_iters
    if capped:  # say so (the table records it too)
        print(f"[dragonfly_study] {wd} on {topo.name}: stopped at --max-iters {args.max_iters} before the "
              f"steady state", file=sys.stderr, flush=True)
    totals = [{**row, "iterations": iterations, "capped": capped}
              for row in class_rows(topo, traffic, all_links=True, **key)]
    hot = hot_links(topo, traffic, **key)
    dragonfly_maps.draw(topo, traffic, out / png_name(wd, topo.name),
                        title=f"{wd} on {topo.name} ({key['cables']}), adaptive routing")
    shares = np.asarray(job_traffic(jnp.asarray(paths), jnp.asarray(joint.split, jnp.float32), jnp.asarray(b, jnp.float32),
                                    jnp.asarray(owner), len(jobs), topo.n_links), np.float64)
    per_job = []
    for j, pattern in enumerate(jobs):
        mine = owner == j
        alone = adaptive_loads(paths[mine], b[mine], bw, counted=net, max_iters=args.max_iters)
        for view, job_traffic_ in (("individual", per_cable(alone.traffic)), ("in_workload", per_cable(shares[j]))):
            per_job += class_rows(topo, job_traffic_, **key, job=j, pattern=pattern, view=view)
    return totals, per_job, hot


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = OneLineParser(prog="python -m fattorus.app.dragonfly_study", error_prefix=PROG,
                       description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default=",".join(pw.WORKLOADS),
                    help="comma-separated workloads, quoted: names hold a space (default: \"%(default)s\")")
    ap.add_argument("--cables", default=",".join(CABLES), help="topology configs (conf/topo; default: %(default)s)")
    ap.add_argument("--ranks", type=int, default=32_768,
                    help="MPI ranks of each job (each workload runs four jobs; default: %(default)s)")
    ap.add_argument("--ranks-per-node", type=int, default=24,
                    help=f"ranks per node, 1 to {RANKS_PER_NODE_MAX} (default: %(default)s)")
    ap.add_argument("--valiant", type=int, default=2,
                    help="Valiant paths per flow besides the minimal one "
                         "(at most groups - 1 of the largest machine: 14 on Edison; default: %(default)s)")
    ap.add_argument("--black-first", action=argparse.BooleanOptionalAction, default=True,
                    help="the other minimal route (local parts black, then green) as a candidate too "
                         "(default: on)")
    # 3000: every run of the paper's study reaches its steady state (at most ~1,100 iterations
    # with pooled cables, session 18); at 200, 8 of its 20 joint solves stopped short.
    ap.add_argument("--max-iters", type=int, default=3000,
                    help=f"adaptive iterations at most, 0 to {MAX_ITERS_MAX:,} (default: %(default)s)")
    ap.add_argument("--parallel-cables", choices=("pooled", "static"), default="pooled",
                    help="pooled: a router pair's parallel cables share its traffic (one link of k times the "
                         "bandwidth); static: each hop on cable (src + dst) mod k, as before session 18")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the random draws: Spread's and UMesh's partners and each flow's Valiant "
                         "intermediate groups (placements are fixed: each job on consecutive nodes), "
                         "0 to 2^32 - 1 (default: %(default)s)")
    ap.add_argument("--name", default=None,
                    help="the results folder, results/dragonfly_study/NAME (default: paper for the paper's "
                         "settings, else custom-<8 hex digits of the settings>)")
    return ap.parse_args(argv)


#: Rank ids are int32 (:class:`fattorus.analysis.patterns.Traffic`): no job can have more ranks.
RANKS_MAX = 2**31 - 1
#: Ranks per node at most: well beyond any node's hardware threads (Edison: 24 cores, 48
#: threads; a 68-core KNL: 272), so only a typo meets it, and it keeps ``--ranks`` bounded by
#: the machine's nodes (the jobs must fit) rather than letting one node hold them all.
RANKS_PER_NODE_MAX = 1024
#: Adaptive iterations at most: the loop's counter is int32 in JAX (2^31 - 1 at most; past it,
#: an OverflowError traceback), and a solve stops at its steady state anyway (~1,100 iterations
#: at most in the paper's study), so 10^7, thousands of times that, leaves room for any real
#: study while a larger number is a typo.
MAX_ITERS_MAX = 10**7


def check_bounds(args: argparse.Namespace) -> None:
    """A one-line ``ValueError`` naming the first count option out of its range, and its value.

    Checked before anything is written: a value the solver cannot take (``--max-iters`` past
    int32, ``--seed`` past what ``jax.random.PRNGKey`` takes) would otherwise fail at the first
    solve, after ``solves/settings.json`` recorded it, and that record then refused the
    corrected command as an unfinished study of other settings. ``--valiant``'s upper bound
    depends on the machines (checked once they are loaded)."""
    bounds = (("--ranks", args.ranks, 1, RANKS_MAX), ("--ranks-per-node", args.ranks_per_node, 1, RANKS_PER_NODE_MAX),
              ("--valiant", args.valiant, 0, None), ("--max-iters", args.max_iters, 0, MAX_ITERS_MAX),
              ("--seed", args.seed, 0, SEED_MAX))
    for option, value, least, most in bounds:
        if most is None and value < least:
            raise ValueError(f"{option} {value}: must be >= {least}")
        if most is not None and not least <= value <= most:
            raise ValueError(f"{option} {value}: must be from {least} to {most}")


def _list(option: str, text: str, hint: str) -> list[str]:
    """The comma-separated names of ``option``: at least one, none repeated (a repeat would
    solve and write the same thing twice)."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise ValueError(f"{option}: none given; {hint}")
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise ValueError(f"{option}: {', '.join(twice)} given more than once")
    return names


def _dragonfly(name: str) -> Any:
    """Dragonfly ``name`` (conf/topo), else a one-line ``ValueError`` naming the dragonflies
    (the topology loader's list of an unknown name named fat-trees and tori too)."""
    import yaml

    try:
        topo = topology.load(name)
    except topology.TopologyError as err:
        if not str(err).startswith("unknown topology"):
            raise ValueError(f"--cables: {err}") from None
        topo = None
    if topo is None or topo.kind != "dragonfly":
        ours = [n for n in paths.config_names("topo")
                if (yaml.safe_load(paths.config_file("topo", n).read_text()) or {}).get("kind") == "dragonfly"]
        what = "unknown" if topo is None else f"a {topo.kind}, not a dragonfly"
        raise ValueError(f"--cables {name}: {what}; the dragonflies of conf/topo: {', '.join(ours)}")
    return topo


def settings(args: argparse.Namespace, wds: Sequence[str], cables: Sequence[str]) -> dict:
    """What the results depend on, as recorded in ``summary.json``."""
    return {**{k: getattr(args, k) for k in SETTINGS}, "workloads": list(wds), "cables": list(cables)}


def default_name(record: dict) -> str:
    """The folder of a run without ``--name``: ``paper`` for the paper's settings (every option
    at its default), else ``custom-`` and 8 hex digits of the settings, so that a small trial
    run never takes the paper's folder (session 43: ``paper`` whatever the options, after which
    the plain command was refused for "other settings")."""
    import hashlib

    if record == settings(parse([]), list(pw.WORKLOADS), list(CABLES)):
        return "paper"
    digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:8]
    return f"custom-{digest}"


def settings_conflict(out: Path, now: dict) -> str | None:
    """Why ``out`` must not take results made with the settings ``now``, or ``None``.

    Writing into a folder with results of other settings would silently replace them (the
    default ``--name`` is ``paper`` whatever the options), so a folder whose ``summary.json``
    records other settings is refused. Workloads and cables compare as sets (their order only
    orders the table). Results written before the lists were recorded give them by their
    totals. A folder without ``summary.json`` holds no finished study and is reused.
    """
    old = outputs.stored_summary(out)
    if not isinstance(old, dict):
        return old
    diff = _differences(old, now)
    if not diff:
        return None
    return f"{out} holds results made with other settings ({'; '.join(diff)}); use another --name or the original options"


#: Folder of a study's finished solves (one JSON file each) and its settings while it runs.
PARTS = "solves"


def unfinished_conflict(out: Path, now: dict) -> str | None:
    """Why ``out`` must not resume the unfinished study it holds (its solves were made with
    other settings than ``now``), or ``None`` (none there, or the same settings: resumed)."""
    return outputs.unfinished_conflict(out, PARTS, now, _differences)


def _differences(old: dict, now: dict) -> list[str]:
    """``key: value there, value now`` for every setting recorded in ``old`` (a summary or an
    unfinished study's settings) that ``now`` does not share."""
    recorded = {k: old[k] for k in SETTINGS if k in old}
    if "parallel_cables" not in old:  # written before the option existed: cables were static
        recorded["parallel_cables"] = "static"
    totals = old.get("totals") if isinstance(old.get("totals"), list) else []
    config = {label: cfg for cfg, label in LABEL.items()}
    for key, column, name in (("workloads", "workload", str), ("cables", "cables", lambda c: config.get(c, c))):
        if key in old:
            recorded[key] = sorted(map(str, old[key])) if isinstance(old[key], list) else old[key]
        elif totals:  # written before the lists were recorded
            recorded[key] = sorted({name(t[column]) for t in totals
                                    if isinstance(t, dict) and isinstance(t.get(column), str)})
    current = {**now, "workloads": sorted(now["workloads"]), "cables": sorted(now["cables"])}
    return [f"{k}: {recorded[k]!r} there, {current[k]!r} now" for k in recorded if recorded[k] != current[k]]


def _write(out: Path, tot: pl.DataFrame, jobs: list[dict], hot: list[dict], record: dict, pngs: set[str]) -> None:
    """The study's files, each atomically; then the maps in ``out`` of an earlier, unfinished
    run that this one did not redraw (``pngs``: the ones it drew), so none is left stale."""
    atomic_write(out / "totals.parquet", lambda p: tot.write_parquet(p))
    atomic_write(out / "jobs.parquet", lambda p: pl.DataFrame(jobs).write_parquet(p))
    atomic_write(out / "hot_links.parquet", lambda p: pl.DataFrame(hot).write_parquet(p))
    atomic_write(out / "summary.json",
                 json.dumps({**record, "totals": tot.to_dicts(), "fattorus": provenance.stamp()}, indent=1))
    # Only files named exactly as this study names its maps (a workload on a conf/topo machine)
    # go: anything else in the folder, however named, is the user's.
    machines = [p.stem for p in (conf_dir() / "topo").glob("*.yaml")]
    for name in {png_name(wd, m) for wd in pw.WORKLOADS for m in machines} - pngs:
        (out / name).unlink(missing_ok=True)


def _kept(part: Path, png: Path) -> tuple[list[dict], list[dict], list[dict]] | None:
    """The rows of a solve an interrupted run of the same settings finished (``part``, with its
    maps ``png``), or None: not there, or unreadable (reported in one line; solved again, the
    same: a solve is a function of the settings)."""
    if not (part.exists() and png.exists()):
        return None
    try:
        got = json.loads(part.read_text())
        if not (isinstance(got, list) and len(got) == 3 and all(isinstance(rows, list) for rows in got)):
            raise ValueError("not three lists of rows")
    except (OSError, ValueError) as err:
        print(f"[dragonfly_study] {part} cannot be read ({getattr(err, 'strerror', None) or err}); solved again",
              file=sys.stderr, flush=True)
        return None
    return got[0], got[1], got[2]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        wds = _list("--workloads", args.workloads, f"choose from {list(pw.WORKLOADS)}")
        unknown = [w for w in wds if w not in pw.WORKLOADS]
        if unknown:
            raise ValueError(f"--workloads: unknown {unknown}; choose from {list(pw.WORKLOADS)}")
        cables = _list("--cables", args.cables, f"e.g. {','.join(CABLES)}")
        if args.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", args.name):
            raise ValueError(f"--name {args.name!r}: letters, digits, '.', '_' and '-' only, starting with a letter or digit")
        check_bounds(args)
        machines = [_dragonfly(c) for c in cables]
        # A Valiant candidate goes through a group other than its flow's ends': beyond
        # groups - 1 of every machine they are all empty padding, costing memory and time only.
        most = max(m.groups for m in machines) - 1
        if args.valiant > most:
            raise ValueError(f"--valiant {args.valiant}: at most {most} (groups - 1 of the largest machine given)")
        # The jobs must fit every machine before the first solve: finding out on the second
        # machine would waste the first's work and leave its map behind.
        per_job = -(-args.ranks // args.ranks_per_node)  # as pw.node_flows places them
        n_jobs = max(len(pw.WORKLOADS[w]) for w in wds)
        for m in machines:
            if per_job * n_jobs > m.n_nodes:
                raise ValueError(f"--ranks {args.ranks} at {args.ranks_per_node} per node: {n_jobs} jobs of "
                                 f"{per_job} nodes do not fit {m.name} ({m.n_nodes} nodes)")
        record = settings(args, wds, [m.name for m in machines])
        out = results_dir() / "dragonfly_study" / (args.name if args.name is not None else default_name(record))
        conflict = settings_conflict(out, record) or unfinished_conflict(out, record)
        if conflict:
            raise ValueError(conflict)
    except (ValueError, FileNotFoundError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    if outputs.report_if_finished(out, ("totals.parquet", "jobs.parquet", "hot_links.parquet"),
                                  lambda: _table_text(pl.read_parquet(out / "totals.parquet"))):
        return 0
    totals, jobs, hot = [], [], []
    parts, n_all, done = out / PARTS, len(wds) * len(machines), 0
    interrupt.armed()  # a command-line run: from here a Ctrl-C keeps the finished solves
    try:
        outputs.start_parts("dragonfly_study", out, PARTS, record)
        for wd in wds:
            for topo in machines:
                part = parts / f"{Path(png_name(wd, topo.name)).stem}.json"
                got = _kept(part, out / png_name(wd, topo.name))
                kept = got is not None
                if got is None:
                    got = solve(topo, wd, args, out)
                    atomic_write(part, json.dumps(got))
                t, j, h = got
                totals += t
                jobs += j
                hot += h
                done += 1
                print(f"[dragonfly_study] {wd} on {topo.name} done ({done}/{n_all}"
                      f"{', kept from an earlier run' if kept else ''})", file=sys.stderr, flush=True)
        tot = pl.DataFrame(totals)
        base = tot.filter(pl.col("cables") == "DEF").select("workload", "class", pl.col("max_MB").alias("_def"))
        if len(base):
            # Only Edison's cable variants compare with DEF (a 64-node test dragonfly's loads
            # over Edison's read as a ratio); a DEF maximum of 0 has no ratio (0/0 printed nan).
            edison = pl.col("cables").is_in(list(LABEL.values())) & (pl.col("_def") > 0)
            tot = tot.join(base, on=["workload", "class"], how="left").with_columns(
                pl.when(edison).then(pl.col("max_MB") / pl.col("_def")).alias("max_vs_DEF")).drop("_def")
        _write(out, tot, jobs, hot, record, {png_name(wd, m.name) for wd in wds for m in machines})
        shutil.rmtree(parts)  # the tables hold every solve now
    except ValueError as err:  # the jobs do not fit the machine
        print(f"{PROG}: error: {wd} on {topo.name}: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. results/ is not a writable directory
        print(f"{PROG}: error: cannot write {out}: {err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; {done} of {n_all} solves kept in {parts}, "
              "re-run the same command to resume", file=sys.stderr)
        return 130
    print(_table_text(tot))
    print(f"-> {out}")
    return 0


def _table_text(tot: pl.DataFrame) -> str:
    """The totals as printed: one aligned line per workload, cables and link class, with the max
    and mean MB and the max over DEF's (``-`` where there is none: DEF not among the cables, a
    machine that is not one of Edison's cable variants, or a DEF max of 0)."""
    vs = tot["max_vs_DEF"] if "max_vs_DEF" in tot.columns else [None] * tot.height
    # A solve stopped at --max-iters is not a steady state: its rows are marked, and a line
    # under the table says so (session 43: only summary.json and the solve's own line told).
    capped = tot["capped"].fill_null(False).to_list() if "capped" in tot.columns else [False] * tot.height
    rows = [("workload", "cables", "class", "max (MB)", "mean (MB)", "max vs DEF (ratio)")]
    cols = (tot[c] for c in ("workload", "cables", "class", "max_MB", "mean_MB"))
    rows += [(w, c + (" *" if cap else ""), k, f"{mx:.2f}", f"{mn:.2f}", "-" if r is None else f"{r:.3f}")
             for w, c, k, mx, mn, r, cap in zip(*cols, vs, capped)]
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    # Names left-aligned, numbers right-aligned.
    text = "\n".join("  ".join(x.ljust(w) if i < 3 else x.rjust(w) for i, (x, w) in enumerate(zip(row, widths)))
                     for row in rows)
    if any(capped):
        text += "\n* stopped at --max-iters before its steady state: not the adaptive routing's loads"
    return text


if __name__ == "__main__":
    from fattorus.args import run_piped

    interrupt.exit_with(run_piped(main))  # quiet, exit 141, when stdout's reader closes early (| head -1)
