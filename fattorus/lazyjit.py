"""``jax.jit`` built at a kernel's first use, so that importing its module does not import JAX.

Why: ``@partial(jax.jit, ...)`` at module level imports JAX (~0.6 s) as soon as anything
imports the module — the speedup scenarios, the APH kernels — even in a command that then
stops at a configuration error, or never computes with JAX. :func:`lazy_jit` takes the same
options as :func:`jax.jit`; the jitted function is made once, at the first call (or the first
use of one of its attributes: ``.lower``, ``.trace``, ...), and every call after that goes to
it, with JAX's own cache of compilations. What a kernel computes and when it compiles are
unchanged.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class LazyJit:
    """``jax.jit(fn, **options)``, made at first use; callable as the jitted function is, and
    its attributes (``lower``, ``trace``, ``eval_shape``, ...) are the jitted function's."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self._fn = fn
        self._options = options
        self._jitted: Callable[..., Any] | None = None
        self._lock = threading.Lock()  # one jitted function, also when threads call first together
        functools.update_wrapper(self, fn)  # name, docstring, signature: the kernel's own

    def jitted(self) -> Callable[..., Any]:
        """The jitted function (imports JAX and makes it on the first call)."""
        if self._jitted is None:
            with self._lock:
                if self._jitted is None:
                    import jax

                    self._jitted = jax.jit(self._fn, **self._options)
        return self._jitted

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.jitted()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only attributes this object lacks get here. Its own (read before __init__ set them,
        # as copy and pickle do) must not make the jitted function.
        if name in ("_fn", "_options", "_jitted", "_lock") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.jitted(), name)

    def __repr__(self) -> str:
        return f"<lazy jax.jit of {self._fn.__module__}.{self._fn.__qualname__}>"


def lazy_jit(**options: Any) -> Callable[[Callable[..., Any]], LazyJit]:
    """Decorator: ``@lazy_jit(static_argnums=0)`` is ``@partial(jax.jit, static_argnums=0)``
    with the jitted function made at first use (:class:`LazyJit`)."""

    def wrap(fn: Callable[..., Any]) -> LazyJit:
        return LazyJit(fn, options)

    return wrap


__all__ = ["LazyJit", "lazy_jit"]
