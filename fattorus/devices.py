"""One JAX CPU device per usable core, for work that splits over devices.

XLA's CPU backend runs one computation on one core; the compiled batched replay
(:mod:`fattorus.sched.batched`) splits its trials over the devices of the default backend, so
on a CPU it needs one device per core to use the machine (measured on these 2-core machines:
2 devices replay a batch in half the time of one). The device count can only be set before
JAX runs its first operation, so the entry points that may replay batches call
:func:`use_cpu_cores` first thing.
"""

from __future__ import annotations

import os
import sys


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def jax_on_cpu() -> bool:
    """Whether JAX computes on the CPU (its default backend): there the host solvers and
    rules compiled with numba are the faster way to the same numbers (the flow model's
    solves, a dragonfly's APH); on an accelerator the JAX kernels are."""
    import jax

    return jax.default_backend() == "cpu"


def use_cpu_cores() -> None:
    """Give JAX's CPU backend one device per usable core. Leaves things as they are when the
    user chose a device count (``XLA_FLAGS`` with ``--xla_force_host_platform_device_count``
    or ``JAX_NUM_CPU_DEVICES``) or when JAX has already run an operation (too late to change:
    the work then runs on one device, as before)."""
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "") or "JAX_NUM_CPU_DEVICES" in os.environ:
        return
    if "jax" not in sys.modules:
        # JAX reads the count from this variable as it loads: a command that stops at a
        # configuration error then never imports JAX (~0.6 s of every such error here). Its
        # child processes inherit the count, as they would choose it.
        os.environ["JAX_NUM_CPU_DEVICES"] = str(usable_cores())
        return
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", usable_cores())
    except RuntimeError:  # backends already initialised
        pass
