"""Pairs of jobs running at once, for the tests that check no two of them share a link."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def concurrent_pairs(start: np.ndarray, end: np.ndarray) -> Iterator[tuple[int, int]]:
    """Every pair (a, b) of jobs whose ``[start, end)`` intervals overlap, by a sweep line."""
    order = np.argsort(start, kind="stable")
    active: list[int] = []
    for j in order:
        active = [a for a in active if end[a] > start[j]]
        for a in active:
            yield a, j
        if end[j] > start[j]:
            active.append(j)
