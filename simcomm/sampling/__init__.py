"""Importance sampling of training examples: proposals, minibatch draws, variance, stale worker scores."""

from simcomm.sampling._proposals import (
    Minibatch,
    ideal_proposal,
    importance_weights,
    norm_proposal,
    sample_minibatch,
    uniform_proposal,
)
from simcomm.sampling._stale import Staleness, StaleScoresState, stale_init, stale_update, staleness
from simcomm.sampling._variance import empirical_trace_cov, trace_cov, trace_cov_ideal

__all__ = [
    "Minibatch", "ideal_proposal", "importance_weights", "norm_proposal", "sample_minibatch", "uniform_proposal",
    "Staleness", "StaleScoresState", "stale_init", "stale_update", "staleness",
    "empirical_trace_cov", "trace_cov", "trace_cov_ideal",
]
