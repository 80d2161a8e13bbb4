"""The committed benchmark table, README.md and docs/performance.md say the same, about the current kernels."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("render_performance", ROOT / "benchmarks" / "render_performance.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)

#: sources whose speed the benchmarks measure: a change to one of them needs a new table
KERNEL_SOURCES = ("simcomm/backends", "simcomm/compress", "simcomm/network/_payload.py", "simcomm/optim",
                  "simcomm/topology", "simcomm/models", "simcomm/torch", "tests/benchmarks")


def _table():
    return json.loads(render.TABLE.read_text())


def _block(text):
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    return text[text.index(start) + len(start): text.index(end)].strip()


@pytest.mark.parametrize("doc, fn", [("README.md", "render_headline"), ("docs/performance.md", "render_full")])
def test_docs_are_rendered_from_the_committed_table(doc, fn):
    assert _block((ROOT / doc).read_text()) == getattr(render, fn)(_table()).strip(), (
        f"{doc} differs from benchmarks/bench_table.json: run python benchmarks/render_performance.py")


def test_table_was_measured_at_a_clean_commit_with_every_headline_row():
    table = _table()
    assert not table["measured_at"]["dirty"], "the table was measured with uncommitted changes"
    names = [r["name"] for r in table["rows"]]
    for prefix in render.HEADLINE:
        assert any(n.startswith(prefix) for n in names), f"no benchmark row {prefix} in the table"


def test_no_kernel_changed_since_the_table_was_measured():
    commit = _table()["measured_at"]["commit"]
    known = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"commit {commit[:10]} is not in this checkout's history (not a git clone, or shallow)")
    changed = subprocess.run(["git", "diff", "--name-only", commit, "--", *KERNEL_SOURCES], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert not changed, (f"kernel sources changed after the benchmark table's commit {commit[:10]}: "
                         f"{', '.join(changed[:5])}; regenerate it (docs/performance.md says how)")


@pytest.mark.parametrize("ratio, target, met", [
    (7.1, ">= 20x; time/bandwidth floor = 1.20 (target <= 4); no step can beat dense/floor = 8.5x here", True),
    (3.3, ">= 5x (issue 40), allocating", False),
    (5.0, ">= 5x", True),
    (11.6, "time/bandwidth floor = 2.41 (issue target <= 2)", False),
    (1.8, "no n x n matrix; time/bandwidth floor = 1.82", None),
    (0.7, ">= 0.67x", True),
    (3.4, "ratio vs numpy 3.39; time/bandwidth floor 4.4 (target <= 3)", False),
])
def test_target_met_reads_both_forms(ratio, target, met):
    assert render.target_met(ratio, target) is met


def test_replace_block_keeps_the_rest_and_refuses_a_missing_block():
    text = "a\n<!-- bench:start -->\nold\n<!-- bench:end -->\nb\n"
    assert render.replace_block(text, "new") == "a\n<!-- bench:start -->\nnew\n<!-- bench:end -->\nb\n"
    with pytest.raises(ValueError, match="bench:start"):
        render.replace_block("no markers", "x")


def _run(commit, ratios, dirty=False):
    return {"measured_at": {"commit": commit, "dirty": dirty, "load_before": 0.1, "load_after": 0.4, "date": "d",
                            "cpus": 2, "numpy": "x", "numba": "y"},
            "rows": [{"name": "speedup", "ratio": ratios[0], "baseline": "b", "target": ">= 5x"},
                     {"name": "floor", "ratio": ratios[1], "baseline": "b",
                      "target": f"time/bandwidth floor = {ratios[2]:.2f} (target <= 2)"}]}


def test_median_takes_each_rows_middle_run_whole():
    merged = render.merge_median([_run("c", (4.0, 9.0, 2.5)), _run("c", (7.0, 8.0, 1.5)), _run("c", (5.0, 1.0, 1.9))])
    assert [r["ratio"] for r in merged["rows"]] == [5.0, 1.0]  # the floor row: median by the floor (1.9), its ratio too
    assert "floor = 1.90" in merged["rows"][1]["target"]
    assert merged["measured_at"]["runs"] == 3 and "median of 3 runs" in render.provenance(merged)


@pytest.mark.parametrize("runs, why", [
    ([_run("c", (1, 1, 1)), _run("d", (1, 1, 1)), _run("c", (1, 1, 1))], "one clean commit"),
    ([_run("c", (1, 1, 1)), _run("c", (1, 1, 1), dirty=True), _run("c", (1, 1, 1))], "one clean commit"),
    ([_run("c", (1, 1, 1)), _run("c", (1, 1, 1))], "odd number"),
])
def test_median_refuses_runs_it_cannot_merge(runs, why):
    with pytest.raises(ValueError, match=why):
        render.merge_median(runs)
