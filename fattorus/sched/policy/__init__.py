"""Node-allocation policies (spec `allocation.md`) and their registry by config name.

Every policy implements :class:`fattorus.sched.policy.base.Policy` (``place`` plus declared
feasibility, footprint, wake-up time and supported families, with defaults). The scheduler
engine takes policy objects and knows no names; this registry is what turns a config string
(``policy=ta``) into an object, for the app and :func:`fattorus.sched.replay.replay`.

Layout: generic policies next to this file (``oblivious.py``), family policies under a
sub-package named after the family (``fattree/``, ``torus/``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fattorus.sched.policy.base import Policy
from fattorus.sched.policy.fattree import (
    ORDERS,
    RELAX_MAX_S,
    RELAX_MIN_S,
    TIES,
    TAParams,
    TopologyAware,
    TreeBestFit,
)
from fattorus.sched.policy.oblivious import FirstFit, TopologyOblivious, TopologyObliviousRandom
from fattorus.sched.policy.placement import (Compact, RandomChassis, RandomGroup, RandomRouter, RoundRobinNode,
                                             RoundRobinRouter)
from fattorus.sched.policy.space import Tunable
from fattorus.sched.policy.torus import Feature, Prism, PrismParams


def _no_params(name: str, params: Mapping[str, Any]) -> None:
    if params:
        raise ValueError(f"policy {name!r} takes no parameters, got {sorted(params)}")


def _to(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    _no_params("to", params)
    return TopologyOblivious(topo)


def _to_random(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    _no_params("to_random", params)
    return TopologyObliviousRandom(topo, seed)


def _first_fit(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    unknown = sorted(set(params) - {"ordering"})
    if unknown:
        raise ValueError(f"policy 'first_fit' takes only 'ordering', got {unknown}")
    return FirstFit(topo, str(params.get("ordering", "id")))


def _ta(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    return TopologyAware(topo, TAParams.from_mapping(params))


def _prism(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    return Prism(topo, PrismParams.from_mapping(params))


def _feature(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    unknown = sorted(set(params) - {"features", "min_nodes", "ordering"})
    if unknown:
        raise ValueError(f"policy 'feature' takes features, min_nodes and ordering, got {unknown}")
    min_nodes = params.get("min_nodes", 0)
    if isinstance(min_nodes, bool) or not isinstance(min_nodes, int) or min_nodes < 0:
        raise ValueError(f"policy 'feature': min_nodes must be an integer >= 0, got {min_nodes!r}")
    return Feature(topo, params.get("features"), min_nodes, str(params.get("ordering", "id")))


def _seeded(cls: type[Policy]) -> Callable[[Any, Mapping[str, Any], int], Policy]:
    def build(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
        _no_params(cls.name, params)
        return cls(topo, seed)

    return build


def _tree_bestfit(topo: Any, params: Mapping[str, Any], seed: int) -> Policy:
    _no_params("tree_bestfit", params)
    return TreeBestFit(topo)


#: Config name -> (policy class, constructor ``(topo, params, seed) -> Policy``).
REGISTRY: dict[str, tuple[type[Policy], Callable[[Any, Mapping[str, Any], int], Policy]]] = {
    "to": (TopologyOblivious, _to),
    "to_random": (TopologyObliviousRandom, _to_random),
    "first_fit": (FirstFit, _first_fit),
    "ta": (TopologyAware, _ta),
    "tree_bestfit": (TreeBestFit, _tree_bestfit),
    "prism": (Prism, _prism),
    "feature": (Feature, _feature),
    **{cls.name: (cls, _seeded(cls)) for cls in (RandomRouter, RandomGroup, RandomChassis, RoundRobinNode, RoundRobinRouter,
                                                 Compact)},
}
NAMES = tuple(REGISTRY)

#: Config name -> parameters class declaring the policy's tunable space
#: (:class:`fattorus.sched.policy.space.Tunable`); policies without heuristics to tune are absent.
TUNABLE: dict[str, type[Tunable]] = {"ta": TAParams, "prism": PrismParams}


def supporting(topo: Any) -> tuple[str, ...]:
    """Names of the registered policies that accept ``topo``."""
    return tuple(name for name, (cls, _) in REGISTRY.items() if cls.supports(topo))


def tunable(name: str) -> type[Tunable]:
    """The parameters class of policy ``name`` with its declared search space, defaults and
    ``describe``; one-line ``ValueError`` when the policy has nothing to tune."""
    if name not in TUNABLE:
        raise ValueError(f"policy {name!r} declares no tunable parameters; tunable: {sorted(TUNABLE)}")
    return TUNABLE[name]


def make(name: str, topo: Any, params: Mapping[str, Any] | None = None, seed: int = 0) -> Policy:
    """Build policy ``name`` for ``topo``; ``params`` are the policy's named heuristics,
    ``seed`` seeds its random draws. One-line ``ValueError`` on a bad name, family or parameter."""
    if name not in REGISTRY:
        raise ValueError(f"unknown policy {name!r}; choices: {list(NAMES)}")
    cls, build = REGISTRY[name]
    if not cls.supports(topo):
        raise ValueError(f"policy {name!r} does not support {topo.kind} topology {topo.name!r}; "
                         f"choices there: {list(supporting(topo))}")
    return build(topo, dict(params or {}), seed)


__all__ = ["NAMES", "ORDERS", "REGISTRY", "RELAX_MAX_S", "RELAX_MIN_S", "TIES", "TUNABLE", "Feature", "FirstFit", "Policy",
           "Prism", "PrismParams", "TAParams", "TopologyAware", "TopologyOblivious", "TopologyObliviousRandom",
           "TreeBestFit", "Tunable", "make", "supporting", "tunable"]
