"""Check placement heuristics on fat-tree runs, own implementation of spec allocation.md:
 - ta: Algorithm 1 (default orders, ties low id) for jobs started in the FCFS phase of a pass
 - to: lowest-numbered free nodes for FCFS-phase jobs
 - tree_bestfit: level + best-fit subtree choice (leaf, then pod, then machine)
The machine state before each start is rebuilt from jobs.parquet: at each instant ends first,
then FCFS-phase starts in queue order (backfilled jobs are skipped: their placement may
depend on the head's reservation, which is not in the outputs, but they are applied to the state).
usage: python check_heuristics.py RUN_DIR...
"""
import sys, os, json, collections
import numpy as np, polars as pl
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topo as T


def expected_ta(top, busy, ntype, N):
    k, L, P = top.k, top.L, top.P
    free = (~busy).reshape(P, L, k)
    lf = free.sum(2)  # P x L
    t2 = (ntype == 2).reshape(P, L, k).any(2)
    t3 = (ntype == 3).reshape(P, L, k).any(2)

    def take(p, l, m):
        slots = np.nonzero(free[p, l])[0][:m]
        return [p * L * k + l * k + s for s in slots]
    if N <= k:
        pf = lf.sum(1)
        for p in sorted(range(P), key=lambda p: (pf[p], p)):
            for l in sorted(range(L), key=lambda l: (lf[p, l], l)):
                if lf[p, l] >= N:
                    return take(p, l, N)
        return None
    if N <= L * k:
        elig = ~(t2 | t3)
        av = np.where(elig, lf, 0).sum(1)
        for p in sorted(range(P), key=lambda p: (av[p], p)):
            if av[p] < N:
                continue
            out = []
            for l in sorted([l for l in range(L) if elig[p, l]], key=lambda l: (-lf[p, l], l)):
                out += take(p, l, N - len(out))
                if len(out) == N:
                    return out
        return None
    podt3 = t3.any(1)
    elig = ~t2
    av = np.where(elig, lf, 0).sum(1)
    out = []
    for p in sorted([p for p in range(P) if not podt3[p]], key=lambda p: (-av[p], p)):
        for l in sorted([l for l in range(L) if elig[p, l]], key=lambda l: (-lf[p, l], l)):
            out += take(p, l, N - len(out))
            if len(out) == N:
                return out
    return None


def bestfit_ok(top, busy, N, alloc):
    k, L, P = top.k, top.L, top.P
    free = (~busy).reshape(P * L, k).sum(1)
    pfree = free.reshape(P, L).sum(1)
    leaves = np.unique(np.asarray(alloc) // k); pods = np.unique(np.asarray(alloc) // (k * L))
    if (free >= N).any():
        cand = [l for l in range(P * L) if free[l] >= N]
        best = min(cand, key=lambda l: (free[l], l))
        return len(leaves) == 1 and leaves[0] == best, ('leaf', best, list(leaves))
    if (pfree >= N).any():
        cand = [p for p in range(P) if pfree[p] >= N]
        best = min(cand, key=lambda p: (pfree[p], p))
        return len(pods) == 1 and pods[0] == best, ('pod', best, list(pods))
    return True, None


def main(run):
    S = json.load(open(run + '/summary.json'))
    top = T.make(S['topology'])
    pol = S['config']['policy']
    df = pl.read_parquet(run + '/jobs.parquet')
    jid = df['job_id'].to_numpy(); sub = df['submit_s'].to_numpy(); st = df['start_s'].to_numpy()
    en = df['end_s'].to_numpy(); N = df['nodes'].to_numpy(); bf = df['backfilled'].to_numpy()
    alloc = [np.asarray(a) for a in df['alloc'].to_list()]
    tnum = {'T1': 1, 'T2': 2, 'T3': 3}
    jt = [tnum[x] for x in df['job_type'].to_list()]
    order = np.lexsort((jid, sub)); rank = np.empty(len(jid), int); rank[order] = np.arange(len(jid))
    ev = [(en[i], 0, 0, i) for i in range(len(jid))] + [(st[i], 1, (1 if bf[i] else 0, rank[i]), i) for i in range(len(jid))]
    ev.sort()
    busy = np.zeros(top.n, bool); ntype = np.zeros(top.n, np.int8)
    checked = 0; bad = []
    for t, kind, _, i in ev:
        if kind == 0:
            busy[alloc[i]] = False; ntype[alloc[i]] = 0
            continue
        if not bf[i]:
            checked += 1
            if pol == 'ta':
                exp = expected_ta(top, busy, ntype, N[i])
                if exp is None or set(exp) != set(alloc[i].tolist()):
                    bad.append((int(jid[i]), int(N[i]), 'expected', None if exp is None else sorted(exp)[:4], 'got', sorted(alloc[i].tolist())[:4]))
            elif pol == 'to':
                exp = np.nonzero(~busy)[0][:N[i]]
                if set(exp.tolist()) != set(alloc[i].tolist()):
                    bad.append((int(jid[i]), int(N[i]), sorted(exp)[:4], sorted(alloc[i].tolist())[:4]))
            elif pol == 'tree_bestfit':
                ok, info = bestfit_ok(top, busy, N[i], alloc[i])
                if not ok:
                    bad.append((int(jid[i]), int(N[i]), info))
        busy[alloc[i]] = True; ntype[alloc[i]] = jt[i]
    print(f'== {run}\n   {pol}: FCFS-phase placements checked: {checked}; mismatches: {len(bad)}')
    for b in bad[:6]:
        print('   MISMATCH', b)


if __name__ == '__main__':
    for r in sys.argv[1:]:
        main(r.rstrip('/'))
