"""What trials replay: the machine, the workload and its training and test windows.

Windows are ``[start, end)`` in days from the first submission of the scaled job table, cut
exactly as the study app cuts them (``workload.scale``, ``workload.window_start_days``,
``workload.window_days``), so a tuned point replays the same jobs in both.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fattorus import paths
from fattorus.app.tune.errors import TuneError
from fattorus.app.tune.space import SEARCH_SPACE_VERSION

if TYPE_CHECKING:  # heavy imports stay lazy so that --help and option errors are instant
    import polars as pl

    from fattorus.topology import Topology

DAY_S = 86400.0

Window = tuple[float, float]  # [start, end) in days from the first submission


def parse_windows(text: str, option: str) -> tuple[Window, ...]:
    """``"0:14,14:28"`` -> ``((0.0, 14.0), (14.0, 28.0))``: days from the first submission.

    Each window is ``START:END`` with ``0 <= START < END`` (numbers, days). ``none`` (or an
    empty string) is no window.
    """
    text = text.strip()
    if text.lower() in ("", "none"):
        return ()
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*:\s*([0-9]*\.?[0-9]+)\s*", part)
        if not m:
            raise TuneError(f"{option} {text!r}: each window is START:END in days (e.g. 0:14,14:28), got {part!r}")
        a, b = float(m.group(1)), float(m.group(2))
        if not b > a:
            raise TuneError(f"{option} {text!r}: window {part.strip()!r} must end after it starts")
        if (a, b) in out:  # it would count twice in the objective's mean: a typo, not a weight
            raise TuneError(f"{option} {text!r}: window {part.strip()!r} is given twice")
        for w in out:  # shared jobs would count twice in the objective's mean (or the comparison's)
            if _overlap(w, (a, b)):
                raise TuneError(f"{option} {text!r}: windows {window_label(w)} and {window_label((a, b))} overlap "
                                "(windows are [START, END) days; touching ends such as 0:14,14:28 are fine)")
        out.append((a, b))
    return tuple(out)


def _overlap(w: Window, v: Window) -> bool:
    """Whether ``[start, end)`` windows share any time (touching ends do not)."""
    return w[0] < v[1] and v[0] < w[1]


def check_held_out(train: Sequence[Window], test: Sequence[Window]) -> None:
    """Refuse a ``--test`` window that overlaps a ``--train`` window: the comparison on it
    would not be held out (its jobs were trained on)."""
    for t in test:
        for w in train:
            if _overlap(w, t):
                raise TuneError(f"--test window {window_label(t)} overlaps --train window {window_label(w)}: "
                                "test windows must be held out (windows are [START, END) days; touching ends are fine)")


def window_label(w: Window) -> str:
    """``(0.0, 14.0)`` -> ``"0:14"``."""
    return ":".join(f"{x:g}" for x in w)


def windows_label(ws: Sequence[Window]) -> str:
    """Windows as they are written on the command line."""
    return ",".join(window_label(w) for w in ws) or "none"


@dataclasses.dataclass(frozen=True)
class SweepWorkload:
    """How the study app (``python -m fattorus.sweep``) replays ``--workload``: its overrides
    (``(key, value)`` pairs, values as Python objects, without the scale), and ``note``: what
    must be done first for them to work (``None``: nothing)."""

    overrides: tuple[tuple[str, Any], ...]
    note: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Setup:
    """What trials replay: the machine and the job tables of each window.

    Attributes:
      topo: the machine.
      workload: the workload's name; ``sha256`` the log file's digest.
      scale: node-count multiplier applied before windowing.
      train, test: windows, days from the first submission of the scaled table.
      train_tables, test_tables: the jobs submitted in each window (with ``estimate_s``).
      policy: the tuned policy (``--policy``); speedup: ``none`` or ``model`` (``--speedup``);
      node_kind: the workload config's node-kind rule (``None``: the replay's default).
      cores_per_node: the workload config's ``cores_per_node`` after ``--cores-per-node``
        (``None``: the log header's); max_runtime_s: its run-time ceiling (``None``: the
        loader's default). Both change the job table of a log file, so both are in the
        fingerprint.
      config_defaults: those two as the workload config gives them without
        ``--cores-per-node``: what a study recorded before they were in the fingerprint is
        taken to have used (``docs/decisions.md``).
      sweep: how the study app replays this workload (:func:`sweep_workload`, taken when the
        workload loads: the export's run command does not read the files again after the
        trials); ``None``: not known (a setup made by hand).
    """

    topo: Topology
    workload: str
    sha256: str
    scale: float
    train: tuple[Window, ...]
    test: tuple[Window, ...]
    train_tables: tuple[pl.DataFrame, ...]
    test_tables: tuple[pl.DataFrame, ...]
    policy: str = "ta"
    speedup: str = "none"
    node_kind: str | None = None
    cores_per_node: int | None = None
    max_runtime_s: float | None = None
    config_defaults: dict[str, Any] = dataclasses.field(default_factory=dict)
    sweep: SweepWorkload | None = None

    def fingerprint(self, objectives: Sequence[str]) -> dict[str, Any]:
        """What must not change when a study is resumed. The policy, the speedup (with the
        model's settings) and the workload's node kind are in it only when they are not the
        defaults (``ta``, ``none``, unset), so that studies made before they were recorded
        resume (:data:`FINGERPRINT_DEFAULTS`). ``cores_per_node`` and ``max_runtime_s`` are
        always in it; a study recorded without them is compared with :attr:`config_defaults`
        (see :func:`fattorus.app.tune.storage.check_setup`)."""
        from fattorus.analysis import commtime  # JAX: imported only when a fingerprint is taken

        other = {**({"policy": self.policy} if self.policy != "ta" else {}),
                 **({"speedup": self.speedup, "model": commtime.model_settings()} if self.speedup != "none" else {}),
                 **({"node_kind": self.node_kind} if self.node_kind is not None else {})}
        return {
            "topo": self.topo.name,
            "workload": self.workload,
            "workload_sha256": self.sha256,
            "scale": self.scale,
            "train": windows_label(self.train),
            "objectives": list(objectives),
            "search_space": SEARCH_SPACE_VERSION,
            "cores_per_node": self.cores_per_node,
            "max_runtime_s": self.max_runtime_s,
            **other,
        }


#: Fingerprint keys recorded only when not at these values (studies made before them lack them).
FINGERPRINT_DEFAULTS: dict[str, Any] = {"policy": "ta", "speedup": "none", "model": None, "node_kind": None}


def _read_yaml_config(spec: str, path: Path) -> dict[str, Any]:
    """A workload YAML given by path; a broken or non-mapping file is a :class:`TuneError`."""
    import yaml

    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise TuneError(f"--workload {spec}: not valid YAML ({' '.join(str(err).split())})") from None
    if not isinstance(cfg, dict):
        raise TuneError(f"--workload {spec}: not a workload config (a mapping with name, path, format, ...)")
    return cfg


def _source(spec: str) -> tuple[str, Path]:
    """What ``--workload spec`` names: ``("named", conf/workload/NAME.yaml)``, ``("yaml", the
    workload YAML)`` or ``("log", the job log)``; anything else is a :class:`TuneError`."""
    named = paths.config_file("workload", spec)
    path = Path(spec).expanduser()
    if re.fullmatch(r"[A-Za-z0-9_-]+", spec) and named.is_file():
        return "named", named
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return "yaml", path
    if path.is_file():
        return "log", path
    choices = paths.config_names("workload")
    raise TuneError(f"--workload {spec!r}: neither a conf/workload name {choices} nor an existing file")


def workload_config(spec: str, cores_per_node: int | None) -> dict[str, Any]:
    """A ``conf/workload/*.yaml`` mapping for ``--workload`` (a name, a YAML path, or a log)."""
    import yaml

    kind, path = _source(spec)
    if kind == "named":
        cfg = yaml.safe_load(path.read_text())
    elif kind == "yaml":
        cfg = _read_yaml_config(spec, path)
    else:
        cfg = {"name": path.name.split(".")[0], "path": str(path.resolve()), "format": "auto"}
    if cores_per_node is not None:
        cfg["cores_per_node"] = cores_per_node
    return dict(cfg)


#: Workload keys the tuner sets itself (load_setup): the sweep command gets the study's scale
#: instead, and no window (the tuned config is for the whole log).
_SET_BY_TUNE = ("scale", "window_start_days", "window_days")


def sweep_workload(spec: str, cores_per_node: int | None) -> SweepWorkload:
    """The study app's workload settings that replay what ``--workload spec`` with
    ``--cores-per-node`` loads in the tuner (:func:`workload_config`):

    * a ``conf/workload`` name: ``workload=NAME``;
    * a job log: ``workload=file`` and ``workload.path=`` its absolute path (``format: auto``,
      ``cores_per_node`` the header's, as here: conf/workload/file.yaml's defaults);
    * a workload YAML in a folder named ``workload`` (a config folder's group, as
      ``conf/workload``): ``hydra.searchpath`` to that config folder and ``workload=STEM``;
    * another workload YAML: ``workload=file`` and each of its keys (``path``, ``format``,
      ``cores_per_node``, ``node_kind``, ``max_runtime_s``, ...). A mapping (``synthetic``)
      cannot be given that way (Hydra cannot merge a mapping into file.yaml's null), so such
      a YAML is named ``workload=STEM`` with a note to copy it into ``conf/workload/``;

    then ``workload.cores_per_node=N`` when ``--cores-per-node`` was given."""
    kind, path = _source(spec)
    settings: dict[str, Any] = {}
    head: list[tuple[str, Any]] = []
    note = None
    if kind == "named":
        group = spec
    elif kind == "log":
        group, settings["path"] = "file", str(path.resolve())
    else:
        cfg = _read_yaml_config(spec, path)
        folder = path.resolve().parent
        if folder.name == "workload" or any(isinstance(v, dict) for k, v in cfg.items() if k not in _SET_BY_TUNE):
            group = path.stem
            if folder.name != "workload":
                note = f"with {path.resolve()} copied to conf/workload/{path.stem}.yaml"
            elif folder != paths.conf_dir("workload").resolve():  # the app's own folder needs no search path
                head.append(("hydra.searchpath", [f"file://{folder.parent}"]))
            if cfg.get("window_start_days") or cfg.get("window_days") is not None:
                # The tuner cut its windows from the whole log, whatever window the YAML names.
                settings.update(window_start_days=0, window_days=None)
        else:
            # A key left out is read as unset here; file.yaml's path is mandatory (???), so say so.
            group = "file"
            settings = {"path": None, **{k: v for k, v in cfg.items() if k not in _SET_BY_TUNE}}
    if cores_per_node is not None:  # the option wins over the config's value, as in workload_config
        settings["cores_per_node"] = cores_per_node
    return SweepWorkload((*head, ("workload", group), *((f"workload.{k}", v) for k, v in settings.items())), note)


def _default_scale(topo: str) -> float | str:
    """The machine's default load (``conf/topo``'s ``default_scale``: a number or ``fit``; 1
    without one), for ``--scale machine``."""
    from omegaconf import OmegaConf

    path = Path(topo) if Path(topo).suffix else paths.config_file("topo", topo)
    return OmegaConf.load(path).get("default_scale", 1)  # the machine loaded from it already


def load_topology(topo: str, tuned: str = "ta") -> Topology:
    """``--topo``: a ``conf/topo`` name or a YAML path; errors become :class:`TuneError`."""
    from fattorus import topology
    from fattorus.sched import policy

    try:
        machine = topology.load(topo)
    except (topology.TopologyError, OSError, ValueError) as err:
        raise TuneError(f"--topo {topo}: {err}") from None
    if tuned not in policy.supporting(machine):
        # Found before any study is created: the tuned policy cannot place jobs on this family.
        raise TuneError(f"--topo {topo}: policy {tuned!r} does not support {machine.kind} machines; "
                        f"tune on one of its families ({', '.join(policy.REGISTRY[tuned][0].families)})")
    return machine


def _cut(jobs: pl.DataFrame, ws: Sequence[Window], option: str) -> tuple[pl.DataFrame, ...]:
    """The jobs submitted in each window; an empty window is a :class:`TuneError`."""
    from fattorus import workload

    tables = []
    for a, b in ws:
        t = workload.first_days(jobs, b - a, a)
        if t.height == 0:
            span, origin = jobs["submit_s"].max(), jobs["submit_s"].min()
            span_days = 0.0 if span is None or origin is None else (float(span) - float(origin)) / DAY_S
            raise TuneError(f"{option}: window {window_label((a, b))} holds no jobs "
                            f"(the workload's submissions span {span_days:.1f} days)")
        tables.append(t)
    return tuple(tables)


def _seconds(x: Any) -> Any:
    """A number of seconds as a float (``366 * 86400`` and ``31622400.0`` are one ceiling);
    anything else as it is (the loader, not the fingerprint, refuses it)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x


def load_setup(topo: str, workload_spec: str, scale: float | str, train: Sequence[Window], test: Sequence[Window],
               cores_per_node: int | None = None, policy: str = "ta", speedup: str = "none") -> Setup:
    """Load the machine and the workload, scale it, and cut the windows.

    ``scale``: a number, ``fit`` or ``machine`` (the machine's ``default_scale``), as the study
    app's ``workload.scale``; the setup keeps the factor it came to (what the study is keyed on
    and its held-out runs replay with).

    Windows are cut exactly as the study app does (``workload.scale=S
    workload.window_start_days=A workload.window_days=B-A``): scale first, then count days
    from the first submission of the scaled table.
    """
    from fattorus import workload

    from fattorus.topology import TopologyError

    machine = load_topology(topo, policy)
    cfg = workload_config(workload_spec, None)
    # What a study recorded before cores per node and the ceiling were fingerprinted is taken
    # to have used: the workload config's own values (docs/decisions.md).
    config_defaults = {"cores_per_node": cfg.get("cores_per_node"),
                       "max_runtime_s": _seconds(cfg.get("max_runtime_s", workload.DEFAULT_MAX_RUNTIME_S))}
    if cores_per_node is not None:
        cfg["cores_per_node"] = cores_per_node
    cfg.update(scale=scale, window_start_days=0, window_days=None)
    from fattorus.sched.replay import machine_nodes

    try:  # as the study app: jobs are scaled for, and run on, the nodes of the workload's kind
        usable = machine_nodes(machine, cfg.get("node_kind"))
    except TopologyError as err:
        raise TuneError(f"--workload {workload_spec}: node_kind: {err}") from None
    try:
        wl, counts = workload.from_config(cfg, machine_nodes=usable, machine_scale=_default_scale(topo))
    except (OSError, ValueError) as err:  # WorkloadError is a ValueError
        raise TuneError(f"--workload {workload_spec}: {' '.join(str(err).split())}") from None
    jobs = workload.with_estimate(wl.jobs)
    setup = Setup(
        topo=machine,
        workload=str(cfg.get("name", workload_spec)),
        sha256=wl.sha256,
        scale=float(counts.get("scale_factor", scale)),
        train=tuple(train),
        test=tuple(test),
        train_tables=_cut(jobs, train, "--train"),
        test_tables=_cut(jobs, test, "--test"),
        policy=policy,
        speedup=speedup,
        node_kind=cfg.get("node_kind"),
        cores_per_node=cfg.get("cores_per_node"),
        max_runtime_s=_seconds(cfg.get("max_runtime_s", workload.DEFAULT_MAX_RUNTIME_S)),
        config_defaults=config_defaults,
        sweep=sweep_workload(workload_spec, cores_per_node),
    )
    from fattorus.app.sweep import _skip_line

    skipped = _skip_line(wl, "fattorus.tune")
    if skipped:  # dirty lines of a real log: counted and reported (once the setup is valid), as sweep does
        print(skipped, file=sys.stderr, flush=True)
    return setup


__all__ = ["DAY_S", "FINGERPRINT_DEFAULTS", "Setup", "SweepWorkload", "Window", "check_held_out", "load_setup",
           "parse_windows", "sweep_workload", "window_label", "windows_label", "workload_config"]
