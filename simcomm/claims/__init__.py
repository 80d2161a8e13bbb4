"""Judge a claim against a results table: effect sizes, family-wise confidence, censoring, power.

Kinds (see ``sims/README.md`` and :mod:`simcomm._claims.kinds`): ``upper``, ``lower``, ``equal``
(against a bound from ``theory``, evaluated on every replicate row), ``slope`` (fitted log-log slope
against a predicted slope), ``order`` (one method's observable below another's) and ``equivalent``
(two methods' observables within a margin), the methods paired per cell when they share replicate
streams.

How a cell is decided. A cell is a combination of the design (the spec's parameters and the
experiment's declared design columns), never of measured columns. It reduces to a sample ``x`` of
per-replicate differences (observable minus bound, or method minus competitor; on ``scale = "log"``
differences of logs). Two one-sided tests are run on ``x``:

* the *hold* test rejects "the claim fails here" (for ``upper``: mean(x) >= 0);
* the *violation* test rejects "the claim holds here" (non-strict ``upper``: mean(x) <= min_effect, a
  tolerated departure; a strict claim "below by at least min_effect" has one line at -min_effect for
  both tests, so a claimed effect that is confidently absent is a violation).

Each family of tests is corrected over the claim's cells with Holm's step-down procedure at
``alpha = (1 - confidence) / looks``, the looks planned when the spec was loaded, so the probability
that a true claim is called violated anywhere is at most ``1 - confidence`` (measured on the check's
own path in ``tests/test_calibration.py``). A cell ``holds`` when its hold test rejects, is
``violated`` when its violation test rejects, otherwise ``inconclusive`` with the reason (straddles,
underpowered, within min_effect, censored). ``ill-posed`` marks cells where the question cannot be
asked (the bound is not finite, the baseline diverged). Each cell also states the ratio at which it
would be violated with probability 0.8 (``detect``).

A claim is ``violated`` if any cell is, else ``inconclusive`` if any cell is, else ``holds`` if any
cell holds, else ``ill-posed``; a claim that would hold with more than ``max_ill_posed`` (a fraction
stated in the spec, default 0.25) of its cells ill-posed is ``inconclusive``. An ``order`` or
``equivalent`` cell where a method named in the spec's ``reaches`` (the statement says it reaches the
observable's target) is non-finite is ``violated``, not ill-posed: no blind cells. A negative control
is a transformation of (claim, table) (:meth:`simcomm.spec.ControlSpec.transform`) applied before
this pure judge.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simcomm._claims.cells import _excluded_cells, _select
from simcomm._claims.kinds import KINDS, BoundKind, Kind, MethodsKind, SlopeKind, register
from simcomm._claims.stats import POWER, Verdict, _Cell, decide, holm, mean_ci, one_sided_p, worst
from simcomm.spec import ClaimSpec, ControlSpec, resolve

__all__ = ["Verdict", "Judgement", "judge", "holm", "one_sided_p", "mean_ci", "worst", "decide", "KINDS", "Kind",
           "register", "POWER", "BoundKind", "SlopeKind", "MethodsKind"]


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
        ``predicted``/``other``), ``ratio``, ``verdict``, ``reason``, ``note``; and what the figure draws:
        ``estimate`` (the point the interval is around, in the units of ``ci_low``/``ci_high``: the
        observable for a bound, the paired ratio (log scale) or difference of an order/equivalent
        claim, the slope; +-inf where a method never reached its target), ``line_low``/``line_high``
        (the decision lines, or the band's edges, in the same units) and ``censored_side`` ("" or
        where the truth lies from the drawn value when a value is censored: "above", "below",
        "unknown").
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
        the bound, the margin or the claimed effect); inf where a cell's test cannot reject at all, or
        only at a ratio at or below 0 (the observable would have to change sign).
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

    @classmethod
    def from_summary(cls, claim: ClaimSpec, summary: dict) -> "Judgement":
        """A judgement as recorded in ``verdicts.json`` (:meth:`summary`): its verdict and numbers, no cells.

        For tables of claims that a run did not re-judge (``check --full --readme`` with some claim ids).
        """
        def num(key):
            v = summary.get(key)
            return math.nan if v is None else float(v)

        detect = num("detect")
        if (summary.get("detect") is None and summary.get("detect_none")) or detect <= 0:
            detect = math.inf  # a recorded ratio at or below 0 is "none" (see _detect_ratio)
        cells = pd.DataFrame({"exact": [bool(summary.get("detect_exact", False))]})
        return cls(claim, Verdict(summary["verdict"]), num("ratio"), cells, summary.get("provenance", "?"), [],
                   reason=summary.get("reason", ""), detect=detect,
                   controls=tuple((c["name"], c["verdict"]) for c in summary.get("controls", ())))

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
            "n_cells": int(len(self.cells)), "class": self.claim.claim_class,
            "detect": None if not math.isfinite(self.detect) else float(self.detect),
            "detect_none": bool(math.isinf(self.detect)),
            "detect_exact": bool("exact" in self.cells and len(self.cells)
                                 and self.cells["exact"].fillna(True).astype(bool).all()),
            "controls": [{"name": n, "verdict": v} for n, v in self.controls],
        }



# --------------------------------------------------------------------------------------------------
# the judge


def _claim_reason(cells: pd.DataFrame, verdict: Verdict) -> str:
    if verdict is Verdict.HOLDS:
        ill = cells[cells["verdict"] == Verdict.ILL_POSED.value]
        return f"{len(ill)} of {len(cells)} cells ill-posed" if len(ill) else ""
    bad = cells[cells["verdict"] == verdict.value]
    reasons = bad["reason"].replace("", "significant after Holm").value_counts()
    top = "; ".join(f"{r} ({n} cells)" if len(reasons) > 1 else r for r, n in reasons.head(2).items())
    return f"{len(bad)} of {len(cells)} cells: {top}"


def judge(claim: ClaimSpec, table: pd.DataFrame, cell_params=None, *, columns=(), looks: int = 1,
          bound_scale: float = 1.0, bound=None, swap: bool = False, lower_scale: float = 1.0) -> Judgement:
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
    looks : int
        Planned looks at the data (adaptive replicates, fixed when the spec was loaded): each look
        is judged at ``alpha / looks``.
    bound_scale, bound, swap, lower_scale
        A negative control given by its knobs, the same as judging
        ``ControlSpec(...).transform(claim, table)``.

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
    if bound_scale != 1.0 or bound or swap or lower_scale != 1.0:
        claim, table = ControlSpec("knobs", bound_scale=bound_scale, bound=bound, swap=swap,
                                   lower_scale=lower_scale).transform(claim, table)
    kind = KINDS[claim.kind]
    rows = _select(claim, table)
    design = None if cell_params is None else set(cell_params) | set(columns)
    if kind.bound:
        fn = resolve(claim.bound, f"claim {claim.id}")
        provenance = getattr(getattr(fn, "info", None), "provenance", claim.provenance or "?")
    else:
        fn, provenance = None, claim.provenance or "?"
    cells, by = kind.cells(claim, rows, fn, design, paired=claim.compare not in set(cell_params or ()))
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
    records = [_record(c, o) for c, o in zip(cells, outcomes)]
    table_out = pd.DataFrame(records)
    verdict = worst(table_out["verdict"]) if len(table_out) else Verdict.INCONCLUSIVE
    reason = _claim_reason(table_out, verdict) if len(table_out) else "no cells"
    n_ill = int((table_out["verdict"] == Verdict.ILL_POSED.value).sum()) if len(table_out) else 0
    if verdict is Verdict.HOLDS and n_ill > claim.max_ill_posed * len(table_out):
        # Too few cells asked the question: the held ones cannot stand for the claim (no blind cells).
        verdict = Verdict.INCONCLUSIVE
        reason = (f"{n_ill} of {len(table_out)} cells ill-posed, more than max_ill_posed = "
                  f"{claim.max_ill_posed:g} of them; the other cells hold")
    return Judgement(claim, verdict, kind.tightest(table_out.get("ratio", pd.Series(dtype=float))),
                     table_out, provenance, by, _excluded_cells(claim, table, rows, design), reason,
                     detect=_claim_detect(table_out.get("detect", pd.Series(dtype=float))))


def _record(c: _Cell, outcome: tuple) -> dict:
    """One row of the judged cells' table."""
    v, why, a, (est, lo, hi), shift = outcome
    rec = {**c.params, **c.extra}
    rec.pop("test", None)
    if c.to_value is not None and math.isfinite(lo):
        rec["ci_low"], rec["ci_high"] = c.to_value(lo), c.to_value(hi)
    else:
        rec.setdefault("ci_low", math.nan)
        rec.setdefault("ci_high", math.nan)
    rec.setdefault("mean", math.nan)
    rec.setdefault("ratio", math.nan)
    if c.to_value is not None and math.isfinite(est):
        rec["estimate"] = c.to_value(est)
    rec.setdefault("estimate", math.nan)
    rec["line_low"], rec["line_high"] = _lines(c)
    rec.setdefault("censored_side", "")
    rec["verdict"], rec["reason"], rec["level"] = v.value, why, (1 - a) if math.isfinite(a) else math.nan
    rec["detect"] = _detect_ratio(c, shift)
    rec["exact"] = shift == 0.0 if math.isfinite(shift) else None
    return rec


def _lines(c: _Cell) -> tuple[float, float]:
    """The cell's decision lines in the units of its interval (``ci_low``, ``ci_high``), low then high.

    One-sided claims: the hold line and the violation line (equal when the claim has one line, e.g. a
    strict claim or an order claim); two-sided (equal, equivalent, slope): the band's edges. NaN when
    the cell was decided without a test and has no lines (a bound that is not finite, a diverged run).
    """
    if c.to_value is None or (c.x is None and c.fixed is not None and c.equal_margin is None):
        return math.nan, math.nan
    if c.equal_margin is not None:
        ends = (-c.equal_margin, c.equal_margin)
    else:
        ends = (c.hold_line, c.viol_line)
    try:
        lo, hi = sorted(float(c.to_value(t)) for t in ends)
    except (OverflowError, ValueError):
        return math.nan, math.nan
    return lo, hi


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
        r = float(c.to_ratio(t))
    except OverflowError:
        return math.inf
    # A ratio at or below 0 would need the observable to change sign against the bound (a share, a
    # norm, a threshold below zero): no value it can take is flagged at this spread, so none is
    # detectable, never a negative "ratio".
    return math.inf if r <= 0 else r


def _claim_detect(detect: pd.Series) -> float:
    """The least powered cell's detectable ratio: the one farthest from 1 (inf when a cell cannot reject)."""
    d = detect.to_numpy(dtype=float) if len(detect) else np.array([])
    d = d[~np.isnan(d)]
    if d.size == 0:
        return math.nan
    if np.isinf(d).any():
        return math.inf
    return float(d[np.argmax(np.abs(np.log(np.abs(d)) if np.all(d > 0) else np.abs(d - 1.0)))])
