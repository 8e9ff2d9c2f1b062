"""Pool speedup-bin assignments over runs (own log parse), chi-square against uniform bins.
usage: python speedup_bins.py RUN_DIR...   (runs of one scenario: v1 or v2)"""
import sys, os, json, collections
import numpy as np, polars as pl
sys.path.insert(0, '/tmp/audit'); import swfload
from scipy import stats
SPEC = {'v1': [(1, None, [(0, .1), (0, .2), (0, .3)])],
        'v2': [(5, 128, [(0, .1), (0, .2)]), (129, None, [(0, .1), (.1, .2), (.1, .3)])]}
pooled = collections.Counter(); cache = {}
for run in sys.argv[1:]:
    S = json.load(open(run + '/summary.json')); w = S['config']['workload']; name = S['config']['speedup']
    key = (w['path'], w['scale_factor'], w['window_start_days'], w['window_days'])
    if key not in cache:
        L = swfload.jobs_table(w['path'], w['cores_per_node'], w['scale_factor'], S['n_nodes'], w['window_start_days'], w['window_days'])
        cache[key] = dict(zip(L['job_id'], L['runtime']))
    lr = cache[key]
    df = pl.read_parquet(run + '/jobs.parquet')
    N = df['nodes'].to_numpy(); rt = df['runtime_s'].to_numpy(); lg = np.array([lr[j] for j in df['job_id']])
    red = 1 - rt / lg; c = collections.Counter(); bad = 0
    for i in range(len(N)):
        cl = [x for x in SPEC[name] if N[i] >= x[0] and (x[1] is None or N[i] <= x[1])]
        if not cl: continue
        hit = [b for b, (lo, hi) in enumerate(cl[0][2]) if abs(red[i] - (lo + (hi - lo) * min(N[i], 512) / 512)) < 1e-9]
        if len(hit) == 0: bad += 1; continue
        c[(cl[0][0], hit[0])] += 1
    print(run.split('/')[-1], name, dict(sorted(c.items())), 'outside rule:', bad)
    pooled.update(c)
for cl in SPEC[name]:
    cnt = np.array([pooled[(cl[0], b)] for b in range(len(cl[2]))])
    chi, p = stats.chisquare(cnt)
    print(f'POOLED class>={cl[0]}: {list(cnt)} shares {np.round(cnt/cnt.sum(),4).tolist()} chi2={chi:.2f} p={p:.2g}')
