"""Would computing each job's model work ahead, on a second thread, hide it (session 41)?

A ``speedup=model`` job's traffic, its flows on the ideal placement and its ideal step time
depend on the job alone (index, pattern, size), not on the running set. This script times that
work for the keyed-pattern jobs of the 30-day bench window (Atlas x2 on Cab, ``to``, EASY)
alone, the plain replay alone, and both at once with the work on a second thread. Session 41:
work 0.68-0.81 s, plain 0.81-0.99 s, together 2.0 s (worse than one after the other): the GIL
hand-offs cost more than the overlap. ``SI=<seconds>`` sets ``sys.setswitchinterval``; for
kernels that release the GIL, add ``nogil=True`` to the ``numba.njit`` decorators of
fattorus/kernels/{threefry,grid,select,maxmin_first_round,maxmin_compiled,linkmarks}.py and
fattorus/topology/fattree_host_routes.py in a scratch worktree (session 41: 1.94-2.0 s).
Writes nothing. Run from the repository root: ``.venv/bin/python docs/measurements/model_lookahead.py``.
"""

import os
import sys
import threading
import time

from fattorus import topology, workload
from fattorus.analysis import commtime, interference, patterns
from fattorus.bench.flow import trace_path
from fattorus.sched import replay

sys.setswitchinterval(float(os.environ.get("SI", "0.005")))
cab = topology.load("cab")
scaled, _ = workload.scale_nodes(workload.load(trace_path(), cores_per_node=8).jobs, 2, cab.n_nodes)
window = workload.first_days(scaled, 30)
captured = {}
bind = commtime.ModelRuntimes.bind


def capturing(self, prepared):
    captured["prepared"] = prepared
    return bind(self, prepared)


commtime.ModelRuntimes.bind = capturing


def model():
    return commtime.ModelRuntimes(cab, interference.parse_mix(interference.DEFAULT_MIX), 0.3, 0)


replay.replay(window, cab, "to", "easy", runtime_model=model())
nodes = captured["prepared"]["nodes"].to_numpy()
ahead = model()
ahead.bind(captured["prepared"])  # its own workspaces
keyed = [j for j in range(len(nodes)) if ahead._names[j] not in patterns.KEYLESS]


def work():
    for j in keyed:
        traffic = ahead._traffic(j, int(nodes[j]))
        if traffic is not None:
            routes, nbytes = ahead._job_flows(traffic, ahead._ideal_placements(int(nodes[j]))[0])
            ahead._solve(ahead._solver_flows(routes), nbytes, len(nbytes))


work()
for _ in range(2):
    t0 = time.perf_counter()
    work()
    print(f"work alone {time.perf_counter() - t0:.3f} s", flush=True)
for _ in range(2):
    t0 = time.perf_counter()
    replay.replay(window, cab, "to", "easy")
    print(f"plain alone {time.perf_counter() - t0:.3f} s", flush=True)
for _ in range(2):
    done = {}
    worker = threading.Thread(target=lambda: (t := time.perf_counter(), work(), done.update(s=time.perf_counter() - t)))
    t0 = time.perf_counter()
    worker.start()
    replay.replay(window, cab, "to", "easy")
    plain = time.perf_counter() - t0
    worker.join()
    print(f"plain beside the worker {plain:.3f} s, worker {done['s']:.3f} s, both {time.perf_counter() - t0:.3f} s",
          flush=True)
