"""One line naming file, line and field for a user's YAML file (fattorus/yamlfile.py), and the
commands that read machine files saying so (session 47's exploratory run: 50-105-line
tracebacks for a duplicate key, an unclosed bracket or a tab; "Key 'name' is not in struct"
for a file without a name; no file named for a bad field)."""

from __future__ import annotations

import os

import pytest
import yaml

import forkcli
from fattorus import topology, yamlfile

GOOD = "kind: fattree\nname: {name}\nradix: 6\nnodes_per_leaf: 3\nleaves_per_pod: 3\npods: 2\n"


def test_the_line_is_that_of_the_first_field_the_message_names(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("# my machine\nkind: fattree\nname: m\nradix: 6\nnodes_per_leaf: 2\nup_ports: 3\n")
    keys = ["kind", "name", "radix", "nodes_per_leaf", "up_ports"]
    message = "topology 'm': up_ports (3) exceeds nodes_per_leaf (2); a leaf has ..."
    assert yamlfile.located(path, message, keys) == f"{path}:6: {message}"
    # a list of what is allowed names every key: not read
    unknown = "topology 'm': unknown key(s) ['podz']; allowed: ['kind', 'name', 'podz']"
    assert yamlfile.located(path, unknown, keys) == f"{path}: {unknown}"
    assert yamlfile.located(path, "no field here", keys) == f"{path}: no field here"
    # a key's name inside another word or a dotted path is not that key
    assert yamlfile.located(path, "topology 'm': x.radix and radixes", keys) == f"{path}: topology 'm': x.radix and radixes"


@pytest.mark.parametrize("text, where, words", [
    ("a: 1\nb: 2\na: 3\n", ":3:1: ", "found duplicate key a"),
    ("a: [1\nb: 2\n", ":2:2: ", "expected ',' or ']'"),
    ("a: 1\n\tb: 2\n", ":2:1: ", "found character '\\t'"),
])
def test_a_file_that_does_not_parse_is_named_with_its_line_and_column(tmp_path, text, where, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    from omegaconf import OmegaConf

    with pytest.raises(yaml.YAMLError) as err:
        OmegaConf.load(path)
    line = yamlfile.syntax_error(err.value)
    assert line.startswith(f"{path}{where}") and words in line and "not valid YAML" in line
    assert yamlfile.syntax_error(ValueError("x")) is None


def test_topology_load_names_file_and_line(tmp_path):
    bad = tmp_path / "ft_bad.yaml"
    bad.write_text(GOOD.format(name="ft_bad") + "core_switches: six\n")
    with pytest.raises(topology.TopologyError, match=rf"^{bad}:7: topology 'ft_bad': core_switches must be"):
        topology.load(str(bad))
    for text, words in [("- a\n- b\n", "must be a mapping of settings .* not a list"), ("", r"ft_bad.yaml: topology .\?.: missing key\(s\) \[.name.")]:
        bad.write_text(text)
        with pytest.raises(topology.TopologyError, match=words):
            topology.load(str(bad))
    bad.write_text(GOOD.format(name="x") + "pods: 3\n")
    with pytest.raises(topology.TopologyError, match=rf"^{bad}:7:1: found duplicate key pods"):
        topology.load(str(bad))


@pytest.mark.parametrize("machine, words", [
    (GOOD.format(name="ft_x") + "pods: 3\n", "ft_x.yaml:7:1: found duplicate key pods"),
    (GOOD.format(name="ft_x").replace("radix: 6", "radix: [6"), "ft_x.yaml:4:15: expected ',' or ']'"),
    (GOOD.format(name="ft_x") + "core_switches: six\n", "ft_x.yaml:7: topology 'ft_x': core_switches must be a positive"),
    (GOOD.format(name="ft_x").replace("name: ft_x\n", ""), "ft_x.yaml: needs a name: field"),
    ("", "ft_x.yaml: needs a name: field"),
    ("- a\n- b\n", "ft_x.yaml: must be a mapping of settings"),
])
def test_the_replay_says_what_is_wrong_with_a_users_machine_file_in_one_line(tmp_path, machine, words):
    (tmp_path / "mine" / "topo").mkdir(parents=True)
    (tmp_path / "mine" / "topo" / "ft_x.yaml").write_text(machine)
    results = tmp_path / "results"
    out = forkcli.run("fattorus.sweep", [f"hydra.searchpath=[file://{tmp_path / 'mine'}]", "+topo=ft_x",
                                         f"hydra.run.dir={results / 'run'}", "workload=synthetic", "progress=false"],
                      cwd=tmp_path, env={**os.environ, "WANDB_SILENT": "true"}, timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-2000:]
    assert f"{tmp_path / 'mine' / 'topo'}/{words}" in lines[0]
    assert not results.exists() or not any(results.iterdir())  # no run directory left behind
