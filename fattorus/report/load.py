"""Reading run directories into Polars tables: one row per run, and lazy scans of their jobs.

A run directory holds ``summary.json``, ``jobs.parquet`` and ``utilization.parquet``
(``docs/outputs.md``). Everything the report knows about a machine comes from there: the
run's ``config``, the ``topology`` config the engine records and the ``ideal_aph`` column of
``jobs.parquet``; nothing is looked up in ``conf/``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from fattorus.report.labels import LABEL_ORDER, policy_name, run_label, topo_name, workload_label

RUN_FILES = ("summary.json", "jobs.parquet", "utilization.parquet")
SECONDS_PER_HOUR = 3600.0
OPTIONAL_JOB_COLUMNS = {"ideal_aph": pl.Float64}
"""Job columns older outputs lack; a scan fills them with nulls (``docs/decisions.md``)."""
REQUIRED_COLUMNS = {
    "jobs.parquet": ("submit_s", "end_s", "wait_s", "aph", "nodes"),
    "utilization.parquet": ("utilization",),
}
"""The columns the report reads from each table; a run lacking one is damaged (checked per run,
so the run is named and ``--skip-bad`` can skip it, not found while combining runs)."""


class ReportError(Exception):
    """A problem with the inputs, reported as one line and exit code 2 (its subclass
    ``fattorus.report.ReportWriteError``, output that cannot be written, exits 1)."""


def _scale(workload: Mapping[str, Any]) -> float | None:
    """The run's node-count factor: the resolved ``scale_factor`` where recorded, else a numeric
    ``scale``; None when only a word (``fit``, ``machine``) was recorded."""
    value = workload.get("scale_factor", workload.get("scale", 1)) or 1
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def one_line(err: BaseException) -> str:
    """An exception as a single line (for the one-line error contract)."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


def find_run_dirs(results_dir: str | os.PathLike) -> list[Path]:
    """Every directory under ``results_dir`` (itself included) holding all of :data:`RUN_FILES`, sorted."""
    root = Path(results_dir)
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if all(name in filenames for name in RUN_FILES):
            found.append(Path(dirpath))
    return sorted(found)


def read_summary(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a run, checked to hold a ``config`` with ``policy`` and ``topo``."""
    path = run_dir / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: unreadable: {one_line(err)}") from None
    config = summary.get("config") if isinstance(summary, dict) else None
    if not isinstance(config, dict) or "policy" not in config or "topo" not in config:
        raise ReportError(f"{path}: no config.policy / config.topo (see docs/outputs.md)")
    return summary


def _expected_rows(summary: Mapping[str, Any]) -> dict[str, int | None]:
    """Row count of each table as the summary recorded it (``files.<name>.rows``, else for
    ``jobs.parquet`` ``counts.replayed``), None where not recorded: the rule of
    ``fattorus.app.outputs.check_complete``, which the sweep resumes by."""
    files, counts = _mapping(summary.get("files")), _mapping(summary.get("counts"))
    expected: dict[str, int | None] = {}
    for name in REQUIRED_COLUMNS:
        rows = _mapping(files.get(name)).get("rows")
        if rows is None and name == "jobs.parquet":
            rows = counts.get("replayed")
        # bool is an int to Python, never a row count
        expected[name] = rows if isinstance(rows, int) and not isinstance(rows, bool) else None
    return expected


def table_problem(run_dir: Path, summary: Mapping[str, Any]) -> str | None:
    """Why the run's tables are not those of a finished replay (one line), or None.

    Reads only the Parquet footers (schema and row count). A table lacking a column the report
    reads, with another row count than ``summary.json`` records, or with no row at all, is
    damaged: a finished replay has at least one job (the sweep refuses one with none) and so at
    least one utilization sample; reporting such a run would show "—" as if it were a result.
    A table that cannot be read raises :class:`ReportError` naming the file.
    """
    expected = _expected_rows(summary)
    for name, columns in REQUIRED_COLUMNS.items():
        try:
            scan = pl.scan_parquet(run_dir / name, glob=False)
            names = scan.collect_schema().names()
            rows = scan.select(pl.len()).collect().item()
        except Exception as err:  # noqa: BLE001 - polars raises several kinds; all mean "unreadable"
            raise ReportError(f"{run_dir / name}: unreadable parquet: {one_line(err)}") from None
        missing = [c for c in columns if c not in names]
        if missing:
            return f"{name} lacks column(s) {', '.join(missing)}"
        if expected[name] is not None and rows != expected[name]:
            return f"{name} has {rows} rows, summary.json says {expected[name]}"
        if rows == 0:
            return f"{name} has no rows"
    return None


def job_metrics(path: Path) -> dict[str, Any]:
    """Mean/median wait (hours), makespan (hours), mean APH (hops), job count of one ``jobs.parquet``.

    ``has_ideal_aph`` says whether the file has the ``ideal_aph`` column (outputs written
    before the engine added it do not).
    """
    scan = pl.scan_parquet(path, glob=False)
    frame = scan.select(
        jobs=pl.len(),
        wait_mean_h=pl.col("wait_s").mean() / SECONDS_PER_HOUR,
        wait_median_h=pl.col("wait_s").median() / SECONDS_PER_HOUR,
        makespan_h=(pl.col("end_s").max() - pl.col("submit_s").min()) / SECONDS_PER_HOUR,
        aph_mean=pl.col("aph").mean(),
    ).collect()
    return {**frame.row(0, named=True), "has_ideal_aph": "ideal_aph" in scan.collect_schema().names()}


def utilization_metrics(path: Path) -> dict[str, Any]:
    """Mean and median of the per-minute utilization (fraction 0..1) of one ``utilization.parquet``."""
    frame = (
        pl.scan_parquet(path, glob=False)
        .select(util_mean=pl.col("utilization").mean(), util_median=pl.col("utilization").median())
        .collect()
    )
    return frame.row(0, named=True)


def skipped_total(counts: Mapping[str, Any]) -> int | None:
    """Total of ``counts.skipped`` (a number or a mapping reason -> number)."""
    skipped = counts.get("skipped")
    if isinstance(skipped, Mapping):
        return int(sum(v for v in skipped.values() if isinstance(v, (int, float))))
    return int(skipped) if isinstance(skipped, (int, float)) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


MODEL_SETTINGS = ("comm_fraction", "patterns")
"""The flow model's settings (``speedup=model``) that ``summary.json`` records under
``runtime_model`` (``config.speedup`` holds only the scenario's name); its other entries are results."""


def _setting_text(value: Any) -> str:
    """A setting's value as label text: strings as they are, numbers without a spurious ``.0``
    (Hydra records ``1`` or ``1.0`` for the same setting), anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value)).removesuffix(".0")
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as ``dotted.name -> value text``."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        out.update(_flat(value, f"{name}.") if isinstance(value, Mapping) else {name: _setting_text(value)})
    return out


def speedup_text(config: Mapping[str, Any]) -> str:
    """A run's speedup scenario as label text: its name, followed by what the run changed of
    the scenario's file (``config.speedup_edits``) as ``{path=value, ...}``
    (``x20{classes.0.min_nodes=4096}``): a scenario edited on the command line is another one."""
    edits = _mapping(config.get("speedup_edits"))
    shown = ", ".join(f"{k}={_setting_text(v)}" for k, v in sorted(edits.items()))
    return f"{config.get('speedup', 'none')}{{{shown}}}" if shown else str(config.get("speedup", "none"))


def arm_settings(summary: Mapping[str, Any]) -> dict[str, str]:
    """The settings that tell a run's arm from other arms of its policy and speedup scenario.

    Every ``config.policy_params`` entry (first fit's ``ordering``, ``ta``'s heuristics, prism's
    fill: what a study's ``arms`` set besides the policy) and, under ``speedup=model``, the
    model's :data:`MODEL_SETTINGS`, as ``name -> value text``; and ``speedup``
    (:func:`speedup_text`) where the summary records the scenario: runs of one label share the
    scenario's name, so it shows only what a run changed of it. Why not only ``ordering`` (as
    ``compare`` shows): any parameter of a policy makes another arm, and runs of two arms merged
    under one label would be averaged as seeds. The other settings that change results are the
    workload's (machine, log, scale, window, node kind, cores per node) and the scheduler, told
    apart by the workload label (:func:`workload_label`, :func:`disambiguate`); the rest are not
    settings (seed, study, parse counts).
    """
    config = _mapping(summary.get("config"))
    settings = _flat(_mapping(config.get("policy_params")))
    model = _mapping(summary.get("runtime_model"))
    settings.update({k: _setting_text(model[k]) for k in MODEL_SETTINGS if k in model})
    if "speedup" in config:
        settings["speedup"] = speedup_text(config)
    return settings


def with_arm_settings(labels: Sequence[str], settings: Sequence[Mapping[str, str]],
                      always: Sequence[str] = ()) -> list[str]:
    """Each label followed by the settings (:func:`arm_settings`) whose values differ between
    the runs of that label, and those named in ``always`` where a run records them, as
    ``name=value`` sorted by name; a run that does not record a setting the others differ in
    leaves it out, or shows ``?`` where leaving it out would give two arms one name (never
    merged with them). The report's labels and ``fattorus.app.compare``'s
    rows both come from here, so one arm has one name in both."""
    shown: dict[str, list[str]] = {}
    for base in set(labels):
        group = [s for s, label in zip(settings, labels) if label == base]
        names = sorted({name for s in group for name in s})
        shown[base] = [n for n in names if len({s.get(n) for s in group}) > 1 or (n in always and any(n in s for s in group))]
    full = [" ".join([label, *(f"{n}={s.get(n, '?')}" for n in shown[label])]) for label, s in zip(labels, settings)]
    # Without the "?"s where that merges no two arms (a model run's comm_fraction beside a run
    # without the model: "to comm_fraction=? patterns=? speedup=none" said little more than
    # "to speedup=none"; session 43).
    short = [" ".join([label, *(f"{n}={s[n]}" for n in shown[label] if n in s)]) for label, s in zip(labels, settings)]
    arms: dict[str, set[str]] = {}
    for a, b in zip(short, full):
        arms.setdefault(a, set()).add(b)
    # A run left with no setting at all keeps its "?"s: "FIRST_FIT ordering=?" (a run that
    # predates the ordering) must not read as the default's "FIRST_FIT".
    return [a if len(arms[a]) == 1 and (a != label or b == label) else b for a, b, label in zip(short, full, labels)]


def label_arms(runs: pl.DataFrame) -> pl.DataFrame:
    """Append to each run's label the arm settings (column ``arm``) that differ between runs of that label.

    ``FIRST_FIT`` becomes ``FIRST_FIT ordering=2Y`` when first fit ran over several orderings;
    a label whose runs agree on every setting is left alone (``TA`` stays ``TA``, in the
    paper's order). The settings are compared over every run of the label, whatever its
    workload, so that one label names one arm in every panel and Table I column
    (:func:`with_arm_settings`).
    """
    full = with_arm_settings(runs["label"].to_list(), [json.loads(a) for a in runs["arm"]])
    return runs.with_columns(label=pl.Series(full, dtype=pl.String))


def run_row(run_dir: Path, root: Path) -> dict[str, Any]:
    """One row of :func:`load_runs` for ``run_dir``; raises :class:`ReportError` if unreadable."""
    summary = read_summary(run_dir)
    config = summary["config"]
    workload, counts = _mapping(config.get("workload")), _mapping(summary.get("counts"))
    topology = summary.get("topology") if isinstance(summary.get("topology"), Mapping) else None
    reading = run_dir
    try:
        problem = table_problem(run_dir, summary)
        if problem is None:
            reading = run_dir / "jobs.parquet"
            jobs = job_metrics(reading)
            reading = run_dir / "utilization.parquet"
            util = utilization_metrics(reading)
    except ReportError:
        raise  # already names its file (table_problem)
    except Exception as err:  # noqa: BLE001 - polars raises several kinds; all mean "unreadable"
        # The file named (session 42: "results/X: unreadable parquet" left the reader to guess which).
        raise ReportError(f"{reading}: unreadable parquet: {one_line(err)}") from None
    if problem is not None:
        raise ReportError(f"{run_dir}: damaged run: {problem}")
    seed = config.get("seed")
    return {
        "run": str(run_dir.relative_to(root)) if run_dir != root else ".",
        "path": str(run_dir.resolve()),
        "label": run_label(policy_name(config), config.get("speedup")),
        "workload": workload_label(config),
        "topo": topo_name(config["topo"]),
        "topo_kind": None if topology is None else str(topology.get("kind", "?")),
        "policy": str(config["policy"]),
        "speedup": str(config.get("speedup", "none")),
        "sched": str(config.get("sched", "")),
        "seed": int(seed) if isinstance(seed, (int, float)) else None,
        "workload_name": str(workload.get("name", "?")),
        "scale": _scale(workload),
        **workload_settings(workload),
        "n_nodes": summary.get("n_nodes"),
        **jobs,
        **util,
        "read": counts.get("read"),
        "replayed": counts.get("replayed"),
        "skipped": skipped_total(counts),
        "replay_wall_s": summary.get("replay_wall_s"),
        "trials": trials_n(summary),
        "config": json.dumps(config, sort_keys=True),
        "arm": json.dumps(arm_settings(summary), sort_keys=True),
        "counts": json.dumps(counts, sort_keys=True),
        "topology": None if topology is None else json.dumps(topology, sort_keys=True),
    }


RUNS_SCHEMA = {
    "run": pl.String, "path": pl.String, "label": pl.String, "workload": pl.String,
    "topo": pl.String, "topo_kind": pl.String, "policy": pl.String, "speedup": pl.String,
    "sched": pl.String, "seed": pl.Int64, "workload_name": pl.String, "scale": pl.Float64,
    "window_start_days": pl.Float64, "window_days": pl.Float64, "node_kind": pl.String,
    "cores_per_node": pl.Int64, "log_sha256": pl.String, "max_runtime_s": pl.Float64, "n_nodes": pl.Int64,
    "jobs": pl.Int64, "wait_mean_h": pl.Float64, "wait_median_h": pl.Float64,
    "makespan_h": pl.Float64, "aph_mean": pl.Float64, "has_ideal_aph": pl.Boolean,
    "util_mean": pl.Float64, "util_median": pl.Float64, "read": pl.Int64, "replayed": pl.Int64,
    "skipped": pl.Int64, "replay_wall_s": pl.Float64, "trials": pl.Int64, "config": pl.String, "arm": pl.String,
    "counts": pl.String, "topology": pl.String,
}  # fmt: skip
"""Columns of :func:`load_runs` (times in hours, utilization as a fraction, APH in hops;
``trials``: N of a ``trials=N`` run, whose row is its trial 0, else null; ``config``, ``arm``
(:func:`arm_settings`), ``counts`` and ``topology`` as JSON text)."""
JSON_COLUMNS = ("config", "arm", "counts", "topology")


def progress(items: Sequence[Any], desc: str, every_s: float = 5.0) -> Iterator[Any]:
    """Iterate ``items`` showing progress on stderr: tqdm on a terminal, else a line every
    ``every_s`` seconds (:func:`fattorus.args.shown`)."""
    from fattorus.args import shown

    yield from shown(items, "fattorus.report", desc, "run", every_s)


#: The workload settings :func:`disambiguate` tells runs apart by (besides the scheduler).
WORKLOAD_SETTINGS = {"window_start_days": pl.Float64, "window_days": pl.Float64, "node_kind": pl.String,
                     "cores_per_node": pl.Int64, "log_sha256": pl.String, "max_runtime_s": pl.Float64}


def workload_settings(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`WORKLOAD_SETTINGS` of a run from its summary's ``config.workload``."""
    def number(key: str) -> float | None:
        value = workload.get(key)
        return None if value is None else float(value)

    return {"window_start_days": number("window_start_days"), "window_days": number("window_days"),
            "node_kind": workload.get("node_kind"), "cores_per_node": workload.get("cores_per_node"),
            "log_sha256": workload.get("sha256"),
            # Null: the default ceiling (366 days), also for runs from before session 27.
            "max_runtime_s": number("max_runtime_s")}


def _short(x: pl.Expr) -> pl.Expr:
    """A number as short text: ``7`` for 7.0, ``2.5`` as it is."""
    return x.round(6).cast(pl.String).str.replace(r"\.0$", "")


def _window_text() -> pl.Expr:
    """A run's window of the log: ``whole log`` (no window; a run that recorded none),
    ``days 0–7``, ``days 7–end`` (a start without an end)."""
    start, days = pl.col("window_start_days").fill_null(0.0), pl.col("window_days")
    return (pl.when(days.is_null() & (start == 0)).then(pl.lit("whole log"))
            .when(days.is_null()).then(pl.format("days {}–end", _short(start)))
            .otherwise(pl.format("days {}–{}", _short(start), _short(start + days))))


def disambiguate(runs: pl.DataFrame) -> pl.DataFrame:
    """Append the time window, scheduler, node kind, cores per node, log and/or dirty-line ceiling to workload labels
    shared by runs that differ in them (``atlas-2x on cab [days 0–7]``, ``atlas-2x on cab [whole
    log]``, ``atlas-2x on cab [fcfs]``, ``file on cab [log 1a2b3c4d5e6f]``, ``[max_runtime_s=3600]``).

    Why the log: every ``workload=file`` run is named ``file``, so two logs would be averaged as
    seeds of one workload; the log's sha256 (its first 12 digits) tells them apart, and a run
    that did not record one reads ``?``. The node kind and cores per node change the jobs replayed.
    """
    extras = (
        _window_text(),
        pl.col("sched").fill_null("?"),
        pl.format("node_kind={}", pl.col("node_kind").fill_null("?")),
        pl.format("cores_per_node={}", pl.col("cores_per_node").cast(pl.String).fill_null("?")),
        pl.format("log {}", pl.col("log_sha256").str.slice(0, 12).fill_null("?")),
        pl.format("max_runtime_s={}", _short(pl.col("max_runtime_s")).fill_null("default")),
    )
    for extra in extras:
        distinct = extra.n_unique().over("workload") > 1
        runs = runs.with_columns(
            workload=pl.when(distinct).then(pl.format("{} [{}]", "workload", extra)).otherwise("workload")
        )
    return runs


def _read_rows(root: Path, run_dirs: Sequence[Path], skip_bad: bool) -> list[dict[str, Any]]:
    """One :func:`run_row` per run; an unreadable or damaged run raises, or with ``skip_bad`` is
    named in a warning, and the skipped runs are counted in one last line (never silently fewer)."""
    rows, skipped = [], 0
    for run_dir in progress(run_dirs, "reading runs"):
        try:
            rows.append(run_row(run_dir, root))
        except ReportError as err:
            if not skip_bad:
                raise
            skipped += 1
            print(f"fattorus.report: warning: skipped {err}", file=sys.stderr)
    if skipped:
        print(f"fattorus.report: warning: {skipped} of {len(run_dirs)} runs skipped (--skip-bad)", file=sys.stderr)
    return rows


def load_runs(results_dir: str | os.PathLike, *, skip_bad: bool = False) -> pl.DataFrame:
    """One row per run directory under ``results_dir`` (columns :data:`RUNS_SCHEMA`).

    A run's ``label`` names its arm: the policy and speedup scenario (:func:`run_label`) plus
    the arm settings that differ between runs of those (:func:`label_arms`), so runs averaged
    as seeds of one label differ in nothing else that defines an arm.
    Sorted by topology, workload, label (paper order) and seed. Raises :class:`ReportError`
    when there is no run or, unless ``skip_bad`` (then a warning on stderr), a run is unreadable.
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory")
    run_dirs = find_run_dirs(root)
    if not run_dirs:
        raise ReportError(f"{root}: no run directories (none holds {', '.join(RUN_FILES)})")
    rows = _read_rows(root, run_dirs, skip_bad)
    if not rows:
        raise ReportError(f"{root}: no readable run directories")
    runs = disambiguate(label_arms(pl.DataFrame(rows, schema=RUNS_SCHEMA, strict=False)))
    rank = pl.col("label").replace_strict(
        {label: i for i, label in enumerate(LABEL_ORDER)}, default=len(LABEL_ORDER), return_dtype=pl.Int64
    )
    return runs.sort(["topo", "workload", rank, "label", "seed", "run"], nulls_last=True)


def duplicate_seeds(runs: pl.DataFrame) -> list[str]:
    """One text per (workload, label, seed) that several runs share (a re-run counted twice in
    Table I's mean, std and n): ``"2 runs of atlas-2x on cab / TA have seed 0"``.

    A label names one arm (:func:`label_arms`): runs that differ in an arm setting (first fit's
    ordering) are not duplicates.
    """
    seeded = runs.filter(pl.col("seed").is_not_null())
    dup = seeded.group_by("workload", "label", "seed").len().filter(pl.col("len") > 1)
    return [f"{n} runs of {workload} / {label} have seed {seed}"
            for workload, label, seed, n in dup.sort("workload", "label", "seed").iter_rows()]


def warn_duplicate_seeds(runs: pl.DataFrame) -> None:
    """Warn on stderr of each :func:`duplicate_seeds` text (Table I counts such runs apart)."""
    for text in duplicate_seeds(runs):
        print(f"fattorus.report: warning: {text}", file=sys.stderr)


def trials_n(summary: Mapping[str, Any]) -> int | None:
    """N of a ``trials=N`` run (``summary.json``'s ``trials.n``), else None."""
    n = _mapping(summary.get("trials")).get("n")
    return int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else None


def trial_draws_note(runs: Sequence[tuple[str, int | None]]) -> str | None:
    """What to say of ``trials=N`` runs among ``(run, N or None)``: a row (and Table I's mean)
    is the run's trial 0 — its ``jobs.parquet`` — not its N draws, whose statistics are in its
    ``trials.parquet`` (session 43: a report showed trial 0 without a word). None if no such run."""
    draws = [(run, n) for run, n in runs if n is not None and n > 1]
    if not draws:
        return None
    run, n = draws[0]
    return (f"{len(draws)} run(s) hold trials=N draws (first {run}: {n} draws): each counts here as its trial 0 "
            "(its jobs.parquet); the draws' statistics are in its trials.parquet and summary.json's trials entry")


def warn_trial_draws(runs: pl.DataFrame) -> None:
    """One warning line for ``trials=N`` runs (:func:`trial_draws_note`)."""
    note = trial_draws_note(list(zip(runs["run"].to_list(), runs["trials"].to_list())))
    if note is not None:
        print(f"fattorus.report: warning: {note}", file=sys.stderr)


def warn_missing_ideal(runs: pl.DataFrame) -> None:
    """One warning line when some runs predate the ``ideal_aph`` column (Figure 7 then has no ideal for them)."""
    missing = runs.filter(~pl.col("has_ideal_aph").fill_null(False))
    if len(missing):
        first = missing["run"][0]
        print(f"fattorus.report: warning: {len(missing)} of {len(runs)} runs (first {first}) have no ideal_aph "
              "column in jobs.parquet (written by an older fattorus); Figure 7 draws no ideal APH for them",
              file=sys.stderr)  # fmt: skip


def _scan(runs: pl.DataFrame, filename: str, columns: Sequence[str]) -> pl.LazyFrame:
    parts = []
    for i, (path, workload, label) in enumerate(runs.select("path", "workload", "label").iter_rows()):
        scan = pl.scan_parquet(Path(path) / filename, glob=False)
        present = set(scan.collect_schema().names())
        # A column older outputs lack reads as nulls, so one old run does not stop the report.
        cols = [pl.lit(None, OPTIONAL_JOB_COLUMNS[c]).alias(c) if c not in present and c in OPTIONAL_JOB_COLUMNS
                else pl.col(c) for c in columns]  # fmt: skip
        parts.append(scan.select(cols).with_columns(rid=pl.lit(i, pl.Int64), workload=pl.lit(workload),
                                                    label=pl.lit(label)))  # fmt: skip
    return pl.concat(parts, how="vertical_relaxed")


def jobs_scan(runs: pl.DataFrame, columns: Sequence[str]) -> pl.LazyFrame:
    """Lazy concatenation of ``columns`` of every run's jobs.parquet with ``rid``, ``workload`` and ``label``."""
    return _scan(runs, "jobs.parquet", columns)


def utilization_scan(runs: pl.DataFrame) -> pl.LazyFrame:
    """Lazy concatenation of every run's utilization samples with ``rid``, ``workload`` and ``label``."""
    return _scan(runs, "utilization.parquet", ["utilization"])
