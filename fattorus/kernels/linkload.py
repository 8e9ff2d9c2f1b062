"""Link loads and inter-job interference on any topology (spec `metrics-and-outputs.md`).

* :func:`link_loads`: bytes per directed link, a scatter-add of each flow's bytes onto the
  links of its route (the topology's static ``routes``). Pure JAX, jit-compiled, no loop over
  flows, and vmappable: ``jax.vmap(link_loads, in_axes=(0, 0, None))`` loads a batch of
  jobs or allocations at once.
* :func:`flow_link_loads`: the same straight from ``(src, dst)`` node ids (routes fused in).
* :func:`job_link_loads`: the same from a job's allocation and its rank-level traffic
  (rank ``i`` on ``alloc[i]``), vmappable over padded jobs.
* :func:`level_stats` / :func:`summarize`: max, mean and quantiles of the loads per link
  class (``topo.link_class_names``).
* :func:`interference`: given the loads of ``J`` concurrently running jobs ``(J, n_links)``,
  which links carry traffic of more than one job, and per job the number of its links that
  are shared and the share of its link traffic (bytes x links) that crosses shared links.

Loads are in bytes (the flows' unit), accumulated in ``float32`` unless another dtype is
asked for (``float64`` needs ``jax_enable_x64``): float32 keeps about 7 significant digits,
ample for loads that are compared and summarised, not accounted to the byte.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fattorus.topology.base import Topology

#: Quantiles reported by :func:`level_stats` after max and mean.
QUANTILES = (0.5, 0.9, 0.99)


@partial(jax.jit, static_argnames=("n_links", "dtype"))
def link_loads(route_ids: jax.Array, nbytes: jax.Array, n_links: int, dtype=jnp.float32) -> jax.Array:
    """Bytes per directed link.

    Args:
      route_ids: ``(F, H)`` link ids per flow, padded with -1 (``topo.routes``).
      nbytes: ``(F,)`` bytes per flow (bytes of padding flows are ignored: they have no links).
      n_links: number of directed links (static; ``topo.n_links``).
      dtype: accumulation dtype (static).

    Returns:
      ``(n_links,)`` bytes crossing each link.
    """
    idx = jnp.where(route_ids >= 0, route_ids, n_links)  # padding goes out of bounds, dropped
    w = jnp.broadcast_to(jnp.asarray(nbytes, dtype)[..., None], route_ids.shape)
    return jnp.zeros(n_links, dtype).at[idx.reshape(-1)].add(w.reshape(-1), mode="drop")


@partial(jax.jit, static_argnums=0, static_argnames=("dtype",))
def flow_link_loads(topo: Topology, src: jax.Array, dst: jax.Array, nbytes: jax.Array, dtype=jnp.float32) -> jax.Array:
    """Loads ``(n_links,)`` of flows between node ids ``src -> dst`` (``(F,)``; -1 pads).

    Equal to ``link_loads(topo.routes(src, dst), nbytes, topo.n_links)``; a family may fuse the
    two (``topo.flow_loads``: the fat-tree scatters per route slot, two to three times faster
    on CPU than materialising the padded routes).
    """
    return topo.flow_loads(src, dst, nbytes, dtype)


@partial(jax.jit, static_argnums=0, static_argnames=("dtype",))
def job_link_loads(
    ft: Topology, alloc: jax.Array, src_rank: jax.Array, dst_rank: jax.Array, nbytes: jax.Array, dtype=jnp.float32
) -> jax.Array:
    """Loads ``(n_links,)`` of one job's rank traffic, rank ``i`` running on ``alloc[i]``.

    ``alloc`` is ``(n_max,)`` node ids (padding -1 after the job's nodes); ``src_rank``,
    ``dst_rank``, ``nbytes`` are ``(F,)`` with -1 ranks for padding flows. vmap over jobs
    with equal padded shapes: ``jax.vmap(job_link_loads, in_axes=(None, 0, 0, 0, 0))``.
    """
    def node(rank):
        return jnp.where(rank >= 0, alloc[jnp.maximum(rank, 0)], -1)

    return flow_link_loads(ft, node(src_rank), node(dst_rank), nbytes, dtype=dtype)


# Summaries ----------------------------------------------------------------------------------
@partial(jax.jit, static_argnums=0, static_argnames=("quantiles",))
def level_stats(topo: Topology, loads: jax.Array, quantiles: tuple[float, ...] = QUANTILES) -> jax.Array:
    """Per-class statistics of ``loads`` (``(n_links,)``, vmappable over a leading batch).

    Returns ``(classes, 3 + len(quantiles))``: for each link class (``topo.link_class_names``)
    the max, the mean over all links of the class, the number of links with load > 0, then
    the requested quantiles over all links of the class (bytes).
    """
    rows = []
    cls = np.asarray(topo.link_class)
    for c in range(len(topo.link_class_names)):
        idx = np.flatnonzero(cls == c)
        if len(idx) == 0:  # e.g. a one-group machine has no links of the top class
            rows.append(jnp.zeros(3 + len(quantiles), loads.dtype))
            continue
        x = loads[idx]
        q = jnp.quantile(x, jnp.asarray(quantiles, loads.dtype))
        head = jnp.stack([x.max(), x.mean(), (x > 0).sum().astype(loads.dtype)])
        rows.append(jnp.concatenate([head, q]))
    return jnp.stack(rows)


def summarize(topo: Topology, loads, quantiles: tuple[float, ...] = QUANTILES) -> dict[str, dict[str, float]]:
    """Host-side dict ``{class name: {max, mean, used, p50, ...}}`` of one load vector (bytes)."""
    stats = np.asarray(level_stats(topo, jnp.asarray(loads), tuple(quantiles)), dtype=np.float64)
    names = ["max", "mean", "used"] + [f"p{round(100 * q):02d}" for q in quantiles]
    return {
        level: {name: float(v) for name, v in zip(names, row)}
        for level, row in zip(topo.link_class_names, stats)
    }


# Interference -------------------------------------------------------------------------------
class Interference(NamedTuple):
    """Link sharing between concurrently running jobs (links of class >= ``min_level``; class 0
    is every family's node-injection class, which no two jobs share).

    Attributes:
      jobs_on_link: ``(n_links,)`` int32, jobs with load > 0 on each link (0 below min_level).
      shared: ``(n_links,)`` bool, links carrying traffic of more than one job.
      links_used: ``(J,)`` int32, links each job's traffic uses.
      shared_links: ``(J,)`` int32, those of them also used by another job.
      shared_share: ``(J,)`` float, ``sum(load on shared links) / sum(load)`` over the job's
        links: the traffic-weighted share (bytes x links) crossing shared links; 0 without
        traffic.
      shared_by_level: ``(J, classes)`` int32, ``shared_links`` split by link class.
    """

    jobs_on_link: jax.Array
    shared: jax.Array
    links_used: jax.Array
    shared_links: jax.Array
    shared_share: jax.Array
    shared_by_level: jax.Array


def _level_mask(topo: Topology, min_level: int) -> np.ndarray:
    return np.asarray(topo.link_class) >= min_level


@partial(jax.jit, static_argnums=0, static_argnames=("min_level",))
def interference(ft: Topology, job_loads: jax.Array, min_level: int = 1) -> Interference:
    """Interference exposure of ``J`` concurrently running jobs.

    Args:
      ft: the topology (static).
      job_loads: ``(J, n_links)`` loads of each job alone (all-zero rows are allowed, e.g.
        padding, and change nothing).
      min_level: lowest link class considered (static). The default 1 counts only
        inter-switch links, which are the only ones two jobs can share (a node, and so its
        injection links, class 0, belongs to one job).

    Returns:
      :class:`Interference`.
    """
    considered = jnp.asarray(_level_mask(ft, min_level))
    level = jnp.asarray(ft.link_class, jnp.int32)
    used = (job_loads > 0) & considered[None, :]
    jobs_on_link = used.sum(axis=0).astype(jnp.int32)
    shared = jobs_on_link > 1
    mine_shared = used & shared[None, :]
    load = jnp.where(used, job_loads, 0)
    total = load.sum(axis=1)
    on_shared = jnp.where(mine_shared, job_loads, 0).sum(axis=1)
    share = jnp.where(total > 0, on_shared / jnp.where(total > 0, total, 1), 0.0)
    n_classes = len(ft.link_class_names)
    by_level = jnp.stack([(mine_shared & (level == lv)[None, :]).sum(axis=1) for lv in range(n_classes)], axis=1)
    return Interference(
        jobs_on_link=jobs_on_link,
        shared=shared,
        links_used=used.sum(axis=1).astype(jnp.int32),
        shared_links=mine_shared.sum(axis=1).astype(jnp.int32),
        shared_share=share,
        shared_by_level=by_level.astype(jnp.int32),
    )


@partial(jax.jit, static_argnums=0, static_argnames=("min_level",))
def shared_pairs(ft: Topology, job_loads: jax.Array, min_level: int = 1) -> jax.Array:
    """``(J, J)`` int32: links (level >= ``min_level``) used by both job ``a`` and job ``b``.

    The diagonal holds each job's own link count.
    """
    used = ((job_loads > 0) & jnp.asarray(_level_mask(ft, min_level))[None, :]).astype(jnp.int32)
    return used @ used.T
