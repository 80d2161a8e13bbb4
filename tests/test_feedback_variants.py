"""Error-feedback variants (:data:`simcomm.compress.FEEDBACKS`): a contract row each, naive references, and behaviour.

Every registered variant is an (init, apply) pair around any compressor; these tests are derived from the
registry (one row of settings per variant, :data:`ROWS`), check each against an independent node-by-node
loop in ``tests/naive_ef.py`` and check what each is for on a heterogeneous quadratic: EF21, DIANA and
MARINA converge to the optimum where plain compressed GD stalls at a floor.
"""

import math

import numpy as np
import pytest

from simcomm.compress import (
    DIANA,
    EF21SGDM,
    FEEDBACKS,
    MARINA,
    QSGD,
    Identity,
    RandK,
    TopK,
    feedback_from_name,
)
from tests.naive_ef import naive_diana, naive_ef21_sgdm, naive_marina

#: settings each registered variant is tested at
ROWS = {
    "ef": {},
    "ef21": {},
    "ef_lr": {},
    "ef21_sgdm": dict(momentum=0.3),
    "diana": dict(shift_step=0.5),
    "marina": dict(p=0.3),
}
N, D = 3, 10


def test_every_registered_variant_has_a_row():
    assert set(FEEDBACKS) == set(ROWS), f"add a row to ROWS for {sorted(set(FEEDBACKS) - set(ROWS))}"


def _run(fb, grads, seed=0):
    state = fb.init(grads.shape[1:])
    kw = {"lr": 0.1} if getattr(fb, "takes_lr", False) else {}
    outs = []
    for t, g in enumerate(grads):
        before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in state]
        out, new = fb.apply(g, state, rng=seed + t, **kw)
        for a, b in zip(before, state):  # apply is pure: the old state is untouched
            np.testing.assert_array_equal(a, b)
        outs.append(out)
        state = new
    return np.stack(outs)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_lossless_compressor_gives_the_uncompressed_direction(name):
    grads = np.random.default_rng(1).standard_normal((6, N, D))
    out = _run(feedback_from_name(name, Identity(), **ROWS[name]), grads)
    if name == "ef21_sgdm":  # the direction is the momentum itself
        ref = naive_ef21_sgdm(grads, lambda v: v, ROWS[name]["momentum"])
    else:
        ref = grads
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_reproducible_and_taken_by_the_server_optimiser(name):
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    fb = feedback_from_name(name, QSGD(2), **ROWS[name])
    grads = np.random.default_rng(2).standard_normal((4, N, D))
    np.testing.assert_array_equal(_run(fb, grads, 3), _run(fb, grads, 3))
    tr = compressed_gd(quadratic(N, D, rng=0), QSGD(2), lr=0.05, steps=20, rng=1, feedback=fb, replicates=2)
    assert np.isfinite(tr.f_gap).all() and tr.f_gap[:, -1].max() < tr.f_gap[:, 0].min()


def test_ef21_sgdm_matches_the_naive_loop_and_is_ef21_at_momentum_one():
    grads = np.random.default_rng(3).standard_normal((8, N, D))
    comp = TopK(3)
    out = _run(EF21SGDM(comp, momentum=0.25), grads)
    np.testing.assert_allclose(out, naive_ef21_sgdm(grads, lambda v: comp.apply(v, rng=0), 0.25), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(_run(EF21SGDM(comp, momentum=1.0), grads), _run(feedback_from_name("ef21", comp),
                                                                                    grads))


def test_diana_matches_the_naive_loop_and_is_unbiased():
    grads = np.random.default_rng(4).standard_normal((8, N, D))
    comp = TopK(3)
    out = _run(DIANA(comp, shift_step=0.4), grads)
    np.testing.assert_allclose(out, naive_diana(grads, lambda v: comp.apply(v, rng=0), 0.4), rtol=1e-12, atol=1e-12)
    # unbiased with QSGD: E g_hat = g from any shift; 4000 draws, z-test at 5 standard errors per coordinate
    # (|z| > 5 has probability 5.7e-7 per coordinate under the null; fixed seed)
    fb, M = DIANA(QSGD(1)), 4000
    g = np.random.default_rng(5).standard_normal(D)
    h = np.random.default_rng(6).standard_normal(D)
    out, _ = fb.apply(np.broadcast_to(g, (M, D)), type(fb.init(1))(np.broadcast_to(h, (M, D))), rng=7)
    se = out.std(axis=0, ddof=1) / math.sqrt(M)
    assert np.all(np.abs(out.mean(axis=0) - g) <= 5 * se + 1e-12)
    assert fb.step_for(D) == pytest.approx(1 / (1 + min(D, math.sqrt(D))))


def test_marina_matches_the_naive_loop_with_its_coins():
    grads = np.random.default_rng(8).standard_normal((10, N, D))
    comp = TopK(2)
    fb = MARINA(comp, p=0.4)
    out = _run(fb, grads, seed=100)
    coins = [bool(np.random.default_rng(100 + t).random((1,))[0] < 0.4) for t in range(10)]  # the coin each call draws
    assert 0 < sum(coins[1:]) < 9  # the check sees both branches
    np.testing.assert_allclose(out, naive_marina(grads, lambda v: comp.apply(v, rng=0), coins), rtol=1e-12,
                               atol=1e-12)


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ValueError, match="momentum"):
        EF21SGDM(TopK(1), momentum=0.0)
    with pytest.raises(ValueError, match="shift_step"):
        DIANA(TopK(1)).step_for(10)  # biased: omega is not declared, so the step must be given
    with pytest.raises(ValueError, match="p = 2"):
        MARINA(TopK(1), p=2)
    with pytest.raises(ValueError, match="unknown error feedback 'ef12'"):
        feedback_from_name("ef12", TopK(1))


def _final_gap(feedback, comp, steps=600, lr=0.5):
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    # heterogeneous workers (sigma_*^2 = 1 at the optimum): without feedback, compression keeps a floor
    p = quadratic(4, 20, L=1.0, mu=0.2, sigma2=1.0, rng=11)
    tr = compressed_gd(p, comp, lr=lr, steps=steps, rng=12, feedback=feedback, replicates=2)
    return float(tr.f_gap[:, -1].max()), float(tr.f_gap[:, 0].min())


@pytest.mark.parametrize("feedback, comp", [("ef21", TopK(5)), ("ef21_sgdm", TopK(5)), ("diana", QSGD(2)),
                                            ("marina", RandK(5))])
def test_variants_reach_the_optimum_where_compressed_gd_stalls(feedback, comp):
    fb = feedback_from_name(feedback, comp, **({"momentum": 0.5} if feedback == "ef21_sgdm" else {}))
    lr = 0.2 if feedback == "marina" else 0.5  # MARINA: step 1/(L(1 + sqrt((1 - p) omega/(p n)))) = 0.28 here
    plain, start = _final_gap(None, comp, lr=lr)
    gap, _ = _final_gap(fb, comp, lr=lr)
    # the floor of plain compressed GD is of the order of the heterogeneity (1e-2 to 1 here); the variants
    # converge linearly (600 steps at mu lr = 0.1: factors far below 1e-8 of the start)
    assert plain > 1e-4 * start
    assert gap < 1e-8 * start, (gap, plain, start)


def test_bidirectional_compression_matches_the_naive_loop():
    from simcomm.compress import ScaledSign
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd
    from tests.naive_ef import naive_bidirectional_gd

    p = quadratic(3, 12, L=1.0, mu=0.2, sigma2=0.5, rng=21)
    up, down = TopK(4), ScaledSign("l1")
    for server_ef in (False, True):
        tr = compressed_gd(p, up, lr=0.3, steps=40, feedback="ef", downlink=down, downlink_feedback=server_ef, rng=0)
        ref = naive_bidirectional_gd(lambda i, x: p.grad(x[None], np.array([i]))[0], p.x0, n=3, steps=40, lr=0.3,
                                     up=lambda v: up.apply(v, rng=0), down=lambda v: down.apply(v, rng=0),
                                     server_ef=server_ef)
        np.testing.assert_allclose(tr.x[0], ref, rtol=1e-10, atol=1e-12)
    # an exact downlink changes nothing
    a = compressed_gd(p, up, lr=0.3, steps=10, feedback="ef", rng=0)
    b = compressed_gd(p, up, lr=0.3, steps=10, feedback="ef", downlink=Identity(), rng=0)
    np.testing.assert_array_equal(a.x, b.x)
    with pytest.raises(ValueError, match="downlink_feedback"):
        compressed_gd(p, up, lr=0.3, steps=3, downlink_feedback=True)


def test_compression_both_ways_with_memory_on_both_sides_reaches_the_optimum():
    # top-k on both links of a heterogeneous quadratic, EF21 on the workers and EF on the server: linear
    # convergence to x* (400 steps at mu lr = 0.1 leave far less than 1e-8 of the initial gap)
    from simcomm.models import quadratic
    from simcomm.optim import compressed_gd

    p = quadratic(4, 20, L=1.0, mu=0.2, sigma2=1.0, rng=11)
    tr = compressed_gd(p, TopK(5), lr=0.5, steps=400, feedback="ef21", downlink=TopK(5), downlink_feedback=True, rng=0)
    assert float(tr.f_gap[0, -1]) < 1e-8 * float(tr.f_gap[0, 0])
