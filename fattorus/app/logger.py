"""Weights & Biases logging of a replay run (``logger=wandb``).

Logs the resolved configuration, the summary metrics, the utilization curve (hourly
samples) and the per-bin wait and APH tables, grouped by the study name. The default mode is
``offline``: files go to ``RUN_DIR/wandb/`` and ``wandb sync RUN_DIR/wandb/offline-run-*``
publishes them later (``WANDB_DIR``, when set, replaces ``RUN_DIR``). It never prompts: with
no account or network, offline mode needs neither. The environment variable ``WANDB_MODE``
wins over the configured mode.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MODES = ("offline", "online", "disabled")


def _flat_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """Scalar metrics of a summary, with W&B-friendly names (``wait_s/mean``, ...)."""
    out: dict[str, float] = {
        "makespan_s": summary["makespan_s"],
        "replay_wall_s": summary["replay_wall_s"],
        "jobs/replayed": summary["counts"]["replayed"],
        "jobs/read": summary["counts"]["read"],
    }
    for reason, count in summary["counts"]["skipped"].items():
        out[f"jobs/skipped/{reason}"] = count
    for k in ("mean", "median", "p95"):
        out[f"wait_s/{k}"] = summary["wait_s"][k]
    for k, v in summary["utilization"].items():
        out[f"utilization/{k}"] = v
    out["aph/mean"] = summary["aph"]["mean"]
    return out


def _keep_wandb_under_results(run_dir: Path) -> None:
    """Point W&B's cache, data, config and artifact folders (by default in the home directory)
    at ``results/wandb_home`` (not ``.wandb``: W&B takes a ``.wandb`` folder for its run
    directory), unless the user set them: nothing of a run is written outside the results
    directory."""
    resolved = run_dir.resolve()
    root = next((p for p in (resolved, *resolved.parents) if p.name == "results"), resolved)
    base = root / "wandb_home"
    for var, sub in (("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data"), ("WANDB_CONFIG_DIR", "config"),
                     ("WANDB_ARTIFACT_DIR", "artifacts")):
        os.environ.setdefault(var, str(base / sub))


def wandb_mode(logger_cfg: Mapping[str, Any]) -> str:
    """The W&B mode a run logs in: ``WANDB_MODE`` from the environment, else ``logger.mode``
    (default offline); ``ValueError`` naming the setting if it is none of :data:`MODES`. Light
    (no W&B import), so a run checks it before its replay."""
    mode = os.environ.get("WANDB_MODE") or str(logger_cfg.get("mode", "offline"))
    if mode not in MODES:
        where = "WANDB_MODE" if os.environ.get("WANDB_MODE") else "logger.mode"
        raise ValueError(f"{where}={mode!r}: choose one of {list(MODES)}")
    return mode


#: Characters W&B refuses in a project or entity name (``wandb.init`` raises ``UsageError``).
BAD_NAME_CHARS = "/\\#?%:"


def has_api_key() -> bool:
    """Whether W&B could find credentials, read as W&B reads them (wandb.sdk.lib.wbauth): the
    environment (``WANDB_API_KEY`` or ``WANDB_IDENTITY_TOKEN_FILE``), a netrc entry for any
    W&B host (``NETRC``, else ``~/.netrc``, else ``~/_netrc``; ``wandb login`` writes it), or an
    ``api_key`` in W&B's settings file. Conservative: it says no only when none of these could
    hold a key, so a user who is logged in is never refused. Light: no W&B import."""
    import netrc
    import urllib.parse

    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    # W&B looks a netrc entry up by the URL's netloc (a local server's port kept: localhost:8080);
    # its bare host too, and any case, so that no logged-in user is refused here.
    base = urllib.parse.urlsplit(os.environ.get("WANDB_BASE_URL") or "")
    hosts = {"api.wandb.ai", (base.netloc or "").lower(), (base.hostname or "").lower()} - {""}
    path = next((p for p in (Path(os.environ["NETRC"]).expanduser() if os.environ.get("NETRC") else None,
                             Path("~/.netrc").expanduser(), Path("~/_netrc").expanduser()) if p and p.is_file()), None)
    if path is not None:
        try:
            machines = netrc.netrc(str(path)).hosts
        except (OSError, netrc.NetrcParseError):
            return True  # W&B's own reader decides; no false refusal here
        if any(h.lower() in hosts or "wandb" in h.lower() for h in machines):
            return True
    config = os.environ.get("WANDB_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".config", "wandb")
    try:
        return "api_key" in (Path(config) / "settings").read_text()
    except OSError:
        return False


class LoggingError(RuntimeError):
    """W&B refused to log a run whose results are written (one line; the run's exit 1)."""


def check_settings(logger_cfg: Mapping[str, Any]) -> str:
    """The W&B mode (:func:`wandb_mode`) after checking what ``wandb.init`` would refuse — a
    project or entity name with one of :data:`BAD_NAME_CHARS` or over 128 characters, a group
    over 128, a tag over 64 — as a ``ValueError`` naming the setting. Why here: W&B checks them
    only when the run logs, after its replay (a 53-line traceback, exit 1; session 27
    review); a run calls this before its replay."""
    mode = wandb_mode(logger_cfg)
    for key in ("project", "entity"):
        value = logger_cfg.get(key)
        if value is None and key == "entity":
            continue
        text = str(value)
        if not text or len(text) > 128 or any(c in text for c in BAD_NAME_CHARS):
            raise ValueError(f"logger.{key}={value!r}: W&B takes 1 to 128 characters, none of {' '.join(BAD_NAME_CHARS)}")
    group = logger_cfg.get("group")
    if group is not None and len(str(group)) > 128:
        raise ValueError(f"logger.group: {len(str(group))} characters; W&B takes at most 128")
    if mode == "online" and not has_api_key():
        # W&B asks for its key at wandb.init, after the replay: a traceback there (session 46).
        where = "WANDB_MODE=online" if os.environ.get("WANDB_MODE") else "logger.mode=online"
        raise ValueError(f"{where}: no W&B API key (WANDB_API_KEY, or `wandb login`); log offline "
                         "(logger.mode=offline, the default) and `wandb sync` the run later")
    tags = logger_cfg.get("tags") or []
    if not isinstance(tags, (list, tuple)):
        raise ValueError(f"logger.tags={tags!r}: give a list, e.g. logger.tags=[a,b]")
    for tag in tags:
        if not 1 <= len(str(tag)) <= 64:
            raise ValueError(f"logger.tags: {str(tag)!r} has {len(str(tag))} characters; W&B takes 1 to 64")
    return mode


def _init(wandb: Any, logger_cfg: Mapping[str, Any], c: Mapping[str, Any], name: str, config: Mapping[str, Any],
          run_dir: str | Path, mode: str) -> Any:
    """``wandb.init`` for one run (``c``: its summary's ``config``)."""
    return wandb.init(
        project=logger_cfg.get("project") or "fattorus",
        entity=logger_cfg.get("entity"),
        group=logger_cfg.get("group") or c.get("study"),
        tags=list(logger_cfg.get("tags") or []),
        name=name,
        config=dict(config),
        dir=os.environ.get("WANDB_DIR") or str(run_dir),  # the user's choice wins, as for its cache and data
        mode=mode,
        reinit="finish_previous",
        settings=wandb.Settings(silent=True, console="off"),
    )


def log_run(logger_cfg: Mapping[str, Any], config: Mapping[str, Any], result, run_dir: str | Path) -> str:
    """Log one run; returns the W&B run directory. ``result`` is a :class:`fattorus.replay.ReplayResult`."""
    import polars as pl

    _keep_wandb_under_results(Path(run_dir))
    import wandb

    from fattorus.report.labels import policy_name

    mode = wandb_mode(logger_cfg)
    summary = result.summary
    c = summary["config"]
    name = f"{c['topo']}-{policy_name(c)}-{c['sched']}-{c['workload']['name']}x{c['workload']['scale']}-{c['speedup']}-s{c['seed']}"
    try:
        run = _init(wandb, logger_cfg, c, name, config, run_dir, mode)
    except wandb.errors.Error as err:  # a key refused, no network: the results are written already
        raise LoggingError(f"W&B: {' '.join(str(err).split())[:300]} (the run's results are written in {run_dir}; "
                           "logger.mode=offline logs without an account)") from None
    try:
        run.summary.update(_flat_metrics(summary))
        hourly = result.utilization.filter((pl.col("t_s") - pl.col("t_s").min()) % 3600 == 0)
        curve = wandb.Table(
            columns=["t_h", "utilization"],
            data=[[(t - hourly["t_s"][0]) / 3600, u] for t, u in hourly.select("t_s", "utilization").iter_rows()],
        )
        bins = wandb.Table(columns=["bin", "jobs", "mean_wait_h", "mean_aph", "median_aph", "max_aph"])
        for label, w in summary["wait_s"]["by_bin"].items():
            a = summary["aph"]["by_bin"][label]
            bins.add_data(label, w["jobs"], w.get("mean", float("nan")) / 3600, a.get("mean"), a.get("median"), a.get("max"))
        run.log(
            {
                "utilization_curve": wandb.plot.line(curve, "t_h", "utilization", title="Utilization"),
                "by_bin": bins,
            }
        )
        return str(run.dir)
    finally:
        run.finish()
