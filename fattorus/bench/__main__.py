"""``python -m fattorus.bench [--only SECTION,...] [--quick]`` (``make bench``).

Runs the benchmark sections, prints one aligned table per section, and writes the tables to
``results/bench/bench-<UTC timestamp>.md`` and ``results/bench/latest.md`` and the raw rows
to the matching ``.json`` files (each written to a temporary file, then renamed). Machine
information (CPUs, load, JAX backend and devices, versions, git commit) heads the report.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.bench")

import datetime as dt
import importlib
import importlib.util
import inspect
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

from fattorus import devices, paths
from fattorus.args import OneLineParser
from fattorus.files import atomic_write

#: The command's name in its error lines.
PROG = "fattorus.bench"

SECTIONS = ("kernels", "replay", "network", "batched", "torus", "flow", "dragonfly", "qos", "outputs")


def available_sections() -> list[str]:
    """Sections whose module imports and exposes ``run`` (network is optional: skipped, with a
    warning, if its module is missing or does not import)."""
    names = []
    for name in SECTIONS:
        if importlib.util.find_spec(f"fattorus.bench.{name}") is None:
            continue
        try:
            module = importlib.import_module(f"fattorus.bench.{name}")
        except Exception as err:  # noqa: BLE001 - an optional section must not stop the others
            if name in ("kernels", "replay"):
                raise
            print(f"warning: skipping section {name}: import failed: {err!r}", file=sys.stderr)
            continue
        if callable(getattr(module, "run", None)):
            names.append(name)
    return names


def machine_info() -> dict:
    """CPU count, load, JAX backend and devices, package versions, git commit."""
    import jax
    import numpy as np
    import polars as pl

    info = {
        "utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": devices.usable_cores(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": getattr(importlib.import_module("jaxlib"), "__version__", "?"),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "numpy": np.__version__,
        "polars": pl.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=paths.repo_root(), capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=paths.repo_root(),
                               capture_output=True, text=True, check=True).stdout.strip()
        info["git"] = commit + (" (uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        info["git"] = "?"
    return info


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value == 0:
            return "0"
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        if abs(value) >= 1e-3:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


def table(rows: list[dict]) -> str:
    """Rows as an aligned Markdown pipe table (union of keys, in order of first appearance)."""
    if not rows:
        return "(no rows)"
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    cells = [[_cell(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in rows) for k in keys]

    def line(values):
        out = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "| " + " | ".join(out) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(keys), rule, *(line(c) for c in cells)])


def report(info: dict, sections: dict[str, dict], quick: bool) -> str:
    """The Markdown report: machine information, then one table (and notes) per section."""
    lines = [f"# fattorus benchmarks{' (--quick)' if quick else ''}", "", f"Run {info['utc']}.", ""]
    lines += [f"- {k}: {v}" for k, v in info.items() if k != "utc"]
    lines += ["", "Timings are wall-clock on this machine; with few cores shared with other processes "
              "they are noisy (see loadavg). Ratios are measured in the same run and are the steadier number."]
    for name, sec in sections.items():
        lines += ["", f"## {name}", "", f"Section wall time {sec['wall_s']:.1f} s.", ""]
        if sec.get("notes"):
            lines += [sec["notes"], ""]
        lines.append(table(sec["rows"]))
    return "\n".join(lines) + "\n"


def run_section(name: str, quick: bool) -> dict:
    module = importlib.import_module(f"fattorus.bench.{name}")
    fn = getattr(module, "run", None)
    if fn is None:
        raise SystemExit(f"fattorus.bench.{name} has no run(); cannot benchmark it")
    kwargs = {"quick": quick} if "quick" in inspect.signature(fn).parameters else {}
    t0 = time.perf_counter()
    rows = fn(**kwargs)
    wall = time.perf_counter() - t0
    notes = getattr(module, "NOTES", None) or (inspect.getdoc(module) or "").split("\n\n")[0]
    if quick and not kwargs:
        notes += " (this section has no quick mode; full size)"
    return {"rows": rows, "wall_s": wall, "notes": notes}


def _fail(message: str, code: int) -> NoReturn:
    """One error line on stderr and exit ``code`` (2: the user's mistake, 1: the environment)."""
    sys.stderr.write(f"{PROG}: error: {' '.join(message.split())}\n")
    sys.exit(code)


def _os_error(err: OSError, out: Path) -> NoReturn:
    """An ``OSError`` about the output directory as one line: a path that is not a directory
    is the user's mistake (exit 2); permissions, a full disk and the like are the
    environment's (exit 1)."""
    if isinstance(err, (FileExistsError, NotADirectoryError)):
        # Name the file in the way: --out itself or one of its parents.
        culprit = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), out)
        _fail(f"--out {out}: {culprit} is a file, not a directory", 2)
    culprit = f" ({err.filename})" if err.filename and str(err.filename) != str(out) else ""
    _fail(f"--out {out}: {err.strerror or err}{culprit}", 1)


def check_out_dir(out: Path) -> None:
    """Create ``out`` (and its parents) and check a file can be written there, so a bad
    ``--out`` is refused before the sections run rather than after minutes of them. It must be
    a ``results/`` directory or lie under one (nothing is written outside the results; the
    rule of ``interference --out``)."""
    if not paths.under_results(out):
        _fail(f"--out {out}: must be a results/ directory or lie under one", 2)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _os_error(err, out)
    try:
        fd, probe = tempfile.mkstemp(prefix=".bench-probe.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:  # the probe's random name would only be noise in the line
        _fail(f"--out {out}: cannot write there ({err.strerror or err})", 1)


def main(argv: list[str] | None = None) -> None:
    """Run the chosen sections and write the report (module docstring); a bad option or an
    unusable ``--out`` is one line on stderr and a non-zero exit, before any section runs."""
    parser = OneLineParser(prog="python -m fattorus.bench", error_prefix=PROG,
                           description="The benchmark tables (make bench): each section's median timings beside a "
                                       "simple reference measured in the same run, written to results/bench/.")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated sections (default: every available one of {', '.join(SECTIONS)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run, not a measurement")
    parser.add_argument("--out", default=str(paths.results_dir() / "bench"),
                        help="output directory: a results/ directory or one under it (default: %(default)s)")
    args = parser.parse_args(argv)
    devices.use_cpu_cores()  # the batched section splits its trials over them

    available = available_sections()
    if args.only is not None:  # "--only ''" is a (bad) choice too, not "every section"
        wanted = list(dict.fromkeys(s.strip() for s in args.only.split(",") if s.strip()))  # once each, in order
        if not wanted:
            parser.error(f"--only {args.only!r} names no section; choices: {','.join(SECTIONS)}")
        unknown = [s for s in wanted if s not in SECTIONS]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)}; choices: {','.join(SECTIONS)}")
        missing = [s for s in wanted if s not in available]
        if missing:
            parser.error(f"section(s) {missing} not available (no fattorus/bench/<name>.py)")
    else:
        wanted = available
    out = Path(args.out)
    check_out_dir(out)

    info = machine_info()
    stamp = info["utc"].replace("-", "").replace(":", "")
    print(f"fattorus bench {info['utc']}: {info['cpus_usable']} usable CPU(s), load {info['loadavg_1_5_15']}, "
          f"jax {info['jax']} on {info['jax_backend']} {info['jax_devices']}", file=sys.stderr, flush=True)
    sections = {}
    for name in wanted:
        print(f"== {name} ==", file=sys.stderr, flush=True)
        sections[name] = run_section(name, args.quick)
        print(f"\n## {name} ({sections[name]['wall_s']:.1f} s)\n\n{table(sections[name]['rows'])}\n", flush=True)

    info["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    text = report(info, sections, args.quick)
    raw = json.dumps({"machine": info, "quick": args.quick, "sections": sections}, indent=2, default=str) + "\n"
    try:
        for base in (f"bench-{stamp}", "latest"):
            atomic_write(out / f"{base}.md", text)
            atomic_write(out / f"{base}.json", raw)
    except OSError as err:  # e.g. the disk filled up during the run: the tables above are on stdout
        _os_error(err, out)
    print(f"wrote {out / f'bench-{stamp}.md'} and latest.md (+ .json)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(interrupt.run("fattorus.bench", main))
