"""PowerSGD, natural dithering, composition and the majority vote, beyond the registry's contract rows.

PowerSGD against a naive per-matrix loop (Gram-Schmidt written out), its warm start converging to the
truncated SVD, its bad input; natural dithering's levels; the composition rules' constants against a
measurement; the majority vote against a per-coordinate loop and inside signSGD.
"""

import math

import numpy as np
import pytest

from simcomm.compress import Compose, NaturalDithering, PowerSGD, compressor_from_label, majority_vote


def _naive_powersgd(M, Q):
    """One power iteration, Gram-Schmidt by hand: P = orth(M Q), Q' = M^T P, C = P Q'^T."""
    P = M @ Q
    for j in range(P.shape[1]):
        for i in range(j):
            P[:, j] -= (P[:, i] @ P[:, j]) * P[:, i]
        P[:, j] /= np.linalg.norm(P[:, j])
    Qn = M.T @ P
    return P @ Qn.T, Qn


def test_powersgd_matches_the_naive_loop_row_by_row():
    c = PowerSGD(rank=3, rows=8)
    X = np.random.default_rng(0).standard_normal((5, 8 * 12))
    state = c.init(X, rng=1)
    out, new = c.step(X, state)
    for i in range(5):
        ref, qn = _naive_powersgd(X[i].reshape(8, 12), state.Q[i].copy())
        np.testing.assert_allclose(out[i], ref.reshape(-1), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.abs(new.Q[i]), np.abs(qn), rtol=1e-10, atol=1e-10)  # QR's signs may flip
    np.testing.assert_array_equal(c.apply(X, rng=1), out)  # apply = step from init(rng)


def test_powersgd_warm_start_converges_to_the_truncated_svd():
    # a fixed matrix with a spectral gap: repeated warm-started steps are subspace iteration, whose error
    # ||M - C(M)||^2 falls to the best rank-r error sum_{j > r} sigma_j^2 (Eckart-Young)
    g = np.random.default_rng(2)
    U, _ = np.linalg.qr(g.standard_normal((20, 20)))
    V, _ = np.linalg.qr(g.standard_normal((30, 20)))
    s = np.array([10.0, 8.0, 6.0] + [0.5] * 17)
    M = (U * s) @ V.T
    c = PowerSGD(rank=3, rows=20)
    x = M.reshape(1, -1)
    state = c.init(x, rng=3)
    errs = []
    for _ in range(15):
        out, state = c.step(x, state)
        errs.append(float(((out - x) ** 2).sum()))
    best = float((s[3:] ** 2).sum())
    assert errs[0] > errs[-1] and errs[-1] == pytest.approx(best, rel=1e-6)
    assert c.apply(x, rng=3) is not None and errs[-1] <= float(((c.apply(x, rng=4) - x) ** 2).sum())


def test_powersgd_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="rank = 5"):
        PowerSGD(rank=5, rows=4).apply(np.zeros(16), rng=0)
    with pytest.raises(ValueError, match="rows = 5 does not divide"):
        PowerSGD(rank=1, rows=5).bits(16)
    with pytest.raises(ValueError, match="rank"):
        PowerSGD(rank=0)
    c = PowerSGD(rank=2, rows=4)
    with pytest.raises(ValueError, match="state Q has shape"):
        c.step(np.zeros((3, 16)), c.init((2, 16), rng=0))


def test_powersgd_wire_is_r_m_plus_n_floats():
    from simcomm.network import decode, encode

    c = PowerSGD(rank=2, rows=6)
    m = c.to_message(np.random.default_rng(5).standard_normal(48), rng=0)
    assert m.scales.size == 2 * (6 + 8) and c.bits(48) == 32 * 2 * 14
    assert decode(encode(m, "fixed")) == m


def test_natural_dithering_sends_powers_of_two_of_the_norm():
    c = NaturalDithering(4)
    x = np.random.default_rng(6).standard_normal((200, 30))
    q = c.apply(x, rng=7)
    t = np.abs(q) / np.linalg.norm(x, axis=1, keepdims=True)
    allowed = np.array([0.0, 1 / 8, 1 / 4, 1 / 2, 1.0])
    assert np.all(np.min(np.abs(t[..., None] - allowed), axis=-1) < 1e-12)
    assert np.all((np.sign(q) == np.sign(x)) | (q == 0))
    # s = 1: the levels are {0, 1}; a t in [0, 1] goes up with probability t: the variance (1 - t) t
    v = np.array([0.6, 0.8])
    assert NaturalDithering(1).variance(v) == pytest.approx(0.4 * 0.6 + 0.2 * 0.8)
    with pytest.raises(ValueError, match="s = 0"):
        NaturalDithering(0)


def _measured(c, x, draws=4000, seed=8):
    Q = np.asarray(c.apply(np.broadcast_to(x, (draws, x.size)).copy(), rng=seed), dtype=np.float64)
    e = ((Q - x) ** 2).sum(axis=1)
    return e.mean(), e.std(ddof=1) / math.sqrt(draws), Q.mean(axis=0)


def test_composition_of_unbiased_compressors_multiplies_alpha():
    # rand-k(k = d/2) then natural: omega = 1 + 1/8 + 1 * 1/8 = 1.25 (the rule's bound). The rule's identity
    # E||C2(y) - x||^2 = E[var_2(y)] + E||y - x||^2 is checked on independent draws of y, with the
    # closed-form variance of natural compression given y; each side is a mean of 4000 draws (z-test, 5 se)
    from simcomm.compress import Natural, RandK

    x = np.random.default_rng(9).standard_normal(24)
    c = Compose("rand_k(k=12)", "natural")
    assert c.unbiased and c.beta(24) == pytest.approx(1.25)
    Q = np.asarray(c.apply(np.broadcast_to(x, (4000, 24)).copy(), rng=8))
    e = ((Q - x) ** 2).sum(axis=1)
    Y = RandK(12).apply(np.broadcast_to(x, (4000, 24)).copy(), rng=99)
    pred = Natural().variance(Y) + ((Y - x) ** 2).sum(axis=1)
    se = math.hypot(e.std(ddof=1), pred.std(ddof=1)) / math.sqrt(4000)
    assert abs(e.mean() - pred.mean()) <= 5 * se
    assert e.mean() <= 1.25 * float(x @ x) + 5 * e.std(ddof=1) / math.sqrt(4000)
    se_coord = Q.std(axis=0, ddof=1) / math.sqrt(4000)
    assert np.all(np.abs(Q.mean(axis=0) - x) <= 5 * se_coord)  # unbiased, per coordinate


def test_composition_rule_for_a_sparsifier_then_a_quantizer_is_exact_with_top_k():
    x = np.random.default_rng(10).standard_normal(48)
    c = Compose("top_k(k=12)", "qsgd(s=4)")
    mean, se, _ = _measured(c, x)
    assert mean == pytest.approx(float(c.variance(x)), abs=5 * se)
    assert float(c.variance(x)) <= c.error_factor(48) * float(x @ x)
    assert Compose("top_k(k=12)", "sign").error_factor(48) is None  # no rule: unknown, measured
    assert compressor_from_label(c.label) == c  # nested labels parse back
    with pytest.raises(ValueError, match="itself a composition"):
        Compose(c.label, "natural")


def test_majority_vote_matches_a_loop_and_drives_signsgd():
    from simcomm.compress import Sign
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    M = np.random.default_rng(11).standard_normal((5, 7, 9))
    got = majority_vote(M, axis=1)
    for r in range(5):
        for j in range(9):
            votes = sum(1 if M[r, i, j] >= 0 else -1 for i in range(7))
            assert got[r, j] == (1.0 if votes >= 0 else -1.0)
    # signSGD with majority vote on identical workers (sigma2 = 0): the vote is the sign of the gradient, so
    # the iterate moves lr per coordinate and ends within lr of x* per coordinate (a sign method's neighbourhood)
    p = quadratic(5, 8, L=1.0, mu=0.5, rng=12)
    tr = compressed_gd(p, Sign(), lr=1e-3, steps=3000, aggregate="majority_vote", rng=0)
    assert np.abs(tr.x[0] - p.x_star).max() <= 1e-3 + 1e-12
    with pytest.raises(ValueError, match="unknown aggregator 'median'"):
        compressed_gd(p, Sign(), lr=1e-3, steps=3, aggregate="median")


def test_natural_dithering_kernels_agree_across_backends():
    # same counter uniforms on every backend: the values agree within the rounding of the row norm (a
    # reduction, summed in a different order); the levels chosen are identical
    from simcomm.backends import available_backends, get_backend

    x = np.random.default_rng(13).standard_normal((6, 500)).astype(np.float32)
    x[0, :10] = 0.0
    ref = get_backend("numpy").dither_quantize(x, 5, 777, np.empty_like(x))
    for name in available_backends():
        got = get_backend(name).dither_quantize(x, 5, 777, np.empty_like(x))
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["mean", "majority_vote"])
def test_every_registered_aggregator(name):
    from simcomm.compress import AGGREGATORS, aggregator_from_name

    assert set(AGGREGATORS) == {"mean", "majority_vote"}  # a new aggregator needs its row here
    agg = aggregator_from_name(name)
    M = np.random.default_rng(14).standard_normal((3, 5, 7))
    out = agg.aggregate(M, axis=1)
    assert out.shape == (3, 7) and agg.bits_down(7) > 0
    if name == "mean":
        np.testing.assert_allclose(out, M.mean(axis=1))
    else:
        assert set(np.unique(out)) <= {-1.0, 1.0} and agg.bits_down(7) == 7
