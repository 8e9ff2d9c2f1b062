"""Allocation policies of the compiled replay engine (:mod:`fattorus.sched.batched`).

Each policy is a static, hashable description plus pure functions over one trial's machine:
the free-node mask ``free`` bool ``(N,)`` and the per-leaf :class:`Counts` (free nodes, nodes
booked as T2 and T3), which the engine keeps up to date as jobs start (:func:`booked`) and
end (:func:`released`). They reproduce the NumPy policies decision for decision:

* ``to``: lowest free node ids, preferred nodes first (:mod:`fattorus.sched.policy.oblivious`);
* ``ta``: Algorithm 1 of the fat-tree paper (:mod:`fattorus.sched.policy.fattree.ta`) without the
  hybrid rule: T1 on one leaf; T2 in one pod on leaves holding no T2/T3 nodes; T3 in pods
  holding no T3 nodes on leaves holding no T2 nodes; every sort order a named parameter.

A policy answers three questions with array expressions: :func:`place` (which nodes, and
how many per leaf), :func:`limits` (the largest job of each size class that fits: placement
is monotone in the size within a class, so one comparison per queued job tells which are
worth trying), and, through :func:`limits` on :func:`released` or :func:`held` counts,
feasibility on a future machine (EASY's shadow time) or with a reservation held.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import NamedTuple

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
    """The compiled form of policy ``name`` on ``ft`` (``params``: a ``TAParams`` for ``ta``, or
    a mapping of its parameters, checked as ``replay`` checks them)."""
    if getattr(ft, "kind", None) != "fattree":  # the engine's placements are leaf and pod counts
        raise ValueError(f"the compiled engine replays fat-trees only, got {getattr(ft, 'kind', type(ft).__name__)} "
                         f"{getattr(ft, 'name', '')}".rstrip())
    if name == "to":  # the leaf shape only splits the node-level work into rows
        return CompiledPolicy("to", ft.n_nodes, ft.nodes_per_leaf, ft.leaves_per_pod, ft.pods)
    if name == "ta":
        from fattorus.sched.policy.fattree.ta import TAParams

        p = TAParams.from_mapping(params) if isinstance(params, Mapping) else (params or TAParams())
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


# Why no jnp.cumsum or sort over nodes below: on XLA's CPU backend a cumulative sum over a
# node array costs ~20x a reduction and a sort ~100x (measured, docs/batched-replay.md), and the
# event loop calls placement several times per event. Every placement takes whole leaves in
# some order and part of at most one leaf, so it needs per-leaf counts (reductions), an order
# of the leaves (a comparison matrix over one composite key), and a prefix count inside one
# leaf only.


class Counts(NamedTuple):
    """Per-leaf node counts of one machine, ``(n_leaves,)`` int32 each: free nodes, and busy
    nodes booked under footprint class T2 and T3. The engine keeps them up to date as jobs
    start and end, so a policy's questions cost per-leaf, not per-node, work."""

    free: jax.Array
    t2: jax.Array
    t3: jax.Array

    def __add__(self, other: "Counts") -> "Counts":  # type: ignore[override]
        return Counts(self.free + other.free, self.t2 + other.t2, self.t3 + other.t3)


def per_leaf(pol: CompiledPolicy, mask: jax.Array) -> jax.Array:
    """``(n_leaves,)`` int32: True entries of a node mask per leaf."""
    return mask.reshape(pol.n_leaves, pol.k).sum(axis=1, dtype=jnp.int32)


def leaf_counts(pol: CompiledPolicy, free: jax.Array, node_class: jax.Array) -> Counts:
    """The :class:`Counts` of a machine given per node (``free``, ``node_class``)."""
    return Counts(per_leaf(pol, free), per_leaf(pol, node_class == 2), per_leaf(pol, node_class == 3))


def released(pol: CompiledPolicy, counts: Counts, mask: jax.Array, node_class: jax.Array) -> Counts:
    """The counts once the busy nodes of ``mask`` (booked as ``node_class`` says) are free."""
    gone = leaf_counts(pol, mask, jnp.where(mask, node_class, jnp.int8(0)))
    return Counts(counts.free + gone.free, counts.t2 - gone.t2, counts.t3 - gone.t3)


def booked(pol: CompiledPolicy, taken: jax.Array, cls) -> Counts:
    """The change in :class:`Counts` when the nodes ``taken`` per leaf are booked under class
    ``cls``: fewer free, more of the class (subtract it to release them)."""
    return Counts(-taken, jnp.where(cls == 2, taken, 0), jnp.where(cls == 3, taken, 0))


def held(pol: CompiledPolicy, counts: Counts, free: jax.Array, hold: jax.Array, hold_class,
         hold_per_leaf: jax.Array | None = None) -> Counts:
    """The counts with the node set ``hold`` held under ``hold_class`` (EASY's reservation):
    its free nodes leave the free counts and all its nodes count as booked under the class
    (``hold_per_leaf``: ``per_leaf(pol, hold)`` when the caller has it)."""
    h = per_leaf(pol, hold) if hold_per_leaf is None else hold_per_leaf
    return Counts(counts.free - per_leaf(pol, hold & free), counts.t2 + jnp.where(hold_class == 2, h, 0),
                  counts.t3 + jnp.where(hold_class == 3, h, 0))


def _take_rows(free2d: jax.Array, take: jax.Array, count: jax.Array) -> jax.Array:
    """Node mask ``(R, b)``: in row ``i`` the ``take[i]`` lowest free nodes of ``free2d``
    (``count``: each row's free nodes), where every row takes all its free nodes or none
    except at most one (a prefix of an order)."""
    full = take >= count
    partial = (take > 0) & ~full
    p = jnp.argmax(partial)
    row = free2d[p]
    row_sel = row & (jnp.cumsum(row, dtype=jnp.int32) <= take[p]) & partial[p]
    out = free2d & full[:, None]
    return out.at[p].set(out[p] | row_sel)


def _exclusive_prefix(values: jax.Array) -> jax.Array:
    """Exclusive prefix sums of a short ``(R,)`` int vector (a triangular matrix product:
    cheaper than XLA's CPU cumsum, exact for integer counts below 2**24)."""
    R = values.shape[0]
    strict = jnp.tril(jnp.ones((R, R), jnp.float32), -1)
    return (strict @ values.astype(jnp.float32)).astype(jnp.int32)


def _lowest(pol: CompiledPolicy, mask: jax.Array, n, count: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """The ``n`` lowest-indexed True entries of ``mask`` (all of them if fewer) and how many
    per leaf (``count``: the mask's entries per leaf, when known)."""
    m2 = mask.reshape(pol.n_leaves, pol.k)
    count = m2.sum(axis=1, dtype=jnp.int32) if count is None else count
    take = jnp.clip(n - _exclusive_prefix(count), 0, count)
    return _take_rows(m2, take, count).reshape(-1), take.astype(jnp.int32)


def limits(pol: CompiledPolicy, counts: Counts) -> jax.Array:
    """``(4,)``: entry ``c`` is the largest job of size class ``c`` that can be placed on the
    machine of ``counts`` (entry 0 unused). ``to``: the free count for every class."""
    if pol.name == "to":
        return jnp.full(4, counts.free.sum(dtype=jnp.int32))
    leaf_free, t2, t3 = counts
    by_pod = (pol.pods, pol.leaves_per_pod)
    pod_t3 = t3.reshape(by_pod).sum(axis=1)
    avail2 = jnp.where((t2 == 0) & (t3 == 0), leaf_free, 0).reshape(by_pod).sum(axis=1)
    ok3 = (t2 == 0).reshape(by_pod) & (pod_t3 == 0)[:, None]
    avail3 = jnp.where(ok3, leaf_free.reshape(by_pod), 0).sum()
    return jnp.stack([jnp.int32(0), leaf_free.max(), avail2.max(), avail3]).astype(jnp.int32)


def _key(values, order: str):
    return values if order == "least" else -values


def _leaf_key(pol: CompiledPolicy, valid, pod_key, leaf_key) -> jax.Array:
    """One integer per leaf whose ascending order is (valid first, pod key, pod id, leaf key,
    leaf id) with the tie rule on the ids: the lexicographic order of Algorithm 1's sorts.
    ``pod_key`` lies in ``[-K, K]`` (``K`` = nodes per pod) and ``leaf_key`` in ``[-k, k]``."""
    K, k, P, NL = pol.k * pol.leaves_per_pod, pol.k, pol.pods, pol.n_leaves
    dtype = jnp.int32 if 2 * (2 * K + 1) * P * (2 * k + 1) * NL < 2**31 else jnp.int64
    leaves = jnp.arange(NL, dtype=dtype)
    pod = leaves // pol.leaves_per_pod
    if not pol.low_id:
        leaves, pod = NL - 1 - leaves, P - 1 - pod
    key = (~valid).astype(dtype) * (2 * K + 1) + (pod_key.astype(dtype) + K)
    key = (key * P + pod) * (2 * k + 1) + (leaf_key.astype(dtype) + k)
    return key * NL + leaves


def _before(key: jax.Array, count: jax.Array) -> jax.Array:
    """Per leaf, the sum of ``count`` over the leaves whose ``key`` is smaller (keys distinct)."""
    if key.shape[0] <= 256:  # a comparison matrix: no sort
        # The key as the root of a reduction (a sum with zeros: the same values): XLA would
        # otherwise fuse the key's arithmetic into the (R, R) comparison and recompute it for
        # every pair (optimization_barrier does not survive XLA's CPU pipeline). Measured:
        # 15-20 % of a whole batched ta replay on Cab.
        key = jnp.stack([key, jnp.zeros_like(key)], axis=-1).sum(axis=-1)
        return ((key[None, :] < key[:, None]).astype(jnp.float32) @ count.astype(jnp.float32)).astype(jnp.int32)
    order = jnp.argsort(key)
    c = count[order]
    return jnp.zeros_like(count).at[order].set(jnp.cumsum(c) - c)


def _per_leaf_of_pod(pol: CompiledPolicy, per_pod: jax.Array) -> jax.Array:
    """``(n_leaves,)``: each leaf's entry of a ``(pods,)`` vector (a broadcast, not a gather)."""
    # Why not per_pod[leaf_pod]: XLA fuses the pod sums into the gather and recomputes them
    # per leaf with more index work (A/B on 64 batched ta trials: ~13 % of the replay).
    return jnp.broadcast_to(per_pod[:, None], (pol.pods, pol.leaves_per_pod)).reshape(-1)


def _place_ta(pol: CompiledPolicy, free, counts: Counts, n) -> tuple[jax.Array, jax.Array]:
    """Algorithm 1 on the machine (``free`` with its ``counts``); the caller checks
    feasibility first (:func:`limits`).

    The three size classes differ only in which leaves are valid and in the pod and leaf sort
    keys (all per-leaf vectors), so all three are computed and one is selected before the
    single node-level step: under ``vmap`` a ``switch`` on a batched class would run every
    branch's node-level work anyway."""
    leaf_free, t2, t3 = counts
    L, P, o = pol.leaves_per_pod, pol.pods, pol.orders
    K = pol.k * L
    pod_free = leaf_free.reshape(P, L).sum(axis=1)
    pod_t3 = t3.reshape(P, L).sum(axis=1)
    leaf_pod = jnp.arange(pol.n_leaves) // L
    jt = size_class(pol, n)
    # T1: one leaf with room, by (pod key, pod, leaf key, leaf).
    valid1, pod_key1, leaf_key1 = leaf_free >= n, _key(_per_leaf_of_pod(pol, pod_free), o[0]), _key(leaf_free, o[1])
    # T2: the first pod by (room < n last, its key, pod id); its leaves with no T2/T3 nodes.
    avail2 = jnp.where((t2 == 0) & (t3 == 0), leaf_free, 0)
    avail_pod2 = avail2.reshape(P, L).sum(axis=1)
    pods = jnp.arange(P) if pol.low_id else P - 1 - jnp.arange(P)
    pod = jnp.argmin(((avail_pod2 < n) * (2 * K + 1) + _key(avail_pod2, o[2]) + K) * P + pods)
    valid2, leaf_key2 = (leaf_pod == pod) & (avail2 > 0), _key(leaf_free, o[3])
    # T3: leaves with no T2 nodes in pods with no T3 nodes.
    avail3 = jnp.where((t2 == 0) & _per_leaf_of_pod(pol, pod_t3 == 0), leaf_free, 0)
    avail_pod3 = avail3.reshape(P, L).sum(axis=1)
    valid3, pod_key3, leaf_key3 = avail3 > 0, _key(_per_leaf_of_pod(pol, avail_pod3), o[4]), _key(leaf_free, o[5])
    pick = lambda a, b, c: jnp.where(jt == 1, a, jnp.where(jt == 2, b, c))
    valid = pick(valid1, valid2, valid3)
    key = _leaf_key(pol, valid, pick(pod_key1, jnp.zeros_like(pod_key1), pod_key3), pick(leaf_key1, leaf_key2, leaf_key3))
    count = jnp.where(valid, leaf_free, 0)
    take = jnp.where(valid, jnp.clip(n - _before(key, count), 0, count), 0)
    return _take_rows(free.reshape(pol.n_leaves, pol.k), take, leaf_free).reshape(-1), take.astype(jnp.int32)


def place(pol: CompiledPolicy, free, counts: Counts, n, prefer=None) -> tuple[jax.Array, jax.Array]:
    """An ``n``-node job on the machine with free nodes ``free`` (held nodes already taken
    out) and per-leaf ``counts`` of that machine: the node mask and the nodes taken per leaf.
    ``prefer``: ``to``'s preferred nodes (``ta`` has no free choice to give)."""
    if pol.name == "ta":
        return _place_ta(pol, free, counts, n)
    if prefer is None:
        return _lowest(pol, free, n, counts.free)
    first, taken = _lowest(pol, free & prefer, n)
    rest, more = _lowest(pol, free & ~prefer, n - taken.sum(dtype=jnp.int32))
    return first | rest, taken + more


def footprint_class(pol: CompiledPolicy, taken: jax.Array) -> jax.Array:
    """Class a placement is booked under, from its nodes per leaf: 1 one leaf, 2 one pod, 3
    several pods (``to``: 1)."""
    if pol.name == "to":
        return jnp.int8(1)
    leaves = taken > 0
    pods = leaves.reshape(pol.pods, pol.leaves_per_pod).any(axis=1)
    return (1 + (leaves.sum() > 1) + (pods.sum() > 1)).astype(jnp.int8)


__all__ = ["CompiledPolicy", "Counts", "booked", "compile_policy", "footprint_class", "held", "leaf_counts", "limits",
           "per_group", "per_leaf", "place", "released", "size_class"]

#: The family-neutral name the engine uses (its switches' node groups are this family's leaves).
per_group = per_leaf
