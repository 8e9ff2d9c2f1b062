"""Fat-tree allocation policies: topology-aware (Algorithm 1, `ta`) and Slurm tree best fit."""

from fattorus.sched.policy.fattree.ta import ORDERS, TIES, TAParams, TopologyAware
from fattorus.sched.policy.fattree.tree_bestfit import TreeBestFit

__all__ = ["ORDERS", "TIES", "TAParams", "TopologyAware", "TreeBestFit"]
