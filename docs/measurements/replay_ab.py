"""Warm whole-replay time of one (machine, policy) on the bench's Atlas log (session 32).

``replay.replay`` (prepare, simulate, per-job outputs: APH, exposure, max hops) of the first
DAYS days of LLNL-Atlas x2 fit to MACHINE, EASY, once to warm up (compilations, caches), then
three timed runs; prints their median. To compare two versions of the code in the same
minutes, run it once per checkout: ``PYTHONPATH=<checkout> .venv/bin/python
docs/measurements/replay_ab.py edison compact 30`` (the first line printed names the package
that ran). Writes nothing.
"""

import statistics
import sys
import time

import fattorus
from fattorus import topology, workload
from fattorus.bench.replay import trace_path
from fattorus.sched import replay

print(fattorus.__file__)
machine, pol, days = sys.argv[1], sys.argv[2], float(sys.argv[3])
topo = topology.load(machine)
scaled, _ = workload.scale_nodes(workload.load(trace_path(), cores_per_node=8).jobs, 2, topo.n_nodes)
window = workload.first_days(scaled, days)
replay.replay(window, topo, pol, "easy")
times = []
for _ in range(3):
    t0 = time.perf_counter()
    replay.replay(window, topo, pol, "easy")
    times.append(time.perf_counter() - t0)
print(f"{machine} {pol} {days:g} days, {len(window)} jobs: median of 3 {statistics.median(times):.3f} s "
      f"({', '.join(f'{t:.3f}' for t in times)})")
