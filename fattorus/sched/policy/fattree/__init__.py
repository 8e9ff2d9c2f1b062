"""Fat-tree allocation policies: topology-aware (Algorithm 1, `ta`) and Slurm tree best fit."""

from fattorus.sched.policy.fattree.ta import ORDERS, RELAX_MAX_S, RELAX_MIN_S, TIES, TAParams, TopologyAware
from fattorus.sched.policy.fattree.tree_bestfit import TreeBestFit

__all__ = ["ORDERS", "RELAX_MAX_S", "RELAX_MIN_S", "TIES", "TAParams", "TopologyAware", "TreeBestFit"]
