"""Simulated distributed optimisers: parameter server, IAG, error feedback, importance sampling, decentralized.

What a method is (:mod:`simcomm.optim._algebra`): a composition of small pure ``(init, update)``
transformations (:class:`Transform`, :func:`chain`; the blocks: gradient oracles, :func:`compress`,
:func:`error_feedback`, :func:`aggregate`, :func:`downlink`, :func:`momentum`, :func:`delayed`,
:func:`clocked`, :func:`iag_memory`, :func:`scale_by_lr`), made a :class:`Method` by :func:`descend`
(:math:`x + u`) or :func:`assign` (the chain's output is the next iterate: the decentralized methods) and
stepped by the one loop :func:`run`. A model trained on data (:class:`ModelProblem`) has its own blocks
(:func:`minibatch_gradients`, :func:`worker_feedback`; :mod:`simcomm.optim._blocks_nn`) and watches
(:class:`EFWatch`, :class:`ImportanceWatch`). Named methods live in the registry :data:`METHODS`
(:func:`method`, :func:`get_method`, :func:`build_method`; one file each in :mod:`simcomm.optim.methods`).

Decentralized methods: DSGD / DmSGD, gradient tracking, exact diffusion, push-sum SGD and CHOCO-SGD
(family ``"nodes"``), push-sum, CHOCO-Gossip and unreliable gossip (``"consensus"``): one gradient oracle
of the nodes, one watch (:mod:`simcomm.optim._watch_nodes`), each method carrying the watch and start
:func:`run` uses.

Every compressed optimiser takes a :class:`simcomm.compress.Compressor` (e.g. ``QSGD(4)``, ``TopK(k)``),
and every optimiser returns one record type, :class:`Trace`.
DSGD's random streams and checks (``problem_rng``, ``node_noise_rng``, ``resolve_topology``) are no part of
the public surface: :mod:`simcomm.mpi` alone takes them from the private module, so a rank draws what the
simulator draws (the one allowed exception in ``tests/test_layout.py``).
"""

from simcomm.optim._algebra import Ctx, Method, Transform, assign, chain, descend, stateless
from simcomm.optim._async import (
    DELAY_MODELS,
    async_compressed_gd,
    clock_schedules,
    largest_stable_step,
    stable_step_bracket,
)
from simcomm.optim._blocks import (
    aggregate,
    clocked,
    compress,
    delayed,
    downlink,
    error_feedback,
    full_gradient,
    iag_memory,
    local_gradients,
    momentum,
    scale_by_lr,
)
from simcomm.optim._blocks_decay import decayed_feedback
from simcomm.optim._blocks_dsgd import atc_momentum
from simcomm.optim._blocks_nn import ModelProblem, minibatch_gradients, worker_feedback
from simcomm.optim._choco import (
    ChocoState,
    choco_delta,
    choco_gamma,
    choco_init,
    choco_scale,
    choco_update,
    run_choco_gossip,
    run_choco_sgd,
)
from simcomm.optim._decentralized import (
    NOISES,
    DSGDState,
    check_hyper,
    dsgd_init,
    dsgd_update,
    messages_per_step,
    run_dsgd,
)
from simcomm.optim._ef_sgd import EFState, EFStepInfo, ef_init, ef_sgd, ef_update
from simcomm.optim._iag import IAG_ORDERS, compressed_iag
from simcomm.optim._importance import BYTES_PER_FLOAT, PROPOSALS, bytes_per_example, importance_sgd
from simcomm.optim._loop import run
from simcomm.optim._registry import ACCELERATIONS, METHODS, MethodInfo, accelerate, build_method, get_method, method
from simcomm.optim._schedules import EF_SCHEDULES, SCHEDULES, ef_learning_rate, step_size
from simcomm.optim._server import compressed_gd
from simcomm.optim._torch_problem import TorchProblem
from simcomm.optim._trace import Trace
from simcomm.optim._tracking import (
    DIGRAPHS,
    TRACKER_STARTS,
    TRACKING_METHODS,
    EDState,
    GTState,
    PushSumState,
    ed_init,
    ed_update,
    gt_init,
    gt_update,
    pushsum_init,
    pushsum_update,
    run_pushsum,
    run_pushsum_sgd,
    run_tracking,
    uneven_digraph,
)
from simcomm.optim._unreliable import run_unreliable_gossip
from simcomm.optim._watch_nn import EFWatch, ImportanceWatch

__all__ = [
    "accelerate",
    "ACCELERATIONS",
    "aggregate",
    "assign",
    "build_method",
    "chain",
    "clocked",
    "compress",
    "Ctx",
    "delayed",
    "descend",
    "downlink",
    "decayed_feedback",
    "error_feedback",
    "full_gradient",
    "get_method",
    "iag_memory",
    "Method",
    "method",
    "MethodInfo",
    "METHODS",
    "momentum",
    "minibatch_gradients",
    "ModelProblem",
    "EFWatch",
    "ImportanceWatch",
    "worker_feedback",
    "run",
    "scale_by_lr",
    "stateless",
    "Transform",
    "local_gradients",
    "choco_delta",
    "choco_gamma",
    "choco_scale",
    "choco_init",
    "choco_update",
    "ChocoState",
    "async_compressed_gd",
    "clock_schedules",
    "bytes_per_example",
    "compressed_gd",
    "compressed_iag",
    "DELAY_MODELS",
    "DIGRAPHS",
    "dsgd_init",
    "atc_momentum",
    "check_hyper",
    "dsgd_update",
    "DSGDState",
    "ef_init",
    "ef_learning_rate",
    "EF_SCHEDULES",
    "ef_sgd",
    "ef_update",
    "EFState",
    "EFStepInfo",
    "ed_init",
    "ed_update",
    "EDState",
    "gt_init",
    "gt_update",
    "GTState",
    "IAG_ORDERS",
    "importance_sgd",
    "largest_stable_step",
    "stable_step_bracket",
    "NOISES",
    "BYTES_PER_FLOAT",
    "messages_per_step",
    "PROPOSALS",
    "pushsum_init",
    "pushsum_update",
    "PushSumState",
    "run_choco_gossip",
    "run_choco_sgd",
    "run_dsgd",
    "run_pushsum",
    "run_pushsum_sgd",
    "run_tracking",
    "run_unreliable_gossip",
    "SCHEDULES",
    "step_size",
    "Trace",
    "TRACKER_STARTS",
    "TRACKING_METHODS",
    "uneven_digraph",
    "TorchProblem",
]

import simcomm.optim.methods  # noqa: E402,F401  (registers the named methods)
