"""Benchmarks run by ``make bench`` (``python -m fattorus.bench``), not by the test suite.

Each section is a module with ``run(quick=False) -> list[dict]`` (one dict per table row):

* :mod:`fattorus.bench.kernels`: the closed-form APH kernel (``aph.hop_sums``), the ``n x n``
  hop-matrix kernel (``aph.hop_matrix``) and the random-allocation kernel
  (``montecarlo.random_allocations``) on Cab, Pinot, ft44, torus8 and Blue Waters, against
  plain NumPy references timed in the same run;
* :mod:`fattorus.bench.replay`: jobs per second of the EASY replay engine (``replay.simulate``)
  under ``to`` and ``ta`` on the LLNL-Atlas trace scaled to Cab and Pinot, against the
  count-based pure-Python EASY of :mod:`fattorus.sched.reference`;
* :mod:`fattorus.bench.network`: D-mod-k routes and link loads (JAX), the interference kernel
  (``linkload.interference``) and the communication-pattern generators (``patterns.make``:
  4D stencil, unstructured mesh) against NumPy;
* :mod:`fattorus.bench.batched`: the batched JAX replay engine (``trials=N``) against the NumPy engine;
* :mod:`fattorus.bench.torus`: the torus hop-sum kernel against NumPy pairwise sums, and the
  ``prism`` EASY replay beside ``first_fit`` in the same run;
* :mod:`fattorus.bench.flow`: max-min solves of the flow model against NumPy, and the
  ``speedup=model`` replays beside the plain ones;
* :mod:`fattorus.bench.dragonfly`: the adaptive steady state on the Edison dragonfly;
* :mod:`fattorus.bench.qos`: one iteration of the QoS paper's Algorithm 1 on its large system.

Ratio columns: ``ratio``/``speedup`` = reference time / ours (bigger is faster);
``vs_to``/``vs_first_fit`` = ours / the other policy's (bigger is slower), as the issues
state their targets.

Conventions: compile seconds are reported apart from run seconds; run seconds are medians of
repeated timed calls after warm-up (JAX results wait on ``block_until_ready``); every section
measures its simple reference in the same process and reports the ratio; every section
checks that kernel and reference agree and raises if they do not. Timings on a shared
machine are noisy: the report records CPU count and load average beside the tables.

:mod:`fattorus.bench.__main__` prints one aligned table per section and writes them, with the
raw rows as JSON, to ``results/bench/bench-<UTC timestamp>.{md,json}`` and
``results/bench/latest.{md,json}``.
"""
