"""64K-core individual runs (spec reference-results.md): max router-link MB per class, pooled cables.

Run: .venv/bin/python docs/measurements/dragonfly_64k_maxima.py (about a minute on 2 cores; session 18)."""
import time

import numpy as np

from fattorus import topology
from fattorus.analysis import parallel_workloads as pw
from fattorus.app.dragonfly_study import pooled
from fattorus.kernels.adaptive import adaptive_loads, valiant_paths

topo = topology.load("edison")
cls = np.asarray(topo.link_class)
net = cls > 0
for pat in ("2D Stencil", "Many-to-many", "4D Stencil", "Spread"):
    t = time.time()
    src, dst, nb, _ = pw.node_flows(topo.n_nodes, (pat,), ranks=65_536)
    paths = valiant_paths(topo, src, dst, k=2, seed=0, black_first=True)
    p, w, per_cable = pooled(topo, paths, np.asarray(topo.link_bandwidth, np.float64), "pooled")
    j = adaptive_loads(p, np.asarray(nb, np.float64), w, counted=net, max_iters=3000)
    tr = per_cable(j.traffic)
    print(f"{pat}: " + " | ".join(f"{n} max {tr[cls == c].max() / 1e6:.2f}" for c, n in ((1, "green"), (2, "black"), (3, "blue")))
          + f" | iterations {int(j.iterations)} | {time.time() - t:.0f} s", flush=True)
