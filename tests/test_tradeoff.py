"""``compressor_tradeoff`` (issue 31): every registered compressor on one error-vs-bits axis, r as r/k or r."""

import numpy as np
import pytest

from simcomm.compress import COMPRESSORS, QSGD, message_bits
from simcomm.experiments.tradeoff import _check, compressor_tradeoff


def _rows(label, vector="gaussian", d=512, draws=8, points=5, seed=0):
    return compressor_tradeoff(dict(compressor=label, vector=vector, d=d, draws=draws, points=points),
                               np.random.default_rng(seed), "numpy")


def test_every_registered_compressor_gives_rows_on_the_axis():
    for name in COMPRESSORS:
        # a family with a required setting that is not swept is named with it
        label = {"rtop_k": "rtop_k(r_over_k=4)", "compose": "compose(first=top_k(k=64), second=qsgd(s=4))",
                 "scaling": "scaling(c=0.5)", "powersgd": "powersgd(rank=2)"}.get(name, name)
        rows = _rows(label, d=256, draws=2, points=3)
        assert rows and all(r["metric"] == "rel_error" and np.isfinite(r["value"]) and r["value"] >= 0
                            and r["bits_per_coord"] > 0 for r in rows), name


def test_ladders_bits_and_closed_forms():
    d = 512
    top = _rows("top_k", d=d)
    assert [r["k"] for r in top] == [16, 32, 64, 128, 256]  # d/2 ... d/2^5, sorted
    assert all(r["bits_per_coord"] == message_bits(int(r["k"]), d) / d for r in top)
    # top-k keeps the k largest squares: at most the (1 - k/d) worst case on every vector
    assert all(r["value"] <= 1 - r["k"] / d + 1e-12 for r in top)
    q = _rows("qsgd", d=d)
    assert [r["s"] for r in q] == [1, 2, 4, 8, 16] and q[2]["bits_per_coord"] == QSGD(4).bits(d) / d
    # unscaled rand-k: E||C(v) - v||^2 / ||v||^2 = 1 - k/d exactly in expectation; the mean over 8 draws of
    # ||v_dropped||^2 (a sum of d - k of d exchangeable unit-sum squares) has sd < 0.05 here: 5 sd
    for r in _rows("rand_k(scale=false)", d=d):
        assert abs(r["value"] - (1 - r["k"] / d)) < 0.25
    assert _rows("none", d=d)[0]["value"] == 0.0 and _rows("none", d=d)[0]["bits_per_coord"] == 32.0


def test_rtopk_takes_r_over_k_or_an_absolute_r():
    rows = _rows("rtop_k(r_over_k=4)", d=512)
    assert all(r["r"] == min(512, 4 * r["k"]) and r["r_over_k"] == 4.0 for r in rows)
    rows = _rows("rtop_k(r=100)", d=512)
    assert [r["k"] for r in rows] == [16, 32, 64] and all(r["r"] == 100 for r in rows)  # k > r skipped


@pytest.mark.parametrize("label, needle", [
    ("topk", "is not registered (did you mean 'top_k'?)"),
    ("top_k(k=5)", "k is swept by the experiment"),
    ("rtop_k", "r_over_k=... or r=..."),
    ("rtop_k(r_over_k=0.5)", "r_over_k = 0.5 is not allowed"),
    ("qsgd(r_over_k=2)", "r_over_k and r are rtop_k settings"),
    ("scaled_sign(norm=l3)", "l3"),
])
def test_bad_labels_are_one_line(label, needle):
    with pytest.raises(ValueError, match=None) as exc:
        _check({"compressor": label})
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_sparsifier_error_takes_r_over_k_as_well_as_r():
    from simcomm.experiments import get_experiment

    exp = get_experiment("sparsifier_error")
    base = dict(d=400, k=10, nnz=40, draws=50, method="rtop_k", alpha=1.0, profile="pareto", scale=True)
    full = {name: p.default for name, p in exp.params.items()}
    by_ratio = exp.func({**full, **base, "r_over_k": 4.0}, np.random.default_rng(3), "numpy")
    by_r = exp.func({**full, **base, "r": 40}, np.random.default_rng(3), "numpy")
    assert by_ratio == by_r  # the same r = 40 on the same stream
    with pytest.raises(ValueError, match="both set rTop-k's top set"):
        exp.check({**full, **base, "r": 40, "r_over_k": 4.0})
    with pytest.raises(ValueError, match="use r/k >= 1"):
        exp.check({**full, **base, "r_over_k": 0.5})
