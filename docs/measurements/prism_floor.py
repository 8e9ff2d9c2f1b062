"""How fast the prism bench replay could be if every scored search were free (session 13).

The 30-day Atlas-fit-to-Blue-Waters replay of ``python -m fattorus.bench --only torus`` is run
once as usual, recording every ``Prism._search`` answer by machine content and job size, then
three times with the search replaced by a lookup of those answers (same placements: the
printed hashes of every start time and node set must agree), then ``first_fit`` three times.
Medians. Writes nothing. It measures the engine's Python loop (``compiled=False``: the loop
that calls ``Prism._search``); since session 28 a replay runs compiled by default. Run from
the repository root: ``.venv/bin/python docs/measurements/prism_floor.py [days]``.
"""

import hashlib
import statistics
import sys
import time

import numpy as np

from fattorus import topology
from fattorus.bench import torus as bench
from fattorus.sched import policy, replay
from fattorus.sched.policy.torus import prism

days = float(sys.argv[1]) if len(sys.argv) > 1 else bench.DAYS
bw = topology.load("bluewaters")
cols, usable = bench._arrays(days, bw)
warm, _ = bench._arrays(bench.WARMUP_DAYS, bw)
answers: dict = {}
search = prism.Prism._search


def recording(self, m, n):
    answers[(m.blocked.tobytes(), m.avail.tobytes(), n)] = found = search(self, m, n)
    return found


def lookup(self, m, n):
    return answers[(m.blocked.tobytes(), m.avail.tobytes(), n)]


def go(c, name="prism"):
    pol = policy.make(name, bw, {"ordering": "O2"}) if name == "first_fit" else policy.make(name, bw)
    return replay.simulate(*c, bw, pol, "easy", usable=usable, compiled=False)  # the loop that calls _search


def timed(name="prism"):
    t0 = time.perf_counter()
    out = go(cols, name)
    return time.perf_counter() - t0, out


def digest(out):
    return hashlib.sha256(out.start.tobytes() + b"".join(np.sort(a).tobytes() for a in out.alloc)).hexdigest()[:12]


go(warm), go(warm, "first_fit")
prism.Prism._search = recording
t_search, with_search = timed()
prism.Prism._search = lookup
free = [timed() for _ in range(3)]
ff = statistics.median(timed("first_fit")[0] for _ in range(3))
t_free = statistics.median(t for t, _ in free)
print(f"{len(cols[0])} jobs: prism {t_search:.2f} s, searches free {t_free:.2f} s, first_fit {ff:.3f} s; "
      f"free / first_fit {t_free / ff:.1f}x; hashes {digest(with_search)} {digest(free[0][1])}")
