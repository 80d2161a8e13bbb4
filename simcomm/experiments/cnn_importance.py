"""Importance sampling (Alain et al., 2015) on a convolutional network and real images.

The experiments of :mod:`simcomm.experiments.importance` (stale scores, smoothing, training speed) with
a :class:`~simcomm.models.TorchModel` in place of the small MLP: LeNet-5 on Fashion-MNIST by default
(:mod:`simcomm.experiments._cnn`). Per-example gradient norms, which the workers' scores and the monitor's
exact Tr Cov need over the whole training set, take one forward and one backward pass per chunk for a
network of Linear and Conv2d layers (:mod:`simcomm.models._torch_norms`).

Each registered experiment is a thin wrapper: :func:`image_task` draws the data set and the network, and a
private function of ``(params, dataset, model, rng)`` measures, so a user's own ``nn.Module`` and images
run through the same code.
"""

from __future__ import annotations

import numpy as np

from simcomm.experiments._cnn import IMAGE_PARAMS, REQUIRES, image_task
from simcomm.experiments._registry import Param, experiment
from simcomm.experiments.importance import _TRAIN, _check_train, _run, _staleness_rows, _training_rows

_RUN = {k: _TRAIN[k] for k in ("steps", "lr", "batch_size", "n", "mode", "period", "mean_delay", "smoothing_rel",
                               "record_every", "score_offset")}
_STALE = {**IMAGE_PARAMS, **_RUN}


def _ratio_rows(tr) -> list:
    """T_stale/T_unif and T_ideal/T_unif at every monitored step >= 1 (column ``step``), and the room.

    The room is the largest T_ideal/T_unif: no proposal does better than the ideal one (C3).
    """
    later = tr.step >= 1
    rows = []
    for name, t in (("stale", tr.trace_cov_actual), ("ideal", tr.trace_cov_ideal)):
        ratio = (t / tr.trace_cov_uniform)[later]
        rows += [dict(metric=f"{name}_over_uniform", value=float(r), step=int(s))
                 for s, r in zip(tr.step[later], ratio)]
    room = (tr.trace_cov_ideal / tr.trace_cov_uniform)[later]
    return rows + [dict(metric="ideal_over_uniform_max", value=float(np.max(room)))]


def cnn_staleness(params, ds, model, rng) -> list:
    """Rows of :func:`is_cnn_staleness` for any :class:`~simcomm.models.TorchModel` and data set ``ds``.

    ``params`` holds the run parameters of :data:`_RUN` (``steps``, ``lr``, ``batch_size``, ``n``, ``mode``,
    ``period``, ``mean_delay``, ``smoothing_rel``, ``record_every``, ``score_offset``); training starts at
    the module's own parameters.
    """
    tr = _run(params, ds, model, "stale", model.params(), np.random.default_rng(rng))
    return _staleness_rows(tr) + _ratio_rows(tr)


def _cost(p):
    """Rough seconds and bytes of one replicate: training gradients, then per-example norms over the training set.

    LeNet-5 on one core: about 2.5e-4 s per example and step of a minibatch gradient, 2.4e-4 s per example of the
    one-pass norms; the norms are taken at every monitored step and at every refresh of the stale scores.
    """
    n_train = p["n_train"] or 60000
    refresh = p.get("period", 10) if p.get("mode", "period") == "period" else p.get("mean_delay", 10.0)
    passes = p["steps"] / max(p.get("record_every", p["steps"]), 1) + 1 + p["steps"] / max(refresh, 1.0)
    arms = 2.0  # the experiments run two arms (proposals or step sizes) or more on the same data
    scale = 1.0 if p["model"] == "lenet5" else 4.0
    return scale * arms * (2.5e-4 * p["steps"] * p["batch_size"] + 2.4e-4 * n_train * passes) + 5.0, 2e9


@experiment("is_cnn_staleness", params=_STALE, check=_check_train, cost=_cost, requires=REQUIRES)
def is_cnn_staleness(params, rng, backend):
    """Train a network with stale (+ smoothed) importance sampling; monitor Tr Cov of uniform / ideal / stale.

    The rows of ``is_staleness`` (``stale_over_uniform_max``: the largest T_stale/T_unif over the
    monitored steps >= 1, both exact Tr Cov of the minibatch estimator at the master's parameters;
    ``sqrt_trace_cov`` per proposal and step; ``stale_position``; ``mean_staleness``; ``max_weight``),
    ``stale_over_uniform`` and ``ideal_over_uniform`` at every monitored step >= 1 (column ``step``), and
    ``ideal_over_uniform_max`` (the room: no proposal does better than the ideal one, C3).
    """
    data_rng, run_rng = np.random.default_rng(rng).spawn(2)
    ds, model = image_task(params, data_rng)
    return cnn_staleness(params, ds, model, run_rng)


_ARMS = ("small_step_c1", "large_step_c10")


def _check_arms(p):
    _check_train(p)
    if p["lr_small"] >= p["lr_large"]:
        raise ValueError(f"lr_small = {p['lr_small']} must be below lr_large = {p['lr_large']}")


_SMOOTH_STEP = {
    **IMAGE_PARAMS,
    **{k: _RUN[k] for k in ("steps", "batch_size", "n", "mode", "period", "mean_delay", "record_every")},
    "lr_small": Param("float", default=0.02, low=0.0, low_open=True, doc="step size of the small-step arm"),
    "lr_large": Param("float", default=0.1, low=0.0, low_open=True, doc="step size of the large-step arm"),
    "smoothing_small": Param("float", default=1.0, low=0.0,
                             doc="smoothing c of the small-step arm, a multiple of the mean initial norm"),
    "smoothing_large": Param("float", default=10.0, low=0.0,
                             doc="smoothing c of the large-step arm, a multiple of the mean initial norm"),
    "score_offset": Param("int", default=0, low=0, keyed_at_default=False,
                          doc="negative control only: the small-step arm's stale scores are stored under example "
                              "ids off by this many (0 = every score for its own example)"),
}


def cnn_smoothing_step(params, ds, model, rng) -> list:
    """Rows of :func:`is_cnn_smoothing_step` for any :class:`~simcomm.models.TorchModel` and data set ``ds``.

    Both arms start from the module's parameters, on streams spawned from ``rng``.
    """
    theta0 = model.params()
    rows = []
    arms = ((_ARMS[0], params["lr_small"], params["smoothing_small"]),
            (_ARMS[1], params["lr_large"], params["smoothing_large"]))
    offsets = (params.get("score_offset", 0), 0)  # the negative control breaks the small-step arm only
    for (arm, lr, c), off, r in zip(arms, offsets, np.random.default_rng(rng).spawn(2)):
        tr = _run({**params, "lr": lr, "smoothing_rel": c, "score_offset": off}, ds, model, "stale", theta0, r)
        later = tr.step >= 1
        ratio = (tr.trace_cov_actual / tr.trace_cov_uniform)[later]
        note = {} if np.all(np.isfinite(tr.train_loss)) else {"note": f"diverged before step {int(tr.step[-1])}"}
        rows += [dict(metric="stale_over_uniform_mean", value=float(np.mean(ratio)), arm=arm, **note),
                 dict(metric="final_train_loss", value=float(tr.train_loss[-1]), arm=arm, **note)]
        rows += [dict(metric="stale_over_uniform", value=float(v), arm=arm, step=int(s))
                 for s, v in zip(tr.step[later], ratio)]
    return rows


@experiment("is_cnn_smoothing_step", columns=("arm",), params=_SMOOTH_STEP, check=_check_arms, cost=_cost,
            requires=REQUIRES)
def is_cnn_smoothing_step(params, rng, backend):
    """A small step with little smoothing against a large step with much, both stale importance sampling.

    Two runs from the same initial network (column ``arm``): ``small_step_c1`` (step ``lr_small``,
    smoothing ``smoothing_small`` mean initial norms) and ``large_step_c10`` (``lr_large``,
    ``smoothing_large``). Per arm: ``stale_over_uniform_mean`` = the mean over the monitored steps >= 1
    of T_stale/T_unif (exact Tr Cov of the proposal the master used and of uniform sampling at the same
    parameters: lower is a larger variance reduction), the same ratio per step (column ``step``), and
    ``final_train_loss``. ``score_offset`` (negative control): the small-step arm samples with its
    scores stored under example ids off by that many.
    """
    data_rng, run_rng = np.random.default_rng(rng).spawn(2)
    ds, model = image_task(params, data_rng)
    return cnn_smoothing_step(params, ds, model, run_rng)


_TRAIN_CNN = {
    **_STALE,
    "reweight": Param("str", default="importance", choices=("importance", "none"), keyed_at_default=False,
                      doc="negative control only: 'none' drops the importance weights 1/(N q_I) of the "
                          "importance-sampled run (a biased gradient)"),
}


def cnn_training(params, ds, model, rng) -> list:
    """Rows of :func:`is_cnn_training` for any :class:`~simcomm.models.TorchModel` and data set ``ds``."""
    theta0 = model.params()
    rows = []
    for method, r in zip(("uniform", "stale"), np.random.default_rng(rng).spawn(2)):
        rows += _training_rows(method, _run(params, ds, model, method, theta0, r))
    return rows


@experiment("is_cnn_training", columns=("method",), params=_TRAIN_CNN, check=_check_train, cost=_cost,
            requires=REQUIRES)
def is_cnn_training(params, rng, backend):
    """Uniform SGD against stale importance-sampled SGD, same network, initial parameters and step size.

    Per method (column ``method``: ``uniform``, ``stale``): ``train_loss``, ``test_accuracy``,
    ``max_weight`` at each monitored step, ``final_train_loss`` and ``final_test_accuracy`` after
    ``steps`` updates, and ``score_bytes``. Equal steps, not equal time: the workers' scoring is not
    charged to the importance-sampled run.
    """
    data_rng, run_rng = np.random.default_rng(rng).spawn(2)
    ds, model = image_task(params, data_rng)
    return cnn_training(params, ds, model, run_rng)
