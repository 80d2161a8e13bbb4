r"""Real payloads: every compressor's message encoded to bytes and decoded back exactly.

A :class:`~simcomm.compress.Message` is what one node puts on the wire for one vector: the compressor's
output in its wire form (values in the value dtype, sorted indices, integer levels and a float32 scale,
or float32 side values and fixed-width codes). Each compressor builds its own
(``Compressor.to_message``: same selections, same randomness as ``apply``); :func:`message` is the
by-name front door, :func:`encode` and :func:`decode` turn any message into bytes and back, with
``decode(encode(m)) == m`` exactly, whatever compressor made it.

Layout of an encoded payload: a fixed :data:`HEADER_BYTES`-byte header (magic ``b"SC"``, version,
kind, coding, value dtype, bit width, ``d``, the count of sent entries, one float64 parameter), then
the body as byte-aligned sections in a fixed order. So the encoded size is the coding's bit count plus
the header plus at most 7 padding bits per section (:func:`payload_sections`).

Codings (:data:`CODINGS`)

* dense (``none``): the values in float32, float16 or bfloat16 (``value_dtype``; bfloat16 is the upper
  half of the float32 bits, rounded to nearest even);
* sparse (``top_k``, ``rand_k``, ``rtop_k``, ``bernoulli``): ``count`` values plus the indices as
  ``raw`` (int32 each), ``packed`` (:math:`\lceil\log_2 d\rceil` bits each), ``bitmap`` (``d`` bits),
  ``gamma`` (Elias-gamma of the sorted gaps ``i_0 + 1, i_1 - i_0, ...``), ``varint`` (LEB128 of the
  same gaps, first gap ``i_0``... plus one as for gamma), or ``auto`` = the cheaper of packed and bitmap,
  which is the encoding :func:`simcomm.compress.message_bits` counts;
* ``qsgd``: a float32 norm, then ``fixed`` (one signed level in :math:`\{-s..s\}` in
  :math:`\lceil\log_2(2s+1)\rceil` bits per coordinate, the encoding ``QSGD(s).bits`` counts) or ``elias``
  (as in the QSGD paper's code: for each non-zero level, the Elias-gamma gap to it, a sign bit and the
  Elias-gamma level; the paper uses recursive Elias coding, gamma has the same prefix-free structure);
* ``ternary``: a float32 scale, then ``trit5`` (five trits per byte, :math:`3^5 = 243`, the encoding
  ``Ternary().bits`` counts) or ``2bit`` (two bits per trit);
* ``stochastic_round``: an int32 offset (the smallest grid index), then each grid index minus the
  offset in :math:`\lceil\log_2(\text{range} + 2)\rceil` bits (``fixed``), the encoding
  ``StochasticRound(delta).bits(d, span)`` counts with ``span = range * delta``;
* ``coded`` (sign, scaled sign, natural compression, min-max uint8, block int8, PowerSGD, ...): the
  float32 side values (their number in the header's parameter), then the codes in ``width`` bits each
  (``fixed``): :math:`32\,|\mathrm{scales}| + \mathrm{width}\cdot|\mathrm{codes}|` bits.
"""

from __future__ import annotations

import struct

import numpy as np

from simcomm._errors import UserError
from simcomm.compress import MESSAGE_KINDS, VALUE_DTYPES, Compressor, Message, compressor_from_settings
from simcomm.network import _bits

__all__ = [
    "CODINGS", "HEADER_BYTES", "VALUE_DTYPES", "message", "encode", "decode", "formula_bits", "payload_sections",
]

#: codings allowed for each message kind (the first is the default; the kinds are
#: :data:`simcomm.compress.MESSAGE_KINDS`, in wire order)
CODINGS = {
    "dense": ("raw",),
    "sparse": ("auto", "raw", "packed", "bitmap", "gamma", "varint"),
    "qsgd": ("fixed", "elias"),
    "ternary": ("trit5", "2bit"),
    "sround": ("fixed",),
    "coded": ("fixed",),
}
_VALUE_BITS = {"float32": 32, "float16": 16, "bfloat16": 16}
_KINDS = tuple(CODINGS)
assert _KINDS == MESSAGE_KINDS, "CODINGS must list every message kind in wire order"
_ALL_CODINGS = ("raw", "auto", "packed", "bitmap", "gamma", "varint", "fixed", "elias", "trit5", "2bit")
_HEADER = struct.Struct("<2sBBBBBxQQd")
#: bytes of the fixed header in front of every payload
HEADER_BYTES = _HEADER.size
_MAGIC = b"SC"
_VERSION = 1


def _named(compressor, loose: dict) -> Compressor:
    """A :class:`~simcomm.compress.Compressor` object given without loose settings."""
    given = sorted(key for key, value in loose.items() if value is not None)
    if given:
        raise UserError(f"message: {compressor!r} already holds its settings; drop {', '.join(given)}= "
                        "(or pass the compressor by name with them)")
    return compressor


def message(compressor, x, *, value_dtype: str = "float32", rng=None, **settings) -> Message:
    """Run ``compressor`` on the vector ``x`` and return its wire-form :class:`~simcomm.compress.Message`.

    The selections and random draws are the compressor's own (``Compressor.to_message``):
    ``message(c, x, ..., rng=seed).dense()`` (``c.decode(m)`` for a coded message) equals the
    compressor's output on the same seed up to the value dtype (and float32 rounding of the scale).

    Parameters
    ----------
    compressor : str or simcomm.compress.Compressor
        A name of :data:`simcomm.compress.COMPRESSORS` with its settings as keywords, or a compressor
        object that holds them (``TopK(10)``, ``QSGD(4)``, ...).
    x : array_like, shape (d,)
        Finite values.
    value_dtype : {"float32", "float16", "bfloat16"}
        Dtype of dense and sparse values on the wire.
    rng : numpy.random.Generator or seed, optional
        Randomness of the compressor.
    **settings
        The named compressor's settings (``k=``, ``r=``, ``s=``, ``p=``, ``delta=``, ...); settings it does
        not declare and ``None`` values are ignored, so one pool of parameters serves every compressor.

    Returns
    -------
    Message

    Raises
    ------
    UserError
        Unknown compressor or value dtype, a missing or out-of-range setting (k > d, ...), non-finite x.
    """
    if isinstance(compressor, Compressor):
        comp = _named(compressor, settings)
    else:
        comp = compressor_from_settings(compressor, settings)
    return comp.to_message(x, rng=np.random.default_rng(rng), value_dtype=value_dtype)


def _coding(msg: Message, coding: str | None) -> str:
    allowed = CODINGS[msg.kind]
    if coding is None:
        return allowed[0]
    if coding not in allowed:
        from simcomm._errors import closest

        raise UserError(f"unknown coding '{coding}' for a {msg.kind} message{closest(coding, allowed)}; "
                        f"choose one of {', '.join(allowed)}")
    return coding


def _gaps(idx: np.ndarray) -> np.ndarray:
    """Gaps of sorted indices, all >= 1: ``i_0 + 1, i_1 - i_0, ...``."""
    g = np.empty(idx.size, dtype=np.int64)
    if idx.size:
        g[0] = idx[0] + 1
        np.subtract(idx[1:], idx[:-1], out=g[1:])
    return g


def _auto(msg: Message) -> str:
    k = msg.count
    return "packed" if k * _bits_of_index(msg.d) <= msg.d else "bitmap"


def _bits_of_index(d: int) -> int:
    return int(d - 1).bit_length()


def _sround_width(lev: np.ndarray) -> tuple[int, int]:
    lo = int(lev.min())
    rng = int(lev.max()) - lo
    return lo, max(1, (rng + 1).bit_length())  # ceil(log2(range + 2)) bits


def _values_bytes(msg: Message):
    """The value section as a contiguous little-endian array (``bytes.join`` reads its buffer: no copy)."""
    if msg.value_dtype == "bfloat16":
        return (msg.values.view(np.uint32) >> 16).astype("<u2")
    return np.ascontiguousarray(msg.values.astype(msg.values.dtype.newbyteorder("<"), copy=False))


def encode(msg: Message, coding: str | None = None) -> bytes:
    """Encode ``msg`` to bytes (header + byte-aligned sections); see the module docstring.

    Parameters
    ----------
    msg : Message
    coding : str, optional
        One of ``CODINGS[msg.kind]`` (default: the first, the encoding the library's bit formula counts).

    Returns
    -------
    bytes

    Raises
    ------
    UserError
        A coding the message kind does not have.
    """
    coding = _coding(msg, coding)
    if coding == "auto":
        coding = _auto(msg)
    kind_id = _KINDS.index(msg.kind)
    code_id = _ALL_CODINGS.index(coding)
    dt_id = VALUE_DTYPES.index(msg.value_dtype)
    width, aux, body = 0, 0.0, []
    if msg.kind == "dense":
        body = [_values_bytes(msg)]
    elif msg.kind == "sparse":
        idx = msg.indices
        if coding == "raw":
            body.append(idx.astype("<i4").tobytes())
        elif coding == "packed":
            width = _bits_of_index(msg.d)
            body.append(_bits.pack_fixed_array(idx, width) if width else b"")
        elif coding == "bitmap":
            body.append(_bits.bitmap_encode_array(idx, msg.d))
        elif coding == "gamma":
            body.append(_bits.gamma_encode_indices(idx))  # the gaps i_0 + 1, i_1 - i_0, ... (fused)
        else:
            body.append(_bits.varint_encode_indices(idx))  # the gaps minus one (fused)
        body.append(_values_bytes(msg))
    elif msg.kind == "qsgd":
        aux = float(msg.s)
        body.append(struct.pack("<f", msg.scale))
        if coding == "fixed":
            width = (2 * msg.s).bit_length()  # ceil(log2(2s + 1))
            body.append(_bits.pack_fixed(msg.levels + msg.s, width))
        else:
            nz = np.flatnonzero(msg.levels)
            lev = msg.levels[nz]
            body.append(struct.pack("<Q", nz.size))
            body.append(_bits.gamma_encode(_gaps(nz), (lev < 0).astype(np.int64), np.abs(lev)))
    elif msg.kind == "ternary":
        body.append(struct.pack("<f", msg.scale))
        t = msg.levels + 1  # {0, 1, 2}
        if coding == "2bit":
            body.append(_bits.pack_fixed(t, 2))
        else:
            pad = (-t.size) % 5
            t5 = np.concatenate([t, np.zeros(pad, dtype=np.int64)]).reshape(-1, 5)
            body.append((t5 @ np.array([1, 3, 9, 27, 81])).astype(np.uint8).tobytes())
    elif msg.kind == "coded":
        width, aux = msg.width, float(msg.scales.size)
        body.append(np.ascontiguousarray(msg.scales.astype("<f4", copy=False)))
        if width:
            body.append(_bits.pack_fixed(msg.levels, width))
    else:
        aux = msg.scale
        lo, width = _sround_width(msg.levels)
        body.append(struct.pack("<i", lo))
        body.append(_bits.pack_fixed(msg.levels - lo, width))
    head = _HEADER.pack(_MAGIC, _VERSION, kind_id, code_id, dt_id, width, msg.d, msg.count, aux)
    return b"".join([head, *body])  # one copy of the sections into the payload


def _bad(why: str):
    raise UserError(f"cannot decode the payload: {why}; pass bytes made by simcomm.network.encode")


def decode(buf) -> Message:
    """Decode bytes made by :func:`encode` back to the :class:`Message` (exactly).

    Raises
    ------
    UserError
        Bytes that are not a payload of this version, or truncated/corrupt sections.
    """
    buf = bytes(buf)
    if len(buf) < HEADER_BYTES:
        _bad("shorter than the header")
    magic, ver, kind_id, code_id, dt_id, width, d, count, aux = _HEADER.unpack_from(buf)
    if magic != _MAGIC or ver != _VERSION or kind_id >= len(_KINDS) or code_id >= len(_ALL_CODINGS) \
            or dt_id >= len(VALUE_DTYPES):
        _bad("wrong magic, version or field ids")
    kind, coding, vdt = _KINDS[kind_id], _ALL_CODINGS[code_id], VALUE_DTYPES[dt_id]
    body = memoryview(buf)[HEADER_BYTES:]
    try:
        return _decode_body(kind, coding, vdt, width, d, count, aux, body)
    except (ValueError, struct.error, IndexError) as exc:
        _bad(str(exc))


def _read_values(body, pos, count, vdt):
    nb = count * _VALUE_BITS[vdt] // 8
    if len(body) < pos + nb:
        raise ValueError("truncated value section")
    raw = body[pos:pos + nb]
    if vdt == "bfloat16":
        vals = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        vals = np.frombuffer(raw, dtype=np.dtype(vdt).newbyteorder("<")).astype(vdt)
    return vals, pos + nb


def _decode_body(kind, coding, vdt, width, d, count, aux, body) -> Message:
    if kind == "dense":
        vals, _ = _read_values(body, 0, count, vdt)
        return Message("dense", d, vdt, values=vals)
    if kind == "sparse":
        if coding == "raw":
            nb = 4 * count
            idx = np.frombuffer(body[:nb], dtype="<i4").astype(np.int64)
            if idx.size != count:
                raise ValueError("truncated index section")
        elif coding == "packed":
            nb = (count * width + 7) // 8
            # the rest of the body: the unpacker reads the section in place when a word past it is there
            idx = _bits.unpack_fixed(body, count, width) if width else np.zeros(count, dtype=np.int64)
        elif coding == "bitmap":
            nb = (d + 7) // 8
            idx = _bits.bitmap_decode(body[:nb], d, count)
        else:
            # variable-length: the value section is the last count*b/8 bytes
            nb = len(body) - count * _VALUE_BITS[vdt] // 8
            if nb < 0:
                raise ValueError("truncated payload")
            decode_idx = _bits.gamma_decode_indices if coding == "gamma" else _bits.varint_decode_indices
            idx = decode_idx(body[:nb], count)  # the running sum of the gaps, fused
        vals, _ = _read_values(body, nb, count, vdt)
        return Message("sparse", d, vdt, values=vals, indices=idx)
    if kind == "qsgd":
        (norm,) = struct.unpack_from("<f", body, 0)
        s = int(aux)
        if coding == "fixed":
            lev = _bits.unpack_fixed(body[4:], count, width) - s
        else:
            (nnz,) = struct.unpack_from("<Q", body, 4)
            g, sign, mag = _bits.gamma_decode(body[12:], nnz, with_levels=True)
            lev = np.zeros(count, dtype=np.int64)
            lev[np.cumsum(g) - 1] = np.where(sign == 1, -mag, mag)
        return Message("qsgd", d, vdt, levels=lev, scale=float(norm), s=s)
    if kind == "ternary":
        (scale,) = struct.unpack_from("<f", body, 0)
        if coding == "2bit":
            t = _bits.unpack_fixed(body[4:], count, 2)
        else:
            b = np.frombuffer(body[4:4 + (count + 4) // 5], dtype=np.uint8).astype(np.int64)
            t = ((b[:, None] // np.array([1, 3, 9, 27, 81])) % 3).reshape(-1)[:count]
            if t.size != count:
                raise ValueError("truncated trit section")
        return Message("ternary", d, vdt, levels=t - 1, scale=float(scale))
    if kind == "coded":
        ns = int(aux)
        if ns != aux or ns < 0 or len(body) < 4 * ns:
            raise ValueError("truncated side-value section")
        scales = np.frombuffer(body[:4 * ns], dtype="<f4").astype(np.float32)
        lev = _bits.unpack_fixed(body[4 * ns:], count, width) if width else np.zeros(count, dtype=np.int64)
        return Message("coded", d, vdt, levels=lev, scales=scales, width=width)
    (lo,) = struct.unpack_from("<i", body, 0)
    lev = _bits.unpack_fixed(body[4:], count, width) + lo
    return Message("sround", d, vdt, levels=lev, scale=float(aux))


def payload_sections(msg: Message, coding: str | None = None) -> int:
    """Number of byte-aligned body sections of ``encode(msg, coding)`` (each pads at most 7 bits)."""
    coding = _coding(msg, coding)
    if msg.kind == "coded":
        return 2 if msg.width else 1
    return {"dense": 1, "sparse": 2, "qsgd": 2 if coding == "fixed" else 3, "ternary": 2, "sround": 2}[msg.kind]


def formula_bits(msg: Message, coding: str | None = None) -> int:
    r"""Bits of ``msg`` under ``coding`` by the library's formula, header and padding excluded.

    Uses :func:`simcomm.compress.message_bits` (sparse ``auto``), ``QSGD(s).bits`` (``fixed``),
    ``Ternary().bits`` (``trit5``) and ``StochasticRound(delta).bits`` with ``span = range * delta``; the other
    codings have no library formula, so their exact code length on this message is returned
    (``raw``: 32 bits per index; ``packed``/``bitmap``: the two terms of ``message_bits``; ``gamma``:
    :math:`\\sum_i (2\\lfloor\\log_2 g_i\\rfloor + 1)`; ``varint``: 8 bits per started 7-bit group;
    ``elias``: gamma gaps + a sign bit + gamma levels, plus a 64-bit count; ``2bit``: :math:`2d`).
    """
    from simcomm import compress

    coding = _coding(msg, coding)
    vb = _VALUE_BITS[msg.value_dtype]
    d, c = msg.d, msg.count
    if msg.kind == "dense":
        return vb * d
    if msg.kind == "sparse":
        if coding == "auto":
            return compress.message_bits(c, d, value_bits=vb) if c else 0
        idx_bits = {
            "raw": lambda: 32 * c,
            "packed": lambda: c * compress.index_bits(d),
            "bitmap": lambda: d,
            "gamma": lambda: _bits.gamma_bits(_gaps(msg.indices)),
            "varint": lambda: _bits.varint_bits(_gaps(msg.indices) - 1),
        }[coding]()
        return c * vb + idx_bits
    if msg.kind == "qsgd":
        if coding == "fixed":
            return compress.QSGD(msg.s).bits(d)
        nz = np.flatnonzero(msg.levels)
        return 32 + 64 + _bits.gamma_bits(_gaps(nz)) + nz.size + _bits.gamma_bits(np.abs(msg.levels[nz]))
    if msg.kind == "ternary":
        return compress.Ternary().bits(d) if coding == "trit5" else 32 + 2 * d
    if msg.kind == "coded":
        return 32 * msg.scales.size + msg.width * c
    lo, width = _sround_width(msg.levels)
    span = (int(msg.levels.max()) - lo) * msg.scale
    return compress.StochasticRound(msg.scale).bits(d, span=span)
