"""fattorus: topology-aware job allocation on HPC interconnects.

Layers (imports point down; see docs/architecture.md):

* :mod:`fattorus.app` (sweep, study, tune, logger, outputs) and :mod:`fattorus.report`
  (reads run outputs only);
* :mod:`fattorus.sched` (machine state, replay engine, allocation policies) and
  :mod:`fattorus.analysis` (metrics, communication patterns, interference);
* :mod:`fattorus.kernels` (APH, random allocations, routes, link loads) and
  :mod:`fattorus.workload` (log readers, transforms, speedup scenarios, synthetic logs);
* :mod:`fattorus.topology` (the interface and one module per interconnect family).

``python -m fattorus.sweep|study|tune|interference|report`` are the command-line entry points.
"""

__version__ = "0.1.0"

import sys as _sys

if _sys.argv[:1] == ["-m"]:
    # ``python -m fattorus....`` while Python locates the module (argv[0] is "-m" then): its
    # packages' imports (Polars, JAX) come before the module's own ``on_start``, so a Ctrl-C
    # during them is one line from here (docs/decisions.md, session 24).
    from fattorus import interrupt as _interrupt

    # The module asked for, from the interpreter's own command line (python -m MODULE ...),
    # so that the line names the command as its later lines do.
    _orig = getattr(_sys, "orig_argv", [])
    _asked = next((a for m, a in zip(_orig, _orig[1:]) if m == "-m" and a.startswith("fattorus")), "fattorus")
    _interrupt.on_start(_asked.removesuffix(".__main__"))
