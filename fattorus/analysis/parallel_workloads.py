"""The dragonfly paper's parallel workloads (its Table 1) as node-pair flows.

Each of WD 1–4 runs four jobs of ``ranks`` ranks each (the paper: 32,768, 24 per node on
Edison), one pattern per job, on consecutive node ids (job ``j`` on nodes ``j·n .. (j+1)·n−1``,
``n = ceil(ranks / ranks_per_node)``: the jobs fill groups in order, the first choice of an
Edison-like placement). Patterns with the paper's message sizes: 2D Stencil (4 neighbours,
64 KiB), 4D Stencil (8 neighbours, 4 MiB), Many-to-many (all-to-all within sub-communicators
of 32 ranks, 32 KiB), Unstructured mesh and Spread (6–27 neighbours, 512 KiB). The paper's KB
and MB are read as KiB and MiB.

Many-to-many's sub-communicators are the *columns* of a 32-wide process grid (ranks congruent
modulo ``ranks / 32``, an FFT's transpose along the strided dimension), not 32 consecutive
ranks: at 24 ranks per node consecutive ranks share one router, so that layout put no traffic
on any router link, while the paper's Many-to-many loads green links, some blue ones, and peaks
at ~6x 2D Stencil's maximum at 64K cores (docs/decisions.md, session 18).

Why 32 ranks per sub-communicator at every job size: the paper's Many-to-many uses "groups of
16, 32 or 64 MPI processes (depending on job size)" but gives no mapping from job size to
group (its jobs range from 8,192 to 131,072 cores). Its four workloads (Table 1, the dragonfly
study's default ``--ranks``) run only 32,768-rank jobs: a 32 x 1,024 process grid, 1,024
sub-communicators of 32 ranks each. 32 is the middle of the paper's three sizes, and one fixed
group keeps each rank's Many-to-many bytes (31 x 32 KiB) the same at every job size, so a size
sweep (e.g. the 64K-core maxima: 65,536 ranks, a 32 x 2,048 grid) varies the job size only.
``PATTERNS`` holds the choice; ``subcomm_a2a`` takes 16 or 64 as well.

Rank flows are summed per (job, source node, destination node): a route depends only on its
node pair, so link traffic is unchanged, and flows between ranks of one node (memory) drop.
"""

from __future__ import annotations

import jax
import numpy as np

from fattorus.analysis import patterns

KiB, MiB = 1024, 1024 * 1024
#: Pattern name -> (fattorus pattern, its parameters), as the paper sizes them.
PATTERNS = {
    "2D Stencil": ("stencil2d", {"nbytes": 64 * KiB}),
    "4D Stencil": ("stencil4d", {"nbytes": 4 * MiB}),
    # group 32 at every size: the paper's "16, 32 or 64 ... depending on job size" has no
    # mapping; its workloads' jobs are 32,768 ranks (module docstring).
    "Many-to-many": ("subcomm_a2a", {"group": 32, "nbytes": 32 * KiB, "strided": True}),
    "UMesh": ("unstructured_mesh", {"nbytes": 512 * KiB}),
    "Spread": ("spread", {"nbytes": 512 * KiB}),
}
#: The paper's Table 1.
WORKLOADS = {
    "WD 1": ("Spread", "2D Stencil", "4D Stencil", "Many-to-many"),
    "WD 2": ("2D Stencil", "4D Stencil", "UMesh", "Spread"),
    "WD 3": ("UMesh", "Spread", "Many-to-many", "2D Stencil"),
    "WD 4": ("4D Stencil", "Many-to-many", "Spread", "UMesh"),
}


def node_flows(n_nodes: int, jobs: tuple[str, ...], ranks: int = 32_768, ranks_per_node: int = 24,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, bytes, owner)`` node-pair flows of one workload (module docstring) on a
    machine of ``n_nodes`` nodes; ``owner`` is the job index."""
    per_job = -(-ranks // ranks_per_node)
    if per_job * len(jobs) > n_nodes:
        raise ValueError(f"{len(jobs)} jobs of {per_job} nodes do not fit {n_nodes} nodes")
    key = jax.random.PRNGKey(seed)
    keys, weights = [], []
    for j, label in enumerate(jobs):
        name, params = PATTERNS[label]
        alloc = np.arange(j * per_job, (j + 1) * per_job)
        s, d, b = patterns.to_nodes(alloc, patterns.make(name, jax.random.fold_in(key, j), ranks, **params),
                                    ranks_per_node)
        off = s != d
        keys.append((j * n_nodes + s[off].astype(np.int64)) * n_nodes + d[off])
        weights.append(np.broadcast_to(np.asarray(b, np.float64), np.shape(s))[off])
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    nbytes = np.bincount(inv, weights=np.concatenate(weights))
    return (uniq // n_nodes) % n_nodes, uniq % n_nodes, nbytes, uniq // (n_nodes * n_nodes)
