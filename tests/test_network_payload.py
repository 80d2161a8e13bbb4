"""Real payloads (issue 18): exact round trips for every compressor and coding, sizes vs formulas."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcomm import compress
from simcomm._errors import UserError
from simcomm.network import (
    CODINGS,
    HEADER_BYTES,
    VALUE_DTYPES,
    _bits,
    decode,
    encode,
    formula_bits,
    message,
    payload_sections,
)

SPARSE = ("top_k", "rand_k", "rtop_k")


@st.composite
def _case(draw):
    comp = draw(st.sampled_from(["none", "top_k", "rand_k", "rtop_k", "bernoulli", "qsgd", "ternary",
                                 "stochastic_round"]))
    d = draw(st.integers(1, 300))
    x = np.array(draw(st.lists(st.floats(-1e3, 1e3, width=32), min_size=d, max_size=d)), dtype=np.float32)
    kw = {}
    if comp in SPARSE:
        kw["k"] = draw(st.integers(1, d))
        if comp == "rtop_k":
            kw["r"] = draw(st.integers(kw["k"], d))
    elif comp == "bernoulli":
        kw["p"] = draw(st.floats(0.05, 1.0))
    elif comp == "qsgd":
        kw["s"] = draw(st.integers(1, 300))
    elif comp == "stochastic_round":
        kw["delta"] = draw(st.floats(0.01, 10.0))
    vdt = draw(st.sampled_from(VALUE_DTYPES)) if comp in ("none", *SPARSE, "bernoulli") else "float32"
    return comp, x, kw, vdt, draw(st.integers(0, 2**32))


@settings(max_examples=60, deadline=None)
@given(_case())
def test_roundtrip_every_compressor_and_coding(case):
    comp, x, kw, vdt, seed = case
    m = message(comp, x, value_dtype=vdt, rng=seed, **kw)
    for coding in CODINGS[m.kind]:
        blob = encode(m, coding)
        assert decode(blob) == m, (comp, coding)
        # size = formula bits + header + at most 7 padding bits per byte-aligned section
        extra = 8 * len(blob) - formula_bits(m, coding) - 8 * HEADER_BYTES
        assert 0 <= extra <= 7 * payload_sections(m, coding), (comp, coding, extra)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 2**31), min_size=0, max_size=200))
def test_gamma_and_varint_codes_invert(g):
    g = np.array(g, dtype=np.int64)
    assert np.array_equal(_bits.gamma_decode(_bits.gamma_encode(g), g.size), g)
    assert len(_bits.gamma_encode(g)) == (_bits.gamma_bits(g) + 7) // 8
    assert np.array_equal(_bits.varint_decode(_bits.varint_encode(g - 1), g.size), g - 1)
    assert 8 * len(_bits.varint_encode(g - 1)) == _bits.varint_bits(g - 1)


@pytest.mark.parametrize("w", [1, 3, 8, 17, 32])
def test_fixed_width_pack(w):
    v = np.random.default_rng(w).integers(0, 2**w, size=101)
    assert np.array_equal(_bits.unpack_fixed(_bits.pack_fixed(v, w), v.size, w), v)


@pytest.mark.parametrize("w", range(1, 33))
@pytest.mark.parametrize("n", [_bits._WORDS_MIN, 1000, 4099])
def test_fixed_width_word_kernel_equals_the_byte_stream(w, n):
    """Long sections are packed and unpacked through 64-bit words; every width and a ragged end against
    the one-value-at-a-time byte stream, with trailing bytes after the section (as in a payload)."""
    v = np.random.default_rng(100 * w + n).integers(0, 2**w, size=n)
    ref_bytes = np.zeros((n * w + 7) // 8, dtype=np.uint8)
    _bits._pack_fixed(v, w, ref_bytes)  # the byte stream, one value at a time
    assert _bits.pack_fixed(v, w) == ref_bytes.tobytes()
    buf = _bits.pack_fixed(v, w) + b"\xff" * 5
    ref = np.empty(n, dtype=np.int64)
    _bits._unpack_fixed(np.frombuffer(buf, dtype=np.uint8), n, w, ref)
    got = _bits.unpack_fixed(buf, n, w)
    assert np.array_equal(ref, v) and np.array_equal(got, v)


def test_messages_are_the_compressors_outputs():
    x = np.random.default_rng(3).standard_normal(500)
    np.testing.assert_array_equal(message("top_k", x, k=20).dense(), compress.top_k(x, 20).astype(np.float32))
    got = message("rand_k", x, k=20, rng=5).dense()
    np.testing.assert_allclose(got, compress.rand_k(x, 20, rng=5), rtol=1e-6)
    np.testing.assert_allclose(message("rtop_k", x, k=20, r=60, rng=5).dense(), compress.rtop_k(x, 20, 60, rng=5),
                               rtol=1e-6)
    np.testing.assert_allclose(message("qsgd", x, s=8, rng=5).dense(), compress.qsgd(x, 8, rng=5), rtol=1e-6)
    np.testing.assert_allclose(message("ternary", x, rng=5).dense(), compress.ternary(x, rng=5), rtol=1e-6)
    np.testing.assert_allclose(message("stochastic_round", x, delta=0.25, rng=5).dense(),
                               compress.stochastic_round(x, 0.25, rng=5), rtol=1e-12)
    np.testing.assert_allclose(message("bernoulli", x, p=0.3, rng=5).dense(),
                               compress.bernoulli_sparsify(x, 0.3, rng=5), rtol=1e-6)


@pytest.mark.parametrize("obj, name, kw", [
    (compress.Identity(), "none", {}), (compress.TopK(20), "top_k", {"k": 20}),
    (compress.RandK(20), "rand_k", {"k": 20}), (compress.RTopK(20, 60), "rtop_k", {"k": 20, "r": 60}),
    (compress.QSGD(8), "qsgd", {"s": 8}), (compress.Ternary(), "ternary", {}),
    (compress.StochasticRound(0.25), "stochastic_round", {"delta": 0.25}),
    (compress.Bernoulli(0.3), "bernoulli", {"p": 0.3}),
])
def test_message_takes_a_compressor_object(obj, name, kw):
    # the object and its name with loose settings give the same bytes on the wire
    x = np.random.default_rng(3).standard_normal(500)
    assert encode(message(obj, x, rng=5)) == encode(message(name, x, rng=5, **kw))


def test_message_refuses_ambiguous_compressor_objects():
    x = np.ones(10)
    with pytest.raises(UserError, match="already holds its settings; drop k="):
        message(compress.TopK(2), x, k=3)
    # unscaled rand-k has its own wire form now (the kept entries as they are), the compressor's output
    x = np.random.default_rng(3).standard_normal(50)
    c = compress.RandK(5, scale=False)
    np.testing.assert_array_equal(c.decode(message(c, x, rng=5)), c.apply(x, rng=5).astype(np.float32))


def test_formula_codings_match_library_formulas():
    x = np.random.default_rng(0).standard_normal(4096)
    m = message("top_k", x, k=40)
    assert formula_bits(m, "auto") == compress.message_bits(40, 4096)
    assert formula_bits(message("qsgd", x, s=4, rng=0)) == compress.QSGD(4).bits(4096)
    assert formula_bits(message("ternary", x, rng=0)) == compress.Ternary().bits(4096)
    assert formula_bits(message("none", x)) == 32 * 4096


def test_bfloat16_rounds_to_nearest_even():
    from simcomm.compress import to_bfloat16

    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5], dtype=np.float32)
    assert to_bfloat16(x).tolist() == [1.0, 1.0, 1.0 + 2**-6, -2.5]


def test_gap_coding_beats_raw_on_sparse_random_subsets():
    x = np.random.default_rng(1).standard_normal(100_000)
    m = message("rand_k", x, k=1000, rng=2)
    # Jensen: sum (2 floor(log2 g) + 1) <= k (2 log2(d/k) + 1) for gaps summing to at most d
    gamma_index = formula_bits(m, "gamma") - 32 * 1000
    assert gamma_index <= 1000 * (2 * np.log2(100) + 1)
    assert len(encode(m, "gamma")) < len(encode(m, "raw"))


@pytest.mark.parametrize("bad", [b"", b"XX" + bytes(40), None])
def test_bad_payload_is_one_line(bad):
    if bad is None:
        bad = encode(message("top_k", np.arange(50.0), k=5), "gamma")[:-25]
    with pytest.raises(UserError, match="cannot decode the payload"):
        decode(bad)


@pytest.mark.parametrize("args, msg", [
    (["top_k", "-d", "10", "--k", "11"], "k = 11 is out of range"),
    (["top_k", "-d", "10", "--k", "3", "--coding", "zip"], "unknown coding 'zip'"),
    (["qsgd", "-d", "10"], "qsgd needs s"),
    (["zip", "-d", "10"], "unknown compressor 'zip'"),
    (["none", "-d", "0"], "-d 0 is out of range"),
])
def test_cli_bad_input(args, msg, capsys):
    from simcomm.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["payload", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_json(capsys):
    from simcomm.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["payload", "top_k", "-d", "1000", "--k", "10", "--coding", "packed", "--json"])
    assert exc.value.code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["roundtrip"] is True
    assert info["bits"] == compress.message_bits(10, 1000)
    assert 8 * info["bytes"] - info["bits"] - 8 * HEADER_BYTES in range(0, 15)


@pytest.mark.parametrize("w", [1, 7, 20, 24, 31, 32])
@pytest.mark.parametrize("n", [_bits._WORDS_MIN, 1001])
@pytest.mark.parametrize("lead", [0, 1, 4])
def test_fixed_width_unpack_in_place_and_copied(w, n, lead):
    """The unpacker reads a section in place (4-aligned, with a word past it: the rest of a payload) or
    from an aligned copy; with arbitrary bytes around the section both give the packed values."""
    v = np.random.default_rng(7 * w + n).integers(0, 2**w, size=n)
    raw = np.full(lead + (n * w + 7) // 8 + 16, 0xFF, dtype=np.uint8)
    raw[lead:lead + (n * w + 7) // 8] = np.frombuffer(_bits.pack_fixed(v, w), dtype=np.uint8)
    body = memoryview(raw.tobytes())[lead:]
    assert np.array_equal(_bits.unpack_fixed(body, n, w), v)  # 16 bytes of 0xff after the section
    assert np.array_equal(_bits.unpack_fixed(body[:(n * w + 7) // 8], n, w), v)  # nothing after it
