"""Allocation policies of the compiled replay engine (:mod:`fattorus.sched.batched`).

Each policy is a static, hashable description plus pure functions over the per-node machine
arrays of one trial (``free`` bool ``(N,)``, ``node_class`` int8 ``(N,)``: the footprint class
each busy node is booked under, 0 where free). They reproduce the NumPy policies decision for
decision:

* ``to``: lowest free node ids, preferred nodes first (:mod:`fattorus.sched.policy.oblivious`);
* ``ta``: Algorithm 1 of the fat-tree paper (:mod:`fattorus.sched.policy.fattree.ta`) without the
  hybrid rule: T1 on one leaf; T2 in one pod on leaves holding no T2/T3 nodes; T3 in pods
  holding no T3 nodes on leaves holding no T2 nodes; every sort order a named parameter.

A policy answers three questions with array expressions: :func:`place` (which nodes),
:func:`limits` (the largest job of each size class that fits now: placement is monotone in
the size within a class, so one comparison per queued job tells which are worth trying),
and, through :func:`limits`, feasibility on a future machine for the shadow time.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from fattorus.topology.fattree import FatTree


@dataclasses.dataclass(frozen=True)
class CompiledPolicy:
    """Static description of a policy for the compiled engine (hashable: a jit static arg).

    ``name``: ``"to"`` or ``"ta"``; ``k``/``leaves_per_pod``/``pods``: the fat-tree shape
    (``ta`` only); ``orders``: the six sort orders of :class:`TAParams` (``"least"``/``"most"``)
    in the order t1_pod, t1_leaf, t2_pod, t2_leaf, t3_pod, t3_leaf; ``low_id``: the tie rule.
    """

    name: str
    n_nodes: int
    k: int = 1
    leaves_per_pod: int = 1
    pods: int = 1
    orders: tuple[str, ...] = ()
    low_id: bool = True

    @property
    def n_leaves(self) -> int:
        return self.leaves_per_pod * self.pods


def compile_policy(name: str, ft: FatTree, params=None) -> CompiledPolicy:
    """The compiled form of policy ``name`` on ``ft`` (``params``: a ``TAParams`` for ``ta``)."""
    if name == "to":
        return CompiledPolicy("to", ft.n_nodes)
    if name == "ta":
        from fattorus.sched.policy.fattree.ta import TAParams

        p = params or TAParams()
        if p.relax_after_s is not None:
            raise ValueError("the compiled engine has no hybrid rule: ta needs relax_after_s = null")
        orders = (p.t1_pod_order, p.t1_leaf_order, p.t2_pod_order, p.t2_leaf_order, p.t3_pod_order, p.t3_leaf_order)
        return CompiledPolicy("ta", ft.n_nodes, ft.nodes_per_leaf, ft.leaves_per_pod, ft.pods, orders, p.tie == "low_id")
    raise ValueError(f"policy {name!r} has no compiled engine; supported: ['to', 'ta']")


def size_class(pol: CompiledPolicy, n):
    """1/2/3 (T1/T2/T3) for ``ta``; 1 for ``to`` (one class: only the free count matters)."""
    if pol.name == "to":
        return jnp.ones_like(n)
    return 1 + (n > pol.k) + (n > pol.k * pol.leaves_per_pod)


def lowest(mask: jax.Array, n) -> jax.Array:
    """The ``n`` lowest-indexed True entries of ``mask`` (all of them if fewer)."""
    return mask & (jnp.cumsum(mask) <= n)


def lowest_preferring(free: jax.Array, prefer: jax.Array, n) -> jax.Array:
    """``n`` free nodes, preferred ones first, each group lowest id first (``to``'s rule)."""
    first = free & prefer
    return lowest(first, n) | lowest(free & ~prefer, n - jnp.sum(first))


def _counts(pol: CompiledPolicy, free, node_class, hold=None, hold_class=0):
    """Per-leaf free / T2 / T3 node counts and per-pod sums; ``hold`` adds a held node set
    booked under ``hold_class`` on top of what the nodes hold (EASY's held-R machine)."""
    NL, k = pol.n_leaves, pol.k
    leaf = lambda m: m.reshape(NL, k).sum(axis=1, dtype=jnp.int32)
    t2, t3 = leaf(node_class == 2), leaf(node_class == 3)
    if hold is not None:
        held = leaf(hold)
        t2 = t2 + jnp.where(hold_class == 2, held, 0)
        t3 = t3 + jnp.where(hold_class == 3, held, 0)
    leaf_free = leaf(free)
    pod = lambda v: v.reshape(pol.pods, pol.leaves_per_pod).sum(axis=1)
    return leaf_free, t2, t3, pod(leaf_free), pod(t3)


def limits(pol: CompiledPolicy, free, node_class, hold=None, hold_class=0) -> jax.Array:
    """``(4,)``: entry ``c`` is the largest job of size class ``c`` that can be placed now
    (entry 0 unused). ``to``: the free count for every class."""
    if pol.name == "to":
        n_free = jnp.sum(free & (True if hold is None else ~hold), dtype=jnp.int32)
        return jnp.full(4, n_free)
    f = free if hold is None else free & ~hold
    leaf_free, t2, t3, pod_free, pod_t3 = _counts(pol, f, node_class, hold, hold_class)
    by_pod = (pol.pods, pol.leaves_per_pod)
    avail2 = jnp.where((t2 == 0) & (t3 == 0), leaf_free, 0).reshape(by_pod).sum(axis=1)
    ok3 = (t2 == 0).reshape(by_pod) & (pod_t3 == 0)[:, None]
    avail3 = jnp.where(ok3, leaf_free.reshape(by_pod), 0).sum()
    return jnp.stack([jnp.int32(0), leaf_free.max(), avail2.max(), avail3]).astype(jnp.int32)


def _key(values, order: str):
    return values if order == "least" else -values


def _take_from_leaves(pol: CompiledPolicy, free, order, valid, n) -> jax.Array:
    """Node mask of the first ``n`` free nodes of the valid leaves visited in ``order``."""
    k = pol.k
    free2d = jnp.where(valid[order][:, None], free.reshape(pol.n_leaves, k)[order], False)
    per_leaf = free2d.sum(axis=1)
    before = jnp.cumsum(per_leaf) - per_leaf
    take = jnp.clip(n - before, 0, k)
    chosen = free2d & (jnp.cumsum(free2d, axis=1) <= take[:, None])
    ids = order[:, None] * k + jnp.arange(k)
    return jnp.zeros(pol.n_nodes, bool).at[ids.ravel()].set(chosen.ravel())


def _ordered_leaves(pol: CompiledPolicy, valid, pod_key, leaf_key):
    """Leaf ids sorted by (valid first, pod key, pod id, leaf key, leaf id) with the tie rule."""
    s = 1 if pol.low_id else -1
    leaves = jnp.arange(pol.n_leaves)
    pod = leaves // pol.leaves_per_pod
    return jnp.lexsort((s * leaves, leaf_key, s * pod, pod_key, ~valid))


def place_ta(pol: CompiledPolicy, free, node_class, n, hold=None, hold_class=0) -> jax.Array:
    """Algorithm 1 on the machine (``free``, ``node_class``, optionally with ``hold`` held);
    the caller checks feasibility first (:func:`limits`)."""
    if hold is not None:
        free = free & ~hold
    leaf_free, t2, t3, pod_free, pod_t3 = _counts(pol, free, node_class, hold, hold_class)
    L, o = pol.leaves_per_pod, pol.orders
    leaf_pod = jnp.arange(pol.n_leaves) // L
    jt = size_class(pol, n)

    def t1():
        valid = leaf_free >= n
        order = _ordered_leaves(pol, valid, _key(pod_free[leaf_pod], o[0]), _key(leaf_free, o[1]))
        return _take_from_leaves(pol, free, order, valid, n)

    def t2_():
        avail = jnp.where((t2 == 0) & (t3 == 0), leaf_free, 0)
        avail_pod = avail.reshape(pol.pods, L).sum(axis=1)
        s = 1 if pol.low_id else -1
        pods = jnp.arange(pol.pods)
        pod = jnp.lexsort((s * pods, _key(avail_pod, o[2]), avail_pod < n))[0]
        valid = (leaf_pod == pod) & (avail > 0)
        order = _ordered_leaves(pol, valid, jnp.zeros_like(leaf_free), _key(leaf_free, o[3]))
        return _take_from_leaves(pol, free, order, valid, n)

    def t3_():
        avail = jnp.where((t2 == 0) & (pod_t3 == 0)[leaf_pod], leaf_free, 0)
        avail_pod = avail.reshape(pol.pods, L).sum(axis=1)
        valid = avail > 0
        order = _ordered_leaves(pol, valid, _key(avail_pod[leaf_pod], o[4]), _key(leaf_free, o[5]))
        return _take_from_leaves(pol, free, order, valid, n)

    return jax.lax.switch(jt - 1, (t1, t2_, t3_))


def place(pol: CompiledPolicy, free, node_class, n, prefer=None, hold=None, hold_class=0) -> jax.Array:
    """Node mask for an ``n``-node job on the free nodes (minus ``hold``, booked under
    ``hold_class``); ``prefer``: ``to``'s preferred nodes (``ta`` has no free choice to give)."""
    if pol.name == "to":
        if hold is not None:
            free = free & ~hold
        return lowest(free, n) if prefer is None else lowest_preferring(free, prefer, n)
    return place_ta(pol, free, node_class, n, hold, hold_class)


def footprint_class(pol: CompiledPolicy, sel) -> jax.Array:
    """Class a placement is booked under: 1 one leaf, 2 one pod, 3 several pods (``to``: 1)."""
    if pol.name == "to":
        return jnp.int8(1)
    leaves = sel.reshape(pol.n_leaves, pol.k).any(axis=1)
    pods = leaves.reshape(pol.pods, pol.leaves_per_pod).any(axis=1)
    return (1 + (leaves.sum() > 1) + (pods.sum() > 1)).astype(jnp.int8)


__all__ = ["CompiledPolicy", "compile_policy", "footprint_class", "limits", "place", "size_class"]
