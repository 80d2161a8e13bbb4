"""Judge a claim against a results table: confidence intervals over replicates, one verdict per cell.

Kinds (see ``sims/README.md``): ``upper``, ``lower``, ``equal`` (against a bound from ``theory``),
``slope`` (fitted log-log slope against a predicted slope), ``order`` (one method's observable below
another's). A claim's verdict is its worst cell: ``violated`` > ``inconclusive`` > ``holds``.
``inconclusive`` (the interval straddles the line) is reported as such, never rounded to a pass.
"""

from __future__ import annotations

import enum
import inspect
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from simcomm._errors import SpecError
from simcomm.spec import ClaimSpec, resolve

__all__ = ["Verdict", "Judgement", "judge", "mean_ci", "worst"]

_NON_PARAM = {"metric", "value", "replicate", "note"}


class Verdict(str, enum.Enum):
    """Outcome of a comparison; ordered from best to worst."""

    HOLDS = "holds"
    INCONCLUSIVE = "inconclusive"
    VIOLATED = "violated"


_RANK = {Verdict.HOLDS: 0, Verdict.INCONCLUSIVE: 1, Verdict.VIOLATED: 2}


def worst(verdicts) -> Verdict:
    """The worst of several verdicts (``holds`` when there are none)."""
    verdicts = [Verdict(v) for v in verdicts]
    return max(verdicts, key=_RANK.__getitem__) if verdicts else Verdict.HOLDS


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict with the per-cell numbers the report and the figure need.

    Attributes
    ----------
    claim : ClaimSpec
    verdict : Verdict
        The worst cell.
    ratio : float
        Tightest ratio empirical/bound (upper: max, lower: min, equal: farthest from 1, slope:
        fitted/predicted farthest from 1, order: max of lower/higher); NaN when undefined.
    cells : pandas.DataFrame
        One row per cell: its parameters, ``n_rep`` (replicates) or ``n_points`` (slope), ``mean``, ``ci_low``, ``ci_high``, ``bound`` (or
        ``predicted``/``other``), ``ratio``, ``verdict``, ``note``.
    provenance : str
        Tag of the bound (or of the claim when it has no bound).
    columns : list of str
        Parameters that vary between cells.
    """

    claim: ClaimSpec
    verdict: Verdict
    ratio: float
    cells: pd.DataFrame
    provenance: str
    columns: list
    excluded: int = 0

    def scope(self) -> str:
        """Words for the claim's ``where`` filter, e.g. "judged where period in [1, 4, 16]; 2 cells not judged"."""
        if not self.claim.where:
            return ""
        cond = ", ".join(f"{k} in {v}" if isinstance(v, list) else f"{k} = {v}" for k, v in self.claim.where.items())
        return f"judged where {cond}" + (f"; {self.excluded} measured cells outside it are not judged"
                                         if self.excluded else "")

    def summary(self) -> dict:
        """The ``--json`` object of this claim."""
        return {
            "id": self.claim.id, "paper": self.claim.paper, "kind": self.claim.kind,
            "verdict": self.verdict.value, "provenance": self.provenance,
            "ratio": None if not math.isfinite(self.ratio) else float(self.ratio),
            "n_cells": int(len(self.cells)),
        }


def mean_ci(values, confidence: float = 0.99) -> tuple[float, float, float]:
    """Mean and two-sided Student-t confidence interval; a single value gives a zero-width interval."""
    v = np.asarray(values, dtype=float)
    m = float(np.mean(v))
    if v.size < 2 or not np.all(np.isfinite(v)):
        return m, m, m
    half = stats.t.ppf(0.5 + confidence / 2, v.size - 1) * float(np.std(v, ddof=1)) / math.sqrt(v.size)
    return m, m - half, m + half


def _excluded_cells(claim: ClaimSpec, table: pd.DataFrame, kept: pd.DataFrame) -> int:
    """How many cells of the observable the claim's ``where`` leaves out (0 without ``where``)."""
    if not claim.where:
        return 0
    rows = table[table["metric"] == claim.observable]
    by = _varying(rows)
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
    return rows


def _varying(rows: pd.DataFrame, exclude=()) -> list[str]:
    cols = [c for c in rows.columns if c not in _NON_PARAM and c not in exclude]
    return [c for c in cols if rows[c].nunique(dropna=False) > 1]


def _groups(rows: pd.DataFrame, by: list[str]):
    if not by:
        yield {}, rows
        return
    for key, grp in rows.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key)), grp


def _call_bound(fn, claim: ClaimSpec, params: dict) -> float:
    sig = inspect.signature(fn)
    kwargs = {}
    for name, p in sig.parameters.items():
        if name in claim.bound_args:
            kwargs[name] = claim.bound_args[name]
        elif name in params:
            value = params[name]
            kwargs[name] = value.item() if hasattr(value, "item") else value
        elif p.default is inspect.Parameter.empty:
            raise SpecError(
                f"claim {claim.id}: bound '{claim.bound}' needs '{name}', which is not a parameter of the "
                f"cells; add it to [params] or [claim.bound_args]"
            )
    try:
        return float(fn(**kwargs))
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        raise SpecError(f"claim {claim.id}: bound '{claim.bound}' cannot be evaluated at {kwargs}: {exc}") from None


def _notes(grp: pd.DataFrame) -> str:
    if "note" not in grp:
        return ""
    notes = sorted({str(n) for n in grp["note"].dropna() if str(n)})
    return "; ".join(notes[:3]) + (f" (+{len(notes) - 3} more)" if len(notes) > 3 else "")


def _compare_bound(kind: str, lo: float, hi: float, b: float, claim: ClaimSpec) -> Verdict:
    """Verdict of one cell whose empirical CI is [lo, hi] against the bound value b."""
    slack = abs(b) * claim.rtol + claim.atol
    if kind == "upper":
        line = b - slack if claim.strict else b + slack
        if hi < line or (hi <= line and not claim.strict):
            return Verdict.HOLDS
        return Verdict.VIOLATED if lo >= line else Verdict.INCONCLUSIVE
    if kind == "lower":
        line = b + slack if claim.strict else b - slack
        if lo > line or (lo >= line and not claim.strict):
            return Verdict.HOLDS
        return Verdict.VIOLATED if hi <= line else Verdict.INCONCLUSIVE
    # equal. rtol > 0 declares a band of acceptable deviation: two one-sided tests, the interval must
    # lie inside b +- slack to hold and outside it to be violated; an interval wider than the band,
    # or straddling an edge, is inconclusive (noise never counts as agreement). rtol = 0 states an
    # exact identity, atol only absorbs floating-point rounding: it holds when the interval covers
    # b +- atol.
    if hi < b - slack or lo > b + slack:
        return Verdict.VIOLATED
    if claim.rtol == 0 or (b - slack <= lo and hi <= b + slack):
        return Verdict.HOLDS
    return Verdict.INCONCLUSIVE


def _judge_bound(claim, rows, fn) -> tuple[pd.DataFrame, list]:
    by = _varying(rows)
    out = []
    for params, grp in _groups(rows, by):
        first = grp.iloc[0].to_dict()
        b = _call_bound(fn, claim, {**first, **params})
        per_rep = grp.groupby("replicate")["value"].mean() if "replicate" in grp else grp["value"]
        m, lo, hi = mean_ci(per_rep.to_numpy(), claim.confidence)
        note = _notes(grp)
        if not (math.isfinite(m) and math.isfinite(b)):
            verdict, note = Verdict.VIOLATED, (note + "; " if note else "") + "non-finite value (diverged?)"
        else:
            verdict = _compare_bound(claim.kind, lo, hi, b, claim)
        ratio = m / b if b != 0 else math.nan
        out.append({**params, "n_rep": len(per_rep), "mean": m, "ci_low": lo, "ci_high": hi, "bound": b,
                    "ratio": ratio, "verdict": verdict.value, "note": note})
    return pd.DataFrame(out), by


def _fit_slope(x, y, space: str) -> tuple[float, float, int]:
    """OLS slope of log y (or y) on log x, its standard error and residual degrees of freedom."""
    lx = np.log(np.asarray(x, dtype=float))
    ly = np.asarray(y, dtype=float) if space == "logx" else np.log(np.asarray(y, dtype=float))
    res = stats.linregress(lx, ly)
    return float(res.slope), float(res.stderr), len(lx) - 2


def _judge_slope(claim, rows, fn) -> tuple[pd.DataFrame, list]:
    by = _varying(rows, exclude=(claim.slope_in,))
    out = []
    for params, grp in _groups(rows, by):
        first = grp.iloc[0].to_dict()
        pred = _call_bound(fn, claim, {**first, **params})
        means = grp.groupby(claim.slope_in)["value"].mean()
        note = _notes(grp)
        bad = (means <= 0).any() and claim.slope_space == "loglog"
        if len(means) < 2 or not np.all(np.isfinite(means)) or bad:
            out.append({**params, "n_points": len(means), "mean": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                        "predicted": pred, "ratio": math.nan, "verdict": Verdict.VIOLATED.value,
                        "note": note or "fewer than 2 finite positive points to fit a slope"})
            continue
        reps = grp["replicate"].unique() if "replicate" in grp else [0]
        if len(reps) >= 2:
            # One slope per replicate: the CI reflects replicate-to-replicate variation.
            slopes = []
            for _, g in grp.groupby("replicate"):
                per = g.groupby(claim.slope_in)["value"].mean()
                ok = np.all(np.isfinite(per.to_numpy())) and (claim.slope_space == "logx" or (per > 0).all())
                slopes.append(_fit_slope(per.index, per.to_numpy(), claim.slope_space)[0] if ok else math.nan)
            if not np.all(np.isfinite(slopes)):
                bad_reps = int(np.sum(~np.isfinite(slopes)))
                out.append({**params, "n_points": len(means), "mean": math.nan, "ci_low": math.nan,
                            "ci_high": math.nan, "predicted": pred, "ratio": math.nan,
                            "verdict": Verdict.VIOLATED.value,
                            "note": (note + "; " if note else "") + f"{bad_reps} replicate(s) with non-finite "
                                    "or non-positive values: no slope"})
                continue
            m, lo, hi = mean_ci(slopes, claim.confidence)
        else:
            m, se, dof = _fit_slope(means.index, means.to_numpy(), claim.slope_space)
            half = stats.t.ppf(0.5 + claim.confidence / 2, dof) * se if dof > 0 else 0.0
            lo, hi = m - half, m + half
        tol = claim.slope_tol
        if pred - tol <= lo and hi <= pred + tol:
            verdict = Verdict.HOLDS
        elif hi < pred - tol or lo > pred + tol:
            verdict = Verdict.VIOLATED
        else:
            verdict = Verdict.INCONCLUSIVE
        out.append({**params, "n_points": len(means), "mean": m, "ci_low": lo, "ci_high": hi, "predicted": pred,
                    "ratio": m / pred if pred != 0 else math.nan, "verdict": verdict.value, "note": note})
    return pd.DataFrame(out), by


def _judge_order(claim, rows, paired: bool) -> tuple[pd.DataFrame, list]:
    col = claim.compare
    if col not in rows:
        raise SpecError(f"claim {claim.id}: 'compare' names column '{col}' that the table does not have")
    values = set(rows[col].astype(str))
    for v in (claim.lower, *claim.higher):
        if v not in values:
            raise SpecError(f"claim {claim.id}: {col} = '{v}' does not occur in the table (found {sorted(values)})")
    by = _varying(rows, exclude=(col,))
    out = []
    for params, grp in _groups(rows, by):
        key = grp[col].astype(str)
        a_s = grp[key == claim.lower].groupby("replicate")["value"].mean()
        a = a_s.to_numpy()
        for other in claim.higher:
            b_s = grp[key == other].groupby("replicate")["value"].mean()
            b = b_s.to_numpy()
            pair = paired and len(a) >= 2 and a_s.index.equals(b_s.index)
            ma, mb = float(np.mean(a)), float(np.mean(b))
            note = _notes(grp)
            if not (math.isfinite(ma) and math.isfinite(mb)):
                # +inf on the 'higher' side (a diverged competitor) still orders; NaN never does.
                ok = ma < mb if not (math.isnan(ma) or math.isnan(mb)) else False
                verdict = Verdict.HOLDS if ok else Verdict.VIOLATED
                lo = hi = ma - mb
                note = (note + "; " if note else "") + "non-finite value (diverged?)"
            else:
                d = ma - mb
                if pair:
                    # Both methods ran in the same cell on the same replicate streams: the
                    # differences are paired (common random numbers), so their t-interval applies.
                    d, dlo, dhi = mean_ci(a - b, claim.confidence)
                    half = (dhi - dlo) / 2
                elif len(a) >= 2 and len(b) >= 2:
                    # Welch interval for the difference of means (valid paired or not).
                    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
                    se = math.sqrt(va + vb)
                    dof = (va + vb) ** 2 / ((va**2 / (len(a) - 1) if va else 0) + (vb**2 / (len(b) - 1) if vb else 0)) if se else 1
                    half = stats.t.ppf(0.5 + claim.confidence / 2, dof) * se
                else:
                    half = 0.0
                lo, hi = d - half - claim.atol, d + half + claim.atol
                if hi < 0:
                    verdict = Verdict.HOLDS
                elif lo > 0:
                    verdict = Verdict.VIOLATED
                else:
                    verdict = Verdict.INCONCLUSIVE
            _, a_lo, a_hi = mean_ci(a, claim.confidence)
            _, b_lo, b_hi = mean_ci(b, claim.confidence)
            out.append({**params, "other": other, "n_rep": min(len(a), len(b)), "mean": ma, "other_mean": mb,
                        "ci_low": lo, "ci_high": hi, "ratio": ma / mb if mb != 0 else math.nan,
                        "verdict": verdict.value, "note": note, "mean_lo": a_lo, "mean_hi": a_hi,
                        "other_lo": b_lo, "other_hi": b_hi})
    return pd.DataFrame(out), by


def _tightest(kind: str, ratios: pd.Series) -> float:
    r = ratios[np.isfinite(ratios)] if len(ratios) else ratios
    if len(r) == 0:
        return math.nan
    if kind in ("upper", "order"):
        return float(r.max())
    if kind == "lower":
        return float(r.min())
    return float(r.iloc[int(np.argmax(np.abs(r.to_numpy() - 1.0)))])


def judge(claim: ClaimSpec, table: pd.DataFrame, cell_params=()) -> Judgement:
    """Judge ``claim`` on a long-format results table.

    ``cell_params`` names the spec's parameters (grid and fixed). An ``order`` claim whose
    ``compare`` column is not one of them was emitted inside each cell, so its methods share
    replicate streams and are compared by paired differences; otherwise by Welch's interval.

    Examples
    --------
    >>> import pandas as pd
    >>> from simcomm.spec import ClaimSpec
    >>> t = pd.DataFrame({"n": [4, 8], "metric": "rho", "value": [1 / 3, 0.5], "replicate": 0})
    >>> c = ClaimSpec(id="x", paper="expgraph", statement="", kind="equal", observable="rho",
    ...               bound="theory.expgraph:rho_bound_static_exponential", atol=1e-12)
    >>> judge(c, t).verdict.value
    'holds'
    """
    rows = _select(claim, table)
    if claim.kind == "order":
        cells, by = _judge_order(claim, rows, paired=claim.compare not in set(cell_params))
        provenance = claim.provenance or "?"
    else:
        fn = resolve(claim.bound, f"claim {claim.id}")
        provenance = fn.info.provenance  # the spec may repeat it, never contradict it (checked at load)
        cells, by = (_judge_slope if claim.kind == "slope" else _judge_bound)(claim, rows, fn)
    verdict = worst(cells["verdict"]) if len(cells) else Verdict.INCONCLUSIVE
    return Judgement(claim, verdict, _tightest(claim.kind, cells["ratio"]), cells, provenance, by,
                     _excluded_cells(claim, table, rows))
