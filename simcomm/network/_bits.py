"""Bit-level kernels (numba): fixed-width packing, Elias-gamma and LEB128 varint codes.

Bit order is LSB-first within each byte and within each written field, so a writer keeps at most
``7 + w`` pending bits in a 64-bit register (``w <= 32`` here) and flushes whole bytes; a reader keeps
a register refilled to at least 49 bits. All arithmetic is on int64 values below 2**56.

Elias-gamma of an integer ``g >= 1`` with ``N = floor(log2 g)``: ``N`` zero bits, a one bit (the leading
bit of ``g``), then the ``N`` low bits of ``g``: ``2N + 1`` bits, the textbook code's length (the low bits
are written LSB-first, which changes the bit order, not the length or the prefix property).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

#: from this many values on, fixed-width sections are (un)packed through 64-bit words
_WORDS_MIN = 256

__all__ = ["pack_fixed", "unpack_fixed", "gamma_bits", "gamma_encode", "gamma_decode", "varint_encode",
           "varint_decode", "bit_length", "bitmap_encode", "bitmap_decode", "gamma_encode_indices",
           "gamma_decode_indices", "varint_encode_indices", "varint_decode_indices", "bitmap_encode_array"]


@njit(cache=True)
def _bitlen(v):
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


def bit_length(v: np.ndarray) -> np.ndarray:
    """Element-wise bit length of non-negative integers (0 for 0), vectorised."""
    v = np.asarray(v, dtype=np.int64)
    out = np.zeros(v.shape, dtype=np.int64)
    nz = v > 0
    # frexp is exact for integers below 2**53: v = m * 2**e with 0.5 <= m < 1, so bit_length = e
    out[nz] = np.frexp(v[nz].astype(np.float64))[1]
    return out


@njit(cache=True)
def _pack_fixed(v, w, out):
    # flush 32 bits at a time: nacc < 32 before adding w <= 32 bits, so acc stays below 2**63
    acc = 0
    nacc = 0
    pos = 0
    mask = (1 << w) - 1
    for i in range(v.size):
        acc |= (v[i] & mask) << nacc
        nacc += w
        if nacc >= 32:
            out[pos] = acc & 255
            out[pos + 1] = (acc >> 8) & 255
            out[pos + 2] = (acc >> 16) & 255
            out[pos + 3] = (acc >> 24) & 255
            acc >>= 32
            nacc -= 32
            pos += 4
    while nacc > 0:
        out[pos] = acc & 255
        acc >>= 8
        nacc -= 8
        pos += 1


def pack_fixed(v: np.ndarray, w: int) -> bytes:
    """Pack non-negative integers ``v`` (each ``< 2**w``, ``1 <= w <= 32``) into ``ceil(n w / 8)`` bytes."""
    return pack_fixed_array(v, w).tobytes()


@njit(cache=True)
def _pack_words(v, w, words):
    # the byte stream of _pack_fixed written a 64-bit word at a time (little-endian words are that
    # byte stream): one store per 64 bits instead of four byte stores per 32, half the time per value
    mask = np.uint64((1 << w) - 1)
    acc = np.uint64(0)
    nacc = 0
    pos = 0
    for i in range(v.size):
        x = np.uint64(v[i]) & mask
        acc |= x << np.uint64(nacc)
        nacc += w
        if nacc >= 64:
            words[pos] = acc
            pos += 1
            nacc -= 64
            # the bits of x that did not fit (none when it ended exactly on the word boundary)
            acc = (x >> np.uint64(w - nacc)) if nacc > 0 else np.uint64(0)
    if nacc > 0:
        words[pos] = acc


def pack_fixed_array(v: np.ndarray, w: int) -> np.ndarray:
    """:func:`pack_fixed` as a uint8 array (a buffer ``bytes.join`` takes without another copy)."""
    v = np.ascontiguousarray(v, dtype=np.int64)
    nb = (v.size * w + 7) // 8
    if v.size >= _WORDS_MIN and sys.byteorder == "little":
        words = np.empty(nb // 8 + 1, dtype=np.uint64)  # _pack_words writes every word it fills
        _pack_words(v, int(w), words)
        return words.view(np.uint8)[:nb]
    out = np.zeros(nb, dtype=np.uint8)
    if v.size:
        _pack_fixed(v, int(w), out)
    return out


@njit(cache=True)
def _unpack_fixed(buf, n, w, out):
    acc = 0
    nacc = 0
    pos = 0
    nb = buf.size
    mask = (1 << w) - 1
    for i in range(n):
        if nacc < w:
            if pos + 4 <= nb:  # refill 32 bits at once (nacc < w <= 32, so acc stays below 2**63)
                acc |= (np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16)
                        | (np.int64(buf[pos + 3]) << 24)) << nacc
                nacc += 32
                pos += 4
            else:
                while nacc < w:
                    acc |= np.int64(buf[pos]) << nacc
                    nacc += 8
                    pos += 1
        out[i] = acc & mask
        acc >>= w
        nacc -= w


@njit(cache=True)
def _unpack_words(words, n, w, out):
    # the byte stream of _unpack_fixed read as little-endian 32-bit words. Value i is bits [i w, i w + w):
    # it lies in the two words from (i w) >> 5 on (w <= 32), so every value is read on its own (no
    # register carried from one value to the next: the loop has no serial chain and vectorises)
    mask = np.uint64((1 << w) - 1)
    for i in range(n):
        p = np.uint64(i) * np.uint64(w)
        q = p >> np.uint64(5)
        two = np.uint64(words[q]) | (np.uint64(words[q + np.uint64(1)]) << np.uint64(32))
        out[i] = np.int64((two >> (p & np.uint64(31))) & mask)


def unpack_fixed(buf, n: int, w: int) -> np.ndarray:
    """Inverse of :func:`pack_fixed`: ``n`` integers of ``w`` bits, as int64."""
    b = np.frombuffer(buf, dtype=np.uint8)
    if b.size * 8 < n * w:
        raise ValueError("truncated fixed-width section")
    out = np.empty(n, dtype=np.int64)
    if n >= _WORDS_MIN and sys.byteorder == "little":
        nb = (n * w + 7) // 8
        nw = nb // 4 + 2  # the reader may touch one word past the section's last
        if b.size >= 4 * nw and b.ctypes.data % 4 == 0:
            words = b[: 4 * nw].view(np.uint32)  # in place: bits past the section are masked off
        else:
            words = np.zeros(nw, dtype=np.uint32)  # an aligned copy, zero-padded
            words.view(np.uint8)[:nb] = b[:nb]
        _unpack_words(words, int(n), int(w), out)
    elif n:
        _unpack_fixed(b, int(n), int(w), out)
    return out


def gamma_bits(g: np.ndarray) -> int:
    """Total Elias-gamma length of the integers ``g >= 1``: ``sum(2 floor(log2 g) + 1)``."""
    g = np.asarray(g, dtype=np.int64)
    return int((2 * (bit_length(g) - 1) + 1).sum())


@njit(cache=True)
def _gamma_encode(g, sign, lev, out):
    # codes, in order, for each i: gamma(g[i]); then (when lev is given) a sign bit and gamma(lev[i])
    acc = 0
    nacc = 0
    pos = 0
    two = lev.size > 0
    for i in range(g.size):
        for part in range(2 if two else 1):
            v = g[i] if part == 0 else lev[i]
            if part == 1:
                acc |= sign[i] << nacc
                nacc += 1
            n = 0
            t = v
            while t > 1:
                t >>= 1
                n += 1
            # n zeros then a one: the value 1 << n in n + 1 bits
            acc |= (1 << n) << nacc
            nacc += n + 1
            while nacc >= 8:
                out[pos] = acc & 255
                acc >>= 8
                nacc -= 8
                pos += 1
            acc |= (v & ((1 << n) - 1)) << nacc
            nacc += n
            while nacc >= 8:
                out[pos] = acc & 255
                acc >>= 8
                nacc -= 8
                pos += 1
    if nacc > 0:
        out[pos] = acc & 255


def gamma_encode(g: np.ndarray, sign: np.ndarray | None = None, lev: np.ndarray | None = None) -> bytes:
    """Elias-gamma codes of ``g >= 1``; with ``sign``/``lev``, each followed by a sign bit and gamma(lev)."""
    g = np.ascontiguousarray(g, dtype=np.int64)
    if lev is None:  # gaps alone: the word kernel (the same bytes)
        return _gamma_array(g, False).tobytes()
    lev_a = np.ascontiguousarray(lev, dtype=np.int64)
    sign_a = np.ascontiguousarray(sign, dtype=np.int64)
    nbits = gamma_bits(g) + gamma_bits(lev_a) + g.size
    out = np.zeros((nbits + 7) // 8, dtype=np.uint8)
    if g.size:
        _gamma_encode(g, sign_a, lev_a, out)
    return out.tobytes()


_CTZ8 = np.array([8] + [(i & -i).bit_length() - 1 for i in range(1, 256)], dtype=np.int64)


@njit(cache=True)
def _gamma_decode(buf, n, two, g, sign, lev, ctz8):
    acc = 0
    nacc = 0
    pos = 0
    nb = buf.size
    for i in range(n):
        for part in range(2 if two else 1):
            if part == 1:
                if nacc < 1:
                    if pos >= nb:
                        return -1
                    acc |= np.int64(buf[pos]) << nacc
                    nacc += 8
                    pos += 1
                sign[i] = acc & 1
                acc >>= 1
                nacc -= 1
            # count zeros up to the terminating one
            z = 0
            while True:
                while nacc <= 48 and pos < nb:
                    acc |= np.int64(buf[pos]) << nacc
                    nacc += 8
                    pos += 1
                if nacc == 0:
                    return -1
                t = ctz8[acc & 255]
                if t > nacc:
                    return -1
                if t < 8:
                    acc >>= t
                    nacc -= t
                    z += t
                    break
                acc >>= 8
                nacc -= 8
                z += 8
                if z > 40:
                    return -1
            acc >>= 1
            nacc -= 1
            while nacc < z and pos < nb:
                acc |= np.int64(buf[pos]) << nacc
                nacc += 8
                pos += 1
            if nacc < z:
                return -1
            v = (1 << z) | (acc & ((1 << z) - 1))
            acc >>= z
            nacc -= z
            if part == 0:
                g[i] = v
            else:
                lev[i] = v
    return 0


def gamma_decode(buf, n: int, with_levels: bool = False):
    """Inverse of :func:`gamma_encode`: ``g`` (and ``sign``, ``lev`` when ``with_levels``)."""
    if not with_levels:
        return _gamma_decode_fast(buf, n, False)
    b = np.frombuffer(buf, dtype=np.uint8)
    g = np.empty(n, dtype=np.int64)
    sign = np.empty(n if with_levels else 0, dtype=np.int64)
    lev = np.empty(n if with_levels else 0, dtype=np.int64)
    if n and _gamma_decode(b, int(n), bool(with_levels), g, sign, lev, _CTZ8) != 0:
        raise ValueError("truncated or corrupt Elias-gamma section")
    return (g, sign, lev) if with_levels else g


def varint_encode(g: np.ndarray) -> bytes:
    """LEB128 varints of non-negative integers (7 bits per byte, high bit = more bytes follow)."""
    return _varint_array(g, False).tobytes()


def varint_bits(g: np.ndarray) -> int:
    """Total LEB128 length of ``g`` in bits: 8 per started group of 7 bits."""
    g = np.asarray(g, dtype=np.int64)
    return int(8 * np.maximum(1, (bit_length(g) + 6) // 7).sum())


def varint_decode(buf, n: int) -> np.ndarray:
    """Inverse of :func:`varint_encode`: the first ``n`` varints of ``buf``."""
    return _varint_decode_fast(buf, n, False)


@njit(cache=True)
def _bitmap_encode(idx, out):
    for i in range(idx.size):
        out[idx[i] >> 3] |= np.uint8(1 << (idx[i] & 7))


def bitmap_encode(idx: np.ndarray, d: int) -> bytes:
    """A ``d``-bit map (LSB-first) with the bits of ``idx`` set; O(k) writes into ``ceil(d/8)`` zero bytes."""
    out = np.zeros((d + 7) // 8, dtype=np.uint8)
    _bitmap_encode(np.ascontiguousarray(idx, dtype=np.int64), out)
    return out.tobytes()


def bitmap_decode(buf, d: int, count: int) -> np.ndarray:
    """Inverse of :func:`bitmap_encode`: the ``count`` set positions, ascending."""
    b = np.frombuffer(buf, dtype=np.uint8)
    if b.size != (d + 7) // 8:
        raise ValueError("bitmap section has the wrong length")
    full = b.size // 8
    if b.ctypes.data % 8 == 0:
        words = b[: 8 * full].view(np.uint64)  # read in place
    else:
        words, _ = _padded_words(b[: 8 * full], 0)
    tail = np.uint64(int.from_bytes(b[8 * full:].tobytes(), "little"))
    out = np.empty(count + 2, dtype=np.int64)
    if _bitmap_read(words, tail, out) != count or (count and out[count - 1] >= d):
        raise ValueError("bitmap does not hold the stated number of indices")
    return out[:count]


# --- sorted-index sections (the sparse payloads): compiled, one pass each way -----------------------
# ``delta`` kernels code the gaps of sorted indices (i_0 + 1, i_1 - i_0, ...) without materialising
# them and decode straight back to the indices (the running sum fused). Bit streams are written and
# read through 64-bit words: a value's whole code is one field (its length from a leading-zero count)
# and a reader peeks 64 bits at any bit position from two words, so no loop walks bit by bit.


@njit(inline="always")
def _push(x, w, acc, nacc):
    # append the w-bit field x (1 <= w <= 63) to the register: (acc, nacc, full, word); a full 64-bit
    # word is returned to be stored and the bits of x that did not fit start the next register
    acc |= x << np.uint64(nacc)
    nacc += w
    if nacc >= 64:
        nacc -= 64
        return (x >> np.uint64(w - nacc)) if nacc > 0 else np.uint64(0), nacc, True, acc
    return acc, nacc, False, acc


@njit(inline="always")
def _gap(v, i, prev, delta):
    return v[i] - prev if delta else v[i]


@njit(cache=True)
def _gamma_total(v, delta):
    total = 0
    prev = -1
    for i in range(v.size):
        g = _gap(v, i, prev, delta)
        prev = v[i]
        total += 2 * (63 - leading_zeros(np.uint64(g))) + 1
    return total


@njit(cache=True)
def _gamma_words(v, delta, words):
    # gamma(g) with N = floor(log2 g) as one field of 2N + 1 bits, LSB first: N zeros, a one, the N low
    # bits of g (two fields when 2N + 1 > 63). Code lengths vary, so whether a word fills is data: the
    # register is stored at every value and the word index, count and carry are selected (no branch).
    acc = np.uint64(0)
    nacc = 0
    pos = 0
    prev = -1
    one = np.uint64(1)
    for i in range(v.size):
        ug = np.uint64(_gap(v, i, prev, delta))
        prev = v[i]
        n = 63 - leading_zeros(ug)
        top = one << np.uint64(n)
        if n < 32:
            x = top | ((ug ^ top) << np.uint64(n + 1))
            w = 2 * n + 1
            acc |= x << np.uint64(nacc)
            words[np.uint64(pos)] = acc
            nacc += w
            full = nacc >= 64
            nacc = nacc - 64 if full else nacc
            # the bits of x past the word (64 - old nacc = w - new nacc of them were stored); a shift
            # count of 64 (nothing carried) is kept below 64 by shifting in two steps
            carry = (x >> np.uint64(1)) >> np.uint64((w - nacc - 1) & 63)
            acc = (carry if nacc > 0 else np.uint64(0)) if full else acc
            pos += 1 if full else 0
        else:
            acc, nacc, full, word = _push(top, n + 1, acc, nacc)
            if full:
                words[pos] = word
                pos += 1
            acc, nacc, full, word = _push(ug ^ top, n, acc, nacc)
            if full:
                words[pos] = word
                pos += 1
    if nacc > 0:
        words[pos] = acc


def _gamma_array(v: np.ndarray, delta: bool) -> np.ndarray:
    v = np.ascontiguousarray(v, dtype=np.int64)
    nb = (_gamma_total(v, delta) + 7) // 8 if v.size else 0
    words = np.empty(nb // 8 + 1, dtype=np.uint64)  # every word up to the last bit is written
    if v.size:
        _gamma_words(v, delta, words)
    return words.view(np.uint8)[:nb]


def gamma_encode_indices(idx: np.ndarray) -> np.ndarray:
    """Elias-gamma codes of the gaps ``i_0 + 1, i_1 - i_0, ...`` of sorted indices, as a uint8 array.

    The same bytes as ``gamma_encode(gaps)``; the array is a buffer ``bytes.join`` takes without a copy.
    """
    return _gamma_array(idx, True)


@njit(inline="always")
def _peek(words, p):
    # the 64 bits of the stream from bit p on (two words; the high one shifted in two steps so that a
    # shift by 64 never happens). Arrays are indexed with unsigned integers throughout this block: a
    # signed index costs a negative-index wraparound test per access (the writers ran 1.6x slower).
    q = np.uint64(p >> 6)
    s = np.uint64(p & 63)
    return (words[q] >> s) | ((words[q + np.uint64(1)] << np.uint64(1)) << (np.uint64(63) - s))


@njit(inline="always")
def _emit(out, i, g, prev, delta):
    # decoded value i: the gap g itself, or (delta) the running sum of the gaps; returns that sum
    if delta:
        prev += g
        out[np.uint64(i)] = prev
    else:
        out[np.uint64(i)] = g
    return prev


@njit(cache=True)
def _gamma_read(words, nbits, n, delta, out):
    # Where code i + 1 starts is known only after code i is read, so the loop is one chain. Codes are
    # decoded from one 64-bit peek for as long as they fit in it (a trailing-zero count and a shift per
    # code, no load on the chain); a new peek when the next code runs past the bits held, and two peeks
    # for a code longer than 64 bits (a value of 2^32 or more).
    p = 0
    prev = -1
    one = np.uint64(1)
    i = 0
    while i < n:
        pk = _peek(words, p)
        avail = 64
        while True:
            z = trailing_zeros(pk)
            length = 2 * z + 1
            if length > avail:
                break
            g = np.int64((one << np.uint64(z)) | ((pk >> np.uint64(z + 1)) & ((one << np.uint64(z)) - one)))
            pk = (pk >> np.uint64(z)) >> np.uint64(z + 1)
            avail -= length
            p += length
            prev = _emit(out, i, g, prev, delta)
            i += 1
            if i == n:
                break
        if i < n and avail == 64:  # a code longer than 64 bits (z >= 32): two peeks
            if z > 40:
                return -1
            p += z + 1
            g = np.int64((one << np.uint64(z)) | (_peek(words, p) & ((one << np.uint64(z)) - one)))
            p += z
            prev = _emit(out, i, g, prev, delta)
            i += 1
    return 0 if p <= nbits else -1


def _padded_words(buf, extra: int) -> tuple[np.ndarray, int]:
    """The bytes of ``buf`` as zero-padded little-endian uint64 words (``extra`` zero words after them)."""
    b = np.frombuffer(buf, dtype=np.uint8)
    words = np.zeros((b.size + 7) // 8 + extra, dtype=np.uint64)
    words.view(np.uint8)[: b.size] = b
    return words, 8 * b.size


def _gamma_decode_fast(buf, n: int, delta: bool) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    if n:
        words, nbits = _padded_words(buf, 4)  # a corrupt code runs at most 81 bits past the end: zeros
        if _gamma_read(words, nbits, int(n), delta, out) != 0:
            raise ValueError("truncated or corrupt Elias-gamma section")
    return out


def gamma_decode_indices(buf, n: int) -> np.ndarray:
    """Inverse of :func:`gamma_encode_indices`: the ``n`` sorted indices."""
    return _gamma_decode_fast(buf, n, True)


@njit(cache=True)
def _varint_total(v, delta):
    total = 0
    prev = -1
    for i in range(v.size):
        x = _gap(v, i, prev, delta) - (1 if delta else 0)
        prev = v[i]
        total += max(1, (70 - leading_zeros(np.uint64(x))) // 7)
    return total


@njit(cache=True)
def _varint_write(v, delta, out):
    # values below 2**21 (three bytes or fewer) write three bytes unconditionally and advance by their
    # length (the next value overwrites the extra ones; out has three bytes of slack): no branch per byte
    pos = 0
    prev = -1
    for i in range(v.size):
        x = _gap(v, i, prev, delta) - (1 if delta else 0)
        prev = v[i]
        if x < 2097152:
            more1 = 1 if x >= 128 else 0
            more2 = 1 if x >= 16384 else 0
            out[np.uint64(pos)] = (x & 127) | (more1 << 7)
            out[np.uint64(pos + 1)] = ((x >> 7) & 127) | (more2 << 7)
            out[np.uint64(pos + 2)] = (x >> 14) & 127
            pos += 1 + more1 + more2
        else:
            while x >= 128:
                out[pos] = (x & 127) | 128
                x >>= 7
                pos += 1
            out[pos] = x
            pos += 1


def _varint_array(v: np.ndarray, delta: bool) -> np.ndarray:
    v = np.ascontiguousarray(v, dtype=np.int64)
    nb = _varint_total(v, delta) if v.size else 0
    out = np.empty(nb + 3, dtype=np.uint8)
    if v.size:
        _varint_write(v, delta, out)
    return out[:nb]


def varint_encode_indices(idx: np.ndarray) -> np.ndarray:
    """LEB128 varints of the gaps minus one (``i_0, i_1 - i_0 - 1, ...``) of sorted indices, as uint8."""
    return _varint_array(idx, True)


@njit(cache=True)
def _varint_read(buf, n, delta, out):
    # byte by byte with no branch on the continuation bit: every byte ors its 7 bits in and stores the
    # running value at slot c; a final byte (high bit clear) moves c on and resets the value and shift
    v = 0
    shift = 0
    c = 0
    prev = -1
    for j in range(buf.size):
        if shift > 56:
            return -1
        b = np.int64(buf[j])
        v |= (b & 127) << shift
        end = 1 - (b >> 7)  # 1 on a value's last byte
        keep = end - 1  # 0 on a last byte, all ones otherwise
        if delta:
            out[np.uint64(c)] = prev + v + 1
            prev += (v + 1) & -end
        else:
            out[np.uint64(c)] = v
        c += end
        if c == n:
            return j + 1
        v &= keep
        shift = (shift + 7) & keep
    return -1


def _varint_decode_fast(buf, n: int, delta: bool) -> np.ndarray:
    b = np.frombuffer(buf, dtype=np.uint8)
    out = np.empty(n, dtype=np.int64)
    if n and _varint_read(b, int(n), delta, out) < 0:
        raise ValueError("truncated or corrupt varint section")
    return out


def varint_decode_indices(buf, n: int) -> np.ndarray:
    """Inverse of :func:`varint_encode_indices`: the ``n`` sorted indices."""
    return _varint_decode_fast(buf, n, True)


@njit(cache=True)
def _bitmap_read(words, tail, out):
    # set bits of each 64-bit word (then of the tail word: the last bytes), two positions written
    # unconditionally (out has two slots of slack; a word with no bit left writes 64 + its base there,
    # overwritten later or past the count) and a loop only for a word with three or more: at 1% density
    # no branch depends on the data
    c = 0
    n = out.size - 2
    for j in range(words.size + 1):
        w = words[j] if j < words.size else tail
        if c > n:
            return -1
        base = 64 * j
        w1 = w & (w - np.uint64(1))
        out[np.uint64(c)] = base + trailing_zeros(w)
        out[np.uint64(c + 1)] = base + trailing_zeros(w1)
        c += (1 if w != 0 else 0) + (1 if w1 != 0 else 0)
        w = w1 & (w1 - np.uint64(1))
        while w != 0:
            if c >= n:
                return -1
            out[c] = base + trailing_zeros(w)
            c += 1
            w &= w - np.uint64(1)
    return c


def bitmap_encode_array(idx: np.ndarray, d: int) -> np.ndarray:
    """:func:`bitmap_encode` as a uint8 array (a buffer ``bytes.join`` takes without another copy)."""
    out = np.zeros((d + 7) // 8, dtype=np.uint8)
    _bitmap_encode(np.ascontiguousarray(idx, dtype=np.int64), out)
    return out
