"""Per-job bin agreement between seeds of one scenario on one job set (independent draws: 1/3 for v1)."""
import sys, glob, itertools, numpy as np, polars as pl
runs = sys.argv[1:]
R = {}
for r in runs:
    df = pl.read_parquet(r + '/jobs.parquet').sort('job_id')
    R[r] = (df['job_id'].to_numpy(), df['runtime_s'].to_numpy(), df['nodes'].to_numpy())
# reduction fraction relative to max possible, v1 bins distinguished by ratio red/(min(N,512)/512) in {0.1,0.2,0.3}
import json
sys.path.insert(0, '/tmp/audit'); import swfload
S = json.load(open(runs[0] + '/summary.json')); w = S['config']['workload']
L = swfload.jobs_table(w['path'], w['cores_per_node'], w['scale_factor'], S['n_nodes'], w['window_start_days'], w['window_days'])
lr = dict(zip(L['job_id'], L['runtime']))
B = {}
for r, (j, rt, N) in R.items():
    lg = np.array([lr[x] for x in j]); red = 1 - rt / lg
    B[r] = np.rint(red / (np.minimum(N, 512) / 512) * 10).astype(int)  # 1,2,3
for a, b in itertools.combinations(runs, 2):
    print(a.split('_')[-1][:40], b.split('_')[-1][:40], 'agreement', round(float((B[a] == B[b]).mean()), 4), 'n', len(B[a]))
