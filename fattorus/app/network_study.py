"""The fat-tree paper's network study on the flow model (docs/bandwidth-model.md, "network study").

``python -m fattorus.app.network_study [--paper] [--machine ft44] [--sizes 512,4096]
[--workloads 15] [--comm-fraction 1] [--a2a-dims 2] [--oblivious to] [--churn 5]
[--completion steady] [--seed 0] [--name NAME]``

A workload packs jobs of random sizes onto an empty machine until the interference-free
policy ``ta`` cannot place the next one (20 draws in a row). Sizes (:func:`job_sizes`, seeded)
are log-uniform over ``--sizes``, rounded to sizes whose 3D and 4D process grids are near-cubic
(no extent above twice the cube root, resp. fourth root: Stencil runs on a 4D grid and
Unstructured mesh and Sub-a2a on 3D ones, and a prime size would make them one long line).
Each job gets one of the paper's four patterns (Stencil 4D, Unstructured mesh 3D, Pairs, and
Sub-a2a: all-to-all along ``--a2a-dims`` dimensions of a 3D process grid,
:func:`fattorus.analysis.patterns.grid_a2a`; equally likely, seeded). The same jobs are placed
twice, in the same order: by ``ta`` (interference-free, compact) and by a topology-oblivious
policy (``--oblivious``): ``to``, first fit by node id on a machine in steady state — other jobs
fill the machine and end and start ``--churn`` times per job, then the workload takes the
machine over as they end (:func:`oblivious`; 0: first fit on the empty machine, which is
nearly as compact as ``ta``) —
or ``to_random``, any free nodes (the most fragmented case). With all jobs communicating at once
(:func:`fattorus.analysis.commtime.step_times`), a job's speedup is its run time under the
oblivious placement over its run time under ``ta``, where a run time is compute plus one
step of communication and communication is ``--comm-fraction`` of the run time under ``ta``
(1: communication only, the paper's simulations; 0.3: its "30 % communication" variant).
Its **interference-only** speedup takes the run time alone in the oblivious placement instead
of under ``ta``: what the other jobs cost it, apart from its placement's own routes (which,
for sparse patterns such as Pairs, can be luckier or unluckier than ``ta``'s).
``--completion``: ``steady`` (default) times a step at the max-min rates of the moment all flows
start; ``fluid`` lets them drain, the rates solved again each time flows finish
(:mod:`fattorus.analysis.fluid`; hundreds to thousands of solves per placement instead of one:
1-3 minutes per case on Cab, about an hour on ft44 on 2 CPUs).

``--paper`` runs the paper's four cases: ft44 with 512–4,096-node jobs (15 workloads, Sub-a2a
along two dimensions, as the paper's simulations); Cab with 4–512 and 4–128 nodes; and 4–128
nodes with 30 % communication (Sub-a2a along all three dimensions, as the paper's Cab runs;
so it takes none of ``--machine``, ``--sizes``, ``--workloads``, ``--comm-fraction``,
``--a2a-dims``). Results go to
``results/network_study/<name>/`` under the current directory (``jobs.parquet``: one row per job and case;
``summary.json``: the settings and per-case, per-pattern mean and max speedups), written atomically, and a
table is printed. A folder that holds results made with other settings (seed, oblivious
policy, cases) is refused before any work: use another ``--name`` or the original options.
Each finished workload is kept in ``workloads/`` there until the study ends: an interrupted
study (Ctrl-C) resumes after its last finished workload when the same command runs again,
and on a finished study of the same settings the same command prints its table again and
runs nothing.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.app.network_study")

import argparse
import functools
import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import polars as pl

from fattorus import interrupt, paths, provenance, topology
from fattorus.analysis import commtime, patterns
from fattorus.app import outputs
from fattorus.kernels import aph
from fattorus.args import SEED_MAX, OneLineParser
from fattorus.files import atomic_write
from fattorus.sched import policy as policy_mod
from fattorus.sched import state as st

#: The command's name, first word of its error, note and interrupt lines.
PROG = "fattorus.app.network_study"

DEFAULT_SIZES = "512,4096"
DEFAULT_WORKLOADS = 15
DEFAULT_COMM_FRACTION = 1.0
DEFAULT_A2A_DIMS = 2
DEFAULT_CHURN = 5
#: Workloads per case at most: one takes ~0.4 s on Cab and ~3 s on ft44 (steady completion;
#: minutes each with fluid), so 10,000 is about 9 hours on ft44, 670 times the paper's 15; a
#: larger number is more likely a typo than a study anyone waits for (it ran for days, silently).
WORKLOADS_MAX = 10_000
#: Job ends per workload job at most: the workload fills the machine, so the default 5 already
#: ends about five machines' worth of other jobs before it starts; each end costs ~0.3 ms per
#: workload job (Cab), so 1,000 is ~12 s per workload on Cab, and a larger number only stalls
#: the study before its first progress line (10^23 ran with no output for ever).
CHURN_MAX = 1_000
#: Version of how workloads and placements are drawn, recorded in ``summary.json``: 1 until
#: session 19 (uniform sizes, Sub-a2a in rows of 16 consecutive ranks, first fit on the empty
#: machine), 2 since (log-uniform near-cubic sizes, grid all-to-all, first fit after churn).
WORKLOAD_MODEL = 2
PATTERNS = ("stencil4d", "unstructured_mesh", "random_pairs", "grid_a2a")
LABELS = {"stencil4d": "Stencil", "unstructured_mesh": "Unstr-mesh", "random_pairs": "Pairs", "grid_a2a": "Sub-a2a"}
#: (case name, machine, min nodes, max nodes, workloads, communication fraction, Sub-a2a dimensions)
PAPER_CASES = (
    ("ft44_512-4096", "ft44", 512, 4096, 15, 1.0, 2),
    ("cab_4-512", "cab", 4, 512, 15, 1.0, 3),
    ("cab_4-128", "cab", 4, 128, 15, 1.0, 3),
    ("cab_4-128_c30", "cab", 4, 128, 15, 0.3, 3),
)
#: The paper's figures (Section V-B) per paper case, for the printed comparison: ``(mean, max)``
#: speedup per pattern and over all jobs (``None`` where the paper gives no maximum).
PAPER = {
    "ft44_512-4096": {"Stencil": (1.58, None), "Unstr-mesh": (1.68, None), "Pairs": (1.06, None),
                      "Sub-a2a": (1.14, None), "all": (1.36, None)},
    "cab_4-512": {"Stencil": (1.26, 1.5), "Unstr-mesh": (1.14, 1.4), "Pairs": (1.1, None), "Sub-a2a": (1.55, None),
                  "all": (1.3, None)},
    "cab_4-128": {"Stencil": (1.32, None), "Unstr-mesh": (1.29, None), "Pairs": (1.08, None), "Sub-a2a": (1.74, None),
                  "all": (1.35, None)},
    "cab_4-128_c30": {"all": (1.08, 1.31)},
}


def paper_case(machine: str, lo: int, hi: int, comm_fraction: float, a2a_dims: int) -> str | None:
    """The paper case (:data:`PAPER_CASES`) run with these settings — machine, job sizes,
    communication share and Sub-a2a dimensions (any number of workloads) — or ``None``: only
    such a run is compared with the paper's figures, whatever its case is named (``--machine cab
    --sizes 4,128 --comm-fraction 0.3 --a2a-dims 3`` is the paper's 30 % case, named
    ``cab_4-128``; with ``--a2a-dims 2`` it is none of the paper's)."""
    for case, m, c_lo, c_hi, _, c, dims in PAPER_CASES:
        if (m, c_lo, c_hi, c, dims) == (machine, lo, hi, comm_fraction, a2a_dims):
            return case
    return None


@functools.lru_cache(maxsize=16)
def job_sizes(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The sizes in ``[lo, hi]`` whose near-cubic 3D and 4D process grids
    (:func:`fattorus.analysis.patterns.grid_dims`) have no extent above twice the cube (fourth)
    root, and their draw probabilities: a log-uniform draw over ``[lo, hi]`` rounded to the
    nearest such size in log scale (each size's probability is the log-width of the sizes
    closer to it than to its neighbours: cut at the geometric means of neighbours).

    Why near-cubic: a prime or near-prime size makes a 4D stencil or a 3D grid one long line
    (3,561 nodes: 1187 x 3 x 1 x 1), whose traffic hardly leaves its first switch. Why log-uniform: the
    paper's Cab workloads of 4-128 nodes held ~36 jobs (1,296 / 36 = 36 nodes a job on average,
    the mean of a log-uniform size over 4-128) where uniform sizes give ~24; for 4-512 it reports
    ~20 jobs (log-uniform: ~12, uniform: ~8). Empty if no size in the range qualifies. Cached
    per range (the factorisations of 4,096 sizes take ~70 ms)."""
    sizes = np.array([n for n in range(lo, hi + 1)
                      if all(max(patterns.grid_dims(n, d)) <= 2 * n ** (1 / d) + 1e-9 for d in (3, 4))], np.int64)
    if not len(sizes):
        return sizes, np.zeros(0)
    cuts = np.log(np.concatenate([[lo], np.sqrt(sizes[:-1] * sizes[1:]), [hi]]).astype(float))
    width = np.diff(cuts)
    prob = width / width.sum() if width.sum() > 0 else np.full(len(sizes), 1 / len(sizes))
    sizes.setflags(write=False)  # cached (every workload of a case draws from them): read-only
    prob.setflags(write=False)
    return sizes, prob


def pack(topo: Any, lo: int, hi: int, rng: np.random.Generator, tries: int = 20) -> list[np.ndarray]:
    """Allocations of jobs of random sizes (:func:`job_sizes`) packed by ``ta`` on an empty machine."""
    ta = policy_mod.make("ta", topo)
    state = st.empty(topo)
    sizes, prob = job_sizes(lo, hi)
    out, misses = [], 0
    while misses < tries:
        n = int(rng.choice(sizes, p=prob))
        placed = ta.place(state, n) if n <= state.n_free else None
        if placed is None:
            misses += 1
            continue
        st.allocate(state, placed, ta.footprint(placed))
        out.append(np.asarray(placed))
        misses = 0
    return out


def oblivious(topo: Any, sizes: Sequence[int], name: str, seed: int, churn: int = 0,
              pool: tuple[np.ndarray, np.ndarray] | None = None) -> list[np.ndarray]:
    """The same job sizes placed in order by the topology-oblivious policy ``name`` (``to``:
    lowest free node ids; ``to_random``: any free nodes).

    With ``churn = 0`` on an empty machine. Otherwise on a machine in steady state, the
    workload taking it over: other jobs (sizes drawn from ``pool``, :func:`job_sizes`' sizes and
    probabilities; default the workload's own sizes, uniformly) fill the machine by the same
    policy, then ``churn`` times per workload job one of them ends at random and new ones start
    while they fit; then the workload's jobs start in order, each as soon as it fits, while the
    other jobs end one at a time in random order (all seeded).

    Why: the paper's topology-oblivious allocations spread jobs "all over the network" (its
    Fig. 7: their median APH above the ideal), while first fit on an empty machine hands each job
    one block of node ids, nearly ``ta``'s own placement. First fit meets a production machine's
    free list, fragmented by jobs that ended in random order. The workload's sizes (and so its
    traffic) are the same as under ``ta``."""
    pol = policy_mod.make(name, topo, seed=seed)
    state = st.empty(topo)

    def start(n: int) -> np.ndarray | None:
        placed = pol.place(state, int(n)) if n <= state.n_free else None
        if placed is not None:
            placed = np.asarray(placed)
            st.allocate(state, placed, pol.footprint(placed))
        return placed

    others: list[np.ndarray] = []
    if churn and len(sizes):
        rng = np.random.default_rng([seed, 1])
        draw_from, prob = pool if pool is not None else (np.asarray(sizes), None)

        def fill() -> None:
            misses = 0
            while misses < 20:  # as ta's packing: full once 20 draws in a row do not fit
                placed = start(int(rng.choice(draw_from, p=prob)))
                misses = 0 if placed is not None else misses + 1
                if placed is not None:
                    others.append(placed)

        def end_one() -> None:
            gone = others.pop(int(rng.integers(len(others))))
            st.release(state, gone, pol.footprint(gone))

        fill()
        for _ in range(churn * len(sizes)):
            end_one()
            fill()
    out = []
    for n in sizes:
        while (placed := start(n)) is None:
            end_one()  # a workload job always fits once every other job has ended
        out.append(placed)
    return out


def workload_rows(topo: Any, case: str, w: int, lo: int, hi: int, c: float, seed: int,
                  oblivious_policy: str = "to", a2a_dims: int = DEFAULT_A2A_DIMS,
                  churn: int = DEFAULT_CHURN, completion: str = "steady") -> list[dict]:
    """One workload: pack, draw patterns, time both placements (step times by ``completion``,
    :func:`fattorus.analysis.commtime.step_times`); a row per job."""
    rng = np.random.default_rng([seed, w])
    ta_alloc = pack(topo, lo, hi, rng)
    sizes = [len(a) for a in ta_alloc]
    to_alloc = oblivious(topo, sizes, oblivious_policy, int(rng.integers(2**31)), churn, job_sizes(lo, hi))
    names = [PATTERNS[i] for i in rng.integers(0, len(PATTERNS), len(sizes))]
    key = jax.random.PRNGKey(int(rng.integers(2**31)))
    params = {"grid_a2a": {"along": a2a_dims}}
    traffic = [patterns.make(name, jax.random.fold_in(key, j), n, **params.get(name, {}))
               for j, (name, n) in enumerate(zip(names, sizes))]
    t_ta = commtime.step_times(topo, [commtime.Job(a, t) for a, t in zip(ta_alloc, traffic)], completion)
    t_to = commtime.step_times(topo, [commtime.Job(a, t) for a, t in zip(to_alloc, traffic)], completion)
    # Each job alone in its oblivious placement: splits the speedup into the placement's own
    # routes (alone / ta) and the interference of the others (together / alone).
    t_alone = np.array([commtime.step_times(topo, [commtime.Job(a, t)], completion)[0]
                        for a, t in zip(to_alloc, traffic)])
    # Run time = compute + communication, communication = c of the run time under ta.
    compute = t_ta * (1 - c) / c if c > 0 else np.zeros_like(t_ta)
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = np.where(t_ta > 0, (compute + t_to) / np.where(t_ta > 0, compute + t_ta, 1), 1.0)
        interference = np.where(t_alone > 0, (compute + t_to) / np.where(t_alone > 0, compute + t_alone, 1), 1.0)
    # Average pair hops of both placements: how spread the oblivious one is (the paper's Fig. 7).
    aph_ta, aph_to = (np.asarray(aph.aph_from_sums(np.asarray(aph.hop_sums(topo, aph.pad(a))), sizes))
                      for a in (ta_alloc, to_alloc))
    return [{"case": case, "machine": topo.name, "workload": w, "job": j, "nodes": sizes[j], "pattern": LABELS[names[j]],
             "comm_fraction": c, "step_ta": float(t_ta[j]), "step_to": float(t_to[j]), "speedup": float(speedup[j]),
             "step_to_alone": float(t_alone[j]), "interference": float(interference[j]),
             "aph_ta": float(aph_ta[j]), "aph_to": float(aph_to[j])}
            for j in range(len(sizes))]


def summarize(table: pl.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    """Per case and pattern (and ``all``): jobs, mean and max speedup."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for case in table["case"].unique(maintain_order=True):
        sub = table.filter(pl.col("case") == case)
        groups = {label: sub.filter(pl.col("pattern") == label) for label in LABELS.values()}
        groups["all"] = sub
        out[case] = {k: {"jobs": len(g), "mean": float(g["speedup"].mean()), "max": float(g["speedup"].max()),
                         **({"interference": float(g["interference"].mean())} if "interference" in g.columns else {})}
                     for k, g in groups.items() if len(g)}
    return out


def report(summary: dict, runs: Sequence[dict] = ()) -> list[str]:
    """Printed table: mean and max speedup per pattern, the mean interference-only speedup
    (together / alone in the oblivious placement: what the other jobs cost, without the
    placement's own routes), and beside them the paper's mean and max where it gives them, for
    a case whose settings are a paper case's (:func:`paper_case`). ``runs``: the cases'
    settings as :func:`settings` records them (without them no case is compared)."""
    compared = {r["case"]: paper_case(r["machine"], *r["sizes"], r["comm_fraction"], r["a2a_dims"]) for r in runs}
    lines = [f"{'case':<16} {'pattern':<11} {'jobs':>5} {'mean':>6} {'max':>6} {'interf':>6} {'paper':>6} {'p.max':>6}"]
    for case, groups in summary.items():
        figures = PAPER.get(compared.get(case) or "", {})
        for k, g in groups.items():
            mean, top = figures.get(k, (None, None))
            interf = g.get("interference")
            lines.append(f"{case:<16} {k:<11} {g['jobs']:>5} {g['mean']:>6.2f} {g['max']:>6.2f} "
                         f"{'' if interf is None else f'{interf:.2f}':>6} {'' if mean is None else f'{mean:.2f}':>6} "
                         f"{'' if top is None else f'{top:.2f}':>6}")
    for case in summary:
        if compared.get(case) is None:
            lines.append(f"{case}: not one of the paper's cases (machine, sizes, communication share, Sub-a2a "
                         "dimensions): no paper figures")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line. Case options default to ``None`` so that :func:`cases` can tell
    which ones the user gave (``--paper`` refuses them rather than ignoring them)."""
    ap = OneLineParser(prog="python -m fattorus.app.network_study", error_prefix=PROG,
                       description=__doc__.split("\n\n")[0])
    ap.add_argument("--paper", action="store_true", help="the paper's four cases")
    ap.add_argument("--machine", default=None, help="a fat-tree machine (conf/topo; default ft44)")
    ap.add_argument("--sizes", default=None, help=f"min,max job nodes (default {DEFAULT_SIZES})")
    ap.add_argument("--workloads", type=int, default=None,
                    help=f"number of random workloads, 1 to {WORKLOADS_MAX:,} (default {DEFAULT_WORKLOADS})")
    ap.add_argument("--comm-fraction", type=float, default=None,
                    help=f"communication share of the run time under ta, in (0, 1] (default {DEFAULT_COMM_FRACTION:g})")
    ap.add_argument("--a2a-dims", type=int, default=None, choices=(1, 2, 3),
                    help=f"Sub-a2a: all-to-all along this many dimensions of a 3D grid (default {DEFAULT_A2A_DIMS})")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the workloads' job sizes and patterns, 0 to 2^32 - 1 (default 0)")
    ap.add_argument("--oblivious", choices=("to", "to_random"), default="to",
                    help="the topology-oblivious placement: to (first fit by node id) or to_random (any free nodes)")
    ap.add_argument("--churn", type=int, default=DEFAULT_CHURN,
                    help=f"job ends per workload job on the machine the oblivious placements start on, 0 to "
                         f"{CHURN_MAX:,} (default {DEFAULT_CHURN}; 0: the empty machine)")
    ap.add_argument("--completion", choices=commtime.COMPLETIONS, default="steady",
                    help="step times at the rates all flows start with (steady), or draining, the rates "
                         "solved again as flows finish (fluid; far slower)")
    ap.add_argument("--name", default=None, help="results/network_study/NAME (default: paper or the case)")
    return ap.parse_args(argv)


def cases(args: argparse.Namespace) -> list[tuple]:
    """The cases to run, checked (one-line ``ValueError`` on a mistake)."""
    if args.paper:
        # Each paper case fixes its machine, sizes, workloads and communication share: an
        # option given beside --paper would be silently ignored, so it is refused.
        given = [f"--{k.replace('_', '-')}" for k in ("machine", "sizes", "workloads", "comm_fraction", "a2a_dims")
                 if getattr(args, k) is not None]
        if given:
            raise ValueError(f"--paper runs the paper's own cases; drop {' and '.join(given)}")
        return list(PAPER_CASES)
    args.machine = args.machine or "ft44"
    args.sizes = DEFAULT_SIZES if args.sizes is None else args.sizes
    args.workloads = DEFAULT_WORKLOADS if args.workloads is None else args.workloads
    args.comm_fraction = DEFAULT_COMM_FRACTION if args.comm_fraction is None else args.comm_fraction
    args.a2a_dims = DEFAULT_A2A_DIMS if args.a2a_dims is None else args.a2a_dims
    try:
        lo, hi = (int(x) for x in args.sizes.split(","))
    except ValueError:
        raise ValueError(f"--sizes {args.sizes!r}: give min,max nodes, e.g. 512,4096") from None
    if not 1 <= lo <= hi:
        raise ValueError(f"--sizes {args.sizes!r}: need 1 <= min <= max")
    if not 1 <= args.workloads <= WORKLOADS_MAX:
        raise ValueError(f"--workloads {args.workloads}: need 1 to {WORKLOADS_MAX:,}")
    if not 0 < args.comm_fraction <= 1:  # nan fails this too
        raise ValueError(f"--comm-fraction {args.comm_fraction}: must be in (0, 1]")
    # Whether a size in the range has near-cubic grids (job_sizes) is asked in main, once the
    # machine says how large a job can be: job_sizes factorises every size up to max.
    return [(f"{_machine_label(args.machine)}_{lo}-{hi}", args.machine, lo, hi, args.workloads, args.comm_fraction,
             args.a2a_dims)]


def _machine_label(machine: str) -> str:
    """``--machine`` as it may appear in a case's name, which names the study's folder and its
    part files: a conf/topo name as it is, a YAML path by its stem. Why: a path in the name put
    the part files beside the YAML (``conf/topo/ft6.yaml_2-4_w0.parquet``), outside the results."""
    path = Path(machine)
    return path.stem if path.suffix or len(path.parts) > 1 else machine


def settings(args: argparse.Namespace, todo: Sequence[tuple]) -> dict[str, Any]:
    """What the results depend on, as recorded in ``summary.json`` (JSON types)."""
    runs = [{"case": case, "machine": m, "sizes": [lo, hi], "workloads": n_wl, "comm_fraction": c, "a2a_dims": dims}
            for case, m, lo, hi, n_wl, c, dims in todo]
    return {"seed": args.seed, "oblivious": args.oblivious, "churn": args.churn, "workload_model": WORKLOAD_MODEL,
            "completion": args.completion, "runs": runs}


def _show(value: Any) -> str:
    """A recorded setting for the one-line refusal: runs compactly, anything else as is. A
    run shows every setting it records (another ``--a2a-dims`` read the same on both sides)."""
    try:
        return "[" + ", ".join(
            f"{r['case']} ({r['workloads']} workloads, comm-fraction {r['comm_fraction']:g}"
            + "".join(f", {k.replace('_', ' ')} {r[k]}" for k in r if k not in ("case", "workloads", "comm_fraction"))
            + ")" for r in value) + "]"
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
    old = outputs.stored_summary(out)
    if not isinstance(old, dict):
        return old
    recorded = {k: old[k] for k in ("seed", "oblivious", "churn", "workload_model", "completion", "runs") if k in old}
    # Before session 19 no model version was recorded: those folders hold version 1; before
    # session 23 every study timed steps at steady rates.
    recorded.setdefault("workload_model", 1)
    recorded.setdefault("completion", "steady")
    current = dict(now)
    if "runs" not in old and isinstance(old.get("cases"), dict):
        recorded["cases"] = sorted(old["cases"])
        current["cases"] = sorted(r["case"] for r in now["runs"])
    diff = _differences(recorded, current)
    if not diff:
        return None
    return f"{out} holds results made with other settings ({'; '.join(diff)}); use another --name or the original options"


#: Folder of a study's finished workloads (one parquet each) and its settings while it runs.
PARTS = "workloads"


def unfinished_conflict(out: Path, now: dict[str, Any]) -> str | None:
    """Why ``out`` must not resume the unfinished study it holds (its workloads were made with
    other settings than ``now``; a setting it did not record counts as None), or ``None``."""
    return outputs.unfinished_conflict(out, PARTS, now, lambda old, new: _differences({**dict.fromkeys(new), **old}, new))


def _differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``key: value there, value now`` for every recorded setting that ``now`` does not
    share (``now`` compared as JSON reads it back: tuples as lists)."""
    now = json.loads(json.dumps(now))
    return [f"{k}: {_show(recorded[k])} there, {_show(now.get(k))} now" for k in recorded if recorded[k] != now.get(k)]


def _fat_tree(name: str, oblivious: str) -> Any:
    """Fat-tree ``name`` (conf/topo), which ``ta`` and ``oblivious`` both serve (the policies
    compared); else a one-line ``ValueError``: an unknown name lists the fat-trees only (the
    topology loader's list named tori and dragonflies the study then refuses)."""
    try:
        topo = topology.load(name)
    except topology.TopologyError as err:
        if not str(err).startswith("unknown topology"):
            raise ValueError(str(err)) from None
        import yaml

        trees = [n for n in paths.config_names("topo")
                 if (yaml.safe_load(paths.config_file("topo", n).read_text()) or {}).get("kind") == "fattree"]
        raise ValueError(f"--machine {name}: unknown machine; the fat-trees of conf/topo: {', '.join(trees)}") from None
    if topo.kind != "fattree":  # ta, the paper's interference-free policy, is the fat-tree's
        raise ValueError(f"--machine {name}: a {topo.kind} machine; the network study compares ta with "
                         f"{oblivious} on fat-trees only (conf/topo: ft44, cab, pinot, ...)")
    for policy in ("ta", oblivious):
        policy_mod.make(policy, topo)
    return topo


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if not 0 <= args.seed <= SEED_MAX:
            raise ValueError(f"--seed must be from 0 to {SEED_MAX}, got {args.seed}")
        if not 0 <= args.churn <= CHURN_MAX:
            raise ValueError(f"--churn must be from 0 to {CHURN_MAX:,}, got {args.churn}")
        todo = cases(args)
        machines = {m: _fat_tree(m, args.oblivious) for _, m, *_ in todo}
    except (ValueError, FileNotFoundError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    name = args.name if args.name is not None else ("paper" if args.paper else todo[0][0])  # "" is refused below
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name.startswith("."):
        print(f"{PROG}: error: --name {name!r}: letters, digits, '.', '_' and '-' only, not starting with '.'", file=sys.stderr)
        return 2
    for case, m, lo, hi, *_ in todo:
        if hi > machines[m].n_nodes:
            print(f"{PROG}: error: {case}: jobs of up to {hi} nodes do not fit {m} ({machines[m].n_nodes} nodes): "
                  f"give --sizes MIN,MAX up to {machines[m].n_nodes}", file=sys.stderr)
            return 2
        # After the fit: job_sizes factorises every size up to hi (--sizes 1,10^12 never ended).
        if not len(job_sizes(lo, hi)[0]):
            print(f"{PROG}: error: --sizes '{lo},{hi}': no size in the range has near-cubic 3D and 4D process "
                  "grids", file=sys.stderr)
            return 2
    record = settings(args, todo)
    out = paths.results_dir() / "network_study" / name
    conflict = settings_conflict(out, record) or unfinished_conflict(out, record)
    if conflict:  # before the (minutes of) work, so nothing is computed only to be refused
        print(f"{PROG}: error: {conflict}", file=sys.stderr)
        return 2
    if outputs.report_if_finished(out, ("jobs.parquet",),
                                  lambda: "\n".join(report(summarize(pl.read_parquet(out / "jobs.parquet")),
                                                             record["runs"]))):
        return 0
    parts = out / PARTS
    n_all, rows, done = sum(n_wl for *_, n_wl, _, _ in todo), [], 0
    interrupt.armed()  # a command-line run: from here a Ctrl-C keeps the finished workloads
    try:
        outputs.start_parts("network_study", out, PARTS, record)
        for case, m, lo, hi, n_wl, c, dims in todo:
            for w in range(n_wl):
                # One file per finished workload: an interrupted study resumes after the last.
                part = parts / f"{case}_w{w}.parquet"
                kept = part.exists()
                if kept:
                    try:
                        new = pl.read_parquet(part, glob=False).to_dicts()
                    except (OSError, pl.exceptions.PolarsError) as err:
                        # Damaged (e.g. copied half): the workload is a function of the settings,
                        # so it is drawn again, the same as it was, rather than ending the study.
                        reason = outputs.first_line(err)
                        print(f"[network_study] {case}: workload {w + 1}/{n_wl}: {part} cannot be read ({reason}); "
                              "drawn again", file=sys.stderr, flush=True)
                        kept = False
                if not kept:
                    new = workload_rows(machines[m], case, w, lo, hi, c, args.seed, args.oblivious, dims, args.churn,
                                        args.completion)
                    atomic_write(part, lambda p: pl.DataFrame(new).write_parquet(p))
                rows.extend(new)
                done += 1
                print(f"[network_study] {case}: workload {w + 1}/{n_wl}{' (kept from an earlier run)' if kept else ''}",
                      file=sys.stderr, flush=True)
        table = pl.DataFrame(rows)
        summary = summarize(table)
        meta = {**record, "cases": summary, "fattorus": provenance.stamp()}
        atomic_write(out / "jobs.parquet", lambda p: table.write_parquet(p))
        atomic_write(out / "summary.json", json.dumps(meta, indent=1))
        shutil.rmtree(parts)  # jobs.parquet holds every workload now
    except OSError as err:
        print(f"{PROG}: error: cannot write {out}: {err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; {done} of {n_all} workloads kept in {parts}, "
              "re-run the same command to resume", file=sys.stderr)
        return 130
    print("\n".join(report(summary, record["runs"])))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    from fattorus.args import run_piped

    interrupt.exit_with(run_piped(main))  # quiet, exit 141, when stdout's reader closes early (| head -1)
