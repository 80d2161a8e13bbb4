"""Per-example gradient norms (C7 trick) on a 784-256-10 MLP, batch 1,024, real MNIST rows.

Targets (issue 7): at most 2x the cost of the plain forward + backward pass, and at least 20x faster
than computing explicit per-example gradients. Ratios are baseline time / simcomm time.
"""


import mlxtend  # noqa: F401,E402  (a core dependency: missing fails, never skips)
import numpy as np
import pytest

from simcomm.models import gradient, init_params, load_dataset, mlp, per_example_gradients  # noqa: E402
from simcomm.models._nn import per_example_grad_norms  # noqa: E402
from tests.benchmarks._timing import best_time as _best

B = 1024


@pytest.fixture(scope="module")
def problem():
    ds = load_dataset("mnist", rng=np.random.default_rng(12345))
    model = mlp((784, 256, 10), l2=1e-4)
    theta = init_params(model, rng=np.random.default_rng(12345))
    return model, theta, ds.X_train[:B], ds.y_train[:B]




def _explicit_norms(model, theta, X, y, chunk=64):
    # what a user would otherwise do: form the per-example gradients (in chunks, to bound memory) and take norms
    return np.concatenate([
        np.linalg.norm(per_example_gradients(model, theta, X[i : i + chunk], y[i : i + chunk]), axis=1)
        for i in range(0, X.shape[0], chunk)
    ])


def test_bench_norms_vs_explicit_per_example(benchmark, problem):
    model, theta, X, y = problem
    fast = benchmark.pedantic(per_example_grad_norms, args=(model, theta, X, y), rounds=5, iterations=1)
    t_fast = _best(lambda: per_example_grad_norms(model, theta, X, y), 5)[0]
    t_base, ref = _best(lambda: _explicit_norms(model, theta, X, y), 1)
    np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-10)
    benchmark.extra_info["baseline"] = "explicit per-example gradients (chunks of 64) then norms"
    benchmark.extra_info["ratio"] = t_base / t_fast
    benchmark.extra_info["target"] = ">= 20x"


def test_bench_norms_vs_plain_backward(benchmark, problem):
    model, theta, X, y = problem
    benchmark.pedantic(per_example_grad_norms, args=(model, theta, X, y), rounds=5, iterations=1)
    t_fast = _best(lambda: per_example_grad_norms(model, theta, X, y), 7)[0]
    t_plain, g = _best(lambda: gradient(model, theta, X, y), 7)
    assert g.shape == (model.n_params,)
    benchmark.extra_info["baseline"] = "plain forward + backward of the mean loss (no per-example information)"
    benchmark.extra_info["ratio"] = t_plain / t_fast
    benchmark.extra_info["target"] = ">= 0.5x (norms at most 2x a plain pass)"
