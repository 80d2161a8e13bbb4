"""Figures for a paper (issue 39): the paper style differs (one column, small fonts), sweeps get a PDF, every
PDF embeds TrueType (Type 42) fonts and never Type 3, the subtitle can go, coinciding series stay visible."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tests._toy  # noqa: F401  (registers the toy experiment)
from simcomm.plotting import PAPER_SIZES, sweep_figure

DATA = Path(__file__).parent / "data"

SWEEP = """
[experiment]
name = "toy_mean"
replicates = 4
seed = 1

[grid]
n = [10, 100, 1000]
shape = ["normal", "exp"]
{plot}
"""


def _fonts(pdf: bytes) -> tuple[int, int]:
    """(Type 3 fonts, embedded TrueType font programs) in a PDF written by matplotlib (uncompressed objects)."""
    return len(re.findall(rb"/Subtype\s*/Type3", pdf)), len(re.findall(rb"/FontFile2", pdf))


def _main(args, capsys):
    from simcomm.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
    return out.out


def _table():
    rows = []
    for shape in ("a", "b", "c"):
        for n in (10, 100, 1000):
            for r in range(4):
                # series a and b are equal at every n (b = a): without an offset one hides the other
                v = (1.0 if shape != "c" else 2.0) / n + (0.0 if shape != "c" else 1e-3 * r)
                rows.append(dict(metric="err", value=v, n=n, shape=shape, replicate=r))
    return pd.DataFrame(rows)


def test_paper_style_is_one_column_with_small_fonts_and_differs_from_the_default():
    t = _table()
    plain = sweep_figure(t, "err", "n", ["shape"])
    paper = sweep_figure(t, "err", "n", ["shape"], style="paper")
    wide = sweep_figure(t, "err", "n", ["shape"], style="paper", size="double")
    assert plain.get_size_inches()[0] == pytest.approx(7.2)
    assert paper.get_size_inches()[0] == pytest.approx(PAPER_SIZES["single"]) == pytest.approx(3.5)
    assert wide.get_size_inches()[0] == pytest.approx(7.16)
    ax_plain, ax_paper = plain.get_axes()[0], paper.get_axes()[0]
    assert ax_paper.xaxis.label.get_fontsize() <= 8 < ax_plain.xaxis.label.get_fontsize()
    assert max(t.get_fontsize() for t in ax_paper.get_yticklabels()) <= 7
    with pytest.raises(Exception, match="applies to the paper style only"):
        sweep_figure(t, "err", "n", ["shape"], size="double")


def test_subtitle_can_be_left_out():
    t = _table()
    assert "mean and 95% CI of 4 replicates" in sweep_figure(t, "err", "n", ["shape"])._suptitle.get_text()
    fig = sweep_figure(t, "err", "n", ["shape"], subtitle=False, style="paper")
    assert fig._suptitle.get_text() == "err against n"


def test_series_with_equal_values_are_drawn_side_by_side():
    fig = sweep_figure(_table(), "err", "n", ["shape"], style="paper")
    ax = fig.get_axes()[0]
    pts = {}
    for line in ax.get_lines():
        x, y = line.get_xdata(), line.get_ydata()
        if len(x) == 3 and line.get_marker() not in ("", "None", None, "_"):
            pts[line.get_marker()] = (np.asarray(x, float), np.asarray(y, float))
    assert len(pts) == 3, pts
    (xa, ya), (xb, yb) = [pts[m] for m in sorted(pts) if np.allclose(pts[m][1], 1.0 / np.array([10, 100, 1000]))]
    assert np.allclose(ya, yb)                       # the same values ...
    assert np.all(np.abs(np.log10(xa / xb)) > 0.01)  # ... at visibly different x (a log axis here)
    assert np.allclose(np.sqrt(xa * xb), [10, 100, 1000])  # centred on the true x


def test_cli_pdfs_embed_truetype_never_type3(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # a sweep whose spec asks for the paper style: run writes its PDF (and PNG) too
    (tmp_path / "sweep.toml").write_text(SWEEP.format(plot='[plot]\nstyle = "paper"'))
    out = _main(["run", "sweep.toml", "--jobs", "1", "--out", "o"], capsys)
    [folder] = (tmp_path / "o" / "results" / "sweep").iterdir()
    # the toy table has three metrics: one figure each
    pdfs = [folder / f"sweep_paper_{m}.pdf" for m in ("constant", "mean", "var_of_mean")]
    assert all(p.name in out for p in pdfs) and all(p.with_suffix(".png").is_file() for p in pdfs)
    plot = ["plot", str(folder), "--metric", "mean"]
    _main([*plot, "--style", "paper", "--no-subtitle", "-o", "s.pdf"], capsys)
    _main([*plot, "--style", "annotated", "-o", "a.pdf"], capsys)
    _main([*plot, "--style", "paper", "-o", "p.png"], capsys)
    _main([*plot, "--style", "annotated", "-o", "a.png"], capsys)
    assert Path("p.png").read_bytes() != Path("a.png").read_bytes()
    pdfs += [tmp_path / "s.pdf", tmp_path / "a.pdf"]
    # a claim: the annotated and the paper figure (mathtext labels included)
    _main(["run", str(DATA / "toy_claim.toml"), "--jobs", "1", "--out", "o"], capsys)
    [claim] = (tmp_path / "o" / "results" / "toy_claim").iterdir()
    for style in ("paper", "annotated"):
        _main(["plot", str(claim), "--style", style, "-o", f"c_{style}.pdf"], capsys)
        pdfs.append(tmp_path / f"c_{style}.pdf")
    for pdf in pdfs:
        type3, truetype = _fonts(pdf.read_bytes())
        assert type3 == 0 and truetype >= 1, (pdf, type3, truetype)
