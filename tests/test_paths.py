"""fattorus.paths: the one module that finds the repository, conf/, data/ and results/.

Checked against the checkout itself (the test file's own location, an independent way to
find the root) and by the behaviour of its users (``topology.load`` by name and by path).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from fattorus import paths, topology

HERE_ROOT = Path(__file__).resolve().parents[1]


def test_the_root_is_the_checkout_holding_the_package_and_its_folders():
    assert paths.repo_root() == HERE_ROOT
    assert (paths.repo_root() / "fattorus" / "paths.py").is_file()
    assert paths.conf_dir() == HERE_ROOT / "conf" and (paths.conf_dir() / "config.yaml").is_file()
    assert paths.conf_dir("topo") == HERE_ROOT / "conf" / "topo"
    assert paths.data_dir() == HERE_ROOT / "data" and paths.traces_dir().is_dir()
    assert paths.results_dir() == Path("results")  # of the working directory, as Hydra's run dirs


def test_config_names_are_the_yaml_stems_of_a_group():
    expected = sorted(p.name[: -len(".yaml")] for p in (HERE_ROOT / "conf" / "topo").iterdir()
                      if p.name.endswith(".yaml"))
    assert paths.config_names("topo") == expected and "cab" in expected
    assert paths.config_file("topo", "cab") == HERE_ROOT / "conf" / "topo" / "cab.yaml"
    assert paths.config_names("no-such-group") == []


def test_topology_load_finds_configs_through_paths():
    by_name = topology.load("ft6")
    by_path = topology.load(str(paths.config_file("topo", "ft6")))
    assert by_name == by_path and by_name.n_nodes == 18
    with pytest.raises(topology.TopologyError, match="unknown topology 'nope'; choices: .*'cab'"):
        topology.load("nope")


def test_paths_imports_nothing_from_the_package():
    tree = ast.parse((HERE_ROOT / "fattorus" / "paths.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m == "fattorus" or m.startswith("fattorus.") for m in imported)


def test_commands_tests_start_import_the_checkout_and_keep_the_callers_path():
    """tests/conftest.py: a command a test starts imports the checkout under test (not an
    installed copy), and still finds the packages the caller's PYTHONPATH held."""
    import subprocess
    import sys

    from conftest import CALLER_PYTHONPATH, child_pythonpath

    sep = os.pathsep
    assert child_pythonpath(f"/a{sep}{sep}/r{sep}/b", "/r") == f"/r{sep}/a{sep}/b"
    assert child_pythonpath("", "/r") == "/r"
    assert os.environ["PYTHONPATH"] == child_pythonpath(CALLER_PYTHONPATH, str(paths.repo_root()))
    out = subprocess.run([sys.executable, "-c", "import fattorus, os; print(os.environ['PYTHONPATH']); "
                          "print(fattorus.__file__)"], capture_output=True, text=True, check=True, timeout=120)
    pythonpath, where = out.stdout.splitlines()
    assert pythonpath.split(sep)[0] == str(paths.repo_root())
    assert Path(where).resolve().is_relative_to(paths.repo_root().resolve())


def test_a_results_folder_that_is_a_link_is_still_the_results(tmp_path):
    """On a cluster results/ is often a link to scratch storage: resolved, no folder on the way
    is named results, and make report was refused (a session-46 review). The path as written
    counts too, with '..' folded, so an escape by '..' is still outside."""
    from fattorus import paths

    store = tmp_path / "scratch"
    (store / "sweeps" / "x").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "results").symlink_to(store)
    assert paths.under_results(tmp_path / "ws" / "results" / "sweeps" / "x")
    assert paths.under_results(tmp_path / "ws" / "results" / "new" / "report")
    assert not paths.under_results(tmp_path / "ws" / "results" / ".." / "elsewhere")
    assert not paths.under_results(store / "sweeps" / "x")  # the same folder, not named through results/
