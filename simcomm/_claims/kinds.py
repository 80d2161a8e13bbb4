"""Claim kinds: each owns its spec rules, its cells, its tightest ratio and what that ratio means.

A kind is one object in :data:`KINDS`; the spec validator, the judge, the report and the figures look
a claim's kind up there and never switch on its name. Adding a kind is one subclass of :class:`Kind`
(its rules, :meth:`Kind.cells` and :meth:`Kind.tightest`) registered with :func:`register`, and, for
its figure, one drawing registered in :mod:`simcomm.plotting`.
"""

from __future__ import annotations

import abc
import math

import numpy as np
import pandas as pd
from scipy import stats

from simcomm._claims.cells import (
    _bound_rows,
    _call_bound,
    _cells_by,
    _group_positions,
    _groups,
    _log_or_fail,
    _notes,
    _per_replicate,
)
from simcomm._claims.stats import Verdict, _Cell, mean_ci
from simcomm._errors import SpecError

__all__ = ["Kind", "KINDS", "register", "BoundKind", "SlopeKind", "MethodsKind"]


class Kind(abc.ABC):
    """A claim kind.

    Attributes
    ----------
    name : str
        The spec's ``kind``.
    ratio : str
        What the report's "tightest ratio" means for it.
    bound : bool
        Judged against a bound from ``theory`` (else two methods are compared).
    effect : {"min_effect", "margin", "slope_tol"}
        How the claim states its size: a minimum effect, an equivalence margin or a slope tolerance.
    """

    name = ""
    ratio = ""
    bound = True
    effect = "min_effect"

    def validate(self, table: dict, where: str, grid_axes: set) -> None:
        """Kind-specific keys of a ``[claim]`` table (raise :class:`SpecError` with one line)."""
        if self.bound and "bound" not in table:
            article = "an" if self.name[0] in "aeiou" else "a"
            raise SpecError(f"{where}: {article} '{self.name}' claim needs 'bound' = \"theory.module:function\"")
        if {"method", "versus"} & set(table) and self.name != "equivalent":
            raise SpecError(f"{where}: 'method'/'versus' name the methods of an 'equivalent' claim; a '{self.name}' "
                            "claim does not take them")

    def validate_size(self, table: dict, where: str) -> None:
        """How the claim states its size: the keys its kind takes (one line naming the right ones)."""
        if self.effect == "margin" and not (table.get("margin_rel", 0) > 0 or table.get("margin_abs", 0) > 0):
            raise SpecError(f"{where}: an '{self.name}' claim needs an equivalence margin: 'margin_rel' and/or "
                            "'margin_abs' > 0 (the largest deviation that still counts as equal; 'atol' is for "
                            "rounding only)")
        if self.effect != "margin" and ("margin_rel" in table or "margin_abs" in table):
            raise SpecError(f"{where}: a 'slope' claim states its margin as 'slope_tol'" if self.effect == "slope_tol"
                            else f"{where}: 'margin_rel'/'margin_abs' apply to 'equal' claims (and 'equivalent' "
                                 f"ones); a '{self.name}' claim states 'min_effect_rel'/'min_effect_abs'")
        if self.effect != "min_effect" and ("min_effect_rel" in table or "min_effect_abs" in table):
            raise SpecError(f"{where}: 'min_effect_*' applies to upper/lower/order claims; an '{self.name}' claim "
                            "states its margin instead")

    def check_control(self, control, where: str) -> None:
        """Refuse a control that changes what this kind does not have."""
        if (control.swap or control.lower_scale != 1.0) and self.bound:
            raise SpecError(f"{where}: control '{control.name}' swaps or scales methods, which only an 'order' "
                            "claim has")
        if (control.bound_scale != 1.0 or control.bound) and not self.bound:
            raise SpecError(f"{where}: control '{control.name}' changes the bound of an '{self.name}' claim, which "
                            "has none")

    def normalise(self, data: dict) -> dict:
        """The ``[claim]`` table as :class:`~simcomm.spec.ClaimSpec` fields."""
        return data

    @abc.abstractmethod
    def cells(self, claim, rows: pd.DataFrame, fn, design, paired: bool) -> tuple[list[_Cell], list]:
        """The claim's comparisons on its rows, and the columns that define them."""

    def tightest(self, ratios: pd.Series) -> float:
        """The tightest ratio over the cells (default: the one farthest from 1)."""
        r = _finite(ratios)
        return math.nan if len(r) == 0 else float(r.iloc[int(np.argmax(np.abs(r.to_numpy() - 1.0)))])


def _finite(ratios: pd.Series) -> pd.Series:
    return ratios[np.isfinite(ratios)] if len(ratios) else ratios


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add ``kind`` to :data:`KINDS` under its name."""
    KINDS[kind.name] = kind
    return kind


class BoundKind(Kind):
    """``upper``, ``lower``, ``equal``: the observable against a bound evaluated on every replicate row."""

    def __init__(self, name: str, ratio: str, effect: str = "min_effect", pick=None):
        self.name, self.ratio, self.effect, self._pick = name, ratio, effect, pick

    def cells(self, claim, rows, fn, design, paired):
        return _judge_bound(claim, rows, fn, claim.bound_scale, design)

    def tightest(self, ratios):
        r = _finite(ratios)
        if self._pick is None or len(r) == 0:
            return super().tightest(ratios)
        return float(self._pick(r))


class SlopeKind(Kind):
    """``slope``: the fitted log-log (or lin-log) slope of each replicate against a predicted slope."""

    name = "slope"
    ratio = "the fitted log-log (or lin-log) slope / predicted slope farthest from 1"
    effect = "slope_tol"

    def validate(self, table, where, grid_axes):
        super().validate(table, where, grid_axes)
        if "slope_in" not in table or "slope_tol" not in table:
            raise SpecError(f"{where}: a 'slope' claim needs 'slope_in' (a grid parameter) and 'slope_tol'")
        if table["slope_in"] not in grid_axes:
            from simcomm._errors import closest

            raise SpecError(f"{where}: slope_in '{table['slope_in']}' is not a grid axis"
                            f"{closest(table['slope_in'], grid_axes)}; grid axes: "
                            f"{', '.join(sorted(grid_axes)) or 'none'}")

    def cells(self, claim, rows, fn, design, paired):
        return _judge_slope(claim, rows, fn, claim.bound_scale, design)


class MethodsKind(Kind):
    """``order`` and ``equivalent``: one method's observable against others', paired per replicate."""

    bound = False

    def __init__(self, name: str, ratio: str, effect: str, keys: tuple, pick=None):
        self.name, self.ratio, self.effect, self._keys, self._pick = name, ratio, effect, keys, pick

    def validate(self, table, where, grid_axes):
        super().validate(table, where, grid_axes)
        if not {"compare", *self._keys} <= set(table):
            a, b = self._keys
            raise SpecError(f"{where}: an '{self.name}' claim needs 'compare', '{a}' and '{b}'"
                            + (" (the methods whose observable should agree with method's)"
                               if self.name == "equivalent" else ""))
        if self.name == "equivalent":
            if {"lower", "higher"} & set(table):
                raise SpecError(f"{where}: an 'equivalent' claim names its methods 'method' and 'versus', not "
                                "'lower'/'higher' (those are an 'order' claim's)")
            if "strict" in table:
                raise SpecError(f"{where}: 'strict' applies to upper/lower/order claims; an 'equivalent' claim is "
                                "two-sided (holds inside +- its margin, violated outside)")

    def normalise(self, data):
        if self.name == "equivalent":  # stored as the two sides of an order comparison
            data["lower"], data["higher"] = data.pop("method"), data.pop("versus")
        return data

    def cells(self, claim, rows, fn, design, paired):
        return _judge_order(claim, rows, paired=paired, swap=claim.swapped, cell_params=design)

    def tightest(self, ratios):
        r = _finite(ratios)
        if self._pick is None or len(r) == 0:
            return super().tightest(ratios)
        return float(self._pick(r))


def _bound_cell(claim, params: dict, v: np.ndarray, b: np.ndarray, cens: np.ndarray, note: str) -> _Cell:
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
        extra["censored_side"] = "above"  # the truth lies at or above the drawn value
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


def _judge_order(claim, rows, paired: bool, swap: bool, cell_params=None) -> tuple[list[_Cell], list]:
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
            # the drawn quantity is first - second (on a log scale first/second): a censored first side
            # is a lower bound on its truth, so the truth of the comparison lies above; second: below
            ca_any, cb_any = bool(a_c.any()), bool(b_c.any())
            if ca_any or cb_any:
                extra["censored_side"] = "unknown" if ca_any and cb_any else ("above" if ca_any else "below")
            if log:
                cell.to_value = cell.to_ratio = math.exp
            else:
                cell.to_value = lambda t: t
                cell.to_ratio = (lambda t, mb=mb: 1.0 + t / mb) if mb != 0 else None
            fa, fb = np.all(np.isfinite(a)), np.all(np.isfinite(b))
            if not (fa and fb):
                cell.fixed, cell.reason = _nonfinite(first, second, fa, fb, set(claim.reaches))
                # a side that never reached its target (or diverged) is larger than any finite value:
                # the comparison lies beyond the axis on that side (unknown when both sides miss)
                beyond = math.nan if not (fa or fb) else (math.inf if not fa else -math.inf)
                extra["estimate"] = cell.to_value(beyond)
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
            # the point drawn where the judge has no interval (a cell decided without a test)
            extra["estimate"] = cell.to_value(float(np.mean(la) - np.mean(lb)))
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
    return cells, by


def _nonfinite(first: str, second: str, fa: bool, fb: bool, reaches: set) -> tuple[Verdict, str]:
    """A pair with a non-finite side (a run that diverged or missed its target, e.g. a hitting time of NaN).

    ``first`` not finite while ``second`` is contradicts "first below second": violated. Otherwise a
    non-finite method that the statement does not say reaches the target (not in ``reaches``) puts
    the cell outside the question (ill-posed: the baseline diverged); when every non-finite method is
    one the statement says reaches it, the cell is violated, never dropped (no blind cells).
    """
    if not fa and fb:
        return Verdict.VIOLATED, f"{first} diverged while {second} did not"
    missing = [m for m, ok in ((first, fa), (second, fb)) if not ok]
    outside = [m for m in missing if m not in reaches]
    if outside:
        return Verdict.ILL_POSED, ("both sides non-finite (both diverged)" if len(missing) == 2
                                   else f"the baseline ({second}) diverged")
    return Verdict.VIOLATED, (f"{' and '.join(missing)} non-finite: missed the target the statement says "
                              f"{'they reach' if len(missing) == 2 else 'it reaches'}")


register(BoundKind("upper", "the largest empirical mean / bound over the cells (at most 1 when the bound holds)",
                   pick=lambda r: r.max()))
register(BoundKind("lower", "the smallest empirical mean / bound over the cells (at least 1 when the bound holds)",
                   pick=lambda r: r.min()))
register(BoundKind("equal", "the empirical mean / predicted value farthest from 1 over the cells (1 is exact "
                            "agreement)", effect="margin"))
register(SlopeKind())
register(MethodsKind("order", "the largest mean of the method claimed lower / mean of a competitor (below 1 when "
                              "the order holds)", "min_effect", ("lower", "higher"), pick=lambda r: r.max()))
register(MethodsKind("equivalent", "the mean of the method / mean of a competitor farthest from 1 (1 is exact "
                                   "agreement)", "margin", ("method", "versus")))
