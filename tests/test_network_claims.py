"""Experiments behind the net.* claims (issue 18): small versions, against theory/network.py."""

import math

import numpy as np
import pytest

from simcomm.experiments import get_experiment
from simcomm.network import HEADER_BYTES
from theory import network as th


def _rows(name, rng=0, **params):
    e = get_experiment(name)
    return e.func(e.validate(params, "test"), np.random.default_rng(rng), "numpy")


FORMULA_CASES = ["none:float32", "none:float16", "none:bfloat16", "top_k:auto", "top_k:packed", "top_k:bitmap",
                 "top_k:raw", "rand_k:auto", "rtop_k:auto", "qsgd:fixed", "ternary:trit5", "ternary:2bit"]


@pytest.mark.parametrize("d, density", [(37, 0.1), (1000, 0.01), (5000, 0.3)])
@pytest.mark.parametrize("case", FORMULA_CASES)
def test_payload_bits_match_theory_within_padding(case, d, density):
    (row, *_) = _rows("payload_bits", case=case, d=d, density=density, s=5)
    assert row["metric"] == "encoded_bits" and "note" not in row
    excess = row["value"] - th.framed_payload_bits(case, d, density, 5, row["header_bits"])
    assert 0 <= excess <= 14


def test_payload_bits_control_is_violated():
    # float16 values on the wire: 16 bits per kept value below the float32 formula
    (row, *_) = _rows("payload_bits", case="top_k:auto", d=10_000, density=0.01, value_dtype="float16")
    assert th.framed_payload_bits("top_k:auto", 10_000, 0.01) - row["value"] >= 16 * 100 - 14


@pytest.mark.parametrize("case", ["rand_k:gamma", "top_k:gamma"])
@pytest.mark.parametrize("d, density", [(1000, 0.001), (10_000, 0.01), (10_000, 0.5)])
def test_gap_bits_below_the_jensen_bound(case, d, density):
    idx_row = [r for r in _rows("payload_bits", case=case, d=d, density=density) if r["metric"] == "index_bits"][0]
    assert idx_row["value"] <= th.gamma_gap_bits_upper(d, density)
    raw = [r for r in _rows("payload_bits", case=case.replace("gamma", "raw"), d=d, density=density)
           if r["metric"] == "index_bits"][0]
    if density < 0.3:  # the control: raw int32 indices exceed the bound while d/k < 2^15.5
        assert raw["value"] > th.gamma_gap_bits_upper(d, density)


@pytest.mark.parametrize("n", [2, 4, 7])
def test_allgather_crossover_simulation_equals_closed_forms_for_equal_sizes(n):
    # packed coding: every node's message has the same size; d divisible by n: equal chunks
    d = 700 * n
    rows = {r["metric"]: r for r in _rows("allgather_crossover", n=n, d=d, density=0.05, coding="packed",
                                          alpha=3e-6, beta=2e-9)}
    b_s, b_d = rows["sparse_bytes"]["value"], 4 * d
    assert rows["allgather_time"]["value"] == pytest.approx(th.allgather_time(n, b_s, 3e-6, 2e-9), rel=1e-12)
    assert rows["allreduce_time"]["value"] == pytest.approx(th.ring_allreduce_time(n, b_d, 3e-6, 2e-9), rel=1e-12)


def test_allgather_crossover_labels_follow_the_predictor():
    for n, pays in ((16, True), (256, False)):  # n* ~ 150 here
        rows = _rows("allgather_crossover", n=n, d=20_000, density=0.01, alpha=1e-7, beta=1e-9)
        m = {r["metric"]: r["value"] for r in rows if "prediction" not in r}
        assert bool(m["topk_predicted_faster"]) is pays
        faster = [r["value"] for r in rows if r.get("prediction") == "predicted_faster"][0]
        expect = m["allgather_time"] if pays else m["allreduce_time"]
        assert faster == expect


def test_crossover_beta_separates_the_two_sides():
    args = dict(rho=1.6, n=8, dense_bytes=2632.0, sparse_bytes=38.0, alpha=1e-5, shift=1e-4, scale=5e-5)
    b_star = th.ef_topk_crossover_beta(**args)
    assert 0 < b_star < math.inf
    assert th.ef_topk_time_ratio(beta=b_star / 1.01, **args) > 1 > th.ef_topk_time_ratio(beta=b_star * 1.01, **args)
    n_star = th.sparse_allgather_crossover_n(4e5, 5500.0, 1e-6, 1e-9)
    assert th.sparse_allgather_time_ratio(math.floor(n_star), 4e5, 5500.0, 1e-6, 1e-9) < 1
    assert th.sparse_allgather_time_ratio(math.ceil(n_star), 4e5, 5500.0, 1e-6, 1e-9) > 1


def test_compression_pays_rows_are_paired_and_labelled():
    rows = _rows("compression_pays", rng=3, steps=80, record_every=10, target_loss=0.5, beta=1e-6)
    tt = [r for r in rows if r["metric"] == "time_to_target"]
    assert sorted(r["prediction"] for r in tt) == ["predicted_faster", "predicted_slower"]
    assert all(r["value"] > 0 and not r["censored"] for r in tt)
    m = {r["metric"]: r["value"] for r in rows if "prediction" not in r}
    assert m["rho_pilot"] > 0 and m["topk_predicted_faster"] in (0.0, 1.0)
    assert HEADER_BYTES == 32


def test_one_peer_time_follows_the_cost_ratio_at_equal_steps():
    rows = {r["metric"]: r for r in _rows("one_peer_time", rng=1, n=8, steps=300, beta=1e-9)}
    st, ratio = rows["static_time"], rows["step_ratio"]["value"]
    pred = th.one_peer_static_time(st["onepeer_time"], 8, 4e6, 1e-4, 1e-9, 1e-3)
    # time = steps x per-step cost, so the measured/predicted ratio is exactly the hitting-step ratio
    assert st["value"] / pred == pytest.approx(ratio, rel=1e-9)
    expect = (1e-3 + 1e-4 + 3 * 4e-3) / (1e-3 + 1e-4 + 4e-3)  # tau = 3 messages of 4e6 B at 1 GB/s
    assert th.one_peer_time_ratio(8, 4e6, 1e-4, 1e-9, 1e-3) == pytest.approx(expect)
