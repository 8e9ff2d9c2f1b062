"""Mutation test of check_run.py: inject known faults into copies of real runs, expect detection."""
import shutil, json, os, sys, glob, subprocess
import numpy as np, polars as pl
base = '/tmp/audit/ws/results/runs/'
ta = glob.glob(base + '*cab-ta-easy-atlas-x2-v2-s1*')[0]
to = glob.glob(base + '*cab-to-easy-atlas-x2-none-s1*')[0]
out = '/tmp/audit/mut/'
def mk(src, name, fn):
    d = out + name
    shutil.rmtree(d, ignore_errors=True); shutil.copytree(src, d)
    df = pl.read_parquet(d + '/jobs.parquet'); S = json.load(open(d + '/summary.json'))
    df, S = fn(df, S)
    df.write_parquet(d + '/jobs.parquet'); json.dump(S, open(d + '/summary.json', 'w'))
    return d
def m_overlap(df, S):
    # give a running job's node to a concurrent other job
    st, en = df['start_s'].to_numpy(), df['end_s'].to_numpy()
    al = df['alloc'].to_list()
    for i in range(len(al)):
        for j in range(i+1, len(al)):
            if st[j] < en[i] and st[i] < en[j] and al[i][0] not in al[j]:
                al[j] = [al[i][0]] + al[j][1:]; return df.with_columns(pl.Series('alloc', al, dtype=pl.List(pl.Int32))), S
def m_late_head(df, S):
    # delay a non-backfilled job by 1 s (all else same)
    i = int(np.nonzero(~df['backfilled'].to_numpy() & (df['wait_s'].to_numpy() > 0))[0][3])
    st = df['start_s'].to_numpy().copy(); st[i] += 100.0
    en = df['end_s'].to_numpy().copy(); en[i] += 100.0
    return df.with_columns(pl.Series('start_s', st), pl.Series('end_s', en), pl.Series('wait_s', st - df['submit_s'].to_numpy())), S
def m_speed(df, S):
    rt = df['runtime_s'].to_numpy().copy(); N = df['nodes'].to_numpy()
    i = int(np.nonzero(N > 200)[0][0]); rt[i] *= 0.999
    en = df['start_s'].to_numpy() + rt
    return df.with_columns(pl.Series('runtime_s', rt), pl.Series('end_s', en)), S
def m_ta(df, S):
    # move a T2 job onto leaves of a concurrent T2 job (swap allocs of two concurrent T2 jobs partially)
    jt = df['job_type'].to_list(); st, en = df['start_s'].to_numpy(), df['end_s'].to_numpy()
    al = df['alloc'].to_list(); N = df['nodes'].to_numpy()
    T2 = [i for i in range(len(jt)) if jt[i] == 'T2']
    for a in T2:
        for b in T2:
            if a < b and st[b] < en[a] and st[a] < en[b]:
                # make b's first node equal to a node on a's first leaf that is free? just replace with a's leaf mate
                leaf = al[a][0] // 18
                al[b] = [leaf * 18 + 17 if (leaf * 18 + 17) not in al[a] else leaf*18] + al[b][1:]
                return df.with_columns(pl.Series('alloc', al, dtype=pl.List(pl.Int32))), S
def m_metric(df, S):
    S['wait_s']['p95'] *= 1.001; S['utilization']['mean'] += 1e-4; S['counts']['skipped']['bad_runtime'] += 1
    a = df['aph'].to_numpy().copy(); a[-1] += 0.01
    return df.with_columns(pl.Series('aph', a)), S
def m_backfill_long(df, S):
    # make a backfilled job's estimate longer & start it earlier than allowed: move a backfilled job one hour earlier
    bf = df['backfilled'].to_numpy(); i = int(np.nonzero(bf & (df['wait_s'].to_numpy() > 4000))[0][0])
    st = df['start_s'].to_numpy().copy(); st[i] -= 3600; st[i] = max(st[i], df['submit_s'][i])
    en = st + df['runtime_s'].to_numpy()
    return df.with_columns(pl.Series('start_s', st), pl.Series('end_s', en), pl.Series('wait_s', st - df['submit_s'].to_numpy())), S
ds = [mk(to, 'overlap', m_overlap), mk(to, 'late_head', m_late_head), mk(ta, 'late_head_ta', m_late_head), mk(ta, 'speed', m_speed),
      mk(ta, 'ta_rule', m_ta), mk(ta, 'metric', m_metric), mk(to, 'bf_early', m_backfill_long)]
subprocess.run([sys.executable, '/tmp/audit/check_run.py'] + ds)
