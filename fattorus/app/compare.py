"""Compare the policies of a study, per workload: ``python -m fattorus.app.compare RESULTS_DIR``.

Reads every finished trial under ``RESULTS_DIR`` (``summary.json`` + ``jobs.parquet``) and
writes one Markdown table per workload (``compare.md`` in ``RESULTS_DIR``, or ``--out``,
atomically; also printed): jobs, mean wait (hours, rounded as the report rounds them),
utilization (the torus paper's *scheduling efficiency*), mean APH (all jobs, and jobs of at
least ``--large`` nodes), the mean over those large jobs of each
job's maximum hops, the share of jobs whose
routes share a link with a concurrent job (``exposed``), the mean bounding-box fill where the
machine reports one, and the **break-even speedup** against a reference policy. Runs made
with ``speedup=model`` also get the **total system efficiency** (utilization × the model's
application efficiency, ``summary.json`` ``runtime_model.application_efficiency``): the
application side measured instead of assumed; where their jobs carry applications
(``speedup=model_apps``: ``jobs.parquet`` ``app`` and ``slowdown``), a second table per workload
gives each arm's **per-application speedup** over the reference (:func:`app_table`, the torus
paper's Table I). An arm run with several seeds (e.g. ``seed=0,1,2``)
has one row per seed, labelled ``seed=N``; the break-even speedup then compares each row with
the reference's run of the same seed.

Break-even: total system efficiency is scheduling efficiency x application efficiency (torus
paper, Section III-B). If a policy's placements run applications at their best (efficiency 1)
and the reference's at ``1/s``, the policy matches the reference's total system efficiency
when ``U_policy = U_ref / s``: the break-even speedup is ``s* = U_ref / U_policy`` (above 1:
the policy gives up utilization, and its applications must run ``s*`` times faster to pay
for it; the paper's reference [8] puts it at 1.25-1.3 for contiguous allocation). Where the
trials' jobs carry submit, start and end times, the tables also give the **steady
utilization** — over :func:`fattorus.analysis.metrics.steady_window`, from a quarter into the
submission span to the last submission: the paper's "steady state scheduling efficiency",
without the empty machine's fill-up and the final drain — and the break-even speedup from it.
Both break-evens presume the row ran the reference's run times: a row of another speedup
scenario than the reference's (another ``config.speedup``, or the same one with other
``config.speedup_edits``; two ``speedup=model`` arms are alike) has "–" there and one line
under the table says why (a ``v2`` arm against a ``none`` reference gave about ``v2``'s own
speedup, 1.16 on sweeps/smoke.yaml, not what its placements cost).
The reference must be one of the study's arms, named by its label or by its first whole words
where they begin only one label of a table (``to`` for ``to speedup=none``, but ``t`` names
no arm and ``ta`` not ``ta_tuned_x``; each workload's table
resolves it among its own arms, so ``to`` may be ``to speedup=none`` in one and ``to
speedup=v2`` in another): a ``--reference`` that names no arm, or several of one table, is refused
(exit 2, the labels present listed, and how many labels begin with it inside a word). The
default reference is first fit over the ALPS ordering (the torus paper's), else ``to`` (the
fat-tree paper's topology-oblivious policy); when neither names one arm, the tables have no
break-even column and one note on stderr says how to pick one. A workload without the
reference arm gets no break-even column either.
Folders whose ``summary.json`` has no ``config`` (QoS, network or dragonfly study results) are
not replay trials: they are skipped and counted, not reported as damaged.
Needs no ``conf/``: everything comes from the trials' own files.
Nothing is written outside a ``results/`` directory (:func:`fattorus.paths.under_results`, as
every ``--out``): for a ``RESULTS_DIR`` elsewhere the tables are printed, no ``compare.md``
written, and one note says so and how to keep them (``--out results/NAME.md``); an ``--out``
outside ``results/`` (or neither a folder nor a ``.md`` file) is refused, exit 2.

Exit status: 0 done; 2 a usage or input mistake (no results directory, no finished trial, a
``--reference`` naming no arm, an ``--out`` refused); 1 ``compare.md`` cannot be written (the
environment, as in the studies); 141 the reader of stdout went away (``... | head -1``), quietly, ``compare.md``
already written (:func:`fattorus.args.run_piped`).
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.app.compare")

import collections
import json
import math
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from fattorus import paths
from fattorus.analysis import metrics
from fattorus.args import OneLineParser, run_piped
from fattorus.files import atomic_write
from fattorus.report.labels import fmt_hours, policy_name
from fattorus.report.load import (WORKLOAD_SETTINGS, arm_settings, disambiguate, speedup_text, trial_draws_note,
                                  trials_n, with_arm_settings, workload_settings)


#: The command's name, first word of its error, note and interrupt lines.
PROG = "fattorus.app.compare"

DEFAULT_REFERENCE = "first_fit ordering=O2"
"""The torus paper's baseline (first fit over the ALPS default ordering); used when it is an arm."""
#: The default references in turn: the torus paper's (first fit over the ALPS ordering), then
#: the fat-tree paper's (``to``, topology-oblivious): the first that names one arm of the study.
DEFAULT_REFERENCES = (DEFAULT_REFERENCE, "to")


def default_reference(groups: Mapping[str, list[str]]) -> str:
    """The first of :data:`DEFAULT_REFERENCES` that names one arm (:func:`resolve_reference`)
    in some workload's table (``groups``: each workload's arm labels), else
    :data:`DEFAULT_REFERENCE` (which then names none: no break-even column, one note)."""
    return next((ref for ref in DEFAULT_REFERENCES if any(resolve_reference(arms, ref) for arms in groups.values())),
                DEFAULT_REFERENCE)


def label(config: dict[str, Any]) -> str:
    """One trial's policy (:func:`policy_name`) plus its ``ordering`` if it has one (``first_fit
    ordering=2Y``); the rows' labels, which tell arms apart by every differing setting, are
    :func:`arm_labels`."""
    params = config.get("policy_params") or {}
    shown = " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k == "ordering")
    return f"{policy_name(config)} {shown}".strip()


def arm_labels(summaries: list[dict[str, Any]]) -> list[str]:
    """Each trial's row label: its policy, ``ordering`` where it records one (the torus study's
    default reference names it), and every other setting that differs between trials of the
    same policy (``ta t1_pod_order=most``), by the report's own rule
    (:func:`fattorus.report.load.with_arm_settings`): two ``ta`` arms with other heuristics
    are two rows, and ``--reference`` names one of them. The speedup scenario, with what a run
    changed of its file (:func:`~fattorus.report.load.speedup_text`: ``x20{cap=256}``), counts
    as such a setting (``ta speedup=v2`` beside ``ta speedup=none``): a study may run one policy under
    several, and those runs are other arms, not seeds of one; and where the trials ran under
    several scenarios, every row shows its own (``to speedup=none`` beside ``ta speedup=v2``).
    A tuned config's run is named by its config (``ta_tuned_atlas2x_cab``), not by its
    heuristics."""
    settings = [arm_settings(s) for s in summaries]  # with the scenario and its edits (speedup_text)
    # Where the table holds runs of several scenarios, every row names its own: a `ta` run only
    # under V2 beside a `to` run under none read as plain `ta` against `to` (session 26 review).
    scenarios = {setting["speedup"] for setting in settings if "speedup" in setting}
    always = ("ordering", "speedup") if len(scenarios) > 1 else ("ordering",)
    return with_arm_settings([policy_name(s["config"]) for s in summaries], settings, always=always)


def resolve_reference(arms: list[str], reference: str) -> str | None:
    """The arm ``reference`` names: the arm of exactly that label, else the only arm whose label
    begins with ``reference`` as whole words, i.e. is ``reference`` followed by a space and
    settings (``to`` for ``to speedup=none`` where the table shows every run's scenario); None
    if it names no arm, or several. Whole words, not any start: ``ta`` must not name
    ``ta_tuned_x`` (another policy config) where no plain ``ta`` ran."""
    if reference in arms:
        return reference
    longer = {arm for arm in arms if arm.startswith(reference + " ")}
    return longer.pop() if len(longer) == 1 else None


def _no_arm(reference: str, labels: list[str]) -> str:
    """Why ``reference`` names no arm, for its error line: it is no label nor a label's first
    whole words, and, where labels begin with it only inside a word (``t`` of ``ta speedup=v2``),
    how many: the rule users are likeliest to have assumed (any start) is not the rule."""
    inside = sorted({lab for lab in labels if lab.startswith(reference)})
    if not inside:
        return "matches no arm (no label is it or begins with it)"
    return (f"matches no arm: {len(inside)} label(s) begin with it only inside a word (a reference is a whole "
            "label or its first whole words)")


def _named_reference(groups: Mapping[str, list[str]], reference: str, given: bool) -> tuple[dict[str, str], int]:
    """The arm label ``reference`` resolves to in each workload's table (``groups``: its arm
    labels; :func:`resolve_reference`, a note on stderr where it differs; a workload where it
    names none is left out) and an exit code: 2, with one line, for a reference the user gave
    (``given``) that names several arms of a table, or none in any; the default may name none.
    Each table is its own: ``to`` names ``to speedup=none`` in one and ``to speedup=v2`` in
    another (it named "2 arms" of the study, and no table got a break-even column)."""
    named = {wl: arm for wl, arms in groups.items() if (arm := resolve_reference(arms, reference)) is not None}
    several = {wl: [arm for arm in arms if arm.startswith(reference + " ")] for wl, arms in groups.items()
               if wl not in named and reference not in arms}
    several = {wl: arms for wl, arms in several.items() if len(arms) > 1}
    if given and (several or not named):
        where = next(iter(several), None)
        every = sorted({arm for arms in groups.values() for arm in arms})
        why = (f"names {len(several[where])} arms{f' of {where}' if len(groups) > 1 else ''}"
               if where is not None else _no_arm(reference, every))
        print(f"{PROG}: error: --reference '{reference}' {why}; labels present: {_quoted(every)}", file=sys.stderr)
        return named, 2
    for arm in sorted(set(named.values()) - {reference}):
        print(f"{PROG}: note: reference '{reference}' is the arm '{arm}'", file=sys.stderr)
    return named, 0


def workload_label(config: dict[str, Any]) -> str:
    """``atlas x19.5672 on bluewaters``: the scale factor actually used, to six digits as the
    report's labels (:func:`fattorus.report.labels.workload_label`) — at four, x2 and x2.0004
    shared a table and one was the other's reference (session 47's audit) — and where a run
    made before the factor was recorded has none, its ``scale`` setting (it read x1)."""
    wl = config["workload"]
    scale = wl.get("scale_factor", wl.get("scale", 1))
    try:
        shown = f"{float(scale):g}"
    except (TypeError, ValueError):  # a word (fit, machine) from a run that did not record the factor
        shown = str(scale)
    return f"{wl['name']} x{shown} on {config['topo']}"


def trial_row(trial: Path, large: int) -> dict[str, Any] | None:
    """One table row from a finished trial directory, or None if it is not one."""
    summary_file, jobs_file = trial / "summary.json", trial / "jobs.parquet"
    if not (summary_file.is_file() and jobs_file.is_file()):
        return None
    return _row(json.loads(summary_file.read_text()), jobs_file, large)


def is_replay(summary: Any) -> bool:
    """Whether a parsed ``summary.json`` belongs to a replay trial.

    Replay trials record their ``config``; the QoS, network and dragonfly studies write a
    ``summary.json`` and ``jobs.parquet`` of their own without one, and are no trial to compare
    (nor damaged ones). A summary that is not a JSON object at all counts as a replay summary,
    so that it is reported as damaged rather than silently passed over.
    """
    return not isinstance(summary, dict) or "config" in summary


def _row(summary: dict[str, Any], jobs_file: Path, large: int) -> dict[str, Any]:
    """The table row of a trial whose ``summary.json`` is already parsed."""
    jobs = pl.read_parquet(jobs_file, glob=False)
    big = jobs.filter(pl.col("nodes") >= large)
    row = {
        "workload": workload_label(summary["config"]),
        "policy": label(summary["config"]),
        "jobs": jobs.height,
        "wait_h": float(jobs["wait_s"].mean()) / 3600,
        "util": float(summary["utilization"]["mean"]),
        "aph": float(jobs["aph"].mean()),
        "aph_large": float(big["aph"].mean()) if big.height else float("nan"),
        "max_hops_large": float(big["max_hops"].mean()) if big.height and "max_hops" in jobs.columns else float("nan"),
        "exposed": float(jobs["exposed"].mean()),
        "bbox_fill": float(jobs["bbox_fill"].mean()) if "bbox_fill" in jobs.columns else float("nan"),
    }
    model = summary.get("runtime_model") or {}
    app = model.get("application_efficiency")
    row["system_eff"] = row["util"] * float(app) if app is not None else None
    if {"app", "slowdown"} <= set(jobs.columns) and model.get("comm_fraction") is not None:
        # Each application's mean run-time factor (1 - c) + c * slowdown over its jobs: the
        # speed its placements gave it, before any cut at the estimate. Each job's own c where
        # the run recorded it (a c by pattern, size or range), else the run's one c.
        c = pl.col("comm_fraction") if "comm_fraction" in jobs.columns else float(model["comm_fraction"])
        per_app = (jobs.filter(pl.col("app").is_not_null() & pl.col("slowdown").is_finite())
                   .group_by("app").agg(((1 - c) + c * pl.col("slowdown")).mean().alias("factor"), pl.len().alias("n")))
        row["apps"] = {a: (float(f), int(n)) for a, f, n in per_app.iter_rows()}
    capacity = summary.get("usable_nodes", summary.get("n_nodes"))
    if capacity and jobs.height and {"submit_s", "start_s", "end_s"} <= set(jobs.columns):
        t0, t1 = metrics.steady_window(jobs["submit_s"].to_numpy())
        row["steady_util"] = metrics.window_utilization(jobs["start_s"].to_numpy(), jobs["end_s"].to_numpy(),
                                                        jobs["nodes"].to_numpy(), int(capacity), t0, t1)
    return row


def workload_labels(summaries: list[dict[str, Any]]) -> list[str]:
    """Each trial's workload label (:func:`workload_label`), with the time window, scheduler,
    node kind, cores per node or log appended where trials sharing a label differ in it
    (``atlas x2 on cab [days 7–14]``), by the report's own rule
    (:func:`fattorus.report.load.disambiguate`): such trials are other workloads, each with its
    own reference, not seeds of one."""
    rows = [{"workload": workload_label(s["config"]), "sched": s["config"].get("sched"),
             **workload_settings(s["config"]["workload"])} for s in summaries]
    frame = pl.DataFrame(rows, schema={"workload": pl.String, "sched": pl.String, **WORKLOAD_SETTINGS})
    return disambiguate(frame)["workload"].to_list()


def with_seeds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose arm (``policy`` label) has several seeds in one workload get ``seed=N`` in
    their label (``seed=?`` where a trial recorded none), so that runs of other seeds read
    apart; ``arm`` keeps the label without it (what ``--reference`` names). Repeated runs of
    one arm and seed still share a label (:func:`repeated` names them)."""
    seeds: dict[tuple[str, str], set[Any]] = {}
    for r in rows:
        seeds.setdefault((r["workload"], r["policy"]), set()).add(r.get("seed"))

    def shown(r: dict[str, Any]) -> str:
        seed = r.get("seed")
        return f"{r['policy']} seed={'?' if seed is None else seed}"

    return [{**r, "arm": r["policy"],
             "policy": shown(r) if len(seeds[(r["workload"], r["policy"])]) > 1 else r["policy"]} for r in rows]


def repeated(rows: list[dict[str, Any]]) -> list[str]:
    """Row labels that occur more than once in one workload (the same arm and seed run twice,
    e.g. in two folders of the results directory), as ``workload: label (n rows)``."""
    counts = Counter((r["workload"], r["policy"]) for r in rows)
    return [f"{wl}: {lab} ({n} rows)" for (wl, lab), n in sorted(counts.items()) if n > 1]


def _seed_order(r: dict[str, Any]) -> tuple[bool, Any]:
    """Sort key: seeds in order, a row without one last."""
    seed = r.get("seed")
    return (not isinstance(seed, int), seed if isinstance(seed, int) else 0)


#: What ``--help`` says the command does.
DESCRIPTION = ("Compare the policies of a study, per workload: one table per workload, printed and written to "
               "compare.md in the results directory (or --out; nothing is written outside a results/ directory).")


#: Below this utilization of the reference (steady where known) a table's break-even gets a
#: line saying it reads little: the fat-tree paper's break-even assumes a machine whose
#: utilization the scheduler limits (~80 % on its whole logs); on a half-idle one it is ~1
#: whatever the placements cost (session 47's operator run: 1.007 beside +38 % mean wait).
UNSATURATED = 0.5


def _cell(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``, or "–" where it has no value (None, e.g. no system
    efficiency without the bandwidth model; NaN: no job of that size, or a metric the machine's
    family does not define, e.g. bounding-box fill off a torus)."""
    return "–" if value is None or math.isnan(value) else format(value, spec)


def table(rows: list[dict[str, Any]], references: Mapping[str, str], large: int) -> str:
    """The Markdown tables, one per workload, with the break-even speedup against its
    reference arm (``references``: workload -> arm label).

    A workload without one gets no break-even column: a column of ``nan`` would read as a result. Where the reference arm
    ran with several seeds, a row is compared with the reference's run of its own seed (the
    same workload draw); a row whose seed the reference lacks is compared with the
    reference's first seed and marked ``†``, with a line under the table saying so. A row
    whose run times are not the reference's in kind (another speedup scenario, or the same
    one edited otherwise: its ``scenario``, :func:`~fattorus.report.load.speedup_text`) gets
    "–" in both break-even cells, with one line under the table saying why: the break-even
    presumes the arm ran the reference's run times, and a ``v2`` arm against a ``none``
    reference gave about the scenario's own speedup (1.16 on sweeps/smoke.yaml), not what
    its placements cost. Nor between ``speedup=model`` arms (run times from each arm's own
    placements): "–", and a line pointing at their system efficiency.
    """
    out = []
    for wl in sorted({r["workload"] for r in rows}):
        reference = references.get(wl)
        group = sorted((r for r in rows if r["workload"] == wl),
                       key=lambda r: (r.get("arm", r["policy"]), _seed_order(r)))
        refs = sorted((r for r in group if r.get("arm", r["policy"]) == reference), key=_seed_order)
        ref = refs[0] if refs else None
        same_seed = " (same seed)" if len(refs) > 1 else ""
        steady = all(r.get("steady_util") is not None for r in group)
        even_head, even_rule = (f" break-even vs {reference}{same_seed} |", "---:|") if ref else ("", "")
        if steady:  # needs no reference: a study without one (a dragonfly study's) shows it too
            even_head, even_rule = even_head + " steady utilization |", even_rule + "---:|"
            if ref:
                even_head, even_rule = even_head + " break-even (steady) |", even_rule + "---:|"
        modelled = any(r.get("system_eff") is not None for r in group)
        eff_head, eff_rule = (" system efficiency |", "---:|") if modelled else ("", "")
        out += [f"### {wl}", "",
                f"| policy | jobs | mean wait (h) | utilization |{eff_head} APH | APH (>= {large} nodes) | "
                f"mean max hops (>= {large} nodes) | exposed | bbox fill |{even_head}",
                f"|---|---:|---:|---:|{eff_rule}---:|---:|---:|---:|---:|{even_rule}"]
        fallback = model_rows = False
        other_times: set[str] = set()  # the scenarios of the rows left without a break-even
        for r in group:
            eff = f" {_cell(r.get('system_eff'), '.1%')} |" if modelled else ""
            line = (f"| {r['policy']} | {r['jobs']} | {fmt_hours(r['wait_h'])} | {r['util']:.1%} |{eff} {r['aph']:.2f} | "
                    f"{_cell(r['aph_large'], '.2f')} | {_cell(r['max_hops_large'], '.1f')} | {r['exposed']:.1%} | "
                    f"{_cell(r['bbox_fill'], '.2f')} |")
            mine, mark, alike = None, "", True
            if ref:
                mine = next((x for x in refs if x.get("seed") == r.get("seed")), None)
                if mine is None:  # no reference run of this seed: its first seed's, marked
                    mine, mark = ref, "†" if len(refs) > 1 else ""
                # s* = U_ref / U_row presumes the row ran the reference's run times; under
                # another scenario its jobs were already sped up (or slowed), and the ratio is
                # mostly that assumed speedup: no value rather than a misleading one.
                alike = r.get("scenario") == mine.get("scenario")
                if not alike:
                    other_times.add(str(r.get("scenario")))
                    mark = ""
                elif r.get("system_eff") is not None or mine.get("system_eff") is not None:
                    # Run times from the bandwidth model are each arm's own placements' (session
                    # 47's audit: TA "0.998" beside system efficiencies 30.5 % / 33.4 %).
                    alike, mark, model_rows = False, "", True
                fallback |= bool(mark)
                even = mine["util"] / r["util"] if alike and r["util"] > 0 else float("nan")
                line += f" {_cell(even, '.3f')}{mark} |"
            if steady:
                line += f" {_cell(r['steady_util'], '.1%')} |"  # NaN: a window too short to have a steady part
                if mine is not None:
                    even = (mine["steady_util"] / r["steady_util"] if alike and r["steady_util"] > 0
                            else float("nan"))
                    line += f" {_cell(even, '.3f')}{mark} |"
            out.append(line)
        out += _notes(ref, fallback, other_times, model_rows, steady)
        out.append("")
    return "\n".join(out)


def _notes(ref: dict[str, Any] | None, fallback: bool, other_times: set[str], model_rows: bool,
           steady: bool) -> list[str]:
    """The lines under a workload's table (each after an empty line): why some rows have no
    break-even or a fallback reference, when the break-even reads little (a half-idle
    machine: :data:`UNSATURATED`), and what the steady utilization is."""
    notes = []
    if fallback:
        notes.append(f"† against the reference's seed={ref.get('seed')} run: it has no run of the row's seed.")
    if other_times:
        notes.append(f"Break-even left – for rows run under speedup={', '.join(sorted(other_times))} (the reference: "
                     f"speedup={ref.get('scenario')}): their run times are not the reference's, so the utilization "
                     "ratio would mostly be the speedup one scenario assumes over the other, not what the "
                     "placements cost (compare them with a reference of their own scenario: --reference).")
    steady_ref = ref is not None and ref.get("steady_util") is not None
    busy = None if ref is None else ref["steady_util"] if steady_ref else ref.get("util")
    if busy is not None and not math.isnan(busy) and busy < UNSATURATED:
        notes.append(f"The reference ran at {busy:.0%} utilization{' (steady)' if steady_ref else ''}: on a machine "
                     "that is not saturated, utilization follows the log's demand and the break-even stays near 1 "
                     "whatever the placements cost; read the waits (and, with the bandwidth model, system "
                     "efficiency) instead.")
    if model_rows:
        notes.append("Break-even left – between arms whose run times come from the bandwidth model (a model "
                     "scenario): each arm's run times are its own placements', so a utilization ratio is not the "
                     "speedup its placements would need; compare their system efficiency.")
    if steady:
        notes.append(f"Steady utilization: the window from {metrics.STEADY_WARMUP:.0%} into the submission span to the "
                     "last submission (no fill-up, no drain; `metrics.steady_window`).")
    return [part for note in notes for part in ("", note)]


def app_table(rows: list[dict[str, Any]], references: Mapping[str, str]) -> str:
    """Per application, each arm's speedup over its workload's reference arm (``references``; Markdown, one table per workload
    whose trials all carry applications: ``speedup=model_apps`` runs). An application's
    speedup is the reference's mean run-time factor ``(1 - c) + c * slowdown`` over its jobs
    divided by the arm's (above 1: its jobs run faster than under the reference): the torus
    paper's Table I, which gave 2Y and 4Y per application over O2. Rows of several seeds are
    compared with the reference's run of the same seed (else its first); ``jobs`` counts the
    reference's; the last line is the plain mean over the applications (the paper's
    "AVERAGE"). Applications missing from any arm's run are left out."""
    out = []
    for wl in sorted({r["workload"] for r in rows}):
        reference = references.get(wl)
        group = sorted((r for r in rows if r["workload"] == wl),
                       key=lambda r: (r.get("arm", r["policy"]), _seed_order(r)))
        refs = [r for r in group if r.get("arm", r["policy"]) == reference]
        if not refs or not all("apps" in r for r in group):
            continue
        others = [r for r in group if all(r is not x for x in refs)]
        apps = sorted(set.intersection(*(set(r["apps"]) for r in group)))
        if not apps:
            continue
        out += [f"### {wl}: per application, speedup over {reference}", "",
                "| application | jobs | " + " | ".join(r["policy"] for r in others) + " |",
                "|---|---:|" + "---:|" * len(others)]
        # One column per row (two rows may share a label: the same arm and seed run twice).
        mine = [next((x for x in refs if x.get("seed") == r.get("seed")), refs[0]) for r in others]
        speedups = [[m["apps"][app][0] / r["apps"][app][0] for app in apps] for m, r in zip(mine, others)]
        for k, app in enumerate(apps):
            out.append(f"| {app} | {refs[0]['apps'][app][1]} | " + " | ".join(f"{col[k]:.2f}" for col in speedups) + " |")
        out.append("| mean over applications | | " + " | ".join(f"{sum(v) / len(v):.2f}" for v in speedups) + " |")
        out.append("")
    return "\n".join(out)


def _quoted(labels: Any) -> str:
    """``'first_fit ordering=O2', 'prism'``: labels hold spaces, so each is quoted."""
    return ", ".join(f"'{x}'" for x in sorted(set(labels)))


def _defaults_named(rows: list[dict[str, Any]]) -> str:
    """Why no default reference (:data:`DEFAULT_REFERENCES`) names one arm of ``rows``: what
    each names (none, or several: ``to`` is ambiguous beside ``to speedup=none`` and ``to
    speedup=v2``)."""
    arms = sorted({r.get("arm", r["policy"]) for r in rows})
    said = []
    for ref in DEFAULT_REFERENCES:
        several = [a for a in arms if a == ref or a.startswith(ref + " ")]
        said.append(f"'{ref}' names {len(several)} arms ({_quoted(several)})" if len(several) > 1
                    else f"'{ref}' is not an arm")
    return "no default reference names one arm of this study: " + ", ".join(said)


def check_reference(rows: list[dict[str, Any]], reference: str, named: Mapping[str, str],
                    given: bool) -> tuple[dict[str, str], list[str], int]:
    """Each workload's reference arm (``named``: :func:`_named_reference`'s, kept where the rows
    read still hold that arm), the notes to print (stderr), and an exit code (0: go on).

    A reference the user gave that names no arm is a mistake (exit 2, one line listing the
    labels); the default naming no arm (any non-torus study) drops the break-even column
    with one note saying how to choose a reference. Workloads lacking a reference that other
    workloads have get a note naming them (their tables have no break-even column).
    """
    arms = sorted({r.get("arm", r["policy"]) for r in rows})
    labels = _quoted(arms)
    workloads = {r["workload"] for r in rows}
    present = {(r["workload"], r.get("arm", r["policy"])) for r in rows}
    refs = {wl: arm for wl, arm in named.items() if (wl, arm) in present}
    if not refs:
        if given:  # its only arms were damaged trials: the same one error line as before reading them
            return {}, [f"{PROG}: error: --reference '{reference}' {_no_arm(reference, arms)}; "
                        f"labels present: {labels}"], 2
        return {}, [f"{PROG}: note: no break-even column: {_defaults_named(rows)}; choose one with "
                    f"--reference LABEL (labels present: {labels})"], 0
    lacking = []
    for wl in sorted(workloads - set(refs)):
        several = sorted({arm for w, arm in present if w == wl and arm.startswith(reference + " ")})
        lacking.append(f"{wl}: '{reference}' names {len(several)} arms there" if len(several) > 1
                       else f"{wl}: no arm '{reference}' there")
    notes = [f"{PROG}: note: no break-even column for {'; '.join(lacking)}"] if lacking else []
    return refs, notes, 0


def _parser() -> OneLineParser:
    """The command line's options (:func:`main`)."""
    p = OneLineParser(prog="python -m fattorus.app.compare", error_prefix=PROG,
                      description=DESCRIPTION)
    p.add_argument("results", type=Path, help="a study's results directory (results/sweeps/NAME)")
    # default None, not the label itself: a reference the user gave must match an arm, the default need not
    p.add_argument("--reference", default=None,
                   help="the arm to compare against: its label, or its first whole words where they begin only one "
                        "label of a table ('to' for 'to speedup=none'; part of a word names none: 't' is not 'ta', "
                        "'ta' not 'ta_tuned_x') "
                        f"(default: '{DEFAULT_REFERENCE}', first fit over the ALPS default ordering, where the study "
                        "has that arm, else 'to', the topology-oblivious policy)")
    p.add_argument("--large", type=int, default=1024, help="jobs of at least this many nodes count as large (>= 1)")
    p.add_argument("--out", type=Path, default=None,
                   help="where to write the tables (a .md file, or a folder to hold compare.md), under a results/ "
                        "directory (default RESULTS/compare.md; not written where RESULTS lies outside results/)")
    return p


def _summaries(results: Path) -> tuple[list[tuple[Path, dict[str, Any]]], int, list[Path]]:
    """The replay trials under ``results`` with their ``summary.json`` (a finished trial's:
    ``jobs.parquet`` beside it), how many were damaged (each named on stderr), and the folders
    of other tools' results."""
    found, skipped, others = [], 0, []
    for t in sorted(results.rglob("summary.json")):
        if not (t.parent / "jobs.parquet").is_file():
            continue  # an unfinished trial (or another tool's folder): not a row, as before
        try:
            summary = json.loads(t.read_text())
            if not is_replay(summary):
                others.append(t.parent)
                continue
            label(summary["config"]), workload_label(summary["config"])  # without them: a damaged trial
            found.append((t.parent, summary))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            skipped += 1
            _warn_skipped(t.parent, err)
    return found, skipped, others


def main(argv: list[str] | None = None) -> int:
    """Command line entry; one-line errors: exit 2 for a usage or input mistake, 1 when
    ``compare.md`` cannot be written (see the module's exit statuses)."""
    p = _parser()
    a = p.parse_args(argv)
    if a.large < 1:
        p.error(f"--large {a.large}: give a node count >= 1")
    if not a.results.is_dir():
        why = "not a directory (give a study's results directory)" if a.results.exists() else "no such results directory"
        print(f"{PROG}: error: {a.results}: {why}", file=sys.stderr)
        return 2
    # Nothing is written outside the results: a RESULTS folder elsewhere (a copy in /tmp) is
    # still compared and printed, with a note; an --out elsewhere is refused before any read.
    target, said, code = paths.markdown_target(a.results, a.out, PROG, "compare.md")
    if code:
        print(said, file=sys.stderr)
        return code
    # First the summaries only (cheap): a --reference naming no arm is refused before any jobs.parquet is read.
    found, skipped, others = _summaries(a.results)
    labels = arm_labels([summary for _, summary in found])
    workloads = workload_labels([summary for _, summary in found])
    trials = [(trial, summary, lab, wl) for (trial, summary), lab, wl in zip(found, labels, workloads)]
    groups = {wl: sorted({lab for lab, w in zip(labels, workloads) if w == wl}) for wl in set(workloads)}
    reference, given = (a.reference, True) if a.reference is not None else (default_reference(groups), False)
    named, code = _named_reference(groups, reference, given and bool(trials))
    if code:
        return code
    rows = []
    for trial, summary, lab, wl in trials:
        try:
            # scenario: the kind of run times the row ran (the break-even compares only alike ones)
            rows.append({**_row(summary, trial / "jobs.parquet", a.large), "policy": lab, "workload": wl,
                         "seed": summary["config"].get("seed"), "scenario": speedup_text(summary["config"])})
        except (OSError, ValueError, KeyError, TypeError, AttributeError, pl.exceptions.PolarsError) as err:
            skipped += 1
            _warn_skipped(trial, err)
    if others:
        print(f"{PROG}: note: {len(others)} folder(s) skipped as not replay runs (summary.json has no config: "
              f"QoS, network or dragonfly study results), first {others[0]}", file=sys.stderr)
    if skipped:
        print(f"{PROG}: {skipped} damaged trial(s) skipped", file=sys.stderr)
    draws = trial_draws_note([(str(trial), trials_n(summary)) for trial, summary, _, _ in trials])
    if draws:
        print(f"{PROG}: note: {draws}", file=sys.stderr)
    made = _sources([summary for _, summary, _, _ in trials])
    if made:
        print(f"{PROG}: note: {made}", file=sys.stderr)
    if not rows:
        print(f"{PROG}: error: {a.results}: no finished trial (summary.json + jobs.parquet)", file=sys.stderr)
        return 2
    # Checked again on the rows read: the reference's only trials may have been damaged ones.
    refs, notes, code = check_reference(rows, reference, named, given)
    for note in notes:
        print(note, file=sys.stderr)
    if code:
        return code
    rows = with_seeds(rows)
    twice = repeated(rows)
    if twice:
        print(f"{PROG}: note: {len(twice)} label(s) name several trials (the same arm and seed run more than "
              f"once): {'; '.join(twice[:3])}{'; ...' if len(twice) > 3 else ''}", file=sys.stderr)
    text = table(rows, refs, a.large)
    by_app = app_table(rows, refs)
    if by_app:
        text += "\n" + by_app
    if target is None:  # RESULTS lies outside results/: printed only (the note says how to keep it)
        print(said, file=sys.stderr)
        print(text)
        return 0
    try:
        atomic_write(target, text + "\n")
    except OSError as err:
        # The environment (read-only folder, full disk, a folder in the file's place), not the
        # user's input: exit 1, as the network and dragonfly studies; 2 stays for usage mistakes.
        print(f"{PROG}: error: {target}: cannot write: {err.strerror or one_line(err)}", file=sys.stderr)
        return 1
    print(text)
    return 0


def _sources(summaries: list[dict]) -> str | None:
    """A note when the trials were made by more than one fattorus source (``summary.json``'s
    ``fattorus.source``, :mod:`fattorus.provenance`): a difference between arms may then be a
    change of code, not of policy. None when one source (or none recorded) made them all."""
    def source(summary: dict) -> str:
        made = summary.get("fattorus")
        return str(made.get("source")) if isinstance(made, dict) and made.get("source") else "unrecorded"

    counts = collections.Counter(source(s) for s in summaries)
    if len(counts) < 2:
        return None
    each = ", ".join(f"{src}: {n}" for src, n in counts.most_common())
    return (f"these trials were made by {len(counts)} fattorus sources ({each} trials): differences between them "
            "may come from the code; re-run the older ones (delete their folders) to compare like with like")


def _warn_skipped(trial: Path, err: BaseException) -> None:
    """A damaged trial (cut parquet, bad JSON, missing fields): counted and named, not fatal."""
    print(f"{PROG}: warning: skipped {trial}: {one_line(err)}", file=sys.stderr)


def one_line(err: BaseException) -> str:
    """An exception as one short line (the one-line error contract)."""
    return " ".join(str(err).split())[:200] or type(err).__name__


if __name__ == "__main__":
    sys.exit(run_piped(lambda: interrupt.run(PROG, main)))  # quiet, exit 141, when stdout's reader closes early (| head -1)


__all__ = ["DEFAULT_REFERENCE", "arm_labels", "check_reference", "is_replay", "label", "main", "table", "trial_row",
           "workload_label"]
