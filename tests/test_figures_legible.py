"""Figures a reader does not stumble on (issue 31): legends, series styles, categorical axes, tick labels.

Rules: one legend entry per series and shared entries once; the legend never wider than the figure
nor over the axes; colour and marker distinct per series; categorical axes without connecting lines
and with plain tick labels; no offset text on a linear axis.
"""

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from simcomm.claims import Judgement, Verdict
from simcomm.plotting import bound_vs_empirical, paper_figure, sweep_figure
from simcomm.spec import ClaimSpec


def _judgement(cells: pd.DataFrame, columns, kind="upper", **claim):
    c = ClaimSpec(id="x.y", paper="net", statement="s", kind=kind, observable="obs", bound="b:b", **claim)
    return Judgement(c, Verdict.HOLDS, 0.5, cells, "N", list(columns))


def _cells(rows):
    df = pd.DataFrame(rows)
    for col, v in (("n_rep", 5), ("ratio", 0.5), ("verdict", "holds"), ("note", "")):
        df[col] = v
    return df


def _legend_texts(fig):
    texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    for ax in fig.get_axes():
        if ax.get_legend() is not None:
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    return texts


def _legend_inside_canvas(fig):
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    for lg in fig.legends:
        bb = lg.get_window_extent(r)
        assert bb.x0 >= -1 and bb.x1 <= W + 1 and bb.y0 >= -1 and bb.y1 <= H + 1, (bb, W, H)
        for ax in fig.get_axes():  # under the axes, never over them
            assert bb.y1 <= ax.get_window_extent(r).y0 + 1


def test_twenty_identical_series_are_one_entry_and_the_margin_is_named_once():
    rows = [dict(n=n, check=c, k=k, mean=0.0, ci_low=0.0, ci_high=0.0, bound=0.0)
            for n in (2, 4, 8, 16) for c in ("a", "b", "c", "d", "e") for k in (1, 2, 3, 4)]
    j = _judgement(_cells(rows), ["n", "check", "k"], kind="equal", margin_abs=1e-12)
    fig = bound_vs_empirical(j, {"x": "n"})
    texts = _legend_texts(fig)
    assert sum("all 20 series" in t for t in texts) == 1 and texts.count("equivalence margin") == 1
    assert not fig.get_axes()[0].yaxis.get_offset_text().get_text()  # no stray 1e-12 above the axis
    _legend_inside_canvas(fig)


def test_shared_bounds_drawn_once_each_and_series_styles_distinct():
    rows = [dict(r=r, nnz=nnz, k=k, alpha=a, mean=0.5 + 0.01 * i, ci_low=0.49, ci_high=0.51 + 0.01 * i,
                 bound=1 - k / 1000)
            for i, (nnz, k, a) in enumerate([(50, 10, 1), (50, 10, 3), (50, 100, 1), (50, 100, 3),
                                             (1000, 10, 1), (1000, 10, 3), (1000, 100, 1), (1000, 100, 3)])
            for r in (100, 400)]
    j = _judgement(_cells(rows), ["r", "nnz", "k", "alpha"])
    fig = bound_vs_empirical(j, {"x": "r"})
    texts = _legend_texts(fig)
    bounds = [t for t in texts if t.startswith("upper bound")]
    assert bounds == ["upper bound ($k$ = 10)", "upper bound ($k$ = 100)"]  # two distinct curves, once each
    assert not any("=" in t and "[" in t for t in texts)  # no raw [key=value] tags
    _legend_inside_canvas(fig)
    paper = paper_figure(j, {"x": "r"})
    _legend_inside_canvas(paper)
    assert sum(t.startswith("bound") for t in _legend_texts(paper)) == 2


def test_sweep_with_many_series_facets_and_keeps_colour_marker_pairs_distinct():
    rng = np.random.default_rng(0)
    names = [f"c{i}" for i in range(20)]
    rows = [dict(metric="err", value=float(rng.random() + 0.1) * (i + 1), compressor=c, vector=v, bits=b, replicate=r)
            for i, c in enumerate(names) for v in ("gauss", "sparse") for b in (1.0, 2.0, 4.0) for r in range(3)]
    fig = sweep_figure(pd.DataFrame(rows), "err", "bits", ["compressor", "vector"])
    axes = fig.get_axes()
    assert [a.get_title() for a in axes] == ["gauss", "sparse"]  # the two-valued column became panels
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == sorted(names)  # one entry per series, value alone
    pairs = {(h.get_color(), h.get_marker()) for h in legend.legend_handles}
    assert len(pairs) == 20
    _legend_inside_canvas(fig)


def test_categorical_x_has_plain_labels_and_no_connecting_lines():
    rows = [dict(metric="err", value=v, topology=t, n=n, replicate=0)
            for t, v in (("ring", 1.0), ("exponential_graph", 0.1)) for n in (8, 16)]
    fig = sweep_figure(pd.DataFrame(rows), "err", "topology", ["n"])
    ax = fig.get_axes()[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["exponential-graph", "ring"]
    assert all(ln.get_linestyle() == "None" for ln in ax.get_lines() if len(ln.get_xdata()) > 1)


@pytest.mark.parametrize("updates, words", [
    ([(0, 4), (4, 4)], ["checking: 4/4 cells"]),
    ([(0, 4), (4, 4), (0, 2), (1, 2)], ["checking, pass 2 (more replicates or controls): 1/2 cells"]),
])
def test_progress_line_names_what_it_counts(updates, words):
    from simcomm.cli._common import progress_bar

    with progress_bar("checking", enabled=False) as bar:
        for done, total in updates:
            bar.update(done, total)
        line = bar.status()
    assert all(w in line for w in words), line
    with progress_bar("checking", enabled=False) as bar:
        bar.update(3, 3)
        bar.phase("adaptive replicates, batch 2")
        bar.update(0, 5)
        assert bar.status().startswith("checking, pass 2 (adaptive replicates, batch 2): 0/5 cells")


def test_check_names_the_controls_pass(tmp_path):
    # checking.evaluate tells a bar with phase() which pass starts; the controls pass is named
    from simcomm import checking
    from simcomm.cli._common import progress_bar

    specs = checking.select_specs(("expgraph.rho_even",), quick=True)
    with progress_bar("checking", enabled=False) as bar:
        names = []
        original = bar.phase
        bar.phase = lambda name: (names.append(name), original(name))
        checking.evaluate(specs, jobs=1, controls=True, cache_dir=tmp_path, progress=bar.update)
    assert "negative controls" in names and "pass 2 (negative controls)" in bar.status()
