"""The compression advisor: gradient files, errors measured on recorded gradients, ranking, CLI and figure."""

import json

import numpy as np
import pytest

from simcomm._errors import UserError
from simcomm.cli import main
from simcomm.models import load_gradients, save_gradients
from simcomm.network import DEFAULT_CANDIDATES, Network, advise, compression_errors


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _heavy(T=12, D=400, seed=0):
    return np.random.default_rng(seed).standard_t(2, size=(T, D)).astype(np.float32)


def test_errors_without_feedback_match_the_closed_form_of_top_k():
    G = _heavy()
    k = 10
    err = compression_errors(G, f"top_k(k={k})", rng=0)
    sq = np.sort(G.astype(np.float64) ** 2, axis=1)[:, ::-1]
    np.testing.assert_allclose(err, 1 - sq[:, :k].sum(1) / sq.sum(1), rtol=1e-12)
    assert np.all(compression_errors(G, "fp16", rng=0) < 1e-6)


def test_error_feedback_measures_the_running_sum():
    G = _heavy(T=6, D=50).astype(np.float64)
    err = compression_errors(G, "top_k(k=5)", feedback="ef", rng=0)
    e = np.zeros(50)
    for t, g in enumerate(G):  # an independent walk of e' = p - top_k(p)
        p = g + e
        keep = np.argsort(-np.abs(p))[:5]
        e = p.copy()
        e[keep] = 0.0
        assert err[t] == pytest.approx(e @ e / np.sum(G[:t + 1].sum(0) ** 2), rel=1e-12)


def test_advise_ranks_at_least_six_settings_on_the_pareto_front_order():
    adv = advise(_heavy(), Network(5e-6, 8e-10), 8, rng=0)
    assert len(adv.rows) == len(DEFAULT_CANDIDATES) >= 6
    assert [r["rank"] for r in adv.rows] == list(range(1, len(adv.rows) + 1))
    fronts = [r["front"] for r in adv.rows]
    assert fronts == sorted(fronts) and fronts[0] == 1
    for r in adv.rows:  # a front-1 row is beaten by nobody on both error and time
        if r["front"] == 1:
            assert not any(o["error_mean"] < r["error_mean"] and o["step_s"] < r["step_s"] for o in adv.rows)
        assert r["error_lo"] <= r["error_mean"] <= r["error_hi"]
    assert {r["feedback"] for r in adv.rows} == {"none", "ef", "ef21"}
    sparse = [r for r in adv.rows if r["compressor"] == "top_k"]
    assert all(r["pattern"] == "allgather" for r in sparse)
    assert next(r for r in adv.rows if r["compressor"] == "fp16")["pattern"] == "ring_allreduce"


def test_the_fitted_model_is_flagged_where_it_misses():
    # a gradient whose energy sits in a few coordinates plus a flat floor: the Pareto fit misses top-k
    rng = np.random.default_rng(1)
    G = 1e-3 * rng.standard_normal((10, 2000))
    G[:, :20] += 5.0
    adv = advise(G, Network(5e-6, 8e-10), 4, candidates=["top_k(k=1%)"], rng=0)
    row = adv.rows[0]
    assert row["disagrees"] == (not row["error_lo"] <= row["model_error"] <= row["error_hi"])
    assert row["disagrees"] and adv.disagreements and adv.disagreements[0].startswith("top_k(k=20)")


def test_gradient_file_round_trip_and_refusals(tmp_path):
    G = _heavy(T=3, D=5).astype(np.float64)
    p = save_gradients(tmp_path / "g", G, steps=[0, 4, 8])
    H, steps = load_gradients(p)
    assert H.dtype == np.float32 and steps.tolist() == [0, 4, 8]
    np.testing.assert_array_equal(H, G.astype(np.float32))
    bad = G.copy()
    bad[1, 2] = np.nan
    save_gradients(tmp_path / "nan", bad)
    with pytest.raises(UserError, match="step 1 has NaN"):
        load_gradients(tmp_path / "nan.npz")
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(UserError, match="no 'gradients'"):
        load_gradients(tmp_path / "other.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(UserError, match="not a readable"):
        load_gradients(tmp_path / "junk.npz")


def test_cli_advise_table_json_and_figure(tmp_path, capsys):
    p = save_gradients(tmp_path / "g", _heavy(T=8, D=300))
    code, out, err = _cli(["advise", str(p), "-n", "8", "--bandwidth", "10Gb/s", "--alpha", "5us",
                           "-c", "top_k(k=1%)+ef", "-c", "qsgd(s=4)", "-c", "fp16", "-c", "ternary", "-c",
                           "rand_k(k=10%)", "-c", "scaled_sign+ef", "--figure", str(tmp_path / "fig")], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "n = 8, alpha = 5 us, 1.25 GB/s (10 Gbit/s)" in lines[0]
    assert sum(1 for ln in lines[2:] if ln[:2].strip().isdigit()) == 6  # six ranked rows under the header
    assert (tmp_path / "fig.pdf").read_bytes()[:4] == b"%PDF" and b"/Type3" not in (tmp_path / "fig.pdf").read_bytes()
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    code, out, _ = _cli(["advise", str(p), "-n", "8", "--bandwidth", "1.25GB/s", "--alpha", "0.005ms", "--json",
                         "-c", "top_k(k=3)+ef21"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["alpha"] == pytest.approx(5e-6) and doc["beta"] == pytest.approx(1 / 1.25e9)
    assert doc["rows"][0]["label"] == "top_k(k=3)+ef21" and doc["rows"][0]["bits"] > 0


def test_cli_advise_network_file(tmp_path, capsys):
    p = save_gradients(tmp_path / "g", _heavy(T=4, D=100))
    (tmp_path / "net.toml").write_text("[network]\nalpha = 1e-5\nbeta = 1e-9\n")
    code, out, _ = _cli(["advise", str(p), "-n", "4", "--network", str(tmp_path / "net.toml"), "--json",
                         "-c", "top_k(k=5)"], capsys)
    assert code == 0 and json.loads(out)["alpha"] == 1e-5


@pytest.mark.parametrize("extra, needle", [
    (["--bandwidth", "10Gb/s"], "the network is missing"),
    (["--bandwidth", "10Gb/s", "--alpha", "5 parsecs"], "--alpha '5 parsecs' is not a time"),
    (["--bandwidth", "fast", "--alpha", "5us"], "is not a bandwidth"),
    (["--bandwidth", "10Gb/s", "--alpha", "5us", "-c", "top_k(k=1%)+efx"], "feedback 'efx' is unknown"),
    (["--bandwidth", "10Gb/s", "--alpha", "5us", "-c", "nosuch"], "compressor 'nosuch'"),
    (["--bandwidth", "10Gb/s", "--alpha", "5us", "--compute", "-1"], "--compute"),
])
def test_cli_advise_bad_input_is_one_line(tmp_path, capsys, extra, needle):
    p = save_gradients(tmp_path / "g", _heavy(T=3, D=50))
    code, out, err = _cli(["advise", str(p), "-n", "4", *extra], capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_cli_advise_missing_or_folder_file(tmp_path, capsys):
    for target, needle in ((tmp_path / "none.npz", "does not exist"), (tmp_path, "is a folder")):
        code, _, err = _cli(["advise", str(target), "-n", "4", "--bandwidth", "10Gb/s", "--alpha", "5us"], capsys)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_iteration_factor_model():
    from simcomm.network import iteration_factor

    # error feedback: a delta-contraction with delta = 1 - e needs 1/delta times the iterations
    assert iteration_factor(0.75, unbiased=False, feedback="ef", n=4) == (4.0, "")
    assert iteration_factor(0.5, unbiased=True, feedback="ef21", n=4) == (2.0, "")
    # unbiased without feedback: omega/n more relative variance on the averaged gradient
    assert iteration_factor(2.0, unbiased=True, feedback="none", n=4) == (1.5, "")
    for err, unb, fb, why in ((0.5, False, "none", "biased without error feedback"),
                              (1.2, False, "ef", "not a contraction"), (float("nan"), True, "none", "no measured")):
        f, note = iteration_factor(err, unbiased=unb, feedback=fb, n=4)
        assert f != f and why in note


def test_time_to_target_follows_the_measured_error_and_leaves_the_rest_unchanged():
    G, net, N = _heavy(), Network(5e-6, 8e-10), 2000
    cands = ["top_k(k=1%)+ef", "top_k(k=1%)", "qsgd(s=4)", "rand_k(k=10%, scale=false)+ef21"]
    plain = advise(G, net, 8, candidates=cands, rng=0)
    adv = advise(G, net, 8, candidates=cands, rng=0, steps_uncompressed=N)
    for a, b in zip(plain.rows, adv.rows):  # the factors draw from their own stream: the table is the same
        assert {k: a[k] for k in a} == {k: b[k] for k in a}
    rows = {r["label"]: r for r in adv.rows}
    # top-k is deterministic: its factor is 1/(1 - its own error), exactly
    alone = compression_errors(G, "top_k(k=1%)", rng=0).mean()
    assert rows["top_k(k=4)+ef"]["iteration_factor"] == pytest.approx(1 / (1 - alone), rel=1e-12)
    assert rows["qsgd(s=4)"]["iteration_factor"] == pytest.approx(1 + rows["qsgd(s=4)"]["error_mean"] / 8, rel=1e-12)
    # on gradients of equal magnitudes unscaled rand-k keeps exactly k/d of each one's energy: delta = k/d = 0.1
    signs = np.where(_heavy() > 0, 1.0, -1.0)
    one = advise(signs, net, 8, candidates=["rand_k(k=10%, scale=false)+ef21"], rng=0, fit_model=False,
                 steps_uncompressed=N).rows[0]
    assert one["iteration_factor"] == pytest.approx(10.0, rel=1e-12)
    for r in adv.rows:
        if r["target_note"]:
            assert r["time_to_target_s"] != r["time_to_target_s"]
        else:
            assert r["time_to_target_s"] == pytest.approx(N * r["iteration_factor"] * r["step_s"], rel=1e-12)
    assert rows["top_k(k=4)"]["target_note"].startswith("biased without error feedback")
    assert rows["top_k(k=4)+ef"]["iteration_factor"] > 1
    assert adv.baseline_step_s > max(r["step_s"] for r in adv.rows)  # dense float32 allreduce: the slowest
    doc = adv.to_dict()
    assert doc["steps_uncompressed"] == N and doc["baseline_time_to_target_s"] == pytest.approx(N * adv.baseline_step_s)
    assert next(r for r in doc["rows"] if r["label"] == "top_k(k=4)")["time_to_target_s"] is None
    with pytest.raises(UserError, match="does not apply to these candidates"):
        advise(G, net, 8, candidates=["top_k(k=1%)", "scaled_sign"], rng=0, steps_uncompressed=N)
    for bad in (0, 2.5, True):
        with pytest.raises(UserError, match="integer >= 1"):
            advise(G, net, 8, candidates=cands, rng=0, steps_uncompressed=bad)


def test_cli_advise_time_to_target(tmp_path, capsys):
    p = save_gradients(tmp_path / "g", _heavy(T=8, D=300))
    base = ["advise", str(p), "-n", "8", "--bandwidth", "1Gb/s", "--alpha", "5us", "-c", "top_k(k=1%)+ef",
            "-c", "qsgd(s=4)", "-c", "fp16"]
    code, out, err = _cli(base + ["--steps-uncompressed", "5000"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("time to target: uncompressed SGD needs 5,000 steps of")
    assert "x iters" in lines[2] and lines[2].rstrip().endswith("to target")
    fp16 = next(ln for ln in lines if " fp16 " in ln)
    assert fp16.split()[-2:] == ["-", "-"]  # biased without feedback: no iteration model
    code, out, _ = _cli(base + ["--steps-uncompressed", "5000", "--json"], capsys)
    doc = json.loads(out)
    assert doc["steps_uncompressed"] == 5000 and all("time_to_target_s" in r for r in doc["rows"])
    code, out, _ = _cli(base, capsys)  # without the option: no column
    assert code == 0 and "to target" not in out
    for extra, needle in ((["--steps-uncompressed", "0"], "--steps-uncompressed 0 is out of range"),
                          (["--steps-uncompressed", "many"], "'many' is not a valid integer"),
                          (["-c", "top_k(k=1%)", "--steps-uncompressed", "10"], "does not apply")):
        argv = (base[:8] + extra) if "-c" in extra else base + extra
        code, _, err = _cli(argv, capsys)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
