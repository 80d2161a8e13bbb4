"""Simulated distributed optimisers (parameter server, IAG, error feedback, importance sampling, decentralized)."""

from simcomm.optim._async import (
    DELAY_MODELS,
    async_compressed_gd,
    largest_stable_step,
)
from simcomm.optim._decentralized import (
    SCHEDULES,
    DSGDState,
    DSGDTrace,
    dsgd_init,
    dsgd_update,
    messages_per_step,
    node_noise_rng,
    problem_rng,
    resolve_topology,
    run_dsgd,
    step_size,
)
from simcomm.optim._ef_sgd import (
    EF_COMPRESSORS,
    EF_SCHEDULES,
    EFState,
    EFStepInfo,
    EFTrace,
    ef_compress_rows,
    ef_init,
    ef_learning_rate,
    ef_sgd,
    ef_update,
    worker_gradients,
)
from simcomm.optim._iag import (
    IAG_ORDERS,
    compressed_iag,
)
from simcomm.optim._importance import (
    BYTES_PER_FLOAT,
    PROPOSALS,
    ISTrace,
    bytes_per_example,
    importance_sgd,
)
from simcomm.optim._server import (
    BLOWUP,
    Trace,
    compressed_gd,
)

__all__ = [
    "async_compressed_gd",
    "BLOWUP",
    "bytes_per_example",
    "BYTES_PER_FLOAT",
    "compressed_gd",
    "compressed_iag",
    "DELAY_MODELS",
    "dsgd_init",
    "dsgd_update",
    "DSGDState",
    "DSGDTrace",
    "ef_compress_rows",
    "EF_COMPRESSORS",
    "ef_init",
    "ef_learning_rate",
    "EF_SCHEDULES",
    "ef_sgd",
    "ef_update",
    "EFState",
    "EFStepInfo",
    "EFTrace",
    "IAG_ORDERS",
    "importance_sgd",
    "ISTrace",
    "largest_stable_step",
    "messages_per_step",
    "node_noise_rng",
    "problem_rng",
    "PROPOSALS",
    "resolve_topology",
    "run_dsgd",
    "SCHEDULES",
    "step_size",
    "Trace",
    "worker_gradients",
]
