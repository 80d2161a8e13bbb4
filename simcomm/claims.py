"""Judge a claim against a results table: effect sizes, family-wise confidence, censoring, reasons.

Kinds (see ``sims/README.md``): ``upper``, ``lower``, ``equal`` (against a bound from ``theory``,
evaluated on every replicate row), ``slope`` (fitted log-log slope against a predicted slope) and
``order`` (one method's observable below another's, paired per cell when the methods share replicate
streams).

How a cell is decided. Each cell reduces to a sample ``x`` of per-replicate differences (observable
minus bound, or method minus competitor; on ``scale = "log"`` the differences of logs). Two one-sided
tests are run on ``x``:

* the *hold* test rejects "the claim fails here" (for ``upper``: mean(x) >= 0);
* the *violation* test rejects "the claim holds here, up to ``min_effect``" (for ``upper``:
  mean(x) <= min_effect).

Each family of tests (hold, violation) is corrected over the claim's cells with Holm's step-down
procedure at ``alpha = 1 - confidence`` (and divided by the number of planned looks when replicates
are added adaptively), so the probability that a true claim is called violated anywhere is at most
``alpha``, whatever the number of cells. A cell is ``holds`` when its hold test rejects,
``violated`` when its violation test rejects, otherwise ``inconclusive`` with the reason
(straddles, underpowered, within min_effect, censored). ``ill-posed`` marks cells where the question
cannot be asked (the bound is not finite, the baseline diverged, both sides are non-finite).

A claim is ``violated`` if any cell is, else ``inconclusive`` if any cell is, else ``holds`` if any
cell holds, else ``ill-posed``.
"""

from __future__ import annotations

import enum
import functools
import inspect
import math
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from simcomm._errors import SpecError
from simcomm.spec import ClaimSpec, resolve

__all__ = ["Verdict", "Judgement", "judge", "holm", "one_sided_p", "mean_ci", "worst", "decide"]

_NON_PARAM = {"metric", "value", "replicate", "note", "censored"}


class Verdict(str, enum.Enum):
    """Outcome of a comparison."""

    HOLDS = "holds"
    ILL_POSED = "ill-posed"
    INCONCLUSIVE = "inconclusive"
    VIOLATED = "violated"


_RANK = {Verdict.HOLDS: 0, Verdict.ILL_POSED: 1, Verdict.INCONCLUSIVE: 2, Verdict.VIOLATED: 3}


def worst(verdicts) -> Verdict:
    """A claim's verdict from its cells' (``ill-posed`` only when no cell could be judged)."""
    verdicts = [Verdict(v) for v in verdicts]
    if not verdicts:
        return Verdict.INCONCLUSIVE
    judged = [v for v in verdicts if v is not Verdict.ILL_POSED]
    return max(judged, key=_RANK.__getitem__) if judged else Verdict.ILL_POSED


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict with the per-cell numbers the report and the figure need.

    Attributes
    ----------
    claim : ClaimSpec
    verdict : Verdict
    ratio : float
        Tightest ratio empirical/bound (upper: max, lower: min, equal: farthest from 1, slope:
        fitted/predicted farthest from 1, order: max of lower/higher); NaN when undefined.
    cells : pandas.DataFrame
        One row per judged comparison: its parameters, ``n_rep`` (or ``n_points``), ``mean``,
        ``ci_low``, ``ci_high`` (at the per-cell level ``level`` actually used), ``bound`` (or
        ``predicted``/``other``), ``ratio``, ``verdict``, ``reason``, ``note``.
    provenance : str
    columns : list of str
        Parameters that vary between cells.
    excluded : int
        Measured cells outside the claim's ``where``.
    reason : str
        Why the claim has its verdict (empty when it holds everywhere).
    controls : tuple
        ``(name, verdict)`` of each negative control that was run (see :mod:`simcomm.checking`).
    detect : float
        Power on the page: the ratio (as in ``ratio``) at which the claim's least powered cell would be
        called violated with probability 0.8 at its replicates and measured spread (a departure past
        the bound, the margin or the claimed effect); inf where a cell's test cannot reject at all.
    """

    claim: ClaimSpec
    verdict: Verdict
    ratio: float
    cells: pd.DataFrame
    provenance: str
    columns: list
    excluded: int = 0
    reason: str = ""
    controls: tuple = ()
    detect: float = math.nan

    def scope(self) -> str:
        """Words for the claim's ``where`` filter, e.g. "judged where period in [1, 4, 16]"."""
        if not self.claim.where:
            return ""
        cond = ", ".join(f"{k} in {v}" if isinstance(v, list) else f"{k} = {v}" for k, v in self.claim.where.items())
        return f"judged where {cond}" + (f"; {self.excluded} measured cells outside it are not judged"
                                         if self.excluded else "")

    def summary(self) -> dict:
        """The ``--json`` object of this claim."""
        return {
            "id": self.claim.id, "paper": self.claim.paper, "kind": self.claim.kind,
            "verdict": self.verdict.value, "reason": self.reason, "provenance": self.provenance,
            "ratio": None if not math.isfinite(self.ratio) else float(self.ratio),
            "n_cells": int(len(self.cells)), "about": self.claim.about,
            "detect": None if not math.isfinite(self.detect) else float(self.detect),
            "controls": [{"name": n, "verdict": v} for n, v in self.controls],
        }


# --------------------------------------------------------------------------------------------------
# statistics: one-sided p-values, Holm, intervals


def _sample_stats(x: np.ndarray) -> tuple[float, float, int]:
    return float(np.mean(x)), (float(np.std(x, ddof=1)) if x.size > 1 else 0.0), int(x.size)


def one_sided_p(x, c: float, side: str, test: str = "t", y=None, seed: int = 0, resamples: int = 2000) -> float:
    """p-value of a one-sided test on the mean (or median) difference.

    ``side = "less"`` tests H0: mu >= c against mu < c (small p: the data lie below c);
    ``side = "greater"`` tests H0: mu <= c. With ``y`` the test is two-sample (mu = E x - E y,
    Welch's t or an independent bootstrap); otherwise ``x`` holds paired differences. The bootstrap's
    smallest p-value is ``1 / (resamples + 1)``: the judge sets ``resamples`` from the Holm level.

    A sample without spread (one replicate, or a deterministic experiment) is exact: p is 0 when
    the mean lies strictly on the alternative's side of ``c`` and 1 otherwise.

    Examples
    --------
    >>> one_sided_p([1.0, 1.0, 1.0], 2.0, "less")
    0.0
    >>> round(one_sided_p([0.9, 1.1, 1.0, 1.05], 2.0, "less"), 6) < 1e-4
    True
    """
    x = np.asarray(x, dtype=float)
    sgn = 1.0 if side == "greater" else -1.0
    if y is not None:
        y = np.asarray(y, dtype=float)
        if test == "bootstrap":
            g = np.random.default_rng(seed)
            bx = g.choice(x, (resamples, x.size)).mean(axis=1)
            by = g.choice(y, (resamples, y.size)).mean(axis=1)
            d = bx - by
            return float((np.sum(sgn * (d - c) <= 0) + 1) / (d.size + 1))
        mx, sx, nx = _sample_stats(x)
        my, sy, ny = _sample_stats(y)
        va, vb = sx**2 / nx, sy**2 / ny
        se = math.sqrt(va + vb)
        diff = mx - my - c
        if se == 0 or nx < 2 or ny < 2:
            return 0.0 if sgn * diff > 0 else 1.0
        dof = (va + vb) ** 2 / ((va**2 / (nx - 1) if va else 0.0) + (vb**2 / (ny - 1) if vb else 0.0))
        return float(stats.t.sf(sgn * diff / se, dof))
    if test == "sign":
        above, below = int(np.sum(x > c)), int(np.sum(x < c))
        wins = above if side == "greater" else below
        # Ties count against the alternative: P(Binom(n, 1/2) >= wins).
        return float(stats.binom.sf(wins - 1, x.size, 0.5)) if x.size else 1.0
    m, s, n = _sample_stats(x)
    if s == 0 or n < 2:
        return 0.0 if sgn * (m - c) > 0 else 1.0
    if test == "bootstrap":
        g = np.random.default_rng(seed)
        bm = g.choice(x, (resamples, n)).mean(axis=1)
        # The resampled means spread by sd sqrt((n-1)/n) / sqrt(n); rescaled to the unbiased sd.
        bm = m + math.sqrt(n / (n - 1)) * (bm - m)
        return float((np.sum(sgn * (bm - c) <= 0) + 1) / (bm.size + 1))
    return float(stats.t.sf(sgn * (m - c) / (s / math.sqrt(n)), n - 1))


def holm(p, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down procedure: which hypotheses are rejected, and each one's threshold.

    Returns ``(rejected, threshold)``: the i-th smallest p-value is compared with
    ``alpha / (m - i)`` (i from 0) until the first one that fails; hypotheses not rejected carry the
    threshold at which the procedure stopped. Controls the family-wise error rate at ``alpha``.

    Examples
    --------
    >>> r, t = holm([0.001, 0.06, 0.012], 0.05)
    >>> r.tolist(), [round(float(v), 4) for v in t]
    ([True, False, True], [0.0167, 0.05, 0.025])
    """
    p = np.asarray(p, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    rejected = np.zeros(m, dtype=bool)
    threshold = np.full(m, alpha / max(m, 1))
    stop = None
    for i, k in enumerate(order):
        thr = alpha / (m - i)
        if stop is None and p[k] <= thr:
            rejected[k] = True
            threshold[k] = thr
        else:
            stop = thr if stop is None else stop
            threshold[k] = stop
    return rejected, threshold


def _interval(x, alpha: float, test: str, y=None, seed: int = 0) -> tuple[float, float, float]:
    """Estimate and two-sided interval of mean(x) (or mean(x) - mean(y)) with alpha in each tail."""
    x = np.asarray(x, dtype=float)
    if y is not None:
        y = np.asarray(y, dtype=float)
        mx, sx, nx = _sample_stats(x)
        my, sy, ny = _sample_stats(y)
        d = mx - my
        va, vb = sx**2 / nx, sy**2 / ny
        se = math.sqrt(va + vb)
        if se == 0 or nx < 2 or ny < 2:
            return d, d, d
        dof = (va + vb) ** 2 / ((va**2 / (nx - 1) if va else 0.0) + (vb**2 / (ny - 1) if vb else 0.0))
        half = stats.t.isf(alpha, dof) * se
        return d, d - half, d + half
    m, s, n = _sample_stats(x)
    if s == 0 or n < 2:
        return m, m, m
    if test == "sign":
        # Order-statistic interval for the median: the k-th smallest and largest values.
        xs = np.sort(x)
        k = int(stats.binom.ppf(alpha, n, 0.5))
        k = max(k - 1, 0)
        return float(np.median(x)), float(xs[k]), float(xs[n - 1 - k])
    if test == "bootstrap":
        g = np.random.default_rng(seed)
        bm = g.choice(x, (2000, n)).mean(axis=1)
        return m, float(np.quantile(bm, alpha)), float(np.quantile(bm, 1 - alpha))
    half = stats.t.isf(alpha, n - 1) * s / math.sqrt(n)
    return m, m - half, m + half


def mean_ci(values, confidence: float = 0.99) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval at ``confidence`` (for figures of raw values)."""
    v = np.asarray(values, dtype=float)
    m = float(np.mean(v)) if v.size else math.nan
    if v.size < 2 or not np.all(np.isfinite(v)):
        return m, m, m
    half = stats.t.isf((1 - confidence) / 2, v.size - 1) * float(np.std(v, ddof=1)) / math.sqrt(v.size)
    return m, m - half, m + half


# --------------------------------------------------------------------------------------------------
# per-cell comparisons


@dataclass
class _Cell:
    """One comparison: its sample(s), lines, and what is known before the family correction."""

    params: dict
    x: np.ndarray | None = None      # paired differences (or a sample of slopes minus prediction)
    y: np.ndarray | None = None      # second sample of an unpaired comparison (x is then the first)
    hold_side: str = "less"
    hold_line: float = 0.0
    viol_side: str = "greater"
    viol_line: float = 0.0
    equal_margin: float | None = None  # equal/slope/equivalent: two-sided band half-width
    equal_sides: str = "both"         # which sides of the band a violation may be shown on (censoring)
    x_hold: np.ndarray | None = None  # censored pairs: the sample the hold test sees (default x)
    x_viol: np.ndarray | None = None  # censored pairs: the sample the violation test sees (default x)
    effect: float = 0.0               # min_effect in the units of x (for the reason)
    censored: str = ""                # "censored at H" when censoring blocks one direction
    block_hold: bool = False
    block_viol: bool = False
    fixed: Verdict | None = None      # decided without a test (ill-posed, diverged)
    reason: str = ""
    viol_text: str = ""               # what a violation means here, for the reason column
    extra: dict | None = None         # columns for the table (mean, bound, ratio, ...)
    to_value: object = None           # maps an interval of x back to observable units
    to_ratio: object = None           # maps a value of x to the claim's ratio (empirical/bound, first/second)


def _p_pair(c: _Cell, test: str, seed: int, resamples: int = 2000) -> tuple[float, float]:
    """(p_hold, p_violation) of one cell before the family correction."""
    if c.fixed is not None:
        return 1.0, 1.0
    xh = c.x if c.x_hold is None else c.x_hold
    xv = c.x if c.x_viol is None else c.x_viol

    def p(x, line, side):
        return one_sided_p(x, line, side, test, c.y, seed, resamples)

    if c.equal_margin is not None:
        m = c.equal_margin
        p_hold = max(p(xh, m, "less"), p(xh, -m, "greater"))
        above, below = p(xv, m, "greater"), p(xv, -m, "less")
        # Two directions share the violation level (Bonferroni), unless censoring leaves only one.
        p_viol = {"both": min(1.0, 2 * min(above, below)), "above": above, "below": below}[c.equal_sides]
    else:
        p_hold = p(xh, c.hold_line, c.hold_side)
        p_viol = p(xv, c.viol_line, c.viol_side)
    return (1.0 if c.block_hold else p_hold), (1.0 if c.block_viol else p_viol)


def _t_p_pairs(cells: list[_Cell]) -> np.ndarray:
    """Vectorised :func:`_p_pair` for one-sample t-tests (the common case; same numbers)."""
    m = np.array([np.mean(c.x) for c in cells])
    n = np.array([c.x.size for c in cells])
    sd = np.array([np.std(c.x, ddof=1) if c.x.size > 1 else 0.0 for c in cells])
    exact = (sd == 0) | (n < 2)
    se = np.where(exact, 1.0, sd / np.sqrt(np.maximum(n, 1)))
    df = np.maximum(n - 1, 1)

    def p(line, side):  # one-sided p of H0: mu >= line (side less) or mu <= line (greater), per cell
        sgn = np.where(side == "greater", 1.0, -1.0)
        z = sgn * (m - line)
        return np.where(exact, np.where(z > 0, 0.0, 1.0), stats.t.sf(z / se, df))

    out = np.ones((len(cells), 2))
    eq = np.array([c.equal_margin is not None for c in cells])
    M = np.array([c.equal_margin if c.equal_margin is not None else 0.0 for c in cells])
    hold_line = np.array([c.hold_line for c in cells])
    viol_line = np.array([c.viol_line for c in cells])
    hold_side = np.array([c.hold_side for c in cells])
    viol_side = np.array([c.viol_side for c in cells])
    less, greater = np.full(len(cells), "less"), np.full(len(cells), "greater")
    out[:, 0] = np.where(eq, np.maximum(p(M, less), p(-M, greater)), p(hold_line, hold_side))
    sides = np.array([c.equal_sides for c in cells])
    above, below = p(M, greater), p(-M, less)
    both = np.minimum(1.0, 2 * np.minimum(above, below))
    p_eq = np.where(sides == "above", above, np.where(sides == "below", below, both))
    out[:, 1] = np.where(eq, p_eq, p(viol_line, viol_side))
    out[[c.block_hold for c in cells], 0] = 1.0
    out[[c.block_viol for c in cells], 1] = 1.0
    return out


#: the power at which the report states what a claim could detect
POWER = 0.8


def _detectable(c: _Cell, a: float, test: str) -> float:
    """Shift of the truth past the violation line that one cell flags with probability :data:`POWER`.

    ``a`` is the one-sided level the cell's violation test meets when it is the only violated cell of
    the family (Holm's first step, alpha / m). In the units of ``x``; 0 for an exact cell (no spread:
    any departure past the line is flagged) and inf when the test cannot reject at ``a``. The t-test's
    shift is the usual (t_{1-a} + t_{POWER}) se (normal approximation of the noncentral t); the sign
    test's is sd * Phi^-1(q), q the smallest success probability at which Binom(n, q) reaches the
    critical count with probability POWER (a normal shift of the replicates).
    """
    if c.fixed is not None or c.x is None:
        return math.nan
    if c.equal_margin is not None and c.equal_sides == "both":
        a = a / 2  # the two sides share the violation level
    x = c.x if c.x_viol is None else c.x_viol
    if c.y is not None:
        _, sx, nx = _sample_stats(x)
        _, sy, ny = _sample_stats(c.y)
        va, vb = sx**2 / nx, sy**2 / ny
        se = math.sqrt(va + vb)
        if se == 0 or nx < 2 or ny < 2:
            return 0.0
        dof = (va + vb) ** 2 / ((va**2 / (nx - 1) if va else 0.0) + (vb**2 / (ny - 1) if vb else 0.0))
        return float((stats.t.isf(a, dof) + stats.t.isf(1 - POWER, dof)) * se)
    _, sd, n = _sample_stats(x)
    if sd == 0 or n < 2:
        return 0.0
    if test == "sign":
        ks = np.arange(n + 1)
        ok = stats.binom.sf(ks - 1, n, 0.5) <= a
        if not ok.any():
            return math.inf
        k = int(ks[ok][0])
        if stats.binom.sf(k - 1, n, 1 - 1e-12) < POWER:
            return math.inf
        from scipy.optimize import brentq

        q = brentq(lambda q: stats.binom.sf(k - 1, n, q) - POWER, 0.5, 1 - 1e-12)
        return float(sd * stats.norm.ppf(q))
    return float((stats.t.isf(a, n - 1) + stats.t.isf(1 - POWER, n - 1)) * sd / math.sqrt(n))


def _resamples(alpha: float, m: int) -> int:
    """Bootstrap resamples whose smallest p-value, 1/(B + 1), is a tenth of Holm's first level alpha/m."""
    return max(2000, math.ceil(10 * m / alpha))


def decide(cells: list[_Cell], alpha: float, test: str, seed: int = 0) -> list[tuple]:
    """Holm-corrected verdicts of a family of cells.

    Returns, per cell, ``(verdict, reason, per-cell alpha, interval of x, detectable shift)`` (the
    shift past the violation line flagged with probability :data:`POWER`, see :func:`_detectable`).
    """
    p = np.ones((len(cells), 2))
    n_live = sum(c.fixed is None for c in cells)
    resamples = _resamples(alpha, max(n_live, 1))
    fast = [i for i, c in enumerate(cells)
            if c.fixed is None and c.y is None and c.x_hold is None and c.x_viol is None and test == "t"]
    slow = [i for i, c in enumerate(cells) if c.fixed is None and i not in set(fast)]
    if fast:
        p[fast] = _t_p_pairs([cells[i] for i in fast])
    for i in slow:
        p[i] = _p_pair(cells[i], test, seed, resamples)
    live = np.array([c.fixed is None for c in cells])
    hold_rej = np.zeros(len(cells), bool)
    viol_rej = np.zeros(len(cells), bool)
    hold_thr = np.full(len(cells), math.nan)
    viol_thr = np.full(len(cells), math.nan)
    if live.any():
        r, t = holm(p[live, 0], alpha)
        hold_rej[live], hold_thr[live] = r, t
        r, t = holm(p[live, 1], alpha)
        viol_rej[live], viol_thr[live] = r, t
    level = np.where(viol_rej, viol_thr, hold_thr)
    ivals = {}
    if fast:  # vectorised t intervals (same numbers as _interval)
        xs = [cells[i].x for i in fast]
        m = np.array([np.mean(x) for x in xs])
        n = np.array([x.size for x in xs])
        sd = np.array([np.std(x, ddof=1) if x.size > 1 else 0.0 for x in xs])
        half = np.where((sd == 0) | (n < 2), 0.0,
                        stats.t.isf(level[fast], np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1)))
        ivals = {i: (float(mi), float(mi - h), float(mi + h)) for i, mi, h in zip(fast, m, half)}
    out = []
    for i, c in enumerate(cells):
        if c.fixed is not None:
            out.append((c.fixed, c.reason, math.nan, (math.nan, math.nan, math.nan), math.nan))
            continue
        a = level[i]
        est, lo, hi = ivals[i] if i in ivals else _interval(c.x, a, test, c.y, seed)
        if viol_rej[i] and not hold_rej[i]:
            v, why = Verdict.VIOLATED, c.reason or c.viol_text
        elif hold_rej[i] and not viol_rej[i]:
            v, why = Verdict.HOLDS, c.reason
        else:
            v, why = Verdict.INCONCLUSIVE, _why_inconclusive(c, est, lo, hi)
        out.append((v, why, float(a), (est, lo, hi), _detectable(c, alpha / max(n_live, 1), test)))
    return out


def _why_inconclusive(c: _Cell, est: float, lo: float, hi: float) -> str:
    if c.censored:
        return c.censored
    half = (hi - lo) / 2
    if c.equal_margin is not None:
        if half > c.equal_margin:
            return f"underpowered: CI half-width {half:.3g} > margin {c.equal_margin:.3g}"
        return "straddles the edge of the margin"
    gap = abs(c.viol_line - c.hold_line)  # non-strict: the tolerated departure; strict: none (one line)
    if gap > 0 and half > gap:
        return f"underpowered: CI half-width {half:.3g} > min_effect {c.effect:.3g}"
    # The estimate lies past the hold line but not past the violation line by a significant amount.
    past_hold = est >= c.hold_line if c.hold_side == "less" else est <= c.hold_line
    if gap > 0 and past_hold:
        return f"within min_effect {c.effect:.3g}"
    return "straddles: the CI contains the line"


# --------------------------------------------------------------------------------------------------
# selection and bounds


def _excluded_cells(claim: ClaimSpec, table: pd.DataFrame, kept: pd.DataFrame, design=None) -> int:
    if not claim.where:
        return 0
    rows = table[table["metric"] == claim.observable]
    by = _cells_by(rows, design)
    if not by:
        return 0
    return int(rows.groupby(by, dropna=False).ngroups - kept.groupby(by, dropna=False).ngroups)


def _select(claim: ClaimSpec, table: pd.DataFrame) -> pd.DataFrame:
    if "metric" not in table or "value" not in table:
        raise SpecError(f"claim {claim.id}: the results table has no 'metric'/'value' columns")
    rows = table[table["metric"] == claim.observable]
    if rows.empty:
        found = ", ".join(sorted(map(str, table["metric"].unique())))
        raise SpecError(f"claim {claim.id}: observable '{claim.observable}' is not among the metrics ({found})")
    for col, want in claim.where.items():
        if col not in rows:
            raise SpecError(f"claim {claim.id}: 'where' names column '{col}' that the table does not have")
        rows = rows[rows[col].isin(want if isinstance(want, list) else [want])]
    if rows.empty:
        raise SpecError(f"claim {claim.id}: no rows left after 'where' = {claim.where}")
    rows = rows.copy()
    if "replicate" not in rows:
        rows["replicate"] = 0
    rows["censored"] = rows["censored"].fillna(False).astype(bool) if "censored" in rows else False
    return rows


def _varying(rows: pd.DataFrame, exclude=()) -> list[str]:
    cols = [c for c in rows.columns if c not in _NON_PARAM and c not in exclude]
    return [c for c in cols if rows[c].nunique(dropna=False) > 1]


def _cells_by(rows: pd.DataFrame, design, exclude=()) -> list[str]:
    """Columns that define the judged cells: the design's, never a measurement's.

    ``design`` names the spec's parameters and the design columns the experiment emits inside a cell
    (:attr:`Experiment.columns`); those that vary split the cells. A column outside the design that
    is constant within every cell (a quantity derived from the parameters, e.g. the number of
    parameters of a model) describes the cells and is carried along for the table and the figure; one
    that varies within a cell (a measured norm, a hitting time) is a measurement and splits nothing.
    Without ``design`` (a bare table) every varying column defines the cells.
    """
    if design is None:
        return _varying(rows, exclude)
    design = set(design)
    by = [c for c in _varying(rows, exclude) if c in design]
    others = [c for c in _varying(rows, exclude) if c not in design]
    if not others:
        return by
    if by:
        within = rows.groupby(by, dropna=False)[others].nunique(dropna=False).max()
    else:
        within = rows[others].nunique(dropna=False)
    return by + [c for c in others if int(within[c]) <= 1]


def _groups(rows: pd.DataFrame, by: list[str]):
    if not by:
        yield {}, rows
        return
    for key, grp in rows.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key)), grp


@functools.lru_cache(maxsize=512)
def _signature(fn) -> inspect.Signature:
    return inspect.signature(fn)


def _bound_kwargs(fn, claim: ClaimSpec, row: dict) -> dict:
    sig = _signature(fn)
    kwargs = {}
    for name, p in sig.parameters.items():
        if name in claim.bound_args:
            kwargs[name] = claim.bound_args[name]
        elif name in row:
            value = row[name]
            kwargs[name] = value.item() if hasattr(value, "item") else value
        elif p.default is inspect.Parameter.empty:
            raise SpecError(
                f"claim {claim.id}: bound '{claim.bound}' needs '{name}', which is neither a parameter of the "
                f"cells nor a column of the rows; add it to [params] or [claim.bound_args]"
            )
    return kwargs


def _call_bound(fn, claim: ClaimSpec, row: dict, scale: float = 1.0) -> float:
    kwargs = _bound_kwargs(fn, claim, row)
    try:
        return scale * float(fn(**kwargs))
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        raise SpecError(f"claim {claim.id}: bound '{claim.bound}' cannot be evaluated at {kwargs}: {exc}") from None


def _notes(grp: pd.DataFrame) -> str:
    if "note" not in grp:
        return ""
    notes = sorted({str(n) for n in grp["note"].dropna() if str(n)})
    return "; ".join(notes[:3]) + (f" (+{len(notes) - 3} more)" if len(notes) > 3 else "")


def _bound_rows(rows: pd.DataFrame, fn, claim: ClaimSpec, bound_scale: float) -> np.ndarray:
    """The bound on every row, evaluated once per distinct combination of the columns it reads."""
    names = [n for n in _signature(fn).parameters if n in rows.columns and n not in claim.bound_args]
    if not names:
        return np.full(len(rows), _call_bound(fn, claim, {}, bound_scale))
    keys = list(rows[names].itertuples(index=False, name=None))
    memo = {}
    for key in keys:
        if key not in memo:
            memo[key] = _call_bound(fn, claim, dict(zip(names, key)), bound_scale)
    return np.array([memo[k] for k in keys], dtype=float)


def _split(labels: np.ndarray) -> list[np.ndarray]:
    """Positions of each distinct label, labels in sorted order, positions in row order."""
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]])
    return np.split(order, starts[1:])


def _per_replicate(values: np.ndarray, bounds: np.ndarray, censored: np.ndarray, replicates: np.ndarray):
    """Per replicate (sorted): mean observable, mean bound (of every row), censored flag."""
    groups = _split(replicates)
    return (np.array([float(np.mean(values[g])) for g in groups]),
            np.array([float(np.mean(bounds[g])) for g in groups]),
            np.array([bool(censored[g].any()) for g in groups]))


def _group_positions(rows: pd.DataFrame, by: list[str]):
    """``(params, positions)`` of each cell, in the order of :func:`_groups`."""
    if not by:
        yield {}, np.arange(len(rows))
        return
    gb = rows.groupby(by, sort=True, dropna=False)
    keys = list(gb.size().index)
    for key, pos in zip(keys, _split(gb.ngroup().to_numpy())):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key)), pos


def _log_or_fail(claim: ClaimSpec, v: np.ndarray, what: str, params: dict) -> np.ndarray:
    if np.any(v <= 0):
        raise SpecError(f"claim {claim.id}: scale = 'log' needs a positive {what}, got {v[v <= 0][0]:g} at "
                        f"{params or 'the only cell'}; use scale = 'linear'")
    return np.log(v)


def _bound_cell(claim: ClaimSpec, params: dict, v: np.ndarray, b: np.ndarray, cens: np.ndarray, note: str) -> _Cell:
    kind, log = claim.kind, claim.scale == "log"
    b_center = float(np.exp(np.mean(np.log(b)))) if log and np.all(b > 0) else float(np.mean(b))
    m = float(np.exp(np.mean(np.log(v)))) if log and np.all(v > 0) else float(np.mean(v))
    ratio = m / b_center if b_center != 0 else math.nan
    extra = {"n_rep": len(v), "mean": m, "bound": b_center, "ratio": ratio, "note": note}
    cell = _Cell(params, extra=extra)
    if not np.all(np.isfinite(b)):
        cell.fixed, cell.reason = Verdict.ILL_POSED, "the bound is not finite"
        return cell
    if not np.all(np.isfinite(v)):
        if kind == "lower" and np.all(np.isnan(v) | (v == np.inf)) and not np.any(np.isnan(v)):
            cell.fixed, cell.reason = Verdict.HOLDS, "+inf (diverged upwards) is above any finite lower bound"
        else:
            cell.fixed, cell.reason = Verdict.VIOLATED, "non-finite value (diverged)"
        return cell
    if log:
        x = _log_or_fail(claim, v, "observable", params) - _log_or_fail(claim, b, "bound", params)
        effect = math.log1p(claim.min_effect_rel)
        rounding = 0.0
        margin = math.log1p(claim.margin_rel) + (claim.margin_abs / b_center if b_center > 0 else 0.0)
        cell.to_value = lambda t: b_center * math.exp(t)
        cell.to_ratio = math.exp
    else:
        x = v - b
        effect = claim.min_effect_abs + claim.min_effect_rel * abs(b_center)
        rounding = claim.atol
        margin = claim.margin_abs + claim.margin_rel * abs(b_center)
        cell.to_value = lambda t: b_center + t
        cell.to_ratio = (lambda t: 1.0 + t / b_center) if b_center != 0 else None
    cell.x, cell.effect = x, effect
    if claim.strict:
        # "Below the bound by at least min_effect" (strict): one line, at the claimed gap plus rounding.
        # The CI below it holds; above it, the claimed gap is confidently not there: violated.
        line = rounding + effect
        gap = f" by at least {effect:.3g}" if effect > 0 else ""
        if kind == "upper":
            cell.hold_side, cell.hold_line, cell.viol_side, cell.viol_line = "less", -line, "greater", -line
            cell.viol_text = "not below the bound" + gap
        elif kind == "lower":
            cell.hold_side, cell.hold_line, cell.viol_side, cell.viol_line = "greater", line, "less", line
            cell.viol_text = "not above the bound" + gap
    elif kind in ("upper", "lower"):
        # Non-strict: the CI on the right side of the bound (up to rounding) holds; a departure is a
        # violation only when the CI lies past the bound by more than min_effect.
        more = f" by more than min_effect {effect:.3g}" if effect > 0 else ""
        if kind == "upper":
            cell.hold_side, cell.hold_line, cell.viol_side = "less", rounding, "greater"
            cell.viol_line = rounding + effect
            cell.viol_text = "above the bound" + more
        else:
            cell.hold_side, cell.hold_line, cell.viol_side = "greater", -rounding, "less"
            cell.viol_line = -rounding - effect
            cell.viol_text = "below the bound" + more
    if kind == "equal":
        cell.equal_margin = margin + rounding
        cell.viol_text = f"outside the margin {cell.equal_margin:.3g}" + (" (log scale)" if log else "")
    if cens.any():
        # A censored value is a lower bound on the truth (e.g. a hitting time that reached the
        # horizon): it can show that the truth is large, never that it is small. So it may support
        # only the conclusion "x above a line": for upper, a violation; for lower, a hold; for equal,
        # a violation above the band (never below it, never a hold).
        horizon = float(np.max(v[cens]))
        cell.censored = f"censored at {horizon:g} in {int(cens.sum())} of {len(v)} replicates"
        if kind == "upper":
            cell.block_hold = True
        elif kind == "lower":
            cell.block_viol = True
        else:
            cell.block_hold = True
            cell.equal_sides = "above"
    return cell


def _judge_bound(claim, rows, fn, bound_scale: float, cell_params=()) -> tuple[list[_Cell], list]:
    by = _cells_by(rows, cell_params)
    bounds = _bound_rows(rows, fn, claim, bound_scale)
    values = rows["value"].to_numpy(dtype=float)
    censored = rows["censored"].to_numpy(dtype=bool)
    replicates = rows["replicate"].to_numpy()
    cells = []
    for params, pos in _group_positions(rows, by):
        v, b, cens = _per_replicate(values[pos], bounds[pos], censored[pos], replicates[pos])
        cells.append(_bound_cell(claim, params, v, b, cens, _notes(rows.iloc[pos]) if "note" in rows else ""))
    return cells, by


def _fit_slope(x, y, space: str) -> float:
    lx = np.log(np.asarray(x, dtype=float))
    ly = np.asarray(y, dtype=float) if space == "logx" else np.log(np.asarray(y, dtype=float))
    return float(stats.linregress(lx, ly).slope)


def _judge_slope(claim, rows, fn, bound_scale: float, cell_params=()) -> tuple[list[_Cell], list]:
    by = _cells_by(rows, cell_params, exclude={claim.slope_in})
    cells = []
    for params, grp in _groups(rows, by):
        pred = _call_bound(fn, claim, grp.iloc[0].to_dict(), bound_scale)
        extra = {"n_points": int(grp[claim.slope_in].nunique()), "predicted": pred, "note": _notes(grp)}
        cell = _Cell(params, extra=extra, equal_margin=claim.slope_tol,
                     viol_text=f"slope outside predicted +- {claim.slope_tol:g}")
        cells.append(cell)
        if not math.isfinite(pred):
            cell.fixed, cell.reason = Verdict.ILL_POSED, "the predicted slope is not finite"
            continue
        slopes = []
        for _, g in grp.groupby("replicate", sort=True):
            per = g.groupby(claim.slope_in)["value"].mean()
            positive = claim.slope_space == "logx" or (per > 0).all()
            ok = len(per) >= 2 and np.all(np.isfinite(per.to_numpy())) and positive
            slopes.append(_fit_slope(per.index, per.to_numpy(), claim.slope_space) if ok else math.nan)
        slopes = np.array(slopes)
        if not np.all(np.isfinite(slopes)):
            cell.fixed = Verdict.ILL_POSED
            cell.reason = (f"{int(np.sum(~np.isfinite(slopes)))} replicate(s) with fewer than 2 finite positive "
                           "points: no slope")
            continue
        if grp["censored"].any():
            cell.fixed, cell.reason = Verdict.INCONCLUSIVE, "censored values: no slope"
            continue
        # One slope per replicate: the interval reflects replicate-to-replicate variation, never the
        # OLS standard error of one (possibly deterministic) curve, which would count misfit as noise.
        # A single replicate is compared without an interval (exact).
        cell.x = slopes - pred
        cell.to_value = lambda t, p=pred: p + t
        cell.to_ratio = (lambda t, p=pred: 1.0 + t / p) if pred != 0 else None
        m = float(np.mean(slopes))
        extra.update(mean=m, ratio=m / pred if pred != 0 else math.nan, n_rep=len(slopes))
    return cells, by


def _judge_order(claim, rows, paired: bool, swap: bool, lower_scale: float = 1.0,
                 cell_params=None) -> tuple[list[_Cell], list]:
    col = claim.compare
    if col not in rows:
        raise SpecError(f"claim {claim.id}: 'compare' names column '{col}' that the table does not have")
    lower, higher = claim.lower, tuple(claim.higher)
    values = set(rows[col].astype(str))
    for v in (lower, *higher):
        if v not in values:
            raise SpecError(f"claim {claim.id}: {col} = '{v}' does not occur in the table (found {sorted(values)})")
    by = _cells_by(rows, cell_params, exclude=(col,))
    log = claim.scale == "log"
    if lower_scale != 1.0:  # a negative control: the claimed-lower method made worse by a stated factor
        rows = rows.copy()
        rows.loc[rows[col].astype(str) == lower, "value"] *= lower_scale
    cells = []
    for params, grp in _groups(rows, by):
        key = grp[col].astype(str)
        for other in higher:
            first, second = (other, lower) if swap else (lower, other)
            a_g = grp[key == first].groupby("replicate", sort=True)
            b_g = grp[key == second].groupby("replicate", sort=True)
            a_s, b_s = a_g["value"].mean(), b_g["value"].mean()
            a_c, b_c = a_g["censored"].any(), b_g["censored"].any()
            pair = paired and a_s.index.equals(b_s.index)
            a, b = a_s.to_numpy(), b_s.to_numpy()
            ma, mb = float(np.mean(a)), float(np.mean(b))
            extra = {"other": second if not swap else first, "n_rep": int(min(len(a), len(b))), "mean": ma,
                     "other_mean": mb, "ratio": ma / mb if mb != 0 else math.nan, "note": _notes(grp)}
            _, extra["mean_lo"], extra["mean_hi"] = mean_ci(a)
            _, extra["other_lo"], extra["other_hi"] = mean_ci(b)
            cell = _Cell({**params}, extra=extra)
            cells.append(cell)
            fa, fb = np.all(np.isfinite(a)), np.all(np.isfinite(b))
            if not fa and not fb:
                cell.fixed, cell.reason = Verdict.ILL_POSED, "both sides non-finite (both diverged)"
                continue
            if not fb:
                cell.fixed, cell.reason = Verdict.ILL_POSED, f"the baseline ({second}) diverged"
                continue
            if not fa:
                cell.fixed, cell.reason = Verdict.VIOLATED, f"{first} diverged while {second} did not"
                continue
            if log:
                la = _log_or_fail(claim, a, "observable", params)
                lb = _log_or_fail(claim, b, "observable", params)
                effect = math.log1p(claim.min_effect_rel)
                margin = math.log1p(claim.margin_rel) + (claim.margin_abs / mb if mb > 0 else 0.0)
            else:
                la, lb = a, b
                effect = claim.min_effect_abs + claim.min_effect_rel * abs(mb)
                margin = claim.margin_abs + claim.margin_rel * abs(mb)
            cell.effect = effect
            if claim.kind == "equivalent":
                # Two-sided: holds when the CI of first - second lies inside +- margin, violated outside.
                cell.equal_margin = margin
                cell.viol_text = (f"{first} differs from {second} by more than the margin {margin:.3g}"
                                  + (" (log scale)" if log else ""))
            elif claim.strict:
                # Superiority "first below second by at least min_effect": one line at -min_effect.
                cell.hold_side, cell.viol_side = "less", "greater"
                cell.hold_line = cell.viol_line = -effect
                cell.viol_text = f"{first} not below {second}" + (f" by at least {effect:.3g}" if effect else "")
            else:
                # Non-inferiority "first at most second + min_effect": one line at +min_effect.
                cell.hold_side, cell.viol_side = "less", "greater"
                cell.hold_line = cell.viol_line = effect
                more = f" by more than min_effect {effect:.3g}" if effect else ""
                cell.viol_text = f"{first} above {second}{more}"
            if pair:
                cell.x = la - lb
                ca, cb = a_c.to_numpy(), b_c.to_numpy()
                censored = ca | cb
                if censored.any() and claim.kind == "equivalent":
                    cell.fixed = Verdict.INCONCLUSIVE
                    cell.reason = f"censored values in {int(censored.sum())} of {len(ca)} pairs: no two-sided interval"
                    continue
                if censored.any():
                    # A censored value is a lower bound on its side's truth: with first censored the
                    # truth of x = first - second is at least x (it can show x above a line, never
                    # below); with second censored it is at most x; with both, unknown. Each test sees
                    # only what it can use (a tie, at the line, counts for neither direction), by signs.
                    line = cell.hold_line
                    x = cell.x
                    cell.x_hold = np.where(cb & ~ca, x, np.where(ca, np.maximum(x, line), x))
                    cell.x_hold = np.where(ca & cb, line, cell.x_hold)
                    cell.x_viol = np.where(cb, np.minimum(x, line), x)
                    cell.x_viol = np.where(ca & cb, line, cell.x_viol)
                    cell.censored = f"censored values in {int(censored.sum())} of {len(x)} pairs: judged by signs"
                    cell.extra["test"] = "sign"
            else:
                if a_c.any() or b_c.any():
                    cell.fixed, cell.reason = Verdict.INCONCLUSIVE, "censored values in an unpaired comparison"
                    continue
                cell.x, cell.y = la, lb
            if log:
                cell.to_value = lambda t: math.exp(t)
                cell.to_ratio = cell.to_value
            else:
                cell.to_value = lambda t: t
                cell.to_ratio = (lambda t, mb=mb: 1.0 + t / mb) if mb != 0 else None
    return cells, by


def _tightest(kind: str, ratios: pd.Series) -> float:
    r = ratios[np.isfinite(ratios)] if len(ratios) else ratios
    if len(r) == 0:
        return math.nan
    if kind in ("upper", "order"):
        return float(r.max())
    if kind == "lower":
        return float(r.min())
    return float(r.iloc[int(np.argmax(np.abs(r.to_numpy() - 1.0)))])


def _claim_reason(cells: pd.DataFrame, verdict: Verdict) -> str:
    if verdict is Verdict.HOLDS:
        ill = cells[cells["verdict"] == Verdict.ILL_POSED.value]
        return f"{len(ill)} of {len(cells)} cells ill-posed" if len(ill) else ""
    bad = cells[cells["verdict"] == verdict.value]
    reasons = bad["reason"].replace("", "significant after Holm").value_counts()
    top = "; ".join(f"{r} ({n} cells)" if len(reasons) > 1 else r for r, n in reasons.head(2).items())
    return f"{len(bad)} of {len(cells)} cells: {top}"


def judge(claim: ClaimSpec, table: pd.DataFrame, cell_params=None, *, columns=(), bound_scale: float = 1.0,
          bound=None, swap: bool = False, lower_scale: float = 1.0, looks: int = 1) -> Judgement:
    """Judge ``claim`` on a long-format results table.

    Parameters
    ----------
    claim : ClaimSpec
    table : pandas.DataFrame
        Rows with ``metric``, ``value``, ``replicate`` and the cell parameters; optional
        ``censored`` (bool) and ``note``.
    cell_params : iterable of str, optional
        The spec's parameters (grid and fixed). With ``columns`` they are the design: the judged
        cells are their combinations, and every other column is a measurement (a bound argument
        that is not a parameter is evaluated on each row, never grouped by). An ``order`` or
        ``equivalent`` claim whose ``compare`` column is not a parameter was emitted inside each
        cell: its methods share replicate streams and are compared by paired differences;
        otherwise by Welch's interval. Without it (a bare table) every varying column is a cell
        parameter.
    columns : iterable of str
        Design columns the experiment emits inside a cell (:attr:`Experiment.columns`).
    bound_scale, bound, swap, lower_scale
        Negative controls: multiply the bound, judge against another ``"module:name"`` bound, swap
        ``lower`` with the first of ``higher``, or multiply the ``lower`` method's values.
    looks : int
        Planned looks at the data (adaptive replicates, fixed when the spec was loaded): each look
        is judged at ``alpha / looks``.

    Examples
    --------
    >>> import pandas as pd
    >>> from simcomm.spec import ClaimSpec
    >>> t = pd.DataFrame({"n": [4, 8], "metric": "rho", "value": [1 / 3, 0.5], "replicate": 0})
    >>> c = ClaimSpec(id="x", paper="expgraph", statement="", kind="equal", observable="rho",
    ...               bound="theory.expgraph:rho_bound_static_exponential", margin_abs=1e-12)
    >>> judge(c, t).verdict.value
    'holds'
    >>> judge(c, t, bound_scale=1.01).verdict.value
    'violated'
    """
    rows = _select(claim, table)
    design = None if cell_params is None else set(cell_params) | set(columns)
    if claim.kind in ("order", "equivalent"):
        cells, by = _judge_order(claim, rows, paired=claim.compare not in set(cell_params or ()), swap=swap,
                                 lower_scale=lower_scale, cell_params=design)
        provenance = claim.provenance or "?"
    else:
        fn = resolve(bound or claim.bound, f"claim {claim.id}")
        provenance = getattr(getattr(fn, "info", None), "provenance", claim.provenance or "?")
        judge_fn = _judge_slope if claim.kind == "slope" else _judge_bound
        cells, by = judge_fn(claim, rows, fn, bound_scale, design)
    alpha = (1 - claim.confidence) / max(looks, 1)
    seed = zlib.crc32(claim.id.encode())
    tests = {c.extra.get("test", claim.test) for c in cells}
    outcomes = []
    if len(tests) <= 1:
        outcomes = decide(cells, alpha, tests.pop() if tests else claim.test, seed)
    else:  # censored pairs switched some cells to signs: decide each test's cells, Holm over all
        outcomes = [None] * len(cells)
        for t in tests:
            idx = [i for i, c in enumerate(cells) if c.extra.get("test", claim.test) == t]
            for i, o in zip(idx, decide([cells[i] for i in idx], alpha * len(idx) / len(cells), t, seed)):
                outcomes[i] = o
    records = []
    for c, (v, why, a, (est, lo, hi), shift) in zip(cells, outcomes):
        rec = {**c.params, **c.extra}
        rec.pop("test", None)
        if c.to_value is not None and math.isfinite(lo):
            rec["ci_low"], rec["ci_high"] = c.to_value(lo), c.to_value(hi)
        else:
            rec.setdefault("ci_low", math.nan)
            rec.setdefault("ci_high", math.nan)
        rec.setdefault("mean", math.nan)
        rec.setdefault("ratio", math.nan)
        rec["verdict"], rec["reason"], rec["level"] = v.value, why, (1 - a) if math.isfinite(a) else math.nan
        rec["detect"] = _detect_ratio(c, shift)
        rec["exact"] = shift == 0.0 if math.isfinite(shift) else None
        records.append(rec)
    table_out = pd.DataFrame(records)
    verdict = worst(table_out["verdict"]) if len(table_out) else Verdict.INCONCLUSIVE
    return Judgement(claim, verdict, _tightest(claim.kind, table_out.get("ratio", pd.Series(dtype=float))),
                     table_out, provenance, by, _excluded_cells(claim, table, rows, design),
                     _claim_reason(table_out, verdict) if len(table_out) else "no cells",
                     detect=_claim_detect(table_out.get("detect", pd.Series(dtype=float))))


def _detect_ratio(c: _Cell, shift: float) -> float:
    """The ratio (as in the ``ratio`` column) at which the cell is flagged violated with probability POWER."""
    if c.to_ratio is None or not math.isfinite(shift) and not math.isinf(shift):
        return math.nan
    if math.isinf(shift):
        return math.inf
    if c.equal_margin is not None:
        t = c.equal_margin + shift if c.equal_sides != "below" else -(c.equal_margin + shift)
    else:
        t = c.viol_line + shift if c.viol_side == "greater" else c.viol_line - shift
    try:
        return float(c.to_ratio(t))
    except OverflowError:
        return math.inf


def _claim_detect(detect: pd.Series) -> float:
    """The least powered cell's detectable ratio: the one farthest from 1 (inf when a cell cannot reject)."""
    d = detect.to_numpy(dtype=float) if len(detect) else np.array([])
    d = d[~np.isnan(d)]
    if d.size == 0:
        return math.nan
    if np.isinf(d).any():
        return math.inf
    return float(d[np.argmax(np.abs(np.log(np.abs(d)) if np.all(d > 0) else np.abs(d - 1.0)))])
