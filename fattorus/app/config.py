"""Structured configuration of the study app (Hydra ConfigStore schema).

Typed dataclasses give validation for free: a misspelt key or a value of the wrong type is
rejected by Hydra/OmegaConf before anything runs, and :mod:`fattorus.sweep` turns that into
a one-line error. Choices that only the code knows (policy heuristics, speedup bins) are
validated by the module that owns them, with errors that name the field.
"""

from __future__ import annotations

import hashlib
import os
import re

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from fattorus import paths

DEFAULT_TOPO = "cab"
DEFAULT_SPEEDUP = "none"


@dataclass
class SpeedupConf:
    """A speedup scenario (``conf/speedup/*.yaml``); see :mod:`fattorus.speedup`."""

    name: str = MISSING
    cap: int = 512
    classes: list[Any] = field(default_factory=list)
    # kind: model — run times from the flow-level bandwidth model at job start (issue 14);
    # then comm_fraction and patterns apply, classes must be empty.
    kind: str = "bins"
    # A number, a range [lo, hi] drawn per job, or {by_pattern: ...} / {by_nodes: ...}
    # (fattorus.analysis.comm_fraction).
    comm_fraction: Any = 0.3
    patterns: str = "stencil4d=1,unstructured_mesh=1,random_pairs=1,subcomm_a2a=1"
    # kind: model — application name -> its pattern (a name, or {pattern: NAME, keyword: value})
    # for the jobs of a workload with an `app` column (conf/speedup/model_apps.yaml); None: the mix.
    app_patterns: Optional[dict[str, Any]] = None


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
    # A number, "fit" (machine nodes / the log's machine nodes) or "machine" (the topology's
    # default_scale: the load the papers ran that machine at; docs/workloads.md).
    scale: Any = "machine"
    log_nodes: Optional[int] = None  # the log's machine size for scale=fit (default: its header)
    node_kind: Optional[str] = None  # node type every job runs on (default: the machine's first, XE); by_job: its own
    window_start_days: float = 0.0
    window_days: Optional[float] = None
    max_runtime_s: Optional[float] = None  # ceiling on run/requested times; null: 366 days
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

    # A machine of any family (conf/topo/*.yaml, dispatched on its `kind`); the family's
    # from_config checks the keys and values, one line per mistake.
    topo: Optional[Any] = None
    speedup: Optional[SpeedupConf] = None
    policy: PolicyConf = field(default_factory=PolicyConf)
    sched: SchedConf = field(default_factory=SchedConf)
    workload: WorkloadConf = field(default_factory=WorkloadConf)
    logger: LoggerConf = field(default_factory=LoggerConf)
    seed: int = 0
    study: str = "adhoc"
    progress: bool = True
    bins: list[int] = field(default_factory=lambda: [18, 64, 256, 1024])
    trials: int = 1  # >1: speedup draws seed..seed+trials-1 through the batched engine (app/trials.py)


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._,=+-]*$")


def safe_name(value: Any, what: str) -> str:
    """``value`` if it can name a directory under the results root, else a one-line error.

    Letters, digits and ``. _ , = + -``, not starting with a dot or dash: no separator, no
    ``..``, no absolute path, so a study or workload name can never put files elsewhere.
    """
    text = str(value)
    if not _NAME_RE.match(text) or ".." in text:
        raise ValueError(f"{what}={text!r} cannot name a results directory: use letters, digits and . _ , = + - "
                         "(no '/', no '..')")
    return text


#: Longest directory name a run gets, in bytes (file systems allow 255): a longer one keeps
#: its first bytes and ends in a hash of the whole (stable, so a multirun still resumes).
MAX_COMPONENT_BYTES = 200


def path_component(value: Any) -> str:
    """``value`` made into ONE path component: separators become ``_``, a leading dot is
    escaped, so an override value like ``workload.path=../../x`` stays inside its sweep (an
    escaped value ends in ``~`` and 8 hex digits of its hash: one component per value), and a
    name past :data:`MAX_COMPONENT_BYTES` (``bins=[1,2,...,200]``) is cut and ends in ``~`` and
    a hash of the whole name."""
    text = re.sub(r"[/\\\x00]", "_", str(value))
    text = "_" + text if text.startswith(".") or not text else text
    if text != str(value):
        # Escaped: ``a/b`` and ``a_b`` would share a folder (one trial's results overwriting
        # the other's, or a later run skipping a log it never replayed); a hash of the value as
        # given keeps them apart.
        text += "~" + hashlib.sha256(str(value).encode()).hexdigest()[:8]
    raw = text.encode()
    if len(raw) > MAX_COMPONENT_BYTES:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        text = raw[: MAX_COMPONENT_BYTES - len(digest) - 1].decode(errors="ignore") + "~" + digest
    return text


def resolved_scale(scale: Any, default: Any, topo: Any = "") -> str:
    """The run directory's ``x<scale>``: ``machine`` replaced by the machine's default load
    (``default``: ``conf/topo``'s ``default_scale``, a number or ``fit``; ``topo`` None: no
    ``+topo`` given, so the default machine's), anything else as given."""
    if str(scale) != "machine":
        return str(scale)
    if topo is None:
        default = OmegaConf.load(paths.config_file("topo", DEFAULT_TOPO)).get("default_scale", 1)
    return str(default)


def policy_label(name: Any, choice: Any) -> str:
    """The run directory's policy: the config chosen (``policy=ta_tuned_atlas2x_cab``) where it
    is a named variant of the policy it sets — its name extends the policy's and names no
    policy of its own (``to_random`` is a policy, not a variant of ``to``) — so a tuned run
    reads apart from the defaults; else the policy's name (``policy.name=to`` over another
    policy's config names ``to``)."""
    from fattorus.sched import policy  # the registry; the app imports it anyway

    name, choice = str(name), str(choice)
    variant = choice != name and choice.startswith(name + "_") and choice not in policy.NAMES
    return choice if variant else name


def config_edits(shipped: Any, used: Any, prefix: str = "") -> dict[str, Any]:
    """What ``used`` (a resolved config as plain containers) changes of ``shipped``: dotted
    paths (list items by index) of the values that differ, each with its value in ``used``;
    where the two differ in shape (other keys, another length) the whole value at that path
    (``classes=[]``). ``{}`` when they agree (``1`` and ``1.0`` agree)."""
    if isinstance(shipped, dict) and isinstance(used, dict) and shipped.keys() == used.keys():
        pairs = [(str(k), shipped[k], used[k]) for k in shipped]
    elif isinstance(shipped, list) and isinstance(used, list) and len(shipped) == len(used):
        pairs = [(str(i), a, b) for i, (a, b) in enumerate(zip(shipped, used))]
    else:
        return {} if shipped == used else {prefix or ".": used}
    out: dict[str, Any] = {}
    for key, a, b in pairs:
        out.update(config_edits(a, b, f"{prefix}.{key}" if prefix else key))
    return out


def speedup_edits(name: str, used: dict[str, Any]) -> dict[str, Any]:
    """The settings a run changed of its speedup scenario ``conf/speedup/NAME.yaml``
    (:func:`config_edits` against the file with the schema's defaults): a run of ``x20`` with
    ``speedup.cap=256`` is another scenario than ``x20`` and its ``summary.json`` says so
    (``config.speedup_edits``), so that reports do not pool the two as seeds. ``{}`` for a
    scenario without a shipped file (a user's own, through ``hydra.searchpath``)."""
    shipped = shipped_speedup(name)
    return {} if shipped is None else config_edits(shipped, used)


def shipped_speedup(name: str) -> dict[str, Any] | None:
    """The shipped scenario ``conf/speedup/NAME.yaml`` with the schema's defaults (plain
    containers), or None for a name without a shipped file."""
    if name not in paths.config_names("speedup"):
        return None
    return OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(SpeedupConf),
                                                  OmegaConf.load(paths.config_file("speedup", name))), resolve=True)


def config_groups(*left_out: str) -> str:
    """The ``== Configuration groups ==`` lines of ``--help`` (``group: option, ...``, sorted as
    Hydra's own ``$APP_CONFIG_GROUPS``) for every group of the search path but Hydra's and
    ``left_out``: the resolver ``fattorus_groups`` of the replay's help template, which leaves
    out the QoS app's ``qos`` group. Read from Hydra's config loader at ``--help`` time, so a
    policy exported into conf/policy/ or a user's search path is listed like Hydra's list."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.object_type import ObjectType

    loader = GlobalHydra.instance().config_loader()

    def groups(parent: str) -> list[str]:
        found = []
        for name in loader.list_groups(parent):
            full = f"{parent}/{name}" if parent else name
            if loader.get_group_options(full, ObjectType.CONFIG):
                found.append(full)
            if loader.get_group_options(full, ObjectType.GROUP):
                found.extend(groups(full))
        return found

    shown = [g for g in groups("") if g.split("/")[0] != "hydra" and g not in left_out]
    return "\n".join(f"{g}: {', '.join(sorted(loader.get_group_options(g)))}" for g in sorted(shown))


def register() -> None:
    """Register the schema as ``fattorus_schema`` (used first in ``conf/config.yaml``) and the
    resolvers the results paths use (``fattorus_name``, ``fattorus_component``, ``fattorus_pid``,
    ``fattorus_scale``, ``fattorus_policy``) and ``--help``'s group list (``fattorus_groups``)."""
    ConfigStore.instance().store(name="fattorus_schema", node=Config)
    OmegaConf.register_new_resolver("fattorus_name", safe_name, replace=True)
    OmegaConf.register_new_resolver("fattorus_component", path_component, replace=True)
    # Two single runs started in the same second get different directories: the process id
    # is unique among running processes.
    OmegaConf.register_new_resolver("fattorus_pid", os.getpid, replace=True)
    OmegaConf.register_new_resolver("fattorus_scale", resolved_scale, replace=True)
    OmegaConf.register_new_resolver("fattorus_policy", policy_label, replace=True)
    OmegaConf.register_new_resolver("fattorus_groups", config_groups, replace=True)
