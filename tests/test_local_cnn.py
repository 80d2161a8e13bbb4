"""Local-update compositions on a network trained on data: every worker's minibatch gradient at its own model."""

import numpy as np
import pytest

from simcomm import UserError
from simcomm.models import Dataset, init_params, load_dataset, mlp, split_workers
from simcomm.optim import EFWatch, ModelProblem, build_method, run


@pytest.fixture
def digits_problem():
    ds = load_dataset("digits", rng=0)
    m = mlp((64, 12, 10))
    shards = split_workers(ds.y_train, 4, rng=2)
    return m, ModelProblem(m, ds.X_train, ds.y_train, n=4, batch_size=8, shards=shards, X_test=ds.X_test,
                           y_test=ds.y_test, batch_rng=5)


def test_worker_models_at_one_point_give_the_minibatch_gradients(digits_problem):
    m, p = digits_problem
    theta = init_params(m, rng=1)
    a = p.minibatch_gradients(np.random.default_rng(3), theta)
    b = p.worker_minibatch_gradients(np.random.default_rng(3), np.tile(theta, (4, 1)))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)


def test_diloco_with_one_inner_step_and_outer_sgd_of_one_is_data_parallel_momentum_sgd(digits_problem):
    m, p = digits_problem
    theta0 = init_params(m, rng=1)
    method = build_method("diloco", H=1, lr=0.1, inner="momentum", inner_beta=0.9, outer="sgd", outer_lr=1.0)
    tr = run(p, method, 40, rng=3, x0=theta0[None], watch=EFWatch(p, 40, 20, None))
    # the definition, written out: the same minibatches (the problem's stream), the averaged heavy ball
    stream, theta, buf = np.random.default_rng(5), theta0.copy(), np.zeros((4, theta0.size))
    for _ in range(40):
        buf = 0.9 * buf + p.minibatch_gradients(stream, theta)
        theta = theta - 0.1 * buf.mean(axis=0)
    np.testing.assert_allclose(tr.x, theta, rtol=0, atol=1e-12)
    assert tr.train_loss[-1] == pytest.approx(p.loss_accuracy(theta)[0], rel=1e-12)
    # the loop's own message count: one model per worker and step, float32 values
    assert tr.bits.tolist() == [0.0, 20 * 4 * 32 * m.n_params, 40 * 4 * 32 * m.n_params]


def test_diloco_workers_step_on_their_own_models_between_rounds(digits_problem):
    m, p = digits_problem
    theta0 = init_params(m, rng=1)
    H, lr = 4, 0.1
    method = build_method("diloco", H=H, lr=lr, inner="sgd", outer="sgd", outer_lr=1.0)
    tr = run(p, method, 2 * H, rng=3, x0=theta0[None], watch=EFWatch(p, 2 * H, 0, None))
    stream, x = np.random.default_rng(5), theta0.copy()
    for _ in range(2):  # FedAvg: H local steps per worker from the server's model, then the average
        W = np.tile(x, (4, 1))
        for _ in range(H):
            W = W - lr * p.worker_minibatch_gradients(stream, W)
        x = W.mean(axis=0)
    np.testing.assert_allclose(tr.x, x, rtol=0, atol=1e-12)


torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install torch==2.13.0)")


def _tiny_images(rng):
    X = rng.standard_normal((160, 12)).astype(np.float32)
    y = X[:, :3].argmax(axis=1).astype(np.int64)
    return Dataset(X[:120], y[:120], X[120:], y[120:], 3, "tiny")


def test_diloco_vs_data_parallel_takes_a_users_module_and_counts_equal_bytes(rng):
    from simcomm.experiments.local_cnn import diloco_vs_data_parallel
    from simcomm.models import TorchModel

    torch.manual_seed(0)
    net = TorchModel(torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)))
    rows = diloco_vs_data_parallel(net, _tiny_images(rng), n=4, steps=24, H=4, batch_size=8, lr=0.1, rng=1)
    got = {(r["method"], r["metric"]): r["value"] for r in rows}
    assert {m for m, _ in got} == {"data_parallel", "diloco", "data_parallel_equal_bytes"}
    D = net.n_params
    assert got["data_parallel", "bits"] == 24 * 32 * D
    assert got["diloco", "bits"] == got["data_parallel_equal_bytes", "bits"] == 6 * 32 * D
    start = float(np.log(3.0))  # about the loss of a fresh net on 3 classes
    for arm in ("data_parallel", "diloco"):
        assert got[arm, "final_train_loss"] < start and 0.0 <= got[arm, "final_test_error"] <= 1.0


def test_diloco_vs_data_parallel_refuses_a_budget_that_is_not_whole_rounds(rng):
    from simcomm.experiments.local_cnn import diloco_vs_data_parallel
    from simcomm.models import TorchModel

    net = TorchModel(torch.nn.Linear(12, 3))
    with pytest.raises(UserError, match="not a multiple of H = 5"):
        diloco_vs_data_parallel(net, _tiny_images(rng), n=2, steps=12, H=5)


def test_torch_workers_at_one_point_give_the_minibatch_gradients(rng):
    from simcomm.models import TorchModel
    from simcomm.optim import TorchProblem

    torch.manual_seed(0)
    net = TorchModel(torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double())
    data = _tiny_images(rng)
    p = TorchProblem(net, data.X_train.astype(np.float64), data.y_train, n=3, batch_size=5,
                     shards=split_workers(data.y_train, 3, rng=0))
    theta = net.params()
    a = p.minibatch_gradients(np.random.default_rng(4), theta)
    b = p.worker_minibatch_gradients(np.random.default_rng(4), np.tile(theta, (3, 1)))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    c = p.worker_minibatch_gradients(np.random.default_rng(4), np.stack([theta, 2 * theta, -theta]))
    np.testing.assert_allclose(c[0], a[0], rtol=1e-12, atol=1e-14)
    assert not np.allclose(c[1], a[1])  # each worker differentiates at its own model
