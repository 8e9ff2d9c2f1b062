"""Shared test fixtures: the repository's folders (through :mod:`fattorus.paths`) and machines.

* ``conf_topo``: a test (or fixture) that asks for it runs once per config in ``conf/topo``
  (module-scoped, parametrized by :func:`pytest_generate_tests` with the config names as
  ids), so a family that adds configs is covered without editing any test;
* ``ft6``, ``ft6_tapered``, ``ft6x6``, ``torus4``: small machines of ``conf/topo`` that
  hand-worked tests use (session-scoped: a topology is an immutable value);
* ``repo_root``, ``conf_dir``, ``traces_dir``: folders of the checkout. Tests read only what
  the repository ships (``conf/``, ``data/traces``), never the shared folder beside a checkout;
* ``reader_that_leaves``: runs a command as ``CMD | head -N`` would, for the quiet end of the
  table-printing commands (``fattorus.args.run_piped``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fattorus import paths, topology
from fattorus.topology import Topology

#: Names of the machine configs in ``conf/topo`` (file stems, sorted).
TOPO_CONFIGS: list[str] = paths.config_names("topo")

# Commands that tests start (``python -m fattorus...``) import the checkout under test first,
# and keep what else the caller's PYTHONPATH held (packages installed beside it, as on a
# machine that carries its dependencies in a folder of their own). Set once here, inherited by
# every child through ``os.environ``.
def child_pythonpath(existing: str, checkout: str) -> str:
    """``PYTHONPATH`` for the commands tests start: ``checkout`` first, then every other
    entry of ``existing`` in its order (empty ones and ``checkout`` itself dropped)."""
    return os.pathsep.join([checkout] + [p for p in existing.split(os.pathsep) if p and p != checkout])


CALLER_PYTHONPATH = os.environ.get("PYTHONPATH", "")
os.environ["PYTHONPATH"] = child_pythonpath(CALLER_PYTHONPATH, str(paths.repo_root()))


#: The slowest test files, slowest first (each 8-90 s on this 2-core machine, session 29: the
#: mean of three runs of the whole suite; test_policy_contract.py includes numba's compile of the
#: prism replay in a fresh checkout): pytest-xdist's ``--dist loadfile`` hands whole files to the
#: workers in collection order (:func:`pytest_configure`), so a long file collected late keeps one
#: worker busy while the other idles at the end. Files not listed follow, in their own order.
SLOW_FIRST = ("test_qos_study.py", "test_policy_contract.py", "test_bad_inputs.py", "test_sweep.py", "test_batched.py",
              "test_dragonfly_study.py", "test_prism.py", "test_maxmin_compiled.py", "test_network_study.py",
              "test_study_cli.py", "test_replay.py", "test_aph.py", "test_tune.py", "test_model_runtimes.py",
              "test_topology_contract.py", "test_node_kinds.py", "test_dragonfly.py", "test_commtime.py",
              "test_report.py", "test_tune_postgres.py", "test_tune_prism.py", "test_maxmin.py", "test_adaptive.py",
              "test_torus.py", "test_prism_compiled.py", "test_model_apps.py", "test_trials.py",
              "test_report_browser.py", "test_interrupt.py", "test_linkload.py", "test_service_levels.py",
              "test_spec_app_rules.py", "test_routings.py", "test_comm_fraction.py",
              "test_workload.py", "test_dragonfly_replay.py", "test_fluid.py")


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist (3.5 on) sorts --dist loadfile's files by their number of tests, not by the
    # collection order SLOW_FIRST sets, unless told not to (--no-loadscope-reorder, 3.8 on): a
    # count says little of a file's time here (test_tune_postgres.py: one test, ~20 s). Off
    # unless the command line asks for it.
    if getattr(config.option, "loadscopereorder", False) and "--loadscope-reorder" not in config.invocation_params.args:
        config.option.loadscopereorder = False
    # A suite started as a background job (`make test &` in a script, nohup) begins with
    # SIGINT ignored, and every child inherits that: a Python child then has no
    # KeyboardInterrupt to raise, and tests/test_interrupt.py's Ctrl-Cs did nothing (9 failures,
    # session 36). A handler is reset to the default at exec, so the children start as from a
    # terminal. pytest's own process (and each xdist worker) runs this.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slowest files first (:data:`SLOW_FIRST`); a stable sort keeps every file's own order."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Parametrize here rather than with fixture params so the ids are the config names and
    # the list is read once, at collection, from the checkout being tested.
    if "conf_topo_name" in metafunc.fixturenames:
        metafunc.parametrize("conf_topo_name", TOPO_CONFIGS, scope="module")


@pytest.fixture(scope="module")
def conf_topo(conf_topo_name: str) -> Topology:
    """The machine ``conf/topo/<name>.yaml``, once per config (any family)."""
    return topology.load(conf_topo_name)


@pytest.fixture
def results_path(tmp_path: Path) -> Path:
    """A ``results/`` folder in the test's temporary folder: where a test's ``hydra.run.dir``
    or ``hydra.sweep.dir`` may point (the apps refuse directories outside a ``results/``
    directory, as every command's ``--out``)."""
    path = tmp_path / "results"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root of the checkout under test."""
    return paths.repo_root()


@pytest.fixture(scope="session")
def conf_dir() -> Path:
    """``conf/`` of the checkout under test."""
    return paths.conf_dir()


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """``data/traces``: the job logs the repository ships."""
    return paths.traces_dir()


@pytest.fixture(scope="session")
def ft6() -> Topology:
    """The fat-tree paper's Figure 2 machine: radix 6, 3 nodes a leaf, 3 leaves a pod, 2 pods."""
    return topology.load("ft6")


@pytest.fixture(scope="session")
def ft6_tapered() -> Topology:
    """``ft6`` with fewer up-ports than nodes a leaf (a tapered fat-tree)."""
    return topology.load("ft6_tapered")


@pytest.fixture(scope="session")
def ft6x6() -> Topology:
    """A radix-6 fat-tree with 6 pods (54 nodes): small, with every hop class populated."""
    return topology.load("ft6x6")


@pytest.fixture(scope="session")
def torus4() -> Topology:
    """The smallest 3D torus config."""
    return topology.load("torus4")


@pytest.fixture
def reader_that_leaves(repo_root: Path) -> Callable[..., tuple[list[str], str, int]]:
    """``run(module, *args, lines=1, cwd=None)``: ``python -m module args`` (in ``cwd``, default
    the repository) with stdout on a pipe whose
    reader takes ``lines`` lines (0: none) and closes it, as ``| head -N``; returns the lines
    read, all of stderr and the exit status. Without ``PYTHONUNBUFFERED``: stdout is
    block-buffered, as users run it (unbuffered, CPython writes a long ``print`` in one call
    and silently drops what a closed pipe did not take)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}

    def run(module: str, *args: str, lines: int = 1, cwd: Path | None = None) -> tuple[list[str], str, int]:
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd or repo_root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        read = [proc.stdout.readline() for _ in range(lines)]
        proc.stdout.close()
        err = proc.stderr.read()
        return read, err, proc.wait(timeout=120)

    return run


@pytest.fixture
def on_cpu():
    """Compute on the CPU device, which every JAX has, for a test whose claim is exactness to
    the bit (a shortcut, a resumed run against an uninterrupted one). Why: where every
    per-link sum adds in one order (the CPU) the same problem gives the same float twice; a
    GPU's atomic scatter-adds sum in an order of their own, so two solves of one problem may
    differ by float32 rounding (seen on an H200: a model replay's start times, a resumed
    dragonfly study's per-job traffic). What such a test claims is not a device's rounding."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        yield
