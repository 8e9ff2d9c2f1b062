"""The waves generator's config (fattorus/workload/waves.py): the machine size ``scale=fit``
reads, and one-line refusals of bad values (audit: session trw)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fattorus import workload as W
from fattorus.workload import waves

REPO = Path(__file__).resolve().parents[1]
BW_XE = 22_548  # conf/topo/bluewaters.yaml: usable XE nodes


def _table2() -> dict:
    return OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "workload" / "bluewaters_table2.yaml"))


def test_fit_on_blue_waters_is_x1_not_the_largest_job():
    """The header's MaxNodes was the largest job (7,000), so fit scaled Table II x3.2."""
    cfg = _table2()
    plain, counts1 = W.from_config(cfg, machine_nodes=BW_XE)
    assert counts1["scale_factor"] == 1
    assert plain.header["MaxNodes"] == str(BW_XE)
    fit, counts = W.from_config(dict(cfg, scale="fit"), machine_nodes=BW_XE)
    assert counts["scale_factor"] == 1.0 and counts["dropped_by_scaling"] == 0
    assert fit.jobs.equals(plain.jobs)
    # machine (the topology's default load, fit on bluewaters) the same
    machine, _ = W.from_config(dict(cfg, scale="machine"), machine_nodes=BW_XE, machine_scale="fit")
    assert machine.jobs.equals(plain.jobs)
    # on a smaller machine fit scales by its size over the table's machine
    _, half = W.from_config(dict(cfg, scale="fit"), machine_nodes=BW_XE // 2)
    assert half["scale_factor"] == 0.5


def test_without_machine_nodes_fit_refuses_in_one_line_naming_the_fix():
    cfg = _table2()
    del cfg["synthetic"]["machine_nodes"]
    wl, _ = W.from_config(cfg, machine_nodes=BW_XE)  # scale 1: no size needed
    assert "MaxNodes" not in wl.header
    with pytest.raises(W.WorkloadError, match="machine_nodes") as e:
        W.from_config(dict(cfg, scale="fit"), machine_nodes=BW_XE)
    assert "log_nodes" in str(e.value) and "\n" not in str(e.value)
    _, counts = W.from_config(dict(cfg, scale="fit", log_nodes=BW_XE), machine_nodes=BW_XE)
    assert counts["scale_factor"] == 1.0


BASE = {"seed": 0, "n_waves": 2, "apps": [{"name": "A", "nodes": [4], "time_limit_min": 10}]}


def _with(**top):
    cfg = copy.deepcopy(BASE)
    cfg.update(top)
    return cfg


def _app(**row):
    cfg = copy.deepcopy(BASE)
    cfg["apps"][0].update(row)
    return cfg


@pytest.mark.parametrize("bad, says", [
    (_with(wave_interval_s=float("nan")), "wave_interval_s"),
    (_with(wave_interval_s=float("inf")), "wave_interval_s"),
    (_with(n_waves=2.7), "n_waves"),
    (_with(seed="abc"), "seed"),
    (_with(runtime_fraction=0.5), "runtime_fraction"),
    (_with(runtime_fraction=[0.1, 0.2, 0.3]), "runtime_fraction"),
    (_with(include_kinds="XE"), "include_kinds"),
    # a kind no row has: its jobs were dropped without a word (session 47)
    (_with(include_kinds=["XE", "ZZ"]), r"include_kinds names \['ZZ'\], a kind no apps row has"),
    (_with(apps={"name": "A", "nodes": [4], "time_limit_min": 10}), "apps must be a list"),
    (_with(machine_nodes=0), "machine_nodes"),
    (_with(machine_nodes=2.5), "machine_nodes"),
    (_app(time_limit_min=float("nan")), r"apps\[0\] \(A\)\.time_limit_min"),
    (_app(time_limit_min=float("inf")), r"apps\[0\] \(A\)\.time_limit_min"),
    (_app(nodes="48"), r"apps\[0\] \(A\)\.nodes"),
    (_app(nodes=[2.5]), r"apps\[0\] \(A\)\.nodes\[0\]"),
    (_app(nodes=[2**40]), r"apps\[0\] \(A\)\.nodes\[0\]"),
    (_app(instance=3), r"apps\[0\] \(A\): unknown key\(s\) instance"),
])
def test_bad_values_are_one_line_naming_the_field(bad, says):
    with pytest.raises(W.WorkloadError, match=says) as e:
        waves.generate(bad)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("cores", [0, -2, 2.5, "32"])
def test_cores_per_node_is_checked_not_replaced(cores):
    """``cores_per_node: 0`` became 32 (``or 32``) and ``-2`` gave negative procs."""
    cfg = {"name": "t", "format": "waves", "cores_per_node": cores, "synthetic": copy.deepcopy(BASE)}
    with pytest.raises(W.WorkloadError, match="cores_per_node") as e:
        W.from_config(cfg)
    assert "\n" not in str(e.value)


def test_good_values_still_pass():
    wl = waves.generate(_with(n_waves=2.0, wave_interval_s=0, runtime_fraction=[1, 1], include_kinds=["XE"],
                              cores_per_node=16, machine_nodes=64))
    assert wl.jobs["nodes"].to_list() == [4, 4] and wl.jobs["procs"].to_list() == [64, 64]
    assert wl.header["MaxNodes"] == "64"
