"""Index codings of sparse payloads (issue 40): the compiled word kernels against bit-string references.

The references build each code as a Python string of bits (LSB-first within a byte, as the module
docstring of :mod:`simcomm.network._bits` fixes) and pack it, one value at a time, with nothing shared
with the kernels. The ``*_indices`` variants (gaps and running sums fused) must give the bytes of the
plain codes of the gaps; corrupt or truncated sections raise ``ValueError`` (``decode`` turns it into
its one-line ``UserError``).
"""

from __future__ import annotations

import numpy as np
import pytest

from simcomm import UserError
from simcomm.network import _bits, decode, encode, message


def _pack_bits(bits: str) -> bytes:
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8][::-1], 2) for i in range(0, len(bits), 8))


def naive_gamma(g) -> bytes:
    """N zeros, a one, then the N low bits of g LSB-first (N = floor(log2 g))."""
    out = []
    for v in g:
        n = int(v).bit_length() - 1
        out.append("0" * n + "1" + "".join(str((int(v) >> t) & 1) for t in range(n)))
    return _pack_bits("".join(out))


def naive_varint(g) -> bytes:
    out = bytearray()
    for v in g:
        v = int(v)
        while v >= 128:
            out.append((v & 127) | 128)
            v >>= 7
        out.append(v)
    return bytes(out)


def _indices(seed, k, d):
    return np.sort(np.random.default_rng(seed).choice(d, size=k, replace=False)).astype(np.int64)


CASES = [(0, 1, 1), (1, 5, 10), (2, 300, 10**6), (3, 1000, 1001), (4, 2000, 2**40), (5, 64, 64)]


@pytest.mark.parametrize("seed, k, d", CASES)
def test_gamma_and_varint_of_indices_equal_the_references(seed, k, d):
    idx = _indices(seed, k, d) if d < 2**31 else np.unique(np.random.default_rng(seed).integers(0, d, size=k))
    gaps = np.diff(idx, prepend=-1)
    ref_gamma, ref_varint = naive_gamma(gaps), naive_varint(gaps - 1)
    assert _bits.gamma_encode(gaps) == ref_gamma and _bits.gamma_encode_indices(idx).tobytes() == ref_gamma
    assert _bits.varint_encode(gaps - 1) == ref_varint and _bits.varint_encode_indices(idx).tobytes() == ref_varint
    assert np.array_equal(_bits.gamma_decode(ref_gamma, idx.size), gaps)
    assert np.array_equal(_bits.gamma_decode_indices(ref_gamma, idx.size), idx)
    assert np.array_equal(_bits.varint_decode(ref_varint, idx.size), gaps - 1)
    assert np.array_equal(_bits.varint_decode_indices(ref_varint, idx.size), idx)


def test_gamma_of_large_values_uses_two_fields():
    g = np.array([1, 2**31 - 1, 2**31, 2**32 + 5, 2**40 + 3, 7, 2**35], dtype=np.int64)  # 2N + 1 > 63 from 2^32
    assert _bits.gamma_encode(g) == naive_gamma(g)
    assert np.array_equal(_bits.gamma_decode(naive_gamma(g), g.size), g)


@pytest.mark.parametrize("seed, k, d", [(6, 1, 8), (7, 100, 10**4), (8, 999, 1003), (9, 10**4, 10**6 + 3)])
def test_bitmap_decode_equals_unpackbits(seed, k, d):
    idx = _indices(seed, k, d)
    buf = _bits.bitmap_encode(idx, d)
    assert buf == _bits.bitmap_encode_array(idx, d).tobytes()
    ref = np.flatnonzero(np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little"))
    assert np.array_equal(ref, idx) and np.array_equal(_bits.bitmap_decode(buf, d, k), idx)
    shifted = memoryview(b"x" + buf)[1:]  # not 8-aligned: read through a copy
    assert np.array_equal(_bits.bitmap_decode(shifted, d, k), idx)


def test_bitmap_dense_words_and_wrong_counts():
    d = 1000
    idx = np.arange(0, d, 1)  # every bit: 64 per word, the loop for the third bit on
    buf = _bits.bitmap_encode(idx, d)
    assert np.array_equal(_bits.bitmap_decode(buf, d, d), idx)
    for count in (d - 1, d + 1, 0):
        with pytest.raises(ValueError, match="stated number"):
            _bits.bitmap_decode(buf, d, count)
    over = bytearray(_bits.bitmap_encode(np.array([3]), 13))
    over[-1] |= 0x80  # bit 15 >= d = 13
    with pytest.raises(ValueError, match="stated number"):
        _bits.bitmap_decode(bytes(over), 13, 2)


@pytest.mark.parametrize("coding", ["gamma", "varint"])
def test_truncated_or_corrupt_sections_raise(coding):
    idx = _indices(11, 500, 10**5)
    enc = _bits.gamma_encode_indices(idx) if coding == "gamma" else _bits.varint_encode_indices(idx)
    dec = _bits.gamma_decode_indices if coding == "gamma" else _bits.varint_decode_indices
    for cut in (1, 7, enc.size // 2):
        with pytest.raises(ValueError, match="truncated or corrupt"):
            dec(enc[:-cut].tobytes(), idx.size)
    junk = (bytes(64) if coding == "gamma" else b"\xff" * 64)  # 64 zero bits / a never-ending varint
    with pytest.raises(ValueError, match="truncated or corrupt"):
        dec(junk, 3)


@pytest.mark.parametrize("coding", ["bitmap", "gamma", "varint", "packed", "raw"])
def test_payload_roundtrip_and_truncation_one_line(coding):
    x = np.random.default_rng(12).standard_normal(20_000)
    m = message("top_k", x, k=333)
    buf = encode(m, coding)
    assert decode(buf) == m
    with pytest.raises(UserError, match="^cannot decode the payload"):
        decode(buf[: len(buf) - 4 * 333 - 3])  # the index section cut short


def test_gamma_mixed_lengths_across_peeks():
    """Codes of 1 to 81 bits in a random order: several per 64-bit peek, codes straddling a peek, long ones."""
    rng = np.random.default_rng(21)
    g = np.maximum(1, (2.0 ** rng.uniform(0, 41, size=3000)).astype(np.int64))
    enc = naive_gamma(g)
    assert _bits.gamma_encode(g) == enc
    assert np.array_equal(_bits.gamma_decode(enc, g.size), g)
    idx = np.cumsum(g) - 1
    assert np.array_equal(_bits.gamma_decode_indices(enc, g.size), idx)
    assert _bits.gamma_encode_indices(idx).tobytes() == enc
