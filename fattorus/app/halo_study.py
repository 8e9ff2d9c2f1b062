"""The torus paper's 3D halo exchange (Table III) on the flow model: three task placements.

``python -m fattorus.app.halo_study [--machine bluewaters] [--grid 32,32,32] [--ranks-per-node 32]
[--kib 32] [--feature 12,8,12] [--positions 32 | --origin X,Y,Z] [--ordering 2Y]
[--block 4,2,4] [--per-gemini 4,4,4] [--periodic] [--seed 0] [--name NAME]``

A ``--grid`` of partitions (one rank each, ``--ranks-per-node`` ranks a node) exchanges halos:
every rank sends ``--kib`` KiB to each face neighbour, all at once (non-periodic unless
``--periodic``). The job runs in a node feature, a ``--feature`` prism of Geminis, under the
paper's three placements (:mod:`fattorus.analysis.rank_layout`): ``default`` (SMP rank order on
the first nodes ALPS lists, ``--ordering``), ``grid_order`` (a ``--block`` of partitions per
node on the same nodes) and ``topaware`` (a logical grid of Geminis with ``--per-gemini``
partitions each, skipping unusable Geminis along z). For each, the flow model gives the step
time (:func:`fattorus.analysis.commtime.step_times`: the slowest message at max-min rates) and
the most hops a message takes.

Where the paper's feature lay on Blue Waters is not known, and the service nodes of the model
are drawn (conf/topo/bluewaters.yaml), so the study places the feature at ``--positions``
origins drawn with ``--seed`` among those that hold no node of another compute type (or at
one ``--origin``) and reports, per placement, the mean and range of the step time over the
default's and of the max hops. Results go to ``results/halo_study/<name>/`` under the current
directory (``positions.parquet``: one row per position and placement; ``summary.json``: the
settings and the per-placement figures, beside the paper's for a run of the paper's settings,
:func:`paper_case`), written atomically; a folder that holds results of other settings is
refused (use another ``--name``). ~0.15 s a position on Blue Waters.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.app.halo_study")

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from fattorus import interrupt, paths, provenance, topology
from fattorus.analysis import commtime, patterns
from fattorus.analysis import rank_layout as rl
from fattorus.app import outputs
from fattorus.args import SEED_MAX, OneLineParser
from fattorus.files import atomic_write
from fattorus.topology.torus3d import Torus3D

#: The command's name, first word of its error, note and interrupt lines.
PROG = "fattorus.app.halo_study"

#: The paper's Table III (Blue Waters, 32 x 32 x 32 partitions, 32 tasks a node, 32 kB
#: messages, a 12 x 8 x 12 feature): iteration time (ms) and max hops per placement.
PAPER = {"default": (11.315, 9), "grid_order": (7.722, 16), "topaware": (2.771, 2)}

#: The settings of the paper's Table III run (:data:`PAPER`'s caption): a run of these settings
#: — at any feature positions (the paper does not say where its feature lay: ``--positions``,
#: ``--origin``, ``--seed``) and in any ALPS ``--ordering`` (not given either) — is compared
#: with :data:`PAPER`; any other run is not (:func:`paper_case`). Also the options' defaults.
PAPER_SETTINGS: dict[str, Any] = {"machine": "bluewaters", "grid": [32, 32, 32], "ranks_per_node": 32, "kib": 32.0,
                                  "feature": [12, 8, 12], "block": [4, 2, 4], "per_gemini": [4, 4, 4],
                                  "periodic": False}

PLACEMENTS = ("default", "grid_order", "topaware")
POSITIONS_MAX = 512  # ~0.15 s a position on Blue Waters: a little over a minute at most
POSITIONS_DEFAULT = 32  # where the paper's feature lay is not known: 32 drawn positions
KIB_MAX = 2.0**30  # a TiB a message: beyond it bytes stop being a useful figure


def _csv(values: Sequence[int]) -> str:
    """``12,8,12``: a triple as the command line writes it."""
    return ",".join(map(str, values))


def _default(option: str, values: Sequence[int]) -> str:
    """`` (the default)`` when ``values`` are the option's default (so that an error about a
    setting the user never gave says where it came from), else nothing."""
    return " (the default)" if list(values) == PAPER_SETTINGS.get(option.replace("-", "_")) else ""


def _triple(text: str, what: str, low: int = 1) -> tuple[int, int, int]:
    """``--what``'s three integers >= ``low``; the error gives the option's own default as its
    example (``--origin``, which has none, a position of Blue Waters)."""
    parts = text.split(",")
    try:
        out = tuple(int(p) for p in parts)
    except ValueError:
        out = ()
    if len(out) != 3 or min(out) < low:
        default = PAPER_SETTINGS.get(what.replace("-", "_"))
        example = "e.g. 0,8,0" if default is None else f"e.g. {_csv(default)} (the default)"
        raise ValueError(f"--{what} {text!r}: want three integers >= {low}, {example}")
    return out  # type: ignore[return-value]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (module docstring)."""
    ap = OneLineParser(prog="python -m fattorus.app.halo_study", error_prefix=PROG,
                       description=__doc__.split("\n\n")[0])
    ap.add_argument("--machine", default="bluewaters", help="a 3D torus of conf/topo (default bluewaters)")
    ap.add_argument("--grid", default="32,32,32", help="partitions along each virtual dimension (default 32,32,32)")
    ap.add_argument("--ranks-per-node", type=int, default=32, help="ranks a node (default 32)")
    ap.add_argument("--kib", type=float, default=32.0, help="message size in KiB (default 32)")
    ap.add_argument("--feature", default="12,8,12", help="the node feature's Geminis along x,y,z (default 12,8,12)")
    # One or the other (--positions was ignored beside --origin without a word; session 43).
    where = ap.add_mutually_exclusive_group()
    # default None, 32 filled in after parsing: argparse's "not allowed with" test compares the
    # value with the default by identity, so an explicit "--positions 32" passed unseen.
    where.add_argument("--positions", type=int, default=None,
                    help=f"feature positions drawn with --seed, 1 to {POSITIONS_MAX} (default {POSITIONS_DEFAULT})")
    where.add_argument("--origin", default=None, help="one feature position X,Y,Z instead of --positions")
    ap.add_argument("--ordering", default="2Y", help="the ALPS order the default and grid_order nodes come in (default 2Y)")
    ap.add_argument("--block", default="4,2,4", help="grid_order's partitions a node (default 4,2,4)")
    ap.add_argument("--per-gemini", default="4,4,4", help="Topaware's partitions a Gemini (default 4,4,4)")
    ap.add_argument("--periodic", action="store_true", help="wrap-around neighbours too")
    ap.add_argument("--seed", type=int, default=0, help="seed of the feature positions, 0 to 2^32 - 1 (default 0)")
    ap.add_argument("--name", default=None, help="results/halo_study/NAME (default: table3, or the grid)")
    args = ap.parse_args(argv)
    if args.positions is None:
        args.positions = POSITIONS_DEFAULT
    return args


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a folder's results are made with (checked against a folder's own)."""
    return {"machine": args.machine, "grid": list(_triple(args.grid, "grid")), "ranks_per_node": args.ranks_per_node,
            "kib": args.kib, "feature": list(_triple(args.feature, "feature")),
            "origin": None if args.origin is None else list(_triple(args.origin, "origin", 0)),
            "positions": 1 if args.origin is not None else args.positions, "ordering": args.ordering,
            "block": list(_triple(args.block, "block")), "per_gemini": list(_triple(args.per_gemini, "per-gemini")),
            "periodic": bool(args.periodic), "seed": None if args.origin is not None else args.seed}


def paper_case(s: dict[str, Any]) -> bool:
    """Whether settings ``s`` (:func:`settings`) are the paper's Table III run
    (:data:`PAPER_SETTINGS`), whatever the feature positions and ALPS order: only such a run is
    compared with the paper's figures (``--feature 4,4,4 --grid 16,16,16`` is none of the paper's)."""
    return all(s.get(k) == v for k, v in PAPER_SETTINGS.items())


def candidate_origins(topo: Torus3D, shape: tuple[int, int, int]) -> np.ndarray:
    """``(K, 3)`` feature origins whose prism holds only the default compute type and
    unusable nodes of no other compute type (service nodes may lie inside, as on the machine)."""
    usable = topo.usable().reshape(-1, topo.nodes_per_router)
    service = np.isin(topo.node_kind, [i for i, k in enumerate(topo.node_kind_names) if k == "service"])
    clean = (usable | service.reshape(usable.shape)).all(1).reshape(topo.dims)
    ok = clean.copy()
    for axis, s in enumerate(shape):  # a prism is clean when every router in it is
        ok = np.logical_and.reduce([np.roll(ok, -k, axis) for k in range(s)])
    return np.argwhere(ok)


class Plan(NamedTuple):
    """What every feature position shares: the exchange's traffic, and the node index (into
    the ALPS list) of each rank under the default and grid_order placements."""

    traffic: patterns.Traffic
    default_slot: np.ndarray
    grid_slot: np.ndarray


def plan(topo: Torus3D, s: dict[str, Any]) -> Plan:
    """The study's :class:`Plan`, refusing (:class:`~fattorus.analysis.rank_layout.LayoutError`)
    settings no feature position can hold: a job larger than the feature, ranks that do not
    fill whole nodes, blocks that do not hold a node's ranks or tile the grid, a logical grid
    that does not fit the feature."""
    grid, feature = tuple(s["grid"]), tuple(s["feature"])
    block, per_gemini = tuple(s["block"]), tuple(s["per_gemini"])
    opt = {k: f"--{k.replace('_', '-')} {_csv(s[k])}{_default(k, s[k])}"
           for k in ("grid", "feature", "block", "per_gemini")}
    if any(f > d for f, d in zip(feature, topo.dims)):  # each option named, with what would fit
        raise rl.LayoutError(f"{opt['feature']} does not fit the {s['machine']} torus of "
                             f"{'x'.join(map(str, topo.dims))} Geminis: give a --feature of at most "
                             f"{_csv(min(f, d) for f, d in zip(feature, topo.dims))} (and a --grid it holds)")
    n = int(np.prod(grid, dtype=object))  # exact, however large: checked before any array of n ranks
    if n > int(np.prod(feature)) * topo.nodes_per_router * s["ranks_per_node"]:
        raise rl.LayoutError(f"{opt['grid']}: {n:,} ranks do not fit {opt['feature']} at {s['ranks_per_node']} ranks a "
                             f"node ({topo.nodes_per_router} nodes a Gemini)")
    if np.prod(block) != s["ranks_per_node"]:
        raise rl.LayoutError(f"{opt['block']} holds {int(np.prod(block))} partitions, not "
                             f"{s['ranks_per_node']} ranks a node")
    if np.prod(per_gemini) != s["ranks_per_node"] * topo.nodes_per_router:
        raise rl.LayoutError(f"{opt['per_gemini']} holds {int(np.prod(per_gemini))} partitions, not "
                             f"{s['ranks_per_node']} ranks on each of a Gemini's {topo.nodes_per_router} nodes")
    for key, what in (("per_gemini", "Topaware's partitions a Gemini"), ("block", "grid_order's partitions a node")):
        axis = next((i for i, (g, b) in enumerate(zip(grid, s[key])) if g % b), None)
        if axis is not None:
            multiple = [int(np.lcm(b, g)) for b, g in zip(block, per_gemini)]
            raise rl.LayoutError(f"{opt['grid']} does not tile into blocks of {opt[key]}, {what}: {grid[axis]} along "
                                 f"{'xyz'[axis]} is not a multiple of {s[key][axis]}; give a --grid of multiples of "
                                 f"{_csv(multiple)} (or another --per-gemini / --block)")
    if per_gemini[2] % topo.nodes_per_router:
        raise rl.LayoutError(f"{opt['per_gemini']}: {per_gemini[2]} partitions along the last dimension do not split "
                             f"over a Gemini's {topo.nodes_per_router} nodes")
    logical = [g // b for g, b in zip(grid, per_gemini)]
    if any(g > f for g, f in zip(logical, feature)):
        raise rl.LayoutError(f"{opt['grid']} over {opt['per_gemini']} is a logical grid of {_csv(logical)} Geminis, "
                             f"larger than {opt['feature']}")
    rl.logical_grid(grid, per_gemini, topo.nodes_per_router, feature)  # the checks above, as rank_layout makes them
    return Plan(rl.cartesian_halo(grid, s["kib"] * 1024, s["periodic"]), rl.smp(n, s["ranks_per_node"]),
                rl.grid_order(grid, tuple(s["block"])))


def placements(topo: Torus3D, origin: tuple[int, int, int], s: dict[str, Any],
               p: Plan) -> dict[str, tuple[np.ndarray, int]]:
    """Node per rank of each placement at ``origin``, and Topaware's most skipped Geminis; a
    position that cannot hold one raises LayoutError."""
    routers = rl.feature_routers(topo, origin, tuple(s["feature"]))
    alps = rl.alps_nodes(topo, routers, len(p.default_slot) // s["ranks_per_node"], s["ordering"])
    ta = rl.topaware(topo, routers, tuple(s["grid"]), tuple(s["per_gemini"]))
    return {"default": (alps[p.default_slot], 0), "grid_order": (alps[p.grid_slot], 0),
            "topaware": (ta.node, ta.skipped)}


def position_rows(topo: Torus3D, origin: tuple[int, int, int], s: dict[str, Any], p: Plan) -> list[dict[str, Any]]:
    """One row per placement at ``origin``: max hops, step time (bytes over the torus'
    relative bandwidth unit) and its ratio to the default placement's."""
    rows = []
    for name, (node, skipped) in placements(topo, origin, s, p).items():
        step = float(commtime.step_times(topo, [rl.as_job(node, p.traffic)])[0])
        rows.append({"origin": list(map(int, origin)), "placement": name,
                     "max_hops": rl.max_hops(topo, node, p.traffic), "step": step, "skipped": skipped})
    base = rows[0]["step"]
    for row in rows:
        row["vs_default"] = row["step"] / base if base > 0 else 1.0
    return rows


def summarize(table: pl.DataFrame, paper: bool = True) -> dict[str, Any]:
    """Per placement: step time over the default's (mean, min, max) and max hops (median, min,
    max), and with ``paper`` (a run of the paper's settings: :func:`paper_case`) the paper's."""
    out = {}
    for name in PLACEMENTS:
        t = table.filter(pl.col("placement") == name)
        out[name] = {"vs_default": {"mean": t["vs_default"].mean(), "min": t["vs_default"].min(),
                                    "max": t["vs_default"].max()},
                     "max_hops": {"median": t["max_hops"].median(), "min": t["max_hops"].min(),
                                  "max": t["max_hops"].max()}}
        if paper:
            out[name]["paper"] = {"ms": PAPER[name][0], "vs_default": PAPER[name][0] / PAPER["default"][0],
                                  "max_hops": PAPER[name][1]}
    return out


def report(summary: dict[str, Any], positions: int, s: dict[str, Any] | None = None) -> list[str]:
    """The printed table: ours, and beside it the paper's Table III for a run of the paper's
    settings ``s`` (:func:`paper_case`; without ``s``, where the summary holds them); for any
    other run a line saying which settings differ from the paper's."""
    paper = paper_case(s) if s is not None else all("paper" in g for g in summary.values())
    lines = [f"3D halo exchange over {positions} feature position(s): time relative to default (mean, range); "
             "max hops (median, range)" + ("; the paper's Table III beside" if paper else ""),
             f"{'placement':<11} {'time/default':>13} {'range':>13}   {'max hops':>8} {'range':>7}"
             + (f"   {'paper: time/default':>19} {'max hops':>8}" if paper else "")]
    for name, g in summary.items():
        v, h = g["vs_default"], g["max_hops"]
        hops = f"{h['min']:>3d}-{h['max']:<3d}" if paper else f"{h['min']:>3d}-{h['max']}"  # no trailing blanks
        line = f"{name:<11} {v['mean']:>13.3f} {v['min']:>6.3f}-{v['max']:<6.3f}   {h['median']:>8g} {hops}"
        if paper:
            p = PAPER[name]
            line += f"   {p[0] / PAPER['default'][0]:>19.3f} {p[1]:>8d}"
        lines.append(line)
    if not paper:
        differ = ", ".join(f"--{k.replace('_', '-')}" for k, v in PAPER_SETTINGS.items()
                           if s is not None and s.get(k) != v)
        lines.append(f"the paper's Table III figures are shown only for the paper's settings ({_paper_options()}; "
                     "any positions and --ordering)" + (f"; this run's {differ} "
                                                               f"{'differs' if ', ' not in differ else 'differ'}"
                                                               if differ else ""))
    return lines


def _paper_options() -> str:
    """:data:`PAPER_SETTINGS` as options: ``--machine bluewaters --grid 32,32,32 ... no --periodic``."""
    words = []
    for k, v in PAPER_SETTINGS.items():
        option = f"--{k.replace('_', '-')}"
        if isinstance(v, bool):
            words.append(option if v else f"no {option}")
        else:
            words.append(f"{option} {_csv(v) if isinstance(v, list) else f'{v:g}' if isinstance(v, float) else v}")
    return " ".join(words)


def default_name(s: dict[str, Any], drawn: bool) -> str:
    """The folder of a run without ``--name``: ``table3`` for the torus paper's Table III
    settings (positions drawn, every option at its default), else the grid and 8 hex digits of
    the settings, so that runs of other settings never share a folder (session 43: every
    non-default run was ``32x32x32``, and the second was refused)."""
    import hashlib

    if drawn and s == settings(parse_args([])):
        return "table3"
    digest = hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest()[:8]
    return f"{'x'.join(map(str, s['grid']))}-{digest}"


def _differences(old: Any, now: dict[str, Any]) -> str:
    """``key: value there, value now`` for each setting a folder's results were made with that
    differs from this run's."""
    if not isinstance(old, dict):
        return "settings not recorded"
    keys = sorted(set(old) | set(now))
    return "; ".join(f"{k}: {old.get(k)!r} there, {now.get(k)!r} now" for k in keys if old.get(k) != now.get(k))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if not 0 <= args.seed <= SEED_MAX:
            raise ValueError(f"--seed must be from 0 to {SEED_MAX}, got {args.seed}")
        if not 1 <= args.positions <= POSITIONS_MAX:
            raise ValueError(f"--positions must be from 1 to {POSITIONS_MAX}, got {args.positions}")
        if args.ranks_per_node < 1:
            raise ValueError(f"--ranks-per-node must be >= 1, got {args.ranks_per_node}")
        if not 0 < args.kib <= KIB_MAX:
            raise ValueError(f"--kib must be a number in (0, {KIB_MAX:g}] (KiB a message), got {args.kib:g}")
        s = settings(args)
        topo = topology.load(args.machine)
        if not isinstance(topo, Torus3D):
            raise ValueError(f"--machine {args.machine!r} is a {topo.kind}; the study places Geminis of a 3D torus")
        if args.ordering not in topo.ordering_names:
            raise ValueError(f"--ordering {args.ordering!r}: choices {list(topo.ordering_names)}")
        if s["origin"] is not None and any(o >= d for o, d in zip(s["origin"], topo.dims)):
            # Refused, not wrapped: a position past the torus is a typo more often than a wish
            # to wrap, and a wrapped one would be recorded under another origin than asked.
            raise ValueError(f"--origin {args.origin!r}: past the {args.machine} torus of "
                             f"{'x'.join(map(str, topo.dims))} Geminis (each coordinate 0 .. size - 1)")
        shared = plan(topo, s)
        if s["origin"] is not None:
            origins = np.array([s["origin"]])
        else:
            found = candidate_origins(topo, tuple(s["feature"]))
            if not len(found):
                raise ValueError(f"no {s['feature']} feature of {args.machine} holds only its default compute type")
            rng = np.random.default_rng(args.seed)
            origins = found[np.sort(rng.choice(len(found), min(args.positions, len(found)), replace=False))]
    except (ValueError, FileNotFoundError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    name = args.name if args.name is not None else default_name(s, args.origin is None)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name.startswith("."):
        print(f"{PROG}: error: --name {name!r}: letters, digits, '.', '_' and '-' only, not starting with '.'",
              file=sys.stderr)
        return 2
    out = paths.results_dir() / "halo_study" / name
    old = outputs.stored_summary(out)
    if isinstance(old, str) or (isinstance(old, dict) and old.get("settings") != s):
        why = old if isinstance(old, str) else (f"{out} holds results of other settings "
                                                f"({_differences(old.get('settings'), s)}); use another --name")
        print(f"{PROG}: error: {why}", file=sys.stderr)
        return 2
    interrupt.armed()
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for i, origin in enumerate(origins, 1):
            try:
                rows.extend(position_rows(topo, tuple(int(o) for o in origin), s, shared))
            except rl.LayoutError as err:  # e.g. too many service Geminis in this feature's pencils
                skipped.append(f"{list(map(int, origin))}: {err}")
                print(f"[halo_study] position {list(map(int, origin))}: skipped ({err})", file=sys.stderr, flush=True)
            print(f"[halo_study] position {i}/{len(origins)}", file=sys.stderr, flush=True)
        if not rows:  # the reason in the error line itself where one position was asked for
            why = f" (position {skipped[0]})" if len(skipped) == 1 else f" ({len(skipped)} positions skipped, above)"
            print(f"{PROG}: error: no position could hold every placement{why}", file=sys.stderr)
            return 2
        table = pl.DataFrame(rows)
        summary = summarize(table, paper_case(s))
        positions = table["origin"].n_unique()
        atomic_write(out / "positions.parquet", lambda p: table.write_parquet(p))
        atomic_write(out / "summary.json", json.dumps({"settings": s, "positions": positions, "placements": summary,
                                                       "fattorus": provenance.stamp()}, indent=1))
    except OSError as err:
        print(f"{PROG}: error: cannot write {out}: {err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing written (the study takes seconds: run it again)", file=sys.stderr)
        return 130
    print("\n".join(report(summary, positions, s)))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    from fattorus.args import run_piped

    interrupt.exit_with(run_piped(main))  # quiet, exit 141, when stdout's reader closes early (| head -1)
