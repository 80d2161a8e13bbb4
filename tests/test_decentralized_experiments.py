"""The decentralized experiments: transient definition, message accounting, small runs."""

import numpy as np
import pytest

from simcomm.experiments import get_experiment
from simcomm.experiments.dsgd import checkpoints, measured_transient, running_mean


def _run(name, **params):
    exp = get_experiment(name)
    return exp.func(exp.validate(params, "test"), np.random.default_rng(12345), None)


def test_transient_definition():
    r_par = np.ones(64)
    r_dec = 1.0 + 4.0 / np.arange(1, 65)  # within 1.25 from T = 16 on
    T, cens = measured_transient(r_dec, r_par, 1.25, per_octave=64)
    assert (T, cens) == (16, False)
    assert measured_transient(np.full(8, 2.0), np.ones(8), 1.25) == (8, True)
    assert measured_transient(np.ones(8), np.ones(8), 1.25) == (1, False)
    assert checkpoints(1000)[-1] == 1000 and checkpoints(1000)[0] == 1
    np.testing.assert_allclose(running_mean(np.array([5.0, 1.0, 2.0, 3.0])), [1.0, 1.5, 2.0])


@pytest.mark.parametrize("n", [8, 12, 16])
def test_message_ratio_is_tau(n):
    rows = {r["metric"]: r["value"] for r in _run("dsgd_one_peer", n=n, steps=30, inner=1)}
    tau = (n - 1).bit_length()
    assert rows["tau"] == tau
    assert rows["message_ratio"] == tau  # static sends tau messages per step, one-peer sends 1


def test_chain_rows_pair_neighbours():
    rows = _run("dsgd_transient_chain", n=8, horizon=60, inner=1)
    order = [r for r in rows if r["metric"] == "transient_order"]
    assert [(r["pair"], r["side"]) for r in order] == [
        ("exponential<=torus", "lower"), ("exponential<=torus", "higher"),
        ("torus<=ring", "lower"), ("torus<=ring", "higher")]
    trans = {r["topology"]: r["value"] for r in rows if r["metric"] == "transient"}
    assert order[0]["value"] == trans["exponential"] and order[3]["value"] == trans["ring"]
    assert all(1 <= v <= 60 for v in trans.values())


def test_tracking_and_pow2_rows():
    rows = _run("dsgd_tracking", n=8, steps=64, inner=1, early=5)
    assert {r["metric"] for r in rows} == {"tracking_ratio", "late_ratio", "ratio_at_step"}
    assert all(np.isfinite(r["value"]) and r["value"] > 0 for r in rows)
    steps = [r["step"] for r in rows if r["metric"] == "ratio_at_step"]
    assert steps == sorted(steps) and steps[-1] == 64 and steps[0] >= 5
    late = [r["value"] for r in rows if r["metric"] == "late_ratio"][0]
    assert late == [r["value"] for r in rows if r["metric"] == "ratio_at_step"][-1]  # same window (32, 64]
    rows = _run("dsgd_one_peer_pow2", p=3, steps=40, inner=1)
    ratios = [r for r in rows if r["metric"] == "one_peer_consensus_ratio"]
    assert [r["nodes"] for r in ratios] == ["power_of_2", "not_power_of_2"]
    assert ratios[0]["sizes"] == "6 vs 8" and all(r["value"] > 0 for r in ratios)


def test_one_peer_consensus_rows_are_raw():
    rows = {r["metric"]: r for r in _run("dsgd_one_peer", n=8, steps=40, inner=1)}
    c = rows["one_peer_consensus"]
    assert c["value"] > 0 and c["static_consensus"] > 0  # two raw tail means, not a ratio


def test_censored_transients_are_flagged():
    rows = _run("dsgd_transient_chain", n=16, horizon=20, inner=1)
    trans = {r["topology"]: r for r in rows if r["metric"] == "transient"}
    ring = trans["ring"]
    assert ring["censored"] and ring["value"] == 20  # the ring cannot track parallel SGD in 20 steps
    assert all(r["censored"] == (r["value"] == 20 and "censored" in r["note"]) for r in trans.values())
    order = [r for r in rows if r["metric"] == "transient_order"]
    assert order[3]["censored"] is True


def test_divergence_becomes_a_note():
    rows = _run("dsgd_transient", n=8, horizon=50, inner=1, lr=5.0)
    t = [r for r in rows if r["metric"] == "transient"][0]
    assert t["value"] == np.inf and t["note"].startswith("diverged at step")


def test_bad_chain():
    from simcomm import SpecError

    with pytest.raises(SpecError, match="chain"):
        get_experiment("dsgd_transient_chain").validate({"chain": "exponential,moebius"}, "test")


def test_transient_growth_pairs_n_with_2n():
    rows = _run("dsgd_transient_growth", n=8, horizon=60, inner=1)
    assert [(r["metric"], r["size"]) for r in rows] == [("transient_ratio", "n"), ("transient_ratio", "2n")]
    # no column besides size varies inside the cell (it would split the pair in the order judge)
    assert {frozenset(r) for r in rows} == {frozenset({"metric", "value", "size", "censored"})}
    assert all(r["value"] > 0 for r in rows)


def test_choco_gossip_step_of_plain_gossip_is_the_control():
    # expgraph.choco_gossip's negative control: gamma = 1, exact gossip's step, with the compressed
    # copies. It is inside the uncompressed stability limit 2/beta, yet the run diverges; the paper's
    # gamma* contracts from the same start
    paper = _run("choco_gossip", n=16, topology="torus", steps=300)[0]
    gossip = _run("choco_gossip", n=16, topology="torus", steps=300, gamma_ref="gossip")[0]
    assert gossip["gamma"] == 1.0 < 2.0 / gossip["beta_w"]
    assert paper["value"] < 1.0 and gossip["note"].startswith("diverged at step")


def test_lazy_floor_run_keeps_the_rows_rho():
    # expgraph.dsgd_floor_bound's negative control: the methods mix with (I + W)/2 (its rho is
    # (1 + 0.6)/2 on the 4 x 4 torus) while the rows still carry W's rho = 0.6, so the floor rises
    base = {r["method"]: r for r in _run("tracking_floor", n=16, topology="torus", steps=600)}
    lazy = {r["method"]: r for r in _run("tracking_floor", n=16, topology="torus", steps=600, lazy=True)}
    assert lazy["dsgd"]["rho"] == base["dsgd"]["rho"] == pytest.approx(0.6)
    assert lazy["dsgd"]["value"] > 2 * base["dsgd"]["value"]
    assert _run("tracking_floor", n=16, topology="torus", steps=600, lazy=False) == list(base.values())
