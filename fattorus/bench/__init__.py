"""Benchmarks run by ``make bench`` (``python -m fattorus.bench``), not by the test suite.

Each section is a module with ``run(quick=False) -> list[dict]`` (one dict per table row):

* :mod:`fattorus.bench.kernels`: the closed-form APH kernel (``aph.hop_sums``) and the
  random-allocation kernel (``montecarlo.random_allocations``) on Cab, Pinot and ft44, against
  plain NumPy references timed in the same run;
* :mod:`fattorus.bench.replay`: jobs per second of the EASY replay engine (``replay.simulate``)
  under ``to`` and ``ta`` on the LLNL-Atlas trace scaled to Cab and Pinot, against the
  count-based pure-Python EASY of :mod:`fattorus.sched.reference`;
* ``fattorus.bench.network``, where it exists (run only if it exposes ``run``).

Conventions: compile seconds are reported apart from run seconds; run seconds are medians of
repeated timed calls after warm-up (JAX results wait on ``block_until_ready``); every section
measures its simple reference in the same process and reports the ratio; every section
checks that kernel and reference agree and raises if they do not. Timings on a shared
machine are noisy: the report records CPU count and load average beside the tables.

:mod:`fattorus.bench.__main__` prints one aligned table per section and writes them, with the
raw rows as JSON, to ``results/bench/bench-<UTC timestamp>.{md,json}`` and
``results/bench/latest.{md,json}``.
"""
