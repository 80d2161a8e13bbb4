"""Payload encode + decode of a top-1% message (d = 10^7, k = 10^5) against the copy-bandwidth floor.

Target (issues 18 and 40): encode + decode within 3x of the copy-bandwidth floor of the message's
arrays. The floor is measured in the same run: copying the message's arrays (int64 indices and float32
values) twice, once for each direction, which is what any encoder/decoder must at least touch (1.2 MB
each way, from cache: about 45 us). The ratio reported is floor time / codec time (1.0 = at the floor;
the target is >= 1/3). The variable-length codings and the d-bit bitmap have a lower ceiling, stated
in their target strings (:data:`CEILING`): a scalar gamma or varint decoder finds where code i + 1
starts only after reading code i (a chain of dependent loads, shifts and a trailing-zero count per
index, about 2-4 ns each on this machine, where the floor allows 0.15 ns per index each way; SIMD
varint decoders that find many boundaries at once are not tried here), and the bitmap has d/8 =
1.25 MB to zero, copy and scan whatever k is. Of those, only the scan is costly: extracting the set
bits of all d/64 words (1.2-1.6 ns a word, branch-free); the target string also prints, measured in
the same run, the floor time over the three plain passes over a d-bit map (``np.zeros``, a copy,
``np.count_nonzero`` of its 64-bit words), which a bitmap decoder cannot beat either.
"""


import numpy as np
import pytest

from simcomm.network import decode, encode, message
from tests.benchmarks._timing import best_interleaved

#: rounds of each timed call (about 0.1-1 ms each): enough that the best of them is an undisturbed run
ROUNDS = 60


#: why the index codings with a variable or d-dependent length stay below the 1/3 target
CEILING = {
    "bitmap": ("ceiling about 0.15x: the decoder extracts the set bits of all d/64 = 156,250 words (a branch-free "
               "trailing-zero loop, 1.2-1.6 ns per word), whatever k is; the map's zeroing, copy and a plain "
               "count_nonzero scan alone would allow {map:.2f}x"),
    "gamma": "ceiling about 0.1x: each code's start depends on the previous code (serial bit reader)",
    "varint": "ceiling about 0.15x: each value's bytes end where its high bit is clear (serial byte scan)",
}


@pytest.fixture(scope="module")
def msg():
    x = np.random.default_rng(2026).standard_normal(10**7, dtype=np.float32)
    m = message("top_k", x, k=10**5)
    for coding in ("raw", "packed", "bitmap", "gamma", "varint"):  # compile outside the timed region
        decode(encode(m, coding))
    return m


def _map_passes(m):
    """The three passes over a ``d``-bit map that a bitmap codec makes whatever ``k`` is."""
    words = np.zeros((m.d + 63) // 64, dtype=np.uint64)
    return np.count_nonzero(words.copy())


def _copy_floor(m):
    return m.indices.copy(), m.values.copy(), m.indices.copy(), m.values.copy()


@pytest.mark.parametrize("coding", ["raw", "packed", "bitmap", "gamma", "varint"])
def test_bench_payload_roundtrip(benchmark, msg, coding):
    out = benchmark.pedantic(lambda: decode(encode(msg, coding)), rounds=3, iterations=1)
    assert out == msg
    # the codec and the floor interleaved (codec, floor, codec, ...): a burst of load hits both
    (t_codec, t_floor, t_map), _ = best_interleaved(
        [lambda: decode(encode(msg, coding)), lambda: _copy_floor(msg), lambda: _map_passes(msg)], ROUNDS)
    target = ">= 0.33x (within 3x of the floor)"
    if coding in CEILING:
        target += f"; {CEILING[coding].format(map=t_floor / t_map)} (measured {t_floor / t_codec:.2f}x)"
    benchmark.extra_info.update(ratio=t_floor / t_codec, baseline="copy of the message arrays (x2)", target=target)
