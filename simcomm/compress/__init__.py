"""Compressors: sparsifiers, quantizers, casts, their message cost and wire form, and error feedback.

Each compressor is a small frozen dataclass with its settings bound (:class:`TopK`, :class:`RandK`,
:class:`RTopK`, :class:`QSGD`, :class:`Ternary`, :class:`StochasticRound`, :class:`Bernoulli`,
:class:`Identity`, ...), registered by name in :data:`COMPRESSORS` (:func:`register_compressor`);
its ``apply`` calls the array function of the same name (:func:`top_k`, :func:`rand_k`,
:func:`rtop_k`, :func:`qsgd`, :func:`ternary`, ...), its ``to_message`` builds the wire-form
:class:`Message`. :class:`ErrorFeedback` wraps any of them; :func:`compressor_from_name` builds one
from a spec's name and settings.
"""

from simcomm.compress._compressor import (
    COMPRESSORS,
    QSGD,
    VALUE_DTYPES,
    Bernoulli,
    Compressor,
    Identity,
    RandK,
    RTopK,
    Setting,
    Sparsifier,
    StochasticRound,
    Ternary,
    TopK,
    compressor_from_label,
    compressor_from_name,
    compressor_from_settings,
    compressor_names,
    register_compressor,
    setting,
)
from simcomm.compress._elementwise import BF16, FP16, BlockInt8, MinMaxUint8, Natural, RandKReplace, ScaledSign, Sign
from simcomm.compress._feedback import (
    EF21,
    EF21State,
    ErrorFeedback,
    ErrorFeedbackLR,
    ErrorFeedbackLRState,
    ErrorFeedbackState,
)
from simcomm.compress._quantize import bernoulli_sparsify, qsgd, stochastic_round, ternary
from simcomm.compress._sparsify import index_bits, message_bits, rand_k, rtop_k, top_k, top_k_indices
from simcomm.compress._wire import MESSAGE_KINDS, Message, to_bfloat16

__all__ = [
    "Bernoulli",
    "BF16",
    "BlockInt8",
    "FP16",
    "MinMaxUint8",
    "Natural",
    "RandKReplace",
    "ScaledSign",
    "Sign",
    "bernoulli_sparsify",
    "Compressor",
    "compressor_from_label",
    "compressor_from_name",
    "compressor_from_settings",
    "compressor_names",
    "COMPRESSORS",
    "EF21",
    "EF21State",
    "ErrorFeedback",
    "ErrorFeedbackLR",
    "ErrorFeedbackLRState",
    "ErrorFeedbackState",
    "Identity",
    "index_bits",
    "Message",
    "MESSAGE_KINDS",
    "message_bits",
    "qsgd",
    "QSGD",
    "rand_k",
    "RandK",
    "register_compressor",
    "rtop_k",
    "RTopK",
    "Setting",
    "setting",
    "Sparsifier",
    "stochastic_round",
    "StochasticRound",
    "ternary",
    "Ternary",
    "to_bfloat16",
    "top_k",
    "top_k_indices",
    "TopK",
    "VALUE_DTYPES",
]
