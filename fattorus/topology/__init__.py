"""Interconnect topologies behind one interface (:class:`Topology`), built from config by ``kind``.

Families register themselves in :data:`FAMILIES` (``kind`` -> class); :func:`from_config`
dispatches on the config's ``kind`` (default ``fattree``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fattorus import paths, yamlfile
from fattorus.topology.base import Level, Topology, TopologyError

#: ``kind`` -> Topology subclass. A family module adds itself with :func:`register`.
FAMILIES: dict[str, type[Topology]] = {}


def register(cls: type[Topology]) -> type[Topology]:
    """Class decorator: make ``cls`` buildable from configs with ``kind: cls.kind``. A kind
    another class holds is refused (it replaced that family without a word; session 47)."""
    if not isinstance(cls.kind, str) or not cls.kind:
        raise TypeError(f"topology class {cls.__qualname__}: set its kind (kind: ClassVar[str] = 'myfamily'), the "
                        "name configs give it")
    held = FAMILIES.get(cls.kind)
    if held is not None and (held.__module__, held.__qualname__) != (cls.__module__, cls.__qualname__):
        raise TypeError(f"topology kind {cls.kind!r} is {held.__module__}.{held.__qualname__}'s; give "
                        f"{cls.__qualname__} another kind")
    FAMILIES[cls.kind] = cls
    return cls


#: A machine's ``name``: safe as a file or folder name component.
_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")


def file_safe_name(text: str) -> str:
    """``text`` made a valid machine ``name`` (:data:`_NAME`): other characters become ``_``,
    leading dots go (``'my system'`` -> ``my_system``; ``''`` -> ``machine``)."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text).lstrip(".") or "machine"


def from_config(cfg: Mapping[str, Any]) -> Topology:
    """Build the topology a config mapping describes (dispatch on its ``kind``)."""
    _load_families()
    data = dict(cfg)
    # The machine's default load is the app's concern (workload.scale=machine), not the network's.
    data.pop("default_scale", None)
    name = data.get("name")
    if "name" in data and not isinstance(name, str):
        # `name: 42` or `name: null` named run folders "42" or "None" (session 47's exploratory run).
        quote = f"; quote a number: name: '{name}'" if isinstance(name, (int, float)) else ""
        raise TopologyError(f"topology name {name!r}: must be a text (letters, digits, '.', '_', '+' and '-'{quote})")
    if isinstance(name, str) and not _NAME.fullmatch(name):
        # The name names result folders and files (run directories, study parts, figures): a
        # separator or '..' would put them elsewhere.
        raise TopologyError(f"topology name {name!r}: letters, digits, '.', '_', '+' and '-' only, not starting with '.'")
    kind = data.get("kind", "fattree")
    if kind not in FAMILIES:
        raise TopologyError(
            f"topology {data.get('name', '?')!r}: unknown kind {kind!r}; choices: {sorted(FAMILIES)}"
        )
    return FAMILIES[kind].from_config(data)


def conf_dir() -> Path:
    """The repository's ``conf/`` directory (:func:`fattorus.paths.conf_dir`)."""
    return paths.conf_dir()


def load(name_or_path: str) -> Topology:
    """Load ``conf/topo/NAME.yaml`` (or a YAML file path) as the topology of its ``kind``."""
    import yaml
    from omegaconf import OmegaConf

    path = Path(name_or_path)
    if path.suffix and not path.is_file():  # a file was meant: its name, not conf/topo's list
        what = "a directory, not a YAML file" if path.is_dir() else "no such file"
        raise TopologyError(f"{name_or_path}: {what} (a machine is a conf/topo name or a YAML file)")
    if not path.suffix:
        path = paths.config_file("topo", name_or_path)
    if not path.exists():
        choices = paths.config_names("topo")
        raise TopologyError(f"unknown topology {name_or_path!r}; choices: {choices}")
    try:
        cfg = OmegaConf.to_container(OmegaConf.load(path))
    except OSError as err:
        if err.errno is not None:  # unreadable
            raise TopologyError(f"{path}: {err.strerror}") from None
        # OmegaConf's word for a file holding a single value ("Invalid loaded object type: int")
        raise TopologyError(f"{path}: must be a mapping of settings (name: ..., kind: ...), not a single value") from None
    except yaml.YAMLError as err:  # a file that does not parse: its file, line and column
        raise TopologyError(yamlfile.syntax_error(err)) from None
    if not isinstance(cfg, dict):  # (an empty file loads as an empty mapping: its missing keys are named)
        raise TopologyError(f"{path}: must be a mapping of settings (name: ..., kind: ...), not a list")
    try:
        return from_config(cfg)
    except TopologyError as err:
        raise TopologyError(yamlfile.located(path, str(err), cfg)) from None


def _load_families() -> None:
    # Imported lazily so that `topology.base` stays free of family code and import cycles.
    import importlib

    for module in ("fattree", "torus3d", "dragonfly"):
        try:
            importlib.import_module(f"fattorus.topology.{module}")
        except ModuleNotFoundError as err:  # a family not written yet
            if err.name != f"fattorus.topology.{module}":
                raise


__all__ = ["FAMILIES", "Level", "Topology", "TopologyError", "conf_dir", "file_safe_name", "from_config", "load",
           "register"]
