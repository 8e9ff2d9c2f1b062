"""Hydra callbacks the apps share: checks that must come before Hydra makes a directory.

Hydra makes a run's (or a sweep's) directory and writes its config copy there before the
app's own code runs, so a directory the app would refuse must be refused here, from the
composed config (``hydra.callbacks`` in ``conf/config.yaml`` and ``conf/qos_app.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from fattorus import paths
from fattorus.app.cli import Refusal


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


class ResultsOnly(Callback):
    """A run's or a sweep's directory under a ``results/`` directory, refused before Hydra
    makes it otherwise (:func:`refuse_outside_results`)."""

    def on_run_start(self, config: DictConfig, **_: Any) -> None:
        """A single run: ``hydra.run.dir``."""
        refuse_outside_results(config, "hydra.run.dir")

    def on_multirun_start(self, config: DictConfig, **_: Any) -> None:
        """A multirun: ``hydra.sweep.dir`` (its trials' folders are single path components in it)."""
        refuse_outside_results(config, "hydra.sweep.dir")
