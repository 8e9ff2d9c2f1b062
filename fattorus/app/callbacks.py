"""Hydra callbacks the apps share: checks that must come before Hydra makes a directory.

Hydra makes a run's (or a sweep's) directory and writes its config copy there before the
app's own code runs, so a directory the app would refuse must be refused here, from the
composed config (``hydra.callbacks`` in ``conf/config.yaml`` and ``conf/qos_app.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

from fattorus import paths
from fattorus.app.cli import Refusal, note_run_dir, note_run_parent


def selected_dir(config: DictConfig, key: str) -> Path | None:
    """The directory setting ``key`` of the composed config, or None where only the job can
    resolve it (an interpolation of job-time values: Hydra reports what is wrong with it)."""
    try:
        return Path(str(OmegaConf.select(config, key)))
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def refuse_outside_results(config: DictConfig, key: str) -> None:
    """Refuse (:class:`~fattorus.app.cli.Refusal`: one line, exit 2) a directory setting
    ``key`` (``hydra.run.dir``, ``hydra.sweep.dir``) that does not lie under a ``results/``
    directory: nothing is written outside the results (README), as for every command's
    ``--out``, and a run never writes into a folder of the user's own (its tables would
    replace files of the same names)."""
    where = selected_dir(config, key)
    if where is not None and not paths.under_results(where):
        raise Refusal(f"{key}={where}: must lie under a results/ directory (nothing is written outside the results; "
                      f"e.g. {key}={where.parent / 'results' / where.name})")
    # A file where a folder must be made: said as such, not as the OS's "File exists" later.
    blocking = None if where is None else next((p for p in (where, *where.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise Refusal(f"{key}={where}: {blocking} is a file, not a folder; name a folder there (or leave {key} out "
                      "for a new one)")


def _raw(config: DictConfig, key: str) -> str | None:
    """The setting ``key`` as written (interpolations unresolved), or None where it is unset."""
    parent, _, name = key.rpartition(".")
    node = OmegaConf.select(config, parent, default=None)
    if not isinstance(node, DictConfig) or name not in node:
        return None
    value = node._get_node(name)._value()  # noqa: SLF001 - OmegaConf's way to read a value unresolved
    return None if value is None else str(value)


def refuse_leaving_the_run(config: DictConfig, multirun: bool) -> None:
    """Refuse (one line, exit 2) the Hydra settings that name where a run writes besides its
    directory: ``hydra.output_subdir`` (the config copy) and, in a multirun,
    ``hydra.sweep.subdir`` (a trial's folder) must stay inside the run's (the sweep's)
    directory — no absolute path, no ``..``; a log file of ``hydra.job_logging`` must lie
    under a results/ directory (by default the run's own ``sweep.log``)."""
    keys = ["hydra.output_subdir"] + (["hydra.sweep.subdir"] if multirun else [])
    for key in keys:
        raw = _raw(config, key)
        if raw is None:
            continue
        # As written and, where it resolves now, as resolved (${oc.env:HOME} is absolute).
        resolved = selected_dir(config, key) if "${" in raw else None
        seen = [raw] + ([str(resolved)] if resolved is not None else [])
        if any(Path(v).is_absolute() or ".." in Path(v).parts for v in seen):
            raise Refusal(f"{key}={raw}: must be a folder inside the run's directory (no absolute path, no '..'; "
                          "nothing is written outside the results)")
    handlers = OmegaConf.select(config, "hydra.job_logging.handlers", default=None)
    for name in handlers.keys() if isinstance(handlers, DictConfig) else ():
        key = f"hydra.job_logging.handlers.{name}.filename"
        raw = _raw(config, key)
        if raw is None:
            continue
        if ".." in Path(raw).parts:
            raise Refusal(f"{key}={raw}: must lie in the run's directory (no '..'; nothing is written outside the results)")
        if raw.startswith(("${hydra.runtime.output_dir}/", "${hydra:runtime.output_dir}/")):
            continue  # inside the run's own directory (Hydra's default), checked above
        where = selected_dir(config, key)
        if where is not None and not paths.under_results(where):
            raise Refusal(f"{key}={raw}: must lie under a results/ directory (nothing is written outside the results)")


def group_source(hydra_cfg: Any, group: str, name: str | None = None) -> Path | None:
    """The YAML file of Hydra's choice for config ``group`` (``hydra_cfg``: the ``hydra`` node),
    looked up in its config sources (conf/ and ``hydra.searchpath``), or None where it does not
    say; with ``name``, only a file whose ``name:`` it is."""
    try:
        option = hydra_cfg.runtime.choices.get(group)
    except Exception:  # noqa: BLE001 - a config without these nodes: nothing to name
        return None
    for folder in _file_sources(hydra_cfg) if option else ():
        path = folder / group / f"{option}.yaml"
        if path.is_file():
            if name is not None:
                try:
                    loaded = OmegaConf.load(path)
                    if not isinstance(loaded, DictConfig) or loaded.get("name") != name:
                        return None
                except Exception:  # noqa: BLE001 - unreadable now: not the file the run read
                    return None
            return path
    return None


def refuse_unshaped_groups(config: DictConfig, groups: tuple[str, ...] = ("topo", "speedup")) -> None:
    """Refuse (one line, exit 2) a chosen config of ``groups`` that is no mapping (a YAML list
    or a single value): the run directory's name reads its ``name`` and failed in OmegaConf's
    words ("Index 'name' (str) is not an int"; session 47's exploratory run)."""
    for group in groups:
        node = OmegaConf.select(config, group, default=None)
        if node is not None and not isinstance(node, DictConfig):
            where = group_source(config.hydra, group) or f"the {group} config"
            raise Refusal(f"{where}: must be a mapping of settings (name: ..., kind: ...), not a "
                          f"{'list' if isinstance(node, ListConfig) else 'single value'}")


def _file_sources(hydra_cfg: Any) -> list[Path]:
    """The config folders Hydra reads, in its order (``hydra_cfg``: the ``hydra`` node): the
    shipped ``conf/`` first, then those of ``hydra.searchpath`` and ``--config-dir``."""
    sources = OmegaConf.select(hydra_cfg, "runtime.config_sources", default=None) or []
    return [Path(str(src.path)) for src in sources if src.get("schema") == "file"]


def _chosen_options(config: DictConfig) -> set[tuple[str, str]]:
    """(config group, option) pairs the run (every trial of a multirun) chooses: Hydra's
    choices and the values of the task's group overrides (a multirun's comma lists split)."""
    chosen = set()
    choices = OmegaConf.select(config, "hydra.runtime.choices", default=None)
    if isinstance(choices, DictConfig):
        chosen |= {(str(k), str(v)) for k, v in choices.items() if v is not None and "/" not in str(k)}
    for override in OmegaConf.select(config, "hydra.overrides.task", default=None) or []:
        key, sep, value = str(override).partition("=")
        if sep and not key.startswith("~"):
            chosen |= {(key.lstrip("+"), v.strip()) for v in value.split(",") if v.strip()}
    return chosen


def refuse_shadowed_configs(config: DictConfig) -> None:
    """Refuse (one line, exit 2) a config on ``hydra.searchpath`` (or ``--config-dir``) that a
    shipped one of the same group and name hides: Hydra reads ``conf/`` first, so ``+topo=cab`` with a user's own
    ``topo/cab.yaml`` on the search path replayed the shipped Cab without a word (session
    47's exploratory run). The user renames the file (a machine's ``name:`` with it)."""
    shipped = paths.conf_dir()
    folders = [f for f in _file_sources(config.hydra) if f.resolve() != shipped.resolve()]
    if not folders:
        return
    for group, option in sorted(_chosen_options(config)):
        ours = shipped / group / f"{option}.yaml"
        if not ours.is_file():
            continue
        for folder in folders:
            mine = folder / group / f"{option}.yaml"
            # (a byte-for-byte copy, e.g. of the whole conf/, hides nothing)
            if mine.is_file() and mine.resolve() != ours.resolve() and mine.read_bytes() != ours.read_bytes():
                raise Refusal(f"{mine} is hidden by the shipped {group} '{option}' "
                              f"({ours}; Hydra reads the shipped configs first): give your "
                              f"file another name (and its name: field) and choose that")


class ResultsOnly(Callback):
    """A run's or a sweep's directory under a ``results/`` directory, and Hydra's other output
    paths inside it, refused before Hydra makes them otherwise (:func:`refuse_outside_results`,
    :func:`refuse_leaving_the_run`)."""

    def on_run_start(self, config: DictConfig, **_: Any) -> None:
        """A single run: ``hydra.run.dir``."""
        refuse_outside_results(config, "hydra.run.dir")
        refuse_leaving_the_run(config, multirun=False)
        refuse_shadowed_configs(config)
        refuse_unshaped_groups(config)
        where = selected_dir(config, "hydra.run.dir")
        if where is not None:
            note_run_dir(where)
        else:  # a name only the job resolves (the default): the folders above it, as written
            fixed = (_raw(config, "hydra.run.dir") or "").split("${", 1)[0]
            if fixed:
                note_run_parent(Path(fixed) if fixed.endswith("/") else Path(fixed).parent)

    def on_multirun_start(self, config: DictConfig, **_: Any) -> None:
        """A multirun: ``hydra.sweep.dir`` (its trials' folders are single path components in it)."""
        refuse_outside_results(config, "hydra.sweep.dir")
        refuse_leaving_the_run(config, multirun=True)
        refuse_shadowed_configs(config)
