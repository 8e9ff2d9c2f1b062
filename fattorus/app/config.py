"""Structured configuration of the study app (Hydra ConfigStore schema).

Typed dataclasses give validation for free: a misspelt key or a value of the wrong type is
rejected by Hydra/OmegaConf before anything runs, and :mod:`fattorus.sweep` turns that into
a one-line error. Choices that only the code knows (policy heuristics, speedup bins) are
validated by the module that owns them, with errors that name the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

DEFAULT_TOPO = "cab"
DEFAULT_SPEEDUP = "none"


@dataclass
class TopoConf:
    """A fat-tree (``conf/topo/*.yaml``); see :class:`fattorus.fattree.FatTree`."""

    kind: str = "fattree"
    name: str = MISSING
    radix: int = MISSING
    nodes_per_leaf: int = MISSING
    leaves_per_pod: int = MISSING
    pods: int = MISSING
    up_ports: Optional[int] = None
    core_switches: Optional[int] = None


@dataclass
class SpeedupConf:
    """A speedup scenario (``conf/speedup/*.yaml``); see :mod:`fattorus.speedup`."""

    name: str = MISSING
    cap: int = 512
    classes: list[Any] = field(default_factory=list)


@dataclass
class PolicyConf:
    """An allocation policy and its named heuristics (``conf/policy/*.yaml``)."""

    name: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class SchedConf:
    """Queue policy: ``easy`` or ``fcfs``."""

    name: str = "easy"


@dataclass
class WorkloadConf:
    """A job log and its transforms (``conf/workload/*.yaml``); see :mod:`fattorus.workload`."""

    name: str = MISSING
    path: Optional[str] = None
    format: str = "auto"
    cores_per_node: Optional[int] = None
    scale: float = 1.0
    window_start_days: float = 0.0
    window_days: Optional[float] = None
    synthetic: Optional[dict[str, Any]] = None


@dataclass
class LoggerConf:
    """Experiment tracking: ``none`` or ``wandb``."""

    name: str = "none"
    project: str = "fattorus"
    entity: Optional[str] = None
    mode: str = "offline"
    group: Optional[str] = None
    tags: list[str] = field(default_factory=list)


@dataclass
class Config:
    """The whole run configuration."""

    topo: Optional[TopoConf] = None
    speedup: Optional[SpeedupConf] = None
    policy: PolicyConf = field(default_factory=PolicyConf)
    sched: SchedConf = field(default_factory=SchedConf)
    workload: WorkloadConf = field(default_factory=WorkloadConf)
    logger: LoggerConf = field(default_factory=LoggerConf)
    seed: int = 0
    study: str = "adhoc"
    progress: bool = True
    bins: list[int] = field(default_factory=lambda: [18, 64, 256, 1024])


def register() -> None:
    """Register the schema as ``fattorus_schema`` (used first in ``conf/config.yaml``)."""
    ConfigStore.instance().store(name="fattorus_schema", node=Config)
