"""Audit one or more fattorus replay run directories against the spec, with independent code.

usage: python check_run.py RUN_DIR [RUN_DIR ...]
Imports nothing from fattorus. Reads jobs.parquet / summary.json / utilization.parquet /
skipped.parquet, re-reads the SWF log itself (swfload.py), derives the topology from the
spec's numbering (topo.py).
"""
import json, sys, os, math, collections
import numpy as np
import polars as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swfload, topo as T

COUNT_POLICIES = {'to', 'to_random', 'first_fit', 'compact', 'random_group', 'random_router',
                  'random_chassis', 'round_robin_node', 'round_robin_router'}
EPS = 1e-6


class Report:
    def __init__(self, name):
        self.name = name; self.viol = collections.defaultdict(list); self.stats = collections.Counter()

    def bad(self, key, item):
        self.viol[key].append(item)

    def show(self):
        print(f'== {self.name}')
        for k, v in sorted(self.stats.items()):
            print(f'   {k}: {v}')
        if not self.viol:
            print('   NO VIOLATIONS')
        for k, v in self.viol.items():
            print(f'   VIOLATION {k}: {len(v)}; first: {v[:6]}')


# ---------------------------------------------------------------- count-based EASY reference
def easy_count_reference(sub, jid, N, rt, est, M, fcfs=False):
    """Classic count-based EASY (Lifka; Mu'alem & Feitelson) / FCFS on M nodes; returns start times."""
    n = len(sub)
    order = sorted(range(n), key=lambda i: (sub[i], jid[i]))
    start = np.full(n, np.nan)
    ends = collections.defaultdict(list)  # time -> jobs
    import heapq
    evq = []
    for i in order:
        heapq.heappush(evq, (sub[i], 1, i))
    free = M
    queue = []  # in order
    running = {}  # i -> (end, est_end)
    while evq:
        t = evq[0][0]
        subs = []
        while evq and evq[0][0] == t:
            _, kind, i = heapq.heappop(evq)
            if kind == 0:
                free += N[i]; del running[i]
            else:
                subs.append(i)
        subs.sort(key=lambda i: (sub[i], jid[i]))
        queue.extend(subs)

        def begin(i):
            nonlocal free
            start[i] = t; free -= N[i]
            running[i] = (t + rt[i], t + est[i])
            heapq.heappush(evq, (t + rt[i], 0, i))
        while queue and N[queue[0]] <= free:
            begin(queue.pop(0))
        if fcfs or not queue:
            continue
        h = queue[0]
        # shadow
        acc = free; shadow = None
        ests = sorted(set(ee for (_, ee) in running.values()))
        for e in ests:
            # free now + nodes of every job whose estimated end is at or before e
            acc = free + sum(N[i] for i, (_, ee) in running.items() if ee <= e)
            if acc >= N[h]:
                shadow = e; break
        extra = acc - N[h]
        keep = [h]
        for i in queue[1:]:
            if N[i] <= free and t + est[i] <= shadow:
                begin(i)
            elif N[i] <= free and N[i] <= extra:
                begin(i); extra -= N[i]
            else:
                keep.append(i)
        queue = keep
    return start



# ---------------------------------------------------------------- machine state for feasibility
class State:
    """Per-leaf free counts and per-leaf/pod type holds for ta; plain free count otherwise."""

    def __init__(self, top, kind, policy, M):
        self.top, self.kind, self.policy = top, kind, policy
        self.free = M
        if kind == 'fattree':
            self.lf = np.full(top.nleaves, top.k, dtype=np.int64)
            self.t2 = np.zeros(top.nleaves, dtype=np.int64)
            self.t3 = np.zeros(top.nleaves, dtype=np.int64)

    def copy(self):
        s = State.__new__(State)
        s.__dict__.update(self.__dict__)
        if self.kind == 'fattree':
            s.lf, s.t2, s.t3 = self.lf.copy(), self.t2.copy(), self.t3.copy()
        return s

    def apply(self, job, sign):  # sign -1 = occupy, +1 = release
        self.free += sign * job['N']
        if self.kind == 'fattree':
            lv, c = job['leaves'], job['lcount']
            self.lf[lv] += sign * c
            if job['type'] == 'T2':
                self.t2[lv] -= sign * c
            elif job['type'] == 'T3':
                self.t3[lv] -= sign * c

    def feasible(self, N):
        if self.policy in COUNT_POLICIES or self.policy == 'tree_bestfit':
            return self.free >= N
        if self.policy == 'ta':
            top = self.top
            if N <= top.k:
                return self.lf.max() >= N
            if N <= top.p:
                u = np.where((self.t2 == 0) & (self.t3 == 0), self.lf, 0)
                return u.reshape(top.P, top.L).sum(1).max() >= N
            pod_t3 = self.t3.reshape(top.P, top.L).sum(1) > 0
            u = np.where(self.t2 == 0, self.lf, 0).reshape(top.P, top.L)
            u[pod_t3] = 0
            return u.sum() >= N
        return None  # unknown (prism, feature)


def main(run):
    R = Report(run)
    S = json.load(open(os.path.join(run, 'summary.json')))
    cfg = S['config']
    df = pl.read_parquet(os.path.join(run, 'jobs.parquet'))
    tcfg = S['topology']; top = T.make(tcfg); kind = tcfg['kind']
    policy, sched, spd, seed = cfg['policy'], cfg['sched'], cfg['speedup'], cfg['seed']
    M = S.get('usable_nodes', S['n_nodes'])
    n = df.height
    R.stats['jobs'] = n
    jid = df['job_id'].to_numpy(); sub = df['submit_s'].to_numpy(); st = df['start_s'].to_numpy()
    en = df['end_s'].to_numpy(); N = df['nodes'].to_numpy().astype(np.int64)
    rt = df['runtime_s'].to_numpy(); est = df['estimate_s'].to_numpy(); wait = df['wait_s'].to_numpy()
    bf = df['backfilled'].to_numpy(); sh = df['shadow_s'].to_numpy(); jt = df['job_type'].to_list()
    aph = df['aph'].to_numpy(); alloc = [np.asarray(a, dtype=np.int64) for a in df['alloc'].to_list()]
    exposed = df['exposed'].to_numpy()

    # ---------------- workload, independently
    w = cfg['workload']
    if w['format'] in ('swf', 'auto') and '.swf' in w['path']:
        cpn = w['cores_per_node'] or swfload.header_cores(w['path'])
        L = swfload.jobs_table(w['path'], cpn, w['scale_factor'], M,
                               w['window_start_days'], w['window_days'])
        idx = {j: i for i, j in enumerate(L['job_id'])}
        li = np.array([idx.get(j, -1) for j in jid])
        if (li < 0).any():
            R.bad('job not in my window', list(jid[li < 0][:5]))
        li = np.where(li < 0, 0, li)
        myN = L['nodes'][li]; mysub = L['submit'][li]; myrt = L['runtime'][li]; myest = L['est'][li]
        for nm, a, b in (('nodes', N, myN), ('submit', sub, mysub), ('estimate', est, myest)):
            bad = np.nonzero(np.abs(a - b) > EPS)[0]
            if len(bad):
                R.bad(f'{nm} != log', [(int(jid[i]), a[i], b[i]) for i in bad[:5]])
        R.stats['jobs checked against log (nodes, submit, estimate)'] = n
        # counts
        reasons = collections.Counter(L['reason'])
        replay_ids = set(L['job_id'][L['reason'] == ''])
        if set(jid) != replay_ids:
            R.bad('replayed set != my replayable set', (len(set(jid) - replay_ids), len(replay_ids - set(jid))))
        mine = {'read': len(L['job_id']), 'replayed': len(replay_ids)}
        got = {'read': S['counts']['read'], 'replayed': S['counts']['replayed']}
        for r, c in reasons.items():
            if r:
                mine[r] = c
        for r, c in S['counts']['skipped'].items():
            got[r] = c
        for k_ in set(mine) | set(got):
            if mine.get(k_, 0) != got.get(k_, 0):
                R.bad('count mismatch', (k_, 'summary', got.get(k_, 0), 'mine', mine.get(k_, 0)))
        R.stats['counts (mine)'] = str(dict(mine))
        if w.get('outside_window') is not None and w['outside_window'] != L['outside']:
            R.bad('outside_window mismatch', (w['outside_window'], L['outside']))
        skp = os.path.join(run, 'skipped.parquet')
        if os.path.exists(skp):
            sk = pl.read_parquet(skp)
            mysk = {(int(j), r) for j, r in zip(L['job_id'], L['reason']) if r and r != 'dropped_by_scaling'}
            theirs = {(int(j), r) for j, r in zip(sk['job_id'], sk['reason'])}
            if mysk != theirs:
                R.bad('skipped.parquet != my skips', (len(mysk - theirs), len(theirs - mysk), list(mysk ^ theirs)[:4]))
        # speedup
        check_speedup(R, cfg, N, rt, myrt, jid, run)
    else:
        myrt = None

    # ---------------- generic job checks
    def chk(name, mask):
        bad = np.nonzero(mask)[0]
        R.stats['checked: ' + name] = n
        if len(bad):
            R.bad(name, [(int(jid[i])) for i in bad[:6]])
    chk('start >= submit', st < sub)
    chk('end == start + runtime', np.abs(en - (st + rt)) > 1e-6 * np.maximum(1, np.abs(en)))
    chk('wait == start - submit', np.abs(wait - (st - sub)) > 1e-6)
    chk('runtime <= estimate', rt > est + 1e-9)
    chk('runtime > 0', ~(rt > 0))
    chk('len(alloc) == nodes', np.array([len(a) for a in alloc]) != N)
    chk('alloc distinct and in range', np.array([len(np.unique(a)) != len(a) or a.min() < 0 or a.max() >= top.n for a in alloc]))
    if kind == 'fattree':
        chk('job_type by size', np.array([top.jtype(x) for x in N]) != np.array(jt))
    # ---------------- no shared node at any time
    overlaps = node_overlaps(st, en, alloc, top.n)
    R.stats['checked: node overlap (node-intervals)'] = int(N.sum())
    if overlaps:
        R.bad('node used by two jobs at once', [(int(jid[a]), int(jid[b]), int(nd)) for a, b, nd in overlaps[:6]])
    # bluewaters: XK block must never be allocated
    if tcfg['name'] == 'bluewaters' and 'node_kinds' in tcfg:
        x, y, z = top.coords(np.concatenate(alloc))
        o = tcfg['node_kinds'][0]['region']['origin']; shp = tcfg['node_kinds'][0]['region']['shape']
        inx = ((x - o[0]) % top.X) < shp[0]; iny = ((y - o[1]) % top.Y) < shp[1]; inz = ((z - o[2]) % top.Z) < shp[2]
        R.stats['checked: nodes not in XK block'] = len(x)
        if (inx & iny & inz).any():
            R.bad('XE job on XK block node', int((inx & iny & inz).sum()))

    # ---------------- scheduler semantics
    check_sched(R, top, kind, policy, sched, M, jid, sub, st, en, N, rt, est, bf, sh, jt, alloc)
    if policy in COUNT_POLICIES or (policy == 'tree_bestfit'):
        ref = easy_count_reference(sub, jid, N, rt, est, M, fcfs=(sched == 'fcfs'))
        bad = np.nonzero(np.abs(ref - st) > 1e-6)[0]
        key = 'start != count-based EASY reference' + (' (info only: tree_bestfit)' if policy == 'tree_bestfit' else '')
        R.stats['compared with count-based ' + sched.upper() + ' reference'] = n
        if len(bad):
            R.bad(key, [(int(jid[i]), st[i], ref[i]) for i in bad[:5]] + [f'{len(bad)} jobs'])

    # ---------------- fat-tree extras: brute-force APH on a few jobs, max_hops, ideal_aph
    if kind == 'fattree':
        check_ft_extras(R, top, df, jid, N, alloc, aph)
    if kind == 'torus3d' and policy == 'prism':
        check_prisms(R, top, jid, st, en, alloc)
    # ---------------- ta interference freedom
    if kind == 'fattree':
        check_interference(R, top, policy, jid, st, en, jt, alloc, exposed)

    # ---------------- metrics
    check_metrics(R, S, run, top, kind, jid, sub, st, en, N, wait, aph, alloc, M, exposed)
    R.show()
    return R


def check_ft_extras(R, top, df, jid, N, alloc, aph):
    rng = np.random.default_rng(0)
    pick = rng.choice(len(jid), size=min(25, len(jid)), replace=False)
    for i in pick:  # definition-level: sum over ordered pairs i != j of H(i, j) / (n (n - 1))
        a = alloc[i]; n = len(a)
        if n < 2:
            ref = 0.0
        else:
            s_ = sum(top.hop_pair(int(x), int(y)) for x in a for y in a if x != y)
            ref = s_ / (n * (n - 1))
        if abs(ref - aph[i]) > 1e-12:
            R.bad('aph brute force', (int(jid[i]), aph[i], ref))
    R.stats['checked: aph brute-force pairwise (jobs)'] = len(pick)
    if 'max_hops' in df.columns:
        mh = df['max_hops'].to_numpy()
        mine = np.array([0 if len(np.unique(top.leaf(a))) == 1 else (2 if len(np.unique(top.pod(a))) == 1 else 4) for a in alloc])
        bad = np.nonzero(mine != mh)[0]
        R.stats['checked: max_hops'] = len(mh)
        if len(bad):
            R.bad('max_hops', [(int(jid[i]), int(mh[i]), int(mine[i])) for i in bad[:5]])
    if 'ideal_aph' in df.columns:
        ia = df['ideal_aph'].to_numpy()
        mine = np.array([top.aph(np.arange(x)) for x in N])  # fill one leaf, then one pod, then pods (node ids in order)
        bad = np.nonzero(np.abs(mine - ia) > 1e-9)[0]
        R.stats['checked: ideal_aph (fill leaf, pod, pods)'] = len(ia)
        if len(bad):
            R.bad('ideal_aph', [(int(jid[i]), int(N[i]), ia[i], mine[i]) for i in bad[:5]])


def ring_arc(c, D):
    u = np.unique(c)
    if len(u) == 1:
        return int(u[0]), 1
    gaps = np.diff(np.concatenate([u, [u[0] + D]]))
    g = int(np.argmax(gaps))
    start = int(u[(g + 1) % len(u)])
    return start, D - int(gaps[g]) + 1


def check_prisms(R, top, jid, st, en, alloc):
    Ds = (top.X, top.Y, top.Z)
    boxes = []
    badshape = []
    for i, a in enumerate(alloc):
        cs = top.coords(a)
        arcs = [ring_arc(c, D) for c, D in zip(cs, Ds)]
        xs, ys, zs = [[(s0 + d) % D for d in range(e)] for (s0, e), D in zip(arcs, Ds)]
        boxes.append(((np.array(xs)[:, None, None] * top.Y + np.array(ys)[None, :, None]) * top.Z + np.array(zs)[None, None, :]).ravel())
    ev = sorted([(en[i], 0, i) for i in range(len(jid))] + [(st[i], 1, i) for i in range(len(jid))])
    owner = {}
    clash = []
    for t, k, i in ev:
        if k == 0:
            for r in boxes[i]:
                if owner.get(r) == i:
                    del owner[r]
        else:
            for r in boxes[i]:
                if r in owner:
                    clash.append((int(jid[owner[r]]), int(jid[i]), int(r)))
                    break
            for r in boxes[i]:
                owner[r] = i
    R.stats['checked: prism runs, concurrent jobs bounding boxes disjoint (jobs)'] = len(jid)
    if badshape:
        R.bad('prism extent neither full ring nor <= half', badshape[:5] + [len(badshape)])
    if clash:
        R.bad('concurrent prism bounding boxes share a router', clash[:5] + [len(clash)])


def node_overlaps(st, en, alloc, nn):
    ev = []
    for i, a in enumerate(alloc):
        ev.append((st[i], 1, i)); ev.append((en[i], 0, i))
    ev.sort()
    owner = np.full(nn, -1)
    out = []
    for t, k, i in ev:
        if k == 0:
            owner[alloc[i]] = np.where(owner[alloc[i]] == i, -1, owner[alloc[i]])
        else:
            o = owner[alloc[i]]
            busy = o >= 0
            if busy.any():
                b = np.nonzero(busy)[0][0]
                out.append((int(o[b]), i, int(alloc[i][b])))
            owner[alloc[i]] = i
    return out


def check_speedup(R, cfg, N, rt, logrt, jid, run):
    import yaml
    name = cfg['speedup']
    path = f'/work/main/conf/speedup/{name}.yaml'
    edits = dict(cfg.get('speedup_edits') or {})
    cap = int(edits.pop('cap', 512))
    if edits:
        R.stats['speedup edits (not checked)'] = str(cfg['speedup_edits'])
        return
    # the scenario rules from the SPEC table (scenarios.md), not the yaml
    spec = {
        'none': [],
        'x5': [(5, None, [(0.05, 0.05)])], 'x10': [(5, None, [(0.10, 0.10)])], 'x20': [(5, None, [(0.20, 0.20)])],
        'v1': [(1, None, [(0, .1), (0, .2), (0, .3)])],
        'v2': [(5, 128, [(0, .1), (0, .2)]), (129, None, [(0, .1), (.1, .2), (.1, .3)])],
    }.get(name)
    if spec is None:
        R.stats['speedup not checked'] = name
        return
    R.stats['speedup cap used'] = cap
    red = 1 - rt / logrt
    binc = collections.Counter()
    bad = []
    for i in range(len(N)):
        cls = [c for c in spec if N[i] >= c[0] and (c[1] is None or N[i] <= c[1])]
        if not cls:
            if rt[i] != logrt[i]:
                bad.append((int(jid[i]), int(N[i]), 'unchanged expected', rt[i], logrt[i]))
            binc['unchanged'] += 1
            continue
        ok = None
        for b, (lo, hi) in enumerate(cls[0][2]):
            r = lo + (hi - lo) * min(N[i], cap) / cap
            if abs(red[i] - r) < 1e-9:
                ok = b
                break
        if ok is None:
            lo_all = min(lo for lo, hi in cls[0][2]); hi_all = max(hi for lo, hi in cls[0][2])
            bad.append((int(jid[i]), int(N[i]), 'reduction', round(red[i], 6), 'allowed range', lo_all, hi_all))
        else:
            binc[(cls[0][0], ok)] += 1
    R.stats[f'speedup {name}: jobs checked'] = len(N)
    R.stats[f'speedup {name}: bin counts'] = str(dict(binc))
    if bad:
        R.bad('speedup rule', bad[:6] + [f'{len(bad)} jobs'])
    # uniformity (chi-square) per class
    for c in spec:
        if len(c[2]) > 1:
            cnt = np.array([binc.get((c[0], b), 0) for b in range(len(c[2]))])
            if cnt.sum() > 0:
                e = cnt.sum() / len(cnt)
                chi = ((cnt - e) ** 2 / e).sum()
                R.stats[f'speedup {name}: class >= {c[0]} counts {list(cnt)} chi2'] = round(float(chi), 2)


def check_sched(R, top, kind, policy, sched, M, jid, sub, st, en, N, rt, est, bf, sh, jt, alloc):
    n = len(jid)
    order = sorted(range(n), key=lambda i: (sub[i], jid[i]))
    rank = np.empty(n, dtype=np.int64); rank[order] = np.arange(n)
    # backfilled flag <=> some earlier-queued job starts later
    later_min = np.full(n, np.inf)  # max start among earlier-queued jobs
    mx = -np.inf
    bf_true = np.zeros(n, bool)
    for i in order:
        bf_true[i] = mx > st[i]
        mx = max(mx, st[i])
    bad = np.nonzero(bf_true != bf)[0]
    R.stats['checked: backfilled flag == started ahead of an earlier-queued job'] = n
    if len(bad):
        R.bad('backfilled flag', [(int(jid[i]), bool(bf[i]), bool(bf_true[i])) for i in bad[:6]])
    if sched == 'fcfs' and bf.any():
        R.bad('FCFS run has backfilled jobs', int(bf.sum()))
    # FCFS order among non-backfilled: start nondecreasing in queue order
    nb = [i for i in order if not bf[i]]
    s_nb = st[nb]
    badi = np.nonzero(np.diff(s_nb) < 0)[0]
    R.stats['checked: non-backfilled starts in queue order'] = len(nb)
    if len(badi):
        R.bad('FCFS order of non-backfilled', [(int(jid[nb[i]]), int(jid[nb[i + 1]])) for i in badi[:5]])
    # head start <= recorded shadow
    has = ~np.isnan(sh)
    badh = np.nonzero(has & (st > sh + 1e-6))[0]
    R.stats['checked: head start <= recorded shadow_s'] = int(has.sum())
    if len(badh):
        R.bad('head started after its recorded shadow', [(int(jid[i]), st[i], sh[i]) for i in badh[:5]])

    # ---------------- event-by-event pass checks (policy feasibility known independently)
    jobs = []
    for i in range(n):
        d = {'N': int(N[i]), 'type': jt[i]}
        if kind == 'fattree':
            lv, c = np.unique(top.leaf(alloc[i]), return_counts=True)
            d['leaves'] = lv; d['lcount'] = c
        jobs.append(d)
    state = State(top, kind, policy, M)
    known = state.feasible(1) is not None
    times = np.unique(np.concatenate([sub, en]))
    by_end = collections.defaultdict(list); by_start = collections.defaultdict(list)
    for i in range(n):
        by_end[en[i]].append(i); by_start[st[i]].append(i)
    starts_at = {t: sorted(v, key=lambda i: rank[i]) for t, v in by_start.items()}
    running = set()
    qptr = 0  # pointer into order: all before qptr are started at or before current t
    cnt = collections.Counter()
    myshadows = collections.defaultdict(list)
    bad_blocked, bad_prefix, bad_head, bad_future, missed, bad_shadow_rec, bf_nohead = [], [], [], [], [], [], []
    sub_sorted = sub[order]
    for t in times:
        for i in by_end.get(t, []):
            state.apply(jobs[i], +1); running.discard(i)
        S_here = starts_at.get(t, [])
        fc = [i for i in S_here if not bf[i]]
        bk = [i for i in S_here if bf[i]]
        # queue before the pass: submitted <= t and start >= t
        while qptr < n and st[order[qptr]] < t:
            qptr += 1
        # FCFS-phase starters must be the first len(fc) unstarted queued jobs
        q = []
        k_ = qptr
        while k_ < n and sub_sorted[k_] <= t and len(q) < len(fc) + 1:
            i = order[k_]
            if st[i] >= t:
                q.append(i)
            k_ += 1
        if sorted(fc, key=lambda i: rank[i]) != q[:len(fc)]:
            bad_prefix.append((t, [int(jid[i]) for i in fc][:3], [int(jid[i]) for i in q[:3]]))
        for i in fc:
            state.apply(jobs[i], -1); running.add(i)
        head = q[len(fc)] if len(q) > len(fc) else None
        if head is not None and st[head] <= t:
            head = None  # would be a backfilled?? (cannot happen if prefix ok)
        if bk and head is None:
            bf_nohead.append((t, [int(jid[i]) for i in bk]))
        if head is not None and known:
            cnt['passes with a blocked head'] += 1
            if state.feasible(N[head]):
                bad_blocked.append((float(t), int(jid[head]), int(N[head])))
            elif sched == 'easy':
                # my shadow time
                rel = sorted(running, key=lambda i: st[i] + est[i])
                fut = state.copy(); Sh = None; j = 0
                while j < len(rel):
                    e = st[rel[j]] + est[rel[j]]
                    while j < len(rel) and st[rel[j]] + est[rel[j]] == e:
                        fut.apply(jobs[rel[j]], +1); j += 1
                    if fut.feasible(N[head]):
                        Sh = e; break
                if Sh is None:
                    bad_head.append(('no shadow found', int(jid[head])))
                else:
                    myshadows[head].append(Sh)
                    cnt['shadow times computed (mine)'] += 1
                    if st[head] > Sh + 1e-6:
                        bad_head.append((int(jid[head]), float(t), st[head], Sh))
        for i in bk:
            state.apply(jobs[i], -1); running.add(i)
            if head is not None and rank[i] < rank[head]:
                bf_nohead.append(('backfilled job ahead of head', int(jid[i])))
        cnt['backfill starts'] += len(bk)
        if head is not None and known and sched == 'easy' and head in myshadows and myshadows[head]:
            Sh = myshadows[head][-1]
            long_bk = [i for i in bk if t + est[i] > Sh + 1e-9]
            cnt['backfills running past shadow'] += len(long_bk)
            if long_bk:
                fut = state.copy()
                for i in running:
                    if st[i] + est[i] <= Sh:
                        fut.apply(jobs[i], +1)
                if not fut.feasible(N[head]):
                    bad_future.append((float(t), int(jid[head]), [int(jid[i]) for i in long_bk][:3]))
            # missed backfills ending by shadow
            k2 = qptr
            while k2 < n and sub_sorted[k2] <= t:
                i = order[k2]; k2 += 1
                if st[i] > t and i != head and rank[i] > rank[head]:
                    if t + est[i] <= Sh and state.feasible(N[i]):
                        missed.append((float(t), int(jid[i]), int(N[i]), 'head', int(jid[head])))
    for h, v in myshadows.items():
        if not np.isnan(sh[h]) and not any(abs(sh[h] - x) < 1e-6 for x in v):
            bad_shadow_rec.append((int(jid[h]), sh[h], sorted(set(v))[:4]))
    for k, v in cnt.items():
        R.stats[k] = v
    for key, lst in (('FCFS-phase starters not a queue prefix', bad_prefix),
                     ('head placeable but not started (my feasibility)', bad_blocked),
                     ('head started after a shadow time (mine)', bad_head),
                     ('long backfill leaves head unplaceable at shadow', bad_future),
                     ('missed backfill (fits now, ends by shadow)', missed),
                     ('recorded shadow_s not among my shadow times', bad_shadow_rec),
                     ('backfill without blocked head', bf_nohead)):
        if lst:
            R.bad(key, lst[:5] + [f'{len(lst)} total'])
    if not known:
        R.stats['feasibility not modelled (policy ' + policy + '): pass checks limited'] = 1


def check_interference(R, top, policy, jid, st, en, jt, alloc, exposed):
    n = len(jid)
    leaves = [np.unique(top.leaf(a)) for a in alloc]
    pods = [np.unique(top.pod(a)) for a in alloc]
    ev = sorted([(en[i], 0, i) for i in range(n)] + [(st[i], 1, i) for i in range(n)])
    leaf_multi = collections.defaultdict(set); pod_multi = collections.defaultdict(set)
    leaf_by_type = collections.defaultdict(lambda: collections.defaultdict(set))
    pod_t3 = collections.defaultdict(set)
    pairs = []
    rule = []
    my_exposed = np.zeros(n, bool)
    for t, k, i in ev:
        ml, mp = len(leaves[i]) > 1, len(pods[i]) > 1
        if k == 0:
            for l in leaves[i]:
                leaf_multi[l].discard(i); leaf_by_type[l][jt[i]].discard(i)
            for p in pods[i]:
                pod_multi[p].discard(i); pod_t3[p].discard(i)
            continue
        others = set()
        if ml:
            for l in leaves[i]:
                others |= leaf_multi[l]
        if mp:
            for p in pods[i]:
                others |= pod_multi[p]
        for o in others:
            pairs.append((int(jid[o]), int(jid[i])))
            my_exposed[o] = my_exposed[i] = True
        # placement rules of ta
        if policy == 'ta':
            if jt[i] == 'T1' and len(leaves[i]) != 1:
                rule.append(('T1 not on one leaf', int(jid[i])))
            if jt[i] == 'T2':
                if len(pods[i]) != 1:
                    rule.append(('T2 not in one pod', int(jid[i])))
                for l in leaves[i]:
                    if leaf_by_type[l]['T2'] or leaf_by_type[l]['T3']:
                        rule.append(('T2 on leaf with T2/T3', int(jid[i]), int(l)))
            if jt[i] == 'T3':
                for p in pods[i]:
                    if pod_t3[p]:
                        rule.append(('T3 in pod with T3', int(jid[i]), int(p)))
                for l in leaves[i]:
                    if leaf_by_type[l]['T2']:
                        rule.append(('T3 on leaf with T2', int(jid[i]), int(l)))
        if ml:
            for l in leaves[i]:
                leaf_multi[l].add(i)
        if mp:
            for p in pods[i]:
                pod_multi[p].add(i)
        for l in leaves[i]:
            leaf_by_type[l][jt[i]].add(i)
        if jt[i] == 'T3':
            for p in pods[i]:
                pod_t3[p].add(i)
    R.stats['interfering pairs (mine)'] = len(pairs)
    R.stats['exposed jobs (mine / summary col)'] = f'{int(my_exposed.sum())} / {int(exposed.sum())}'
    if policy == 'ta':
        R.stats['checked: ta invariant + placement rules, jobs'] = n
        if pairs:
            R.bad('ta interfering pair', pairs[:6] + [f'{len(pairs)} total'])
        if rule:
            R.bad('ta placement rule', rule[:6] + [f'{len(rule)} total'])
    bad = np.nonzero(my_exposed != exposed)[0]
    if len(bad):
        R.bad('exposed column != my interference', [(int(jid[i]), bool(exposed[i])) for i in bad[:6]])


def pct(a, q):
    return float(np.percentile(a, q)) if len(a) else None


def check_metrics(R, S, run, top, kind, jid, sub, st, en, N, wait, aph, alloc, M, exposed):
    def close(name, got, mine, tol=1e-9):
        R.stats['summary.json metrics checked'] += 1
        if got is None or mine is None or abs(got - mine) > tol * max(1, abs(mine)):
            R.bad('metric ' + name, (got, mine))
    close('makespan_s', S['makespan_s'], float(en.max() - sub.min()))
    close('wait mean', S['wait_s']['mean'], float(wait.mean()))
    close('wait median', S['wait_s']['median'], float(np.median(wait)))
    close('wait p95', S['wait_s']['p95'], pct(wait, 95))
    edges = [0, 18, 64, 256, 1024, np.inf]
    names = ['1-18', '19-64', '65-256', '257-1024', '>1024']
    # APH
    myaph = np.array([top.aph(a) for a in alloc])
    bad = np.nonzero(np.abs(myaph - aph) > 1e-9)[0]
    R.stats['checked: per-job aph recomputed from numbering'] = len(aph)
    if len(bad):
        R.bad('aph column', [(int(jid[i]), aph[i], myaph[i]) for i in bad[:6]] + [f'{len(bad)} jobs'])
    close('aph mean', S['aph']['mean'], float(myaph.mean()))
    for b, nm in enumerate(names):
        m = (N > edges[b]) & (N <= edges[b + 1])
        sb = S['wait_s']['by_bin'][nm]; sa = S['aph']['by_bin'][nm]
        if sb['jobs'] != int(m.sum()):
            R.bad('by_bin job count', (nm, sb['jobs'], int(m.sum())))
        if m.sum():
            close(f'wait by_bin {nm} mean', sb['mean'], float(wait[m].mean()))
            close(f'aph by_bin {nm} mean', sa['mean'], float(myaph[m].mean()))
            for q, key in ((0, 'min'), (25, 'p25'), (50, 'median'), (75, 'p75'), (100, 'max')):
                close(f'aph by_bin {nm} {key}', sa[key], pct(myaph[m], q))
    # utilization per minute
    t0, t1 = float(sub.min()), float(en.max())
    ts = t0 + 60.0 * np.arange(int(math.floor((t1 - t0) / 60.0)) + 1)
    d = np.zeros(len(ts) + 1)
    a = np.searchsorted(ts, st, 'left'); b = np.searchsorted(ts, en, 'left')
    np.add.at(d, a, N); np.add.at(d, b, -N)
    busy = np.cumsum(d)[:-1]
    U = pl.read_parquet(os.path.join(run, 'utilization.parquet'))
    if U.height != len(ts):
        R.bad('utilization rows', (U.height, len(ts)))
    else:
        diffb = np.nonzero(U['busy_nodes'].to_numpy() != busy)[0]
        dt = np.abs(U['t_s'].to_numpy() - ts).max()
        R.stats['checked: utilization samples'] = len(ts)
        if len(diffb) or dt > 1e-6:
            R.bad('utilization samples', (len(diffb), 'max |dt|', dt, [(U['t_s'][int(i)], U['busy_nodes'][int(i)], busy[i]) for i in diffb[:3]]))
    util = busy / M
    close('utilization mean', S['utilization']['mean'], float(util.mean()))
    for q, key in ((5, 'p05'), (25, 'p25'), (50, 'median'), (75, 'p75'), (95, 'p95')):
        close(f'utilization {key}', S['utilization'][key], pct(util, q))
    if 'interference' in S:
        if S['interference']['exposed_jobs'] != int(exposed.sum()):
            R.bad('exposed_jobs', (S['interference']['exposed_jobs'], int(exposed.sum())))


if __name__ == '__main__':
    for r in sys.argv[1:]:
        main(r.rstrip('/'))
