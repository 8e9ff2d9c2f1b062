"""What a run writes: the tuned policy config and the held-out comparison with the paper's defaults.

* ``conf/policy/<policy>_tuned_<name>.yaml`` (``--export``): ``name``, ``params`` and a comment
  header (study, objective, value, the paper default's value, date, the scheduler to use).
* ``results/tune/<name>/comparison.{json,md}`` (``--out``): tuned vs paper defaults replayed
  on the test windows, pooled and per window. Every file is written atomically.
"""

from __future__ import annotations

import datetime
import math
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fattorus.app.tune.display import METRIC_LABELS, change_text, fmt_value, fmt_values
from fattorus.app.tune.objective import METRICS, MODEL_METRICS, pooled, run_setup_window
from fattorus.app.tune.space import decode, describe, paper_defaults
from fattorus.app.tune.storage import mask
from fattorus.app.tune.windows import Setup, SweepWorkload, sweep_workload, window_label, windows_label

if TYPE_CHECKING:
    from fattorus.app.tune.cli import Options


def now() -> str:
    """The current UTC time, ``2024-01-31T12:00:00Z``."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def export_policy(path: Path, params: Mapping[str, Any], header: Sequence[str], policy: str = "ta") -> Path:
    """Write a ``conf/policy`` config (``name``: the tuned policy, ``params``) with a comment
    header, atomically."""
    import yaml

    from fattorus.files import atomic_write

    body = yaml.safe_dump({"name": policy, "params": dict(params)}, sort_keys=False, default_flow_style=False)
    relax = params.get("relax_after_s")
    if relax is not None:
        # Its runs record policy "ta" (and this file's name): one filtering on the policy alone
        # would take them for interference-free schedules (a session-46 audit).
        header = [*header, f"NOT interference-free: relax_after_s={relax:.0f} s lets a queue head blocked that long "
                           "take a shared (tree best-fit) placement; exposure measures it (docs/tuning.md)"]
    text = "".join(f"# {line}\n" for line in header) + body
    return atomic_write(path, text)


def export_header(opts: Options, setup: Setup, chosen: Any, counts: dict, rule: str, base_values: Any,
                  sched: str) -> list[str]:
    """Comment lines heading an exported policy config: where it came from and how to run it
    (:func:`sweep_command`: the study's machine, workload and scale)."""
    model = " with run times from the bandwidth model (+speedup=model)" if setup.speedup == "model" else ""
    wl = _workload_of(opts, setup)
    return [
        f"Tuned `{setup.policy}` heuristics written by fattorus.tune (python -m fattorus.tune); see docs/tuning.md.",
        f"study: {opts.name} ({mask(opts.storage)}), trial {chosen.number} (of {counts['total']} trials)"
        f"{'' if not opts.multi else f', Pareto pick: {rule}'}",
        f"objective: {', '.join(f'{o} ({d})' for o, d in zip(opts.objectives, opts.directions))} on "
        f"{setup.workload} x{setup.scale:g} on {setup.topo.name}{model}, training windows (days) "
        f"{windows_label(setup.train)}",
        f"value: {fmt_values(opts.objectives, chosen.values)}; "
        f"paper defaults: {fmt_values(opts.objectives, base_values)}",
        f"date: {now()}",
        f"the study also chose the scheduler: run with sched={sched}, e.g."
        f"{_where(opts, _machine_of(opts, setup).note, wl.note)}",
        f"  {sweep_command(opts, setup, sched, wl)}",
    ]


def _workload_of(opts: Options, setup: Setup) -> SweepWorkload:
    """How the sweep replays the study's workload: as the setup took it when the workload
    loaded, else (a setup made by hand) from ``--workload`` now."""
    return setup.sweep or sweep_workload(opts.workload, opts.cores_per_node)


def _where(opts: Options, *notes: str | None) -> str:
    """What the sweep command of the header needs first, in parentheses: the exported file
    (outside the app's conf/policy/), a machine YAML and a workload YAML (ones the app cannot
    name: ``notes``) where the app finds them."""
    found = _in_policy_configs(opts.export) or _policy_search(opts.export)  # conf/policy, or a policy/ folder
    needs = [] if found else ["once this file is in conf/policy/, where the app finds it"]
    needs += [n for n in notes if n]
    return f" ({'; '.join(needs)})" if needs else ""


def _policy_search(export: Path) -> list[tuple[str, Any]]:
    """The search-path override under which the app finds an exported config kept in a folder
    named ``policy`` outside conf/ (a config folder's group, as a machine's ``topo/``): its
    header's command then runs as it is (it said to copy the file; session 47); else none."""
    folder = Path(export).resolve().parent
    if _in_policy_configs(export) or folder.name != "policy":
        return []
    return [("hydra.searchpath", [f"file://{folder.parent}"])]


def sweep_topology(topo: str, name: str) -> SweepWorkload:
    """How the study app names the machine ``--topo topo`` loaded (``name``: the machine's
    name): ``+topo=NAME`` for a ``conf/topo`` name or a YAML in the app's ``conf/topo``; a
    YAML in another folder named ``topo`` (a config folder's group): ``hydra.searchpath`` to
    that config folder and ``+topo=STEM``; any other YAML: ``+topo=STEM`` with a note to copy
    it into ``conf/topo/`` first (Hydra takes a group's option by name, never by path); a
    YAML whose stem names a shipped machine: a note to rename it (Hydra searches the app's
    conf/ first and would replay the shipped one). Returned as a :class:`SweepWorkload`
    (overrides and note) for :func:`sweep_command`."""
    from fattorus import paths

    path = Path(topo)
    if not path.suffix:
        return SweepWorkload((("+topo", name),))
    folder = path.resolve().parent
    if folder == paths.conf_dir("topo").resolve():
        return SweepWorkload((("+topo", path.stem),))
    shipped = paths.config_file("topo", path.stem)
    if shipped.is_file():
        # Hydra searches the app's conf/ first: +topo=STEM would replay the shipped machine, and
        # copying the file there would overwrite it.
        return SweepWorkload((("+topo", path.stem),), f"with {path.resolve()} renamed (conf/topo/{path.stem}.yaml is "
                             "another machine of that name) and put in conf/topo/")
    if folder.name == "topo":
        return SweepWorkload((("hydra.searchpath", [f"file://{folder.parent}"]), ("+topo", path.stem)))
    return SweepWorkload((("+topo", path.stem),), f"with {path.resolve()} copied to conf/topo/{path.stem}.yaml")


def _machine_of(opts: Options, setup: Setup) -> SweepWorkload:
    return sweep_topology(opts.topo, setup.topo.name)


def sweep_command(opts: Options, setup: Setup, sched: str, workload: SweepWorkload | None = None) -> str:
    """The study app's command that replays the study's workload with the exported config:
    its machine (:func:`sweep_topology`), ``policy=<export stem>``, ``sched``, the workload as
    ``--workload`` named it (``workload``, default the setup's
    :func:`~fattorus.app.tune.windows.sweep_workload`: a conf/workload name, or
    ``workload=file`` with the log's path or the YAML's settings; and ``--cores-per-node``),
    the scale factor the study used (``workload.scale``; ``machine`` and ``fit`` resolved, so
    the command does not depend on conf/topo's default load) and ``+speedup=model`` when the
    study ran the bandwidth model. The machine's and the workload's config folders share one
    ``hydra.searchpath``. Each override is quoted for Hydra (values) and for a POSIX shell
    (the whole word) where needed. No window: the config is for the whole log."""
    import shlex

    wl = workload or _workload_of(opts, setup)
    machine = _machine_of(opts, setup)
    # A whole factor as an integer: the run directory reads x2, as with workload.scale=2 typed by hand.
    scale = int(setup.scale) if float(setup.scale).is_integer() else setup.scale
    overrides = [*machine.overrides, *_policy_search(opts.export), ("policy", opts.export.stem), ("sched", sched),
                 *wl.overrides, ("workload.scale", scale)]
    if setup.speedup == "model":
        overrides.append(("+speedup", "model"))
    # One search path: a second hydra.searchpath override would replace the first.
    search = [d for k, v in overrides if k == "hydra.searchpath" for d in v]
    overrides = [(k, v) for k, v in overrides if k != "hydra.searchpath"]
    if search:
        overrides.insert(0, ("hydra.searchpath", list(dict.fromkeys(search))))
    return "python -m fattorus.sweep " + " ".join(shlex.quote(f"{k}={hydra_value(v)}") for k, v in overrides)


#: A string Hydra reads unquoted as that same string (not a number, bool or null: see hydra_value).
_BARE = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:+-]*")


def hydra_value(value: Any) -> str:
    """``value`` written as a Hydra override value that parses back to it: numbers (a float
    as its shortest exact text, ``2.0`` not ``2``, so a ``fit`` scale factor replays the same
    jobs and a float stays one), ``true``/``false``, ``null``, lists ``[a,b]`` and mappings
    ``{k:v}``; a string bare when Hydra reads it back as that string, else single-quoted (a
    quote, and backslashes before a quote or at the end, escaped as Hydra's grammar wants)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)  # the shortest text that reads back as this float (and as a float, not an int)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if _BARE.fullmatch(text) and text.lower() not in ("true", "false", "null", "nan", "inf"):
        return text
    escaped = re.sub(r"(\\*)('|\Z)", lambda m: m[1] * 2 + ("\\'" if m[2] else ""), text)
    return f"'{escaped}'"


def _in_policy_configs(path: Path) -> bool:
    """Whether ``path`` is a policy config the app finds by name (``conf/policy/NAME.yaml``)."""
    from fattorus import paths

    try:
        return Path(path).resolve().parent == paths.conf_dir("policy").resolve()
    except OSError:
        return False


def _arm(setup: Setup, arm: str, params: dict[str, Any], sched: str) -> dict[str, Any]:
    """One comparison row: ``params`` under ``sched`` replayed on every test window."""
    samples = []
    per_window = []
    for w, table in zip(setup.test, setup.test_tables):
        t0 = time.perf_counter()
        s = run_setup_window(setup, table, params, sched)
        samples.append(s)
        m = pooled([s])
        per_window.append({"window": window_label(w), **m})
        print(f"[compare] {arm} on window {window_label(w)}: {m['jobs']} jobs, mean wait "
              f"{fmt_value('mean_wait_s', m['mean_wait_s'])} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return {"arm": arm, "sched": sched, "policy_params": dict(params), **pooled(samples), "windows": per_window}


def same_point(tuned: Mapping[str, Any], default: Mapping[str, Any]) -> bool:
    """Whether the tuned parameters are the default point: a decoded trial may leave out what
    its policy does not tune (prism's ``internal`` ...), which then keeps its default."""
    return {**default, **tuned} == dict(default)


def compare(setup: Setup, tuned_params: Mapping[str, Any], tuned_sched: str) -> list[dict[str, Any]]:
    """Replay the test windows with the paper's defaults and with the tuned point.

    Returns one row per arm (``paper_default``, ``tuned``): its ``sched`` and
    ``policy_params``, the :func:`pooled` metrics over all test windows, and ``windows``
    (the same metrics per window).
    """
    default_params, default_sched = paper_defaults(setup.policy)
    base = _arm(setup, "paper_default", default_params, default_sched)
    if same_point(tuned_params, default_params) and tuned_sched == default_sched:
        # The tuned point is the default (replays are deterministic): its rows, not a second replay.
        print("[compare] tuned = paper_default: the same point, not replayed again", flush=True)
        return [base, {**base, "arm": "tuned", "windows": [dict(w) for w in base["windows"]]}]
    return [base, _arm(setup, "tuned", dict(tuned_params), tuned_sched)]


def comparison_markdown(report: Mapping[str, Any]) -> str:
    """The comparison as a Markdown table (metrics in rows, arms in columns, relative change)."""
    base, tuned = report["rows"]
    setup = report["setup"]
    model = " with run times from the bandwidth model" if setup.get("speedup") == "model" else ""
    lines = [
        f"# Tuning study `{report['study']}`: tuned vs paper defaults on held-out windows",
        "",
        f"Policy `{setup.get('policy', 'ta')}` on machine `{setup['topo']}`, workload `{setup['workload']}` "
        f"x{setup['scale']:g}{model}; "
        f"objective(s) {', '.join(report['objectives'])}; trained on windows {report['setup']['train']}, "
        f"tested on {report['setup']['test']} ({base['jobs']} jobs). Tuned = trial {report['tuned']['trial']} "
        f"({report['tuned']['describe']}).",
        "",
        "| metric | paper default | tuned | change |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key in _shown(base):
        b, t = base[key], tuned[key]
        change = change_text(key, b, t)
        lines.append(f"| {METRIC_LABELS[key]} | {fmt_value(key, b)} | {fmt_value(key, t)} | {change} |")
    return "\n".join(lines) + "\n"


def _shown(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics of a comparison row, the bandwidth model's when it has them."""
    return METRICS + tuple(k for k in MODEL_METRICS if k in row)


def held_out_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The comparison as a plain-text table for the terminal."""
    base, tuned = rows
    width = max(18, *(len(METRIC_LABELS[k]) + 2 for k in _shown(base)))
    out = [f"{'held-out':<{width}}{'paper default':>24}{'tuned':>24}{'change':>12}"]
    for key in _shown(base):
        b, t = base[key], tuned[key]
        change = change_text(key, b, t)
        out.append(f"{METRIC_LABELS[key]:<{width}}{fmt_value(key, b):>24}{fmt_value(key, t):>24}{change:>12}")
    return "\n".join(out)


def report_skeleton(opts: Options, setup: Setup, counts: dict, before: dict, opt_wall: float, base: Any,
                    base_values: Any, chosen: Any, rule: str, params: Mapping[str, Any], sched: str,
                    front: Sequence[Any]) -> dict[str, Any]:
    """The comparison report of a run (written to ``comparison.json``), without its rows yet."""
    return {
        "study": opts.name,
        "storage": mask(opts.storage),
        "date": now(),
        "objectives": list(opts.objectives),
        "directions": list(opts.directions),
        "setup": {"policy": setup.policy, "speedup": setup.speedup,
                  "topo": setup.topo.name, "workload": setup.workload, "workload_sha256": setup.sha256,
                  "scale": setup.scale, "train": windows_label(setup.train), "test": windows_label(setup.test)},
        "trials": counts,
        "this_run": {"trials_added": counts["total"] - before["total"], "optimize_wall_s": opt_wall,
                     "jobs": opts.jobs, "seed": opts.seed, "sampler": opts.sampler},
        "paper_default": {"trial": base.number if base else None, "train_values": base_values,
                          "train_metrics": base.user_attrs.get("train_metrics") if base else None},
        "tuned": {"trial": chosen.number, "rule": rule, "train_values": list(chosen.values),
                  "train_metrics": chosen.user_attrs.get("train_metrics"), "policy_params": params,
                  "sched": sched, "describe": describe(params, sched, setup.policy), "export": str(opts.export)},
        "pareto_front": [{"trial": t.number, "values": list(t.values),
                          "describe": describe(*decode(t.params, setup.policy), policy=setup.policy)}
                         for t in front],
        "rows": [],
    }


def write_comparison(opts: Options, setup: Setup, report: dict[str, Any], params: Mapping[str, Any],
                     sched: str) -> None:
    """Replay the test windows (if any), print the table and write ``comparison.{json,md}``."""
    from fattorus.files import atomic_write, write_json

    if not setup.test:
        return
    report["rows"] = compare(setup, params, sched)
    print(held_out_table(report["rows"]), flush=True)
    write_json(opts.out / "comparison.json", report)
    atomic_write(opts.out / "comparison.md", comparison_markdown(report))
    print(f"[tune {opts.name}] wrote {opts.out / 'comparison.json'} and comparison.md", flush=True)


__all__ = ["compare", "comparison_markdown", "export_header", "export_policy", "held_out_table", "hydra_value", "now",
           "report_skeleton", "sweep_command", "write_comparison"]
