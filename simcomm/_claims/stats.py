"""Statistics of a claim's cells: one-sided tests, Holm, intervals, power, the per-cell decision.

A cell reduces to a sample ``x`` of per-replicate differences (observable minus bound, or method minus
competitor; on ``scale = "log"`` differences of logs) and two lines: the *hold* test rejects "the claim
fails here", the *violation* test rejects "the claim holds here". :func:`decide` corrects each family
over the claim's cells with Holm's step-down procedure and states, per cell, the departure it would
flag with probability :data:`POWER`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


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
