"""Reading a finished prism replay back per job (a helper of the prism tests, not a test).

``Prism.started_prisms`` lists ``(nodes, (x, y, z, a, b, c))`` in start order; a job's node set
may be used again by a later job, so node sets are matched to jobs in start order."""

from __future__ import annotations

import numpy as np


def prisms_by_job(pol, got) -> tuple[list[tuple[int, set[int]]], list[int]]:
    """``(prisms, inside)``: every started prism as ``(job, router ids)``, and the jobs placed
    inside another job's prism (``internal``: no prism of their own), each in start order.
    ``pol``: the replay's ``Prism``; ``got``: its :class:`fattorus.sched.engine.Schedule`."""
    by_key: dict[bytes, list[int]] = {}
    for j in np.argsort(got.start, kind="stable"):
        by_key.setdefault(np.asarray(got.alloc[j], np.int64).tobytes(), []).append(int(j))
    prisms, inside = [], []
    for nodes, (x, y, z, a, b, c) in pol.started_prisms:
        j = by_key[np.asarray(nodes, np.int64).tobytes()].pop(0)
        if a > 0:
            prisms.append((j, set(pol._prism_routers((x, y, z), (a, b, c)).tolist())))
        else:
            inside.append(j)
    return prisms, inside


def hosts_of(j: int, got, runtime: np.ndarray, prisms: list[tuple[int, set[int]]], nodes_per_router: int) -> list[int]:
    """The jobs whose prism holds the router of job ``j``'s first node while ``j`` starts."""
    router = int(got.alloc[j][0]) // nodes_per_router
    return [h for h, routers in prisms if router in routers and got.start[h] <= got.start[j] < got.start[h] + runtime[h]]
