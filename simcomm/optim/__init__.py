"""Simulated distributed optimisers (parameter server, IAG, error feedback, importance sampling, decentralized).

Every compressed optimiser takes a :class:`simcomm.compress.Compressor` (e.g. ``QSGD(4)``, ``TopK(k)``).
Helpers that only the experiments and :mod:`simcomm.mpi` need (``problem_rng``, ``node_noise_rng``,
``resolve_topology``, ``BLOWUP``) stay importable from their private modules.
"""

from simcomm.optim._async import DELAY_MODELS, async_compressed_gd, clock_schedules, largest_stable_step
from simcomm.optim._decentralized import (
    SCHEDULES,
    DSGDState,
    DSGDTrace,
    dsgd_init,
    dsgd_update,
    messages_per_step,
    run_dsgd,
    step_size,
)
from simcomm.optim._ef_sgd import (
    EF_SCHEDULES,
    EFState,
    EFStepInfo,
    EFTrace,
    ef_init,
    ef_learning_rate,
    ef_sgd,
    ef_update,
)
from simcomm.optim._iag import IAG_ORDERS, compressed_iag
from simcomm.optim._importance import PROPOSALS, ISTrace, bytes_per_example, importance_sgd
from simcomm.optim._server import Trace, compressed_gd

__all__ = [
    "async_compressed_gd",
    "clock_schedules",
    "bytes_per_example",
    "compressed_gd",
    "compressed_iag",
    "DELAY_MODELS",
    "dsgd_init",
    "dsgd_update",
    "DSGDState",
    "DSGDTrace",
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
    "PROPOSALS",
    "run_dsgd",
    "SCHEDULES",
    "step_size",
    "Trace",
]
