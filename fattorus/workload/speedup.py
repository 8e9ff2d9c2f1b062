"""Speedup scenarios: how much faster jobs run without network interference (spec scenarios.md).

A scenario multiplies each job's runtime by ``1 - reduction``; node counts, submit times and
estimates are untouched. The fat-tree paper's scenarios (Section IV-B) are all one rule,
written as data in ``conf/speedup/NAME.yaml``:

- a list of *size classes* ``[min_nodes, max_nodes]`` (inclusive; ``max_nodes: null`` is
  unbounded). A job in no class keeps its runtime;
- each class has *bins* ``[lo, hi]`` (fractions of runtime, not percent) with probabilities
  ``p`` (uniform when omitted). Each job draws one bin of its class at random;
- within the bin, the reduction grows linearly with the job's node count ``N`` and reaches
  ``hi`` at ``cap`` nodes (512 in the paper)::

      reduction = lo + (hi - lo) * min(N, cap) / cap

  A bin with ``lo == hi`` is a constant reduction: the paper's ``x5``/``x10``/``x20``
  ("jobs requesting more than 4 nodes: reduction x %") are one class ``N >= 5`` with the
  single bin ``[x, x]``.

Draws are ``jax.random`` on an explicit key: the same key gives the same runtimes, and
:func:`batch` is a ``jax.vmap`` over keys, one Monte Carlo sample of the scenario per key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from fattorus import paths
from fattorus.lazyjit import lazy_jit

if TYPE_CHECKING:
    import jax

# JAX is imported where a draw runs, not here: a command whose configuration check reads
# this module (SpeedupError, from_config) and then stops at a mistake never loads JAX (~0.6 s).

DEFAULT_CAP = 512
"""Node count at which a bin's reduction reaches its top (fat-tree paper: 512)."""


class SpeedupError(ValueError):
    """A speedup scenario configuration that does not describe a valid scenario."""


class Bin(NamedTuple):
    """A reduction range ``[lo, hi]`` (fractions of runtime) drawn with probability ``p``."""

    lo: float
    hi: float
    p: float


class SizeClass(NamedTuple):
    """Jobs with ``min_nodes <= N <= max_nodes`` (``max_nodes`` None: unbounded) and their bins."""

    min_nodes: int
    max_nodes: int | None
    bins: tuple[Bin, ...]


@dataclasses.dataclass(frozen=True)
class SpeedupParams:
    """A speedup scenario: size classes, their bins and probabilities, and the growth cap.

    Hashable, so it is a static argument of the jitted :func:`apply` and :func:`batch`.
    """

    name: str
    classes: tuple[SizeClass, ...] = ()
    cap: int = DEFAULT_CAP

    def __post_init__(self) -> None:
        _validate(self)


def _validate(params: SpeedupParams) -> None:
    where = f"speedup scenario {params.name!r}"
    if isinstance(params.cap, bool) or not isinstance(params.cap, int) or params.cap < 1:
        raise SpeedupError(f"{where}: cap must be a positive integer, got {params.cap!r}")
    spans = []
    for i, c in enumerate(params.classes):
        if c.min_nodes < 0 or (c.max_nodes is not None and c.max_nodes < c.min_nodes):
            raise SpeedupError(f"{where}: class {i}: need 0 <= min_nodes <= max_nodes, got {c.min_nodes}..{c.max_nodes}")
        if not c.bins:
            raise SpeedupError(f"{where}: class {i} has no bins")
        for j, b in enumerate(c.bins):
            if not (0.0 <= b.lo <= b.hi < 1.0):
                raise SpeedupError(f"{where}: class {i} bin {j}: need 0 <= lo <= hi < 1 (fractions), got [{b.lo}, {b.hi}]")
            if not b.p >= 0.0:
                raise SpeedupError(f"{where}: class {i} bin {j}: probability must be >= 0, got {b.p}")
        total = sum(b.p for b in c.bins)
        if abs(total - 1.0) > 1e-6:
            raise SpeedupError(f"{where}: class {i}: bin probabilities sum to {total}, not 1")
        spans.append((c.min_nodes, np.inf if c.max_nodes is None else c.max_nodes, i))
    spans.sort()
    for (_, hi_a, a), (lo_b, _, b) in zip(spans, spans[1:]):
        if lo_b <= hi_a:
            raise SpeedupError(f"{where}: size classes {a} and {b} overlap")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpeedupError(f"{what} must be a number, got {value!r}")
    return float(value)


def from_config(cfg: Mapping[str, Any]) -> SpeedupParams:
    """Scenario from a config mapping (the content of ``conf/speedup/NAME.yaml``).

    Keys: ``name``, ``cap`` (default 512), ``classes``: a list of ``{min_nodes, max_nodes,
    bins: [{lo, hi, p}]}``; ``p`` is optional (all bins of a class omit it: uniform).
    """
    name = str(cfg.get("name", "?"))
    classes = []
    for i, c in enumerate(cfg.get("classes") or ()):
        where = f"speedup scenario {name!r}: class {i}"
        bins_cfg: Sequence[Mapping[str, Any]] = c.get("bins") or ()
        given = [b.get("p") is not None for b in bins_cfg]
        if any(given) and not all(given):
            raise SpeedupError(f"{where}: give p for every bin or for none")
        bins = tuple(
            Bin(
                lo=_number(b.get("lo"), f"{where}: lo"),
                hi=_number(b.get("hi"), f"{where}: hi"),
                p=_number(b["p"], f"{where}: p") if all(given) else 1.0 / len(bins_cfg),
            )
            for b in bins_cfg
        )
        max_nodes = c.get("max_nodes")
        classes.append(
            SizeClass(
                min_nodes=int(_number(c.get("min_nodes", 0), f"{where}: min_nodes")),
                max_nodes=None if max_nodes is None else int(_number(max_nodes, f"{where}: max_nodes")),
                bins=bins,
            )
        )
    cap = cfg.get("cap", DEFAULT_CAP)
    return SpeedupParams(name=name, classes=tuple(classes), cap=cap)


def draws_nothing(params: SpeedupParams) -> bool:
    """Whether every job's run time under ``params`` is the same in every draw: only the choice
    of a bin is random (a bin's reduction is a function of the job's size), so a scenario none
    of whose size classes has two bins of positive probability (``none``, ``x5``, ...) draws
    nothing."""
    return all(sum(b.p > 0 for b in c.bins) <= 1 for c in params.classes)


def conf_dir() -> Path:
    """``conf/speedup`` of this repository (:func:`fattorus.paths.conf_dir`)."""
    return paths.conf_dir("speedup")


def names() -> list[str]:
    """Scenario names available in ``conf/speedup``."""
    return sorted(p.stem for p in conf_dir().glob("*.yaml"))


def load(name: str) -> SpeedupParams:
    """The scenario ``conf/speedup/NAME.yaml`` (``none``, ``x5``, ``x10``, ``x20``, ``v1``, ``v2``, ...)."""
    from omegaconf import OmegaConf  # local: only needed to read files

    path = conf_dir() / f"{name}.yaml"
    if not path.is_file():
        raise SpeedupError(f"unknown speedup scenario {name!r} (no {path}); available: {', '.join(names())}")
    cfg = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert isinstance(cfg, dict)
    return from_config(cfg)


class _Tables(NamedTuple):
    """A scenario as padded arrays: C classes x B bins (padding bins have zero probability)."""

    cls_min: np.ndarray  # (C,) int
    cls_max: np.ndarray  # (C,) int, int32 max for unbounded
    lo: np.ndarray  # (C, B)
    hi: np.ndarray  # (C, B)
    cum: np.ndarray  # (C, B) cumulative probability, exactly 1 from the last real bin on


def _tables(params: SpeedupParams, dtype: Any = np.float32) -> _Tables:
    n_cls = len(params.classes)
    width = max(len(c.bins) for c in params.classes)
    lo = np.zeros((n_cls, width), dtype)
    hi = np.zeros((n_cls, width), dtype)
    cum = np.ones((n_cls, width), np.float64)
    for i, c in enumerate(params.classes):
        p = np.array([b.p for b in c.bins]) / sum(b.p for b in c.bins)
        lo[i, : len(c.bins)] = [b.lo for b in c.bins]
        hi[i, : len(c.bins)] = [b.hi for b in c.bins]
        cum[i, : len(c.bins)] = np.cumsum(p)
        # Rounding must not leave a sliver of probability for the padding bins.
        cum[i, len(c.bins) - 1 :] = 1.0
    big = np.iinfo(np.int32).max
    return _Tables(
        cls_min=np.array([c.min_nodes for c in params.classes], np.int32),
        cls_max=np.array([big if c.max_nodes is None else c.max_nodes for c in params.classes], np.int32),
        lo=lo,
        hi=hi,
        cum=cum.astype(np.float32),
    )


@lazy_jit(static_argnums=0)
def draw_bins(params: SpeedupParams, key: jax.Array, nodes: jax.Array) -> jax.Array:
    """Each job's drawn bin as a flat index ``class * B + bin`` into :func:`bin_table`; -1: no class.

    Args:
      params: the scenario (static).
      key: a ``jax.random`` key; one uniform draw per job picks its bin.
      nodes: ``(n,)`` integer node counts.

    Returns:
      ``(n,)`` int32.
    """
    import jax
    import jax.numpy as jnp

    nodes = jnp.asarray(nodes)
    if not params.classes:
        return jnp.full(nodes.shape, -1, jnp.int32)
    return _bins(_tables(params), jax.random.uniform(key, nodes.shape), nodes, jnp)


def _bins(t: _Tables, u: Any, nodes: Any, xp: Any) -> Any:
    """Each job's bin (``class * B + bin``, -1: no class) from its float32 uniform draw ``u``,
    in the array module ``xp`` (``jax.numpy`` traced, or NumPy on the host: the same rule)."""
    n = nodes.astype(xp.int32)
    member = (n[:, None] >= t.cls_min) & (n[:, None] <= t.cls_max)  # (n, C); classes are disjoint
    cls = xp.argmax(member, axis=1)
    # Bin index = how many cumulative edges (all but the last) the draw has passed.
    b = xp.sum(u[:, None] >= xp.asarray(t.cum)[cls, :-1], axis=1)
    return xp.where(member.any(axis=1), cls * t.lo.shape[1] + b, -1).astype(xp.int32)


def bin_table(params: SpeedupParams) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``(lo, hi)`` float64 arrays indexed by :func:`draw_bins` (``class * B + bin``)."""
    if not params.classes:
        return np.zeros(0), np.zeros(0)
    t = _tables(params, np.float64)
    return t.lo.ravel(), t.hi.ravel()


def _growth(nodes: Any, cap: int, xp: Any) -> Any:
    """``min(N, cap) / cap``: how far into its bin a job of ``N`` nodes is."""
    return xp.minimum(nodes, cap) / cap


@lazy_jit(static_argnums=0)
def factors(params: SpeedupParams, key: jax.Array, nodes: jax.Array) -> jax.Array:
    """Runtime multipliers ``1 - reduction``, one per job, in JAX's default float.

    Args:
      params: the scenario (static).
      key: a ``jax.random`` key.
      nodes: ``(n,)`` integer node counts.

    Returns:
      ``(n,)`` factors in ``(0, 1]``; 1 for jobs in no size class.
    """
    import jax.numpy as jnp

    idx = draw_bins(params, key, nodes)
    if not params.classes:
        return jnp.ones(idx.shape, jnp.result_type(float))
    lo, hi = (jnp.asarray(a, jnp.result_type(float)) for a in bin_table(params))
    safe = jnp.maximum(idx, 0)
    growth = _growth(jnp.asarray(nodes).astype(lo.dtype), params.cap, jnp)
    reduction = lo[safe] + (hi[safe] - lo[safe]) * growth
    return jnp.where(idx >= 0, 1.0 - reduction, 1.0)


def draw_bins_host(params: SpeedupParams, key: np.ndarray, nodes: Any) -> np.ndarray:
    """:func:`draw_bins` on the host without JAX: the same uniforms
    (:func:`fattorus.kernels.threefry.uniform`, JAX's float32 bits) against the same float32
    cumulative table, so the same bins. ``key``: a ``(2,)`` uint32 threefry key."""
    from fattorus.kernels import threefry  # numba, loaded on first need

    nodes = np.asarray(nodes)
    if not params.classes:
        return np.full(nodes.shape, -1, np.int32)
    return _bins(_tables(params), threefry.uniform(key, nodes.shape), nodes, np)


def factors64(params: SpeedupParams, key: Any, nodes: Any) -> np.ndarray:
    """:func:`factors` with the same draws, the arithmetic in float64 NumPy.

    For the replay, whose runtimes are float64 seconds: ``x10`` then gives exactly
    ``0.9 * runtime`` rather than its float32 rounding. ``key``: a ``jax.random`` key, or a
    NumPy ``(2,)`` uint32 threefry key, drawn on the host (:func:`draw_bins_host`: the same
    bins, and a run that needs no other JAX work never loads it).
    """
    nodes_np = np.asarray(nodes)
    if isinstance(key, np.ndarray):
        idx = draw_bins_host(params, key, nodes_np)
    else:
        idx = np.asarray(draw_bins(params, key, nodes_np))
    lo, hi = bin_table(params)
    if lo.size == 0:
        return np.ones(idx.shape)
    safe = np.maximum(idx, 0)
    reduction = lo[safe] + (hi[safe] - lo[safe]) * _growth(nodes_np.astype(np.float64), params.cap, np)
    return np.where(idx >= 0, 1.0 - reduction, 1.0)


@lazy_jit(static_argnums=0)
def apply(params: SpeedupParams, key: jax.Array, nodes: jax.Array, runtimes: jax.Array) -> jax.Array:
    """Runtimes after the scenario: ``runtimes * (1 - reduction)``, one bin draw per job.

    Args:
      params: the scenario (static; hashable).
      key: a ``jax.random`` key.
      nodes: ``(n,)`` integer node counts.
      runtimes: ``(n,)`` runtimes in seconds (computed in JAX's default float: float32 unless
        ``jax_enable_x64``; exact for whole seconds below 2**24 s).

    Returns:
      ``(n,)`` new runtimes, same units.
    """
    import jax.numpy as jnp

    return jnp.asarray(runtimes) * factors(params, key, nodes)


@lazy_jit(static_argnums=0)
def batch(params: SpeedupParams, keys: jax.Array, nodes: jax.Array, runtimes: jax.Array) -> jax.Array:
    """``(S, n)`` runtimes, one row per key: ``S`` independent samples of the scenario.

    Row ``s`` equals ``apply(params, keys[s], nodes, runtimes)``.
    """
    import jax

    return jax.vmap(lambda k: apply(params, k, nodes, runtimes))(keys)


__all__ = [
    "DEFAULT_CAP",
    "Bin",
    "SizeClass",
    "SpeedupError",
    "SpeedupParams",
    "apply",
    "batch",
    "bin_table",
    "draw_bins",
    "factors",
    "factors64",
    "from_config",
    "load",
    "names",
]
