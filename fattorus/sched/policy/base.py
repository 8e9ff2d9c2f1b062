"""The allocation-policy contract: what the scheduler engine may ask a policy, with defaults.

A policy answers one question — which exact nodes should an ``n``-node job get on this
machine state, or none if no valid placement exists now — and declares the few facts the
engine needs to plan around it. Everything has a default here except :meth:`Policy.place`;
a policy overrides only what it knows better. The engine never probes for attributes and
never reads a policy's name.

Contract (checked for every registered policy × every topology in ``conf/topo`` by
``tests/test_policy_contract.py``):

* ``place`` returns ``n`` distinct node ids that are free in ``state``, or None.
* ``feasible(counts, n, waited_s)`` is None with ``needs = None`` (no count test: the
  engine bisects with ``place`` on future states) or a bool array over the batch axes of ``counts`` that is True
  exactly where ``place`` would succeed on a state with those counts.
* Within one :meth:`Policy.size_class`, feasibility is monotone in ``n`` (if ``n`` nodes
  cannot be placed, no larger job of the class can) and only shrinks as jobs start; the
  engine relies on it to skip candidates — unless ``until_dependent`` (the answer also
  depends on the job's estimated end ``until_s``), when it skips nothing.
* ``fits(state, n, waited_s, until_s)`` is True exactly where ``place`` would return nodes; the
  engine asks it where only feasibility matters (EASY's shadow-time bisection). Default:
  ``place(...) is not None``; a policy overrides it when deciding "some placement exists" is
  cheaper than choosing the best one.
* ``earliest_fit(state, n, release_s, times)``, where a policy gives it (not None), is the
  first of ``times`` at which ``fits`` holds on the future state (nodes released by then
  freed), as the engine's bisection would find it.
* ``footprint(nodes)`` is the class a placement is booked under in the machine state.
* With ``reads_counts = False``, ``place`` and ``fits`` read no group counts of a state
  (``group_free``, ``held``): the engine may then hand them future states built without
  those counts (:func:`fattorus.sched.state.future` with ``counts=False``), and the answers
  are the same.
* ``reset(machine)``, ``started(nodes)`` and ``ended(nodes)`` tell a policy that keeps its
  own record of running placements (a prism's extent is more than its nodes) what the
  engine did to the one real machine; default: nothing. Every other state a policy is asked
  about (a future machine, the machine with a reservation held) is a copy.
* ``holding(nodes)``: EASY holds the blocked head's reserved nodes ``R`` (the placement
  ``place`` returned on the future machine) for the backfill candidates that follow, across
  the starts between them, until ``holding(None)``. A policy that keeps its own record of
  placements keeps ``R``'s while it holds (a prism's extent: a long backfill job must keep off
  the head's whole prism, not only ``R``'s nodes); default: nothing.
* ``compiled_run(jobs, queue, usable, kind_nodes, runtime_at_start)``, where a policy gives it
  (not None), is the whole replay compiled: the same :class:`fattorus.sched.engine.Schedule`
  the engine's loop would reach with this policy (``prism``; tests compare every field).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from fattorus.sched import state as st


class Policy(abc.ABC):
    """Base class of every allocation policy; see the module docstring.

    Attributes:
      name: config name (``policy=NAME``), for outputs and messages only.
      families: topology kinds the policy accepts (``topo.kind``); empty: every family.
      needs: what :meth:`feasible` reads from :class:`fattorus.sched.state.Counts`:
        :data:`~fattorus.sched.state.FREE_ONLY` or :data:`~fattorus.sched.state.PER_GROUP`;
        None (default) when the policy has no count test, and the engine finds EASY's
        shadow time by bisection with :meth:`place` on future states instead.
      time_dependent: True when a decision depends on ``waited_s`` (the engine then asks
        again about a blocked queue head even on an unchanged machine).
      until_dependent: True when a decision depends on ``until_s`` (the job's estimated end):
        feasibility is then not monotone in the size alone, and EASY's backfill asks about
        every candidate instead of skipping larger ones of a size class that failed.
      reads_counts: False when :meth:`place` and :meth:`fits` never read a state's group
        counts (why declare it: EASY's shadow-time bisection then builds its future states
        without them, which is most of their cost).
    """

    name: ClassVar[str] = ""
    families: ClassVar[tuple[str, ...]] = ()
    needs: ClassVar[str | None] = None
    time_dependent: bool = False
    until_dependent: bool = False
    reads_counts: ClassVar[bool] = True

    def __init__(self, topo: Any) -> None:
        self.topo = topo

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's ``families`` must be a tuple of kinds: a string (``"torus3d"``) passed
        the ``in`` test by substring (``"torus"`` too; session 47's extension walkthrough)."""
        super().__init_subclass__(**kwargs)
        families = cls.families
        if isinstance(families, (str, bytes)) or families is None or not all(isinstance(k, str) for k in families):
            raise TypeError(f"policy class {cls.__name__}: families must be a tuple of topology kinds, e.g. "
                            f"('torus3d',), got {families!r}")
        cls.families = tuple(families)  # a list or set of kinds, as a tuple

    @classmethod
    def supports(cls, topo: Any) -> bool:
        """Whether this policy can place jobs on ``topo``."""
        return not cls.families or topo.kind in cls.families

    @abc.abstractmethod
    def place(self, state: st.MachineState, n: int, prefer: np.ndarray | None = None,
              waited_s: float = 0.0, until_s: float = np.inf) -> np.ndarray | None:
        """Node ids (allocation order) for an ``n``-node job on ``state``, or None.

        ``prefer``: optional ``(N,)`` bool mask of nodes to use first where the policy has a
        free choice (EASY uses it so that concrete node sets reproduce count-based EASY).
        ``waited_s``: how long the job has waited, seconds (for rules that relax with it).
        ``until_s``: when the job would end by its estimate if it started on ``state`` (s; for
        rules about what runs beside what, e.g. prism's ``internal_ends_first``).
        """
        ...

    def fits(self, state: st.MachineState, n: int, waited_s: float = 0.0, until_s: float = np.inf) -> bool:
        """Whether :meth:`place` would place an ``n``-node job on ``state`` (default: ask it)."""
        return self.place(state, n, waited_s=waited_s, until_s=until_s) is not None

    def earliest_fit(self, state: st.MachineState, n: int, release_s: np.ndarray, times: np.ndarray) -> float | None:
        """EASY's shadow time for an ``n``-node job: the first of ``times`` (s, ascending, the
        running jobs' estimated ends) at which :meth:`fits` holds on ``state`` with every node
        whose ``release_s`` (``(N,)``, s) has passed freed; ``inf`` if at none. None (default):
        the policy knows no quicker way than the engine's bisection with :meth:`fits` on future
        states (:func:`fattorus.sched.queues.first_fit_time`). Asked only of policies that are
        not ``time_dependent``."""
        return None

    def feasible(self, counts: st.Counts, n: int, waited_s: np.ndarray | float = 0.0) -> np.ndarray | None:
        """Whether an ``n``-node job could be placed, per batch entry of ``counts`` (bool
        array, batch axes of ``counts`` and ``waited_s`` broadcast), or None when the policy
        has no count test (default; then ``needs`` is None)."""
        return None

    def size_class(self, n_nodes: np.ndarray | int) -> np.ndarray | int:
        """Class within which feasibility is monotone in the size (default: the topology's)."""
        return self.topo.size_class(n_nodes)

    def footprint(self, nodes: np.ndarray) -> int:
        """Class a placement on ``nodes`` is booked under (default: the topology's footprint class)."""
        return int(self.topo.footprint_class(nodes))

    def reset(self, machine: st.MachineState) -> None:
        """A replay starts on ``machine`` (the engine's real, mutable state). Default: nothing."""

    def started(self, nodes: np.ndarray, until_s: float = np.inf) -> None:
        """A job started on ``nodes`` (returned by :meth:`place` on the real machine), to end by
        its estimate at ``until_s`` (s). Default: nothing."""

    def ended(self, nodes: np.ndarray) -> None:
        """The job on ``nodes`` ended and its nodes are free again. Default: nothing."""

    def holding(self, nodes: np.ndarray | None) -> None:
        """EASY holds ``nodes`` (the blocked head's reserved nodes, from :meth:`place` on the
        future machine) for the backfill candidates that follow, across the starts between
        them; None: the hold ended. Default: nothing."""

    def wake_time(self, submit_s: float) -> float | None:
        """First instant (s) at which a job submitted at ``submit_s`` gets more placements
        than before (a hybrid rule's relaxation), or None: never (default)."""
        return None

    def compiled_run(self, jobs: Any, queue: str, usable: np.ndarray | None, kind_nodes: np.ndarray | None,
                     runtime_at_start: Any, progress: Callable[[int], Any] | None = None) -> Any:
        """The whole replay of ``jobs`` (:class:`fattorus.sched.engine.Jobs`) under the queue
        discipline named ``queue``, compiled: its :class:`fattorus.sched.engine.Schedule`, or
        None where the policy has no compiled replay for these settings (default: none; the
        engine runs its own loop). ``progress(k)``: told of every ``k`` jobs started."""
        return None


def first_fit_among(times: np.ndarray, fits_at: Callable[[float], bool]) -> float:
    """The first of ``times`` (ascending) at which ``fits_at(t)`` holds, ``inf`` if at none, for
    a predicate that stays true once true (feasibility only grows as jobs end): the last time
    first, then a bisection. The probes are the same for every caller, so the machine states a
    policy learns about are too."""
    if len(times) == 0 or not fits_at(times[-1]):
        return np.inf
    a, b = 0, len(times) - 1
    while a < b:
        mid = (a + b) // 2
        if fits_at(times[mid]):
            b = mid
        else:
            a = mid + 1
    return float(times[a])
