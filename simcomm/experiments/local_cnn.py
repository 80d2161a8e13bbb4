r"""DiLoCo against data-parallel SGD on a convolutional net and real images (issue 38 on the scale of issue 42).

Every run is the registered ``diloco`` composition (:mod:`simcomm.optim.methods.diloco`) stepped by
:func:`simcomm.optim.run` on a :class:`simcomm.optim.TorchProblem`: each worker's minibatch gradient at
its own model comes from :func:`simcomm.optim.local_gradients`, nothing here is a driver. Data-parallel
momentum SGD is the same composition with ``H = 1`` and an outer SGD step of 1 (the average of the
workers' momentum steps is the step of the averaged momentum: exact, not an approximation).

:func:`diloco_vs_data_parallel` takes any :class:`~simcomm.models.TorchModel` and
:class:`~simcomm.models.Dataset`, so a user's ``nn.Module`` and images run through it from Python; the
registered experiment ``local_cnn`` draws the network and the images from a spec (:mod:`._cnn`).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.experiments._cnn import IMAGE_PARAMS, REQUIRES, image_task
from simcomm.experiments._registry import Param, experiment
from simcomm.models import Dataset, split_workers
from simcomm.optim import EFWatch, TorchProblem, build_method, run

__all__ = ["diloco_vs_data_parallel", "ARMS"]

#: the arms of one replicate: (label, uses DiLoCo, steps as a fraction of the budget's rounds)
ARMS = ("data_parallel", "diloco", "data_parallel_equal_bytes")


def _final(problem, trace, steps) -> dict:
    """Training loss on every training example and test error of the last iterate (``inf`` / NaN if diverged)."""
    if trace.diverged_at[0] >= 0:
        return dict(loss=np.inf, error=np.nan, note=f"diverged at step {int(trace.diverged_at[0])}")
    loss, acc = problem.loss_accuracy(trace.x)
    return dict(loss=float(loss), error=float(1.0 - acc), note="")


def diloco_vs_data_parallel(model, data: Dataset, *, n: int = 8, steps: int = 480, H: int = 8,
                            batch_size: int = 32, lr: float = 0.05, beta: float = 0.9, outer_lr: float = 0.7,
                            outer_momentum: float = 0.9, split: str = "iid", rng=None) -> list[dict]:
    r"""Train ``model`` three ways from the same start, on the same shards and minibatches; the final rows.

    * ``data_parallel``: momentum SGD (heavy ball ``beta``, step ``lr``), every step's gradients averaged
      over the ``n`` workers (one all-reduce per step), ``steps`` steps;
    * ``diloco``: every worker runs ``H`` steps of the same momentum SGD on its own shard, then the server
      takes an outer Nesterov step (``outer_lr``, ``outer_momentum``, ``torch.optim.SGD`` convention) on
      the averaged pseudo-gradient; ``steps`` inner steps, so ``steps / H`` rounds: the same number of
      gradient evaluations as ``data_parallel`` and ``H`` times fewer messages;
    * ``data_parallel_equal_bytes``: ``data_parallel`` stopped after ``steps / H`` steps, the bytes
      ``diloco`` sends (one model-sized message per worker and round either way).

    Parameters
    ----------
    model : simcomm.models.TorchModel
        The network at its initial weights (every arm starts from them).
    data : simcomm.models.Dataset
        Training and test images.
    n, steps, H, batch_size : int
        Workers, inner steps (a multiple of ``H``), inner steps per round, examples per worker and step.
    lr, beta, outer_lr, outer_momentum : float
        Inner step and momentum; DiLoCo's outer Nesterov step and momentum.
    split : {"iid", "label"}
        How the training images are divided among the workers.
    rng : numpy.random.Generator or seed
        Shards and minibatches (one stream shared by the arms: common random numbers).

    Returns
    -------
    list of dict
        Per arm: ``final_train_loss`` (mean cross-entropy over every training image), ``final_test_error``
        and ``bits`` (what one worker sent), with ``method`` the arm.
    """
    if steps % H:
        raise UserError(f"steps = {steps} is not a multiple of H = {H}; DiLoCo's rounds must fill the budget")
    rng = np.random.default_rng(rng)
    shard_rng, batch_seed = rng.spawn(2)
    shards = split_workers(data.y_train, n, split=split, rng=shard_rng)
    seed = int(batch_seed.integers(2**63))
    x0 = model.params()[None]
    arms = {"data_parallel": (dict(H=1, outer="sgd", outer_lr=1.0), steps),
            "diloco": (dict(H=H, outer="nesterov", outer_lr=outer_lr, outer_momentum=outer_momentum), steps),
            "data_parallel_equal_bytes": (dict(H=1, outer="sgd", outer_lr=1.0), steps // H)}
    rows = []
    for name in ARMS:
        settings, budget = arms[name]
        problem = TorchProblem(model, data.X_train, data.y_train, n=n, batch_size=batch_size, shards=shards,
                               X_test=data.X_test, y_test=data.y_test, batch_rng=seed)
        method = build_method("diloco", lr=lr, inner="momentum", inner_beta=beta, **settings)
        trace = run(problem, method, budget, rng=rng, x0=x0, watch=EFWatch(problem, budget, 0, None))
        out = _final(problem, trace, budget)
        extra = {"note": out["note"]} if out["note"] else {}
        rows += [dict(metric="final_train_loss", value=out["loss"], method=name, **extra),
                 dict(metric="final_test_error", value=out["error"], method=name, **extra),
                 dict(metric="bits", value=float(method.bits(budget, problem)) / n, method=name)]
    return rows


def _check(p):
    if p["steps"] % p["H"]:
        raise ValueError(f"steps = {p['steps']} is not a multiple of H = {p['H']}; DiLoCo's rounds must fill it")


def _cost(p):
    # measured here: LeNet-5, 8 workers x 32 images, one inner step ~ 35 ms on one core; three arms
    # (2 + 1/H budgets) and four passes over the data to evaluate (about 4 s for Fashion-MNIST's 70,000)
    scale = p["n"] * p["batch_size"] / 256 * (1.0 if p["model"] == "lenet5" else 4.0)
    return (0.035 * scale * p["steps"] * (2 + 1 / p["H"]) + 12.0, 2e9)


@experiment("local_cnn", columns=("method",), check=_check, cost=_cost, requires=REQUIRES, params={
    **IMAGE_PARAMS,
    "n": Param("int", default=8, low=1, doc="workers"),
    "steps": Param("int", default=480, low=1, doc="inner steps (gradient evaluations per worker)"),
    "H": Param("int", default=8, low=1, doc="DiLoCo's inner steps per round"),
    "batch_size": Param("int", default=32, low=1, doc="images per worker and step"),
    "lr": Param("float", default=0.05, low=0.0, low_open=True, doc="inner step size"),
    "beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="inner heavy-ball momentum"),
    "outer_lr": Param("float", default=0.7, low=0.0, low_open=True, doc="DiLoCo's outer Nesterov step"),
    "outer_momentum": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="outer Nesterov momentum"),
    "split": Param("str", default="iid", choices=("iid", "label"), doc="how the images are divided among workers"),
})
def local_cnn(params, rng, backend):
    """DiLoCo and data-parallel momentum SGD on a network and real images (:func:`diloco_vs_data_parallel`)."""
    task_rng, run_rng = rng.spawn(2)
    data, model = image_task(params, task_rng)
    return diloco_vs_data_parallel(model, data, rng=run_rng, **{k: params[k] for k in (
        "n", "steps", "H", "batch_size", "lr", "beta", "outer_lr", "outer_momentum", "split")})
