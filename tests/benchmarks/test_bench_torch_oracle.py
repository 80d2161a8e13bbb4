"""Per-worker gradients of LeNet-5 (61,706 parameters), 8 workers x 32 examples, batched with torch.func vmap.

Baseline: what a user would otherwise write, a Python loop over the workers of ``loss.backward()`` on the
module. Also reported: one plain backward of all 256 examples together (no per-worker information), the floor.
Ratios are baseline time / simcomm time. Real Fashion-MNIST rows when the Debian package is there, else noise
of the same shape (the cost does not depend on the pixel values).
"""

import numpy as np
import pytest

from simcomm import UserError
from tests.benchmarks._timing import best_time as _best

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install torch==2.13.0)")

from simcomm.models import lenet5, load_dataset  # noqa: E402

N_WORKERS, BATCH = 8, 32


@pytest.fixture(scope="module")
def problem():
    model = lenet5(rng=0)
    rng = np.random.default_rng(12345)
    try:
        X = load_dataset("fashion_mnist", n_samples=N_WORKERS * BATCH * 8, rng=rng).X_train
    except UserError:
        X = rng.standard_normal((N_WORKERS * BATCH, 784)).astype(np.float32)
    Xb = np.ascontiguousarray(X[: N_WORKERS * BATCH].reshape(N_WORKERS, BATCH, 784))
    yb = rng.integers(0, 10, (N_WORKERS, BATCH))
    return model, model.params(), Xb, yb


def _loop(model, theta, Xb, yb, out):
    # the baseline: load theta into the module, one backward per worker, flatten its gradient
    model.load(theta)
    params = list(model.module.parameters())
    for i in range(Xb.shape[0]):
        grads = torch.autograd.grad(torch.nn.functional.cross_entropy(
            model.module(torch.from_numpy(Xb[i])), torch.from_numpy(yb[i])), params)
        out[i] = torch.cat([g.reshape(-1) for g in grads]).numpy()
    return out


def test_bench_lenet_worker_gradients_vs_loop(benchmark, problem):
    model, theta, Xb, yb = problem
    out = np.empty((N_WORKERS, model.n_params))
    ref = np.empty_like(out)
    benchmark.pedantic(model.worker_gradients, args=(theta, Xb, yb), kwargs={"out": out}, rounds=3, iterations=1)
    t_fast, G = _best(lambda: model.worker_gradients(theta, Xb, yb, out=out), 5)
    t_loop, R = _best(lambda: _loop(model, theta, Xb, yb, ref), 5)
    np.testing.assert_allclose(G, R, rtol=0, atol=1e-4 * np.abs(R).max())  # float32, sums in another order
    benchmark.extra_info["baseline"] = "Python loop over the 8 workers of autograd on the module"
    benchmark.extra_info["ratio"] = t_loop / t_fast
    benchmark.extra_info["seconds"] = {"vmap": t_fast, "loop": t_loop}
