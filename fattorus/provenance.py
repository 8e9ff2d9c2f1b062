"""Which fattorus code made a result: its version and a digest of its source.

A sweep, a study or a network/dragonfly/QoS study resumes by keeping what already finished.
Kept results made by other code (an upgrade, a fix, a local edit between two runs of one
study) would mix silently with new ones in one table: every result now records
:func:`stamp`, and a resume names the kept results whose source differs from the running
code (:func:`other_source`). They are kept, not redone: most edits change no number, and a
study's finished trials can be hours of work; the line says how to redo them.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import fattorus
from fattorus import paths

#: Hex digits of the source digest shown and recorded (48 bits: a collision between two
#: versions a user meets is not a concern).
DIGEST_CHARS = 12


def tree_digest(root: Path) -> str:
    """SHA-256 over the Python files under ``root``: relative path and bytes, in path order,
    cut to :data:`DIGEST_CHARS` hex digits. The same for every copy of one tree, different
    for any edit of its code (comments included: a digest cannot tell which edits matter)."""
    h = hashlib.sha256()
    for path in sorted(Path(root).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


@lru_cache(maxsize=1)
def source_digest() -> str:
    """:func:`tree_digest` of the running package, computed once per process (~10 ms)."""
    return tree_digest(paths.package_dir())


def stamp() -> dict[str, str]:
    """What a result records of the code that made it: ``{"version", "source"}``."""
    return {"version": fattorus.__version__, "source": source_digest()}


def other_source(recorded: Any) -> str | None:
    """Why a kept result may not be this code's — made by another source (``recorded`` is
    the ``stamp()`` it holds) or before sources were recorded (``recorded`` missing) — as a
    clause for a one-line message, or None when it is this code's."""
    if not isinstance(recorded, dict) or not recorded.get("source"):
        return "made before fattorus recorded its source"
    if recorded["source"] == source_digest():
        return None
    return f"made by another fattorus source ({recorded['source']}, this one {source_digest()})"
