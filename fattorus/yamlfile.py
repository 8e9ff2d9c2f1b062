"""Where a mistake lies in a user's YAML file: one line naming the file, the line and the field.

The project's rule for bad input (README, "Standards"): one clear line naming file, line and
field. A machine or scenario file is read by OmegaConf (through Hydra or directly), which
keeps no line numbers, so the line is found again here: from PyYAML's mark for a file that
does not parse, and from the field a validation message names for one that does. Imports
nothing from the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path


def located(path: str | Path, message: str, keys: Iterable[str]) -> str:
    """``message`` about the YAML file ``path`` as ``path:LINE: message``, LINE that of the
    first of the file's top-level ``keys`` the message names (``path: message`` where it names
    none, or the key is not on a line of its own).

    The message is read after its subject (``topology 'x': ``) and before a list of what is
    allowed (``; allowed [...]``), and its keys in the order it names them: ``up_ports (3)
    exceeds nodes_per_leaf (2)`` points at ``up_ports``."""
    text = message.split(": ", 1)[-1].split("; allowed")[0].split("; choices")[0]
    found = ((m.start(), k) for k in keys if (m := re.search(rf"(?<![\w.]){re.escape(str(k))}(?!\w)", text)))
    named = [k for _, k in sorted(found)]
    if named:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        for key in named:
            at = next((i for i, line in enumerate(lines, 1) if re.match(rf"{re.escape(str(key))}\s*:", line)), None)
            if at is not None:
                return f"{path}:{at}: {message}"
    return f"{path}: {message}"


def syntax_error(err: BaseException) -> str | None:
    """One line for PyYAML's error ``err`` on a file that does not parse (a duplicate key, an
    unclosed bracket, a tab in the indentation): ``FILE:LINE:COLUMN: problem (context)``, or
    None for another error."""
    import yaml

    if not isinstance(err, yaml.YAMLError):
        return None
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    context = getattr(err, "context", None)
    where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}{f' ({context})' if context else ''}; the file is not valid YAML"
