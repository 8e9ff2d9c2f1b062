"""Benchmark: EASY replay throughput of ``prism`` next to ``first_fit`` on Blue Waters.

Workload: the LLNL-Atlas trace fit to Blue Waters (``workload.scale=fit``: node counts x
22,548 usable XE nodes / Atlas' 1,152), its first ``DAYS`` days (``quick``: ``QUICK_DAYS``),
prepared once by :func:`fattorus.sched.replay.prepare`. Engines on the same arrays, through
:func:`fattorus.sched.replay.simulate` with the machine's usable (XE) nodes:

* ``reference``: the count-based pure-Python EASY of :mod:`fattorus.sched.reference` (on the
  usable node count);
* ``first_fit`` over the ALPS default ordering ``O2`` (topology-oblivious);
* ``prism`` with its default heuristics: the compiled replay
  (:mod:`fattorus.sched.policy.torus.prism_compiled`, what a replay runs by default), and
  ``prism_python``, the same decisions from the engine's Python loop (``compiled=False``).

Each engine is warmed up on the first ``WARMUP_DAYS`` days, then timed ``repeats`` times,
interleaved; ``median_s``, ``jobs_per_s = jobs / median_s`` and ``vs_first_fit = median_s /
first_fit's median_s`` (the issue's target for ``prism``: within 5x). ``first_fit``'s start
times must equal the reference's, and both ``prism`` rows' start times and node sets must
agree (checked on every timed run). ``compile_s``: the compiled replay's first warm-up run
less its second (numba compiling, or loading what it compiled before from its cache).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from fattorus import paths, topology, workload
from fattorus.sched import policy, reference, replay

TRACE = "LLNL-Atlas-2006-2.1-cln.swf.gz"
DAYS, QUICK_DAYS, WARMUP_DAYS = 30.0, 7.0, 2.0
REPEATS, QUICK_REPEATS = 3, 1

NOTES = ("Atlas fit to Blue Waters (x22548/1152 on the usable XE nodes), EASY. median_s = median of `repeats` "
         f"runs after a warm-up on the first {WARMUP_DAYS:g} days (engines interleaved); jobs_per_s = jobs / "
         "median_s; vs_first_fit = median_s / first_fit's. first_fit start times equal the reference's (checked).")


def _log(msg: str) -> None:
    print(f"[torus] {msg}", file=sys.stderr, flush=True)


def _arrays(days: float, bw) -> tuple[list[np.ndarray], np.ndarray]:
    usable = bw.usable()
    cfg = {"name": "atlas", "path": str(paths.traces_dir() / TRACE), "format": "swf", "cores_per_node": 8,
           "scale": "fit", "window_days": days}
    wl, _ = workload.from_config(cfg, machine_nodes=int(usable.sum()))
    prepared, _ = replay.prepare(workload.with_estimate(wl.jobs), int(usable.sum()))
    return [prepared[c].to_numpy() for c in ("submit_s", "runtime_s", "estimate_s", "nodes")], usable


def run(quick: bool = False, repeats: int | None = None) -> list[dict]:
    """Timings of the three engines (module docstring)."""
    bw = topology.load("bluewaters")
    repeats = repeats or (QUICK_REPEATS if quick else REPEATS)
    cols, usable = _arrays(QUICK_DAYS if quick else DAYS, bw)
    warm, _ = _arrays(WARMUP_DAYS, bw)
    capacity = int(usable.sum())
    engines = {
        "reference": lambda c: np.asarray(reference.schedule(*[x.tolist() for x in c], capacity, easy=True), float),
        "first_fit": lambda c: replay.simulate(*c, bw, policy.make("first_fit", bw, {"ordering": "O2"}), "easy",
                                               usable=usable).start,
        "prism": lambda c: replay.simulate(*c, bw, policy.make("prism", bw), "easy", usable=usable),
        "prism_python": lambda c: replay.simulate(*c, bw, policy.make("prism", bw), "easy", usable=usable,
                                                  compiled=False),
    }
    compile_s = {}
    for name, engine in engines.items():
        t0 = time.perf_counter()
        engine(warm)
        first = time.perf_counter() - t0
        if name == "prism":
            t0 = time.perf_counter()
            engine(warm)
            compile_s[name] = max(0.0, first - (time.perf_counter() - t0))
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(repeats):
        starts = {}
        for name, engine in engines.items():
            t0 = time.perf_counter()
            starts[name] = engine(cols)
            times[name].append(time.perf_counter() - t0)
            _log(f"{name}: {times[name][-1]:.2f} s")
        if not np.array_equal(starts["first_fit"], starts["reference"]):
            raise RuntimeError("first_fit start times differ from the count-based reference")
        a, b = starts["prism"], starts["prism_python"]
        if not (np.array_equal(a.start, b.start) and all(np.array_equal(x, y) for x, y in zip(a.alloc, b.alloc))):
            raise RuntimeError("the compiled prism replay differs from the engine's Python loop")
    ff = statistics.median(times["first_fit"])
    n = len(cols[0])
    return [{"engine": name, "machine": "bluewaters", "jobs": n, "repeats": repeats,
             "median_s": statistics.median(t), "min_s": min(t), "jobs_per_s": n / statistics.median(t),
             "vs_first_fit": statistics.median(t) / ff, "compile_s": compile_s.get(name, 0.0)}
            for name, t in times.items()]
