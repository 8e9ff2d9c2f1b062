"""An independent, deliberately plain count-based scheduler (FCFS and EASY backfilling).

Written from Lifka (1995) / Mu'alem & Feitelson (2001) as restated in the spec's
`scheduling.md`, with no code shared with the engine (:mod:`fattorus.sched.engine`,
:mod:`fattorus.sched.queues`): node identities do not exist here, only counts. Used by the
tests as the reference for ``policy=to`` and by ``make bench`` as the simple baseline. Keep
it independent: importing nothing from the package is what makes it a reference.
"""

from __future__ import annotations


def schedule(submit, runtime, estimate, nodes, total_nodes, easy=True, shadows=None, kinds=None):
    """Start time of each job. Jobs must be sorted by (submit, job id).

    ``shadows``: an optional list of ``len(submit)`` entries, filled in with each job's
    earliest shadow time (s) over the EASY passes in which it was the blocked head and some
    later queued job could have fitted the free nodes (the passes that look for backfill);
    ``None`` where there was none.

    ``kinds``: optional node kind of each job (an index into ``total_nodes``, then a list of
    node counts, one pool per kind): a job counts only its kind's free nodes, and the head's
    reservation holds nodes of its own kind only, so a job of another kind backfills whenever
    its own pool has room."""
    n = len(submit)
    if kinds is None:
        kinds, total_nodes = [0] * n, [total_nodes]
    start = [None] * n
    free = list(total_nodes)
    running = []  # [end, est_end, nodes, job]
    queue = []
    nxt = 0
    while nxt < n or running:
        t = min(([submit[nxt]] if nxt < n else []) + [r[0] for r in running])
        # completions, then submissions, then one pass
        still = []
        for r in running:
            if r[0] == t:
                free[kinds[r[3]]] += r[2]
            else:
                still.append(r)
        running = still
        while nxt < n and submit[nxt] == t:
            queue.append(nxt)
            nxt += 1
        while queue and nodes[queue[0]] <= free[kinds[queue[0]]]:
            j = queue.pop(0)
            start[j] = t
            free[kinds[j]] -= nodes[j]
            running.append([t + runtime[j], t + estimate[j], nodes[j], j])
        if not easy or not queue:
            continue
        head = queue[0]
        k = kinds[head]
        avail = free[k]
        shadow = None
        for est_end in sorted({r[1] for r in running if kinds[r[3]] == k}):
            avail += sum(r[2] for r in running if r[1] == est_end and kinds[r[3]] == k)
            if avail >= nodes[head]:
                shadow = est_end
                break
        extra = avail - nodes[head]
        if shadows is not None and any(nodes[j] <= free[kinds[j]] for j in queue[1:]):
            shadows[head] = shadow if shadows[head] is None else min(shadows[head], shadow)
        for j in list(queue[1:]):
            if nodes[j] > free[kinds[j]]:
                continue
            if kinds[j] != k or t + estimate[j] <= shadow:
                pass
            elif nodes[j] <= extra:
                extra -= nodes[j]
            else:
                continue
            queue.remove(j)
            start[j] = t
            free[kinds[j]] -= nodes[j]
            running.append([t + runtime[j], t + estimate[j], nodes[j], j])
    return start
