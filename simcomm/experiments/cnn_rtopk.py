"""The rTop-k paper's training comparison and its gradient premise on a convolutional net and real images.

The paper trains convolutional nets on CIFAR-10 and ImageNet with momentum SGD and error feedback
([P]); these experiments run the same comparison on Fashion-MNIST (or full MNIST) with LeNet-5 (or a
small ResNet), through the code the MLP experiments of :mod:`simcomm.experiments.ef` use:

* ``cnn_ef_sgd_sweep``: top-k, rTop-k (r/k = 2, 4, ... or one pre-registered r/k), unscaled rand-k and
  uncompressed SGD, all with error feedback and worker-side momentum, from the same initial weights on
  the same minibatches (:func:`simcomm.experiments.ef.sweep_rows`).
* ``cnn_real_grads``: the gradients of one such training run (uncompressed momentum SGD), recorded at
  evenly spaced steps, measured as ``real_grad_stats`` (sparsity, skew) and ``real_grad_operators``
  (the fitted sparse skewed model against the real gradients) measure the MLP's
  (:func:`~simcomm.experiments.ef.skew_rows`, :func:`~simcomm.experiments.ef.operator_rows`).

From Python, :func:`simcomm.experiments.ef.ef_sweep` runs the comparison on any
:class:`~simcomm.models.TorchModel` (a user's own ``nn.Module``) and data set.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from simcomm.backends import entry_point
from simcomm.compress import Identity
from simcomm.experiments._cnn import IMAGE_PARAMS, MODELS, REQUIRES, image_task
from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.ef import (
    OPERATOR_PARAMS,
    SKEW_PARAMS,
    SWEEP,
    _check_sweep,
    operator_rows,
    skew_rows,
    sweep_rows,
)
from simcomm.optim import ef_sgd

#: the sweep's settings on images: a Fashion-MNIST epoch is 234 steps of 8 workers x 32 images
_CNN_SWEEP = {
    **SWEEP,
    "n": Param("int", default=8, low=1, doc="workers (each sends one sparse message per step)"),
    "batch_size": Param("int", default=32, low=1, doc="images per worker and step"),
    "lr": Param("float", default=0.05, low=0.0, low_open=True, doc="base step size (the same for every compressor)"),
    "momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True,
                      doc="worker-side heavy-ball momentum before error feedback (the paper's momentum SGD)"),
    "select": Param("str", default="fixed", choices=("pilot", "fixed"), doc=SWEEP["select"].doc),
}


#: rough single-thread seconds per image gradient (LeNet-5: 8 workers x 32 images in ~32 ms) and per
#: image of a loss or accuracy evaluation (LeNet-5: the loss over 60,000 training images in ~3.9 s of
#: CPU time, the test accuracy over 10,000 in ~0.9 s); the network's size scales both (the ResNet ~ 6
#: times LeNet's). On the full Fashion-MNIST pool a run's two evaluations cost more than its 200 steps.
_GRAD_S, _EVAL_S, _SIZE = 1.25e-4, 7e-5, {"lenet5": 1.0, "small_resnet": 6.0}


def _run_seconds(p, evaluations: int) -> float:
    n_train = p["n_train"] or 60000
    n_test = p["n_test"] or 10000
    grads = p["steps"] * p["n"] * p["batch_size"] * _GRAD_S
    return _SIZE[p["model"]] * (grads + evaluations * (n_train + n_test) * _EVAL_S)


def _sweep_cost(p):
    """Seconds and bytes of one replicate: every run's steps and monitor evaluations, and the images."""
    runs = 3 + (1 if p["select"] == "fixed" else 2 * max(1, p["r_max_over_k"].bit_length() - 1))
    runs += 2 if p["room"] > 0 else 0
    return runs * _run_seconds(p, p["steps"] // p["record_every"] + 1) + 5.0, 1.5e9


def _grads_cost(p):
    """Seconds and bytes of one replicate: one run without monitor, the fit and the images."""
    return _run_seconds(p, 0) + 5.0, 1.5e9


@contextmanager
def _one_numba_thread():
    """Numba's selection kernels on one thread while PyTorch computes the gradients.

    Idle threads of numba's parallel pool keep the cores busy for a while after every kernel; on a
    machine with few cores they slow PyTorch's gradients by an order of magnitude (measured: 20 LeNet-5
    steps of top-k 30 s against 4 s). The kernels' results do not depend on the thread count.
    """
    try:
        import numba
    except ImportError:  # the numpy backend: nothing to limit
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _fresh(params, n_classes):
    """``init(rng)``: a new network's initial weights (PyTorch's default init) drawn from ``rng``."""
    build = MODELS[params["model"]]
    return lambda rng: build(n_classes=n_classes, rng=rng).params()


@experiment("cnn_ef_sgd_sweep", columns=("method", "r_over_k", "step"), params={**IMAGE_PARAMS, **_CNN_SWEEP},
            check=_check_sweep, cost=_sweep_cost, requires=REQUIRES)
def cnn_ef_sgd_sweep(params, rng, backend):
    """``ef_sgd_sweep`` on real images and a convolutional net (:func:`simcomm.experiments.ef.sweep_rows`).

    Every run of a replicate (and of its pilot streams) starts from weights drawn from its stream by a
    fresh network of the spec's kind; the image subsample is the replicate's (:func:`image_task`).
    """
    ds, model = image_task(params, rng)
    with _one_numba_thread():
        return sweep_rows(model, ds, params, rng, backend=backend, init=_fresh(params, ds.n_classes))


def _check_capture(p):
    if p["captures"] > p["steps"]:
        raise ValueError(f"captures = {p['captures']} exceeds steps = {p['steps']}")


def capture_steps(steps: int, captures: int) -> np.ndarray:
    """``captures`` evenly spaced steps in ``0 .. steps - 1`` (the first is the initial weights).

    Examples
    --------
    >>> capture_steps(300, 4).tolist()
    [0, 100, 199, 299]
    """
    return np.unique(np.linspace(0, steps - 1, captures).round().astype(int))


@entry_point
def recorded_gradients(model, ds, params, rng, *, at, backend=None):
    """Worker 0's stochastic gradients at the steps ``at`` of uncompressed momentum SGD, ``(len(at), D)``.

    The run is :func:`simcomm.optim.ef_sgd` with the sweep's settings (``n``, ``lr``, ``batch_size``,
    ``split``, ``momentum``, ``steps``; no monitor) and :class:`~simcomm.compress.Identity`; the
    gradient of step ``t`` is taken at the weights before update ``t`` (step 0: the initial weights).
    """
    want = {int(t) for t in at}
    out = {}

    def record(t, G, old, new, info):
        if old.step in want:
            out[old.step] = np.array(G[0], dtype=np.float64)

    ef_sgd(model, ds.X_train, ds.y_train, n=params["n"], steps=params["steps"], lr=params["lr"],
           batch_size=params["batch_size"], compressor=Identity(), split=params["split"], record_every=0,
           momentum=params["momentum"], rng=rng, backend=backend, on_step=record)
    return np.stack([out[int(t)] for t in at])


@experiment(
    "cnn_real_grads",
    columns=("step", "method"),
    params={
        **IMAGE_PARAMS,
        **{k: _CNN_SWEEP[k] for k in ("n", "steps", "lr", "batch_size", "split", "momentum")},
        "captures": Param("int", default=4, low=1, doc="gradients recorded at evenly spaced steps 0 .. steps - 1"),
        **SKEW_PARAMS,
        **OPERATOR_PARAMS,
    },
    check=_check_capture,
    cost=_grads_cost,
    requires=REQUIRES,
)
def cnn_real_grads(params, rng, backend):
    """Sparsity, skew and the fitted sparse skewed model on a convolutional net's training gradients.

    Rows: ``real_grad_stats``' per recorded ``step`` (``top1_multiple``, ``top10_share``, ``tail_index``,
    ``nonzero_fraction``; :func:`~simcomm.experiments.ef.skew_rows`) and ``real_grad_operators``' per
    ``method`` (``model_err`` with ``real_err``, ``model_bias``, ...;
    :func:`~simcomm.experiments.ef.operator_rows`), from worker 0's gradients along one run of
    uncompressed momentum SGD (:func:`recorded_gradients`), and ``n_params``.
    """
    ds, model = image_task(params, rng)
    at = capture_steps(params["steps"], params["captures"])
    run_rng, skew_rng, op_rng = rng.spawn(3)
    with _one_numba_thread():
        G = recorded_gradients(model, ds, params, run_rng, at=at, backend=backend)
    return (skew_rows(G, at, params, skew_rng) + operator_rows(G, params, op_rng)
            + [dict(metric="n_params", value=float(model.n_params))])
