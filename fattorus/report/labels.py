"""Names the report gives things: run labels, workload labels, size bins, hours as text.

Pure functions of strings and numbers; every other report module uses them so that a
figure, Table I and the HTML page always spell a run, a workload or a bin the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

LABEL_ORDER = ("TO", "TA", "TA x5", "TA x10", "TA x20", "TA V1", "TA V2")
"""The paper's column order; other labels follow by policy, scenario and name (label_rank)."""
DEFAULT_EDGES = (18, 64, 256, 1024)
"""Upper edges (nodes) of the default size bins 1-18, 19-64, 65-256, 257-1024, >1024."""


def scenario_spelling(speedup: str | None) -> str:
    """The paper's spelling of a speedup scenario (``v1`` -> ``V1``, ``x5`` -> ``x5``); ``""`` for none."""
    name = "" if speedup is None else str(speedup).strip()
    if name.lower() in ("", "none", "null"):
        return ""
    if name.lower() in ("v1", "v2"):
        return name.upper()
    return name


def policy_name(config: Mapping[str, Any]) -> str:
    """A run's policy as the run named it (``summary.json``'s ``config``): the tuned config
    chosen (``ta_tuned_atlas2x_cab``, its ``policy_config``) where it used one, else the policy."""
    return str(config.get("policy_config") or config["policy"])


def run_label(policy: str, speedup: str | None = None) -> str:
    """Column label of a run: ``TO``, ``TA``, ``TA x5``, ``TA V2``, ``TREE_BESTFIT``, ..."""
    base = str(policy).strip().upper()
    scenario = scenario_spelling(speedup)
    return f"{base} {scenario}" if scenario else base


#: After the paper's labels: policies, then scenarios, in this order (others after, by name).
POLICY_ORDER = ("TO", "TA")
SCENARIO_ORDER = ("", "x5", "x10", "x20", "V1", "V2", "model")


def label_rank(label: str) -> tuple[int, int, str, int, str]:
    """Sort key putting labels in the paper's order (:data:`LABEL_ORDER`), then the others by
    policy and scenario (:data:`POLICY_ORDER`, :data:`SCENARIO_ORDER`: ``TO model`` before ``TA
    model``, as TO before TA; session 47's audit found them by name), then by name."""
    if label in LABEL_ORDER:
        return (LABEL_ORDER.index(label), 0, "", 0, "")
    base, *rest = label.split(" ")
    # An arm's settings (``ordering=O2``) are no scenario; a scenario may carry edits (``V2{...}``).
    scenarios = [t.split("{", 1)[0] for t in rest if "=" not in t.split("{", 1)[0]]
    scenario = scenarios[-1] if scenarios else ""
    policy_rank = POLICY_ORDER.index(base) if base in POLICY_ORDER else len(POLICY_ORDER)
    scenario_rank = SCENARIO_ORDER.index(scenario) if scenario in SCENARIO_ORDER else len(SCENARIO_ORDER)
    # Other policies by name first (FEATURE, FIRST_FIT ..., PRISM), then scenario.
    return (len(LABEL_ORDER), policy_rank, "" if base in POLICY_ORDER else base, scenario_rank, label)


def order_labels(labels: Iterable[str]) -> list[str]:
    """Distinct labels in report order."""
    return sorted(set(labels), key=label_rank)


def topo_name(topo: Any) -> str:
    """Name of a machine given as a name string or as a config mapping with a ``name``."""
    if isinstance(topo, Mapping):
        return str(topo.get("name", "?"))
    return str(topo)


def workload_label(config: Mapping[str, Any]) -> str:
    """Row label of a run's workload: ``atlas-2x on cab`` (``atlas on cab`` at scale 1)."""
    workload = config.get("workload") or {}
    if not isinstance(workload, Mapping):
        workload = {"name": workload}
    name = str(workload.get("name", "?"))
    scale = workload.get("scale_factor", workload.get("scale", 1))  # the resolved factor where recorded
    try:
        factor = float(scale)
    except (TypeError, ValueError):  # a word ("fit", "machine") from a run that did not record the factor
        factor = None
    if factor is None:
        name = f"{name}-{scale}"
    elif factor != 1:
        # Six digits (the run's own line prints four): two factors that agree to four digits
        # (2.0, 2.0004) are different workloads and must not share a label.
        name = f"{name}-{factor:g}x"
    return f"{name} on {topo_name(config.get('topo', '?'))}"


def bin_labels(edges: Sequence[int] = DEFAULT_EDGES) -> list[str]:
    """Labels of the size bins with upper edges ``edges`` (nodes): ``1-18``, ..., ``>1024`` (as summary.json)."""
    labels, lo = [], 1
    for hi in edges:
        labels.append(f"{lo}-{hi}")
        lo = hi + 1
    return labels + [f">{edges[-1]}"]


def bin_index(column: str = "nodes", edges: Sequence[int] = DEFAULT_EDGES) -> pl.Expr:
    """Polars expression: index of the size bin of each job (0 for ``nodes <= edges[0]``)."""
    return pl.sum_horizontal([(pl.col(column) > e).cast(pl.Int32) for e in edges]).alias("bin")


def fmt_hours(value: float | None) -> str:
    """Hours in the paper's style: 3 significant-ish figures (``295``, ``12.3``, ``0.98``); ``—`` if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if value == 0:
        return "0.00"  # not "-0.00"
    if 0 < abs(value) < 0.001:
        return "<0.001"
    if 0 < abs(value) < 0.1:
        # A lightly loaded machine: keep two figures, not "0.00"; "#" keeps a trailing zero
        # (0.0104 reads 0.010 beside 0.0093, not 0.01).
        return f"{value:#.2g}"
    # The class by the value as shown, not as given: 99.96 shows as 100 ("100", not "100.0"),
    # 9.996 as 10.0 (not "10.00"), and 9.995 (a double below it) as 9.99; session 47's audit.
    two = f"{value:.2f}"
    if abs(float(two)) < 10:
        return two
    one = f"{value:.1f}"
    return one if abs(float(one)) < 100 else f"{value:.0f}"
