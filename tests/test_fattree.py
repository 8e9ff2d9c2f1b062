"""Fat-tree model: sizes from the paper, job types, hops, configuration errors."""

import itertools

import numpy as np
import pytest

from fattorus.topology import fattree
from fattorus.topology.fattree import FatTree, TopologyError

MACHINES = ["cab", "pinot", "ft44", "ft6", "ft6x6", "ft6_tapered"]


def test_cab_and_pinot_sizes_from_the_paper():
    cab, pinot = fattree.load("cab"), fattree.load("pinot")
    assert (cab.n_nodes, cab.pods, cab.nodes_per_pod) == (1296, 4, 324)
    assert (pinot.n_nodes, pinot.pods, pinot.nodes_per_pod) == (2592, 8, 324)
    assert cab.max_hops == pinot.max_hops == 4
    assert fattree.load("ft44").n_nodes == 10648


def test_figure2_job_types():
    # Fat-tree paper, Figure 2 (radix 6): T1 is 1-3 nodes, T2 4-9, T3 10-18.
    ft = fattree.load("ft6")
    types = fattree.job_type(ft, np.arange(1, 19))
    assert list(types) == [1] * 3 + [2] * 6 + [3] * 9


@pytest.mark.parametrize("name", MACHINES)
def test_hops_match_coordinates(name):
    ft = fattree.load(name)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, ft.n_nodes, 2000), rng.integers(0, ft.n_nodes, 2000)
    h = fattree.hops(ft, a, b)
    # Independent rule: decode coordinates by nested loops over the numbering scheme.
    table = {}
    node = 0
    for pod, leaf, slot in itertools.product(range(ft.pods), range(ft.leaves_per_pod), range(ft.nodes_per_leaf)):
        table[node] = (pod, leaf)
        node += 1
    for x, y, hx in zip(a, b, h):
        (px, lx), (py, ly) = table[int(x)], table[int(y)]
        expected = 0 if (px, lx) == (py, ly) else (2 if px == py else 4)
        assert hx == expected
    pod, leaf, slot = fattree.coords(ft, np.arange(ft.n_nodes))
    assert np.array_equal(pod * ft.nodes_per_pod + leaf * ft.nodes_per_leaf + slot, np.arange(ft.n_nodes))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(radix=6, nodes_per_leaf=3, leaves_per_pod=3, pods=0), "pods"),
        (dict(radix=6, nodes_per_leaf=4, leaves_per_pod=3, pods=2, up_ports=3), "ports"),
        (dict(radix=6, nodes_per_leaf=3, leaves_per_pod=7, pods=2), "leaves_per_pod"),
        (dict(radix=6, nodes_per_leaf=3, leaves_per_pod=3, pods=7), "pods"),
        (dict(radix=6, nodes_per_leaf=2, leaves_per_pod=3, pods=2, up_ports=3), "up_ports"),
        (dict(radix="36", nodes_per_leaf=3, leaves_per_pod=3, pods=2), "radix"),
    ],
)
def test_invalid_parameters_are_clear_errors(kwargs, words):
    with pytest.raises(TopologyError, match=words):
        FatTree(name="bad", **kwargs)


def test_config_typos_and_unknown_names():
    with pytest.raises(TopologyError, match="unknown key"):
        fattree.from_config({"name": "x", "radix": 6, "nodes_per_leaf": 3, "leaves_per_pod": 3, "pods": 2, "podz": 2})
    with pytest.raises(TopologyError, match="choices"):
        fattree.load("no-such-machine")
    tapered = fattree.load("ft6_tapered")
    assert tapered.tapered and tapered.l2_per_pod == 2
