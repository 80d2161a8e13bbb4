"""Simulated distributed optimisers (parameter server, IAG, error feedback, importance sampling, decentralized)."""

from simcomm.optim._importance import BYTES_PER_FLOAT, ISTrace, PROPOSALS, bytes_per_example, importance_sgd  # noqa: F401
from simcomm.optim._server import BLOWUP, Trace, compressed_gd  # noqa: F401
from simcomm.optim._async import DELAY_MODELS, async_compressed_gd, largest_stable_step  # noqa: F401
from simcomm.optim._iag import IAG_ORDERS, compressed_iag  # noqa: F401

__all__ = ["BYTES_PER_FLOAT", "ISTrace", "PROPOSALS", "bytes_per_example", "importance_sgd"]
__all__ += ["BLOWUP", "Trace", "compressed_gd", "DELAY_MODELS", "async_compressed_gd", "largest_stable_step", "IAG_ORDERS", "compressed_iag"]
from simcomm.optim._decentralized import DSGDState, DSGDTrace, SCHEDULES, dsgd_init, dsgd_update, messages_per_step, node_noise_rng, problem_rng, resolve_topology, run_dsgd, step_size  # noqa: E402,F401
__all__ += ["DSGDState", "DSGDTrace", "SCHEDULES", "dsgd_init", "dsgd_update", "messages_per_step", "node_noise_rng", "problem_rng", "resolve_topology", "run_dsgd", "step_size"]
from simcomm.optim._ef_sgd import EF_COMPRESSORS, EF_SCHEDULES, EFState, EFStepInfo, EFTrace, ef_compress_rows, ef_init, ef_learning_rate, ef_sgd, ef_update, worker_gradients  # noqa: E402,F401
__all__ += ["EF_COMPRESSORS", "EF_SCHEDULES", "EFState", "EFStepInfo", "EFTrace", "ef_compress_rows", "ef_init", "ef_learning_rate", "ef_sgd", "ef_update", "worker_gradients"]
