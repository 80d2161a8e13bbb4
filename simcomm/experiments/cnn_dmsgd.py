r"""A convolutional net trained by DmSGD over a topology, against parallel SGD (papers/exponential_graph.md).

The exponential-graph paper's training claim: decentralized momentum SGD over the static and the
one-peer exponential graph trains deep networks as well as parallel SGD, where a ring does worse.
Here on real images (LeNet-5 on Fashion-MNIST by default, :mod:`simcomm.experiments._cnn`).

The algorithm is the project's DmSGD (:func:`simcomm.optim._blocks_dsgd.atc_momentum`, the form of
:func:`~simcomm.optim.dsgd_update`): adapt-then-combine with a LOCAL heavy-ball buffer,
:math:`m_i \leftarrow \beta m_i + g_i`, :math:`x_i \leftarrow \sum_j W^{(k)}_{ij}(x_j - \gamma_k m_j)`,
with :math:`g_i` node ``i``'s minibatch gradient at its own :math:`x_i`
(:meth:`simcomm.models.TorchModel.node_gradients`, all nodes in one vmapped call). Parallel SGD is the
same with :math:`W = J` (the exact average): every node holds the average after each step, so it is
heavy-ball SGD on the mean of the ``n`` minibatch gradients, with the same momentum, steps and batches.

Common random numbers: within a replicate every topology starts from the same network, the same shards
(:func:`simcomm.models.split_workers`, ``iid`` or label-sorted) and the same minibatch indices, so a
difference between topologies is the topology's, not the draw's.

Measured on the AVERAGED model :math:`\bar x = \frac1n\sum_i x_i` (what the paper evaluates) at the end
of every epoch and at the end: training loss (on a fixed subsample of the training rows, the same for
every topology), test loss and test accuracy; and the consensus error
:math:`\frac1n\sum_i\|x_i - \bar x\|^2`.

From Python, with any :class:`~simcomm.models.TorchModel` and :class:`~simcomm.models.Dataset`
(a user's own ``nn.Module``)::

    from simcomm.experiments.cnn_dmsgd import compare_topologies
    rows = compare_topologies(TorchModel(my_module), my_dataset, ("parallel", "exponential"), n=16,
                              lr=0.05, beta=0.9, rng=0)

:func:`train_dmsgd` is one run on given minibatch indices (:func:`node_batches`).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.experiments._cnn import IMAGE_PARAMS, REQUIRES, image_task
from simcomm.experiments._registry import Param, experiment
from simcomm.models import split_workers

__all__ = ["TOPOLOGIES", "node_batches", "train_dmsgd", "evaluate_average", "compare_topologies"]

#: what a run may gossip over: ``parallel`` is W = J (the exact average), the others are simcomm.topology names
TOPOLOGIES = ("parallel", "exponential", "one_peer_exponential", "ring", "torus")
#: seconds per training example of a step of LeNet-5 on one thread, measured in training (the quick grid,
#: 8 x 16 images, on a shared 2-core machine): the backward pass of the vmapped network dominates. At
#: initialisation on random inputs a node_gradients call is several times faster (1.8e-4 s per example)
_SEC_PER_EXAMPLE = 1.2e-3
#: seconds per example of a forward pass (evaluation)
_SEC_PER_EVAL = 8e-5


def node_batches(shards, batch_size: int, epochs: int, rng) -> np.ndarray:
    """Minibatch indices of every node at every step, ``(steps, n, batch_size)``: epochs over each node's shard.

    Each epoch every node draws a fresh permutation of its shard (sampling without replacement) and cuts
    it into ``len(smallest shard) // batch_size`` batches (the rest of the epoch is dropped), so all nodes
    take the same number of steps.

    Examples
    --------
    >>> b = node_batches([np.arange(4), np.arange(4, 9)], 2, 3, rng=0)
    >>> b.shape, sorted(b[0, 0].tolist() + b[1, 0].tolist())
    ((6, 2, 2), [0, 1, 2, 3])
    """
    rng = np.random.default_rng(rng)
    per = min(len(s) for s in shards) // int(batch_size)
    if per < 1:
        raise UserError(f"a shard of {min(len(s) for s in shards)} examples holds no batch of {batch_size}; use a "
                        "smaller batch_size, fewer nodes or more training examples")
    out = np.empty((int(epochs) * per, len(shards), int(batch_size)), dtype=np.int64)
    for e in range(int(epochs)):
        for i, s in enumerate(shards):
            out[e * per:(e + 1) * per, i] = rng.permutation(s)[: per * batch_size].reshape(per, batch_size)
    return out


def evaluate_average(model, Theta, data, eval_rows=None) -> dict:
    r"""The averaged model's training loss (on ``eval_rows`` of the training set), test loss and accuracy; consensus.

    Returns ``dict(train_loss, test_loss, test_acc, consensus)``, consensus being
    :math:`\frac1n\sum_i\|x_i - \bar x\|^2` (non-finite models give NaN for every entry).
    """
    Theta = np.asarray(Theta)
    if not np.all(np.isfinite(Theta)):
        return dict(train_loss=np.nan, test_loss=np.nan, test_acc=np.nan, consensus=np.nan)
    bar = Theta.mean(axis=0)
    rows = slice(None) if eval_rows is None else eval_rows
    train_loss = model.loss(bar, data.X_train[rows], data.y_train[rows])
    test_loss, test_acc = model.loss_accuracy(bar, data.X_test, data.y_test)
    consensus = float(np.mean(np.sum((Theta - bar) ** 2, axis=1)))
    return dict(train_loss=train_loss, test_loss=test_loss, test_acc=test_acc, consensus=consensus)


def train_dmsgd(model, X, y, batches, topology, *, lr: float, beta: float = 0.9, schedule: str = "constant",
                theta0=None, on_step=None):
    r"""DmSGD of a :class:`~simcomm.models.TorchModel` over ``topology`` on given minibatch indices.

    Parameters
    ----------
    model : TorchModel
    X, y : arrays
        Training inputs ``(N, ...)`` and labels ``(N,)``.
    batches : numpy.ndarray of int, shape (steps, n, B)
        Node ``i``'s minibatch at step ``k`` is ``X[batches[k, i]]`` (:func:`node_batches`).
    topology : str, Topology or ndarray
        ``"parallel"`` (W = J), a :func:`simcomm.topology.build` name, a Topology or a doubly stochastic
        matrix (``np.eye(n)``: isolated nodes).
    lr : float
        Step size (the schedule's base).
    beta : float
        Heavy-ball momentum of the local buffers, in ``[0, 1)``.
    schedule : {"constant", "inv_sqrt", "cosine"}
        :func:`simcomm.optim.step_size` over the run (``cosine`` decays to 0 at the last step).
    theta0 : numpy.ndarray, shape (D,), optional
        The common start (default: the module's current parameters).
    on_step : callable, optional
        ``on_step(k, Theta)`` after update ``k`` (0-based), with the nodes' models ``(n, D)`` (read them,
        do not keep the array: it is reused).

    Returns
    -------
    numpy.ndarray, shape (n, D)
        The nodes' final models (float64). A step whose models are not finite ends the run early with them.
    """
    from simcomm.optim import Ctx, atc_momentum, check_hyper, dsgd_init

    check_hyper(lr, beta)
    batches = np.asarray(batches)
    if batches.ndim != 3:
        raise UserError(f"batches must have shape (steps, n, B), got {batches.shape}")
    steps, n, _ = batches.shape
    theta0 = model.params() if theta0 is None else theta0
    Theta = dsgd_init(theta0, n).x
    step = atc_momentum(topology, float(lr), float(beta), schedule)
    state = step.init(Theta, Ctx(None, 0, steps, None))
    G = np.empty_like(Theta)
    with np.errstate(all="ignore"):
        for k in range(steps):
            idx = batches[k]
            model.node_gradients(Theta, X[idx], y[idx], out=G)
            Theta, state = step.update(G, state, Theta, Ctx(None, k, steps, None))
            if on_step is not None:
                on_step(k, Theta)
            if not np.isfinite(Theta.sum()):
                break
    return Theta


def _mixing(name: str, n: int, isolated: tuple):
    return np.eye(n) if name in isolated else name


def compare_topologies(model, data, topologies, *, n: int, lr: float, beta: float = 0.9, split: str = "iid",
                       batch_size: int = 16, epochs: int = 2, schedule: str = "cosine", n_eval: int = 2000,
                       isolated=(), rng=None) -> list[dict]:
    r"""Train ``model`` on ``data`` by DmSGD over each of ``topologies``, on common random numbers; rows per run.

    Every topology starts from ``model``'s current parameters and sees the same shards
    (:func:`simcomm.models.split_workers` with ``split``) and the same minibatch indices
    (:func:`node_batches`), all drawn from ``rng``.

    Parameters
    ----------
    model : TorchModel
    data : Dataset
    topologies : sequence of str
        Names from :data:`TOPOLOGIES` (``"parallel"``: W = J, parallel SGD).
    n, lr, beta, split, batch_size, epochs, schedule
        Nodes, step size, momentum, ``"iid"`` or ``"label"`` shards, per-node batch, passes over each
        shard, step-size schedule.
    n_eval : int
        Training rows (drawn once, the same for every topology) on which the training loss is measured
        (0: all).
    isolated : sequence of str
        Topologies run with W = I instead (no communication; negative control).
    rng : numpy.random.Generator or seed

    Returns
    -------
    list of dict
        Per topology: rows ``train_loss``, ``test_loss``, ``test_acc``, ``consensus`` with ``epoch`` at the
        end of every epoch, and the same at the end as ``final_train_loss``, ``final_test_loss``,
        ``final_test_acc``, ``final_consensus`` (no ``epoch``); each with ``topology`` and a ``note``
        when the run diverged.

    Examples
    --------
    >>> import torch
    >>> from simcomm.models import Dataset, TorchModel
    >>> r = np.random.default_rng(0)
    >>> X = r.standard_normal((200, 5)); y = (X[:, 0] > 0).astype(np.int64)
    >>> ds = Dataset(X[:160], y[:160], X[160:], y[160:], 2, "toy")
    >>> torch.manual_seed(0) and None
    >>> m = TorchModel(torch.nn.Linear(5, 2).double())
    >>> rows = compare_topologies(m, ds, ("parallel", "ring"), n=4, lr=0.1, batch_size=8, epochs=3, rng=1)
    >>> acc = {r["topology"]: r["value"] for r in rows if r["metric"] == "final_test_acc"}
    >>> sorted(acc), all(a > 0.8 for a in acc.values())
    (['parallel', 'ring'], True)
    """
    topologies = tuple(topologies)
    bad = [t for t in topologies if t not in TOPOLOGIES]
    if bad or not topologies:
        raise UserError(f"topologies {list(topologies)}: each must be one of {', '.join(TOPOLOGIES)}")
    shard_rng, batch_rng, eval_rng = np.random.default_rng(rng).spawn(3)
    shards = split_workers(data.y_train, n, split=split, rng=shard_rng)
    batches = node_batches(shards, batch_size, epochs, batch_rng)
    per_epoch = batches.shape[0] // int(epochs)
    N = data.y_train.size
    eval_rows = np.sort(eval_rng.choice(N, n_eval, replace=False)) if 0 < n_eval < N else None
    theta0 = model.params()
    rows = []
    for name in topologies:
        checkpoints = []

        def record(k, Theta, checkpoints=checkpoints):
            if (k + 1) % per_epoch == 0:
                checkpoints.append(((k + 1) // per_epoch, evaluate_average(model, Theta, data, eval_rows)))

        Theta = train_dmsgd(model, data.X_train, data.y_train, batches, _mixing(name, n, tuple(isolated)),
                            lr=lr, beta=beta, schedule=schedule, theta0=theta0, on_step=record)
        final = checkpoints[-1][1] if len(checkpoints) == int(epochs) else evaluate_average(model, Theta, data,
                                                                                              eval_rows)
        note = "" if np.all(np.isfinite(Theta)) else "diverged: non-finite models"
        for epoch, vals in checkpoints:
            rows += [dict(metric=m, value=float(v), topology=name, epoch=int(epoch), note=note)
                     for m, v in vals.items()]
        rows += [dict(metric=f"final_{m}", value=float(v), topology=name, note=note) for m, v in final.items()]
    return rows


# --------------------------------------------------------------------------- the registered experiment


def _names(text: str) -> tuple:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _check(params):
    topos = _names(params["topologies"])
    bad = [t for t in topos if t not in TOPOLOGIES]
    if bad or not topos or len(set(topos)) != len(topos):
        raise ValueError(f"topologies must list distinct names from {', '.join(TOPOLOGIES)}, got "
                         f"{params['topologies']!r}")
    iso = _names(params["isolated"])
    if any(t not in topos or t == "parallel" for t in iso):
        raise ValueError(f"isolated must name decentralized topologies of the run ({params['topologies']!r}), got "
                         f"{params['isolated']!r}")


def _cost(p):
    n_train = p["n_train"] or 60000
    n_test = p["n_test"] or 10000
    k = len(_names(p["topologies"]))
    train = k * p["epochs"] * n_train * _SEC_PER_EXAMPLE
    evals = k * p["epochs"] * (min(p["n_eval"] or n_train, n_train) + n_test) * _SEC_PER_EVAL
    return train + evals, 3 * 8 * p["n"] * 62000 + 4 * 784 * (n_train + n_test) * 2


@experiment("cnn_dmsgd", requires=REQUIRES, check=_check, cost=_cost, columns=("topology", "epoch"), params={
    **IMAGE_PARAMS,
    "n": Param("int", default=16, low=2, doc="number of nodes"),
    "split": Param("str", default="iid", choices=("iid", "label"),
                   doc="shards: iid (random) or label (sorted by label: each node sees one or two classes)"),
    "batch_size": Param("int", default=16, low=1, doc="minibatch per node and step"),
    "epochs": Param("int", default=2, low=1, doc="passes over each node's shard"),
    "lr": Param("float", default=0.05, low=0.0, low_open=True, doc="step size (base of the schedule)"),
    "beta": Param("float", default=0.9, low=0.0, high=1.0, high_open=True, doc="heavy-ball momentum (0: DSGD)"),
    "schedule": Param("str", default="cosine", choices=("constant", "inv_sqrt", "cosine"),
                      doc="step-size schedule over the run"),
    "n_eval": Param("int", default=2000, low=0, doc="training rows on which the training loss is measured (0: all)"),
    "topologies": Param("str", default="parallel,exponential,one_peer_exponential,ring",
                        doc="comma-separated topologies trained on the same draws (parallel: W = J)"),
    "isolated": Param("str", default="", keyed_at_default=False,
                      doc="negative control only: comma-separated topologies of the run that train as isolated "
                          "nodes (W = I, no communication); empty changes nothing"),
})
def cnn_dmsgd(params, rng, backend):
    """LeNet-5 (or a ResNet) on real images by DmSGD over several topologies and by parallel SGD (module doc).

    One replicate: a data subsample and a fresh network (:func:`~simcomm.experiments._cnn.image_task`),
    then :func:`compare_topologies` on the replicate's draws. Rows ``final_test_acc``, ``final_train_loss``,
    ``final_test_loss``, ``final_consensus`` per ``topology``, and the same without ``final_`` per ``epoch``.
    """
    task_rng, run_rng = rng.spawn(2)
    data, model = image_task(params, task_rng)
    return compare_topologies(model, data, _names(params["topologies"]), n=params["n"], lr=params["lr"],
                              beta=params["beta"], split=params["split"], batch_size=params["batch_size"],
                              epochs=params["epochs"], schedule=params["schedule"], n_eval=params["n_eval"],
                              isolated=_names(params["isolated"]), rng=run_rng)
