"""fattorus: topology-aware job allocation on HPC interconnects.

Modules, one concept each: :mod:`fattorus.fattree` (machine model), :mod:`fattorus.aph`
(APH kernels), :mod:`fattorus.montecarlo` (random allocations).
"""

__version__ = "0.1.0"
