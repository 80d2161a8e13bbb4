"""Gradients captured from a user's torch module feed the real-gradient analyses (skew statistics, fitted model)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="gradient capture needs the torch extra")

from simcomm.models import fit_sparse_skewed, load_dataset, skew_stats  # noqa: E402
from simcomm.torch import GradientRecorder  # noqa: E402


def _mlp_gradients(steps=30, every=1):
    ds = load_dataset("digits", rng=0)
    X = torch.from_numpy(ds.X_train.astype(np.float32))
    y = torch.from_numpy(ds.y_train.astype(np.int64))
    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    rec = GradientRecorder(net, every=every)
    for _ in range(steps):
        idx = torch.randint(0, X.shape[0], (32,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
        rec.record()
        opt.step()
    return net, rec


def test_recorder_matches_the_module_gradients():
    net, rec = _mlp_gradients(steps=5)
    G = rec.gradients
    D = sum(p.numel() for p in net.parameters())
    assert G.shape == (5, D) and G.dtype == np.float32
    last = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy()
    np.testing.assert_array_equal(G[-1], last)  # the last row is the module's gradient, in parameters() order
    assert GradientRecorder(net, every=2).gradients.shape == (0, D)


def test_captured_gradients_into_skew_stats_and_fit():
    _, rec = _mlp_gradients(steps=30, every=3)
    G = rec.gradients
    assert G.shape[0] == 10
    st = skew_stats(G)
    assert np.all(np.isfinite(st.top1_share)) and np.all(st.top1_share > 0.01)  # more than a uniform share
    fit = fit_sparse_skewed(G)
    assert fit.sample(4, rng=0).shape == (4, G.shape[1])
    fit_t = fit_sparse_skewed(torch.from_numpy(G))  # a tensor works as well
    np.testing.assert_allclose(fit_t.sample(4, rng=0), fit.sample(4, rng=0))
