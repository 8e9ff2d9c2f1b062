"""Node-allocation policies (spec `allocation.md`), selected by name.

A policy answers one question: which exact nodes should an ``n``-node job get on the
current machine state, or none if no valid placement exists now. Every policy is an object
with ``place(state, n, prefer=None) -> np.ndarray | None`` (node ids in allocation order);
``prefer`` is an optional bool mask of nodes to use first where the policy has a free choice
(the EASY scheduler uses it so that concrete node sets reproduce count-based EASY).

Registry: :func:`make` maps a config name (``to``, ``to_random``, ``ta``, ``tree_bestfit``)
to a policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from fattorus.topology.fattree import FatTree
from fattorus.sched.policy.ta import TAParams, TopologyAware
from fattorus.sched.policy.to import TopologyOblivious, TopologyObliviousRandom
from fattorus.sched.policy.tree_bestfit import TreeBestFit


class Policy(Protocol):
    """The allocation-policy interface (no fat-tree assumption in the signature)."""

    name: str

    def place(self, state: Any, n: int, prefer: np.ndarray | None = None, waited_s: float = 0.0) -> np.ndarray | None:
        """Node ids for an ``n``-node job on ``state``, or None when none can be placed now.

        ``waited_s`` is how long the job has waited (seconds), for rules that relax with it.
        """
        ...


NAMES = ("to", "to_random", "ta", "tree_bestfit")


def make(name: str, ft: FatTree, params: Mapping[str, Any] | None = None, seed: int = 0) -> Policy:
    """Build policy ``name`` for topology ``ft``; ``params`` are the policy's named heuristics."""
    params = dict(params or {})
    if name == "to":
        _no_params(name, params)
        return TopologyOblivious()
    if name == "to_random":
        _no_params(name, params)
        return TopologyObliviousRandom(seed)
    if name == "ta":
        return TopologyAware(ft, TAParams.from_mapping(params))
    if name == "tree_bestfit":
        _no_params(name, params)
        return TreeBestFit(ft)
    raise ValueError(f"unknown policy {name!r}; choices: {list(NAMES)}")


def _no_params(name: str, params: Mapping[str, Any]) -> None:
    if params:
        raise ValueError(f"policy {name!r} takes no parameters, got {sorted(params)}")


__all__ = ["NAMES", "Policy", "TAParams", "TopologyAware", "TopologyOblivious",
           "TopologyObliviousRandom", "TreeBestFit", "make"]
