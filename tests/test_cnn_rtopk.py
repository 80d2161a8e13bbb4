"""EF-SGD with worker-side momentum, the sweep on any model and data set, and the convolutional-net experiments."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.compress import Identity, RTopK, TopK
from simcomm.experiments.ef import ef_sweep
from simcomm.models import Dataset, init_params, load_dataset, logistic_regression, mlp
from simcomm.optim import ef_sgd


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", n_samples=300, rng=0)


@pytest.mark.parametrize("compressor", [TopK(20), RTopK(20, 80), Identity()])
def test_momentum_zero_is_plain_ef_sgd(digits, compressor):
    m = mlp((64, 8, 10))
    kw = dict(n=4, steps=30, lr=0.1, batch_size=8, compressor=compressor, record_every=10, rng=3,
              X_test=digits.X_test, y_test=digits.y_test)
    a = ef_sgd(m, digits.X_train, digits.y_train, **kw)
    b = ef_sgd(m, digits.X_train, digits.y_train, momentum=0.0, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    np.testing.assert_array_equal(a.comp_error, b.comp_error)


def _top_k(P, k):
    C = np.zeros_like(P)
    idx = np.argsort(-np.abs(P), axis=1)[:, :k]
    np.put_along_axis(C, idx, np.take_along_axis(P, idx, axis=1), axis=1)
    return C


@pytest.mark.parametrize("beta", [0.5, 0.9])
def test_momentum_matches_a_numpy_loop_on_the_same_gradients(digits, beta):
    m = logistic_regression(64, 10)
    n, k, lr, steps = 3, 15, 0.2, 12
    x0 = init_params(m, rng=0)
    seen = []
    tr = ef_sgd(m, digits.X_train, digits.y_train, n=n, steps=steps, lr=lr, batch_size=8, compressor=TopK(k),
                momentum=beta, record_every=steps, rng=7, x0=x0,
                on_step=lambda t, G, old, new, info: seen.append(G.copy()))
    # reference: u_i <- beta u_i + g_i, p_i = u_i + e_i, c_i = top_k(p_i), e_i <- p_i - c_i, x <- x - lr mean c_i
    x = x0.copy()
    u = np.zeros((n, m.n_params))
    e = np.zeros((n, m.n_params))
    for G in seen:
        u = beta * u + G
        P = u + e
        C = _top_k(P, k)
        e = P - C
        x = x - lr * C.mean(axis=0)
    np.testing.assert_allclose(tr.x, x, rtol=1e-12, atol=1e-12)


def test_momentum_out_of_range_is_one_line(digits):
    with pytest.raises(UserError, match="momentum = 1.0"):
        ef_sgd(logistic_regression(64, 10), digits.X_train, digits.y_train, n=2, steps=2, lr=0.1,
               compressor=TopK(5), momentum=1.0)


def test_ef_sweep_runs_a_users_torch_module():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from simcomm.models import TorchModel

    g = np.random.default_rng(0)
    X = g.standard_normal((120, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)
    ds = Dataset(X_train=X[:80], X_test=X[80:], y_train=y[:80], y_test=y[80:], n_classes=3, name="toy")
    torch.manual_seed(0)
    model = TorchModel(torch.nn.Linear(5, 3))
    rows = ef_sweep(model, ds, rng=1, n=2, steps=6, lr=0.1, batch_size=4, density=0.2, select="fixed", r_fixed=2,
                    r_max_over_k=2, momentum=0.5, record_every=6)
    final = {r["method"]: r["value"] for r in rows if r["metric"] == "final_train_loss"}
    assert set(final) == {"sgd", "top_k", "rtop_k r/k=2", "rand_k", "best_intermediate"}
    assert all(np.isfinite(v) for v in final.values())
    assert final["best_intermediate"] == final["rtop_k r/k=2"]
    # every run starts from the module's own weights: the monitor's step-0 losses agree
    start = {r["method"]: r["value"] for r in rows if r["metric"] == "train_loss" and r["step"] == 0}
    assert len(set(start.values())) == 1
    with pytest.raises(UserError, match="unknown setting 'hidden'"):
        ef_sweep(model, ds, rng=1, hidden=3)
    with pytest.raises(UserError, match="r_fixed"):
        ef_sweep(model, ds, rng=1, select="fixed", r_fixed=8, r_max_over_k=4)


def test_the_cnn_experiments_declare_torch_and_record_gradients_along_the_run():
    pytest.importorskip("torch", reason="the torch extra is not installed")
    from simcomm.experiments import get_experiment, load_all
    from simcomm.experiments.cnn_rtopk import capture_steps, recorded_gradients
    from simcomm.models import TorchModel

    load_all()
    assert get_experiment("cnn_ef_sgd_sweep").requires == ("torch",)
    assert get_experiment("cnn_real_grads").requires == ("torch",)
    assert get_experiment("ef_sgd_sweep").requires == ()
    import torch

    g = np.random.default_rng(0)
    X = g.standard_normal((64, 6)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    torch.manual_seed(0)
    model = TorchModel(torch.nn.Linear(6, 2))
    ds = Dataset(X_train=X, X_test=X[:8], y_train=y, y_test=y[:8], n_classes=2, name="toy")
    at = capture_steps(10, 3)
    G = recorded_gradients(model, ds, dict(n=2, steps=10, lr=0.1, batch_size=4, split="iid", momentum=0.9), 0,
                           at=at)
    assert at.tolist() == [0, 4, 9] and G.shape == (3, model.n_params)
    assert np.isfinite(G).all() and not np.allclose(G[0], G[2])


@pytest.mark.parametrize("path", ["sims/rtopk_cnn_intermediate_r.toml", "sims/rtopk_cnn_grad_skew.toml",
                                  "sims/rtopk_cnn_model_fits.toml",
                                  "sims/extra/rtopk_cnn_intermediate_r_ties_topk.toml",
                                  "sims/extra/rtopk_cnn_r_sweep.toml"])
def test_the_cnn_claims_train_on_the_whole_published_split(path):
    # issue 42: the judged cells draw minibatches from all 60,000 training images (0 = the whole split)
    from pathlib import Path

    from simcomm.spec import load

    spec = load(Path(__file__).resolve().parents[1] / path)
    assert all(c["n_train"] == 0 and c["n_test"] == 0 for c in spec.cells())
