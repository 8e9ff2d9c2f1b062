"""What a compiled search would buy ``prism`` (issue 12, session 25; docs/open-targets.md).

``Prism._search`` (best-first over the minimal shapes, then every shape in order of size; the
same scores, ties and dead-shape marks) as one numba call per search, its shape test a bitset
kernel: each (x, y) column's blocked routers one 24-bit word, dilated along z, y and x by the
shape's extents (by doubling), clear places read bit by bit with their usable count. The
bench's replay (``python -m fattorus.bench --only torus``: Atlas fit to Blue Waters, EASY,
``DAYS`` or the first argument) runs with NumPy's search, then three times with this one:
the printed hashes of every start time and node set must agree (same placements); then
medians of the whole replays beside ``first_fit``, and the time spent in the searches.
Superseded in session 28 by the whole replay compiled
(``fattorus/sched/policy/torus/prism_compiled.py``, which reuses this probe's bitset shape
test); numba is a dependency since then. Run from the repository root with ``.venv/bin/python
docs/measurements/prism_numba_search_probe.py [days]``; it patches ``Prism._search``, which
only the engine's Python loop calls, so its replays pass ``compiled=False``. Writes nothing.
"""
import hashlib
import heapq
import statistics
import sys
import time
import numpy as np
import numba
from numba.typed import List
from fattorus import topology
from fattorus.bench import torus as bench
from fattorus.sched import policy, replay
from fattorus.sched.policy.torus import prism, prism_compiled

bw = topology.load("bluewaters")
cols, usable = bench._arrays(float(sys.argv[1]) if len(sys.argv) > 1 else bench.DAYS, bw)
warm, _ = bench._arrays(bench.WARMUP_DAYS, bw)
Xd, Yd, Zd = bw.dims


@numba.njit(cache=False)
def col_words(blocked):
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


# The shared kernels, as the compiled replay has them (identical to this probe's own, session 25).
box, ctz, dilate_rows = prism_compiled._box, prism_compiled._ctz, prism_compiled._dilate_rows


@numba.njit(cache=False)
def starts(zm, Z, ut, a, b, c, nx, ny, nz, n):
    """(flat ids, usable counts) of clear starts with >= n usable; and whether any start is clear."""
    X, Y = zm.shape
    full = (np.uint64(1) << np.uint64(Z)) - np.uint64(1)
    dz = np.empty((X, Y), np.uint64)
    for x in range(X):
        for y in range(Y):
            w = zm[x, y]
            d = w | (w << np.uint64(Z))
            span = 1
            while span * 2 <= c:
                d |= d >> np.uint64(span)
                span *= 2
            if span < c:
                d |= d >> np.uint64(c - span)
            dz[x, y] = d & full
    dy = dilate_rows(dz.T.copy(), Y, b, ny)  # (ny, X)
    dx = dilate_rows(dy.T.copy(), X, a, nx)  # (nx, ny)
    mask = (np.uint64(1) << np.uint64(nz)) - np.uint64(1)
    at = np.empty(nx * ny * nz, np.int64)
    av = np.empty(nx * ny * nz, np.int64)
    cnt = 0
    anyclear = False
    for x in range(nx):
        for y in range(ny):
            v = ~dx[x, y] & mask
            if v:
                anyclear = True
            while v:
                z = ctz(v)
                v &= v - np.uint64(1)
                u = box(ut, x, y, z, a, b, c)
                if u >= n:
                    at[cnt] = (x * ny + y) * nz + z
                    av[cnt] = u
                    cnt += 1
    return at[:cnt], av[:cnt], anyclear


@numba.njit(cache=False)
def contact_of(both, pack, dims, a, b, c, nx, ny, nz, at):
    ga = min(a + 2, dims[0]) if a < dims[0] else a
    gb = min(b + 2, dims[1]) if b < dims[1] else b
    gc = min(c + 2, dims[2]) if c < dims[2] else c
    shell = ga * gb * gc - a * b * c
    out = np.zeros(len(at))
    if shell == 0:
        return out
    for q in range(len(at)):
        f = at[q]
        x, r = f // (ny * nz), f % (ny * nz)
        y, z = r // nz, r % nz
        lx = (x - 1) % dims[0] if a < dims[0] else x
        ly = (y - 1) % dims[1] if b < dims[1] else y
        lz = (z - 1) % dims[2] if c < dims[2] else z
        s = np.int64(box(both, lx, ly, lz, ga, gb, gc)) & np.int64(0xFFFFFFFF)
        out[q] = (s >> pack) / shell
    return out


@numba.njit(cache=False)
def mark_dead(dead, shapes, sx, sy, sz):
    for j in range(len(dead)):
        if shapes[j, 0] >= sx and shapes[j, 1] >= sy and shapes[j, 2] >= sz:
            dead[j] = True


@numba.njit(cache=False)
def first_step(zm, Z, ut, shapes, starts_t, umax, dead, i, n):
    a, b, c = shapes[i, 0], shapes[i, 1], shapes[i, 2]
    nx, ny, nz = starts_t[i, 0], starts_t[i, 1], starts_t[i, 2]
    if umax[i] < n:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    at, av, anyclear = starts(zm, Z, ut, a, b, c, nx, ny, nz, n)
    if len(at) == 0 and not anyclear:
        mark_dead(dead, shapes, a, b, c)
    return at, av


@numba.njit(cache=False)
def scored(both, pack, dims, shapes, starts_t, i, at, base, contact_w, touch_i):
    a, b, c = shapes[i, 0], shapes[i, 1], shapes[i, 2]
    nx, ny, nz = starts_t[i, 0], starts_t[i, 1], starts_t[i, 2]
    if touch_i != 0.0:
        score = base + contact_w * contact_of(both, pack, dims, a, b, c, nx, ny, nz, at)
    else:
        score = base
    top = score.max()
    q = 0
    while score[q] != top:
        q += 1
    return top, at[q]


@numba.njit(cache=False)
def best_first(zm, Z, ut, both, pack, dims, shapes, starts_t, slots, umax, dead, cand, bound, touch, bis, n,
               fill_w, bis_w, contact_w):
    heap = [(0.0, 0, 0)]
    heap.pop()
    for k in range(len(cand)):
        heap.append((-(bound[k] - contact_w + touch[cand[k]]), k, 0))

    heapq.heapify(heap)
    store_at = List()
    store_base = List()
    slot_of = np.full(len(cand), -1, np.int64)
    have = False
    bk0, bk1, bk2 = 0.0, 0, 0
    best_i, best_pos = -1, -1
    while len(heap):
        neg_ub, k, stage = heapq.heappop(heap)
        if have and -neg_ub < -bk0 - 1e-12:
            break
        i = cand[k]
        if stage == 0:
            if dead[i]:
                continue
            at, av = first_step(zm, Z, ut, shapes, starts_t, umax, dead, i, n)
            if len(at) == 0:
                continue
            base = fill_w * n / av + bis_w * bis[i]
            slot_of[k] = len(store_at)
            store_at.append(at)
            store_base.append(base)
            heapq.heappush(heap, (-(base.max() + touch[i]), k, 1))
            continue
        top, pos = scored(both, pack, dims, shapes, starts_t, i, store_at[slot_of[k]], store_base[slot_of[k]],
                          contact_w, touch[i])
        key0, key1, key2 = -top, slots[i], k
        if (not have) or (key0, key1, key2) < (bk0, bk1, bk2):
            have = True
            bk0, bk1, bk2 = key0, key1, key2
            best_i, best_pos = i, pos
    return best_i, best_pos


@numba.njit(cache=False)
def in_size_order(zm, Z, ut, both, pack, dims, shapes, starts_t, slots, umax, dead, cand, touch, bis, n,
                  fill_w, bis_w, contact_w, slack):
    have = False
    bk0, bk1 = 0.0, 0
    best_i, best_pos = -1, -1
    limit = np.inf
    for i in cand:
        if slots[i] > limit:
            break
        if dead[i]:
            continue
        at, av = first_step(zm, Z, ut, shapes, starts_t, umax, dead, i, n)
        if len(at) == 0:
            continue
        limit = min(limit, slack * slots[i])
        base = fill_w * n / av + bis_w * bis[i]
        if have and -(base.max() + touch[i]) > bk0 + 1e-12:
            continue
        top, pos = scored(both, pack, dims, shapes, starts_t, i, at, base, contact_w, touch[i])
        if (not have) or (-top, slots[i]) < (bk0, bk1):
            have = True
            bk0, bk1 = -top, slots[i]
            best_i, best_pos = i, pos
    return best_i, best_pos


KT = [0.0, 0.0]


def install(pol_cls):
    def _search(self, m, n):
        if not hasattr(self, "_nb"):
            shapes = np.asarray(self.shapes, np.int64)
            starts_t = np.asarray(self.starts_t, np.int64)
            umax = np.array([self._usable_range(i)[1] for i in range(len(shapes))], np.int64)
            self._nb = (shapes, starts_t, umax, self._usable_table.astype(np.int64), np.asarray(self.topo.dims, np.int64),
                        np.asarray(self.slots, np.int64))
        shapes, starts_t, umax, ut, dims, slots = self._nb
        zm = getattr(m, "_zm", None)
        if zm is None:
            zm = m._zm = col_words(m.blocked)
        prm = self.params
        touch = self._touch(m)
        bis = self.bisection_for(n)
        cand, bound = self._minimal(n)
        _t0 = time.perf_counter()
        i, pos = best_first(zm, Zd, ut, m.both, self.pack, dims, shapes, starts_t, slots, umax, m.dead,
                            np.asarray(cand, np.int64), np.asarray(bound, np.float64), touch, bis, n,
                            float(prm.fill), float(prm.bisection), float(prm.contact))
        KT[0] += time.perf_counter() - _t0
        if i < 0:
            _t0 = time.perf_counter()
            i, pos = in_size_order(zm, Zd, ut, m.both, self.pack, dims, shapes, starts_t, slots, umax, m.dead,
                                   np.flatnonzero(self.slots >= n).astype(np.int64), touch, bis, n,
                                   float(prm.fill), float(prm.bisection), float(prm.contact), float(prm.slack))
            KT[1] += time.perf_counter() - _t0
        if i < 0:
            return None
        return tuple(int(c) for c in np.unravel_index(pos, self.starts_t[i])), self.shape_t[i]
    pol_cls._search = _search


def go(c, name="prism"):
    pol = policy.make(name, bw, {"ordering": "O2"}) if name == "first_fit" else policy.make(name, bw)
    return replay.simulate(*c, bw, pol, "easy", usable=usable, compiled=False)  # the loop that calls _search


def digest(out):
    return hashlib.sha256(out.start.tobytes() + b"".join(np.sort(a).tobytes() for a in out.alloc)).hexdigest()[:12]


def timed(name="prism"):
    t0 = time.perf_counter()
    out = go(cols, name)
    return time.perf_counter() - t0, out


orig = prism.Prism._search
go(warm), go(warm, "first_fit")
t_np, out_np = timed()
install(prism.Prism)
go(warm)
runs = [timed() for _ in range(3)]
prism.Prism._search = orig
np_runs = [timed()[0] for _ in range(2)] + [t_np]
ff = [timed("first_fit")[0] for _ in range(3)]
print("hash numpy", digest(out_np), "numba", {digest(o) for _, o in runs})
print(f"prism numpy {statistics.median(np_runs):.3f} s, numba search {statistics.median(t for t, _ in runs):.3f} s, "
      f"first_fit {statistics.median(ff):.3f} s -> {statistics.median(t for t, _ in runs) / statistics.median(ff):.2f}x")

acc = [0.0, 0]
def timing(f):
    def g(self, m, n):
        t = time.perf_counter(); r = f(self, m, n); acc[0] += time.perf_counter() - t; acc[1] += 1; return r
    return g
prism.Prism._search = timing(orig)
go(cols); print("numpy search total", acc); acc[:] = [0.0, 0]
install(prism.Prism); prism.Prism._search = timing(prism.Prism._search)
KT[:] = [0.0, 0.0]; go(cols); print("numba search total", acc, "best_first", KT[0], "in_size_order", KT[1])
