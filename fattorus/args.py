"""Command-line parsing shared by every entry point: argparse whose usage errors are one line.

Why: the project's rule for bad input is one clear stderr line and exit code 2; argparse's own
``error`` prints the whole usage block first (two or more lines), which buries the message.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn


class OneLineParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` with one-line errors: ``PREFIX: error: MESSAGE (see
    --help)`` on stderr and exit code 2, no usage block. ``error_prefix`` is what the entry
    point's other errors start with (default: ``prog``)."""

    def __init__(self, *args: Any, error_prefix: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix or self.prog

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.error_prefix}: error: {' '.join(message.split())} (see --help)\n")
        sys.exit(2)


__all__ = ["OneLineParser"]
