"""The fat-tree paper's network study on the flow model (issue 14, item 4).

``python -m fattorus.app.network_study [--paper] [--machine ft44] [--sizes 512,4096]
[--workloads 15] [--comm-fraction 1] [--seed 0] [--name NAME]``

A workload packs jobs of random sizes (uniform integers in ``--sizes``, seeded) onto an empty
machine until the interference-free policy ``ta`` cannot place the next one (20 draws in a
row), each job with one of the paper's four patterns (Stencil 4D, Unstructured mesh 3D,
Pairs, Sub-communicator all-to-all; equally likely, seeded). The same jobs are placed twice,
in the same order: by ``ta`` (interference-free, compact) and by a topology-oblivious policy
(``--oblivious``: ``to``, first fit by node id — Flux's default, what the paper compared
against — or ``to_random``, any free nodes: the fragmented allocations of a busy machine). With all jobs communicating at once
(:func:`fattorus.analysis.commtime.step_times`), a job's speedup is its run time under the
oblivious placement over its run time under ``ta``, where a run time is compute plus one
step of communication and communication is ``--comm-fraction`` of the run time under ``ta``
(1: communication only, the paper's simulations; 0.3: its "30 % communication" variant).

``--paper`` runs the paper's four cases: ft44 with 512–4,096-node jobs (15 workloads); Cab
with 4–512 and 4–128 nodes; and 4–128 nodes with 30 % communication (so it takes none of
``--machine``, ``--sizes``, ``--workloads``, ``--comm-fraction``). Results go to
``results/network_study/<name>/`` under the current directory (``jobs.parquet``: one row per job and case;
``summary.json``: the settings and per-case, per-pattern mean and max speedups), written atomically, and a
table is printed. A folder that holds results made with other settings (seed, oblivious
policy, cases) is refused before any work: use another ``--name`` or the original options.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import polars as pl

from fattorus import paths, topology
from fattorus.analysis import commtime, patterns
from fattorus.app.outputs import stored_summary
from fattorus.args import OneLineParser
from fattorus.files import atomic_write
from fattorus.sched import policy as policy_mod
from fattorus.sched import state as st

DEFAULT_SIZES = "512,4096"
DEFAULT_WORKLOADS = 15
DEFAULT_COMM_FRACTION = 1.0
PATTERNS = ("stencil4d", "unstructured_mesh", "random_pairs", "subcomm_a2a")
LABELS = {"stencil4d": "Stencil", "unstructured_mesh": "Unstr-mesh", "random_pairs": "Pairs", "subcomm_a2a": "Sub-a2a"}
#: (case name, machine, min nodes, max nodes, workloads, communication fraction)
PAPER_CASES = (
    ("ft44_512-4096", "ft44", 512, 4096, 15, 1.0),
    ("cab_4-512", "cab", 4, 512, 15, 1.0),
    ("cab_4-128", "cab", 4, 128, 15, 1.0),
    ("cab_4-128_c30", "cab", 4, 128, 15, 0.3),
)
#: The paper's figures (Section V-B), for the printed comparison.
PAPER = {
    "ft44_512-4096": {"Stencil": 1.58, "Unstr-mesh": 1.68, "Pairs": 1.06, "Sub-a2a": 1.14, "all": 1.36},
    "cab_4-512": {"Stencil": 1.26, "Unstr-mesh": 1.14, "Pairs": 1.1, "Sub-a2a": 1.55, "all": 1.3},
    "cab_4-128": {"Stencil": 1.32, "Unstr-mesh": 1.29, "Pairs": 1.08, "Sub-a2a": 1.74, "all": 1.35},
    "cab_4-128_c30": {"all": 1.08},
}


def pack(topo: Any, lo: int, hi: int, rng: np.random.Generator, tries: int = 20) -> list[np.ndarray]:
    """Allocations of jobs of random sizes in ``[lo, hi]`` packed by ``ta`` on an empty machine."""
    ta = policy_mod.make("ta", topo)
    state = st.empty(topo)
    out, misses = [], 0
    while misses < tries:
        n = int(rng.integers(lo, hi + 1))
        placed = ta.place(state, n) if n <= state.n_free else None
        if placed is None:
            misses += 1
            continue
        st.allocate(state, placed, ta.footprint(placed))
        out.append(np.asarray(placed))
        misses = 0
    return out


def oblivious(topo: Any, sizes: Sequence[int], name: str, seed: int) -> list[np.ndarray]:
    """The same job sizes placed in order by the topology-oblivious policy ``name`` (``to``:
    lowest free node ids; ``to_random``: any free nodes) on an empty machine."""
    pol = policy_mod.make(name, topo, seed=seed)
    state = st.empty(topo)
    out = []
    for n in sizes:
        placed = np.asarray(pol.place(state, int(n)))
        st.allocate(state, placed, pol.footprint(placed))
        out.append(placed)
    return out


def workload_rows(topo: Any, case: str, w: int, lo: int, hi: int, c: float, seed: int,
                  oblivious_policy: str = "to") -> list[dict]:
    """One workload: pack, draw patterns, time both placements; a row per job."""
    rng = np.random.default_rng([seed, w])
    ta_alloc = pack(topo, lo, hi, rng)
    sizes = [len(a) for a in ta_alloc]
    to_alloc = oblivious(topo, sizes, oblivious_policy, int(rng.integers(2**31)))
    names = [PATTERNS[i] for i in rng.integers(0, len(PATTERNS), len(sizes))]
    key = jax.random.PRNGKey(int(rng.integers(2**31)))
    traffic = [patterns.make(name, jax.random.fold_in(key, j), n) for j, (name, n) in enumerate(zip(names, sizes))]
    t_ta = commtime.step_times(topo, [commtime.Job(a, t) for a, t in zip(ta_alloc, traffic)])
    t_to = commtime.step_times(topo, [commtime.Job(a, t) for a, t in zip(to_alloc, traffic)])
    # Run time = compute + communication, communication = c of the run time under ta.
    compute = t_ta * (1 - c) / c if c > 0 else np.zeros_like(t_ta)
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = np.where(t_ta > 0, (compute + t_to) / np.where(t_ta > 0, compute + t_ta, 1), 1.0)
    return [{"case": case, "machine": topo.name, "workload": w, "job": j, "nodes": sizes[j], "pattern": LABELS[names[j]],
             "comm_fraction": c, "step_ta": float(t_ta[j]), "step_to": float(t_to[j]), "speedup": float(speedup[j])}
            for j in range(len(sizes))]


def summarize(table: pl.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    """Per case and pattern (and ``all``): jobs, mean and max speedup."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for case in table["case"].unique(maintain_order=True):
        sub = table.filter(pl.col("case") == case)
        groups = {label: sub.filter(pl.col("pattern") == label) for label in LABELS.values()}
        groups["all"] = sub
        out[case] = {k: {"jobs": len(g), "mean": float(g["speedup"].mean()), "max": float(g["speedup"].max())}
                     for k, g in groups.items() if len(g)}
    return out


def report(summary: dict) -> list[str]:
    """Printed table: mean speedup per pattern, the paper's beside it."""
    lines = [f"{'case':<16} {'pattern':<11} {'jobs':>5} {'mean':>6} {'max':>6} {'paper':>6}"]
    for case, groups in summary.items():
        for k, g in groups.items():
            paper = PAPER.get(case, {}).get(k)
            lines.append(f"{case:<16} {k:<11} {g['jobs']:>5} {g['mean']:>6.2f} {g['max']:>6.2f} "
                         f"{'' if paper is None else f'{paper:.2f}':>6}")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line. Case options default to ``None`` so that :func:`cases` can tell
    which ones the user gave (``--paper`` refuses them rather than ignoring them)."""
    ap = OneLineParser(prog="python -m fattorus.app.network_study", error_prefix="network_study",
                       description=__doc__.split("\n\n")[0])
    ap.add_argument("--paper", action="store_true", help="the paper's four cases")
    ap.add_argument("--machine", default=None, help="machine (conf/topo; default ft44)")
    ap.add_argument("--sizes", default=None, help=f"min,max job nodes (default {DEFAULT_SIZES})")
    ap.add_argument("--workloads", type=int, default=None, help=f"workloads (default {DEFAULT_WORKLOADS})")
    ap.add_argument("--comm-fraction", type=float, default=None,
                    help=f"communication share of the run time under ta, in (0, 1] (default {DEFAULT_COMM_FRACTION:g})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--oblivious", choices=("to", "to_random"), default="to",
                    help="the topology-oblivious placement: to (first fit, Flux's default) or to_random")
    ap.add_argument("--name", default=None, help="results/network_study/NAME (default: paper or the case)")
    return ap.parse_args(argv)


def cases(args: argparse.Namespace) -> list[tuple]:
    """The cases to run, checked (one-line ``ValueError`` on a mistake)."""
    if args.paper:
        # Each paper case fixes its machine, sizes, workloads and communication share: an
        # option given beside --paper would be silently ignored, so it is refused.
        given = [f"--{k.replace('_', '-')}" for k in ("machine", "sizes", "workloads", "comm_fraction")
                 if getattr(args, k) is not None]
        if given:
            raise ValueError(f"--paper runs the paper's own cases; drop {' and '.join(given)}")
        return list(PAPER_CASES)
    args.machine = args.machine or "ft44"
    args.sizes = DEFAULT_SIZES if args.sizes is None else args.sizes
    args.workloads = DEFAULT_WORKLOADS if args.workloads is None else args.workloads
    args.comm_fraction = DEFAULT_COMM_FRACTION if args.comm_fraction is None else args.comm_fraction
    try:
        lo, hi = (int(x) for x in args.sizes.split(","))
    except ValueError:
        raise ValueError(f"--sizes {args.sizes!r}: give min,max nodes, e.g. 512,4096") from None
    if not 1 <= lo <= hi:
        raise ValueError(f"--sizes {args.sizes!r}: need 1 <= min <= max")
    if args.workloads < 1:
        raise ValueError(f"--workloads {args.workloads}: need at least 1")
    if not 0 < args.comm_fraction <= 1:
        raise ValueError(f"--comm-fraction {args.comm_fraction}: must be in (0, 1]")
    return [(f"{args.machine}_{lo}-{hi}", args.machine, lo, hi, args.workloads, args.comm_fraction)]


def settings(args: argparse.Namespace, todo: Sequence[tuple]) -> dict[str, Any]:
    """What the results depend on, as recorded in ``summary.json`` (JSON types)."""
    runs = [{"case": case, "machine": m, "sizes": [lo, hi], "workloads": n_wl, "comm_fraction": c}
            for case, m, lo, hi, n_wl, c in todo]
    return {"seed": args.seed, "oblivious": args.oblivious, "runs": runs}


def _show(value: Any) -> str:
    """A recorded setting for the one-line refusal: runs compactly, anything else as is."""
    try:
        return "[" + ", ".join(f"{r['case']} ({r['workloads']} workloads, comm-fraction {r['comm_fraction']:g})"
                               for r in value) + "]"
    except (TypeError, KeyError, ValueError):  # not a list of runs (e.g. a seed, a policy, case names)
        return repr(value)


def settings_conflict(out: Path, now: dict[str, Any]) -> str | None:
    """Why ``out`` must not take results made with the settings ``now``, or ``None``.

    Rewriting a folder with results of other settings would silently replace the earlier
    ones (the default ``--name`` does not spell out the seed or the oblivious policy), so a
    folder whose ``summary.json`` records other settings is refused. Results written before
    the settings were recorded (no ``runs``) are compared on what they hold: seed, policy
    and case names. A folder without ``summary.json`` holds no finished study and is reused.
    """
    old = stored_summary(out)
    if not isinstance(old, dict):
        return old
    recorded = {k: old[k] for k in ("seed", "oblivious", "runs") if k in old}
    current = dict(now)
    if "runs" not in old and isinstance(old.get("cases"), dict):
        recorded["cases"] = sorted(old["cases"])
        current["cases"] = sorted(r["case"] for r in now["runs"])
    current = json.loads(json.dumps(current))  # tuples and ints as JSON reads them back
    diff = [f"{k}: {_show(recorded[k])} there, {_show(current[k])} now" for k in recorded if recorded[k] != current.get(k)]
    if not diff:
        return None
    return f"{out} holds results made with other settings ({'; '.join(diff)}); use another --name or the original options"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        todo = cases(args)
        machines = {m: topology.load(m) for _, m, *_ in todo}
        for topo in machines.values():  # both policies compared must serve the machine
            for name in ("ta", args.oblivious):
                policy_mod.make(name, topo)
    except (ValueError, FileNotFoundError) as err:
        print(f"network_study: error: {err}", file=sys.stderr)
        return 2
    name = args.name or ("paper" if args.paper else todo[0][0])
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name.startswith("."):
        print(f"network_study: error: --name {name!r}: letters, digits, '.', '_' and '-' only", file=sys.stderr)
        return 2
    for case, m, lo, hi, _, _ in todo:
        if hi > machines[m].n_nodes:
            print(f"network_study: error: {case}: jobs of up to {hi} nodes do not fit {m} ({machines[m].n_nodes} nodes)",
                  file=sys.stderr)
            return 2
    record = settings(args, todo)
    conflict = settings_conflict(paths.results_dir() / "network_study" / name, record)
    if conflict:  # before the (minutes of) work, so nothing is computed only to be refused
        print(f"network_study: error: {conflict}", file=sys.stderr)
        return 2
    rows = []
    for case, m, lo, hi, n_wl, c in todo:
        for w in range(n_wl):
            rows.extend(workload_rows(machines[m], case, w, lo, hi, c, args.seed, args.oblivious))
            print(f"[network_study] {case}: workload {w + 1}/{n_wl}", file=sys.stderr, flush=True)
    table = pl.DataFrame(rows)
    summary = summarize(table)
    out = paths.results_dir() / "network_study" / name
    meta = {**record, "cases": summary}
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "jobs.parquet", lambda p: table.write_parquet(p))
        atomic_write(out / "summary.json", json.dumps(meta, indent=1))
    except OSError as err:
        print(f"network_study: error: cannot write {out}: {err.strerror or err}", file=sys.stderr)
        return 1
    print("\n".join(report(summary)))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
