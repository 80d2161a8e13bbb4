"""Gradients captured from a user's torch module feed the real-gradient analyses (skew statistics, fitted model)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="gradient capture needs the torch extra")

from simcomm.models import fit_sparse_skewed, load_dataset, load_gradients, skew_stats  # noqa: E402
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


def test_recorder_keeps_a_uniform_sample_within_its_memory_bound(tmp_path):
    net = torch.nn.Linear(10, 10)  # D = 110: 440 bytes a row
    rec = GradientRecorder(net, max_bytes=440 * 4, rng=0)
    assert rec.max_rows == 4
    for t in range(50):
        net.zero_grad()
        (net(torch.ones(1, 10)) * (t + 1)).sum().backward()  # the gradient of step t is (t + 1) x that of step 0
        rec.record()
    G, steps = rec.gradients, rec.steps
    assert G.shape == (4, 110) and rec.nbytes <= 440 * 4 and np.all(np.diff(steps) > 0)
    assert steps.max() > 3  # the sample reaches past the first rows
    np.testing.assert_allclose(G[:, 0], steps + 1.0)  # each row is the gradient of its step
    H, s2 = load_gradients(rec.save(tmp_path / "g.npz"))
    np.testing.assert_array_equal(H, G)
    np.testing.assert_array_equal(s2, steps)


def test_recorder_refuses_a_bound_below_one_row():
    from simcomm._errors import UserError

    with pytest.raises(UserError, match="raise max_bytes"):
        GradientRecorder(torch.nn.Linear(10, 10), max_bytes=100)


def test_advise_on_gradients_recorded_from_a_torch_model():
    from simcomm.network import Network, advise

    _, rec = _mlp_gradients(steps=20)
    adv = advise(rec.gradients, Network(5e-6, 8e-10), 8, rng=0)
    assert len(adv.rows) >= 6 and all(np.isfinite(r["error_mean"]) for r in adv.rows)
    topk = {r["label"]: r["error_mean"] for r in adv.rows if r["compressor"] == "top_k" and r["feedback"] == "none"}
    assert all(0 < v < 1 for v in topk.values())  # top-k keeps the largest entries: error in (0, 1)
