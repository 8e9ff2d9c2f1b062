"""Compile the toolkit's numba kernels once, into their caches, before the first real run.

numba compiles a kernel at its first call in a process and keeps the machine code in a cache
file beside its module (``__pycache__/*.nbi``, ``*.nbc``); every later process loads it in
milliseconds. Without this step that first call lands inside a user's first run: a machine's
first ``prism`` replay spent 25-45 s compiling the compiled replay, its first
``speedup=model`` replay ~10 s on the solvers, and a parallel test run compiled the same
kernels once per worker. ``make test`` runs ``python -m fattorus.precompile`` before the tests
(again only when a module with kernels changed); ``make precompile`` runs it alone, before a
first ``prism`` or ``speedup=model`` study.

Each step drives a real entry point on a small machine and a short shipped log, so the
kernels are compiled for exactly the argument types the runs pass (a kernel called with
other dtypes would compile again): model replays under ``to`` and ``ta`` on a fat-tree,
``to`` on tori with short and long routes (padded and compact crossing lists) and a
dragonfly; ``prism`` replays (the compiled replay) under EASY and
FCFS; the outputs' link masks, host hop sums and adaptive routes; the full and the
compact-route solves. Nothing is written but numba's caches; a second run only loads them
(seconds). ``tests/test_precompile.py`` holds that every kernel of the package is compiled
here, so a new one cannot be left out.

Usage: ``python -m fattorus.precompile [--jobs N]`` (prints one line per step, with its
seconds; ``make test`` and ``make precompile`` run it once per change of a compiled module).
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.precompile")

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from fattorus import paths

PROG = "fattorus.precompile"
THUNDER = "LLNL-Thunder-2007-1.1-cln.swf.gz"


def _short_log(n_nodes: int, days: float = 1.0):
    """The first ``days`` of Thunder (shipped with the package's data) fit to ``n_nodes``."""
    from fattorus import workload

    jobs = workload.load(paths.traces_dir() / THUNDER, cores_per_node=4).jobs
    scaled, _ = workload.scale_nodes(jobs, 1, n_nodes)
    return workload.first_days(scaled, days, 10.0)


#: A torus whose routes pad to 16 slots (:data:`fattorus.analysis.commtime.SPARSE_ROUTE_SLOTS`):
#: its model replays keep compact crossing lists, as on Blue Waters (38 slots), with the same
#: kernels and argument types at a 40th of the nodes.
LONG_ROUTE_TORUS = {"kind": "torus3d", "name": "torus12x8x8", "dims": [12, 8, 8], "nodes_per_router": 2,
                    "bandwidth": [2.0, 1.0, 2.0]}


def _model_replays(topo_name: str | dict, policies: tuple[str, ...]) -> None:
    """``speedup=model`` replays (EASY) on a machine (a ``conf/topo`` name or a config): the
    routes, the first-round reads, the goal solves, the link marks, the patterns' draws and
    picks."""
    from fattorus import topology
    from fattorus.analysis import commtime, interference
    from fattorus.sched import replay

    topo = topology.from_config(topo_name) if isinstance(topo_name, dict) else topology.load(topo_name)
    jobs = _short_log(topo.n_nodes)
    mix = interference.parse_mix(interference.DEFAULT_MIX)
    for pol in policies:
        replay.replay(jobs, topo, pol, "easy", runtime_model=commtime.ModelRuntimes(topo, mix, 0.5, 0))


def _prism_replays() -> None:
    """The compiled ``prism`` replay under EASY and FCFS."""
    from fattorus import topology
    from fattorus.sched import replay

    topo = topology.load("torus8")
    jobs = _short_log(topo.n_nodes)
    for queue in ("easy", "fcfs"):
        replay.replay(jobs, topo, "prism", queue)


def _outputs() -> None:
    """What the outputs and the network tools compile: link masks of a job (``exposed``),
    a job's largest hop count and host hop sums (dragonflies' ``max_hops`` and APH), the compact dragonfly placement, adaptive routes on a
    fat-tree, the full max-min rates and the solves on padded and compact routes."""
    from fattorus import topology
    from fattorus.kernels import maxmin_compiled

    rng = np.random.default_rng(0)
    for name in ("torus8", "dragonfly_small"):
        topo = topology.load(name)
        nodes = np.sort(rng.choice(topo.n_nodes, 12, replace=False))
        topo.job_links(nodes)
        topo.max_hops_of(nodes)
        topo.host_hop_sums([nodes])
        topo.ideal_placements(12)
    ft = topology.load("ft6x6")
    src, dst = rng.integers(0, ft.n_nodes, (2, 64))
    routes = ft.flow_routes(src, dst, rng.uniform(1, 10, 64), "adaptive", rng)
    capacity = np.asarray(ft.link_bandwidth, np.float32)
    maxmin_compiled.maxmin_rates_compiled(routes, capacity)
    maxmin_compiled.goal_step_time(routes, np.ones(64), 8, capacity)
    lengths, links = maxmin_compiled.compact_routes(routes)
    maxmin_compiled.goal_step_time_compact(lengths, links, np.ones(64), 8, capacity)


#: The steps, in order: (what, how).
STEPS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("fat-tree model replays (to, ta)", lambda: _model_replays("ft6x6", ("to", "ta"))),
    ("torus model replays (to; padded and compact routes)",
     lambda: (_model_replays("torus8", ("to",)), _model_replays(LONG_ROUTE_TORUS, ("to",)))),
    ("dragonfly model replay (to)", lambda: _model_replays("dragonfly_small", ("to",))),
    ("prism compiled replays (EASY, FCFS)", _prism_replays),
    ("outputs, routes and solves", _outputs),
)

#: Each step's cold seconds on a 2-core CI-like machine (2026-11-28), for the order of a
#: parallel run: the longest first.
COST_S: tuple[float, ...] = (22.0, 12.0, 5.0, 67.0, 4.0)


def _timed(index: int) -> tuple[int, float]:
    """Step ``index`` of :data:`STEPS` (a pool worker's task): its index and seconds."""
    t = time.perf_counter()
    STEPS[index][1]()
    return index, time.perf_counter() - t


def run(say: Callable[[str], None] = print, jobs: int = 1, steps: Sequence[int] | None = None) -> float:
    """Run the ``steps`` (indices into :data:`STEPS`; default all) on ``jobs`` processes (1: in
    this one, in order); ``say`` gets one line per step (from several processes: each one's
    lines as it reports them, one process after the other). Returns the seconds it all took
    (wall)."""
    t0 = time.perf_counter()
    steps = list(range(len(STEPS))) if steps is None else list(steps)
    if jobs <= 1:
        for index in steps:
            _, seconds = _timed(index)
            say(f"{PROG}: {STEPS[index][0]}: {seconds:.1f} s")
        return time.perf_counter() - t0
    # Child processes (``--steps``), each given the next longest step its share can take: new
    # interpreters, not forks of this one, and no multiprocessing pool, whose semaphores an
    # interrupted exit reported as leaked. numba writes each cache file whole, by renaming:
    # two processes compiling one kernel (the solvers) both finish with a valid cache.
    import subprocess

    shares: list[list[int]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    for index in sorted(steps, key=lambda i: -COST_S[i]):
        k = load.index(min(load))
        shares[k].append(index)
        load[k] += COST_S[index]
    from fattorus import interrupt

    env = {**os.environ, interrupt.QUIET: "1"}  # a Ctrl-C is one line, this process's
    children = [subprocess.Popen([sys.executable, "-m", "fattorus.precompile", "--jobs", "1", "--steps",
                                  ",".join(map(str, share))], stdout=subprocess.PIPE, text=True, env=env)
                for share in shares if share]
    try:
        for child in children:
            for line in child.stdout:
                say(line.rstrip("\n"))
        failed = [child.wait() for child in children]
    except BaseException:
        for child in children:
            child.kill()  # a Ctrl-C stops every step now
        raise
    if any(failed):
        raise RuntimeError(f"a precompile step failed (exit {max(failed)}; its error is above)")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: compile every kernel (:func:`run`); returns the exit status
    (0; 2 on a usage error, one line)."""
    from fattorus.args import OneLineParser

    parser = OneLineParser(prog=f"python -m {PROG}", error_prefix=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes compiling at once (default: 2, or 1 on a one-core machine)")
    parser.add_argument("--steps", default=None, help=argparse.SUPPRESS)  # a child's share: step indices
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: a whole number >= 1, got {args.jobs}")
    steps = None
    if args.steps is not None:
        parts = args.steps.split(",")
        if not all(p.isdecimal() and int(p) < len(STEPS) for p in parts):
            parser.error(f"--steps: step numbers 0 .. {len(STEPS) - 1}, comma-separated, got {args.steps!r}")
        steps = [int(p) for p in parts]
        run(lambda line: print(line, flush=True), 1, steps)  # a child: its step lines only
        return 0
    print(f"{PROG}: compiling the numba kernels into their caches (once per checkout; later runs load them)",
          flush=True)
    # A Ctrl-C leaves with one line (interrupt.run): what was compiled stays cached, the rest
    # compiles at its first use.
    try:
        total = run(lambda line: print(line, flush=True), args.jobs)
    except RuntimeError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    print(f"{PROG}: done in {total:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    from fattorus.args import run_piped

    sys.exit(run_piped(lambda: interrupt.run(PROG, main)))  # quiet, exit 141, when stdout's reader closes early
