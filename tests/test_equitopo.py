"""EquiTopo-style graphs (issue 30): offsets, the circulant they build, one-peer EquiDyn, bad input."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.topology import build, d_equistatic, equistatic_offsets, mixing_matrix, one_peer_equidyn, rho, u_equistatic
from theory.decentralized import equistatic_norm


def test_offsets_are_uniform_on_the_other_nodes_and_local_is_a_window():
    u = equistatic_offsets(11, 100_000, rng=0)
    counts = np.bincount(u, minlength=11)
    assert counts[0] == 0 and counts[1:].min() > 0
    # 10 cells of expected 10,000: a chi-square with 9 degrees of freedom, 99.9% quantile 27.9
    assert float(((counts[1:] - 1e4) ** 2 / 1e4).sum()) < 27.9
    assert set(equistatic_offsets(100, 40, rng=1, law="local").tolist()) <= set(range(1, 11))


def test_d_equistatic_is_the_circulant_of_its_offsets():
    n, M = 12, 5
    u = equistatic_offsets(n, M, rng=np.random.default_rng(3))
    W = mixing_matrix(d_equistatic(n, M, rng=np.random.default_rng(3)))
    ref = np.eye(n)
    for h in u:
        ref += np.roll(np.eye(n), h, axis=1)  # row i has a 1 at column i + h: node i listens to i + h
    np.testing.assert_allclose(W, ref / (M + 1), rtol=0, atol=1e-15)
    Wu = mixing_matrix(u_equistatic(n, M, rng=np.random.default_rng(3)))
    np.testing.assert_allclose(Wu, 0.5 * (W + W.T), rtol=0, atol=1e-15)


def test_one_peer_equidyn_has_one_peer_and_draws_fresh_offsets():
    ts = [one_peer_equidyn(9, rng=s) for s in range(20)]
    assert all(t.offsets.shape[0] == 2 for t in ts)
    assert len({int(t.offsets[1, 0]) for t in ts}) > 3


def test_equistatic_quantile_is_below_the_derived_bound_on_one_draw_set():
    n, M, p = 512, 128, 0.1
    norms = [rho(u_equistatic(n, M, rng=s)) for s in range(60)]
    assert np.quantile(norms, 1 - p) < equistatic_norm(M, p, n, "u")


def test_bad_M_is_one_line():
    with pytest.raises(UserError, match="EquiStatic needs M >= 1 offsets") as err:
        build("d_equistatic", 8, rng=0, M=0)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="offset law"):
        d_equistatic(8, 2, rng=0, law="far")
