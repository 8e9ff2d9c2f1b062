"""Interference-free topology-aware policy (`ta`): Algorithm 1 of the fat-tree paper.

Job types by requested nodes ``N`` (``k`` nodes per leaf, ``p`` per pod): T1 ``N <= k``,
T2 ``k < N <= p``, T3 ``N > p``. Placement rules (each keeps jobs from sharing any
inter-switch link):

* T1: one leaf switch; may share it with anything.
* T2: one pod; never on a leaf holding nodes of a T2 or T3 job.
* T3: several pods; never in a pod holding a T3 job; never on a leaf holding a T2 job.

The sort orders of Algorithm 1 are named parameters (:class:`TAParams`) so tuning can change
them: ``least`` sorts by available nodes ascending, ``most`` descending; ties go to the
lower pod / leaf id (``tie="low_id"``) or the higher (``"high_id"``). Nodes within a leaf are
taken lowest slot first.

Every decision works on the per-leaf and per-pod counts of the generic machine state
(:mod:`fattorus.sched.state`: level 0 is the leaf, level 1 the pod, footprint classes 1/2/3
are T1/T2/T3), so it costs ``O(leaves)`` array work, never a scan of the machine's nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from fattorus.args import did_you_mean
from fattorus.sched import state as st
from fattorus.sched.policy.base import Policy
from fattorus.sched.policy.fattree.leaves import LEAF, POD, T1, T2, T3, take_from_leaves
from fattorus.sched.policy.fattree.tree_bestfit import TreeBestFit
from fattorus.sched.policy.space import Categorical, FloatRange, Gate, Param
from fattorus.topology.fattree import FatTree

ORDERS = ("least", "most")
TIES = ("low_id", "high_id")
# The tuner's range for the hybrid rule: from 10 minutes (barely more than EASY's own
# backfill horizon) to 7 days (longer than any job of the shipped logs waits).
RELAX_MIN_S = 600.0
RELAX_MAX_S = 7 * 86400.0


@dataclasses.dataclass(frozen=True)
class TAParams:
    """Heuristics of Algorithm 1 (defaults: the paper's choices)."""

    t1_pod_order: str = "least"
    t1_leaf_order: str = "least"
    t2_pod_order: str = "least"
    t2_leaf_order: str = "most"
    t3_pod_order: str = "most"
    t3_leaf_order: str = "most"
    tie: str = "low_id"
    # Hybrid rule (not in the papers): a queue head that has waited longer than this many
    # seconds may take a compact but not isolated placement (tree best fit) when no
    # interference-free one exists. None: never (the paper's policy).
    relax_after_s: float | None = None

    def __post_init__(self) -> None:
        if self.relax_after_s is not None and not (
            isinstance(self.relax_after_s, (int, float)) and not isinstance(self.relax_after_s, bool)
            and self.relax_after_s >= 0
        ):
            raise ValueError(f"policy ta: relax_after_s must be null or a number >= 0, got {self.relax_after_s!r}")
        for f in dataclasses.fields(self):
            if f.name == "relax_after_s":
                continue
            value = getattr(self, f.name)
            allowed = TIES if f.name == "tie" else ORDERS
            if value not in allowed:
                raise ValueError(f"policy ta: {f.name} must be one of {list(allowed)}, got {value!r}")

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any]) -> TAParams:
        """Build from a config mapping; unknown keys are an error naming them."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            hint = did_you_mean(unknown[0], sorted(known))
            raise ValueError(f"policy ta: unknown parameter(s) {unknown}{hint}; known: {sorted(known)}")
        return cls(**params)

    @classmethod
    def search_space(cls) -> tuple[Param, ...]:
        """The tunable space (:mod:`fattorus.sched.policy.space`): each sort order in
        :data:`ORDERS`, ``tie`` in :data:`TIES`, and ``relax_after_s`` behind the switch
        ``relax`` (``never``: None; ``after``: log-uniform in [10 min, 7 days]).

        The names and their order are those of the stored tuning studies: changing them
        orphans the trials of every existing study."""
        orders = tuple(Categorical(f.name, ORDERS) for f in dataclasses.fields(cls) if f.name.endswith("_order"))
        relax = FloatRange("relax_after_s", RELAX_MIN_S, RELAX_MAX_S, log=True, gate=Gate("relax", "never", "after"))
        return (*orders, Categorical("tie", TIES), relax)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The paper's choices as a config mapping."""
        return dataclasses.asdict(cls())

    @classmethod
    def describe(cls, params: Mapping[str, Any]) -> str:
        """``t1=least/least t2=least/most t3=most/most tie=low_id relax=never``."""
        def pair(job_type: str) -> str:
            return f"{params[f'{job_type}_pod_order']}/{params[f'{job_type}_leaf_order']}"

        relax = params.get("relax_after_s")
        relax_txt = "never" if relax is None else f"{relax:.0f} s ({relax / 3600:.2f} h)"
        return f"t1={pair('t1')} t2={pair('t2')} t3={pair('t3')} tie={params['tie']} relax={relax_txt}"


def _key(values: np.ndarray, order: str) -> np.ndarray:
    return values if order == "least" else -values


class TopologyAware(Policy):
    """Algorithm 1 with T1/T2/T3 rules; see the module docstring."""

    name = "ta"
    families = ("fattree",)
    needs = st.PER_GROUP  # feasibility reads free and held counts per leaf and pod

    def __init__(self, ft: FatTree, params: TAParams | None = None) -> None:
        super().__init__(ft)
        self.ft = ft
        self.params = params or TAParams()
        L = ft.leaves_per_pod
        self._leaf_ids = np.arange(ft.n_leaves)
        self._leaf_pod = self._leaf_ids // L
        self._sign = 1 if self.params.tie == "low_id" else -1
        self._relaxed = None if self.params.relax_after_s is None else TreeBestFit(ft)
        # The hybrid rule makes a decision depend on how long the job has waited.
        self.time_dependent = self._relaxed is not None

    def wake_time(self, submit_s: float) -> float | None:
        """First instant (s) at which a job submitted at ``submit_s`` may be relaxed (None: never)."""
        if self._relaxed is None:
            return None
        return float(np.nextafter(submit_s + self.params.relax_after_s, np.inf))

    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """Nodes for an ``n``-node job under the T1/T2/T3 rules, or None. ``prefer`` is ignored.

        With ``relax_after_s`` set, a job that has waited longer than that (``waited_s``,
        seconds) and has no interference-free placement gets a tree best-fit one.
        """
        jt = int(self.ft.size_class(n))
        if jt == T1:
            placed = self._t1(state, n)
        elif jt == T2:
            placed = self._t2(state, n)
        else:
            placed = self._t3(state, n)
        if placed is None and self._relaxed is not None and waited_s > self.params.relax_after_s:
            placed = self._relaxed.place(state, n)
        return placed

    def feasible(self, c: st.Counts, n: int, waited_s: np.ndarray | float = 0.0) -> np.ndarray:
        """Whether an ``n``-node job fits, for counts ``c`` (:class:`fattorus.sched.state.Counts`,
        optionally batched over leading axes): T1 some leaf has ``n`` free; T2 some pod has
        ``n`` free on leaves without T2/T3; T3 pods without T3 have ``n`` free on leaves
        without T2 (or, under the hybrid rule once ``waited_s`` exceeds ``relax_after_s``,
        ``n`` nodes are free)."""
        fits = self._isolated_fits(c, n)
        if self._relaxed is not None:
            fits = fits | ((np.asarray(waited_s) > self.params.relax_after_s) & (np.asarray(c.n_free) >= n))
        return fits

    def _isolated_fits(self, c: st.Counts, n: int) -> np.ndarray:
        ft = self.ft
        jt = int(ft.size_class(n))
        leaf_free = c.group_free[LEAF]
        if jt == T1:
            return leaf_free.max(axis=-1) >= n
        leaf_t2, leaf_t3 = c.held[LEAF][..., T2, :], c.held[LEAF][..., T3, :]
        by_pod = leaf_free.shape[:-1] + (ft.pods, ft.leaves_per_pod)
        if jt == T2:
            ok = (leaf_t2 == 0) & (leaf_t3 == 0)
            return np.where(ok, leaf_free, 0).reshape(by_pod).sum(axis=-1).max(axis=-1) >= n
        ok = (leaf_t2 == 0).reshape(by_pod) & (c.held[POD][..., T3, :] == 0)[..., None]
        return np.where(ok, leaf_free.reshape(by_pod), 0).sum(axis=(-1, -2)) >= n

    def _order_leaves(self, leaves: np.ndarray, pod_key: np.ndarray, leaf_key: np.ndarray) -> np.ndarray:
        """``leaves`` sorted by (pod key, pod id, leaf key, leaf id); keys are per leaf."""
        s = self._sign
        order = np.lexsort((s * leaves, leaf_key, s * self._leaf_pod[leaves], pod_key))
        return leaves[order]

    def _t1(self, state: st.MachineState, n: int) -> np.ndarray | None:
        p = self.params
        leaf_free, pod_free = state.group_free[LEAF], state.group_free[POD]
        leaves = (leaf_free >= n).nonzero()[0]
        if len(leaves) == 0:
            return None
        pods = self._leaf_pod[leaves]
        first = self._order_leaves(
            leaves, _key(pod_free[pods], p.t1_pod_order), _key(leaf_free[leaves], p.t1_leaf_order)
        )[:1]
        return take_from_leaves(state, first, n)

    def _t2(self, state: st.MachineState, n: int) -> np.ndarray | None:
        p, ft = self.params, self.ft
        held, leaf_free = state.held[LEAF], state.group_free[LEAF]
        eligible = (held[T2] == 0) & (held[T3] == 0)
        avail_leaf = np.where(eligible, leaf_free, 0)
        avail_pod = avail_leaf.reshape(ft.pods, ft.leaves_per_pod).sum(axis=1)
        pods = (avail_pod >= n).nonzero()[0]
        if len(pods) == 0:
            return None
        pod = pods[np.lexsort((self._sign * pods, _key(avail_pod[pods], p.t2_pod_order)))[0]]
        leaves = pod * ft.leaves_per_pod + (avail_leaf.reshape(ft.pods, -1)[pod] > 0).nonzero()[0]
        ordered = self._order_leaves(leaves, np.zeros(len(leaves)), _key(leaf_free[leaves], p.t2_leaf_order))
        return take_from_leaves(state, ordered, n)

    def _t3(self, state: st.MachineState, n: int) -> np.ndarray | None:
        p, ft = self.params, self.ft
        leaf_free = state.group_free[LEAF]
        pod_ok = state.held[POD][T3] == 0
        eligible = (state.held[LEAF][T2] == 0) & pod_ok[self._leaf_pod]
        avail_leaf = np.where(eligible, leaf_free, 0)
        if avail_leaf.sum() < n:
            return None
        avail_pod = avail_leaf.reshape(ft.pods, ft.leaves_per_pod).sum(axis=1)
        leaves = (avail_leaf > 0).nonzero()[0]
        ordered = self._order_leaves(
            leaves,
            _key(avail_pod[self._leaf_pod[leaves]], p.t3_pod_order),
            _key(leaf_free[leaves], p.t3_leaf_order),
        )
        return take_from_leaves(state, ordered, n)


__all__ = ["ORDERS", "RELAX_MAX_S", "RELAX_MIN_S", "TIES", "TAParams", "TopologyAware"]
