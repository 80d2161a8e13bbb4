"""``simcomm net predict --local``: time per inner step of local-update methods against H, compressor and network.

The closed form is checked against predict_step_times (H = 1 is data-parallel SGD's step, stragglers
included) and against its own definition; the expected maximum of Gamma(H) straggler sums against the
harmonic number (H = 1), the mean (n = 1) and a Monte Carlo estimate.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from simcomm._errors import UserError
from simcomm.network import Network, expected_max_gamma, predict_local_times, predict_step_times

NET = Network(5e-6, 8e-10)


def test_expected_max_gamma_closed_forms_and_monte_carlo():
    for n in (2, 7, 64):
        assert math.isclose(expected_max_gamma(1, n), sum(1 / i for i in range(1, n + 1)), rel_tol=1e-9)
    assert expected_max_gamma(6, 1) == 6.0
    # Monte Carlo: 100,000 maxima of 16 Gamma(8) draws; the standard error of their mean is std / sqrt(N) (about
    # 0.007 here), so 5 of them is a 5-sigma tolerance for a fixed seed
    g = np.random.default_rng(20261202).gamma(8.0, size=(100_000, 16)).max(axis=1)
    assert abs(expected_max_gamma(8, 16) - g.mean()) < 5 * g.std() / math.sqrt(g.size)
    # waiting once a round for the slowest of H-step sums costs less than H waits for the slowest single step
    assert expected_max_gamma(8, 16) < 8 * expected_max_gamma(1, 16)


def test_h1_uncompressed_is_data_parallel_sgd_step():
    d, n, c, s = 10**7, 16, 0.05, 0.01
    ref = predict_step_times(d, n, NET, ["top_k(k=1%)"], compute=c, compute_scale=s)
    rows = predict_local_times(d, n, NET, [1, 8], ["none", "top_k(k=1%)"], compute=c, compute_scale=s)
    assert [(r["method"], r["H"], r["compressor"]) for r in rows] == [
        ("sgd", 1, "none"), ("local", 1, "none"), ("local", 1, "top_k(k=100000)"), ("local", 8, "none"),
        ("local", 8, "top_k(k=100000)")]
    assert math.isclose(rows[0]["step_s"], ref[0]["step_s"], rel_tol=1e-9)
    assert math.isclose(rows[2]["step_s"], ref[1]["step_s"], rel_tol=1e-9)  # top-k at H = 1: the per-step form
    # H = 8: one exchange and one straggler wait per 8 inner steps
    r = rows[4]
    assert r["comm_round_s"] == ref[1]["comm_s"]
    want = (8 * c + s * expected_max_gamma(8, n) + ref[1]["comm_s"]) / 8
    assert math.isclose(r["step_s"], want, rel_tol=1e-12)
    assert math.isclose(r["break_even"], rows[0]["step_s"] / want, rel_tol=1e-12)
    assert rows[3]["step_s"] < rows[1]["step_s"]


def test_bad_settings_are_one_line():
    with pytest.raises(UserError, match="H"):
        predict_local_times(1000, 4, NET, [0], ["none"])
    with pytest.raises(UserError, match="at least one H"):
        predict_local_times(1000, 4, NET, [], ["none"])


def _cli(args, capsys):
    from simcomm.cli import main

    with pytest.raises(SystemExit) as e:
        main(["net", "predict", *args])
    return e.value.code, capsys.readouterr()


BASE = ["-d", "1e8", "-n", "16", "--bandwidth", "1Gb/s", "--alpha", "50us", "--compute", "0.2"]


def test_cli_local_table_and_json(capsys):
    code, out = _cli([*BASE, "--local", "1,4", "-c", "none", "-c", "top_k(k=1%)", "--json"], capsys)
    assert code in (0, None), out.err
    rows = json.loads(out.out)["rows"]
    assert [(r["method"], r["H"]) for r in rows] == [("sgd", 1), ("local", 1), ("local", 1), ("local", 4),
                                                      ("local", 4)]
    code, out = _cli([*BASE, "--local", "4", "-c", "qsgd(s=4)"], capsys)
    assert "break-even" in out.out and "qsgd(s=4)" in out.out


def test_cli_local_simulate_marks_the_fastest(capsys):
    code, out = _cli([*BASE, "--local", "1,4", "-c", "none", "--simulate", "--replicates", "1", "--json"], capsys)
    rows = json.loads(out.out)["rows"]
    # pilot (stand-in, target 1e-3): SGD 473 inner steps, DiLoCo H = 1: 80, H = 4: 160; at 6 s per exchange and
    # 0.2 s per inner step, H = 4's 1.7 s per step wins by far (272 s against 496 s and 2,930 s)
    assert [r["steps"] for r in rows] == [473, 80, 160]
    assert [r.get("fastest", False) for r in rows] == [False, False, True]


@pytest.mark.parametrize("bad", ["0,4", "four", ""])
def test_cli_bad_local_is_one_line(bad, capsys):
    code, out = _cli([*BASE, "--local", bad], capsys)
    assert code == 2 and "--local" in out.err and "Traceback" not in out.err


def test_measure_local_steps_to_target_copies_the_rows():
    from simcomm.experiments.network import measure_local_steps_to_target

    rows = predict_local_times(10**6, 4, NET, [2], ["none"], compute=0.01)
    out = measure_local_steps_to_target(rows, d=10**6, n=4, steps=2000, replicates=1, rng=0, backend="numpy")
    assert "steps" not in rows[0] and [r["stand_in"] for r in out] == ["none", "none"]
    assert all(r["steps"] > 0 and r["time_to_target_s"] == r["steps"] * r["step_s"] for r in out)
    with pytest.raises(UserError, match="target"):
        measure_local_steps_to_target(rows, d=10**6, target=1.5)


def test_cli_local_figure_writes_pdf_and_png(tmp_path, capsys):
    code, out = _cli([*BASE, "--local", "1,4", "-c", "none", "--simulate", "--replicates", "1", "--figure",
                      str(tmp_path / "h.pdf")], capsys)
    assert code in (0, None), out.err
    pdf = (tmp_path / "h.pdf").read_bytes()
    assert pdf[:4] == b"%PDF" and len(pdf) > 1000 and b"/Type3" not in pdf  # vector, TrueType fonts embedded
    assert (tmp_path / "h.png").read_bytes()[:4] == b"\x89PNG"
    assert f"figure: {tmp_path / 'h'}.pdf" in out.out


@pytest.mark.parametrize("extra, needle", [
    (["--simulate", "--figure", "FIG.svg"], "writes PATH.pdf and PATH.png"),
    (["--simulate", "--figure", "FILE/fig"], "cannot write to the folder of --figure"),
    (["--figure", "fig"], "add --local H1,H2,... --simulate"),
])
def test_cli_bad_figure_is_one_line(tmp_path, capsys, extra, needle):
    (tmp_path / "FILE").write_text("a file, not a folder")
    extra = [str(tmp_path / e) if e.startswith(("FIG", "FILE")) else e for e in extra]
    code, out = _cli([*BASE, "--local", "1,4", "-c", "none", *extra], capsys)
    assert code == 2 and needle in out.err and len(out.err.strip().splitlines()) == 1, out.err
    assert not list(tmp_path.glob("*.p*"))


def test_cli_local_reads_the_mpi_calibration(tmp_path, capsys):
    # --network FILE is the output of 'simcomm net calibrate' (alpha, beta of the MPI ping-pong in [network]):
    # the local rows use those constants, as the per-step prediction without --local does
    from simcomm.network._calibrate import calibration_toml

    measured = dict(alpha=3.1e-6, beta=1.7e-10, n=2, sizes=[8, 1024], pingpong=[3.2e-6, 3.3e-6],
                    allreduce=[7.0e-6, 9.0e-6], allreduce_alpha=4.4e-6, allreduce_beta=2.5e-10)
    path = tmp_path / "net.toml"
    path.write_text(calibration_toml(measured))
    args = ["-d", "1e7", "-n", "16", "--network", str(path), "--compute", "0.05", "-c", "none", "-c", "top_k(k=1%)"]
    code, out = _cli([*args, "--local", "1,8", "--json"], capsys)
    assert code in (0, None), out.err
    result = json.loads(out.out)
    assert (result["alpha"], result["beta"]) == (3.1e-6, 1.7e-10)
    want = predict_local_times(10**7, 16, Network(3.1e-6, 1.7e-10), [1, 8], ["none", "top_k(k=1%)"], compute=0.05)
    assert [(r["H"], r["compressor"], r["step_s"]) for r in result["rows"]] == [
        (r["H"], r["compressor"], r["step_s"]) for r in want]
    code, out = _cli([*args, "--json"], capsys)
    per_step = {r["compressor"]: r["step_s"] for r in json.loads(out.out)["rows"]}
    assert result["rows"][0]["step_s"] == per_step["none"]          # data-parallel SGD: the same step
    assert result["rows"][2]["step_s"] == per_step["top_k(k=100000)"]  # H = 1 with top-k: the per-step form
