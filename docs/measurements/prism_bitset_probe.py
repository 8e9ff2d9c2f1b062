"""What a compiled shape test would buy ``prism`` (issue 12, session 25; docs/open-targets.md).

``Prism._starts`` (where shape ``i`` fits for an ``n``-node job: clear places with at least
``n`` usable nodes) rewritten as a bitset kernel — the blocked routers of each (x, y) column
as one 24-bit word, dilated along z, y and x by the shape's extents — compiled with numba.
Every call of the 30-day bench replay (``python -m fattorus.bench --only torus``) is recorded,
the kernel's answer checked against NumPy's on each (``mismatches`` must be 0), then both are
timed over all of them (three runs, medians); then the kernel's part without the usable
counts (``clear-only``). numba is not a fattorus dependency: install it apart, e.g.
``.venv/bin/pip install --target /tmp/nb --no-deps numba llvmlite`` and run from the repository root with
``PYTHONPATH=/tmp/nb .venv/bin/python docs/measurements/prism_bitset_probe.py``. Writes nothing.
"""
import time, statistics
import numpy as np
import numba
from fattorus import topology
from fattorus.bench import torus as bench
from fattorus.sched import policy, replay
from fattorus.sched.policy.torus import prism

bw = topology.load("bluewaters")
cols, usable = bench._arrays(bench.DAYS, bw)
machines, calls = {}, []
ST = prism.Prism._starts
def rec(self, m, n, i):
    k = id(m)
    if k not in machines:
        machines[k] = m
    r = ST(self, m, n, i)
    calls.append((k, n, i, None if r is None else (r[0].copy(), r[1].copy())))
    return r
prism.Prism._starts = rec
pol = policy.make("prism", bw)
replay.simulate(*cols, bw, pol, "easy", usable=usable)
prism.Prism._starts = ST
print("calls", len(calls), "machines", len(machines))

X, Y, Z = bw.dims

@numba.njit(cache=False)
def zmasks(blocked):
    X, Y, Z = blocked.shape
    out = np.zeros((X, Y), np.uint64)
    for x in range(X):
        for y in range(Y):
            w = np.uint64(0)
            for z in range(Z):
                if blocked[x, y, z]:
                    w |= np.uint64(1) << np.uint64(z)
            out[x, y] = w
    return out

@numba.njit(cache=False)
def dilated_yz(zm, Z, b, c, ny):
    """Per (x, y start): the z starts whose b x c window (cyclic) in y and z holds a blocked router."""
    X, Y = zm.shape
    full = (np.uint64(1) << np.uint64(Z)) - np.uint64(1)
    dz = np.empty((X, Y), np.uint64)
    for x in range(X):
        for y in range(Y):
            w = zm[x, y]
            w2 = w | (w << np.uint64(Z))
            d = np.uint64(0)
            for k in range(c):
                d |= w2 >> np.uint64(k)
            dz[x, y] = d & full
    dy = np.empty((X, ny), np.uint64)
    for x in range(X):
        for y in range(ny):
            d = np.uint64(0)
            for k in range(b):
                d |= dz[x, (y + k) % Y]
            dy[x, y] = d
    return dy, full


@numba.njit(cache=False)
def starts_kernel(zm, Z, ut, a, b, c, nx, ny, nz, n):
    X = zm.shape[0]
    dy, full = dilated_yz(zm, Z, b, c, ny)
    at = np.empty(nx * ny * nz, np.int64)
    av = np.empty(nx * ny * nz, np.int64)
    cnt = 0
    anyclear = False
    for x in range(nx):
        for y in range(ny):
            d = np.uint64(0)
            for k in range(a):
                d |= dy[(x + k) % X, y]
            if d == full:
                continue
            for z in range(nz):
                if (d >> np.uint64(z)) & np.uint64(1):
                    continue
                anyclear = True
                u = (ut[x + a, y + b, z + c] - ut[x, y + b, z + c] - ut[x + a, y, z + c] - ut[x + a, y + b, z]
                     + ut[x, y, z + c] + ut[x, y + b, z] + ut[x + a, y, z] - ut[x, y, z])
                if u >= n:
                    at[cnt] = (x * ny + y) * nz + z
                    av[cnt] = u
                    cnt += 1
    return at[:cnt], av[:cnt], anyclear

ut = pol._usable_table.astype(np.int64)
zm_of = {k: zmasks(m.blocked) for k, m in machines.items()}
# check
bad = 0
for k, n, i, r in calls:
    shape, starts = pol.shape_t[i], pol.starts_t[i]
    if pol._usable_range(i)[1] < n:
        got = None
    else:
        at, av, anyc = starts_kernel(zm_of[k], Z, ut, *shape, *starts, n)
        got = (at, av) if len(at) else None
    if (got is None) != (r is None) or (r is not None and not (np.array_equal(got[0], r[0]) and np.array_equal(got[1], r[1]))):
        bad += 1
print("mismatches", bad)
# timing over all calls, 3 repeats each
def t_numba():
    t = time.perf_counter()
    for k, n, i, r in calls:
        if pol._usable_range(i)[1] < n:
            continue
        starts_kernel(zm_of[k], Z, ut, *pol.shape_t[i], *pol.starts_t[i], n)
    return time.perf_counter() - t
def t_numpy(share: bool):
    # share=False: each call makes its own x differences (the replay shares them per machine
    # state: between this and share=True, which finds every one made already).
    t = time.perf_counter()
    for k, n, i, r in calls:
        m = machines[k]
        if not share:
            m.slabs.clear()
        ST(pol, m, n, i)
    return time.perf_counter() - t
tz = time.perf_counter(); [zmasks(m.blocked) for m in machines.values()]; tz = time.perf_counter() - tz
a = [t_numba() for _ in range(3)]
b = [t_numpy(False) for _ in range(3)]
c = [t_numpy(True) for _ in range(3)]
print(f"numba {statistics.median(a):.3f} s; numpy {statistics.median(b):.3f} s (own x differences), "
      f"{statistics.median(c):.3f} s (all shared); column words of every machine {tz:.3f} s")

@numba.njit(cache=False)
def clear_only(zm, Z, a, b, c, nx, ny, nz):
    X = zm.shape[0]
    dy, full = dilated_yz(zm, Z, b, c, ny)
    mask = (np.uint64(1) << np.uint64(nz)) - np.uint64(1)
    cnt = 0
    for x in range(nx):
        for y in range(ny):
            d = np.uint64(0)
            for k in range(a):
                d |= dy[(x + k) % X, y]
            v = ~d & mask
            while v:
                v &= v - np.uint64(1)
                cnt += 1
    return cnt
def t_clear():
    t = time.perf_counter(); tot = 0
    for k, n, i, r in calls:
        if pol._usable_range(i)[1] < n:
            continue
        tot += clear_only(zm_of[k], Z, *pol.shape_t[i], *pol.starts_t[i])
    return time.perf_counter() - t, tot
def t_py():
    t = time.perf_counter()
    for k, n, i, r in calls:
        if pol._usable_range(i)[1] < n:
            continue
        pol.shape_t[i]; pol.starts_t[i]
    return time.perf_counter() - t
print("clear-only", [t_clear() for _ in range(3)], "python loop alone", t_py())

