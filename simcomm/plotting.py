"""Figures for readers: bound against empirical value with confidence bands. Never saves files."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # headless by default; the CLI saves, nothing is shown
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from simcomm.claims import Judgement, Verdict  # noqa: E402

__all__ = ["bound_vs_empirical"]

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
    logy = plot.get("logy")
    if logy is None:  # log axes when the quantity spans decades and is positive
        pos = y[np.isfinite(y) & (y > 0)]
        # Spanning more than 8 decades means some values are zero up to rounding: stay linear.
        span = pos.max() / pos.min() if pos.size > 1 else 1.0
        logy = pos.size == y[np.isfinite(y)].size and 30 < span < 1e8
    if logy:
        ax.set_yscale("log")


def bound_vs_empirical(j: Judgement, plot: dict | None = None, context: Judgement | None = None):
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

    Returns
    -------
    matplotlib.figure.Figure
    """
    plot = dict(plot or {})
    fig, ax = plt.subplots(figsize=(7.2, 4.6), layout="constrained")
    cells = j.cells
    kind = j.claim.kind
    if kind == "slope":
        _draw_slope(ax, j, plot)
    elif kind == "order":
        _draw_order(ax, j, plot)
    else:
        _draw_bound(ax, j, plot, context)
    ax.set_title(_title(j, plot), fontsize=9.5, color=_VERDICT_COLOR[j.verdict], loc="left")
    ax.grid(True, which="major", alpha=0.3)
    handles = ax.get_legend_handles_labels()[0]
    if len(handles) > 7:  # a long legend goes beside the axes, never over the data
        fig.set_size_inches(10.5, 4.8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
    elif handles:
        ax.legend(fontsize=8, loc="best", framealpha=0.85)
    del cells
    return fig


def _errorbar(ax, x, m, lo, hi, color, label, marker="o"):
    m, lo, hi = (np.asarray(v, dtype=float) for v in (m, lo, hi))
    yerr = np.vstack([np.clip(m - lo, 0, None), np.clip(hi - m, 0, None)])
    ax.errorbar(x, m, yerr=yerr, fmt=marker, ms=4, capsize=3, color=color, label=label, lw=1)


def _draw_bound(ax, j: Judgement, plot: dict, context: Judgement | None = None) -> None:
    x, hue = _pick_axes(j, plot)
    if context is not None and x in context.cells and x in j.cells:
        extra = context.cells[~context.cells[x].isin(j.cells[x])]
        if len(extra):
            _errorbar(ax, extra[x].to_numpy(), extra["mean"].to_numpy(float), extra["ci_low"].to_numpy(float),
                      extra["ci_high"].to_numpy(float), "#8c959f", "measured outside the claim's range (not judged)",
                      marker="D")
    colors = plt.cm.tab10.colors
    ys = []
    reps = int(j.cells["n_rep"].max()) if len(j.cells) else 1
    ci = f" (family-wise {j.claim.confidence:.1%} CI, {reps} replicates)".replace(".0%", "%") if reps > 1 else ""
    series = [(params, grp.sort_values(x) if x else grp) for params, grp in _series(j.cells, hue)]
    # One bound line when every series has the same bound at the same x (the bound ignores the hue).
    curves = {tuple(zip(map(str, g[x]) if x else range(len(g)), np.round(g["bound"].to_numpy(float), 12)))
              for _, g in series}
    shared = len(series) > 1 and len({c for cs in curves for c in cs}) == len(next(iter(curves)))
    flagged = False
    for i, (params, grp) in enumerate(series):
        xs = grp[x].to_numpy() if x else np.arange(len(grp))
        c = colors[i % len(colors)]
        tag = f" [{_label(params)}]" if params else ""
        _errorbar(ax, xs, grp["mean"].to_numpy(float), grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float),
                  c, f"empirical{ci}{tag}")
        b = grp["bound"].to_numpy(float)
        if not shared or i == 0:
            bc, btag = ("k", "") if shared else (c, tag)
            ax.plot(xs, b, "--", color=bc, lw=1.2, label=f"{j.claim.kind} bound{btag}")
            slack = np.abs(b) * j.claim.margin_rel + j.claim.margin_abs + j.claim.atol
            if j.claim.kind == "equal" and np.any(slack > 0):
                # categorical x (strings) sits at positions 0..m-1 in order of appearance
                band_x = xs if np.issubdtype(np.asarray(xs).dtype, np.number) else np.arange(len(xs))
                ax.fill_between(band_x, b - slack, b + slack, color=bc, alpha=0.12, lw=0,
                                label="equivalence margin")
        flagged = _mark_states(ax, xs, grp, flagged)
        ys.extend([grp["mean"].to_numpy(float), b])
    _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
    ax.set_xlabel(plot.get("xlabel", x or "cell"))
    ax.set_ylabel(plot.get("ylabel", j.claim.observable))


_STATE_MARK = {  # verdict -> (marker, colour, legend text); holds is the plain error bar
    Verdict.VIOLATED.value: ("X", "#cf222e", "violated"),
    Verdict.INCONCLUSIVE.value: ("o", "#9a6700", "inconclusive"),
    Verdict.ILL_POSED.value: ("s", "#6e7781", "ill-posed"),
}


def _mark_states(ax, xs, grp, shown: set | bool) -> set:
    """Ring each cell that does not hold with a marker for its state (one legend entry per state)."""
    shown = set() if not isinstance(shown, set) else shown
    for state, (marker, color, text) in _STATE_MARK.items():
        sel = (grp["verdict"] == state).to_numpy()
        if sel.any():
            ax.scatter(np.asarray(xs)[sel], grp["mean"].to_numpy(float)[sel], s=110, marker=marker,
                       facecolors="none" if marker != "X" else color, edgecolors=color, lw=1.5, zorder=5,
                       alpha=0.8, label=None if state in shown else f"cell {text}")
            shown.add(state)
    return shown


def _draw_slope(ax, j: Judgement, plot: dict) -> None:
    # The figure shows the fitted slope per group against the prediction, with its CI.
    x, hue = _pick_axes(j, plot)
    cells = j.cells.reset_index(drop=True)
    labels = [_label({c: r[c] for c in j.columns}) or "all" for _, r in cells.iterrows()]
    pos = np.arange(len(cells))
    _errorbar(ax, pos, cells["mean"].to_numpy(float), cells["ci_low"].to_numpy(float),
              cells["ci_high"].to_numpy(float), "#0969da", f"fitted slope ({j.claim.confidence:.1%} CI)".replace(".0%", "%"))
    tol = j.claim.slope_tol
    for i, p in enumerate(cells["predicted"].to_numpy(float)):
        ax.fill_between([i - 0.3, i + 0.3], p - tol, p + tol, color="#8c959f", alpha=0.35,
                        label=f"predicted $\\pm$ {tol:g}" if i == 0 else None)
        ax.plot([i - 0.3, i + 0.3], [p, p], "k--", lw=1)
    ax.set_xticks(pos, labels, rotation=20 if len(labels) > 3 else 0, fontsize=8)
    space = "log-log" if j.claim.slope_space == "loglog" else "lin-log"
    ax.set_xlim(-0.7, len(cells) - 0.3)
    ax.set_ylabel(plot.get("ylabel", f"{space} slope of {j.claim.observable} in {j.claim.slope_in}"))
    del x, hue


def _draw_order(ax, j: Judgement, plot: dict) -> None:
    x, hue = _pick_axes(j, plot, exclude=("other",))
    series = list(_series(j.cells, hue))
    if x is None:
        _draw_order_single(ax, j, plot)
    elif len(series) * (1 + len(j.claim.higher)) > 8:  # too many lines to read: show lower/other ratios
        _draw_order_ratios(ax, j, plot, x, series)
    else:
        _draw_order_lines(ax, j, plot, x, series)


def _flag(ax, xs, ys, bad, j: Judgement, flagged: bool) -> bool:
    """Circle the points where the order is not shown at the claim's confidence."""
    if bad.any():
        label = None if flagged else "cell where the order is not shown (inconclusive, violated or ill-posed)"
        ax.scatter(np.asarray(xs)[bad], np.asarray(ys, float)[bad], s=110, facecolors="none", edgecolors="#cf222e",
                   lw=1.5, zorder=5, label=label)
        return True
    return flagged


def _draw_order_single(ax, j: Judgement, plot: dict) -> None:
    # One cell: each method at its own position, with its CI.
    cells = j.cells
    colors = plt.cm.tab10.colors
    first = cells.iloc[0]
    _errorbar(ax, [0], [first["mean"]], [first["mean_lo"]], [first["mean_hi"]], colors[0], None)
    flagged = False
    for k, (_, row) in enumerate(cells.iterrows(), start=1):
        _errorbar(ax, [k], [row["other_mean"]], [row["other_lo"]], [row["other_hi"]], colors[k % 10], None, marker="s")
        flagged = _flag(ax, [0], [first["mean"]], np.array([row["verdict"] != Verdict.HOLDS.value]), j, flagged)
    ax.set_xticks(range(len(cells) + 1), [j.claim.lower, *cells["other"].astype(str)])
    ax.set_xlim(-0.6, len(cells) + 0.6)
    ax.set_xlabel(j.claim.compare)
    ax.set_ylabel(plot.get("ylabel", j.claim.observable))


def _draw_order_lines(ax, j: Judgement, plot: dict, x: str, series) -> None:
    colors = plt.cm.tab10.colors
    styles = ["-", "-.", ":"]
    ys = []
    flagged = False
    for s_i, (params, grp) in enumerate(series):
        tag = f" [{_label(params)}]" if params else ""
        ls = styles[s_i % len(styles)]
        lower = grp.drop_duplicates(subset=[x]).sort_values(x)
        xs = lower[x].to_numpy()
        ax.plot(xs, lower["mean"].to_numpy(float), ls, color=colors[0], lw=1.6)
        _errorbar(ax, xs, lower["mean"].to_numpy(float), lower["mean_lo"].to_numpy(float),
                  lower["mean_hi"].to_numpy(float), colors[0], f"{j.claim.compare}={j.claim.lower}{tag}")
        ys.append(lower["mean"].to_numpy(float))
        for k, other in enumerate(j.claim.higher, start=1):
            g = grp[grp["other"] == other].sort_values(x)
            xs_o = g[x].to_numpy()
            ax.plot(xs_o, g["other_mean"].to_numpy(float), ls, color=colors[k % 10], lw=1.2)
            _errorbar(ax, xs_o, g["other_mean"].to_numpy(float), g["other_lo"].to_numpy(float),
                      g["other_hi"].to_numpy(float), colors[k % 10], f"{j.claim.compare}={other}{tag}", marker="s")
            flagged = _flag(ax, xs_o, g["mean"], (g["verdict"] != Verdict.HOLDS.value).to_numpy(), j, flagged)
            ys.append(g["other_mean"].to_numpy(float))
    _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
    ax.set_xlabel(plot.get("xlabel", x))
    ax.set_ylabel(plot.get("ylabel", j.claim.observable))


def _draw_order_ratios(ax, j: Judgement, plot: dict, x: str, series) -> None:
    # Many cells: one thin line per cell and competitor, showing lower/higher; below 1 = order holds.
    colors = plt.cm.tab10.colors
    flagged = False
    ys = []
    markers = "osD^v<>p*h"
    few = len(series) <= 6  # few cells: one labelled marker style per cell; many: unlabelled thin lines
    for s_i, (params, grp) in enumerate(series):
        for k, other in enumerate(j.claim.higher, start=1):
            g = grp[grp["other"] == other].sort_values(x)
            xs, r = g[x].to_numpy(), g["ratio"].to_numpy(float)
            label = f"{j.claim.lower} / {other} [{_label(params)}]" if few else None
            ax.plot(xs, r, ("-" + markers[s_i % len(markers)]) if few else "o-", color=colors[k % 10],
                    lw=0.8, ms=4 if few else 3, alpha=0.8, label=label)
            flagged = _flag(ax, xs, r, (g["verdict"] != Verdict.HOLDS.value).to_numpy(), j, flagged)
            ys.append(r)
    if not few:
        for k, other in enumerate(j.claim.higher, start=1):
            ax.plot([], [], "o-", color=colors[k % 10], label=f"{j.claim.lower} / {other} (one line per cell)")
    ax.axhline(1.0, color="k", lw=1, ls="--", label="equal (order holds below)")
    _scales(ax, plot, np.concatenate(ys) if ys else np.array([]))
    ax.set_xlabel(plot.get("xlabel", x))
    ax.set_ylabel(f"ratio of {j.claim.observable}: {j.claim.lower} / other")
