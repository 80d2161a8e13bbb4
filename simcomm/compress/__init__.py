"""Compressors: sparsifiers (top-k, rand-k, rTop-k), their message cost, and error feedback."""

from simcomm.compress._feedback import (
    ErrorFeedback,
    ErrorFeedbackState,
    with_error_feedback,
)
from simcomm.compress._quantize import (
    QUANTIZERS,
    Quantizer,
    bernoulli_sparsify,
    qsgd,
    quantizer,
    stochastic_round,
    ternary,
)
from simcomm.compress._sparsify import (
    index_bits,
    message_bits,
    rand_k,
    rtop_k,
    top_k,
    top_k_indices,
)

__all__ = [
    "bernoulli_sparsify",
    "ErrorFeedback",
    "ErrorFeedbackState",
    "index_bits",
    "message_bits",
    "qsgd",
    "Quantizer",
    "quantizer",
    "QUANTIZERS",
    "rand_k",
    "rtop_k",
    "stochastic_round",
    "ternary",
    "top_k",
    "top_k_indices",
    "with_error_feedback",
]
