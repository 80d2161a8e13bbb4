"""Figures for readers: bound against empirical value with confidence bands. Never saves files."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simcomm.claims import KINDS, BoundKind, Judgement, MethodsKind, SlopeKind, Verdict

__all__ = ["bound_vs_empirical", "paper_figure", "trace_figure", "sweep_figure", "sweep_axes", "advice_figure",
           "local_time_figure", "PAPER_COLORS", "PAPER_SIZES", "EMBED_TRUETYPE"]

_VERDICT_COLOR = {Verdict.HOLDS: "#1a7f37", Verdict.INCONCLUSIVE: "#9a6700", Verdict.VIOLATED: "#cf222e"}


def _label(params: dict) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in params.items())


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _title(j: Judgement, plot: dict) -> str:
    head = plot.get("title") or j.claim.statement
    ratio = "" if not math.isfinite(j.ratio) else f", tightest ratio {j.ratio:.3g}"
    return f"{head}\n{j.claim.id}: {j.verdict.value}{ratio} [{j.provenance}]"


def _pick_axes(j: Judgement, plot: dict, exclude=()) -> tuple[str | None, list[str]]:
    cols = [c for c in j.columns if c not in exclude]
    x = plot.get("x")
    if x is None or x not in cols:
        # The spec's x does not vary in this run (e.g. a quick grid with one n): fall back to the
        # first varying column, drawn as categories without the spec's axis label and log scale.
        x = cols[0] if cols else None
        for key in ("xlabel", "logx"):
            plot.pop(key, None)
    hue = [c for c in cols if c != x]
    # A column that the x axis and the other hue columns already determine (a statistic the bound
    # reads from the row, e.g. a graph's rho or noise sum) tells no series apart: leave it out.
    for c in reversed(list(hue)):  # the experiment's own columns (listed last) go first, the grid's stay
        rest = [x] + [h for h in hue if h != c] if x is not None else [h for h in hue if h != c]
        if c != plot.get("hue") and rest and len(j.cells) and \
                int(j.cells.groupby(rest, dropna=False)[c].nunique(dropna=False).max()) <= 1:
            hue.remove(c)
    if plot.get("hue") in hue:
        hue = [plot["hue"]] + [c for c in hue if c != plot["hue"]]
    return x, hue


def _series(cells: pd.DataFrame, hue: list[str]):
    if not hue:
        yield {}, cells
        return
    for key, grp in cells.groupby(hue, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(hue, key)), grp


def _scales(ax, plot: dict, y: np.ndarray) -> None:
    if plot.get("logx") and ax.xaxis.get_scale() == "linear" and not ax.xaxis.units:
        ax.set_xscale("log")
        xs = np.unique(np.concatenate([ln.get_xdata() for ln in ax.get_lines() if len(ln.get_xdata())] or [[]]))
        xs = xs[np.isfinite(xs.astype(float)) & (xs.astype(float) > 0)] if xs.size else xs
        if 1 < xs.size <= 12 and xs.max() / xs.min() < 1e4:
            # few x values spanning under four decades: label them plainly instead of 2x10^1, 3x10^1
            ax.set_xticks(xs, [f"{v:g}" for v in xs.astype(float)])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if _want_logy(plot, y):
        ax.set_yscale("log")


def _want_logy(plot: dict, y: np.ndarray) -> bool:
    """The spec's ``logy``, else log when the values are positive and span decades."""
    logy = plot.get("logy")
    if logy is None:  # log axes when the quantity spans decades and is positive
        y = np.asarray(y, dtype=float)
        pos = y[np.isfinite(y) & (y > 0)]
        # Spanning more than 8 decades means some values are zero up to rounding: stay linear.
        span = pos.max() / pos.min() if pos.size > 1 else 1.0
        logy = pos.size == y[np.isfinite(y)].size and 30 < span < 1e8
    return bool(logy)


def bound_vs_empirical(j: Judgement, plot: dict | None = None, context: Judgement | None = None, *,
                       style: str = "annotated"):
    """Draw a judgement: empirical means with CI bars next to the bound (or the compared method).

    Parameters
    ----------
    j : Judgement
        From :func:`simcomm.claims.judge`.
    plot : dict, optional
        The spec's ``[plot]`` table (``x``, ``hue``, ``logx``, ``logy``, ``xlabel``, ``ylabel``, ``title``).
    context : Judgement, optional
        The same claim judged without its ``where`` filter: cells outside the claim's range are drawn
        in grey (measured, not judged), so a reader sees where the statement stops holding.
    style : {"annotated", "paper"}
        ``annotated`` (the report's figure): verdict, claim id and flagged cells. ``paper``: the same
        data for a publication (see :func:`paper_figure`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if style == "paper":
        return paper_figure(j, plot)
    plot = dict(plot or {})
    # A Figure outside pyplot's registry: nothing to close, and a check drawing 40 figures does not
    # trip "More than 20 figures have been opened".
    fig = Figure(figsize=(7.2, 4.6), layout="constrained")
    ax = fig.subplots()
    cells = j.cells
    _drawing(j)[0](ax, j, plot, context)
    ax.set_title(_title(j, plot), fontsize=9.5, color=_VERDICT_COLOR[j.verdict], loc="left")
    ax.grid(True, which="major", alpha=0.3)
    own, own_labels = plot.pop("_legend", ([], []))
    extra, extra_labels = ax.get_legend_handles_labels()  # cell-state rings, order lines
    handles, labels = [*own, *extra], [*own_labels, *extra_labels]
    if len(handles) > 3 or any(len(t) > 45 for t in labels):
        # a long legend goes under the axes in columns: never over the data, never wider than the figure
        _legend_below(fig, handles, labels, fontsize=7.5)
    elif handles:
        ax.legend(handles, labels, fontsize=8, loc="best", framealpha=0.85)
    del cells
    return fig


def _errorbar(ax, x, m, lo, hi, color, label, marker="o", floor=None):
    """Means with interval bars, never a bar crossing zero on a log axis.

    On a log axis (``floor`` given) a bar reaching 0 or below stops at ``floor`` (the axis' bottom),
    with an arrow there. Returns whether any bar was cut.
    """
    m, lo, hi = (np.asarray(v, dtype=float) for v in (m, lo, hi))
    x = np.asarray(x)
    cut = np.zeros(m.shape, bool)
    if floor is not None:
        cut = np.isfinite(lo) & (lo <= 0) & (m > 0)
        lo = np.where(cut, floor, lo)
    ax.errorbar(x, m, yerr=_yerr(m, lo, hi), fmt=marker, ms=4, capsize=3, color=color, label=label, lw=1)
    if cut.any():
        ax.scatter(x[cut], np.full(int(cut.sum()), floor), marker="v", s=30, color=color, zorder=4, clip_on=False,
                   gid="clipped")
    return bool(cut.any())


def _merge_identical(series, x):
    """Series whose x and means are identical drawn once: ``[(params list, grp)]`` (the first group's data).

    Two series that coincide exactly (e.g. float16 and bfloat16 payloads of the same size, or twenty
    checks that are all 0) would hide one another; drawn once, with every name in one legend entry.
    """
    out = []
    for params, grp in series:
        key = (tuple(map(str, grp[x])) if x else len(grp), tuple(np.round(grp["mean"].to_numpy(float), 12)),
               tuple(np.round(grp["bound"].to_numpy(float), 12)) if "bound" in grp else ())
        for entry in out:
            if entry[0] == key:
                entry[1].append(params)
                break
        else:
            out.append((key, [params], grp))
    return [(plist, grp) for _, plist, grp in out]


def _group_label(plist: list, plot: dict) -> str:
    """Legend text of one drawn series standing for the parameter sets in ``plist``."""
    if len(plist) == 1:
        return _paper_label(plist[0], plot)
    if len(plist) > 4:
        cols = ", ".join(_sym(c, plot) for c in plist[0])
        return f"all {len(plist)} series ({cols}): identical"
    return " = ".join(_paper_label(p, plot) for p in plist) + " (identical)"


def _common(plist: list) -> dict:
    """The parameters that every set in ``plist`` shares."""
    first = plist[0]
    return {k: v for k, v in first.items() if all(str(p.get(k)) == str(v) for p in plist)}


def _plain_linear_ticks(ax) -> None:
    """Linear y ticks as plain numbers (``1e-12``, ``0.5``): no offset text floating above the axis."""
    if ax.get_yscale() == "linear":
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _p: f"{v:.3g}" if v else "0"))


def _log_ticks_at(ax, xs) -> None:
    """A log x axis with few values (spanning under four decades): ticks at exactly those values."""
    xs = np.unique(np.asarray(xs, dtype=float))
    xs = xs[np.isfinite(xs) & (xs > 0)]
    if ax.get_xscale() == "log" and 1 < xs.size <= 12 and xs.max() / xs.min() < 1e4:
        ax.set_xticks(xs, [f"{v:g}" for v in xs])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def _numeric_ticks(ax, xs) -> None:
    """Few numeric x values on a linear axis: ticks at exactly those values (N = 4, 8, not 4.5, 5.0 ...)."""
    xs = np.unique(np.asarray(xs, dtype=float)[np.isfinite(np.asarray(xs, dtype=float))])
    if ax.get_xscale() == "linear" and 1 < xs.size <= 12:
        ax.set_xticks(xs, [f"{v:g}" for v in xs])


def _draw_bound(ax, j: Judgement, plot: dict, context: Judgement | None = None) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    spec_xlabel = plot.get("xlabel")
    x, hue = _pick_axes(j, plot)
    handles, labels = [], []
    # the axis' scale first, so that an interval reaching 0 or below is cut at a log axis' bottom
    values = np.concatenate([j.cells[c].to_numpy(float) for c in ("mean", "bound") if c in j.cells] or [[]])
    floor = None
    if _want_logy(plot, values):
        ax.set_yscale("log")
        pos = np.concatenate([j.cells[c].to_numpy(float) for c in ("mean", "ci_low", "ci_high", "bound")
                              if c in j.cells])
        pos = pos[np.isfinite(pos) & (pos > 0)]
        floor = float(pos.min()) / 2 if pos.size else None
    clipped = False
    if context is not None and x in context.cells and x in j.cells:
        extra = context.cells[~context.cells[x].isin(j.cells[x])]
        if len(extra):
            clipped |= _errorbar(ax, extra[x].to_numpy(), extra["mean"].to_numpy(float),
                                 extra["ci_low"].to_numpy(float), extra["ci_high"].to_numpy(float), "#8c959f", None,
                                 marker="D", floor=floor)
            handles.append(Line2D([], [], color="#8c959f", marker="D", ls="none"))
            labels.append("measured outside the claim's range (not judged)")
    ys = []
    reps = int(j.cells["n_rep"].max()) if len(j.cells) else 1
    ci = f"family-wise {100 * j.claim.confidence:.4g}% CI, {reps} replicates" if reps > 1 else "one replicate"
    series = [(params, grp.sort_values(x) if x else grp) for params, grp in _series(j.cells, hue)]
    drawn = _merge_identical(series, x)
    categorical = x is not None and bool(series) and not all(
        np.issubdtype(np.asarray(g[x]).dtype, np.number) for _, g in series)
    # the bound curves: each distinct one once (a bound that ignores some hue columns is shared)
    curves: dict = {}
    for plist, grp in drawn:
        key = (tuple(map(str, grp[x])) if x else len(grp), tuple(np.round(grp["bound"].to_numpy(float), 12)))
        curves.setdefault(key, ([], grp))[0].extend(plist)
    one_curve = len(curves) == 1
    m = len(drawn)
    own_curves = m > 1 and len(curves) == m  # no two series share a bound
    colour_of = {id(grp): _series_style(i, m)["color"] for i, (_, grp) in enumerate(drawn)}
    word = f"{j.claim.kind} bound" if j.claim.kind in ("upper", "lower") else "prediction (equal claim)"
    marks = []  # (x, value, verdict, censored side) of every judged cell
    for i, (plist, grp) in enumerate(drawn):
        st = _series_style(i, m)
        xs = grp[x].to_numpy() if x else np.arange(len(grp))
        if x is not None and not categorical:  # series at one x drawn side by side, none hiding another
            xs = _dodge(xs, i, m, plot, j.cells[x].to_numpy(float))
        mean = grp["mean"].to_numpy(float)
        clipped |= _errorbar(ax, xs, mean, grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float),
                             st["color"], None, marker=st["marker"], floor=floor)
        if m > 1 or plist[0]:
            handles.append(Line2D([], [], color=st["color"], marker=st["marker"], ls="none"))
            labels.append(_group_label(plist, plot) if plist[0] else "empirical")
        side = grp["censored_side"] if "censored_side" in grp else pd.Series([""] * len(grp))
        pos_x = ax.xaxis.convert_units(xs) if categorical else xs
        marks.extend(zip(np.asarray(pos_x, dtype=float), mean, grp["verdict"], side.fillna("")))
        ys.append(mean)
    slack_any = tolerance_any = False
    bound_styles = ["--", ":", "-.", (0, (5, 1.5)), (0, (1, 1)), (0, (3, 1, 1, 1))]
    for ci_, (key, (plist, grp)) in enumerate(curves.items()):
        xs = grp[x].to_numpy() if x else np.arange(len(grp))
        b = grp["bound"].to_numpy(float)
        if own_curves:
            color, ls = colour_of.get(id(grp), "k"), "--"
        elif one_curve or len(curves) > len(bound_styles):
            color, ls = "k", "--"
        else:
            color, ls = "0.25", bound_styles[ci_ % len(bound_styles)]
        # the judge's band (equal) or violation line (upper/lower: past the bound by more than
        # min_effect), as the judge computed them for each cell
        b_lo, b_hi = (grp[c].to_numpy(float) if c in grp else np.full(len(b), np.nan)
                      for c in ("line_low", "line_high"))
        if not np.all(np.isfinite(b_lo)):  # a judgement without its lines (recorded before they were)
            slack = np.abs(b) * j.claim.margin_rel + j.claim.margin_abs + j.claim.atol
            b_lo, b_hi = (b - slack, b + slack) if j.claim.kind == "equal" else (b, b)
        band = j.claim.kind == "equal" and np.any(b_hi > b_lo)
        slack_any |= bool(band)
        tolerance = b_hi if j.claim.kind == "upper" else b_lo
        if j.claim.kind in ("upper", "lower") and np.any(np.abs(tolerance - b) > 1e-12 * np.abs(b)):
            tol_x = np.arange(len(xs)) if categorical else xs
            ax.plot(tol_x, tolerance, ls="none", marker="_", ms=10, mew=1.0, color=color, alpha=0.6)
            tolerance_any = True
        if len(b) == 1 and (len(drawn) == 1 or x is None):
            # one judged cell: a line through one point is invisible; draw the bound (and margin) across
            ax.axhline(b[0], ls=ls, color=color, lw=1.2)
            if band:
                ax.axhspan(b_lo[0], b_hi[0], color="0.5", alpha=0.15, lw=0)
            if x is None:  # no axis to read: the spec's x label names the cell
                ax.set_xticks([])
                plot["xlabel"] = spec_xlabel or "the one judged cell"
        elif categorical:
            # categories are not a continuum: a bar at each category, no line across them
            pos = np.arange(len(xs))
            ax.plot(pos, b, ls="none", marker="_", ms=22, mew=1.6, color=color)
            if band:
                for p_, lo_, hi_ in zip(pos, b_lo, b_hi):
                    ax.fill_between([p_ - 0.3, p_ + 0.3], lo_, hi_, color="0.5", alpha=0.15, lw=0)
        else:
            if len(b) > 1:
                ax.plot(xs, b, ls=ls, color=color, lw=1.2)
            # the bound at each judged cell: a bound read from the row (a witness computed from that
            # cell's parameters) is seen where it was evaluated, even for a series of one point
            ax.plot(xs, b, ls="none", marker="_", ms=14, mew=1.6, color=color)
            if band:
                ax.fill_between(xs, b_lo, b_hi, color="0.5", alpha=0.15, lw=0)
        if own_curves:  # every series has its own bound: drawn in the series' colour, one legend entry
            pass
        else:
            common = _common(plist) if not one_curve else {}
            tag = f" ({_paper_label(common, plot)})" if common else ""
            handles.append(Line2D([], [], color=color, ls="none" if categorical else ls,
                                  marker="_", ms=12, mew=1.6, lw=1.2))
            labels.append(f"{word}{tag}")
        ys.append(b)
    if own_curves:
        handles.append(Line2D([], [], color="0.3", ls="none" if categorical else "--",
                              marker="_", ms=12, mew=1.6, lw=1.2))
        labels.append(f"{'bars' if categorical else 'dashes'}: {word} of each series (its colour) at each cell")
    if slack_any:
        handles.append(Patch(color="0.5", alpha=0.15, lw=0))
        labels.append("equivalence margin")
    if tolerance_any:
        handles.append(Line2D([], [], ls="none", marker="_", ms=10, mew=1.0, color="0.25", alpha=0.6))
        sign = "plus" if j.claim.kind == "upper" else "minus"
        labels.append(f"thin dashes: violated only past these (the bound {sign} min_effect)")
    if m == 1 and not drawn[0][0][0]:  # one unnamed series: the header entry carries its marker
        st = _series_style(0, 1)
        handles.insert(0, Line2D([], [], color=st["color"], marker=st["marker"], ls="none"))
    else:
        handles.insert(0, Line2D([], [], color="0.3", marker="o", ls="none", ms=0))
    labels.insert(0, f"markers: empirical mean ({ci})")
    mapping = getattr(ax.xaxis.get_units(), "_mapping", None) if categorical else None
    if mapping:  # category names as plain text ("minmax-uint8, bucket = 100"), not raw labels
        ax.set_xticks(list(mapping.values()), [_value_text(x, k, plot) for k in mapping])
    _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
    if clipped:
        ax.set_ylim(bottom=floor)
        handles.append(Line2D([], [], marker="v", ls="none", color="0.3", ms=6))
        labels.append("interval reaching 0 or below: cut at the log axis' bottom")
    _cell_marks(ax, marks, False, None, handles, labels)
    plot["_legend"] = (handles, labels)
    if x is not None and not categorical:
        _numeric_ticks(ax, j.cells[x].to_numpy(float))
        _log_ticks_at(ax, j.cells[x].to_numpy(float))
    if ax.get_xscale() == "log":
        _plain_log_ticks(ax.xaxis)
    if ax.get_yscale() == "log":
        _plain_log_ticks(ax.yaxis)
    _plain_linear_ticks(ax)
    ax.set_xlabel(plot.get("xlabel", x or "cell"))
    ax.set_ylabel(plot.get("ylabel", j.claim.observable))


_STATE_MARK = {  # verdict -> (marker, colour, legend text); holds is the plain error bar
    Verdict.VIOLATED.value: ("X", "#cf222e", "violated"),
    Verdict.INCONCLUSIVE.value: ("o", "#9a6700", "inconclusive"),
    Verdict.ILL_POSED.value: ("s", "#6e7781", "ill-posed"),
}


def _cell_ticks(ax, pos, labels: list[str]) -> None:
    """One tick per cell; many or long labels slant and end at their tick, so neighbours do not overlap."""
    slant = len(labels) > 3 or max(map(len, labels), default=0) > 24
    ax.set_xticks(pos, labels, rotation=30 if slant else 0, ha="right" if slant else "center",
                  rotation_mode="anchor" if slant else "default", fontsize=8)


def _draw_slope(ax, j: Judgement, plot: dict) -> None:
    # The figure shows the fitted slope per group against the prediction, with its CI.
    x, hue = _pick_axes(j, plot)
    cells = j.cells.reset_index(drop=True)
    labels = [_paper_label({c: r[c] for c in j.columns}, plot) or "all" for _, r in cells.iterrows()]
    pos = np.arange(len(cells))
    _errorbar(ax, pos, cells["mean"].to_numpy(float), cells["ci_low"].to_numpy(float),
              cells["ci_high"].to_numpy(float), "#0969da",
              f"fitted slope (family-wise {100 * j.claim.confidence:.4g}% CI)")
    tol = j.claim.slope_tol
    for i, p in enumerate(cells["predicted"].to_numpy(float)):
        ax.fill_between([i - 0.3, i + 0.3], p - tol, p + tol, color="#8c959f", alpha=0.35,
                        label=f"predicted $\\pm$ {tol:g}" if i == 0 else None)
        ax.plot([i - 0.3, i + 0.3], [p, p], "k--", lw=1)
    _cell_ticks(ax, pos, labels)
    space = "log-log" if j.claim.slope_space == "loglog" else "lin-log"
    ax.set_xlim(-0.7, len(cells) - 0.3)
    ylabel = plot.get("ylabel", j.claim.observable)
    if "slope" not in ylabel:  # the axis holds slopes: a label naming only the observable would misread
        ylabel = f"{space} slope of {ylabel} in {_sym(j.claim.slope_in, plot)}"
    ax.set_ylabel(ylabel)
    del x, hue


def _draw_methods(ax, j: Judgement, plot: dict) -> None:
    """An order or equivalent claim as the judge tests it: the paired ratio or difference per cell.

    Per cell, the paired ratio (log scale) or difference of the two methods with the judge's interval,
    against the decision line or the equivalence band. The numbers are the judge's own (``estimate``,
    ``ci_low``/``ci_high``, ``line_low``/``line_high``, ``censored_side``, ``verdict``), so the figure
    cannot disagree with the verdict. Series (one per
    competitor and group) are dodged sideways with their own colour and marker; categorical x values
    are not joined by lines.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    claim, cells = j.claim, j.cells
    log = claim.scale == "log"
    compare = claim.compare or "method"
    lower = _value_text(compare, claim.lower, plot)
    x, hue = _pick_axes(j, plot, exclude=("other",))
    keys = (["other"] if len(claim.higher) > 1 else []) + hue
    series = [(params, grp.sort_values(x) if x else grp) for params, grp in _series(cells, keys)]
    m = len(series)
    categorical = x is None or not pd.api.types.is_numeric_dtype(cells[x])
    levels = list(dict.fromkeys(cells[x].tolist())) if x is not None else None
    if x is None:  # no axis varies: each competitor at its own position
        levels = list(dict.fromkeys(cells["other"].astype(str)))
    neutral = 1.0 if log else 0.0
    if log:
        ax.set_yscale("log")
    handles, labels = [], []
    finite = []
    rows = []  # (xpos, estimate, verdict, censored side) of every drawn cell
    for i, (params, grp) in enumerate(series):
        st = _series_style(i, m)
        if x is None:
            pos = np.array([levels.index(str(v)) for v in grp["other"]], dtype=float)
        elif categorical:
            pos = np.array([levels.index(v) for v in grp[x]], dtype=float)
        else:
            pos = grp[x].to_numpy(float)
        if categorical:
            xs = pos + ((i - (m - 1) / 2) * 0.6 / m if m > 1 else 0.0)
        else:
            xs = np.asarray(_dodge(pos, i, m, plot, cells[x].to_numpy(float)), dtype=float)
        est = grp["estimate"].to_numpy(float)
        lo, hi = grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float)
        ok = np.isfinite(est)
        mfc = "white" if i % 2 else st["color"]
        if ok.any():
            ax.errorbar(xs[ok], est[ok], yerr=_yerr(est[ok], lo[ok], hi[ok]), fmt=st["marker"], ms=5, capsize=3,
                        lw=1.1, color=st["color"], mfc=mfc, mew=1.1, zorder=3,
                        ls=st["ls"] if not categorical and ok.sum() > 1 else "none")
        finite.extend(v for v in (*est[ok], *lo[np.isfinite(lo)], *hi[np.isfinite(hi)]))
        other = params.get("other")
        name = f"{lower} / " if log else f"{lower} \u2212 "
        name += _value_text(compare, other if other is not None else claim.higher[0], plot) \
            if len(claim.higher) == 1 or other is not None else "other"
        rest = {k: v for k, v in params.items() if k != "other"}
        handles.append(Line2D([], [], color=st["color"], marker=st["marker"], mfc=mfc, mew=1.1,
                              ls=st["ls"] if not categorical else "none"))
        labels.append(name + (f", {_paper_label(rest, plot)}" if rest else ""))
        rows.extend(zip(xs, est, grp["verdict"], grp.get("censored_side", pd.Series([""] * len(grp)))))
    # the decision line (order) or the equivalence band, from the judge's cells
    line_lo, line_hi = cells["line_low"].to_numpy(float), cells["line_high"].to_numpy(float)
    finite.extend(v for v in (*line_lo, *line_hi) if np.isfinite(v))
    band = claim.kind == "equivalent"
    lines = np.concatenate([line_lo, line_hi])
    lines = lines[np.isfinite(lines)]
    same = lines.size and np.allclose(line_lo[np.isfinite(line_lo)], line_lo[np.isfinite(line_lo)][0], rtol=1e-9) \
        and np.allclose(line_hi[np.isfinite(line_hi)], line_hi[np.isfinite(line_hi)][0], rtol=1e-9)
    if lines.size:
        what = ("equivalence band: holds inside, violated outside" if band
                else "decision line: holds below, violated above")
        if same and band:
            ax.axhspan(np.nanmin(line_lo), np.nanmax(line_hi), color="0.5", alpha=0.18, lw=0, zorder=0)
            handles.append(Patch(color="0.5", alpha=0.18, lw=0))
        elif same:
            ax.axhline(float(np.nanmax(line_hi)), color="k", ls="--", lw=1.2, zorder=1)
            handles.append(Line2D([], [], color="k", ls="--", lw=1.2))
        else:  # the line depends on the cell (a relative effect of a linear difference): one at each cell
            xs_all = np.array([r[0] for r in rows], dtype=float)
            order = _cell_order(cells, series)
            if band:
                ax.vlines(xs_all, line_lo[order], line_hi[order], color="0.5", alpha=0.25, lw=9, zorder=0)
                handles.append(Line2D([], [], color="0.5", alpha=0.25, lw=9))
            else:
                ax.plot(xs_all, line_hi[order], ls="none", marker="_", ms=16, mew=1.6, color="k", zorder=2)
                handles.append(Line2D([], [], color="k", ls="none", marker="_", ms=12, mew=1.6))
            what += " (at each cell)"
        labels.append(what)
        if not np.any(np.isclose(lines, neutral, rtol=1e-9, atol=1e-15)):
            ax.axhline(neutral, color="0.55", ls=":", lw=1.0, zorder=0)
            handles.append(Line2D([], [], color="0.55", ls=":", lw=1.0))
            labels.append("no difference" if not log else "ratio 1 (no difference)")
    _limits(ax, finite, log)
    _cell_marks(ax, rows, log, neutral, handles, labels)
    reps = int(cells["n_rep"].max()) if "n_rep" in cells and len(cells) else 1
    what = "paired ratio" if log else "paired difference"
    ci = f"the judge's interval (family-wise {_pct(claim.confidence)}, {reps} replicates)" if reps > 1 \
        else "one replicate"
    handles.insert(0, Line2D([], [], color="0.3", marker="o", ls="none", ms=0))
    labels.insert(0, f"markers: {what} per cell with {ci}")
    if categorical:
        names = [_value_text(compare, v, plot) for v in levels] if x is None else \
            [_value_text(x, v, plot) for v in levels]
        ax.set_xticks(range(len(levels)), names)
        ax.set_xlim(-0.6, len(levels) - 0.4)
    else:
        if plot.get("logx") and np.all(cells[x].to_numpy(float) > 0):
            ax.set_xscale("log")
        _numeric_ticks(ax, cells[x].to_numpy(float))
        _log_ticks_at(ax, cells[x].to_numpy(float))
        if ax.get_xscale() == "log":
            _plain_log_ticks(ax.xaxis)
    if log:
        _plain_log_ticks(ax.yaxis)
    _plain_linear_ticks(ax)
    ax.set_xlabel(plot.get("xlabel", x) if x is not None else compare)
    obs = claim.observable.replace("_", " ")
    ax.set_ylabel(f"{obs}: {lower} / other (paired ratio)" if log else f"{obs}: {lower} \u2212 other (paired)")
    plot["_legend"] = (handles, labels)


def _cell_order(cells: pd.DataFrame, series) -> np.ndarray:
    """Positions in ``cells`` of the rows of ``series`` in drawing order."""
    return np.concatenate([cells.index.get_indexer(grp.index) for _, grp in series]) if series else np.array([], int)


def _yerr(m, lo, hi) -> np.ndarray:
    """Error bar lengths below and above ``m`` (0 where the interval is unknown)."""
    m, lo, hi = (np.asarray(v, dtype=float) for v in (m, lo, hi))
    return np.vstack([np.nan_to_num(np.clip(m - lo, 0, None)), np.nan_to_num(np.clip(hi - m, 0, None))])


def _limits(ax, values, log: bool) -> None:
    """y limits around the finite (positive, on a log axis) values, with room for the edge markers."""
    v = np.asarray([float(t) for t in values], dtype=float)
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    if not v.size:
        return
    lo, hi = v.min(), v.max()
    if log:
        span = max(np.log10(hi / lo), 0.2)
        ax.set_ylim(lo / 10 ** (0.12 * span), hi * 10 ** (0.12 * span))
    else:
        pad = 0.12 * (hi - lo) if hi > lo else max(abs(hi) * 0.1, 1e-12)
        ax.set_ylim(lo - pad, hi + pad)


_ARROW = dict(arrowstyle="-|>", lw=1.2, mutation_scale=9)


def _cell_marks(ax, rows, log: bool, neutral: float, handles, labels) -> None:
    """State rings, censored arrows, and the cells without a finite value, each kind once in the legend.

    ``rows`` holds ``(x, value, verdict, censored side)`` per drawn cell. A censored value gets an
    arrow from its marker in the direction where the truth lies; a value beyond the axis (a method
    that never reached its target: ratio +inf) sits on the axis' edge with an arrow out of it; a cell
    without any value (ill-posed, both sides missed) sits on the no-difference line.
    """
    from matplotlib.lines import Line2D

    shown: set = set()
    edge = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for xv, y, verdict, side in rows:
        y = float(y)
        marker, color, text = _STATE_MARK.get(verdict, (None, None, None))
        if np.isinf(y) or (log and y == 0):
            top = y > 0
            yf = 0.93 if top else 0.07
            ax.annotate("", xy=(xv, 1.0 if top else 0.0), xytext=(xv, yf), xycoords=edge, textcoords=edge,
                        arrowprops=dict(_ARROW, color=color or "k"), annotation_clip=False).set_gid("beyond")
            ax.scatter([xv], [yf], transform=edge, s=60, marker=marker or "o", color=color or "k", zorder=5,
                       clip_on=False, gid=verdict)
            shown.add("beyond")
            shown.add(verdict)
            continue
        at = {}
        if not np.isfinite(y):  # no value at all: on the no-difference line (else the bottom edge)
            y, at = (neutral, {}) if neutral is not None else (0.04, dict(transform=edge, clip_on=False))
            shown.add("novalue")
        if marker is not None:
            ax.scatter([xv], [y], s=110, marker=marker, facecolors="none" if marker != "X" else color,
                       edgecolors=color, lw=1.5, zorder=5, alpha=0.85, gid=verdict, **at)
            shown.add(verdict)
        if at:
            continue
        if side:
            up = {"above": 24, "below": -24}.get(side)
            for dy in ([up] if up is not None else [24, -24]):  # from the marker towards the truth
                ax.annotate("", xy=(xv, y), xytext=(0, dy), textcoords="offset points",
                            arrowprops=dict(_ARROW, color="0.2", arrowstyle="<|-"),
                            annotation_clip=False).set_gid("censored")
            shown.add("censored")
    for state, (marker, color, text) in _STATE_MARK.items():
        if state in shown:
            handles.append(Line2D([], [], marker=marker, ls="none", ms=9, mfc="none" if marker != "X" else color,
                                  mec=color, mew=1.5))
            labels.append(f"cell {text}" + (": the question cannot be asked here" if state == "ill-posed" else ""))
    if "censored" in shown:
        handles.append(Line2D([], [], marker="$\\uparrow$", ls="none", ms=10, color="0.2"))
        labels.append("censored (a run hit the horizon): the truth lies where the arrow points")
    if "beyond" in shown:
        handles.append(Line2D([], [], marker="$\\Uparrow$", ls="none", ms=10, color="0.2"))
        labels.append("no finite value (never reached the target or diverged): beyond the axis")
    if "novalue" in shown:
        if neutral is None:
            handles.append(Line2D([], [], ls="none"))
            labels.append("cells without a value: on the bottom edge")
        else:
            handles.append(Line2D([], [], color="0.55", ls=":", lw=1.0))
            labels.append(f"cells without a value: on the line at {neutral:g}")


# ------------------------------------------------------------------------------------------ paper style
#: Okabe & Ito's colour-blind-safe palette (yellow last: it is faint on white)
PAPER_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
_PAPER_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_PAPER_LINES = ("-", "--", "-.", ":", (0, (5, 1.5)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2.5)), (0, (7, 2, 1, 2)))
#: default symbols for parameter names the papers write as symbols (a spec's [plot] labels wins)
_SYMBOLS = {
    "n": "$n$", "d": "$d$", "k": "$k$", "r": "$r$", "s": "$s$", "p": "$p$", "N": "$N$", "K": "$K$",
    "tau": r"$\tau$", "alpha": r"$\alpha$", "beta": r"$\beta$", "lr": r"$\gamma$", "mu": r"$\mu$",
    "kappa": r"$\kappa$", "sigma2": r"$\sigma^2$", "sigma": r"$\sigma$", "rho": r"$\rho$", "eps": r"$\varepsilon$",
    "nnz": "nonzeros", "r_over_k": "$r/k$", "period": "refresh period", "step": "step", "hidden": "hidden units",
    "smoothing_rel": "smoothing $c$ / mean norm",
}
# Columns whose values name things (a method, a dataset): the legend shows the value alone.
_WORDS = {"method", "dataset", "topology", "quantizer", "problem", "proposal", "case", "axis", "order", "pair",
          "direction", "vector", "nodes", "compressor", "scheme"}


#: figure widths (inches) of a paper figure: one column or the full page of a two-column layout (IEEE, ACM)
PAPER_SIZES = {"single": 3.5, "double": 7.16}
#: the fonts of a paper figure: the size of a caption's text at a column's width
_PAPER_RC = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
             "legend.fontsize": 7, "lines.markersize": 4, "lines.linewidth": 1.0, "errorbar.capsize": 2,
             "pdf.fonttype": 42, "ps.fonttype": 42}
#: what a file written from any simcomm figure embeds: TrueType (Type 42) fonts, never Type 3 (IEEE, ACM)
EMBED_TRUETYPE = {"pdf.fonttype": 42, "ps.fonttype": 42}


def _paper_size(size: str | None) -> float:
    from simcomm._errors import UserError

    size = size or "single"
    if size not in PAPER_SIZES:
        raise UserError(f"size '{size}' is unknown; use one of {', '.join(PAPER_SIZES)} "
                        f"({', '.join(f'{k}: {v} in' for k, v in PAPER_SIZES.items())})")
    return PAPER_SIZES[size]


def _sym(col: str, plot: dict) -> str:
    lab = plot.get("labels", {}).get(col)
    if isinstance(lab, str):
        return lab
    return _SYMBOLS.get(col, col.replace("_", " "))


def _value_text(col: str, v, plot: dict) -> str:
    lab = plot.get("labels", {}).get(col)
    if isinstance(lab, dict):
        for key in (str(v), _fmt(v)):
            if key in lab:
                return lab[key]
    v = v.item() if hasattr(v, "item") else v
    text = f"{v:.3g}" if isinstance(v, float) else _fmt(v)  # a label, not a record: three digits
    if isinstance(v, str):
        # a value naming a parameter (axis = "alpha") reads as its symbol; other words keep their text
        name, paren, rest = text.partition("(")
        if paren and rest.endswith(")"):  # a label with settings, "rtop_k(r_over_k=2)" -> "rtop-k, r/k = 2"
            parts = [p.partition("=") for p in rest[:-1].split(",")]
            return ", ".join([name.strip().replace("_", "-"),
                              *(f"{_SYMBOLS.get(k.strip(), k.strip().replace('_', ' '))} = {val.strip()}"
                                for k, _, val in parts)])
        return _SYMBOLS[v] if v in _SYMBOLS and v != "step" else text.replace("_", "-")
    return text


def _wrap(text: str, width: int = 70) -> str:
    """Wrap a title at spaces outside ``$...$`` (mathtext must stay on one line)."""
    lines, cur = [], ""
    for word in text.split(" "):
        inside = cur.count("$") % 2 == 1
        if cur and not inside and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return "\n".join([*lines, cur])


def _paper_label(params: dict, plot: dict) -> str:
    r"""Legend text a reader decodes without the code: "$\sigma^2$ = 0", "digits", "rand-k"."""
    parts = []
    for col, v in params.items():
        lab = plot.get("labels", {}).get(col)
        if isinstance(lab, dict) or (col in _WORDS and not isinstance(lab, str)) or isinstance(v, str) and not lab:
            parts.append(_value_text(col, v, plot))
        else:
            parts.append(f"{_sym(col, plot)} = {_value_text(col, v, plot)}")
    return ", ".join(parts)


def _pct(c: float) -> str:
    """0.99 -> "99%", 0.999 -> "99.9%" (never rounded up to 100%)."""
    return f"{c:.1%}".replace(".0%", "%")


def _style(i: int) -> dict:
    return dict(color=PAPER_COLORS[i % len(PAPER_COLORS)], marker=_PAPER_MARKERS[i % len(_PAPER_MARKERS)],
                ls=_PAPER_LINES[i % len(_PAPER_LINES)])


def _paper_ylim(ax, values) -> None:
    """Clip a log axis to the data's informative range.

    Values more than 12 decades below the largest are zero up to floating-point rounding (double
    precision carries ~16 digits, and squared errors reach 1e-32 when the floor vanishes); drawing
    them would spend most of the axis on noise, so they sit at the bottom edge with an arrow.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if ax.get_yscale() != "log" or v.size < 2:
        return
    top = v.max()
    floor = top * 1e-12
    if v.min() >= floor:
        return
    informative = v[v >= floor]
    bottom = 10 ** (np.floor(np.log10(informative.min())) - 0.5)
    ax.set_ylim(bottom, 10 ** (np.ceil(np.log10(top)) + 0.2))
    ax.annotate("values below the axis are 0 up to rounding", xy=(0.99, 0.01), xycoords="axes fraction",
                fontsize=7, color="0.35", va="bottom", ha="right")


def _paper_legend(ax, fig, handles=None, labels=None) -> None:
    h, lab = ax.get_legend_handles_labels() if handles is None else (handles, labels)
    if not h:
        return
    if len(h) > 5:  # under the axes in columns: never over the data, never wider than the figure
        _legend_below(fig, h, lab, fontsize=7.5)
    else:
        ax.legend(h, lab, fontsize=8, loc="best", frameon=False)


def _finish_paper_axes(ax, plot: dict, x: str | None, ylabel: str) -> None:
    ax.set_xlabel(plot.get("xlabel") or (_sym(x, plot) if x else ""))
    ax.set_ylabel(plot.get("ylabel") or ylabel)
    ax.grid(True, which="major", alpha=0.25, lw=0.6)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def paper_figure(j: Judgement, plot: dict | None = None, *, size: str | None = None):
    r"""The data of :func:`bound_vs_empirical` drawn for a publication.

    No verdict or claim id in the title (the spec's ``title`` only, when given); axis labels from the
    spec's ``xlabel``/``ylabel`` (the paper's symbols), legend labels from ``[plot] labels`` or
    default symbols (``sigma2`` -> :math:`\sigma^2`); Okabe-Ito colours with a line style AND a
    marker per series, so the figure reads in greyscale; log axes clipped to the informative range;
    several groups of an order claim drawn as one panel each, so no curve hides another. The figure
    is ``size`` wide (:data:`PAPER_SIZES`: ``"single"`` column, 3.5 in, the default, or ``"double"``,
    7.16 in; a several-panel order figure takes the double width) with 7-8 pt fonts. Save it with
    ``matplotlib.rc_context(EMBED_TRUETYPE)`` (the command line does) for TrueType fonts in a PDF.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plot = dict(plot or {})
    width = _paper_size(size)
    with matplotlib.rc_context(_PAPER_RC):
        fig = _drawing(j)[1](j, {**plot, "_width": width})
        if plot.get("title"):
            fig.suptitle(_wrap(plot["title"], 45 if width < 5 else 70), fontsize=8.5)
    return fig


def _paper_bound(ax, fig, j: Judgement, plot: dict) -> None:
    from matplotlib.lines import Line2D

    x, hue = _pick_axes(j, plot)
    series = [(params, grp.sort_values(x) if x else grp) for params, grp in _series(j.cells, hue)]
    drawn = _merge_identical(series, x)
    curves: dict = {}
    for plist, grp in drawn:
        key = (tuple(map(str, grp[x])) if x else len(grp), tuple(np.round(grp["bound"].to_numpy(float), 12)))
        curves.setdefault(key, ([], grp))[0].extend(plist)
    m = len(drawn)
    shared = m > 1 and len(curves) < m  # some series share a bound: each distinct bound drawn once, in black
    reps = int(j.cells["n_rep"].max()) if len(j.cells) else 1
    categorical = bool(series) and x is not None and not all(
        np.issubdtype(np.asarray(g[x]).dtype, np.number) for _, g in series)
    # categories are not a continuum: the bound is a bar at each category, not a line across them
    bound_style = dict(marker="_", ms=22, mew=1.6, ls="none") if categorical else {}
    ys, handles, labels = [], [], []
    for i, (plist, grp) in enumerate(drawn):
        st = _series_style(i, m)
        xs = grp[x].to_numpy() if x else np.arange(len(grp))
        mean = grp["mean"].to_numpy(float)
        yerr = np.vstack([np.clip(mean - grp["ci_low"].to_numpy(float), 0, None),
                          np.clip(grp["ci_high"].to_numpy(float) - mean, 0, None)])
        b = grp["bound"].to_numpy(float)
        # measured: markers with CI bars; bound: a line in the series' own style (or black, shared)
        ax.errorbar(xs, mean, yerr=yerr, fmt=st["marker"], color=st["color"], ms=5, capsize=2.5, lw=1, zorder=3,
                    mfc="white" if i % 2 else st["color"], mew=1.2)
        if not shared:
            ax.plot(xs, b, color=st["color"], lw=1.3, zorder=2, **({"ls": st["ls"]} | bound_style))
        alone = shared or m == 1 or categorical
        handles.append(Line2D([], [], color=st["color"], marker=st["marker"], ls="none" if alone else st["ls"],
                              mfc="white" if i % 2 else st["color"], mew=1.2))
        labels.append(_group_label(plist, plot) or "measured")
        ys.extend([mean, b])
    ci = f"{_pct(j.claim.confidence)} CI" if reps > 1 else "one run"
    word = "bound" if j.claim.kind in ("upper", "lower") else "prediction"
    black = ["-", "--", ":", "-."]
    if shared:
        for c_i, (plist, grp) in enumerate(curves.values()):
            xs = grp[x].to_numpy() if x else np.arange(len(grp))
            ls = black[c_i % len(black)] if len(curves) <= len(black) else "-"
            ax.plot(xs, grp["bound"].to_numpy(float), color="k", lw=1.2, zorder=2, **({"ls": ls} | bound_style))
            common = _common(plist) if len(curves) > 1 else {}
            if c_i < len(black) or len(curves) <= len(black):
                handles.append(Line2D([], [], color="k", lw=1.2, **({"ls": ls} | bound_style)))
                labels.append(f"{word} ({_paper_label(common, plot)})" if common else word)
    if m == 1:
        handles.append(Line2D([], [], color=_style(0)["color"], lw=1.3, **({"ls": _style(0)["ls"]} | bound_style)))
        labels.append(word)
        many = len(drawn[0][0]) > 1
        labels[0] = f"measured (mean, {ci})" + (f": {_group_label(drawn[0][0], plot)}" if many else "")
    else:
        handles.append(Line2D([], [], color="0.4", marker="o", ls="none"))
        labels.append(f"markers: measured (mean, {ci})")
        if not shared:
            handles.append(Line2D([], [], color="0.4", **({"ls": "-"} | bound_style)))
            labels.append(f"{'bars' if categorical else 'lines'}: {word}")
    _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
    _paper_ylim(ax, np.concatenate(ys) if ys else [])
    if x is not None and not categorical:
        _numeric_ticks(ax, np.concatenate([np.asarray(g[x], dtype=float) for _, g in drawn]))
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            _plain_log_ticks(axis)
    _plain_linear_ticks(ax)
    _finish_paper_axes(ax, plot, x, j.claim.observable.replace("_", " "))
    _paper_legend(ax, fig, handles, labels)


def _paper_slope(ax, j: Judgement, plot: dict) -> None:
    cells = j.cells.reset_index(drop=True)
    labels = [_paper_label({c: r[c] for c in j.columns}, plot) or "all" for _, r in cells.iterrows()]
    pos = np.arange(len(cells))
    m = cells["mean"].to_numpy(float)
    yerr = np.vstack([np.clip(m - cells["ci_low"].to_numpy(float), 0, None),
                      np.clip(cells["ci_high"].to_numpy(float) - m, 0, None)])
    ax.errorbar(pos, m, yerr=yerr, fmt="o", color=PAPER_COLORS[0], ms=5, capsize=3, lw=1,
                label=f"fitted slope ({_pct(j.claim.confidence)} CI)")
    tol = j.claim.slope_tol
    for i, p in enumerate(cells["predicted"].to_numpy(float)):
        ax.fill_between([i - 0.3, i + 0.3], p - tol, p + tol, color="0.85", lw=0,
                        label=f"predicted slope $\\pm$ {tol:g}" if i == 0 else None)
        ax.plot([i - 0.3, i + 0.3], [p, p], color="k", lw=1.2)
    _cell_ticks(ax, pos, labels)
    ax.set_xlim(-0.7, len(cells) - 0.3)
    space = "log-log" if j.claim.slope_space == "loglog" else "lin-log"
    _finish_paper_axes(ax, {k: v for k, v in plot.items() if k != "xlabel"}, None,
                       f"{space} slope in {_sym(j.claim.slope_in, plot)}")
    ax.legend(fontsize=8, frameon=False, loc="best")


def _paper_order(j: Judgement, plot: dict):
    """One panel per group (e.g. per dataset), each method in its own colour, marker and line style."""
    x, hue = _pick_axes(j, plot, exclude=("other",))
    groups = list(_series(j.cells, hue)) if x is not None else [({}, j.cells)]
    rest: list = []
    if len(groups) > 4:  # too many panels: the first hue column becomes panels, the rest are line styles
        first, rest = hue[:1], hue[1:]
        groups = list(_series(j.cells, first))
    subkeys = [k for k, _ in _series(j.cells, rest)] if rest else [{}]
    ncols = len(groups)
    width = plot.get("_width")
    if width is None:
        fig = Figure(figsize=(min(3.4 * ncols + 1.6, 12), 3.5), layout="constrained")
    else:  # a paper figure: one column for one panel, the page width for several
        width = width if ncols == 1 else PAPER_SIZES["double"]
        fig = Figure(figsize=(width, 2.6 if ncols > 1 else width * 0.72), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, ncols, sharey=True, squeeze=False)[0])
    methods = [j.claim.lower, *j.claim.higher]
    handles = {}
    ys = []
    reps = int(j.cells["n_rep"].max()) if "n_rep" in j.cells and len(j.cells) else 1
    ci = f"mean, {_pct(j.claim.confidence)} CI" if reps > 1 else None
    for ax, (params, grp) in zip(axes, groups):
        if x is None:
            _paper_order_single(ax, j, grp, plot, handles)
            _finish_paper_axes(ax, {k: v for k, v in plot.items() if k != "xlabel"}, None,
                               j.claim.observable.replace("_", " "))
            if ci:
                ax.set_title(ci, fontsize=8, color="0.35", loc="right")
            continue
        for si, (skey, sgrp) in enumerate(_series(grp, rest) if rest else [({}, grp)]):
            for mi, method in enumerate(methods):
                st = _style(mi)
                if rest:  # a second grouping inside the panel: its own line style and marker per value
                    st = dict(st, ls=_PAPER_LINES[si % len(_PAPER_LINES)],
                              marker=_PAPER_MARKERS[si % len(_PAPER_MARKERS)])
                if mi == 0:
                    g = sgrp.drop_duplicates(subset=[x]).sort_values(x)
                    m, lo, hi = (g[c].to_numpy(float) for c in ("mean", "mean_lo", "mean_hi"))
                else:
                    g = sgrp[sgrp["other"] == method].sort_values(x)
                    m, lo, hi = (g[c].to_numpy(float) for c in ("other_mean", "other_lo", "other_hi"))
                if g.empty:
                    continue
                yerr = np.vstack([np.clip(m - lo, 0, None), np.clip(hi - m, 0, None)])
                k = si * len(methods) + mi
                h = ax.errorbar(_dodge(g[x].to_numpy(), k, len(methods) * len(subkeys), plot), m, yerr=yerr,
                                color=st["color"], marker=st["marker"], ls=st["ls"],
                                ms=5, capsize=2.5, lw=1.3, mfc="white" if mi % 2 else st["color"], mew=1.2)
                if not rest:
                    handles.setdefault(method, h)
                ys.append(m)
        if rest:
            from matplotlib.lines import Line2D

            for mi, method in enumerate(methods):
                handles.setdefault(method, Line2D([], [], color=_style(mi)["color"], lw=2.5))
            for si, skey in enumerate(subkeys):
                handles.setdefault(("__sub", si), Line2D([], [], color="0.35", ls=_PAPER_LINES[si % len(_PAPER_LINES)],
                                                         marker=_PAPER_MARKERS[si % len(_PAPER_MARKERS)], lw=1.3))
        if np.issubdtype(np.asarray(grp[x]).dtype, np.number):
            _numeric_ticks(ax, grp[x].to_numpy())
        if params:
            ax.set_title(_paper_label(params, plot), fontsize=9)
        _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
        _finish_paper_axes(ax, plot, x, j.claim.observable.replace("_", " "))
        if ax is not axes[0]:
            ax.set_ylabel("")
    if ys:
        _paper_ylim(axes[0], np.concatenate(ys))
    names = [_paper_label(subkeys[m[1]], plot) if isinstance(m, tuple) else
             _value_text(j.claim.compare or "method", m, plot) for m in handles]
    if names and x is not None:  # (one cell: the methods are the tick labels, no legend needed)
        head = None if j.claim.compare in _WORDS else _sym(j.claim.compare, plot)
        title = "\n".join(t for t in (head, f"({ci})" if ci else None) if t)
        axes[-1].legend(list(handles.values()), names, fontsize=8, frameon=False, loc="upper left",
                        bbox_to_anchor=(1.02, 1.0), title=title or None, title_fontsize=7.5)
    return fig


def _dodge(xs, i: int, m: int, plot: dict, axis=None):
    """Shift series ``i`` of ``m`` sideways a little, so equal means and their CI bars stay visible.

    The shift is a fraction of the span of ``axis`` (every x value drawn; default ``xs``), measured in
    decades on a log x axis.
    """
    xs = np.asarray(xs)
    if m < 2 or not np.issubdtype(xs.dtype, np.number) or xs.size == 0:
        return xs
    ref = np.asarray(xs if axis is None else axis, dtype=float)
    step = i - (m - 1) / 2
    width = min(0.02, 0.08 / m)  # many series: the whole fan stays within about 8% of the axis
    if plot.get("logx") and np.all(xs > 0) and np.all(ref > 0):
        decades = float(np.log10(ref.max() / ref.min())) or 1.0
        return xs * 10 ** (width * decades * step)
    span = float(np.ptp(ref)) or 1.0
    return xs + width * span * step


def _paper_order_single(ax, j: Judgement, cells, plot: dict, handles) -> None:
    first = cells.iloc[0]
    rows = [(j.claim.lower, first["mean"], first["mean_lo"], first["mean_hi"])]
    rows += [(r["other"], r["other_mean"], r["other_lo"], r["other_hi"]) for _, r in cells.iterrows()]
    for i, (name, m, lo, hi) in enumerate(rows):
        st = _style(i)
        h = ax.errorbar([i], [m], yerr=[[max(m - lo, 0)], [max(hi - m, 0)]], color=st["color"], marker=st["marker"],
                        ms=6, capsize=3, lw=1.2)
        handles.setdefault(name, h)
    ax.set_xticks(range(len(rows)), [_value_text(j.claim.compare or "method", r[0], plot) for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)


#: columns of trace rows that are coordinates or measurements, never what tells two series apart
_TRACE_COORDS = {"metric", "value", "step", "bits", "time", "replicate", "note", "censored", "pattern"}


def trace_figure(table: pd.DataFrame, metric: str, *, x: str = "step", plot: dict | None = None):
    """Trace rows of one ``metric`` against ``x`` (``step``, ``bits`` or the simulated ``time``).

    One line per series (the columns that vary among the metric's rows, e.g. ``method`` and the grid
    axes), at each recorded step the mean over replicates of ``x`` and of the value (with stragglers
    the simulated time of a step differs between replicates; its mean is what the line shows).

    Parameters
    ----------
    table : pandas.DataFrame
        A results table (``simcomm run``).
    metric : str
        The trace's metric (rows with a ``step`` column), e.g. ``train_loss``.
    x : str
        Column for the x axis; ``time`` exists when the spec has a ``[network]`` table.
    plot : dict, optional
        ``logx``, ``logy``, ``xlabel``, ``ylabel``, ``title``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from simcomm._errors import UserError

    plot = dict(plot or {})
    rows = table[table["metric"] == metric] if "metric" in table else table.iloc[:0]
    rows = rows[rows["step"].notna()] if "step" in rows else rows.iloc[:0]  # a trace row has a step
    if rows.empty:
        found = ", ".join(sorted(map(str, table.loc[table["step"].notna(), "metric"].unique()))) \
            if "step" in table else ""
        raise UserError(f"no trace rows of metric '{metric}' (rows with a step); "
                        f"trace metrics here: {found or 'none (drop --trace to draw the sweep)'}")
    if x not in rows or rows[x].isna().all():
        hint = " (a spec's [network] table adds it)" if x == "time" else ""
        raise UserError(f"the '{metric}' trace has no '{x}' column{hint}; use --x step or bits")
    series = [c for c in rows.columns if c not in _TRACE_COORDS and rows[c].nunique(dropna=False) > 1]
    fig = Figure(figsize=(7.2, 4.6), layout="constrained")
    ax = fig.subplots()
    for i, (key, grp) in enumerate(_series(rows, series)):
        mean = grp.groupby("step", sort=True)[[x, "value"]].mean()
        if plot.get("logx"):
            mean = mean[mean[x] > 0]  # step 0 sits at x = 0, off a log axis
        label = ", ".join(f"{k} = {_fmt(v)}" for k, v in key.items()) or None
        ax.plot(mean[x], mean["value"], color=PAPER_COLORS[i % len(PAPER_COLORS)], label=label, lw=1.6)
    default_x = {"time": "simulated time (s)", "bits": "bits sent per node", "step": "step"}.get(x, x)
    ax.set_xlabel(plot.get("xlabel", default_x))
    ax.set_ylabel(plot.get("ylabel", metric.replace("_", " ")))
    n_rep = rows["replicate"].nunique() if "replicate" in rows else 1
    ax.set_title(plot.get("title", f"{metric.replace('_', ' ')} against {default_x} (mean of {n_rep} replicates)"),
                 fontsize=10, loc="left")
    if plot.get("logx"):
        ax.set_xscale("log")
    _scales(ax, {"logy": plot.get("logy")}, rows["value"].to_numpy(dtype=float))
    ax.grid(True, which="major", alpha=0.3)
    if series:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


def _one_panel(draw):
    """A paper drawing of one panel: ``draw(ax, fig, j, plot)`` on a fresh figure ``plot["_width"]`` wide."""
    def paper(j: Judgement, plot: dict):
        width = plot.get("_width", 5.2)
        fig = Figure(figsize=(width, width * 0.72), layout="constrained")
        draw(fig.subplots(), fig, j, plot)
        return fig
    return paper


#: each claim kind's two drawings, keyed by the kind's class in :data:`simcomm.claims.KINDS` (a subclass
#: inherits its base's): the annotated figure of the report ``(ax, judgement, plot, context)`` and the
#: figure for a paper ``(judgement, plot) -> Figure``. A new kind registers its own here.
DRAWINGS = {
    BoundKind: (_draw_bound, _one_panel(_paper_bound)),
    SlopeKind: (lambda ax, j, plot, context: _draw_slope(ax, j, plot),
                _one_panel(lambda ax, fig, j, plot: _paper_slope(ax, j, plot))),
    MethodsKind: (lambda ax, j, plot, context: _draw_methods(ax, j, plot), _paper_order),
}


def _drawing(j: Judgement):
    """The drawings of ``j``'s kind (looked up by its class, then its bases)."""
    for cls in type(KINDS[j.claim.kind]).__mro__:
        if cls in DRAWINGS:
            return DRAWINGS[cls]
    raise KeyError(f"claim kind '{j.claim.kind}' has no drawing; register one in simcomm.plotting.DRAWINGS")


def sweep_axes(table: pd.DataFrame, grid: dict, *, metric: str | None = None, x: str | None = None,
               hue: list[str] | None = None) -> tuple[str, str, list[str]]:
    """Resolve ``(metric, x, hue)`` for :func:`sweep_figure`, or raise a one-line error naming the choices.

    Defaults: the table's only metric; ``x`` the grid axis with the most numeric values (else the
    first axis); ``hue`` the other grid axes. Every name must be a column of the table.
    """
    from simcomm._errors import UserError, closest

    rows = table[table["step"].isna()] if "step" in table else table
    metrics = sorted(map(str, rows["metric"].unique()))
    if metric is None:
        if len(metrics) != 1:
            raise UserError(f"the table has {len(metrics)} metrics ({', '.join(metrics)}); pick one with --metric")
        metric = metrics[0]
    elif metric not in metrics:
        raise UserError(f"--metric '{metric}' is not a metric of the table{closest(metric, metrics)}; "
                        f"metrics: {', '.join(metrics)}")
    columns = [c for c in table.columns if c not in ("metric", "value", "replicate")]
    for name, opt in [(x, "--x"), *[(h, "--hue") for h in (hue or [])]]:
        if name is not None and name not in columns:
            raise UserError(f"{opt} '{name}' is not a column of table.csv{closest(name, columns)}; "
                            f"columns: {', '.join(columns)}")
    axes = [a for a in grid if a in table.columns]
    if x is None:
        numeric = [a for a in axes if pd.api.types.is_numeric_dtype(table[a]) and table[a].nunique() > 1]
        pool = numeric or axes
        if not pool:
            raise UserError("the sweep has no grid axis to draw against; pass --x COLUMN")
        x = max(pool, key=lambda a: table[a].nunique())
    if hue is None:
        hue = [a for a in axes if a != x and table[a].nunique() > 1]
    return metric, x, [h for h in hue if h != x]


def _legend_below(fig, handles, labels, *, fontsize: float = 8, title: str | None = None) -> None:
    """One legend under the axes, in as many columns as fit the figure's width: never over data, never wider.

    The column count comes from the longest label (an estimate of its width at ``fontsize``), so a long
    legend wraps into rows instead of running off the canvas.
    """
    if not handles:
        return
    width_in = fig.get_size_inches()[0]
    longest = max(len(str(t).replace("$", "")) for t in labels)
    col_in = 0.6 + 0.56 * longest * fontsize / 72  # handle + padding + text at ~0.56 em per character
    ncol = max(1, min(len(labels), int(width_in * 0.95 // col_in)))
    rows = math.ceil(len(labels) / ncol) + (1 if title else 0)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + rows * fontsize * 1.45 / 72 + 0.1)  # the axes keep their height
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False,
               title=title, title_fontsize=fontsize)


#: 20 colours dark enough on white and far enough apart for many series (tab10, then ten more)
_MANY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                "#17becf", "#000000", "#e6ab02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#003f5c", "#a50026",
                "#5e3c99", "#b15928")


def _series_style(i: int, m: int) -> dict:
    """Colour, marker and line style of series ``i`` of ``m``: no two of the first 64 share colour AND marker."""
    st = _style(i)
    if m > len(PAPER_COLORS):  # more series than the colour-blind palette: 20 dark colours, markers cycling
        st["color"] = _MANY_COLORS[i % len(_MANY_COLORS)]
        st["marker"] = _PAPER_MARKERS[(i + i // len(PAPER_COLORS)) % len(_PAPER_MARKERS)]
        st["ls"] = _PAPER_LINES[(i + 2 * (i // len(PAPER_COLORS))) % len(_PAPER_LINES)]
    return st


def _plain_log_ticks(axis) -> None:
    """Decade ticks of a log axis: plain numbers (0.01, 1, 100) when the axis lies in 1e-4..1e5, else powers of ten."""
    if isinstance(axis.get_major_locator(), matplotlib.ticker.FixedLocator):
        return  # the values themselves are the ticks already (few x values)
    lo, hi = sorted(axis.get_view_interval())
    if lo > 0 and hi / lo < 100:  # under two decades: label 2, 3, 5 times the decades too, as plain numbers
        axis.set_minor_locator(matplotlib.ticker.LogLocator(subs=(2.0, 3.0, 5.0)))
        plain = matplotlib.ticker.FuncFormatter(lambda v, _p: f"{v:.3g}")
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(plain)
        return

    def fmt(v, _pos):
        if v <= 0:
            return ""
        e = math.log10(v)
        if abs(e - round(e)) > 1e-9:
            return ""
        lo, hi = sorted(axis.get_view_interval())
        plain = lo >= 0.9e-4 and hi <= 1.1e5  # one notation per axis: plain numbers, or powers of ten
        return f"{v:g}" if plain else f"$10^{{{int(round(e))}}}$"
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(fmt))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def sweep_figure(table: pd.DataFrame, metric: str, x: str, hue: list[str], plot: dict | None = None, *,
                 style: str = "annotated", size: str | None = None, subtitle: bool = True):
    """A sweep without a claim: the mean of ``metric`` over replicates against ``x``, one series per ``hue``.

    Error bars are 95% Student-t intervals of the mean over replicates. A categorical ``x`` gets
    its values as plain tick labels and markers without connecting lines (no order is implied).
    ``x`` may be a measured column (e.g. ``bits_per_coord``) rather than a grid axis: a point is then
    each distinct ``x`` of a series. With more than ten series and a hue column of at most four
    values (or ``plot["col"]``), that column becomes one panel per value. Zeros on a log y axis sit on
    the axis' bottom edge as open markers (they have no logarithm). The legend (one entry per series,
    the value alone for columns that name things) goes under the panels.

    Parameters
    ----------
    table : pandas.DataFrame
        A results table (``simcomm run`` of a spec without a claim).
    metric, x, hue
        As resolved by :func:`sweep_axes`.
    plot : dict, optional
        ``logx``, ``logy``, ``xlabel``, ``ylabel``, ``title``, ``col`` (a spec's ``[plot]`` table).
    style : {"annotated", "paper"}
        ``paper``: ``size`` wide (:data:`PAPER_SIZES`, one column by default) with 7-8 pt fonts.
    size : {"single", "double"}, optional
        Width of a ``paper`` figure.
    subtitle : bool
        Say under the title what the points and bars are ("mean and 95% CI of R replicates").

    Series whose means coincide at an ``x`` are drawn side by side there (a small offset along x,
    each with its own marker), so none hides another.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if style not in ("annotated", "paper"):
        from simcomm._errors import UserError

        raise UserError(f"style '{style}' is unknown; use annotated or paper")
    if style == "paper":
        with matplotlib.rc_context(_PAPER_RC):
            return _sweep_figure(table, metric, x, hue, plot, width=_paper_size(size), subtitle=subtitle)
    if size is not None:
        from simcomm._errors import UserError

        raise UserError("a size (single or double column) applies to the paper style only; add style='paper'")
    return _sweep_figure(table, metric, x, hue, plot, width=None, subtitle=subtitle)


def _coincident_offsets(drawn, log: bool, span: tuple[float, float]) -> None:
    """Shift the points of series whose means coincide at one x apart along x (in place), centred on x."""
    groups: dict = {}
    for k, (_i, xs, mean, _half, _st) in enumerate(drawn):
        for t, (xv, mv) in enumerate(zip(xs, mean)):
            if np.isfinite(mv):
                groups.setdefault((float(xv), float(np.float32(mv))), []).append((k, t))
    lo, hi = span
    width = (math.log10(hi) - math.log10(lo)) if log and lo > 0 else (hi - lo)
    step = 0.012 * (width if width > 0 else 1.0)
    for members in groups.values():
        m = len(members)
        if m < 2:
            continue
        for j, (k, t) in enumerate(members):
            shift = (j - (m - 1) / 2) * step
            xs = drawn[k][1]
            xs[t] = xs[t] * 10 ** shift if log and xs[t] > 0 else xs[t] + shift


def _sweep_figure(table, metric, x, hue, plot, *, width, subtitle):
    from matplotlib.lines import Line2D
    from scipy import stats

    plot = dict(plot or {})
    paper = width is not None
    rows = table[table["metric"] == metric]
    if "step" in rows:
        rows = rows[rows["step"].isna()]
    hue = list(hue)
    col = plot.get("col")
    if col is None and len(hue) >= 2:
        n_series = len(rows.groupby(hue, dropna=False))
        few = [h for h in hue if rows[h].nunique() <= 4]
        if n_series > 10 and few:
            col = min(few, key=lambda h: rows[h].nunique())
    if col is not None and col in hue:
        hue.remove(col)
    panels = list(_series(rows, [col])) if col is not None else [({}, rows)]
    categorical = not pd.api.types.is_numeric_dtype(rows[x])
    levels = sorted(rows[x].unique(), key=str) if categorical else None
    keys = [k for k, _ in _series(rows, hue)]
    n_series = len(keys)
    ncols = len(panels)
    if paper:
        width = width if ncols == 1 else max(width, PAPER_SIZES["double"])
        fig = Figure(figsize=(width, max(2.2, min(width * 0.72, 3.2))), layout="constrained")
    else:
        fig = Figure(figsize=(7.2 if ncols == 1 else min(4.2 * ncols, 12.0), 4.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, ncols, sharey=True, squeeze=False)[0])
    values = rows["value"].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    logy = plot.get("logy")
    if logy is None:
        pos = finite[finite > 0]
        logy = pos.size > 1 and pos.max() / pos.min() >= 100
    handles = {}
    has_zero = False
    for ax, (pkey, prow) in zip(axes, panels):
        pos_means = []
        drawn = []
        for key, grp in _series(prow, hue):
            i = keys.index(key)
            stat = grp.groupby(x, sort=True)["value"].agg(["mean", "std", "count"])
            half = stats.t.ppf(0.975, np.maximum(stat["count"] - 1, 1)) * stat["std"].fillna(0) \
                / np.sqrt(stat["count"])
            xs = np.asarray([levels.index(v) for v in stat.index] if categorical else stat.index.to_numpy(float),
                            dtype=float)
            if categorical and n_series > 1:  # dodge the series so their error bars do not overlap
                xs = xs + (i - (n_series - 1) / 2) * 0.8 / n_series
            st = _series_style(i, n_series)
            mean = stat["mean"].to_numpy(float)
            pos_means.extend(mean[np.isfinite(mean) & (mean > 0)])
            drawn.append((i, xs, mean, half.to_numpy(float), st))
        bottom = None
        if logy and pos_means:
            bottom = 10 ** (math.floor(math.log10(min(pos_means))) - 0.3)
        if not categorical and len(drawn) > 1:
            xv = prow[x].to_numpy(dtype=float)
            xv = xv[np.isfinite(xv)]
            log_x = bool(plot.get("logx")) or (xv.size and xv.min() > 0 and xv.max() / xv.min() >= 8)
            if xv.size:
                _coincident_offsets(drawn, log_x, (float(xv.min()), float(xv.max())))
        ms = 3.5 if paper else 5
        for i, xs, mean, half, st in drawn:
            line = "none" if categorical or len(xs) == 1 else st["ls"]
            zero = logy & (mean <= 0)
            ok = ~zero
            lo = np.clip(half, 0, None)
            if logy:  # a CI reaching below zero is cut at the axis (log scale)
                lo = np.minimum(lo, np.where(mean > 0, mean * (1 - 1e-9), 0))
            ax.errorbar(xs[ok], mean[ok], yerr=np.vstack([lo[ok], half[ok]]), color=st["color"], marker=st["marker"],
                        ls=line, capsize=2 if paper else 2.5, lw=1.0 if paper else 1.2, ms=ms,
                        mfc="white" if i % 2 else st["color"], mew=0.9 if paper else 1.1)
            if zero.any() and bottom is not None:
                has_zero = True
                ax.plot(xs[zero], np.full(zero.sum(), bottom * 1.6), ls="none", marker=st["marker"], ms=ms,
                        color=st["color"], mfc="none", mew=1.1, clip_on=False)
            handles.setdefault(i, Line2D([], [], color=st["color"], marker=st["marker"], ls=line if len(xs) > 1
                                         and not categorical else "none", mfc="white" if i % 2 else st["color"],
                                         mew=1.1))
        if categorical:
            ax.set_xticks(range(len(levels)), [_value_text(x, v, plot) for v in levels])
        elif plot.get("logx") or (prow[x].min() > 0 and prow[x].max() / prow[x].min() >= 8):
            ax.set_xscale("log")
            vals = np.unique(prow[x].to_numpy(dtype=float))
            if vals.size <= 12 and ncols == 1 and len(drawn) <= 3:
                ax.set_xticks(vals, [_fmt(float(v)) if not float(v).is_integer() else str(int(v)) for v in vals])
                ax.minorticks_off()
            else:
                _plain_log_ticks(ax.xaxis)
        if logy:
            ax.set_yscale("log")
            _plain_log_ticks(ax.yaxis)
            if bottom is not None:
                ax.set_ylim(bottom=bottom)
        if pkey:
            ax.set_title(_paper_label(pkey, plot), fontsize=8 if paper else 9.5)
        ax.set_xlabel(plot.get("xlabel", x.replace("_", " ")))
        ax.grid(True, which="major", alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_ylabel(plot.get("ylabel", metric.replace("_", " ")))
    n_rep = rows["replicate"].nunique() if "replicate" in rows else 1
    note = f"mean and 95% CI of {n_rep} replicates" if n_rep > 1 else "one replicate"
    if has_zero:
        note += "; open markers on the bottom edge: exactly 0"
    title = plot.get("title", f"{metric.replace('_', ' ')} against {x.replace('_', ' ')}")
    if paper:
        title = _wrap(title, 48 if fig.get_size_inches()[0] < 5 else 90)
    text = f"{title}\n({note})" if subtitle else title
    if text:
        fig.suptitle(text, fontsize=8.5 if paper else 10)
    if hue:
        order = sorted(handles)
        _legend_below(fig, [handles[i] for i in order], [_paper_label(keys[i], plot) for i in order],
                      fontsize=7 if paper else 8)
    return fig


def _advice_label(r: dict) -> str:
    """"top-k, k = 24 + EF" for a row of :func:`simcomm.network.advise`."""
    name = r["compressor"].replace("_", "-")
    fb = {"none": "", "ef": " + EF", "ef21": " + EF21"}.get(r["feedback"], f" + {r['feedback']}")
    shown = [p.strip() for p in r["setting"].split(",") if p.strip() and not p.strip().startswith("scale=")]
    setting = ", ".join(f"{_SYMBOLS.get(k, k)} = {v}" for k, _, v in (p.partition("=") for p in shown))
    if r["compressor"] == "rand_k" and "scale=False" not in r["setting"]:
        name += " (scaled)"
    return f"{name}, {setting}{fb}" if setting else f"{name}{fb}"


def advice_figure(advice, *, size: str | None = None):
    """Measured relative error against predicted time per step, one marker per row of an ``Advice``.

    Paper style (:func:`paper_figure`'s fonts, palette and widths): log-log axes, the 95% interval of each
    error as a vertical bar, the Pareto front (no other row both faster and more accurate) joined by a
    grey line, a legend under the axes. Rows with zero error (lossless) sit on the bottom edge, open.

    Parameters
    ----------
    advice : Advice
    size : {"single", "double"}, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.lines import Line2D

    width = _paper_size(size)
    rows = list(advice.rows)
    err = np.array([r["error_mean"] for r in rows], dtype=float)
    lo = np.array([r["error_lo"] for r in rows], dtype=float)
    hi = np.array([r["error_hi"] for r in rows], dtype=float)
    t = np.array([r["step_s"] for r in rows], dtype=float)
    pos = err[np.isfinite(err) & (err > 0)]
    floor = pos.min() / 3 if pos.size else 1e-3
    with matplotlib.rc_context(_PAPER_RC):
        fig = Figure(figsize=(width, width * 0.72), layout="constrained")
        ax = fig.subplots()
        handles, labels = [], []
        for i, r in enumerate(rows):
            st = _series_style(i, len(rows))
            zero = not (err[i] > 0)
            y = floor if zero else err[i]
            if np.isfinite(lo[i]) and not zero:
                yerr = [[max(y - max(lo[i], floor * 0.5), 0.0)], [max(hi[i] - y, 0.0)]]
                ax.errorbar([t[i]], [y], yerr=yerr, color=st["color"], lw=0.8, capsize=1.5, ls="none")
            face = "white" if zero or r["feedback"] != "none" else st["color"]
            ax.plot([t[i]], [y], marker=st["marker"], color=st["color"], mfc=face, mew=1.0, ls="none", ms=4.5)
            handles.append(Line2D([], [], marker=st["marker"], color=st["color"], mfc=face, mew=1.0, ls="none"))
            labels.append(f"{r['rank']}: {_advice_label(r)}")
        front = sorted((t[i], err[i] if err[i] > 0 else floor) for i, r in enumerate(rows) if r["front"] == 1)
        if len(front) > 1:
            ax.plot(*zip(*front), color="0.6", lw=0.8, ls="--", zorder=0)
            handles.append(Line2D([], [], color="0.6", lw=0.8, ls="--"))
            labels.append("Pareto front")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis)
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel("predicted time per step (s)")
        ax.set_ylabel(r"relative error $\|g - u\|^2 / \|g\|^2$")
        ax.grid(True, which="major", alpha=0.25, lw=0.6)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        bw = 8 / advice.beta / 1e9 if advice.beta > 0 else math.inf
        ax.set_title(f"$D$ = {advice.d:,}, $n$ = {advice.n}, {bw:.3g} Gbit/s, "
                     f"$\\alpha$ = {advice.alpha * 1e6:.3g} $\\mu$s; {advice.steps} recorded steps", fontsize=7.5)
        if any(r["feedback"] != "none" for r in rows):
            ax.annotate("open markers: with feedback", xy=(0.01, 0.01), xycoords="axes fraction", fontsize=6.5,
                        color="0.35", va="bottom", ha="left")
        _legend_below(fig, handles, labels, fontsize=6.5)
    return fig


def _local_label(label: str, d: int | None) -> str:
    """"top-k, k = 1% of D + EF" for a compressor label of :func:`simcomm.network.predict_local_times`."""
    if label == "none":
        return "no compression"
    name, paren, rest = label.partition("(")
    parts = []
    for p in rest.rstrip(")").split(",") if paren else []:
        k, _, v = (t.strip() for t in p.partition("="))
        if k == "scale":  # rand-k's unbiased rescaling: said in the name
            name += " (scaled)" if v == "True" else ""
            continue
        if k in ("k", "r") and d and v.isdigit():
            v = f"{_pct(int(v) / d)} of $D$" if int(v) < d else "$D$"
        parts.append(f"{_SYMBOLS.get(k, k)} = {v}")
    text = name.strip().replace("_", "-") + (", " + ", ".join(parts) if parts else "")
    return text + " + EF"


def local_time_figure(result: dict, *, size: str | None = None):
    """Time to a target against inner steps per round H, one line per compressor (DiLoCo on a network).

    ``result`` is what ``simcomm net predict --local ... --simulate --json`` prints: ``d``, ``n``,
    ``alpha``, ``beta``, ``compute``, ``compute_scale``, ``target``, optionally ``horizon``, and ``rows``
    with ``method``, ``H``, ``compressor`` and ``time_to_target_s`` (``None``: missed the target).
    Paper style (:func:`paper_figure`'s fonts, palette and widths): log-log axes with ticks at the
    given H, data-parallel SGD's time as a dotted horizontal line, a ring around the fastest point,
    rows that missed the target as open triangles on the top edge, points that coincide drawn side by
    side, a legend under the axes.

    Parameters
    ----------
    result : dict
    size : {"single", "double"}, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.lines import Line2D

    from simcomm._errors import UserError

    width = _paper_size(size)
    rows = list(result.get("rows") or [])
    if not any("time_to_target_s" in r for r in rows):
        raise UserError("the rows carry no time to target; draw the result of net predict --local --simulate")
    d = result.get("d")
    sgd = next((r for r in rows if r["method"] == "sgd"), None)
    local = [r for r in rows if r["method"] != "sgd"]
    labels = list(dict.fromkeys(r["compressor"] for r in local))
    Hs = sorted({int(r["H"]) for r in local})
    times = [r["time_to_target_s"] for r in rows if r.get("time_to_target_s") is not None]
    best = min(times) if times else None
    with matplotlib.rc_context(_PAPER_RC):
        fig = Figure(figsize=(width, min(width * 0.72, 3.2)), layout="constrained")
        ax = fig.subplots()
        handles, texts = [], []
        # points that (nearly) coincide at one H, within 6% (a marker's height on these axes), side by side
        shift = {}
        for h in Hs:
            here = sorted((r["time_to_target_s"], labels.index(r["compressor"])) for r in local
                          if int(r["H"]) == h and r.get("time_to_target_s") is not None)
            clusters = []
            for t, i in here:
                if clusters and t <= clusters[-1][-1][0] * 1.06:
                    clusters[-1].append((t, i))
                else:
                    clusters.append([(t, i)])
            for members in clusters:
                for j, (_t, i) in enumerate(sorted(members, key=lambda m: m[1])):
                    shift[(i, h)] = 2 ** (0.08 * (j - (len(members) - 1) / 2))
        missed = []
        for i, lab in enumerate(labels):
            st = _series_style(i, len(labels))
            mine = sorted((r for r in local if r["compressor"] == lab), key=lambda r: r["H"])
            xs, ys = [], []
            for r in mine:
                t = r.get("time_to_target_s")
                if t is None:
                    missed.append((int(r["H"]), st))
                    continue
                xs.append(int(r["H"]) * shift[(i, int(r["H"]))])
                ys.append(t)
            ax.plot(xs, ys, color=st["color"], marker=st["marker"], ls=st["ls"], ms=4, lw=1.0)
            handles.append(Line2D([], [], color=st["color"], marker=st["marker"], ls=st["ls"], ms=4, lw=1.0))
            texts.append(_local_label(lab, d))
        sgd_t = sgd.get("time_to_target_s") if sgd else None
        if sgd_t is not None:
            ax.axhline(sgd_t, color="0.25", ls=":", lw=1.0, zorder=0)
            handles.append(Line2D([], [], color="0.25", ls=":", lw=1.0))
            texts.append("data-parallel SGD (exchanges every step, uncompressed)")
            ax.annotate("data-parallel SGD", xy=(0.01, sgd_t), xycoords=("axes fraction", "data"), xytext=(0, 1.5),
                        textcoords="offset points", fontsize=6, color="0.25", va="bottom", ha="left")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if times:
            lo, hi = min(times), max(times)
            ax.set_ylim(lo / 1.6, hi * 1.6 if hi > lo else lo * 2.5)
        if missed:  # side by side along the top edge, so every series' triangle shows
            top = ax.get_ylim()[1]
            for h in {h for h, _ in missed}:
                here = [st for hh, st in missed if hh == h]
                for j, st in enumerate(here):
                    ax.plot([h * 2 ** (0.14 * (j - (len(here) - 1) / 2))], [top], marker="^", color=st["color"],
                            mfc="white", mew=1.0, ms=4, ls="none", clip_on=False, zorder=5)
            horizon = result.get("horizon")
            handles.append(Line2D([], [], marker="^", color="0.35", mfc="white", mew=1.0, ls="none", ms=5))
            texts.append("missed the target" + (f" in {horizon:,} inner steps" if horizon else "") + " (top edge)")
        if best is not None:
            for r in rows:
                t = r.get("time_to_target_s")
                if t is None or t > best * (1 + 1e-9):
                    continue
                if r["method"] == "sgd":
                    x = Hs[0] if Hs else 1
                else:
                    i = labels.index(r["compressor"])
                    x = int(r["H"]) * shift[(i, int(r["H"]))]
                ax.plot([x], [t], marker="o", ms=10, mfc="none", mec="black", mew=1.1, ls="none", zorder=6)
            win = [r for r in rows if r.get("time_to_target_s") is not None
                   and r["time_to_target_s"] <= best * (1 + 1e-9)]
            what = "; ".join("data-parallel SGD" if r["method"] == "sgd" else
                             f"$H$ = {r['H']}, {_local_label(r['compressor'], d)}" for r in win)
            handles.append(Line2D([], [], marker="o", ms=8, mfc="none", mec="black", mew=1.1, ls="none"))
            texts.append(f"fastest ({_fmt_seconds(best)}): {what}")
        if Hs:
            ax.set_xticks(Hs, [str(h) for h in Hs])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlim(Hs[0] / 1.5, Hs[-1] * 1.5)
        lo, hi = ax.get_ylim()
        subs = (1.0, 2.0, 5.0) if hi / lo < 1e3 else (1.0,)
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=subs))
        ax.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(subs="auto"))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _p: f"{v:,.0f}" if 1 <= v < 1e6 else f"{v:.3g}"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("inner steps per round $H$")
        ax.set_ylabel("predicted time to target (s)")
        ax.grid(True, which="major", alpha=0.25, lw=0.6)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        beta = float(result.get("beta") or 0.0)
        bw = 8 / beta / 1e9 if beta > 0 else math.inf
        compute = float(result.get("compute") or 0.0)
        scale = float(result.get("compute_scale") or 0.0)
        line1 = (f"DiLoCo on $n$ = {result.get('n')} nodes, $D$ = {_sci(d)} parameters, {bw:.3g} Gbit/s, $\\alpha$ = "
                 f"{_fmt_seconds(float(result.get('alpha') or 0.0))}")
        line2 = f"compute {_fmt_seconds(compute)}" + (f" + Exp({_fmt_seconds(scale)})" if scale else "") + "/step"
        target = result.get("target")
        if target:
            line2 += f"; stand-in's steps to $f - f^\\star \\leq$ {_sci(target)} of the start's"
        fig.suptitle(line1 + "\n" + line2, fontsize=6.5)
        _legend_below(fig, handles, texts, fontsize=6.5, title="pseudo-gradients compressed by (EF: error feedback)")
    return fig


def _sci(v) -> str:
    r"""``1e8`` -> "$10^{8}$", ``2.5e7`` -> "$2.5 \times 10^{7}$", ``4810`` -> "4,810" (mathtext, for a title)."""
    v = float(v)
    if v == 0 or 1e-2 <= abs(v) < 1e5:
        return f"{v:,.0f}" if v == int(v) else f"{v:g}"
    e = math.floor(math.log10(abs(v)))
    m = float(f"{v / 10 ** e:.3g}")
    return f"$10^{{{e}}}$" if m == 1 else f"${m:g} \\times 10^{{{e}}}$"


def _fmt_seconds(t: float) -> str:
    r"""Seconds with a unit a reader takes in at a glance (s, ms, $\mu$s)."""
    if t >= 1 or t == 0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} $\\mu$s"
