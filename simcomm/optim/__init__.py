"""Simulated distributed optimisers (parameter server, IAG, error feedback, importance sampling, decentralized)."""

from simcomm.optim._importance import BYTES_PER_FLOAT, ISTrace, PROPOSALS, bytes_per_example, importance_sgd  # noqa: F401

__all__ = ["BYTES_PER_FLOAT", "ISTrace", "PROPOSALS", "bytes_per_example", "importance_sgd"]
