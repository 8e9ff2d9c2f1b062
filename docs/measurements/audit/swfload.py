"""Independent SWF loader + workload pipeline for the audit (no fattorus imports).

Implements spec scenarios.md / scheduling.md "Input hygiene" + docs/workloads.md choices:
 - fields 1 id, 2 submit, 4 runtime, 5 alloc procs, 8 req procs (fallback 5), 9 requested, 11 status
 - -1 -> unknown; nodes = ceil(procs / cores_per_node)
 - ceiling: runtime / requested > 366 d -> line dropped by the reader (documented choice)
 - scale before window; window [t0 + a, t0 + a + d) with t0 = first submit
 - estimate = max(requested, runtime), requested unknown -> runtime
 - skip reasons in order bad_submit, cancelled_before_start, bad_nodes, bad_runtime, too_large
"""
import gzip, math
import numpy as np

CEIL = 366 * 86400


def read_swf(path):
    op = gzip.open if path.endswith('.gz') else open
    rows = []
    dirty = 0
    with op(path, 'rt') as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith(';'):
                continue
            p = s.split()
            if len(p) != 18:
                dirty += 1
                continue
            v = [float(x) for x in p]
            if (v[3] > CEIL) or (v[8] > CEIL):
                dirty += 1
                continue
            rows.append(v)
    a = np.array(rows)
    return a, dirty


def jobs_table(path, cores_per_node, scale, machine_nodes, window_start_days=0.0, window_days=None):
    a, dirty = read_swf(path)
    jid = a[:, 0].astype(np.int64)
    submit = a[:, 1].copy(); submit[submit < 0] = np.nan
    rt = a[:, 3].copy(); rt[rt == -1] = np.nan
    procs = np.where(a[:, 7] != -1, a[:, 7], a[:, 4])
    procs = procs.astype(float); procs[procs == -1] = np.nan
    req = a[:, 8].copy(); req[req == -1] = np.nan
    status = a[:, 10]
    nodes0 = np.ceil(procs / cores_per_node)
    # scaling: fitted before, not after -> dropped
    nodes = np.ceil(nodes0 * scale)
    dropped = (nodes0 <= machine_nodes) & (nodes > machine_nodes)
    t0 = np.nanmin(submit[~dropped])
    lo = t0 + window_start_days * 86400
    hi = lo + window_days * 86400 if window_days is not None else np.inf
    inwin = (submit >= lo) & (submit < hi)
    if window_days is None and window_start_days == 0:
        inwin = np.ones(len(a), bool)  # no window: every job read (unknown submit -> bad_submit)
    est = np.where(np.isnan(req), rt, np.fmax(req, rt))
    reason = np.full(len(a), '', dtype=object)
    for i in range(len(a)):
        if dropped[i]:
            reason[i] = 'dropped_by_scaling'
        elif np.isnan(submit[i]):
            reason[i] = 'bad_submit'
        elif status[i] == 5 and not (rt[i] > 0):
            reason[i] = 'cancelled_before_start'
        elif not (nodes[i] > 0):
            reason[i] = 'bad_nodes'
        elif not (rt[i] > 0):
            reason[i] = 'bad_runtime'
        elif nodes[i] > machine_nodes:
            reason[i] = 'too_large'
    return dict(job_id=jid[inwin], submit=submit[inwin], runtime=rt[inwin], req=req[inwin],
                nodes=nodes[inwin], nodes0=nodes0[inwin], status=status[inwin], est=est[inwin],
                reason=reason[inwin], outside=int((~inwin).sum()), dirty=dirty)


def header_cores(path):
    """MaxProcs / MaxNodes from the SWF header."""
    op = gzip.open if path.endswith('.gz') else open
    h = {}
    with op(path, 'rt') as f:
        for line in f:
            if not line.startswith(';'):
                break
            if ':' in line:
                k, v = line[1:].split(':', 1)
                h[k.strip()] = v.strip()
    return int(h['MaxProcs']) // int(h['MaxNodes'])
