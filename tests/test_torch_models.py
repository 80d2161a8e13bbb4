"""PyTorch modules as gradient oracles: batched per-worker gradients, per-example norms, the nets, training."""

import doctest
import sys
from pathlib import Path

import numpy as np
import pytest

from simcomm import UserError

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install torch==2.13.0)")

from simcomm.compress import TopK  # noqa: E402
from simcomm.models import TorchModel, lenet5, mlp, small_resnet  # noqa: E402
from simcomm.models import init_params as mlp_init  # noqa: E402
from simcomm.models._torch_nn import import_torch  # noqa: E402
from simcomm.optim import TorchProblem, ef_init, ef_sgd, ef_update, importance_sgd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def tiny_cnn(dtype=torch.float64):
    """A small CNN (conv, pool, linear) on 8x8 one-channel images, in float64 by default."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Unflatten(1, (1, 8, 8)), torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(27, 4))
    return TorchModel(net.to(dtype))


def autograd_grad(model, theta, X, y, weights=None):
    """The reference: one plain ``loss.backward()`` of the module itself at ``theta``, flattened."""
    model.load(theta)
    m = model.module
    m.zero_grad()
    out = m(torch.as_tensor(X, dtype=model.dtype))
    losses = torch.nn.functional.cross_entropy(out, torch.as_tensor(y), reduction="none")
    w = torch.full((len(y),), 1.0 / len(y), dtype=model.dtype) if weights is None else torch.as_tensor(
        weights, dtype=model.dtype)
    (losses * w).sum().backward()
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()]).double().numpy()


@pytest.fixture
def data(rng):
    n, B = 5, 7
    return rng.standard_normal((n, B, 64)), rng.integers(0, 4, (n, B))


def test_batched_worker_gradients_equal_a_loop_of_autograd_float64(data, rng):
    model = tiny_cnn()
    theta = model.params() + 0.1 * rng.standard_normal(model.n_params)
    Xb, yb = data
    G = model.worker_gradients(theta, Xb, yb)
    assert G.shape == (5, model.n_params) and G.dtype == np.float64
    ref = np.stack([autograd_grad(model, theta, Xb[i], yb[i]) for i in range(5)])
    # the same sums in float64 in another order (vmap batches the convolution): each gradient entry sums at
    # most B * 36 products of O(1) terms, so the two differ by a few hundred ulps of the largest, < 1e-12 here
    np.testing.assert_allclose(G, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_batched_worker_gradients_float32_lenet(rng):
    model = lenet5(rng=0)
    Xb = rng.standard_normal((3, 4, 784)).astype(np.float32)
    yb = rng.integers(0, 10, (3, 4))
    theta = model.params()
    out = np.full((3, model.n_params), np.nan)
    G = model.worker_gradients(theta, Xb, yb, out=out)
    assert G is out and np.isfinite(G).all()
    ref = np.stack([autograd_grad(model, theta, Xb[i], yb[i]) for i in range(3)])
    # float32 (eps 6e-8) sums of up to 4 * 784 terms in another order: relative error <~ 1e-4 of the largest
    np.testing.assert_allclose(G, ref, rtol=0, atol=1e-4 * np.abs(ref).max())


def test_node_gradients_at_own_parameters_equal_a_loop_of_autograd(data, rng):
    model = tiny_cnn()
    Xb, yb = data
    Theta = model.params() + 0.1 * rng.standard_normal((5, model.n_params))
    G = model.node_gradients(Theta, Xb, yb)
    assert G.shape == (5, model.n_params) and G.dtype == np.float64
    ref = np.stack([autograd_grad(model, Theta[i], Xb[i], yb[i]) for i in range(5)])
    # float64 sums in another order, as for worker_gradients: rounding level
    np.testing.assert_allclose(G, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    # equal rows: the shared-parameter oracle
    same = np.tile(Theta[0], (5, 1))
    np.testing.assert_allclose(model.node_gradients(same, Xb, yb), model.worker_gradients(Theta[0], Xb, yb),
                               rtol=0, atol=1e-13 * np.abs(ref).max())


def test_node_gradients_float32_lenet_into_a_buffer(rng):
    model = lenet5(rng=0)
    Xb = rng.standard_normal((3, 4, 784)).astype(np.float32)
    yb = rng.integers(0, 10, (3, 4))
    Theta = model.params() + 0.05 * rng.standard_normal((3, model.n_params))
    out = np.full((3, model.n_params), np.nan)
    G = model.node_gradients(Theta, Xb, yb, out=out)
    assert G is out
    ref = np.stack([autograd_grad(model, Theta[i], Xb[i], yb[i]) for i in range(3)])
    np.testing.assert_allclose(G, ref, rtol=0, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("shape, n_batches, match", [((3, 5), 3, "shape"), ((2, 8), 3, "minibatches")])
def test_node_gradients_bad_shapes_are_one_line(shape, n_batches, match):
    m = TorchModel(torch.nn.Linear(3, 2).double())
    with pytest.raises(UserError, match=match):
        m.node_gradients(np.zeros(shape), np.ones((n_batches, 4, 3)), np.zeros((n_batches, 4), dtype=np.int64))


def test_per_example_norms_weighted_and_mean_gradients_match_autograd(rng):
    model = tiny_cnn()
    X, y = rng.standard_normal((9, 64)), rng.integers(0, 4, 9)
    theta = model.params()
    per = np.stack([autograd_grad(model, theta, X[i:i + 1], y[i:i + 1]) for i in range(9)])
    tol = 1e-12 * np.abs(per).max()  # float64, as above
    np.testing.assert_allclose(model.per_example_grad_norms(theta, X, y), np.linalg.norm(per, axis=1), rtol=0,
                               atol=tol * 10)
    w = rng.random(9)
    np.testing.assert_allclose(model.weighted_gradient(theta, X, y, w), w @ per, rtol=0, atol=tol * 10)
    np.testing.assert_allclose(model.gradient(theta, X, y), per.mean(axis=0), rtol=0, atol=tol * 10)
    loss, acc = model.loss_accuracy(theta, X, y)
    logits = model.module(torch.as_tensor(X)).detach()
    assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(logits, torch.as_tensor(y))), rel=1e-12)
    assert acc == float(np.mean(logits.argmax(1).numpy() == y))


def test_float64_crossings_share_memory_and_params_round_trip(rng):
    model = tiny_cnn()
    theta = rng.standard_normal(model.n_params)
    assert model.theta(theta).data_ptr() == theta.ctypes.data  # float64 on the CPU: no copy of theta
    model.load(theta)
    np.testing.assert_array_equal(model.params(), theta)
    with pytest.raises(UserError, match="flat vector of 142 parameters"):
        model.theta(np.zeros(3))


def test_compressors_and_error_feedback_run_on_the_oracle_output(data, rng):
    model = tiny_cnn()
    G = model.worker_gradients(model.params(), *data)
    sent = TopK(10).apply(G[0], rng=rng)
    assert np.count_nonzero(sent) == 10
    state, _ = ef_update(ef_init(model.params(), 5), G, lr=0.1, compressor=TopK(10), rng=rng)
    # error feedback keeps exactly what was not sent: p = g + 0 = C(p) + m'
    np.testing.assert_array_equal(state.residual + np.stack([TopK(10).apply(g, rng=rng) for g in G]), G)


def _mlp_as_torch(sizes, theta):
    """The numpy MLP ``sizes`` at ``theta`` as a float64 torch module, and the permutation between the layouts."""
    layers, perm, pos = [], [], 0
    for i, o in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(i, o).double(), torch.nn.ReLU()]
        W = np.arange(pos, pos + i * o).reshape(i, o)  # MLP: W (in, out) row-major, then b
        perm += [W.T.ravel(), np.arange(pos + i * o, pos + i * o + o)]  # torch: weight (out, in), then bias
        pos += (i + 1) * o
    perm = np.concatenate(perm)
    model = TorchModel(torch.nn.Sequential(*layers[:-1]))
    model.load(theta[perm])
    return model, perm


def test_ef_sgd_trains_a_torch_module_exactly_as_the_same_numpy_mlp(rng):
    # the same network twice: minibatches from the same uniforms, TopK (equivariant under the layouts'
    # permutation, no ties in continuous data), so every step is the same up to float64 rounding
    X, y = rng.standard_normal((120, 6)), rng.integers(0, 3, 120)
    sizes = (6, 8, 3)
    theta = mlp_init(mlp(sizes), rng=1)
    net, perm = _mlp_as_torch(sizes, theta)
    kw = dict(n=4, steps=30, lr=0.2, batch_size=5, compressor=TopK(12), rng=2, record_every=10, X_test=X[:20],
              y_test=y[:20])
    a = ef_sgd(mlp(sizes), X, y, x0=theta, **kw)
    b = ef_sgd(net, X, y, x0=theta[perm], **kw)
    np.testing.assert_allclose(b.train_loss, a.train_loss, rtol=1e-10)
    np.testing.assert_array_equal(b.test_accuracy, a.test_accuracy)
    np.testing.assert_array_equal(b.bits, a.bits)
    np.testing.assert_allclose(b.x, a.x[perm], rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.info["comp_error"], a.info["comp_error"], rtol=1e-8)


def test_importance_sgd_on_a_torch_module_matches_the_numpy_mlp(rng):
    X, y = rng.standard_normal((60, 5)), rng.integers(0, 3, 60)
    sizes = (5, 7, 3)
    theta = mlp_init(mlp(sizes), rng=1)
    net, perm = _mlp_as_torch(sizes, theta)
    kw = dict(steps=12, lr=0.3, batch_size=6, proposal="stale", n=2, rng=3, record_every=6)
    a = importance_sgd(mlp(sizes), X, y, x0=theta, **kw)
    b = importance_sgd(net, X, y, x0=theta[perm], **kw)
    assert set(b.records) == set(a.records)
    for k in ("train_loss", "trace_cov_uniform", "trace_cov_ideal", "trace_cov_actual", "max_weight"):
        np.testing.assert_allclose(b.records[k], a.records[k], rtol=1e-9, equal_nan=True, err_msg=k)


def test_lenet_trains_on_images_through_the_fused_ef_path(rng):
    X = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    net = lenet5(rng=0)
    tr = ef_sgd(net, X, y, n=2, steps=8, lr=0.05, batch_size=8, compressor=TopK(600), rng=1, record_every=4,
                X_test=X[:16], y_test=y[:16])
    assert tr.step.tolist() == [0, 4, 8] and np.isfinite(tr.train_loss).all()
    assert tr.bits[-1] == 8 * TopK(600).bits(61706)
    assert tr.train_loss[-1] < tr.train_loss[0]  # 8 steps on 64 examples of pure noise: memorising starts


def test_the_nets_have_their_sizes_and_seeded_weights():
    state = torch.random.get_rng_state()
    a, b = lenet5(rng=3), lenet5(rng=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # torch's global generator is left alone
    np.testing.assert_array_equal(a.params(), b.params())
    assert not np.array_equal(a.params(), lenet5(rng=4).params())
    assert a.n_params == 61706
    r = small_resnet(rng=0)
    assert 100_000 <= r.n_params <= 300_000
    x = torch.zeros(2, 784)
    assert r.module(x).shape == (2, 10) and a.module(x.reshape(2, 1, 28, 28)).shape == (2, 10)


def test_small_resnet_worker_gradients_match_autograd(rng):
    model = small_resnet(blocks=1, widths=(8, 16), groups=4, rng=0)
    model.module.double()
    model = TorchModel(model.module)
    Xb, yb = rng.standard_normal((2, 3, 784)), rng.integers(0, 10, (2, 3))
    G = model.worker_gradients(model.params(), Xb, yb)
    ref = np.stack([autograd_grad(model, model.params(), Xb[i], yb[i]) for i in range(2)])
    np.testing.assert_allclose(G, ref, rtol=0, atol=1e-11 * np.abs(ref).max())  # float64, reordered sums


@pytest.mark.parametrize("make,match", [
    (lambda: TorchModel(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))), "BatchNorm"),
    (lambda: TorchModel(object()), "not a torch.nn.Module"),
    (lambda: TorchModel(torch.nn.ReLU()), "no parameters"),
    (lambda: lenet5(channels=0), "channels"),
    (lambda: small_resnet(widths=(12,)), "multiples of groups"),
    (lambda: TorchProblem(mlp((2, 2)), np.zeros((2, 2)), np.zeros(2)), "TorchModel"),
])
def test_bad_models_say_what_to_do_in_one_line(make, match):
    with pytest.raises(UserError, match=match) as exc:
        make()
    assert "\n" not in str(exc.value)


def test_batchnorm_in_eval_mode_is_accepted():
    bn = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)).eval()
    assert TorchModel(bn).n_params == 18


def test_without_torch_the_models_say_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" fail
    for call in (import_torch, lambda: lenet5(rng=0), lambda: TorchModel(None)):
        with pytest.raises(UserError, match=r"pip install torch==2\.13\.0") as exc:
            call()
        assert "\n" not in str(exc.value)


def test_docs_torch_models_page_runs():
    # docs/torch_models.md: a user's own nn.Module and data through ef_sgd, run() and importance_sgd
    res = doctest.testfile(str(ROOT / "docs" / "torch_models.md"), module_relative=False,
                           optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted >= 8 and res.failed == 0
