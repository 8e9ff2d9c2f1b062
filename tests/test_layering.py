"""The package's layers (issue 11): family words stay in the family's modules, imports flow down.

(a) Outside ``fattorus/topology/`` and the fat-tree policies (``fattorus/sched/policy/fattree/``)
no module names leaves, pods or the fat-tree job types T1/T2/T3, nor a fat-tree link level:
everything else works for any interconnect through the topology interface.
(b) No import cycle between the layers, and imports point down:
app/report -> sched/analysis -> kernels/workload -> topology (paths, files, args, interrupt and lazyjit lowest).
(c) Only ``fattorus/paths.py`` finds the repository from a module's own location.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "fattorus"
FAMILY_OWNED = ("topology/", "sched/policy/fattree/")
FAMILY_WORDS = re.compile(r"\b(leaf|pod|pods|T1|T2|T3|L2-core|leaf-L2|per_leaf|leaf_free|pod_free)\b")

# Layer of each top-level part of the package; a module may import its own layer or lower.
LAYER = {"paths": 0, "topology": 0, "files": 0, "args": 0, "interrupt": 0, "provenance": 0, "lazyjit": 0,
         "kernels": 1, "workload": 1, "sched": 2, "analysis": 2, "bench": 3,
         "app": 3, "report": 3}


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def test_family_words_stay_in_family_modules():
    offenders = {}
    for path in _modules():
        rel = _rel(path)
        if rel.startswith(FAMILY_OWNED):
            continue
        words = sorted(set(FAMILY_WORDS.findall(path.read_text())))
        if words:
            offenders[rel] = words
    assert offenders == {}


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "fattorus" else None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_imports_point_down_the_layers():
    upward = []
    for path in _modules():
        rel = _rel(path)
        here = rel.split("/")[0].removesuffix(".py")
        if here not in LAYER:
            continue  # the entry-point shims (sweep.py, study.py, ...) sit above everything
        for module in _imports(path):
            there = _part(module)
            if there in LAYER and LAYER[there] > LAYER[here]:
                upward.append(f"{rel} imports {module}")
    assert upward == []


def test_report_reads_outputs_only():
    for path in (PKG / "report").rglob("*.py"):
        parts = {_part(m) for m in _imports(path)}
        assert not parts & {"sched", "app", "kernels", "workload"}, path


def test_only_paths_finds_the_repository():
    finders = {_rel(p) for p in _modules() if "__file__" in p.read_text()} - {"paths.py"}
    assert sorted(finders) == []
