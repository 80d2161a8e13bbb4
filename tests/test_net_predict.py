"""``simcomm net predict`` (issue 31): per-step times of each compressor, the break-even step inflation, --simulate.

The predictions are checked against the closed forms of ``theory.network`` (tests may import both
layers); bad input is one line with exit code 2.
"""

import json
import math

import pytest

import theory.network as tn
from simcomm.cli import main
from simcomm.experiments.network import measure_step_inflation
from simcomm.network import HEADER_BYTES, Network, predict_step_times
from simcomm.network._predict import resolve_compressor


def _run(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["net", "predict", *args])
    return exc.value.code, capsys.readouterr()


def test_predict_agrees_with_theory_network():
    d, n, alpha, beta, c, scale = 10**6, 16, 2e-5, 4e-9, 3e-3, 1e-3
    rows = predict_step_times(d, n, Network(alpha, beta), ["top_k(k=1%)", "qsgd(s=4)", "fp16"], compute=c,
                              compute_scale=scale)
    by = {r["compressor"]: r for r in rows}
    dense = HEADER_BYTES + 4 * d
    assert by["none"]["bytes"] == dense and by["none"]["break_even"] == 1.0
    topk = by["top_k(k=10000)"]
    # 32-bit values + min(k ceil(log2 d), d) index bits (the bitmap is cheaper here) + the header
    assert topk["bytes"] == HEADER_BYTES + math.ceil((32 * 10_000 + min(10_000 * 20, d)) / 8)
    args = dict(n=n, dense_bytes=float(dense), sparse_bytes=float(topk["bytes"]), alpha=alpha, beta=beta,
                shift=c, scale=scale)
    assert topk["break_even"] == pytest.approx(tn.ef_break_even_step_ratio(**args), rel=1e-12)
    # at rho = break-even the predicted time ratio is exactly 1; below it compression pays
    assert tn.ef_topk_time_ratio(topk["break_even"], **args) == pytest.approx(1.0, rel=1e-12)
    assert topk["crossover_n"] == pytest.approx(
        tn.sparse_allgather_crossover_n(float(dense), float(topk["bytes"]), alpha, beta), rel=1e-12)
    assert topk["step_s"] == pytest.approx(
        tn.expected_max_compute(n, c, scale) + tn.allgather_time(n, topk["bytes"], alpha, beta), rel=1e-12)
    # fp16 still sums: a ring allreduce of half the bytes
    assert by["fp16"]["pattern"] == "ring_allreduce"
    assert by["fp16"]["comm_s"] == pytest.approx(tn.ring_allreduce_time(n, HEADER_BYTES + 2 * d, alpha, beta))


def test_resolve_compressor_percent_and_bad_labels():
    assert resolve_compressor("rtop_k(k=1%, r=4%)", 1000).label == "rtop_k(k=10, r=40)"
    assert resolve_compressor("top_k(k=0.01%)", 1000).label == "top_k(k=1)"  # at least one coordinate
    with pytest.raises(ValueError, match="compressor 'topk'"):
        resolve_compressor("topk", 1000)


def test_cli_table_and_json(capsys):
    code, cap = _run(["-d", "25e6", "-n", "64", "--bandwidth", "1.25", "--alpha", "5e-6", "--compute", "0.05"], capsys)
    assert code == 0, cap.err
    lines = cap.out.splitlines()
    assert lines[0].startswith("D = 25,000,000 parameters, n = 64") and "1.25 GB/s" in lines[0]
    assert [ln.split()[0] for ln in lines[2:9]] == ["none", "top_k(k=250000)", "rand_k(k=250000,", "qsgd(s=16)",
                                                    "ternary", "scaled_sign(norm=l1)", "fp16"]
    assert lines[-1].startswith("break-even: compression pays iff")
    code, cap = _run(["-d", "1e6", "-n", "8", "--alpha", "1e-5", "--beta", "1e-8", "-c", "top_k(k=100)",
                      "--json"], capsys)
    out = json.loads(cap.out)
    assert code == 0 and [r["compressor"] for r in out["rows"]] == ["none", "top_k(k=100)"]
    assert out["rows"][1]["break_even"] == pytest.approx(out["rows"][0]["step_s"] / out["rows"][1]["step_s"])


def test_cli_reads_a_calibrated_network_file(tmp_path, capsys):
    f = tmp_path / "net.toml"
    f.write_text("[network]\nalpha = 1e-5\nbeta = 1e-9\n")
    code, cap = _run(["-d", "1e6", "-n", "8", "--network", str(f), "-c", "ternary", "--json"], capsys)
    assert code == 0 and json.loads(cap.out)["beta"] == 1e-9


@pytest.mark.parametrize("args, msg", [
    (["-d", "1e6", "-n", "8"], "the network is missing"),
    (["-d", "1e6", "-n", "1", "--alpha", "0", "--beta", "1e-9"], "n = 1 is not allowed"),
    (["-d", "0.5", "-n", "8", "--alpha", "0", "--beta", "1e-9"], "--params 0.5 is not allowed"),
    (["-d", "nan", "-n", "8", "--alpha", "0", "--beta", "1e-9"], "--params nan is not allowed"),
    (["-d", "1e70", "-n", "8", "--alpha", "0", "--beta", "1e-9"], "larger than any model"),
    (["-d", "1e6", "-n", "8", "--alpha", "-1", "--beta", "1e-9"], "--alpha -1 is not allowed"),
    (["-d", "1e6", "-n", "8", "--alpha", "0", "--bandwidth", "0"], "--bandwidth 0 is not allowed"),
    (["-d", "1e6", "-n", "8", "--alpha", "0", "--bandwidth", "1", "--beta", "1e-9"], "say the same thing"),
    (["-d", "1e6", "-n", "8", "--alpha", "0", "--beta", "1e-9", "-c", "qsgd"], "compressor 'qsgd'"),
    (["-d", "1e6", "-n", "8", "--alpha", "0", "--beta", "1e-9", "-c", "top_k(k=2000000)"], "exceeds d = 1000000"),
    (["-d", "1e6", "-n", "8", "--alpha", "0", "--beta", "1e-9", "--compute", "nan"], "compute (s per step) = nan"),
    (["-d", "1e6", "-n", "8", "--network", "/nonexistent/net.toml"], "cannot read network file"),
])
def test_bad_input_is_one_line(args, msg, capsys):
    code, cap = _run(args, capsys)
    assert code == 2 and msg in cap.err and "Traceback" not in cap.err and cap.err.count("\n") == 1, cap.err


def test_measured_inflation_of_sgd_is_one_and_censoring_is_counted():
    # Identity against itself shares initial point, minibatches and (unused) compressor streams: rho = 1 exactly
    rows = measure_step_inflation(["none", "top_k(k=1%)"], d=1000, n=4, steps=300, replicates=2, rng=1,
                                  backend="numpy")
    assert rows[0]["rho"] == 1.0 and rows[0]["censored"] == 0
    assert rows[1]["stand_in"] == "top_k(k=6)"  # 1% of d = 1000 is 1% of the stand-in's D = 650 (rounded)
    r = rows[1]
    if r["censored"] == 2:  # no replicate reached the target: rho unknown, never a number
        assert math.isnan(r["rho"])
    else:
        assert 0 < r["rho_min"] <= r["rho"] <= r["rho_max"]
    # a horizon too short for SGD itself: one line, nothing measured
    with pytest.raises(ValueError, match="stand-in's SGD did not reach"):
        measure_step_inflation(["top_k(k=1%)"], d=1000, steps=5, replicates=1, rng=1, backend="numpy")


def test_cli_simulate_gives_a_verdict(capsys):
    code, cap = _run(["-d", "1e6", "-n", "8", "--alpha", "1e-5", "--beta", "1e-8", "-c", "top_k(k=1%)",
                      "--simulate", "--replicates", "1", "--steps", "300"], capsys)
    assert code == 0, cap.err
    row = next(ln for ln in cap.out.splitlines() if ln.startswith("top_k"))
    assert row.split()[-1] in ("pays", "pay", "(censored)")
    assert "measured" in cap.out.splitlines()[1]


@pytest.mark.parametrize("text, bytes_per_s", [
    ("10Gb/s", 1.25e9), ("10Gbit/s", 1.25e9), ("10Gbps", 1.25e9), ("1.25GB/s", 1.25e9), ("100Mb/s", 12.5e6),
    ("1GiB/s", 2.0**30), ("800 kbit/s", 1e5),
])
def test_bandwidth_takes_units(text, bytes_per_s, capsys):
    code, cap = _run(["-d", "1e6", "-n", "8", "--alpha", "1e-5", "--bandwidth", text, "-c", "ternary", "--json"],
                     capsys)
    assert code == 0 and json.loads(cap.out)["beta"] == pytest.approx(1 / bytes_per_s) and cap.err == ""


def test_a_bare_bandwidth_is_gigabytes_and_the_line_says_so(capsys):
    # a bare 10 meant as 10 Gbit/s would be 8x off: the reading is printed, never silent
    code, cap = _run(["-d", "1e6", "-n", "8", "--alpha", "1e-5", "--bandwidth", "10", "-c", "ternary", "--json"],
                     capsys)
    assert code == 0 and json.loads(cap.out)["beta"] == pytest.approx(1e-10)
    assert cap.err.count("\n") == 1 and "read as 10 GB/s (bytes) = 80 Gbit/s" in cap.err and "10GB/s" in cap.err


@pytest.mark.parametrize("text, msg", [("fast", "is not a bandwidth"), ("10G", "is not a bandwidth"),
                                       ("-1Gb/s", "is not allowed"), ("10Gb/h", "is not a bandwidth")])
def test_bad_bandwidth_is_one_line(text, msg, capsys):
    code, cap = _run(["-d", "1e6", "-n", "8", "--alpha", "0", "--bandwidth", text], capsys)
    assert code == 2 and msg in cap.err and "10Gb/s" in cap.err and cap.err.count("\n") == 1, cap.err


def test_latency_takes_units_and_a_huge_node_count_returns_at_once(capsys):
    from simcomm.cli import main
    from simcomm.network._predict import _harmonic

    assert _harmonic(10_001) == pytest.approx(sum(1.0 / i for i in range(1, 10_002)), rel=1e-13)
    with pytest.raises(SystemExit) as exc:  # H_n in closed form: 10^12 nodes is one evaluation, not a loop
        main(["net", "predict", "-d", "1e6", "-n", "1000000000000", "--alpha", "5us", "--bandwidth", "10Gb/s",
              "--compute-scale", "0.01", "--json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha"] == 5e-6 and doc["n"] == 10**12
