"""Compact crossing lists (:func:`fattorus.kernels.maxmin_compiled.compact_routes`) back to
padded routes, for the tests that hand a compact solve's flows to the padded solvers."""

from __future__ import annotations

import numpy as np


def padded(lengths: np.ndarray, links: np.ndarray, width: int) -> np.ndarray:
    """Compact crossing lists back to ``(F, width)`` routes, ``-1`` padded at the end."""
    starts = np.cumsum(lengths) - lengths
    out = np.full((len(lengths), width), -1, np.int32)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    out[rows, np.arange(len(links)) - np.repeat(starts, lengths)] = links
    return out
