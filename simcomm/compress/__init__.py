"""Compressors: sparsifiers, quantizers, casts, their message cost and wire form, and error feedback.

Each compressor is a small frozen dataclass with its settings bound (:class:`TopK`, :class:`RandK`,
:class:`RTopK`, :class:`QSGD`, :class:`Ternary`, :class:`StochasticRound`, :class:`Bernoulli`,
:class:`Identity`, :class:`PowerSGD`, :class:`NaturalDithering`, :class:`Compose`, ...), registered by name in
:data:`COMPRESSORS` (:func:`register_compressor`);
its ``apply`` calls the array function of the same name (:func:`top_k`, :func:`rand_k`,
:func:`rtop_k`, :func:`qsgd`, :func:`ternary`, ...), its ``to_message`` builds the wire-form
:class:`Message`. The error-feedback variants (:class:`ErrorFeedback`, :class:`EF21`, :class:`EF21SGDM`,
:class:`DIANA`, :class:`MARINA`, ...; registry :data:`FEEDBACKS`) wrap any of them; the aggregators
(:data:`AGGREGATORS`: the mean, the majority vote of signs) combine the workers' messages;
:func:`compressor_from_name` builds one from a spec's name and settings.
"""

from simcomm.compress._aggregate import AGGREGATORS, MajorityVote, Mean, aggregator_from_name, majority_vote
from simcomm.compress._chunked import DCTTopK, TopKQuant
from simcomm.compress._compose import Compose, Scaling
from simcomm.compress._compressor import (
    COMPRESSORS,
    QSGD,
    VALUE_DTYPES,
    Bernoulli,
    Compressor,
    Identity,
    RandK,
    RTopK,
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
from simcomm.compress._dither import NaturalDithering
from simcomm.compress._elementwise import BF16, FP16, BlockInt8, MinMaxUint8, Natural, RandKReplace, ScaledSign, Sign
from simcomm.compress._feedback import (
    DIANA,
    EF21,
    EF21SGDM,
    FEEDBACKS,
    MARINA,
    DIANAState,
    EF21SGDMState,
    EF21State,
    ErrorFeedback,
    ErrorFeedbackLR,
    ErrorFeedbackLRState,
    ErrorFeedbackState,
    MARINAState,
    feedback_from_name,
    register_feedback,
)
from simcomm.compress._lowrank import PowerSGD, PowerSGDState
from simcomm.compress._quantize import bernoulli_sparsify, qsgd, stochastic_round, ternary
from simcomm.compress._sparsify import index_bits, message_bits, rand_k, rtop_k, top_k, top_k_indices
from simcomm.compress._wire import MESSAGE_KINDS, Message, to_bfloat16

__all__ = [
    "AGGREGATORS",
    "aggregator_from_name",
    "Compose",
    "DCTTopK",
    "TopKQuant",
    "DIANA",
    "DIANAState",
    "EF21SGDM",
    "EF21SGDMState",
    "FEEDBACKS",
    "feedback_from_name",
    "MajorityVote",
    "majority_vote",
    "MARINA",
    "MARINAState",
    "Mean",
    "NaturalDithering",
    "PowerSGD",
    "PowerSGDState",
    "Scaling",
    "register_feedback",
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
