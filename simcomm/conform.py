r"""Conformance battery for a user's own compressor, error-feedback step, DDP hook or outer step.

``simcomm conform MODULE:callable --kind compressor|feedback|hook|outer`` (and :func:`conform`) runs the
user's code through fixed checks and judges each with :func:`simcomm.claims.judge`, the judge every
claim of the project uses: per-replicate observables, a bound from :mod:`theory.conform` (the constant
the user's code declares), a margin stated before the data are seen, a one-sided test on each side
at the stated confidence, Holm over the check's cells.

What the user's object declares (attributes, or methods of the dimension ``d``; a simcomm
:class:`~simcomm.compress.Compressor` already has them):

===============  ==========================================================================================
``compressor``   callable ``c(x, rng=...)`` or an object with ``c.apply(x, rng=...)``, returning ``C(x)`` of
                 the shape of ``x``; ``unbiased`` (bool), ``beta`` (:math:`\mathbb{E}\|C(x)-x\|^2\le\beta\|x\|^2`,
                 unbiased) or ``delta`` (:math:`\le(1-\delta)\|x\|^2`, biased), optional ``bits`` with
                 ``encode(x, rng=...) -> bytes`` (and ``decode(payload) -> C(x)``), optional
                 ``array = "torch"`` to be fed torch tensors. A simcomm
                 :class:`~simcomm.compress.Compressor` (a shipped one or a user's subclass) is read in its own
                 terms: ``error_factor(d)`` is :math:`1-\delta` (``None``: no worst case stated, the check is
                 skipped), and its wire form ``to_message`` encoded by :func:`simcomm.network.encode`
                 (header excluded) is the payload. A class is built with its defaults where it has them.
                 A Compressor compresses each row of its input on its own, so the Monte Carlo checks draw
                 50 at a call (one replicate a call); another object is called once per draw.
``feedback``     ``init(g) -> state`` and ``apply(g, state, rng=...) -> (message, state)``, the state's
                 residual readable as ``state.residual`` (or the state is the residual array).
``hook``         a zero-argument factory returning ``(state, hook)`` for ``DistributedDataParallel
                 .register_comm_hook`` (e.g. ``lambda: simcomm.torch.comm_hook(TopK(4), feedback=True)``);
                 run on ``workers`` Gloo processes on loopback.
``outer``        ``pseudo_gradient(theta, theta_local) -> Delta``, applied as ``theta - lr * Delta``; or an
                 outer-step factory ``make(params, *, workers, rng)`` (e.g. :class:`simcomm.torch.OuterStep`)
                 returning an object with ``step(local)`` (``local``: ``workers`` lists of tensors shaped like
                 ``params``; it updates ``params`` in place) that declares ``lr``, ``momentum``, ``nesterov``,
                 ``compressor`` (a :class:`~simcomm.compress.Compressor`, a label or ``None``) and ``feedback``
                 (``"none"``, ``"ef"``, ``"ef21"``, ...), optionally ``state_dict()``/``load_state_dict()``.
===============  ==========================================================================================

Checks (each skipped where the object declares nothing it needs, an error where it declares half):

* ``determinism``: two runs under the same seeds agree bit for bit (randomness only from ``rng``), and every
  output is finite;
* ``rng_use``: ``deterministic = True`` (declared) means ``C(x)`` does not change with the seed, a declared
  ``False`` that it does (a :class:`~simcomm.compress.Compressor` relying on the base class's ``False`` is
  only told when it never changes);
* ``unbiased``: :math:`\mathbb{E}\,C(x)_j = x_j` for every coordinate, within ``tolerance`` times the
  declared noise level :math:`\sqrt{\beta}` (test vectors have :math:`\|x\|^2 = d`; where ``beta`` is infinite,
  the root mean square per coordinate of the declared closed form ``variance(x)``);
* ``variance`` / ``contraction``: :math:`\mathbb{E}\|C(x)-x\|^2` below the declared bound (to ``tolerance``);
* ``variance_formula``: :math:`\mathbb{E}\|C(x)-x\|^2` equals the declared closed form ``variance(x)``, within
  ``tolerance`` of it;
* ``payload``: ``8 * len(encode(x))`` equals the declared bits (up to the last byte's padding); ``roundtrip``:
  ``decode(encode(x)) == C(x)`` on the same seed (a Compressor's message under every coding of its kind,
  each of which must return the message exactly);
* ``ef_invariant``: :math:`e_{t+1} = e_t + g_t - m_t` at every step (to 4 ulps);
* ``checkpoint``: a run whose state is pickled and restored half-way equals the uninterrupted run;
* ``rebuild``: a run whose buffers are replaced half-way (DDP rebuilding its buckets) equals the run without;
* ``fp16_overflow`` (hooks): gradients of 3/4 of the float16 maximum on every worker give the same
  update as the same gradients scaled by :math:`2^{-12}`, times :math:`2^{12}` (exact in floating point
  unless a value overflows: a float16 sum before the division by the world size does);
* ``rank_consistency`` (hooks): every worker receives the same update;
* ``outer_sign``: the pseudo-gradient of descending local steps has a positive cosine with the gradient;
* ``simulator`` (outer-step factories): DiLoCo with the user's outer step (4 workers, ``H = 4`` inner SGD
  steps made here, 8 rounds on float64 quadratics, two parameter tensors) gives the global model of
  ``simcomm.optim``'s ``diloco`` with the declared settings, the same seed and data after every round, to
  rounding; ``determinism`` and ``checkpoint`` (the factory rebuilds the step half-way and loads the
  pickled ``state_dict()``) as for the other kinds.

A callable that raises, returns the wrong shape or dtype, is not deterministic under a fixed seed, or
declares no constant a check needs is bad input: one line naming the callable and the check, and
the rest of the battery still runs (:attr:`ConformReport.errors`, exit code 2 on the command line).
"""

from __future__ import annotations

import copy
import math
import pickle
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simcomm._errors import UserError
from simcomm.backends import from_framework, is_framework_array
from simcomm.claims import judge
from simcomm.spec import ClaimSpec, resolve

__all__ = ["KINDS", "CheckResult", "ConformReport", "conform", "conform_all"]

#: what ``--kind`` accepts
KINDS = ("compressor", "feedback", "hook", "outer")

_BOUNDS = "theory.conform"
#: draws averaged into one replicate of a Monte Carlo check: the judge's t-test sees batch means, which are
#: i.i.d. with the same mean as single draws (and nearly normal), so the test is unchanged and the table small
_BATCH = 50


class _Bad(Exception):
    """The user's object misbehaved (raised, wrong shape/dtype, nondeterministic, missing a constant)."""


@dataclass(frozen=True)
class CheckResult:
    r"""One check's outcome.

    Attributes
    ----------
    check : str
        Its name (``unbiased``, ``variance``, ...).
    verdict : str
        ``holds``, ``violated``, ``inconclusive``, ``ill-posed`` (the judge's), ``skipped`` (nothing
        declared for it) or ``error`` (bad input; ``reason`` says what).
    statement : str
        What was tested, with its margin.
    reason : str
    draws : int
        Calls of the user's code the verdict rests on.
    ratio : float
        The judge's tightest ratio (empirical/bound; NaN where undefined).
    confidence : float
        Family-wise confidence over the check's cells (Holm; Bonferroni over adaptive looks).
    measured, declared : float
        The measured quantity and what the object declares for it, on one scale (NaN where the check
        has none): the error factor :math:`\mathbb{E}\|C(x)-x\|^2/\|x\|^2` (largest over the test
        vectors) against ``beta`` or :math:`1-\delta`; the largest bias over the noise level
        :math:`\sqrt\beta` against ``tolerance``; the mean payload bits against ``bits(d)``; the
        largest relative defect against 0.
    """

    check: str
    verdict: str
    statement: str
    reason: str = ""
    draws: int = 0
    ratio: float = math.nan
    confidence: float = 0.99
    measured: float = math.nan
    declared: float = math.nan


@dataclass(frozen=True)
class ConformReport:
    """The battery's results for one object (see :func:`conform`)."""

    target: str
    kind: str
    results: tuple = ()
    settings: dict = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        """One line per bad-input check: ``conform TARGET: check 'NAME': what is wrong``."""
        return [f"conform {self.target}: check '{r.check}': {r.reason}" for r in self.results if r.verdict == "error"]

    @property
    def exit_code(self) -> int:
        """2 if a check met bad input, else 1 if one is violated, else 0."""
        if self.errors:
            return 2
        return 1 if any(r.verdict == "violated" for r in self.results) else 0

    def verdicts(self) -> dict:
        """``{check: verdict}``."""
        return {r.check: r.verdict for r in self.results}

    def text(self) -> str:
        """The table the command prints."""
        s = self.settings
        where = (f"{s.get('workers')} Gloo workers, 2 buckets" if self.kind == "hook" else f"d = {s.get('d')}")
        head = (f"conform {self.target} (--kind {self.kind}): {where}, seed {s.get('seed')}, "
                f"confidence {s.get('confidence')} per check (Holm over its cells), tolerance {s.get('tolerance')}")
        w = max([len(r.check) for r in self.results] + [5])
        lines = [head, f"{'check':<{w}}  {'verdict':<12}  {'draws':>6}  {'measured':>9}  {'declared':>9}  "
                       "statement -- reason"]
        for r in self.results:
            why = f" -- {r.reason}" if r.reason else ""
            lines.append(f"{r.check:<{w}}  {r.verdict:<12}  {r.draws:>6}  {_num(r.measured):>9}  "
                         f"{_num(r.declared):>9}  {r.statement}{why}")
        return "\n".join(lines)

    def summary(self) -> dict:
        """The ``--json`` object."""
        return {"target": self.target, "kind": self.kind, "settings": self.settings, "exit_code": self.exit_code,
                "errors": self.errors,
                "checks": [{"check": r.check, "verdict": r.verdict, "statement": r.statement, "reason": r.reason,
                            "draws": r.draws, "confidence": r.confidence,
                            "ratio": None if not math.isfinite(r.ratio) else r.ratio,
                            "measured": None if not math.isfinite(r.measured) else r.measured,
                            "declared": None if not math.isfinite(r.declared) else r.declared}
                           for r in self.results]}


def _num(v: float) -> str:
    """A table cell: ``-`` for NaN, else 4 significant digits."""
    return "-" if not math.isfinite(v) else f"{v:.4g}"


# ------------------------------------------------------------------------------------------------------------
# calling the user's code


def _as_numpy(y, what: str) -> np.ndarray:
    if is_framework_array(y):
        y, _ = from_framework(y)
    try:
        return np.asarray(y)
    except Exception as exc:  # noqa: BLE001 - any failure is the user's object's
        raise _Bad(f"{what} returned {type(y).__name__}, not an array ({exc})") from None


def _to_kind(x: np.ndarray, array: str):
    if array == "torch":
        import torch

        return torch.from_numpy(x.copy())
    return x.copy()  # a fresh array per call: an object that writes into its input cannot corrupt the test


def _call(fn, what: str, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except _Bad:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's code may raise anything: that is the finding
        raise _Bad(f"{what} raised {type(exc).__name__}: {exc}") from None


def _declared(obj, name: str, d: int):
    """The declared constant ``name`` at dimension ``d`` (a number or a function of ``d``), or None."""
    v = getattr(obj, name, None)
    if callable(v):
        v = _call(v, f"{name}(d)", d)
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        raise _Bad(f"declares {name} = {v!r}, not a number") from None


class _Compressor:
    """The user's compressor behind one call signature, with its output checked."""

    def __init__(self, obj):
        self.obj = obj
        self.fn = obj.apply if hasattr(obj, "apply") and callable(obj.apply) else obj
        if not callable(self.fn):
            raise _Bad(f"is a {type(obj).__name__}, neither callable nor with an apply(x, rng=...) method")
        self.array = getattr(obj, "array", "numpy")

    def __call__(self, x: np.ndarray, rng) -> np.ndarray:
        y = _as_numpy(_call(self.fn, "C(x, rng=...)", _to_kind(x, self.array), rng=rng), "C(x, rng=...)")
        if y.shape != x.shape:
            raise _Bad(f"C(x) returned shape {y.shape} for an input of shape {x.shape}; return C(x) shaped like x")
        if not np.issubdtype(y.dtype, np.floating):
            raise _Bad(f"C(x) returned dtype {y.dtype} for a {x.dtype} input; return floating values (decode "
                       "integer codes before returning)")
        if not np.all(np.isfinite(y)):
            raise _Bad(f"C(x) returned {int(np.sum(~np.isfinite(y)))} non-finite values for a finite input")
        return y

    def rows(self, x: np.ndarray, n: int, rng) -> np.ndarray:
        """``n`` draws of ``C(x)`` as rows, float64: one call on ``n`` stacked copies where rows are supported.

        A simcomm :class:`~simcomm.compress.Compressor` compresses each row of its input independently
        (its protocol), so one call gives ``n`` draws; another object is called once per draw.
        """
        if not self.batched:
            raise AssertionError("rows() needs a row-wise compressor")
        y = self(np.repeat(x[None], n, axis=0), rng)
        return y.astype(np.float64)

    @property
    def batched(self) -> bool:
        from simcomm.compress import Compressor

        return isinstance(self.obj, Compressor)


def _rng(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


def _vectors(d: int, seed: int) -> dict:
    """Test vectors with ||x||^2 = d (rms coordinate 1), float32: a Gaussian one, equal magnitudes, a spike."""
    g = _rng(seed, 999)
    gauss = g.standard_normal(d)
    equal = np.where(g.random(d) < 0.5, -1.0, 1.0)
    spike = 0.1 * g.standard_normal(d)
    spike[d // 3] = 3.0
    out = {}
    for name, v in (("gaussian", gauss), ("equal", equal), ("spike", spike)):
        out[name] = (v * math.sqrt(d) / np.linalg.norm(v)).astype(np.float32)
    return out


# ------------------------------------------------------------------------------------------------------------
# judging


def _claim(check: str, kind: str, observable: str, bound: str, confidence: float, **kw) -> ClaimSpec:
    return ClaimSpec(id=f"conform.{check}", paper="conform", statement="", kind=kind, observable=observable,
                     bound=f"{_BOUNDS}:{bound}", confidence=confidence, provenance="N", claim_class="check", **kw)


def _verdict(check: str, claim: ClaimSpec, table: pd.DataFrame, design, statement: str, draws: int,
             looks: int = 1, measured: float = math.nan, declared: float = math.nan) -> tuple[CheckResult, bool]:
    """Judge ``table``; return the result and whether every cell is decided (no inconclusive one)."""
    j = judge(claim, table, cell_params=design, looks=looks)
    undecided = bool((j.cells["verdict"] == "inconclusive").any()) if len(j.cells) else True
    reason = j.reason
    if claim.bound.endswith(":zero_defect") and j.verdict.value == "violated" and len(j.cells):
        reason += f" (largest relative defect {float(j.cells['mean'].max()):.3g})"
    if j.verdict.value == "holds":
        reason = f"{len(j.cells)} of {len(j.cells)} cells hold" + (f"; {reason}" if reason else "")
    res = CheckResult(check, j.verdict.value, statement, reason, draws, j.ratio, claim.confidence, measured, declared)
    return res, not undecided


def _adaptive(sample, judge_at, start: int, most: int):
    """Double the draws from ``start`` to ``most`` until every cell is decided, each look at alpha / looks.

    ``sample(n0, n1)`` adds draws ``n0..n1-1``; ``judge_at(n, looks)`` returns ``(CheckResult, decided)``.
    The looks are planned here (one per doubling) before any data are seen, so stopping early when the
    verdict is decided cannot inflate the family-wise error (Bonferroni over the planned looks).
    """
    looks = 1 + max(0, math.ceil(math.log2(most / start)))
    n, done = 0, start
    while True:
        sample(n, done)
        n = done
        res, decided = judge_at(n, looks)
        if decided or n >= most:
            return res
        done = min(2 * n, most)


def _error(check: str, statement: str, bad: Exception, draws: int = 0) -> CheckResult:
    return CheckResult(check, "error", statement, str(bad), draws)


# ------------------------------------------------------------------------------------------------------------
# compressor


def _compressor_checks(obj, *, d, seed, confidence, tolerance, max_draws) -> list[CheckResult]:
    out = []
    try:
        comp = _Compressor(obj)
    except _Bad as bad:
        return [_error("call", "C(x, rng=...) can be called", bad)]
    xs = _vectors(d, seed)
    names = list(xs)

    # determinism: the same seeds give the same output, bit for bit
    st = "two runs with the same seeds return the same C(x), bit for bit"
    try:
        rows = []
        for i, name in enumerate(names):
            for r in range(5):
                a = comp(xs[name], _rng(seed, i, r))
                b = comp(xs[name], _rng(seed, i, r))
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
                gap = float(np.nanmax(diff)) if not np.array_equal(a, b, equal_nan=True) else 0.0
                rows.append(dict(vector=name, replicate=r, metric="defect", value=gap if math.isfinite(gap) else 1.0))
        claim = _claim("determinism", "upper", "defect", "zero_defect", confidence, atol=1e-300)
        res, _ = _verdict("determinism", claim, pd.DataFrame(rows), {"vector"}, st, 2 * len(rows),
                          measured=max(r["value"] for r in rows), declared=0.0)
        if res.verdict != "holds":
            res = CheckResult("determinism", "error", st, "not deterministic under a fixed seed: two calls with "
                              "rng=default_rng(SeedSequence(seed, ...)) differ; draw every random number from the rng "
                              "argument (a torch compressor: torch.Generator().manual_seed(int(rng.integers(2**63))))",
                              res.draws)
        out.append(res)
    except _Bad as bad:
        out.append(_error("determinism", st, bad))

    out.append(_rng_use_check(obj, comp, xs, names, seed=seed))

    from simcomm.compress import Compressor

    library = isinstance(obj, Compressor)
    unbiased = getattr(obj, "unbiased", None)
    try:
        beta = _declared(obj, "beta", d)
        # a Compressor states its worst case as error_factor(d); an attribute 'delta' there is a setting
        # (stochastic_round's grid step), not a contraction
        delta = None if library else _declared(obj, "delta", d)
        stated = True  # whether the object states a worst case at all (a Compressor may say None: not stated)
        if delta is None and not unbiased and callable(getattr(obj, "error_factor", None)):
            # the library's protocol: error_factor(d) = E||C(x)-x||^2/||x||^2 at worst = 1 - delta
            factor = _declared(obj, "error_factor", d)
            stated = factor is not None
            delta = None if factor is None else 1.0 - factor
    except _Bad as bad:
        return out + [_error("variance", "declared constants", bad)]

    # Monte Carlo draws of every test vector, shared by the unbiasedness and variance/contraction checks
    draws = {name: [] for name in names}
    have = [0]

    def sample(n0, n1):  # draws up to n1 (the checks share them: draw r is always the same call)
        if n1 <= have[0]:
            return
        for i, name in enumerate(names):
            if comp.batched:  # batch b: one call on _BATCH rows, its own stream (i, b, _BATCH)
                b0, b1 = have[0] // _BATCH, -(-n1 // _BATCH)
                ys = [comp.rows(xs[name], _BATCH, _rng(seed, i, b, _BATCH)) for b in range(b0, b1)]
                draws[name].append(np.concatenate(ys))
            else:
                ys = [comp(xs[name], _rng(seed, i, r)).astype(np.float64) for r in range(have[0], n1)]
                draws[name].append(np.stack(ys))
        have[0] = -(-n1 // _BATCH) * _BATCH if comp.batched else n1

    def batches(name, n):
        m = n // _BATCH  # replicates: batch means of _BATCH draws
        return np.concatenate(draws[name])[:m * _BATCH].reshape(m, _BATCH, d)

    mc_error = None
    # unbiasedness on the Gaussian and equal-magnitude vectors: a spike coordinate's variance (x_s^2 beta) would
    # need (x_s^2 / 1) times more draws for the same margin, and the variance check sees the spike anyway
    flat = names[:2]
    if unbiased is True:
        # the margin is a fraction of the noise level per coordinate: sqrt(beta) (||x||^2 = d), or, where no
        # relative bound exists (beta = inf: stochastic rounding), the root mean square of the declared closed
        # form variance(x) per coordinate on the quietest test vector
        noise, what = None, "sqrt(beta)"
        if beta is not None and math.isfinite(beta):
            noise = math.sqrt(beta)
        elif beta == math.inf:
            try:
                noise, what = _closed_form_noise(obj, xs, flat, d), "the rms of variance(x)/d"
            except _Bad as bad:
                mc_error = bad
        st = (f"E C(x)_j = x_j for every coordinate of {len(flat)} test vectors (||x||^2 = d), within "
              f"{tolerance:g} {what} = the declared noise level times {tolerance:g}")
        if mc_error is not None:
            out.append(_error("unbiased", st, mc_error))
        elif beta == math.inf and noise is None:
            out.append(CheckResult("unbiased", "skipped", st, "beta(d) = inf and no variance(x): no noise level to "
                                   "state the margin in"))
        elif noise is None:
            out.append(_error("unbiased", st, _Bad(f"declares unbiased but beta = {beta}: the margin is a fraction of "
                                                   "the declared noise sqrt(beta); declare a finite beta")))
        else:
            margin = tolerance * noise

            def judge_unbiased(n, looks):
                rows, bias = [], 0.0
                for name in flat:
                    b = batches(name, n).mean(axis=1)  # (replicates, d) batch means
                    x = xs[name].astype(np.float64)
                    bias = max(bias, float(np.max(np.abs(b.mean(axis=0) - x))))
                    for j in range(d):
                        rows.append(pd.DataFrame(dict(vector=name, j=j, x=x[j], replicate=np.arange(len(b)),
                                                      metric="coordinate", value=b[:, j])))
                claim = _claim("unbiased", "equal", "coordinate", "unbiased_coordinate", confidence,
                               margin_abs=margin if margin > 0 else 1e-12)
                return _verdict("unbiased", claim, pd.concat(rows), {"vector", "j"}, st, n * len(flat), looks,
                                measured=bias / noise if noise > 0 else bias, declared=tolerance)

            try:
                out.append(_adaptive(sample, judge_unbiased, 20 * _BATCH, max_draws))
            except _Bad as bad:
                mc_error = bad
                out.append(_error("unbiased", st, bad))
    elif unbiased is None:
        out.append(CheckResult("unbiased", "skipped", "E C(x) = x", "declares no 'unbiased'"))
    else:
        out.append(CheckResult("unbiased", "skipped", "E C(x) = x", "declared biased (unbiased = False)"))

    # variance (unbiased, beta) or contraction (biased, delta)
    if unbiased is True:
        check, const, bound, arg = "variance", beta, "declared_variance", "beta"
        st = f"E||C(x) - x||^2 <= beta ||x||^2 (to {tolerance:g}) on {len(names)} test vectors"
    else:
        check, const, bound, arg = "contraction", delta, "declared_contraction", "delta"
        st = f"E||C(x) - x||^2 <= (1 - delta) ||x||^2 (to {tolerance:g}) on {len(names)} test vectors"
    if mc_error is not None:
        out.append(_error(check, st, mc_error))
    elif not unbiased and not stated:
        out.append(CheckResult(check, "skipped", st, "states no worst case (error_factor(d) is None)"))
    elif unbiased and const == math.inf:
        out.append(CheckResult(check, "skipped", st, "beta(d) = inf: states no relative variance bound"))
    elif const is None or not math.isfinite(const):
        need = "beta (E||C(x)-x||^2 <= beta ||x||^2)" if unbiased else "delta (E||C(x)-x||^2 <= (1-delta)||x||^2)"
        out.append(_error(check, st, _Bad(f"declares no finite {need}; declare it as an attribute or a function "
                                          "of d")))
    else:
        bound_value = (const if unbiased else 1.0 - const) * d

        def judge_var(n, looks):
            rows, factor = [], 0.0
            for name in names:
                e = ((batches(name, n) - xs[name].astype(np.float64)) ** 2).sum(axis=2).mean(axis=1)
                factor = max(factor, float(e.mean()) / d)  # ||x||^2 = d
                rows.append(pd.DataFrame(dict(vector=name, norm2=float(d), replicate=np.arange(len(e)),
                                              metric="sq_error", value=e)))
            # the stated slack: the declared constant is taken to `tolerance` (a tight bound, e.g. scaled rand-k's
            # (d/k - 1), holds once its CI is narrower than that, instead of straddling the line forever)
            claim = _claim(check, "upper", "sq_error", bound, confidence, bound_args={arg: const},
                           atol=max(tolerance * bound_value, 1e-12))
            return _verdict(check, claim, pd.concat(rows), {"vector"}, st, n * len(names), looks,
                            measured=factor, declared=bound_value / d)

        try:
            out.append(_adaptive(sample, judge_var, 20 * _BATCH, max_draws))
        except _Bad as bad:
            out.append(_error(check, st, bad))

    if mc_error is None:
        out.append(_variance_formula_check(obj, sample, batches, xs, names, d=d, confidence=confidence,
                                           tolerance=tolerance, max_draws=max_draws))
    out += _payload_checks(obj, comp, xs, names, d=d, seed=seed, confidence=confidence, tolerance=tolerance)
    return out


def _closed_form_noise(obj, xs, names, d) -> float | None:
    """sqrt(min over ``names`` of variance(x) / d): the declared noise per coordinate, or None if not declared."""
    fn = getattr(obj, "variance", None)
    if not callable(fn):
        return None
    vs = []
    for name in names:
        v = _call(fn, "variance(x)", xs[name].astype(np.float64))
        if v is None:
            return None
        vs.append(float(np.asarray(v, dtype=np.float64).reshape(-1)[0]))
    if not all(math.isfinite(v) and v > 0 for v in vs):
        return None
    return math.sqrt(min(vs) / d)


def _rng_use_check(obj, comp, xs, names, *, seed) -> CheckResult:
    """``rng_use``: the declared ``deterministic`` matches whether ``C(x)`` depends on ``rng`` (an exact check).

    ``deterministic = True`` promises that the output is a function of ``x`` alone; ``False`` (declared
    by the object's own class, or as an attribute) that it draws from ``rng``. The base class's default
    ``False`` is no declaration: a compressor relying on it is only told when it is in fact deterministic.
    """
    from simcomm.compress import Compressor

    declared = getattr(obj, "deterministic", None)
    st = {True: "C(x) does not depend on rng (deterministic = True)",
          False: "C(x) depends on rng (deterministic = False)"}.get(declared, "C(x) depends on rng as "
                                                                        "'deterministic' declares")
    if not isinstance(declared, bool):
        return CheckResult("rng_use", "skipped", st, "declares no 'deterministic'")
    by_default = (isinstance(obj, Compressor) and not declared
                  and all("deterministic" not in vars(k) for k in type(obj).__mro__ if k is not Compressor))
    pairs = 5
    try:
        differ = 0
        for i, name in enumerate(names):
            for r in range(pairs):  # seeds (i, r, 1) and (i, r, 2): a random compressor moves on a non-fixed point
                a = comp(xs[name], _rng(seed, i, r, 1))
                b = comp(xs[name], _rng(seed, i, r, 2))
                differ += not np.array_equal(a, b)
    except _Bad as bad:
        return _error("rng_use", st, bad)
    total = pairs * len(names)
    frac = differ / total
    if declared:
        if differ:
            return CheckResult("rng_use", "violated", st, f"declares deterministic = True but C(x) changed with the "
                               f"seed in {differ} of {total} pairs of calls", 2 * total, measured=frac, declared=0.0)
        return CheckResult("rng_use", "holds", st, f"0 of {total} pairs of seeds changed C(x)", 2 * total,
                           measured=0.0, declared=0.0)
    if differ:
        return CheckResult("rng_use", "holds", st, f"{differ} of {total} pairs of seeds changed C(x)", 2 * total,
                           measured=frac, declared=1.0)
    why = (f"C(x) did not change with the seed in any of {total} pairs of calls: declare deterministic = True")
    if by_default:
        return CheckResult("rng_use", "skipped", st, why + " (the base class's False is not a declaration)",
                           2 * total, measured=0.0)
    return CheckResult("rng_use", "violated", st, "declares deterministic = False but " + why, 2 * total,
                       measured=0.0, declared=1.0)


def _variance_formula_check(obj, sample, batches, xs, names, *, d, confidence, tolerance,
                            max_draws) -> CheckResult:
    r"""``variance_formula``: :math:`\mathbb{E}\|C(x)-x\|^2` equals the declared closed form ``variance(x)``."""
    st = f"E||C(x) - x||^2 equals the declared closed form variance(x), within {tolerance:g} of it, on each test vector"
    fn = getattr(obj, "variance", None)
    if not callable(fn):
        return CheckResult("variance_formula", "skipped", st, "declares no variance(x)")
    try:
        exact = {}
        for name in names:
            v = _call(fn, "variance(x)", xs[name].astype(np.float64))
            if v is None:
                return CheckResult("variance_formula", "skipped", st, "variance(x) is None: no closed form stated")
            v = float(np.asarray(v, dtype=np.float64).reshape(-1)[0])
            if not (math.isfinite(v) and v >= 0):
                raise _Bad(f"variance(x) = {v} on the {name} test vector; return E||C(x) - x||^2 >= 0")
            exact[name] = v
    except _Bad as bad:
        return _error("variance_formula", st, bad)

    def judge_at(n, looks):
        rows, worst = [], 0.0
        for name in names:
            e = ((batches(name, n) - xs[name].astype(np.float64)) ** 2).sum(axis=2).mean(axis=1)
            worst = max(worst, abs(float(e.mean()) - exact[name]) / max(exact[name], 1e-300))
            rows.append(pd.DataFrame(dict(vector=name, variance=exact[name], replicate=np.arange(len(e)),
                                          metric="sq_error", value=e)))
        # the stated margin is relative (tolerance of the closed form); a vector the compressor leaves exact
        # (variance 0, every draw 0) holds at any margin, so the absolute floor only keeps the test defined
        claim = _claim("variance_formula", "equal", "sq_error", "closed_form_variance", confidence,
                       margin_rel=tolerance, margin_abs=1e-9 * d)
        return _verdict("variance_formula", claim, pd.concat(rows), {"vector"}, st, n * len(names), looks,
                        measured=worst, declared=tolerance)

    try:
        return _adaptive(sample, judge_at, 20 * _BATCH, max_draws)
    except _Bad as bad:
        return _error("variance_formula", st, bad)


def _wire(obj):
    """``(encode, decode, header_bits, exact, why_skipped)`` of the object's wire form, or ``None`` if it has none.

    A simcomm :class:`~simcomm.compress.Compressor` is encoded through its own message
    (``to_message`` then :func:`simcomm.network.encode`, whose fixed header is not counted); another
    object through its ``encode``/``decode``.
    """
    from simcomm.compress import Compressor

    if isinstance(obj, Compressor):
        from simcomm import network

        def enc(x, rng):
            return network.encode(obj.to_message(x, rng=rng))

        def dec(blob):
            return obj.decode(network.decode(blob))

        cls = type(obj)
        skip = None
        if cls._message is Compressor._message and cls.bits is not Compressor.bits:
            skip = (f"{obj.label} declares bits(d) = {obj.bits(16)} at d = 16 but sends the default dense wire form "
                    "(32 bits a value): its bits are what it reports, not what it sends; define _message for a real "
                    "wire form")
        return enc, dec, 8 * network.HEADER_BYTES, bool(obj.bits_exact), skip
    enc = getattr(obj, "encode", None)
    if enc is None:
        return None
    return enc, getattr(obj, "decode", None), 0, True, None


def _codings(obj, x, rng) -> list:
    """The payloads of ``obj.to_message(x)`` under every coding of its kind (None where one does not decode to it)."""
    from simcomm import network

    m = _call(obj.to_message, "to_message(x, rng=...)", x, rng=rng)
    blobs = []
    for coding in network.CODINGS[m.kind]:
        blob = _call(network.encode, f"encode(to_message(x), {coding!r})", m, coding)
        back = _call(network.decode, f"decode(encode(to_message(x), {coding!r}))", blob)
        blobs.append(blob if back == m else None)  # None: the coding does not return the message
    return blobs


def _payload_checks(obj, comp, xs, names, *, d, seed, confidence, tolerance=0.1) -> list[CheckResult]:
    from simcomm.compress import Compressor

    wire = _wire(obj)
    st = "8 * len(encode(x)) equals the declared bits(d), up to the last byte's 7 padding bits"
    if wire is None:
        return [CheckResult("payload", "skipped", st, "declares no encode(x, rng=...)")]
    enc, dec, header, exact, skip = wire
    library = isinstance(obj, Compressor)
    if library:
        st = "8 * len(encode(to_message(x))) without the header equals bits(d), up to the last byte's 7 padding bits"
        if not exact:
            st = (f"mean 8 * len(encode(to_message(x))) without the header <= bits(d) (to {tolerance:g}): bits is an "
                  "expectation or a bound (bits_exact = False)")
    out = []
    if skip is not None:
        out.append(CheckResult("payload", "skipped", st, skip))
    else:
        try:
            bits = _declared(obj, "bits", d)
            if bits is None:
                raise _Bad("declares encode but no bits (a number or a function of d): nothing to compare the payload "
                           "to")
            rows = []
            reps = 10 if exact else 200  # an expectation needs the mean of many messages
            for i, name in enumerate(names):
                for r in range(reps):
                    blob = _call(enc, "encode(x, rng=...)", _to_kind(xs[name], comp.array), rng=_rng(seed, i, r))
                    try:
                        size = len(memoryview(blob).cast("B"))
                    except TypeError:
                        size = int(_as_numpy(blob, "encode(x)").nbytes)
                    rows.append(dict(vector=name, replicate=r, metric="payload_bits", value=8.0 * size - header))
            if exact:
                claim = _claim("payload", "equal", "payload_bits", "declared_bits", confidence,
                               bound_args={"bits": bits}, margin_abs=7.0)
            else:
                claim = _claim("payload", "upper", "payload_bits", "declared_bits", confidence,
                               bound_args={"bits": bits}, atol=max(tolerance * bits, 7.0))
            table = pd.DataFrame(rows)
            measured = float(table.groupby("vector")["value"].mean().max())
            out.append(_verdict("payload", claim, table, {"vector"}, st, len(rows), measured=measured,
                                declared=bits)[0])
        except _Bad as bad:
            out.append(_error("payload", st, bad))
    if dec is None:
        return out
    # a Compressor's message carries float32 values and scales: exact up to float32 rounding (2^-24 relative,
    # with room for a scale times a level); another object's own encoding is taken at its word: exact
    atol = 4e-7 if library else 1e-12
    st = ("decode(encode(x)) equals C(x) on the same seed, " + ("to float32 rounding (4e-7 relative), under every "
                                                               "coding of its message kind, which returns the "
                                                               "message exactly" if library else "exactly"))
    try:
        rows = []
        for i, name in enumerate(names):
            for r in range(10):
                want = comp(xs[name], _rng(seed, i, r))
                if library:
                    blobs = _codings(obj, xs[name], _rng(seed, i, r))
                else:
                    blobs = [_call(enc, "encode(x, rng=...)", _to_kind(xs[name], comp.array), rng=_rng(seed, i, r))]
                for blob in blobs:
                    if blob is None:  # a coding changed the message: a defect of 1
                        rows.append(dict(vector=name, replicate=r, metric="defect", value=1.0))
                        continue
                    got = _as_numpy(_call(dec, "decode(payload)", blob), "decode(payload)").reshape(want.shape)
                    gap = float(np.max(np.abs(got.astype(np.float64) - want))) / max(float(np.max(np.abs(want))),
                                                                                      1e-300)
                    rows.append(dict(vector=name, replicate=r, metric="defect",
                                     value=gap if math.isfinite(gap) else 1.0))
        claim = _claim("roundtrip", "upper", "defect", "zero_defect", confidence, atol=atol)
        out.append(_verdict("roundtrip", claim, pd.DataFrame(rows), {"vector"}, st, 2 * len(rows),
                            measured=max(r["value"] for r in rows), declared=0.0)[0])
    except _Bad as bad:
        out.append(_error("roundtrip", st, bad))
    return out


# ------------------------------------------------------------------------------------------------------------
# error feedback


def _residual(state):
    r = getattr(state, "residual", None)
    if r is None and (isinstance(state, np.ndarray) or is_framework_array(state)):
        r = state
    if r is None:
        raise _Bad(f"the state is a {type(state).__name__} without a .residual: expose the residual as state.residual")
    return _as_numpy(r, "state.residual").astype(np.float64)


def _ef_run(obj, grads, seed, rep, *, restore_at=None, rebuild_at=None, record=True):
    """Messages (and invariant defects) of one run of the user's error-feedback step over ``grads``."""
    array = getattr(obj, "array", "numpy")
    state = _call(obj.init, "init(g)", _to_kind(np.zeros_like(grads[0]), array))
    msgs, defects = [], []
    for t, g in enumerate(grads):
        if t == restore_at:
            try:
                state = pickle.loads(pickle.dumps(state))  # a checkpoint written and read back
            except Exception as exc:  # noqa: BLE001
                raise _Bad(f"the state cannot be pickled for a checkpoint ({type(exc).__name__}: {exc})") from None
        gin = _to_kind(g, array)
        if t == rebuild_at:
            state = copy.deepcopy(state)  # the same state in new buffers, as after a bucket rebuild
        e0 = _residual(state) if record else None
        res = _call(obj.apply, "apply(g, state, rng=...)", gin, state, rng=_rng(seed, rep, t))
        if not (isinstance(res, tuple) and len(res) == 2):
            raise _Bad("apply(g, state, rng=...) must return (message, new_state)")
        m, state = res
        m = _as_numpy(m, "apply(...)[0]")
        if m.shape != g.shape:
            raise _Bad(f"the message has shape {m.shape} for a gradient of shape {g.shape}")
        msgs.append(m.astype(np.float64))
        if record:
            e1 = _residual(state)
            p = e0 + g
            scale = max(float(np.max(np.abs(p))), 1e-30)
            defects.append(float(np.max(np.abs(e1 - (p - m)))) / scale)
    return np.stack(msgs), defects


def _run_defect(a: np.ndarray, b: np.ndarray) -> float:
    gap = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(a))), 1e-300)
    return gap if math.isfinite(gap) else 1.0


def _feedback_checks(obj, *, d, seed, confidence, tolerance, max_draws) -> list[CheckResult]:
    out = []
    if not (callable(getattr(obj, "init", None)) and callable(getattr(obj, "apply", None))):
        return [_error("call", "init(g) and apply(g, state, rng=...) exist",
                       _Bad(f"is a {type(obj).__name__} without init(g) and apply(g, state, rng=...)"))]
    steps, reps = 40, 10
    grads = [np.stack([_rng(seed, 500 + r, t).standard_normal(d).astype(np.float32) for t in range(steps)])
             for r in range(reps)]
    runs = {}
    st = "two runs with the same seeds send the same messages, bit for bit"
    try:
        rows = []
        for r in range(reps):
            runs[r] = _ef_run(obj, grads[r], seed, r, record=False)[0]
            again = _ef_run(obj, grads[r], seed, r, record=False)[0]
            rows.append(dict(replicate=r, metric="defect", value=0.0 if np.array_equal(runs[r], again)
                             else _run_defect(runs[r], again)))
        res, _ = _verdict("determinism", _claim("determinism", "upper", "defect", "zero_defect", confidence,
                                                atol=1e-300), pd.DataFrame(rows), set(), st, 2 * reps * steps)
        if res.verdict != "holds":
            res = CheckResult("determinism", "error", st, "not deterministic under a fixed seed; draw every random "
                              "number from the rng argument", res.draws)
        out.append(res)
    except _Bad as bad:
        out.append(_error("determinism", st, bad))
        return out
    # the invariant e_{t+1} = e_t + g_t - m_t, every step: 4 ulps of float32 relative to max|g + e| allows the
    # rounding of p = g + e and of p - m in float32 (twice the unit roundoff each, one per operation)
    ulps = 4 * float(np.finfo(np.float32).eps)
    st = f"e_(t+1) = e_t + g_t - m_t at every one of {steps} steps, to {ulps:.2g} relative (4 float32 ulps)"
    try:
        rows = [dict(replicate=r, metric="defect", value=max(_ef_run(obj, grads[r], seed, r)[1])) for r in range(reps)]
        out.append(_verdict("ef_invariant", _claim("ef_invariant", "upper", "defect", "zero_defect", confidence,
                                                   atol=ulps), pd.DataFrame(rows), set(), st, reps * steps)[0])
    except _Bad as bad:
        out.append(_error("ef_invariant", st, bad))
    for check, kw, what in (("checkpoint", "restore_at", "pickled and restored"),
                            ("rebuild", "rebuild_at", "copied into new buffers (a bucket rebuild)")):
        st = f"a run whose state is {what} at step {steps // 2} sends the same messages, exactly"
        try:
            rows = [dict(replicate=r, metric="defect", value=_run_defect(
                runs[r], _ef_run(obj, grads[r], seed, r, record=False, **{kw: steps // 2})[0])) for r in range(reps)]
            out.append(_verdict(check, _claim(check, "upper", "defect", "zero_defect", confidence, atol=1e-12),
                                pd.DataFrame(rows), set(), st, reps * steps)[0])
        except _Bad as bad:
            out.append(_error(check, st, bad))
    return out


# ------------------------------------------------------------------------------------------------------------
# outer (pseudo-gradient) step


def _outer_checks(obj, *, d, seed, confidence, tolerance, max_draws) -> list[CheckResult]:
    if not callable(obj):
        return [_error("call", "pseudo_gradient(theta, theta_local)", _Bad(f"is a {type(obj).__name__}, not callable"))]
    array = getattr(obj, "array", "numpy")
    local_steps, lr = 5, 0.5  # lr * L <= 0.5 < 2: every local step descends on the quadratic below
    st = (f"cos(Delta, grad f(theta)) > 0 for Delta = pseudo_gradient(theta, theta_local) after {local_steps} local "
          "gradient steps on f = ||A theta||^2 / 2 (so that theta - lr * Delta descends)")
    rows = []
    try:
        for r in range(20):
            g = _rng(seed, 700, r)
            a2 = g.uniform(0.1, 1.0, d)  # the diagonal of A^T A, L = max <= 1
            theta = g.standard_normal(d)
            loc = theta.copy()
            for _ in range(local_steps):
                loc = loc - lr * a2 * loc
            delta = _as_numpy(_call(obj, "pseudo_gradient(theta, theta_local)", _to_kind(theta, array),
                                    _to_kind(loc, array)), "pseudo_gradient").astype(np.float64)
            if delta.shape != theta.shape:
                raise _Bad(f"pseudo_gradient returned shape {delta.shape} for parameters of shape {theta.shape}")
            grad = a2 * theta
            cos = float(delta @ grad) / max(float(np.linalg.norm(delta) * np.linalg.norm(grad)), 1e-300)
            rows.append(dict(replicate=r, metric="cosine", value=cos))
    except _Bad as bad:
        return [_error("outer_sign", st, bad)]
    return [_verdict("outer_sign", _claim("outer_sign", "lower", "cosine", "descent_lower", confidence),
                     pd.DataFrame(rows), set(), st, len(rows))[0]]


def _outer_factory(obj) -> bool:
    """Whether ``obj`` is an outer-step factory ``make(params, *, workers, rng)`` (not a pseudo-gradient)."""
    import inspect

    if not callable(obj):
        return False
    try:
        names = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return "workers" in names and "rng" in names


#: the outer-step battery's run: workers, inner steps per round, inner SGD step, rounds, replicates
_OUTER = dict(n=4, H=4, lr=0.2, rounds=8, reps=5)
#: float64 runs that form the same quantities in another order (the workers' mean, p - lr * direction as one
#: fused operation) differ by a few ulps per round; the outer momentum carries an error over at most
#: 1/(1 - mu) = 10 rounds and the quadratic's contraction keeps |x| = O(1), so 8 rounds stay below 1e-13
#: relative (measured: 3e-16 on every shipped setting); 1e-9 is far below any difference of method (a dropped
#: residual or another momentum convention changes the model by 1e-2 relative and more after two rounds)
_OUTER_ROUNDING = 1e-9


def _outer_settings(outer) -> dict:
    """What the user's outer step declares (``lr``, ``momentum``, ``nesterov``, ``compressor``, ``feedback``)."""
    from simcomm.compress import Compressor, Identity, compressor_from_label

    missing = [a for a in ("lr", "momentum", "nesterov", "compressor", "feedback") if not hasattr(outer, a)]
    if missing:
        raise _Bad(f"the outer step declares no {', '.join(missing)}: give it the attributes lr, momentum, nesterov, "
                   "compressor (a simcomm Compressor or None) and feedback ('none', 'ef', 'ef21', ...)")
    c = outer.compressor
    c = Identity() if c is None else compressor_from_label(c) if isinstance(c, str) else c
    if not isinstance(c, Compressor):
        raise _Bad(f"declares compressor = {c!r}, not a simcomm Compressor (or None, or a label)")
    fb = outer.feedback
    fb = "ef" if fb is True else "none" if fb is False or fb is None else str(fb)
    try:
        lr, mu = float(outer.lr), float(outer.momentum)
    except (TypeError, ValueError):
        raise _Bad(f"declares lr = {outer.lr!r}, momentum = {outer.momentum!r}: not numbers") from None
    return dict(lr=lr, momentum=mu, nesterov=bool(outer.nesterov), compressor=c, feedback=fb)


def _outer_simulator(problem, s: dict, rounds: int, rng: int):
    """The simulator's global model after every round, ``(rounds, d)``, or a reason it cannot simulate ``s``."""
    from simcomm.optim import build_method, run

    H = _OUTER["H"]
    kw = dict(H=H, lr=_OUTER["lr"], outer_lr=s["lr"], compressor=s["compressor"].label, feedback=s["feedback"])
    if s["momentum"] == 0.0:
        kw["outer"] = "sgd"
    elif s["nesterov"]:
        kw.update(outer="nesterov", outer_momentum=s["momentum"])
    else:
        return "the simulator's diloco takes an outer SGD or Nesterov step; heavy-ball outer momentum is not simulated"
    try:
        method = build_method("diloco", **kw)
    except UserError as exc:
        return f"the simulator cannot run these settings ({exc})"
    return np.stack([run(problem, method, H * r, rng=rng).x[0] for r in range(1, rounds + 1)])


def _outer_run(factory, problem, rng: int, *, restore_at=None) -> np.ndarray:
    """The user's global model after every round of DiLoCo on ``problem`` (inner SGD here), ``(rounds, d)``."""
    import torch

    n, H, lr, rounds = _OUTER["n"], _OUTER["H"], _OUTER["lr"], _OUTER["rounds"]
    d = problem.d
    a = 2 * (d // 4)
    x0 = torch.from_numpy(np.asarray(problem.x0, dtype=np.float64).copy())
    params = [x0[:a].reshape(2, d // 4).clone(), x0[a:].clone()]  # two parameters: the flattening order counts

    def flat(ts):
        return torch.cat([t.detach().reshape(-1) for t in ts]).numpy().astype(np.float64)

    outer = _call(factory, "make(params, workers=..., rng=...)", params, workers=n, rng=rng)
    if not callable(getattr(outer, "step", None)):
        raise _Bad(f"make(params, workers=..., rng=...) returned a {type(outer).__name__} without step(local)")
    out = []
    for r in range(rounds):
        if r == restore_at:
            for m in ("state_dict", "load_state_dict"):
                if not callable(getattr(outer, m, None)):
                    raise _Bad(f"the outer step has no {m}(); a checkpoint cannot be written")
            blob = pickle.dumps(_call(outer.state_dict, "state_dict()"))
            outer = _call(factory, "make(params, workers=..., rng=...)", params, workers=n, rng=rng)
            _call(outer.load_state_dict, "load_state_dict(state)", pickle.loads(blob))
        X = np.repeat(flat(params)[None], n, axis=0)
        for _ in range(H):  # the simulator's inner SGD: x_i + (-(lr * grad f_i(x_i)))
            X = X + (-(lr * problem.grad(X, np.arange(n))))
        local = []
        for i in range(n):
            row = torch.from_numpy(X[i].copy())
            local.append([row[:a].reshape(2, d // 4), row[a:]])
        _call(outer.step, "step(local)", local)
        x = flat(params)
        if x.shape != (d,):
            raise _Bad(f"after step(local) the parameters hold {x.size} values, not {d}")
        out.append(x)
    return np.stack(out)


def _outer_step_checks(factory, *, d, seed, confidence, tolerance, max_draws) -> list[CheckResult]:
    """Determinism, the simulator's DiLoCo round by round, a checkpoint: the battery of an outer-step factory."""
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        return [_error("call", "make(params, workers=..., rng=...) runs on torch tensors",
                       _Bad(f"needs torch ({exc}); pip install torch==2.13.0 (CPU wheel)"))]
    from simcomm.models import quadratic

    n, H, rounds, reps = _OUTER["n"], _OUTER["H"], _OUTER["rounds"], _OUTER["reps"]
    problems = [quadratic(n, d, L=1.0, mu=0.1, sigma2=1.0, rng=_rng(seed, 800, r)) for r in range(reps)]
    seeds = [int(_rng(seed, 801, r).integers(2**62)) for r in range(reps)]
    where = f"{n} workers, H = {H} inner SGD steps, {rounds} rounds, float64 quadratics of d = {d}"
    out, runs = [], {}
    st = f"two runs with the same seeds give the same global models, bit for bit ({where})"
    try:
        rows = []
        for r in range(reps):
            runs[r] = _outer_run(factory, problems[r], seeds[r])
            again = _outer_run(factory, problems[r], seeds[r])
            rows.append(dict(replicate=r, metric="defect",
                             value=0.0 if np.array_equal(runs[r], again) else _run_defect(runs[r], again)))
        res = _verdict("determinism", _claim("determinism", "upper", "defect", "zero_defect", confidence,
                                             atol=1e-300), pd.DataFrame(rows), set(), st, 2 * reps * rounds)[0]
        if res.verdict != "holds":
            res = CheckResult("determinism", "error", st, "not deterministic under a fixed seed: draw the compressor's "
                              "random numbers from the rng the factory is given", res.draws)
        out.append(res)
    except _Bad as bad:
        return [_error("determinism", st, bad)]
    st = (f"the global model after every round equals simcomm.optim's diloco (same compressor, feedback, outer step, "
          f"seed, data) within {_OUTER_ROUNDING:g} relative")
    try:
        import torch

        probe = [torch.zeros(2, d // 4, dtype=torch.float64), torch.zeros(d - 2 * (d // 4), dtype=torch.float64)]
        s = _outer_settings(_call(factory, "make(params, workers=..., rng=...)", probe, workers=n, rng=0))
        rows, worst = [], 0.0
        for r in range(reps):
            sim = _outer_simulator(problems[r], s, rounds, seeds[r])
            if isinstance(sim, str):
                out.append(CheckResult("simulator", "skipped", st, sim))
                break
            gap = _run_defect(sim, runs[r])
            worst = max(worst, gap)
            rows.append(dict(replicate=r, metric="defect", value=gap))
        else:
            out.append(_verdict("simulator", _claim("simulator", "upper", "defect", "zero_defect", confidence,
                                                    atol=_OUTER_ROUNDING), pd.DataFrame(rows), set(), st,
                                reps * rounds, measured=worst, declared=0.0)[0])
    except _Bad as bad:
        out.append(_error("simulator", st, bad))
    half = rounds // 2
    st = f"a run whose outer step is rebuilt at round {half} from the pickled state_dict() gives the same models"
    try:
        import torch

        probe = [torch.zeros(2, d // 4, dtype=torch.float64), torch.zeros(d - 2 * (d // 4), dtype=torch.float64)]
        o = _call(factory, "make(params, workers=..., rng=...)", probe, workers=n, rng=0)
        if not (callable(getattr(o, "state_dict", None)) and callable(getattr(o, "load_state_dict", None))):
            out.append(CheckResult("checkpoint", "skipped", st, "declares no state_dict() and load_state_dict()"))
        else:
            rows = [dict(replicate=r, metric="defect", value=_run_defect(
                runs[r], _outer_run(factory, problems[r], seeds[r], restore_at=half))) for r in range(reps)]
            out.append(_verdict("checkpoint", _claim("checkpoint", "upper", "defect", "zero_defect", confidence,
                                                     atol=1e-12), pd.DataFrame(rows), set(), st, reps * rounds)[0])
    except _Bad as bad:
        out.append(_error("checkpoint", st, bad))
    return out


# ------------------------------------------------------------------------------------------------------------
# hooks (torch, Gloo processes)


def _hook_results(targets: list, *, workers, seed) -> dict:
    """``{target: found}`` from one run of the Gloo harness, or ``{target: error line}``."""
    try:
        from simcomm.torch._harness import run_hook_battery
    except ImportError as exc:
        return dict.fromkeys(targets, f"needs torch ({exc}); pip install torch (CPU: pip install torch==2.13.0)")
    try:
        return run_hook_battery(targets, workers=workers, seed=seed)
    except UserError as exc:
        return dict.fromkeys(targets, str(exc))


def _hook_checks(found, *, workers, confidence) -> list[CheckResult]:
    if isinstance(found, str):
        return [_error("call", "the factory returns (state, hook) and runs under torch.distributed", _Bad(found))]
    out = []
    for check, st, atol in (
            ("determinism", "two runs with the same seeds give the same updates, bit for bit", 1e-300),
            ("rank_consistency", f"every one of {workers} workers receives the same update at every step", 1e-300),
            ("checkpoint", "a run whose state is pickled and restored (a new hook from the factory) half-way gives "
                           "the same updates, exactly", 1e-12),
            ("rebuild", "a run whose buckets are rebuilt half-way (new buffers, same indices) gives the same updates, "
                        "exactly", 1e-12),
            ("fp16_overflow", f"gradients of 3/4 of the float16 maximum on each of {workers} workers give 2^12 times "
                              "the update of the same gradients times 2^-12 (to 4 float16 ulps; inf if it overflows)",
             4 * float(np.finfo(np.float16).eps))):
        rec = found.get(check, "not measured")
        if isinstance(rec, str):
            out.append(_error(check, st, _Bad(rec)))
            continue
        rows = pd.DataFrame(dict(replicate=np.arange(len(rec)), metric="defect", value=rec))
        runs = {"determinism": 2, "fp16_overflow": 2}.get(check, 1)  # hook calls per replicate and run
        res = _verdict(check, _claim(check, "upper", "defect", "zero_defect", confidence, atol=atol), rows, set(), st,
                       found.get("calls", 0) * len(rec) * runs)[0]
        if check == "determinism" and res.verdict != "holds":
            res = CheckResult(check, "error", st, "not deterministic under a fixed seed: seed the hook's random "
                              "numbers from its state", res.draws)
        out.append(res)
    return out


# ------------------------------------------------------------------------------------------------------------


def conform(target, kind: str, *, d: int = 16, seed: int = 0, confidence: float = 0.99, tolerance: float = 0.1,
            max_draws: int = 16000, workers: int = 2) -> ConformReport:
    r"""Run the conformance battery on a user's object; see the module docstring for what it declares.

    Parameters
    ----------
    target : str or object
        ``"module:name"`` (how the command line names it) or the object itself (not for ``hook``,
        whose factory is imported again in each worker process).
    kind : {"compressor", "feedback", "hook", "outer"}
    d : int
        Dimension of the test vectors.
    seed : int
        Root seed: call ``(vector i, draw r)`` gets ``default_rng(SeedSequence(seed, spawn_key=(i, r)))``.
    confidence : float
        Family-wise confidence of each check over its cells.
    tolerance : float
        Stated before the data: the bias allowed by ``unbiased`` (a fraction of :math:`\sqrt\beta`) and
        the relative slack on a declared variance or contraction constant.
    max_draws : int
        Most calls per test vector of the Monte Carlo checks (doubling from 1000 while a cell is undecided).
    workers : int
        Gloo processes for a hook.

    Returns
    -------
    ConformReport

    Raises
    ------
    UserError
        An unknown kind or a target that cannot be imported (the checks' own bad input is reported in
        the report, not raised).

    Examples
    --------
    >>> from simcomm.compress import RandK
    >>> rep = conform(RandK(4), "compressor")
    >>> rep.verdicts()["unbiased"], rep.verdicts()["variance"]
    ('holds', 'holds')
    """
    return conform_all([target], kind, d=d, seed=seed, confidence=confidence, tolerance=tolerance,
                       max_draws=max_draws, workers=workers)[0]


def conform_all(targets, kind: str, *, d: int = 16, seed: int = 0, confidence: float = 0.99, tolerance: float = 0.1,
                max_draws: int = 16000, workers: int = 2) -> list[ConformReport]:
    """:func:`conform` on several targets of one kind (hooks share one set of Gloo processes).

    Raises
    ------
    UserError
        As :func:`conform`, before any target runs.
    """
    if kind not in KINDS:
        from simcomm._errors import closest

        raise UserError(f"unknown --kind '{kind}'{closest(kind, KINDS)}; choose one of {', '.join(KINDS)}")
    if isinstance(d, bool) or not isinstance(d, int) or d < 4:
        raise UserError(f"-d {d!r} is out of range; use a dimension d >= 4")
    targets = list(targets)
    names = [t if isinstance(t, str) else getattr(t, "__name__", None) or repr(t) for t in targets]
    settings = dict(d=d, seed=seed, confidence=confidence, tolerance=tolerance, max_draws=max_draws)
    kw = dict(d=d, seed=seed, confidence=confidence, tolerance=tolerance, max_draws=max_draws)
    if kind == "hook":
        for t in targets:
            if not isinstance(t, str):
                raise UserError("--kind hook needs the factory as a 'module:name' string: each worker imports it")
            resolve(t, f"conform {t}")  # an import error is reported here, before processes start
        found = _hook_results(targets, workers=workers, seed=seed)
        settings["workers"] = workers
        return [ConformReport(n, kind, tuple(_hook_checks(found[t], workers=workers, confidence=confidence)), settings)
                for n, t in zip(names, targets)]
    objs = [resolve(t, f"conform {t}") if isinstance(t, str) else t for t in targets]
    run = {"compressor": _compressor_checks, "feedback": _feedback_checks, "outer": _outer_checks}[kind]
    reports = []
    for n, o in zip(names, objs):
        if kind == "outer" and _outer_factory(o):
            reports.append(ConformReport(n, kind, tuple(_outer_step_checks(o, **kw)), settings))
            continue
        try:
            o = _instance(o, kind)
        except _Bad as bad:
            reports.append(ConformReport(n, kind, (_error("call", "an instance to run the checks on", bad),), settings))
            continue
        reports.append(ConformReport(n, kind, tuple(run(o, **kw)), settings))
    return reports


def _instance(obj, kind: str):
    """``obj``, or an instance of it built with its defaults when it is a class (a one-line error if it cannot be)."""
    import inspect

    if not inspect.isclass(obj):
        return obj
    try:
        sig = inspect.signature(obj)
        missing = [p.name for p in sig.parameters.values()
                   if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        missing = []
    if missing:
        args = ", ".join(f"{m}=..." for m in missing)
        raise _Bad(f"is the class {obj.__name__}, not an instance, and {obj.__name__}() needs {', '.join(missing)}; "
                   f"pass an instance: put e.g. 'c = {obj.__name__}({args})' in your module and name MODULE:c")
    try:
        return obj()
    except Exception as exc:  # noqa: BLE001 - the user's constructor may raise anything
        raise _Bad(f"is the class {obj.__name__}; building it with its defaults raised {type(exc).__name__}: {exc}; "
                   f"pass an instance (MODULE:name of e.g. 'c = {obj.__name__}(...)')") from None
