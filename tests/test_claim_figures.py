"""Claim figures draw what the judge tests (issue 43): the paired ratio of an order claim with the judge's
interval against its line, censored cells with an arrow, cells without a value still drawn, no interval
crossing zero on a log axis, a bound that depends on the row drawn at every cell.

Order claims are judged on synthetic tables by :func:`simcomm.claims.judge` itself, so the drawn numbers
are the judge's; bound figures use hand-made judged cells.
"""

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg

from simcomm.claims import Judgement, Verdict, judge
from simcomm.plotting import bound_vs_empirical
from simcomm.spec import ClaimSpec


def _order_claim(**kw):
    base = dict(id="x.order", paper="net", statement="s", kind="order", observable="t", compare="method",
                lower="a", higher=("b",), scale="log", min_effect_rel=0.1)
    return ClaimSpec(**{**base, **kw})


def _table(values, censored=None, reps=5):
    """Rows of methods a and b per n: ``values[(n, method)]`` is the mean of a small replicate spread."""
    rows = []
    for (n, method), v in values.items():
        for r in range(reps):
            val = v * (1 + 0.01 * (r - reps // 2)) if np.isfinite(v) else v
            cens = bool(censored and (n, method) in censored)
            rows.append(dict(n=n, method=method, metric="t", value=val, replicate=r, censored=cens))
    return pd.DataFrame(rows)


def _judged(values, censored=None, **kw):
    return judge(_order_claim(**kw), _table(values, censored), {"n", "method"})


def _legend_texts(fig):
    texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    for ax in fig.get_axes():
        if ax.get_legend() is not None:
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    return texts


def _gid(ax, gid):
    return [a for a in (*ax.collections, *ax.texts, *ax.lines) if a.get_gid() == gid]


def _points(ax):
    """(x, y) of every errorbar's data line."""
    out = []
    for c in ax.containers:
        line = c.lines[0]
        if line is not None:
            out.append((np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)))
    return out


def test_order_figure_draws_the_judges_paired_ratio_against_its_line():
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): 1.0, (16, "b"): 4.0})
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    assert ax.get_yscale() == "log"  # ratios, judged on log differences
    (xs, ys), = _points(ax)
    assert np.allclose(np.sort(ys), np.sort(j.cells["estimate"].to_numpy(float)))  # the judge's estimate
    assert np.allclose(np.sort(ys), [0.25, 0.5], rtol=1e-3)
    # the decision line is the judge's: at 1 + min_effect for this non-inferiority claim
    line = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert line and np.allclose(line[0].get_ydata(), j.cells["line_high"].iloc[0])
    assert np.isclose(j.cells["line_high"].iloc[0], 1.1)
    assert any("decision line" in t for t in _legend_texts(fig))


def test_censored_cell_gets_an_arrow_towards_the_truth_in_the_legend():
    # b censored at its horizon in n = 16: the true ratio a/b is at most what is drawn
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): 1.0, (16, "b"): 4.0}, censored={(16, "b")})
    assert list(j.cells["censored_side"]) == ["", "below"]
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    (arrow,) = _gid(ax, "censored")
    FigureCanvasAgg(fig).draw()
    # the arrow starts at the censored cell's marker and points down (towards smaller ratios)
    assert np.isclose(arrow.xy[1], j.cells["estimate"].iloc[1]) and arrow.xyann[1] < 0
    assert any(t.startswith("censored") for t in _legend_texts(fig))


def test_ill_posed_cell_is_drawn_not_dropped():
    # the baseline b never reaches its target at n = 16 and the statement does not say it does: ill-posed,
    # its ratio a/b beyond the axis' bottom
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): 1.0, (16, "b"): np.nan}, max_ill_posed=0.5)
    assert list(j.cells["verdict"]) == ["holds", "ill-posed"] and j.cells["estimate"].iloc[1] == 0
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    (marker,) = _gid(ax, Verdict.ILL_POSED.value)
    assert np.isclose(marker.get_offsets()[0][0], 16, rtol=0.05)  # at its cell
    assert _gid(ax, "beyond")
    assert any(t.startswith("cell ill-posed") for t in _legend_texts(fig))
    # both sides without a value: on the no-difference line
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): np.nan, (16, "b"): np.nan}, max_ill_posed=0.5)
    assert j.cells["verdict"].iloc[1] == "ill-posed" and np.isnan(j.cells["estimate"].iloc[1])
    ax = bound_vs_empirical(j, {"x": "n"}).get_axes()[0]
    (marker,) = _gid(ax, Verdict.ILL_POSED.value)
    assert np.allclose(marker.get_offsets()[0], [16, 1.0], rtol=0.05)


def test_method_that_never_reaches_its_target_sits_beyond_the_axis():
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): np.nan, (16, "b"): 4.0}, reaches=("a",))
    assert j.cells["verdict"].iloc[1] == "violated" and np.isinf(j.cells["estimate"].iloc[1])
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    assert _gid(ax, "beyond") and any("beyond the axis" in t for t in _legend_texts(fig))


def test_coinciding_competitors_stay_apart_and_categories_are_not_joined():
    values = {(s, m): v for s in ("gauss", "pareto") for m, v in (("a", 1.0), ("b", 2.0), ("c", 2.0))}
    rows = _table({(n, m): v for (n, m), v in values.items()})
    j = judge(_order_claim(higher=("b", "c")), rows, {"n", "method"})
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    pts = _points(ax)
    assert len(pts) == 2  # one series per competitor, both with the same ratios ...
    assert np.allclose(pts[0][1], pts[1][1])
    assert np.all(np.abs(pts[0][0] - pts[1][0]) > 0.1)  # ... drawn side by side
    assert [t.get_text() for t in ax.get_xticklabels()] == ["gauss", "pareto"]
    assert all(ln.get_linestyle() == "None" for ln in ax.get_lines() if ln.get_marker() not in ("", "None", None))
    styles = {(c.lines[0].get_color(), c.lines[0].get_marker()) for c in ax.containers}
    assert len(styles) == 2


def _bound_judgement(cells, kind="upper", **claim):
    c = ClaimSpec(id="x.y", paper="net", statement="s", kind=kind, observable="obs", bound="b:b", **claim)
    for col, v in (("n_rep", 5), ("ratio", 0.5), ("verdict", "holds"), ("note", "")):
        cells.setdefault(col, v)
    return Judgement(c, Verdict.HOLDS, 0.5, pd.DataFrame(cells), "N", ["n"])


def test_no_interval_crosses_zero_on_a_log_axis():
    cells = dict(n=[2, 4, 8], mean=[1e-3, 1e-2, 1.0], ci_low=[-5e-3, 5e-3, 0.5], ci_high=[4e-3, 2e-2, 1.5],
                 bound=[1e-2, 1e-1, 2.0])
    fig = bound_vs_empirical(_bound_judgement(cells), {"x": "n", "logy": True})
    ax = fig.get_axes()[0]
    FigureCanvasAgg(fig).draw()
    assert ax.get_yscale() == "log"
    for c in ax.containers:
        for seg in c.lines[2][0].get_segments():
            assert np.all(np.asarray(seg)[:, 1] > 0), seg
    (cut,) = _gid(ax, "clipped")
    assert np.allclose(cut.get_offsets()[:, 1], ax.get_ylim()[0])  # the arrow sits on the axis' bottom
    assert any("cut at the log axis" in t for t in _legend_texts(fig))


def test_censored_and_valueless_bound_cells_are_marked():
    cells = dict(n=[2, 4, 8], mean=[1.0, 3.0, np.nan], ci_low=[0.9, 2.9, np.nan], ci_high=[1.1, 3.1, np.nan],
                 bound=[2.0, 2.0, np.nan], verdict=["holds", "inconclusive", "ill-posed"],
                 censored_side=["", "above", ""])
    fig = bound_vs_empirical(_bound_judgement(cells), {"x": "n"})
    ax = fig.get_axes()[0]
    (arrow,) = _gid(ax, "censored")
    assert arrow.xyann[1] > 0  # the truth is above a censored hitting time
    assert _gid(ax, "ill-posed")  # no value, no bound: still drawn (on the bottom edge)
    texts = _legend_texts(fig)
    assert any(t.startswith("censored") for t in texts) and any(t.startswith("cell ill-posed") for t in texts)


def test_a_bound_read_from_each_row_is_drawn_at_every_cell():
    # one point per series (the witness depends on a column that splits the series): a line per series
    # would draw nothing; every cell's bound is drawn where it was evaluated
    cells = dict(n=[2, 4, 8], k=[1, 2, 3], mean=[0.01, 0.02, 0.03], ci_low=[0.009, 0.019, 0.029],
                 ci_high=[0.011, 0.021, 0.031], bound=[0.1, 0.2, 0.3])
    j = _bound_judgement(cells)
    j = Judgement(j.claim, j.verdict, j.ratio, j.cells, j.provenance, ["n", "k"])
    fig = bound_vs_empirical(j, {"x": "n", "hue": "k"})
    ax = fig.get_axes()[0]
    dashes = [ln for ln in ax.get_lines() if ln.get_marker() == "_" and ln.get_linestyle() == "None"
              and ln.get_markersize() >= 10]  # (not the error bars' caps)
    drawn = sorted(float(y) for ln in dashes for y in ln.get_ydata())
    assert drawn == [0.1, 0.2, 0.3]


def test_linear_order_draws_the_paired_difference_and_a_line_per_cell():
    # a relative effect on a linear scale: the line (min_effect x the competitor's mean) differs per cell
    j = _judged({(8, "a"): 1.0, (8, "b"): 2.0, (16, "a"): 3.0, (16, "b"): 8.0}, scale="linear")
    fig = bound_vs_empirical(j, {"x": "n"})
    ax = fig.get_axes()[0]
    assert ax.get_yscale() == "linear"
    (xs, ys), = _points(ax)
    assert np.allclose(np.sort(ys), [-5.0, -1.0], atol=1e-9)  # mean(a - b) per cell
    dashes = [ln for ln in ax.get_lines() if ln.get_marker() == "_" and ln.get_markersize() >= 10]
    assert np.allclose(sorted(float(y) for ln in dashes for y in ln.get_ydata()), [0.2, 0.8])
    assert "paired" in ax.get_ylabel() and any("(at each cell)" in t for t in _legend_texts(fig))
