"""Outputs that never clobber, one-line errors, figures for a paper, a report for newcomers, and the
Python API's refusals (issue 17)."""

import json
import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

import tests._toy  # noqa: F401
from simcomm._errors import UserError
from tests.test_cli import _run

DATA = Path(__file__).parent / "data"
SIMS = Path(__file__).resolve().parents[1] / "sims"

ORDER_SPEC = """
[claim]
id = "toy.order"
paper = "expgraph"
class = "derived"
statement = "the mean of 2n draws varies less than the mean of n draws"
kind = "order"
observable = "var_of_mean"
compare = "method"
lower = "large"
higher = ["small"]
provenance = "N"

[experiment]
name = "toy_mean"
replicates = 6
seed = 3

[grid]
n = [4, 16]
shape = ["normal", "exp"]

[plot]
x = "n"
hue = "shape"
logx = true
labels = {method = {large = "$2n$ draws", small = "$n$ draws"}, shape = {normal = "Gaussian", exp = "exponential"}}
"""


def _lines(r):
    return [ln for ln in r.output.splitlines() if ln.strip() and not ln.startswith("plan:")]


# ------------------------------------------------------------------------------------ never clobber
def test_quick_check_writes_its_own_folder_and_shows_full_verdicts(tmp_path):
    out = tmp_path / "out"
    gallery = out / "figures"
    gallery.mkdir(parents=True)
    (gallery / "REPORT.md").write_text("committed report\n")
    # the committed full-grid verdicts (written by check --full); toy.mean came out "violated" there
    full = {"grids": "full", "claims": {"toy.mean": {"verdict": "violated"}}}
    (gallery / "verdicts.json").write_text(json.dumps(full))
    r = _run(["check", "--specs", str(DATA), "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (gallery / "REPORT.md").read_text() == "committed report\n"  # the gallery is untouched
    assert sorted(p.name for p in gallery.iterdir()) == ["REPORT.md", "verdicts.json"]
    quick = out / "results" / "quick"
    report = (quick / "REPORT.md").read_text()
    assert (quick / "toy_mean.png").is_file()
    assert "holds (full grid: violated)" in report and "holds (full grid: violated)" in r.output
    assert "simcomm check --quick" in r.output  # the table is titled after the command


def test_full_check_writes_gallery_and_merges_verdicts_json(tmp_path):
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    earlier = {"grids": "full", "claims": {"other.claim": {"verdict": "holds"}}}
    (out / "figures" / "verdicts.json").write_text(json.dumps(earlier))
    r = _run(["check", "--full", "--specs", str(DATA), "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads((out / "figures" / "verdicts.json").read_text())
    # a claim that is not among the specs any more (retired, renamed) is dropped: the file holds the registered ones
    assert set(data["claims"]) == {"toy.mean"} and data["claims"]["toy.mean"]["verdict"] == "holds"
    # each entry records the spec and the commit that produced it
    from simcomm.checking import verdict_provenance
    from simcomm.results import git_commit
    from simcomm.spec import load

    entry = data["claims"]["toy.mean"]
    assert entry["spec_hash"] == load(DATA / "toy_claim.toml").hash and entry["commit"] == git_commit()
    specs = [load(DATA / "toy_claim.toml")]
    assert verdict_provenance(data["claims"], specs) == {"stale": [], "unrecorded": [], "missing": []}
    # the check can fail: a spec changed after its verdict (here mu) is reported stale
    changed = [load(DATA / "toy_claim.toml", overrides=("mu=2.5",))]
    assert verdict_provenance(data["claims"], changed)["stale"][0].startswith("toy.mean (recorded ")
    assert (out / "figures" / "toy_mean.png").is_file() and (out / "figures" / "REPORT.md").is_file()
    assert "simcomm check --full" in r.output


def test_run_of_a_copied_spec_is_named_after_it_and_never_touches_figures(tmp_path):
    copy = tmp_path / "my_copy.toml"
    copy.write_text((DATA / "toy_claim.toml").read_text().replace("n = [10, 100]", "n = [10, 20]"))
    r = _run(["run", str(copy), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "figures").exists()
    (folder,) = (tmp_path / "results" / "my_copy").iterdir()
    assert {p.name for p in folder.iterdir()} == {"table.csv", "meta.json", "verdict.json", "my_copy.png", "REPORT.md"}
    title = " ".join(r.output.split())  # rich may fold a long title over two lines
    assert "simcomm run " in title and "my_copy.toml" in title.split("simcomm run ")[1][:400]


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_written_files_respect_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        r = _run(["run", str(DATA / "toy_claim.toml"), "--out", str(tmp_path), "--jobs", "1"])
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 6  # table, meta, verdict, figure, report, cached cells
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, p


def test_shipped_specs_by_claim_id_and_list_paths(tmp_path):
    from simcomm.spec import locate

    assert locate("expgraph.rho_even") == SIMS / "expgraph_rho_even.toml"
    assert locate("expgraph_rho_even") == SIMS / "expgraph_rho_even.toml"
    r = _run(["list", "--paths"])
    assert r.exit_code == 0
    assert "expgraph.rho_even" in r.output and str(SIMS / "expgraph_rho_even.toml") in r.output
    r = _run(["run", "expgraph.rho_even", "--quick", "--set", "n=[4, 6]", "--jobs", "1", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "simcomm run expgraph.rho_even --quick" in r.output


# ------------------------------------------------------------------------------------- one-line errors
def test_plot_column_not_in_results_is_a_spec_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((DATA / "toy_claim.toml").read_text().replace('x = "n"', 'x = "kk"'))
    r = _run(["run", str(bad), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 2, r.output
    (line,) = _lines(r)
    assert "[plot]: x = 'kk' is not a column of the results" in line
    assert not list((tmp_path / "results").glob("bad/*/*.png"))  # nothing drawn or written


def test_ctrl_c_says_cells_are_cached_and_exits_130(tmp_path, monkeypatch):
    from simcomm import checking

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(checking, "evaluate", interrupted)
    r = _run(["run", str(DATA / "toy_claim.toml"), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 130
    (line,) = _lines(r)
    assert "cells that finished are cached" in line and "run the same command again to resume" in line


def test_no_warnings_on_cached_rerun_and_many_figures(tmp_path):
    import matplotlib.pyplot as plt

    args = ["run", str(DATA / "toy_claim.toml"), "--out", str(tmp_path), "--jobs", "2"]
    assert _run(args).exit_code == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = _run(args)  # every cell cached
        from simcomm.claims import judge
        from simcomm.plotting import bound_vs_empirical
        from simcomm.results import read_results
        from simcomm.spec import ClaimSpec

        (folder,) = (tmp_path / "results" / "toy_claim").iterdir()
        res = read_results(folder)
        claim = ClaimSpec(**{**res.meta["spec"]["claim"], "higher": ()})
        j = judge(claim, res.table, {"n", "mu"})
        for _ in range(25):  # a check draws ~40 figures
            bound_vs_empirical(j, {})
    assert r.exit_code == 0 and "cancelled" not in r.output
    assert not [w for w in caught if "figures" in str(w.message) or "cancelled" in str(w.message)], caught
    assert plt.get_fignums() == []


def test_python_api_refuses_complex_input_and_missing_rng():
    from simcomm.compress import bernoulli_sparsify, qsgd, rand_k, rtop_k, stochastic_round, ternary, top_k

    z = np.array([1.0 + 2.0j, 3.0, -1.0])
    for call in (lambda: top_k(z, 1), lambda: rand_k(z, 1, rng=0), lambda: rtop_k(z, 1, 2, rng=0),
                 lambda: qsgd(z, 2, rng=0), lambda: ternary(z, rng=0), lambda: stochastic_round(z, 0.5, rng=0),
                 lambda: bernoulli_sparsify(z, 0.5, rng=0)):
        with pytest.raises(UserError, match="complex"):
            call()
    x = np.array([1.0, -2.0, 3.0])
    for call in (lambda: qsgd(x, 2), lambda: ternary(x), lambda: stochastic_round(x, 0.5),
                 lambda: bernoulli_sparsify(x, 0.5), lambda: rand_k(x, 1), lambda: rtop_k(x, 1, 2)):
        with pytest.raises(TypeError, match="rng"):
            call()
    for call in (lambda: qsgd(x, 2, rng=None), lambda: ternary(x, rng=None), lambda: rand_k(x, 1, rng=None),
                 lambda: rtop_k(x, 1, 2, rng=None)):
        with pytest.raises(UserError, match="pass rng="):
            call()
    from simcomm.compress import QSGD

    with pytest.raises(UserError, match="pass rng="):
        QSGD(4).apply(x, rng=None)


def test_torus_accepts_a_square_node_count():
    from simcomm.topology import mixing_matrix, torus

    assert np.array_equal(mixing_matrix(torus(16)), mixing_matrix(torus(4, 4)))
    assert torus(16).n == 16
    with pytest.raises(UserError, match="not a square"):
        torus(15)


# ----------------------------------------------------------------------------------- paper figures
def test_paper_style_figure_pdf_svg_png(tmp_path):
    spec = tmp_path / "order.toml"
    spec.write_text(ORDER_SPEC)
    r = _run(["run", str(spec), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "results" / "order").iterdir()
    for fmt, magic in (("pdf", b"%PDF"), ("svg", b"<?xml"), ("png", b"\x89PNG")):
        target = tmp_path / f"paper.{fmt}"
        r = _run(["plot", str(folder), "--style", "paper", "-o", str(target)])
        assert r.exit_code == 0, r.output
        assert target.read_bytes().startswith(magic)
    svg = (tmp_path / "paper.svg").read_text()
    # no verdict, no claim id, no undecodable legend entry; the spec's labels are used
    for word in ("holds", "violated", "inconclusive", "toy.order", "order not shown", "shape="):
        assert word not in svg
    from simcomm.claims import judge
    from simcomm.plotting import PAPER_COLORS, paper_figure
    from simcomm.results import read_results
    from simcomm.spec import load

    s = load(spec)
    fig = paper_figure(judge(s.claim, read_results(folder).table, set(s.grid) | set(s.params)), s.plot)
    axes = fig.get_axes()
    assert len(axes) == 2  # one panel per shape: no curve hides another
    assert [a.get_title() for a in axes] == ["exponential", "Gaussian"]
    legend = axes[-1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["$2n$ draws", "$n$ draws"]
    lines = [ln for ln in axes[0].get_lines() if len(ln.get_xdata()) > 1 and ln.get_linestyle() != "None"]
    styles = {(ln.get_color(), ln.get_marker(), str(ln.get_linestyle())) for ln in lines}
    assert len(styles) == 2 and len({s[1] for s in styles}) == 2 and len({s[2] for s in styles}) == 2
    assert {s[0].lower() for s in styles} <= {c.lower() for c in PAPER_COLORS}


def test_paper_style_clips_log_axis_to_informative_range():
    import pandas as pd

    from simcomm.claims import Judgement, Verdict
    from simcomm.plotting import paper_figure
    from simcomm.spec import ClaimSpec

    claim = ClaimSpec(id="x.floor", paper="urq", statement="s", kind="upper", observable="plateau", bound="b:b")
    cells = pd.DataFrame({"lr": [0.1, 0.2, 0.1, 0.2], "sigma2": [0.0, 0.0, 10.0, 10.0],
                          "mean": [1e-32, 3e-31, 0.2, 0.5], "ci_low": [1e-32, 2e-31, 0.1, 0.4],
                          "ci_high": [2e-32, 4e-31, 0.3, 0.6], "bound": [1e-31, 1e-30, 0.5, 1.0],
                          "n_rep": 5, "ratio": 0.5, "verdict": "holds", "note": ""})
    j = Judgement(claim, Verdict.HOLDS, 0.5, cells, "N", ["lr", "sigma2"])
    fig = paper_figure(j, {"x": "lr", "hue": "sigma2", "logy": True, "labels": {"sigma2": r"$\sigma_\star^2$"}})
    ax = fig.get_axes()[0]
    low, high = ax.get_ylim()
    assert low > 1e-3 and high >= 1.0  # not 1e-32..1
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert r"$\sigma_\star^2$ = 0" in texts and r"$\sigma_\star^2$ = 10" in texts


def test_spec_plot_style_and_labels_are_validated():
    from simcomm.spec import loads

    text = (DATA / "toy_claim.toml").read_text()
    with pytest.raises(UserError, match="style 'poster' is unknown"):
        loads(text.replace('x = "n"', 'x = "n"\nstyle = "poster"'))
    with pytest.raises(UserError, match="labels.n must be a string"):
        loads(text.replace('x = "n"', 'x = "n"\nlabels = {n = 3}'))
    assert loads(text.replace('x = "n"', 'x = "n"\nstyle = "paper"')).plot["style"] == "paper"


# ------------------------------------------------------------------------------------------- report
def test_report_counts_defines_ratio_and_says_diverged():
    import pandas as pd

    from simcomm.claims import Judgement, Verdict
    from simcomm.report import report_markdown
    from simcomm.spec import ClaimSpec

    claim = ClaimSpec(id="x.rate", paper="urq", statement="s", kind="upper", observable="gap", bound="b:b")
    cells = pd.DataFrame({"lr": [0.1, 0.9], "n_rep": [5, 5], "mean": [0.2, float("nan")],
                          "ci_low": [0.1, float("nan")], "ci_high": [0.3, float("nan")], "bound": [0.5, 0.5],
                          "ratio": [0.4, float("nan")], "verdict": ["holds", "inconclusive"], "note": ["", ""]})
    j = Judgement(claim, Verdict.INCONCLUSIVE, 0.4, cells, "N", ["lr"])
    text = report_markdown([j], {}, mode="quick", meta={}, committed={"x.rate": "holds"})
    head = text.split("\n## ")[0]
    assert "1 claim: **1 inconclusive**." in head
    assert "`upper`: the largest empirical mean / bound" in head
    assert "inconclusive (full grid: holds)" in head
    row = [ln for ln in text.splitlines() if ln.startswith("| 0.9 ")][0]
    assert "diverged" in row and "nan" not in row


def test_spec_style_paper_makes_run_write_paper_figures(tmp_path):
    spec = tmp_path / "paperstyle.toml"
    spec.write_text((DATA / "toy_claim.toml").read_text().replace('x = "n"', 'x = "n"\nstyle = "paper"'))
    r = _run(["run", str(spec), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "results" / "paperstyle").iterdir()
    assert (folder / "paperstyle_paper.pdf").read_bytes().startswith(b"%PDF")
    assert (folder / "paperstyle_paper.png").is_file() and (folder / "paperstyle.png").is_file()
    # simcomm plot uses the spec's style by default
    r = _run(["plot", str(folder), "-o", str(tmp_path / "f.svg")])
    assert r.exit_code == 0 and "toy.mean" not in (tmp_path / "f.svg").read_text()


def test_report_names_order_columns_as_differences():
    import pandas as pd

    from simcomm.claims import Judgement, Verdict
    from simcomm.report import report_markdown
    from simcomm.spec import ClaimSpec

    claim = ClaimSpec(id="x.order", paper="is", statement="s", kind="order", observable="loss", compare="method",
                      lower="a", higher=("b",), provenance="N")
    cells = pd.DataFrame({"n": [4], "other": ["b"], "n_rep": [5], "mean": [1.0], "other_mean": [2.0],
                          "ci_low": [-1.5], "ci_high": [-0.5], "ratio": [0.5], "verdict": ["holds"], "note": [""],
                          "mean_lo": [0.9], "mean_hi": [1.1], "other_lo": [1.9], "other_hi": [2.1]})
    text = report_markdown([Judgement(claim, Verdict.HOLDS, 0.5, cells, "N", ["n"])], {}, mode="full", meta={})
    assert "CI low of mean(a) - mean(other)" in text and "| replicates |" in text


def test_committed_verdicts_hold_exactly_the_registered_claims():
    from simcomm.spec import find_specs, load

    ids = {load(p, quick=True).claim.id for p in find_specs() if load(p, quick=True).claim is not None}
    committed = json.loads((Path(__file__).resolve().parents[1] / "figures" / "verdicts.json").read_text())["claims"]
    # exactly the registered claims: no retired ids, and every claim has a committed full-grid verdict
    assert set(committed) == ids, (f"retired: {sorted(set(committed) - ids)}; "
                                   f"without a full-grid verdict: {sorted(ids - set(committed))}")


def test_committed_verdicts_come_from_the_shipped_specs():
    # A committed verdict whose entry records a spec hash must come from the spec as shipped: a spec
    # edited after its full run (statement, grid, margin) fails here until `simcomm check --full ID`
    # re-runs it. Every entry records its spec hash and the commit of the run that made it.
    from simcomm.checking import select_specs, verdict_provenance

    committed = json.loads((Path(__file__).resolve().parents[1] / "figures" / "verdicts.json").read_text())["claims"]
    found = verdict_provenance(committed, select_specs((), quick=False))
    assert not found["stale"], "verdicts made with another version of the spec: " + "; ".join(found["stale"])
    assert not found["missing"]
    assert not found["unrecorded"], "verdicts without a spec hash: " + ", ".join(found["unrecorded"])
    assert all(entry.get("commit") for entry in committed.values()), "every verdict records the commit of its run"


def test_a_partial_full_run_keeps_the_other_claims_rows_in_the_readme(tmp_path):
    # check --full ID --readme: the claims not re-run keep their rows, rebuilt from verdicts.json
    from simcomm.claims import Judgement, Verdict
    from simcomm.report import update_readme
    from simcomm.spec import ClaimSpec

    c = ClaimSpec(id="a.b", paper="urq", statement="s", kind="upper", observable="m", bound="b:b")
    summary = {"verdict": "violated", "reason": "1 of 2 cells", "provenance": "N", "ratio": 1.5, "detect": 1.2,
               "detect_exact": False, "controls": [{"name": "ctl", "verdict": "violated"}]}
    j = Judgement.from_summary(c, summary)
    assert j.verdict is Verdict.VIOLATED and j.ratio == 1.5 and j.detect == 1.2 and j.controls == (("ctl", "violated"),)
    text = update_readme("<!-- claims:start -->\n<!-- claims:end -->\n<!-- gallery:start -->\n<!-- gallery:end -->\n",
                         [j], {"a.b": "a_b.png"}, {})
    assert "`a.b`" in text and "**violated**" in text and "1.2" in text


def test_readme_counts_are_the_committed_verdicts():
    # README's claims-per-class block is generated (check --full --readme README.md): it equals what the
    # committed verdicts.json and the shipped specs give, so the front page cannot drift from the gallery
    from simcomm.cli.check import _with_committed_rows
    from simcomm.report import class_verdict_lines

    root = Path(__file__).resolve().parents[1]
    judgements, _ = _with_committed_rows([], None, root / "figures" / "verdicts.json")
    block = (root / "README.md").read_text().split("<!-- counts:start -->\n", 1)[1].split("\n<!-- counts:end -->")[0]
    assert block.splitlines() == class_verdict_lines(judgements)
