"""Network: real encoded payloads of every compressor, and a network time model (alpha-beta, NICs, stragglers).

Examples
--------
>>> import numpy as np
>>> from simcomm.network import message, encode, decode
>>> m = message("top_k", np.arange(10.0), k=3)
>>> decode(encode(m, "gamma")) == m
True
"""

from simcomm.network._payload import (
    CODINGS,
    COMPRESSORS,
    HEADER_BYTES,
    VALUE_DTYPES,
    Message,
    decode,
    encode,
    formula_bits,
    message,
    payload_sections,
    to_bfloat16,
)

__all__ = [
    "CODINGS",
    "COMPRESSORS",
    "HEADER_BYTES",
    "VALUE_DTYPES",
    "Message",
    "decode",
    "encode",
    "formula_bits",
    "message",
    "payload_sections",
    "to_bfloat16",
]
