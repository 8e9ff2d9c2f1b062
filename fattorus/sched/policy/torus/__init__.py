"""Policies of the 3D-torus family (the torus paper): ``prism`` and ``feature``."""

from fattorus.sched.policy.torus.feature import Feature, default_features
from fattorus.sched.policy.torus.prism import Prism, PrismParams

__all__ = ["Feature", "Prism", "PrismParams", "default_features"]
