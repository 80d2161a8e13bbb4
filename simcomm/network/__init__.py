"""Network: real encoded payloads of every compressor, and a network time model (alpha-beta, NICs, stragglers).

A compressor builds its :class:`~simcomm.compress.Message`; :func:`encode` and :func:`decode` move it to bytes.

Examples
--------
>>> import numpy as np
>>> from simcomm.network import message, encode, decode
>>> m = message("top_k", np.arange(10.0), k=3)
>>> decode(encode(m, "gamma")) == m
True
"""

from simcomm.network._advise import (
    DEFAULT_CANDIDATES,
    FEEDBACK_VARIANTS,
    Advice,
    advise,
    compression_errors,
    iteration_factor,
)
from simcomm.network._calibrate import (
    DEFAULT_SIZES,
    calibrate,
    calibration_toml,
    compare_dsgd_comm,
    dsgd_comm_prediction,
)
from simcomm.network._local_time import expected_max_gamma, predict_local_times
from simcomm.network._payload import (
    CODINGS,
    HEADER_BYTES,
    VALUE_DTYPES,
    decode,
    encode,
    formula_bits,
    message,
    payload_sections,
)
from simcomm.network._predict import DEFAULT_COMPRESSORS, predict_step_times, resolve_compressor
from simcomm.network._time import (
    PATTERNS,
    Clock,
    Network,
    Straggler,
    add_time,
    allgather_time,
    async_delays,
    comm_time,
    gossip_time,
    phase_time,
    ps_time,
    ring_allreduce_time,
    spec_network_params,
    sync_step_times,
    trace_time,
)

__all__ = [
    "DEFAULT_CANDIDATES",
    "FEEDBACK_VARIANTS",
    "Advice",
    "advise",
    "compression_errors",
    "iteration_factor",
    "calibrate",
    "calibration_toml",
    "DEFAULT_SIZES",
    "DEFAULT_COMPRESSORS",
    "resolve_compressor",
    "compare_dsgd_comm",
    "dsgd_comm_prediction",
    "predict_step_times",
    "predict_local_times",
    "expected_max_gamma",
    "PATTERNS",
    "Clock",
    "Network",
    "Straggler",
    "add_time",
    "allgather_time",
    "async_delays",
    "comm_time",
    "gossip_time",
    "phase_time",
    "ps_time",
    "ring_allreduce_time",
    "spec_network_params",
    "sync_step_times",
    "trace_time",
    "CODINGS",
    "HEADER_BYTES",
    "VALUE_DTYPES",
    "decode",
    "encode",
    "formula_bits",
    "message",
    "payload_sections",
]
