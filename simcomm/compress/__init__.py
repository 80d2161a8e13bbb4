"""Compressors: sparsifiers, unbiased quantizers, their message cost, and error feedback.

Each compressor is a small frozen dataclass with its settings bound (:class:`TopK`, :class:`RandK`,
:class:`RTopK`, :class:`QSGD`, :class:`Ternary`, :class:`StochasticRound`, :class:`Bernoulli`,
:class:`Identity`); its ``apply`` calls the array function of the same name (:func:`top_k`,
:func:`rand_k`, :func:`rtop_k`, :func:`qsgd`, :func:`ternary`, ...). :class:`ErrorFeedback` wraps any
of them; :func:`compressor_from_name` builds one from a spec's name and settings.
"""

from simcomm.compress._compressor import (
    COMPRESSORS,
    QSGD,
    Bernoulli,
    Compressor,
    Identity,
    RandK,
    RTopK,
    Sparsifier,
    StochasticRound,
    Ternary,
    TopK,
    compressor_from_name,
)
from simcomm.compress._feedback import ErrorFeedback, ErrorFeedbackState
from simcomm.compress._quantize import bernoulli_sparsify, qsgd, stochastic_round, ternary
from simcomm.compress._sparsify import index_bits, message_bits, rand_k, rtop_k, top_k, top_k_indices

__all__ = [
    "Bernoulli",
    "bernoulli_sparsify",
    "Compressor",
    "compressor_from_name",
    "COMPRESSORS",
    "ErrorFeedback",
    "ErrorFeedbackState",
    "Identity",
    "index_bits",
    "message_bits",
    "qsgd",
    "QSGD",
    "rand_k",
    "RandK",
    "rtop_k",
    "RTopK",
    "Sparsifier",
    "stochastic_round",
    "StochasticRound",
    "ternary",
    "Ternary",
    "top_k",
    "top_k_indices",
    "TopK",
]
