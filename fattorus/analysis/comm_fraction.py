"""A job's communication fraction ``c`` (issue 14): the share of its interference-free run time
spent communicating, so that its run time scales as ``(1 − c) + c · slowdown``.

``speedup.comm_fraction`` takes one of four forms:

* a number in ``[0, 1]``: every job's ``c`` (the default, 0.3);
* a range ``[lo, hi]``: each job's ``c`` drawn uniformly in it, from the run's seed;
* ``{by_pattern: {NAME: value, ..., default: value}}``: by the job's pattern (a name of the mix,
  or the pattern an application names); ``default`` for patterns not listed (without it every
  pattern the run draws must be listed);
* ``{by_nodes: {edges: [e1, e2, ...], values: [v0, v1, ..., vk]}}``: by size bin, value ``i``
  for jobs of ``e(i-1) < nodes <= e(i)`` (the upper edges inclusive, as the by-size outputs'
  bins), the last for jobs larger than the last edge: one more value than edges.

Each ``value`` in the last two is a number or a ``[lo, hi]`` range as above. Every job takes one
uniform draw (``jax.random.uniform`` from the model's key folded with a constant past any job
index, so no job's traffic key is reused) whether
or not its value is a range, so that which jobs draw does not shift any other job's ``c``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import jax

#: A value: one fraction, or a range drawn per job.
Value = float | tuple[float, float]
#: Folded into the model's key for the per-job draws. The model folds a job's index into the
#: same key for its traffic (``fold_in(key, j)``), so the constant sits where no job index
#: reaches (a small one, 0xC0F, was job 3,087's traffic key).
_FOLD = 0xFFFFFC0F


class CommFraction(NamedTuple):
    """A parsed ``comm_fraction``: ``by`` is ``"all"`` (``values[0]`` for every job),
    ``"pattern"`` (``names[i]`` takes ``values[i]``; ``default`` the others, None: none) or
    ``"nodes"`` (``edges`` upper bin edges, ``len(edges) + 1`` values)."""

    by: str
    values: tuple[Value, ...]
    names: tuple[str, ...] = ()
    edges: tuple[int, ...] = ()
    default: Value | None = None

    @property
    def constant(self) -> float | None:
        """The one ``c`` of every job, or None when it varies by job."""
        if self.by == "all" and not isinstance(self.values[0], tuple):
            return float(self.values[0])
        return None


def _number(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{where}: a number in [0, 1] or a range [lo, hi], got {x!r}")
    v = float(x)
    if not 0 <= v <= 1:  # NaN fails too
        raise ValueError(f"{where}: {x!r} must be in [0, 1]")
    return v


def _value(x: Any, where: str) -> Value:
    if isinstance(x, Sequence) and not isinstance(x, str):
        if len(x) != 2:
            raise ValueError(f"{where}: a range is [lo, hi], got {list(x)!r}")
        lo, hi = _number(x[0], where), _number(x[1], where)
        if lo > hi:
            raise ValueError(f"{where}: range [{lo:g}, {hi:g}] has lo > hi")
        return (lo, hi)
    return _number(x, where)


def parse(value: Any, where: str = "speedup.comm_fraction") -> CommFraction:
    """``value`` (a config value: number, list or mapping, module docstring) as a
    :class:`CommFraction`; a ``ValueError`` naming ``where`` and the entry for anything else."""
    if isinstance(value, CommFraction):
        return value
    if not isinstance(value, Mapping):
        return CommFraction("all", (_value(value, where),))
    keys = list(value)
    if keys == ["by_pattern"]:
        table = value["by_pattern"]
        if not isinstance(table, Mapping) or not table:
            raise ValueError(f"{where}.by_pattern: pattern name -> value (and default), got {table!r}")
        names = tuple(str(k) for k in table if k != "default")
        values = tuple(_value(table[k], f"{where}.by_pattern.{k}") for k in table if k != "default")
        default = _value(table["default"], f"{where}.by_pattern.default") if "default" in table else None
        return CommFraction("pattern", values, names=names, default=default)
    if keys == ["by_nodes"]:
        table = value["by_nodes"]
        if not isinstance(table, Mapping) or sorted(table) != ["edges", "values"]:
            raise ValueError(f"{where}.by_nodes: {{edges: [e1, ...], values: [v0, v1, ...]}}, got {table!r}")
        edges, values = table["edges"], table["values"]
        if (not isinstance(edges, Sequence) or isinstance(edges, str) or not edges
                or any(isinstance(e, bool) or not isinstance(e, (int, np.integer)) or e < 1 for e in edges)
                or any(a >= b for a, b in zip(edges, edges[1:]))):
            raise ValueError(f"{where}.by_nodes.edges: node counts >= 1, rising, got {edges!r}")
        if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != len(edges) + 1:
            raise ValueError(f"{where}.by_nodes.values: one more value than edges ({len(edges) + 1}: the last for "
                             f"jobs past {edges[-1]} nodes), got {values!r}")
        return CommFraction("nodes", tuple(_value(v, f"{where}.by_nodes.values[{i}]") for i, v in enumerate(values)),
                            edges=tuple(int(e) for e in edges))
    raise ValueError(f"{where}: a number, a range [lo, hi], {{by_pattern: {{...}}}} or {{by_nodes: {{edges, values}}}}, "
                     f"got keys {keys}")


def plain(cf: CommFraction) -> Any:
    """``cf`` in its config form (what ``summary.json`` records): a number for one fraction."""
    def one(v: Value) -> Any:
        return list(v) if isinstance(v, tuple) else v

    if cf.by == "all":
        return one(cf.values[0])
    if cf.by == "pattern":
        table = {n: one(v) for n, v in zip(cf.names, cf.values)}
        return {"by_pattern": table | ({"default": one(cf.default)} if cf.default is not None else {})}
    return {"by_nodes": {"edges": list(cf.edges), "values": [one(v) for v in cf.values]}}


def _unvalued(cf: CommFraction, patterns: Iterable[str]) -> None:
    """``ValueError`` naming the patterns ``by_pattern`` gives no value, when it has no default."""
    missing = sorted({str(x) for x in patterns} - set(cf.names))
    if cf.by == "pattern" and cf.default is None and missing:
        raise ValueError(f"speedup.comm_fraction.by_pattern: no value for pattern(s) {missing} and no default")


def check_patterns(cf: CommFraction, drawable: Iterable[str]) -> None:
    """Before a run: a ``by_pattern`` table names only patterns the run can draw (``drawable``:
    the mix's and the applications' — a misspelt name would leave its jobs on the default
    silently), and values every one of them unless it has a default; ``ValueError`` else."""
    if cf.by != "pattern":
        return
    drawable = {str(x) for x in drawable}
    unknown = sorted(set(cf.names) - drawable)
    if unknown:
        raise ValueError(f"speedup.comm_fraction.by_pattern names {unknown}, which this run never draws "
                         f"(its patterns: {sorted(drawable)})")
    _unvalued(cf, drawable)


def per_job(cf: CommFraction, key: jax.Array | np.ndarray, names: Sequence[str], nodes: np.ndarray) -> np.ndarray:
    """Each job's ``c`` (float64), for jobs with patterns ``names`` on ``nodes`` nodes; ranges
    drawn with ``key`` (the run's model key, a ``jax.random`` key or its raw uint32 data). A pattern ``by_pattern`` does not list, without
    a default, raises ``ValueError`` naming it."""
    nodes = np.asarray(nodes)
    n = len(nodes)
    if cf.by == "all":
        which = np.zeros(n, np.int64)
        table = cf.values
    elif cf.by == "nodes":
        which = np.searchsorted(np.asarray(cf.edges), nodes, side="left")  # nodes <= edge i -> bin i
        table = cf.values
    else:
        _unvalued(cf, names)
        index = {name: i for i, name in enumerate(cf.names)}
        table = (*cf.values, cf.default)
        which = np.array([index.get(str(x), len(cf.values)) for x in names], np.int64)
    from fattorus.kernels import threefry  # numba, loaded on first need

    u = threefry.uniform(threefry.fold_in(key, _FOLD), n).astype(np.float64)  # jax.random's bits, on the host
    lo = np.array([v[0] if isinstance(v, tuple) else v for v in table], np.float64)
    hi = np.array([v[1] if isinstance(v, tuple) else v for v in table], np.float64)
    c = lo[which] + (hi[which] - lo[which]) * u
    return np.where(lo[which] == hi[which], lo[which], c)  # a fixed value exactly, not lo + 0 * u

