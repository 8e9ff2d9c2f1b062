"""How fast the ``speedup=model`` bench replay could be if every max-min solve were free (session 13).

The 30-day Atlas x2 on Cab replay of ``python -m fattorus.bench --only flow`` (EASY, policy
``POL``, default ``to``) is run once to compile, once recording every
``ModelRuntimes._solve`` result (the solves, and since session 37 the first-round reads),
then twice with ``_solve`` answering from that
record in order (the replay is deterministic: same calls, same slowdowns — the printed hashes
of every job's slowdown must agree), then the plain replay twice. Writes nothing. Run from the
repository root: ``POL=to .venv/bin/python docs/measurements/model_floor.py [days]``.
"""

import hashlib
import os
import sys
import time

import numpy as np

from fattorus import topology, workload
from fattorus.analysis import commtime, interference
from fattorus.bench.flow import trace_path
from fattorus.sched import replay

policy = os.environ.get("POL", "to")
days = float(sys.argv[1]) if len(sys.argv) > 1 else 30
cab = topology.load("cab")
scaled, _ = workload.scale_nodes(workload.load(trace_path(), cores_per_node=8).jobs, 2, cab.n_nodes)
window = workload.first_days(scaled, days)
step = commtime.ModelRuntimes._solve
record: list[float] = []
answers = iter(())


def recording(self, route_ids, nbytes, own, count=None):
    record.append(step(self, route_ids, nbytes, own, count))
    return record[-1]


def answering(self, route_ids, nbytes, own, count=None):
    return next(answers)


def run(tag, model=True):
    m = commtime.ModelRuntimes(cab, interference.parse_mix(interference.DEFAULT_MIX), 0.3, 0) if model else None
    t0 = time.perf_counter()
    replay.replay(window, cab, policy, "easy", runtime_model=m)
    dt = time.perf_counter() - t0
    h = hashlib.sha256(np.nan_to_num(m.slowdown, nan=-1).tobytes()).hexdigest()[:12] if model else "-"
    print(f"{tag}: {dt:.2f} s  slowdown hash {h}", flush=True)


run("model, first run (compiles)")
commtime.ModelRuntimes._solve = recording
run("model, warm")
commtime.ModelRuntimes._solve = answering
for _ in range(2):
    answers = iter(record)
    run("model, solves free")
run("plain", model=False)
run("plain", model=False)
