"""fattorus: topology-aware job allocation on HPC interconnects.

One concept per module:

* machine and kernels: :mod:`fattorus.fattree` (model, job types, hops), :mod:`fattorus.aph`
  (APH kernels), :mod:`fattorus.montecarlo` (random allocations), :mod:`fattorus.routing`,
  :mod:`fattorus.patterns`, :mod:`fattorus.linkload` (D-mod-k routes, traffic, link loads);
* workloads: :mod:`fattorus.workload` (SWF and sacct readers, transforms),
  :mod:`fattorus.synthetic`, :mod:`fattorus.speedup` (x %, V1, V2 scenarios);
* scheduling: :mod:`fattorus.state` (machine state), :mod:`fattorus.policy` (``to``,
  ``to_random``, ``ta``, ``tree_bestfit``), :mod:`fattorus.replay` (FCFS / EASY replay:
  ``replay.replay(jobs, ft, policy, sched)``), :mod:`fattorus.metrics`;
* studies: :mod:`fattorus.sweep` (the Hydra app), :mod:`fattorus.study`,
  :mod:`fattorus.report`, :mod:`fattorus.interference`, :mod:`fattorus.logger`,
  :mod:`fattorus.outputs`, :mod:`fattorus.bench`.
"""

__version__ = "0.1.0"
