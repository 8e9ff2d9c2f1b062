"""Monte Carlo of topology-oblivious allocations: how spread is a random placement?

:func:`random_allocations` draws a batch of ``n``-node allocations uniformly from the free
nodes of a machine state, one ``jax.random`` key per allocation, so a batch is a ``vmap``
over keys and the same seed always gives the same batch. :func:`random_busy_mask` makes a
partly busy machine the same way. :func:`aph_table` is the study ``make run`` prints before
the scheduler replay exists: APH of random allocations against the ideal, by size and load.
"""

from __future__ import annotations

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.kernels.montecarlo")

import sys
from typing import TYPE_CHECKING

import numpy as np

from fattorus.args import OneLineParser
from fattorus.kernels import aph as aph_mod
from fattorus.lazyjit import lazy_jit
from fattorus.topology.fattree import FatTree

if TYPE_CHECKING:
    import jax

# JAX is imported where the sampling runs, not here: a machine the command cannot load is
# one error line without loading JAX first (~0.6 s).

#: The command's name in its usage and error lines (run as ``python -m fattorus.kernels.montecarlo``).
PROG = "fattorus.kernels.montecarlo"


@lazy_jit(static_argnames=("width",))
def random_allocations(keys: jax.Array, free: jax.Array, n: jax.Array, width: int) -> jax.Array:
    """Uniform random ``n``-node subsets of the free nodes, one per key.

    Args:
      keys: ``(B,)`` PRNG keys (``jax.random.split(key, B)``).
      free: ``(N,)`` bool, True where a node is free.
      n: scalar or ``(B,)`` int, nodes per allocation (``n <= width``).
      width: padding width (a bucket from :data:`fattorus.aph.BUCKETS`; static).

    Returns:
      ``(B, width)`` int32 node ids padded with -1. A row for which fewer than ``n`` nodes are
      free holds every free node and then -1; callers check the row's size.
    """
    import jax
    import jax.numpy as jnp

    n = jnp.broadcast_to(jnp.asarray(n, jnp.int32), keys.shape[:1])
    # top_k needs k <= N: a machine with fewer nodes than the padding width (a small YAML
    # machine) takes every node's score and pads the rest of the row with -1.
    k = min(width, free.shape[0])

    def one(key, n_b):
        # Uniform scores; busy nodes score -1 so they sort last. The top `k` scores are a
        # uniform random ordered subset of the free nodes (ties have probability zero).
        scores = jnp.where(free, jax.random.uniform(key, free.shape), -1.0)
        top, idx = jax.lax.top_k(scores, k)
        keep = (jnp.arange(k) < n_b) & (top >= 0)
        return jnp.pad(jnp.where(keep, idx.astype(jnp.int32), -1), (0, width - k), constant_values=-1)

    return jax.vmap(one)(keys, n)


@lazy_jit(static_argnums=(1,))
def random_busy_mask(key: jax.Array, n_nodes: int, busy_fraction: float) -> jax.Array:
    """``(N,)`` free mask with ``round(busy_fraction * N)`` nodes busy, chosen uniformly."""
    import jax
    import jax.numpy as jnp

    n_busy = jnp.round(busy_fraction * n_nodes).astype(jnp.int32)
    order = jax.random.permutation(key, n_nodes)
    rank = jnp.zeros(n_nodes, jnp.int32).at[order].set(jnp.arange(n_nodes, dtype=jnp.int32))
    return rank >= n_busy


def aph_table(
    ft: FatTree,
    sizes: tuple[int, ...] = (4, 16, 64, 256, 1024),
    busy_fractions: tuple[float, ...] = (0.0, 0.5, 0.8),
    batch: int = 1024,
    seed: int = 0,
) -> list[dict]:
    """APH of ``batch`` uniformly random allocations per (busy fraction, size).

    Returns one dict per cell: ``busy``, ``nodes``, ``free`` (free nodes of the cell's one
    random busy state: where it equals ``nodes`` every draw takes all of them, the same
    allocation), ``ideal_aph``, and the mean, median and 95th percentile of the random
    allocations' APH (hops per ordered node pair).
    """
    import jax

    root = jax.random.PRNGKey(seed)
    rows = []
    for i, busy in enumerate(busy_fractions):
        k_state, k_alloc = jax.random.split(jax.random.fold_in(root, i))
        free = random_busy_mask(k_state, ft.n_nodes, busy)
        n_free = int(free.sum())
        for n in sizes:
            if n > n_free:
                continue
            keys = jax.random.split(jax.random.fold_in(k_alloc, n), batch)
            allocs = random_allocations(keys, free, n, width=aph_mod.bucket(n))
            values = np.asarray(aph_mod.aph(ft, allocs), dtype=np.float64)
            rows.append(
                {
                    "busy": busy,
                    "nodes": n,
                    "free": n_free,
                    "ideal_aph": float(aph_mod.ideal_aph(ft, n)),
                    "mean_aph": float(values.mean()),
                    "median_aph": float(np.median(values)),
                    "p95_aph": float(np.quantile(values, 0.95)),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the APH Monte Carlo table (``python -m fattorus.kernels.montecarlo [TOPO]``).

    ``TOPO`` is a ``conf/topo`` name (default ``pinot``) or a topology YAML file. A machine
    that cannot be loaded (unknown name, unreadable file, missing or unknown keys) is one
    line on stderr and exit code 2, before any sampling.
    """
    from omegaconf.errors import OmegaConfBaseException

    from fattorus import topology

    parser = OneLineParser(prog=f"python -m {PROG}", error_prefix=PROG,
                     description="APH of uniformly random (topology-oblivious) allocations, by size and load.")
    parser.add_argument("topo", nargs="?", default="pinot",
                        help="a conf/topo name (e.g. pinot, cab, torus4) or a topology YAML file (default: pinot)")
    args = parser.parse_args(argv)
    try:
        ft = topology.load(args.topo)
    # What loading a machine can raise for a bad name or file: TopologyError (a ValueError) for
    # unknown names, files that do not parse or hold no mapping, missing, unknown or wrong keys
    # (load() names the file and line); OmegaConf's errors for an interpolation it cannot resolve.
    except (ValueError, TypeError, OSError, OmegaConfBaseException) as err:
        text = " ".join(str(err).split())
        text = text if args.topo in text else f"{args.topo}: {text}"  # load() names files
        sys.stderr.write(f"{PROG}: error: {text}\n")
        sys.exit(2)
    print(f"APH of uniformly random (topology-oblivious) allocations on {ft.name} "
          f"({ft.n_nodes} nodes), 1,024 draws per cell among the free nodes of one random busy state per "
          "load, seed 0")
    print(f"{'busy':>5} {'nodes':>6} {'ideal':>7} {'mean':>7} {'median':>7} {'p95':>7}")
    rows = aph_table(ft)
    for r in rows:
        whole = " *" if r["nodes"] == r["free"] else ""
        print(f"{r['busy']:>5.0%} {r['nodes']:>6} {r['ideal_aph']:>7.3f} {r['mean_aph']:>7.3f} "
              f"{r['median_aph']:>7.3f} {r['p95_aph']:>7.3f}{whole}")
    if any(r["nodes"] == r["free"] for r in rows):
        # One allocation drawn 1,024 times is no distribution (a session-46 report).
        print("* as many nodes as the busy state leaves free: every draw is the same allocation")


if __name__ == "__main__":
    from fattorus.args import run_piped

    sys.exit(run_piped(lambda: interrupt.run(PROG, main)))  # quiet, exit 141, when stdout's reader closes early
