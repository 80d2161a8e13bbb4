"""Distributed mean estimation: n nodes, a k-bit message each, a server estimator (rtopk.md F1 [N])."""

from simcomm.estimate._mean import SCHEMES, estimate_mean, index_budget, mean_estimation_mse

__all__ = ["SCHEMES", "estimate_mean", "index_budget", "mean_estimation_mse"]
