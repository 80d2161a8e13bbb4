r"""Which compressor for my model? Measured error on recorded gradients next to the predicted time per step.

:func:`advise` takes gradients recorded from a user's model (:class:`simcomm.torch.GradientRecorder`, or any
``(T, D)`` array) and a network, and returns one row per compressor x setting x feedback variant:

* the **relative error** measured on those gradients, :math:`\|g_t - u_t\|^2 / \|g_t\|^2` per recorded step
  ``t`` (:func:`compression_errors`), where :math:`u_t` is what the server adds for step ``t``:

  - ``feedback="none"``: :math:`u_t = C(g_t)`;
  - ``feedback="ef"`` (error feedback): the message :math:`C(g_t + e_t)`, whose errors are paid back
    later; its error is that of the running sum,
    :math:`\|\sum_{s \le t} (g_s - u_s)\|^2 / \|\sum_{s \le t} g_s\|^2
    = \|e_{t+1}\|^2 / \|\sum_{s \le t} g_s\|^2`;
  - ``feedback="ef21"``: the server's estimate :math:`h_{t+1} = h_t + C(g_t - h_t)` against :math:`g_t`;

  reported as the mean over the recorded steps and its 95% t-interval (the steps taken as independent
  draws; with feedback they are not, so read the interval as a guide);
* **bits per step** (one node's message, :meth:`~simcomm.compress.Compressor.bits`) and the **predicted
  time per step** of :func:`~simcomm.network.predict_step_times` (ring allreduce for dense summable
  messages, ring allgather otherwise; the alpha-beta model);
* the error the **fitted sparse skewed model** (:func:`simcomm.models.fit_sparse_skewed`) predicts for
  the same compressor, and a flag where it disagrees with the measurement (outside the interval and
  more than 25% off): the model then does not describe these gradients for that compressor.

With ``steps_uncompressed`` (the iterations uncompressed SGD needs to reach the user's target), each row
also gets a **predicted time to the target**: its step time times an iteration count
``steps_uncompressed * factor``, the factor from the error measured on the recorded gradients
(:func:`iteration_factor`; a derived approximation [N], see there for the model and its provenance).

Rows are ranked by Pareto front in (mean error, step time) -- front 1 holds the settings no other setting
beats on both -- then by step time. With rows sampled from a long run (the recorder keeps a uniform
sample once its memory bound is reached), feedback runs over the recorded rows only, a proxy of the
real sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simcomm._errors import UserError

__all__ = ["DEFAULT_CANDIDATES", "FEEDBACK_VARIANTS", "Advice", "compression_errors", "advise", "iteration_factor",
           "parse_candidate"]

#: the error measures :func:`compression_errors` knows (see the module docstring)
FEEDBACK_VARIANTS = ("none", "ef", "ef21")

#: what :func:`advise` compares when no candidates are given: ``label+feedback`` (``X%`` of D for k, r)
DEFAULT_CANDIDATES = (
    "top_k(k=0.1%)+ef", "top_k(k=1%)+ef", "top_k(k=1%)", "top_k(k=1%)+ef21", "rtop_k(k=1%, r=4%)+ef",
    "rand_k(k=1%, scale=false)+ef", "rand_k(k=10%)", "qsgd(s=4)", "qsgd(s=16)", "ternary", "natural",
    "minmax_uint8", "fp16", "scaled_sign+ef",
)


def parse_candidate(text: str) -> tuple[str, str]:
    """``"top_k(k=1%)+ef"`` -> ``("top_k(k=1%)", "ef")``; no ``+`` means no feedback.

    Examples
    --------
    >>> parse_candidate("top_k(k=1%)+ef"), parse_candidate("qsgd(s=4)")
    (('top_k(k=1%)', 'ef'), ('qsgd(s=4)', 'none'))
    """
    label, plus, fb = str(text).strip().rpartition("+")
    if not plus:
        return str(text).strip(), "none"
    fb = fb.strip().lower()
    if fb not in FEEDBACK_VARIANTS:
        from simcomm._errors import closest

        raise UserError(f"candidate '{text}': feedback '{fb}' is unknown{closest(fb, FEEDBACK_VARIANTS)}; "
                        f"write LABEL or LABEL+{'/'.join(FEEDBACK_VARIANTS[1:])}")
    return label.strip(), fb


def _relative(res: np.ndarray, ref: np.ndarray) -> np.ndarray:
    num = np.einsum("ij,ij->i", res, res)
    den = np.einsum("ij,ij->i", ref, ref)
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def compression_errors(G, compressor, *, feedback: str = "none", rng) -> np.ndarray:
    r"""Relative error of ``compressor`` (with a feedback variant) at each row of recorded gradients.

    The public route to measure any compressor on a user's gradients (the module docstring defines the
    three measures); :func:`advise` tabulates it.

    Parameters
    ----------
    G : array_like, shape (T, D)
        Gradients in step order (float32 is kept; the errors are computed in float64).
    compressor : Compressor or str
        A compressor object or a label (``"top_k(k=1%)"``: ``X%`` of D).
    feedback : {"none", "ef", "ef21"}
    rng : numpy.random.Generator or seed

    Returns
    -------
    numpy.ndarray, shape (T,)
        NaN where the reference norm is 0.

    Examples
    --------
    >>> G = np.array([[3.0, 1.0, 0.0], [0.0, 1.0, 3.0]])
    >>> compression_errors(G, "top_k(k=1)", rng=0).round(3).tolist()
    [0.1, 0.1]
    >>> compression_errors(G, "top_k(k=1)", feedback="ef", rng=0).round(3).tolist()   # the running sums' error
    [0.1, 0.182]
    """
    from simcomm.network._predict import resolve_compressor

    rng = np.random.default_rng(rng)
    G = np.atleast_2d(np.asarray(G))
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 1:
        raise UserError(f"compression_errors: gradients of shape {G.shape} are not allowed; pass (steps, D)")
    if not np.all(np.isfinite(G)):
        raise UserError("compression_errors: the gradients contain NaN or inf")
    if feedback not in FEEDBACK_VARIANTS:
        raise UserError(f"feedback '{feedback}' is unknown; use one of {', '.join(FEEDBACK_VARIANTS)}")
    comp = resolve_compressor(compressor, G.shape[1]) if isinstance(compressor, str) else compressor
    G = G.astype(np.float64, copy=False)
    if feedback == "none":
        return _relative(G - np.asarray(comp.apply(G, rng=rng), dtype=np.float64), G)
    out = np.empty(G.shape[0])
    mem = np.zeros(G.shape[1])  # ef: the residual e; ef21: the server's estimate h
    total = np.zeros(G.shape[1])
    for t, g in enumerate(G):
        if feedback == "ef":
            p = g + mem
            mem = p - np.asarray(comp.apply(p[None], rng=rng), dtype=np.float64)[0]
            total += g
            out[t] = _relative(mem[None], total[None])[0]
        else:
            mem = mem + np.asarray(comp.apply((g - mem)[None], rng=rng), dtype=np.float64)[0]
            out[t] = _relative((g - mem)[None], g[None])[0]
    return out


def iteration_factor(error: float, *, unbiased: bool, feedback: str, n: int) -> tuple[float, str]:
    r"""Iterations to a target relative to uncompressed SGD, from the compressor's measured error.

    A **derived approximation** [N], not a bound: it reads the compression term of a convergence rate as
    the whole iteration count, which is the pessimistic end (the leading :math:`\sigma^2/(n\mu\varepsilon)`
    term of SGD does not depend on the compressor, so where gradient noise dominates the true factor
    tends to 1). ``error`` is :math:`\hat e`, the mean of :math:`\|g - C(g)\|^2/\|g\|^2` over the
    recorded gradients, for the compressor alone (no feedback):

    * with error feedback (``"ef"``, ``"ef21"``): the compressor acts as a :math:`\delta`-contraction with
      :math:`\hat\delta = 1 - \hat e` on these gradients, and the iterations scale like
      :math:`1/\hat\delta` (EF-SGD: the compression terms of the rate carry :math:`1/\delta`, Stich &
      Karimireddy 2020, Theorems 13-16; EF21's carry :math:`1/\theta` with
      :math:`\theta = 1 - \sqrt{1-\delta} \in [\delta/2, \delta]`, Richtarik et al. 2021, Theorem 1,
      so the same order); not defined where :math:`\hat e \ge 1` (no contraction on these gradients);
    * without feedback, unbiased: a variance factor :math:`\hat\omega = \hat e` on each of ``n`` workers
      with independent draws adds :math:`\hat\omega/n` to the relative second moment of the averaged
      gradient, so the iterations scale like :math:`1 + \hat\omega/n` (the variance term of compressed
      SGD, e.g. Alistarh et al. 2017, QSGD, Theorem 3.4; Gorbunov et al. 2020);
    * without feedback, biased: no model (a biased compressor without error feedback need not converge
      in distributed SGD, Beznosikov et al. 2020, Example 1).

    Parameters
    ----------
    error : float
        :math:`\hat e`, the compressor's mean relative error on the recorded gradients (no feedback).
    unbiased : bool
        Whether the compressor declares :math:`\mathbb{E}\,C(x) = x`.
    feedback : {"none", "ef", "ef21"}
    n : int
        Workers.

    Returns
    -------
    factor : float
        Iterations over uncompressed SGD's (NaN where the model does not apply).
    note : str
        Why it does not apply ("" where it does).

    Examples
    --------
    >>> iteration_factor(0.75, unbiased=False, feedback="ef", n=8)   # top-k keeping a quarter of the energy
    (4.0, '')
    >>> iteration_factor(3.0, unbiased=True, feedback="none", n=8)[0]
    1.375
    >>> iteration_factor(0.5, unbiased=False, feedback="none", n=8)[1]
    'biased without error feedback: no iteration model'
    """
    if not math.isfinite(error) or error < 0:
        return math.nan, "no measured error"
    if feedback in ("ef", "ef21"):
        if error >= 1.0:
            return math.nan, f"not a contraction on these gradients (error {error:.3g} >= 1)"
        return 1.0 / (1.0 - error), ""
    if unbiased:
        return 1.0 + error / n, ""
    return math.nan, "biased without error feedback: no iteration model"


def _interval(v: np.ndarray) -> tuple[float, float, float]:
    from scipy import stats

    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if v.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half


@dataclass
class Advice:
    """What :func:`advise` returns.

    Attributes
    ----------
    rows : list of dict
        Ranked, best first: ``rank``, ``front`` (Pareto front, 1 = not beaten on both error and time),
        ``compressor`` (registered name), ``setting`` (the settings that differ from the defaults, e.g.
        ``k=24``), ``feedback``,
        ``label`` (``name(settings)[+feedback]``), ``error_mean``, ``error_lo``, ``error_hi`` (95%
        interval), ``model_error`` (the fitted model's mean error, NaN without a fit), ``disagrees``,
        ``bits`` (per node and step), ``bytes`` (encoded message), ``pattern``, ``comm_s``, ``step_s``.
    d, steps, n : int
        Coordinates, recorded steps, nodes.
    alpha, beta : float
        The network (s per message, s per byte).
    model : FittedSkewModel or None
        The sparse skewed model fitted to the gradients (None when it cannot be fitted: ``model_note``).
    disagreements : list of str
        One sentence per row whose measured error the fitted model misses.
    steps_uncompressed : int or None
        Iterations uncompressed SGD needs to reach the target (None: no time to a target). Each row then
        also has ``iteration_factor`` (:func:`iteration_factor`), ``steps_to_target``
        (``steps_uncompressed * iteration_factor``), ``time_to_target_s`` (that times ``step_s``; NaN where
        the model does not apply) and ``target_note`` (why not).
    baseline_step_s : float
        Predicted step time of uncompressed SGD (float32 ring allreduce), NaN without a target.
    """

    rows: list
    d: int
    steps: int
    n: int
    alpha: float
    beta: float
    compute: float
    model: object = None
    model_note: str = ""
    disagreements: list = field(default_factory=list)
    steps_uncompressed: int | None = None
    baseline_step_s: float = math.nan

    def to_dict(self) -> dict:
        """JSON-ready dictionary (NaN as None)."""
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
            return v
        model = None if self.model is None else dict(self.model._asdict())
        return dict(d=self.d, steps=self.steps, n=self.n, alpha=self.alpha, beta=self.beta, compute=self.compute,
                    steps_uncompressed=self.steps_uncompressed, baseline_step_s=clean(self.baseline_step_s),
                    baseline_time_to_target_s=(None if self.steps_uncompressed is None
                                               else clean(self.steps_uncompressed * self.baseline_step_s)),
                    model=model, model_note=self.model_note, disagreements=list(self.disagreements),
                    rows=[{k: clean(v) for k, v in r.items()} for r in self.rows])


def _fronts(err: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Pareto front number of each point (1 = nobody is at least as good on both and better on one)."""
    front = np.zeros(err.size, dtype=int)
    left = set(range(err.size))
    level = 0
    while left:
        level += 1
        now = [i for i in left if not any(err[j] <= err[i] and time[j] <= time[i] and
                                           (err[j] < err[i] or time[j] < time[i]) for j in left)]
        for i in now:
            front[i] = level
        left -= set(now)
    return front


def advise(G, net, n: int, *, candidates=None, compute: float = 0.0, rng=0, fit_model: bool = True,
           steps_uncompressed: int | None = None) -> Advice:
    r"""Rank compressors for a model from its recorded gradients and a network (see the module docstring).

    Parameters
    ----------
    G : array_like, shape (T, D)
        Recorded gradients in step order (:attr:`simcomm.torch.GradientRecorder.gradients`, or
        :func:`simcomm.models.load_gradients`), ``T >= 1``, ``D >= 2``.
    net : Network
        Scalar ``alpha`` and ``beta`` (e.g. ``Network.from_toml`` of a ``simcomm net calibrate`` file).
    n : int
        Workers, ``>= 2``.
    candidates : iterable of str, optional
        ``LABEL`` or ``LABEL+ef`` / ``LABEL+ef21`` (:func:`parse_candidate`; ``X%`` of D in a label).
        Default :data:`DEFAULT_CANDIDATES` (14 settings of 10 compressors).
    compute : float
        Seconds of computation per step, added to each predicted step time.
    rng : numpy.random.Generator or seed
    fit_model : bool
        Also fit the sparse skewed model and compare its errors with the measured ones.
    steps_uncompressed : int, optional
        Iterations uncompressed SGD needs to reach the target accuracy, ``>= 1``: adds each row's
        predicted time to that target (:func:`iteration_factor`, a derived approximation).

    Returns
    -------
    Advice

    Raises
    ------
    UserError
        Bad gradients, candidates or ``steps_uncompressed``, or a ``steps_uncompressed`` for which no
        candidate has an iteration model (every one biased without error feedback).

    Examples
    --------
    >>> from simcomm.network import Network
    >>> G = np.random.default_rng(0).standard_t(2, size=(8, 1000))
    >>> adv = advise(G, Network(5e-6, 8e-10), 8, candidates=["top_k(k=1%)+ef", "qsgd(s=4)", "fp16"], rng=0)
    >>> [(r["label"], r["front"]) for r in adv.rows]
    [('top_k(k=10)+ef', 1), ('fp16', 1), ('qsgd(s=4)', 2)]
    >>> adv = advise(G, Network(5e-6, 8e-10), 8, candidates=["top_k(k=1%)+ef", "qsgd(s=4)"], rng=0,
    ...              steps_uncompressed=1000)
    >>> [(r["label"], r["steps_to_target"] > 1000) for r in adv.rows]
    [('top_k(k=10)+ef', True), ('qsgd(s=4)', True)]
    """
    from simcomm.network._predict import predict_step_times, resolve_compressor

    rng = np.random.default_rng(rng)
    G = np.atleast_2d(np.asarray(G))
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 2:
        raise UserError(f"advise: gradients of shape {G.shape} are not allowed; pass (steps >= 1, D >= 2)")
    if not np.issubdtype(G.dtype, np.floating):
        G = G.astype(np.float64)
    if not np.all(np.isfinite(G)):
        raise UserError("advise: the gradients contain NaN or inf; record a run that did not diverge")
    if steps_uncompressed is not None and (isinstance(steps_uncompressed, bool) or
                                           not isinstance(steps_uncompressed, (int, np.integer)) or
                                           steps_uncompressed < 1):
        raise UserError(f"advise: steps_uncompressed = {steps_uncompressed!r}; give the iterations uncompressed SGD "
                        "needs to reach the target, an integer >= 1")
    T, d = G.shape
    cands = [parse_candidate(c) for c in (DEFAULT_CANDIDATES if candidates is None else candidates)]
    if not cands:
        raise UserError("advise: no candidates to compare; pass at least one LABEL[+ef]")
    comps = [resolve_compressor(label, d) for label, _ in cands]
    times = {r["compressor"]: r for r in predict_step_times(d, n, net, comps, compute=compute)}
    model, note = None, ""
    M = None
    if fit_model:
        from simcomm.models import fit_sparse_skewed

        try:
            model = fit_sparse_skewed(G)
            if not math.isfinite(model.alpha) or model.alpha <= 0:
                model, note = None, f"no model fit: the tail index is {model.alpha}"
            else:
                M = model.sample(T, rng=rng)
        except UserError as exc:
            note = f"no model fit: {exc}"
    rows, seen, alone = [], set(), {}
    # the compressor-alone errors behind the iteration factors draw from a stream of their own, so asking
    # for a time to a target leaves every other number of the table as it is
    alone_rng = rng.spawn(1)[0]
    for (_, fb), comp in zip(cands, comps):
        label = comp.label + ("" if fb == "none" else f"+{fb}")
        if label in seen:
            continue
        seen.add(label)
        err = compression_errors(G, comp, feedback=fb, rng=rng)
        m, lo, hi = _interval(err)
        model_err = math.nan if M is None else float(np.nanmean(compression_errors(M, comp, feedback=fb, rng=rng)))
        t = times[comp.label]
        setting = ", ".join(f"{s.name}={getattr(comp, s.name)}" for s in comp.settings()
                            if s.default is None or getattr(comp, s.name) != s.default)
        rows.append(dict(compressor=comp.name, setting=setting, feedback=fb, label=label,
                         error_mean=m, error_lo=lo, error_hi=hi, model_error=model_err,
                         bits=float(comp.bits(d)), bytes=t["bytes"], pattern=t["pattern"], comm_s=t["comm_s"],
                         step_s=t["step_s"]))
        if steps_uncompressed is not None:
            # the compressor's own error (no feedback) sets the iteration factor, whatever the row's variant
            if comp.label not in alone:
                alone[comp.label] = m if fb == "none" else _interval(compression_errors(G, comp, rng=alone_rng))[0]
            f, why = iteration_factor(alone[comp.label], unbiased=bool(comp.unbiased), feedback=fb, n=int(n))
            rows[-1].update(iteration_factor=f, steps_to_target=steps_uncompressed * f,
                            time_to_target_s=steps_uncompressed * f * t["step_s"], target_note=why)
    baseline = math.nan
    if steps_uncompressed is not None:
        if not any(math.isfinite(r["iteration_factor"]) for r in rows):
            raise UserError("advise: steps_uncompressed does not apply to these candidates: each is biased without "
                            "error feedback (no iteration model); add +ef, or an unbiased compressor")
        baseline = predict_step_times(d, n, net, [resolve_compressor("none", d)], compute=compute)[0]["step_s"]
    err = np.array([r["error_mean"] for r in rows])
    step = np.array([r["step_s"] for r in rows])
    front = _fronts(np.where(np.isfinite(err), err, np.inf), step)
    order = sorted(range(len(rows)), key=lambda i: (front[i], step[i], rows[i]["label"]))
    ranked = []
    disagreements = []
    for rank, i in enumerate(order, 1):
        r = dict(rank=rank, front=int(front[i]), **rows[i])
        me, m, lo, hi = r["model_error"], r["error_mean"], r["error_lo"], r["error_hi"]
        outside = math.isfinite(me) and math.isfinite(m) and not (lo <= me <= hi if math.isfinite(lo) else False)
        r["disagrees"] = bool(outside and abs(me - m) > 0.25 * max(abs(m), 1e-12))
        if r["disagrees"]:
            how = f"{m / me:.2g}x under" if me < m and me > 0 else (f"{me / m:.2g}x over" if m > 0 else "over")
            disagreements.append(f"{r['label']}: the fitted model predicts error {me:.3g}, measured {m:.3g} "
                                 f"[{lo:.3g}, {hi:.3g}] ({'model ' + how})")
        ranked.append(r)
    return Advice(ranked, d, T, int(n), float(net.alpha), float(net.beta), float(compute), model, note,
                  disagreements, steps_uncompressed=None if steps_uncompressed is None else int(steps_uncompressed),
                  baseline_step_s=baseline)
