"""Write the committed benchmark table into README.md and docs/performance.md.

The benchmarks record their ratios as JSON when asked::

    SIMCOMM_BENCH_TABLE=benchmarks/bench_table.json python -m pytest tests/benchmarks -p no:randomly
    python benchmarks/render_performance.py

The second command replaces the text between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` in
docs/performance.md (every row) and README.md (the hot kernels), so both say what the committed table
measured, at which commit and under what load. ``tests/test_bench_table.py`` fails when either file
drifts from the table, or when a kernel's source changed after the commit the table was measured at.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "benchmarks" / "bench_table.json"

#: the rows the README shows (prefixes of benchmark names): the hot kernels of every training run
HEADLINE = (
    "test_bench_topk_vs_argpartition", "test_bench_dense_topk_vs_argpartition", "test_bench_rtopk_vs_topk",
    "test_bench_quantize_vs_numpy", "test_bench_elementwise_vs_numpy[fp16]",
    "test_bench_elementwise_vs_numpy[minmax_uint8]", "test_bench_dmsgd_step", "test_bench_ef_epoch_vs_worker_loop",
    "test_bench_gradient_tracking_step", "test_bench_choco_step", "test_bench_link_drop_step",
    "test_bench_random_matching_mix", "test_bench_pushsum_step", "test_bench_payload_roundtrip",
)

_FLOOR = re.compile(r"floor\s*=?\s*([0-9.]+)[^;]*?<=\s*([0-9.]+)")
_RATIO = re.compile(r"^\s*>=?\s*([0-9.]+)x")


def target_met(ratio: float, target: str) -> bool | None:
    """Whether a row meets the target its benchmark states; ``None`` where it states none.

    Two forms are read: a speed-up floor (``">= 5x ..."``: the ratio must reach it) and a bandwidth
    ceiling (``"... floor = 1.20 (target <= 1.3)"``: the measured time over the copy floor must not
    exceed it).

    >>> target_met(6.0, ">= 5x (issue 40)"), target_met(1.2, "time/bandwidth floor = 1.40 (target <= 1.3)")
    (True, False)
    >>> target_met(2.0, "") is None
    True
    """
    m = _FLOOR.search(target)
    if m:
        return float(m.group(1).rstrip(".")) <= float(m.group(2).rstrip("."))
    m = _RATIO.match(target)
    if m:
        return ratio >= float(m.group(1).rstrip("."))
    return None


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def _mark(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: ""}[met]


def provenance(table: dict) -> str:
    """One line: where and when the table was measured."""
    m = table["measured_at"]
    return (f"Measured at commit `{m['commit'][:10]}`{' (uncommitted changes)' if m.get('dirty') else ''} "
            f"on {m['date']}, {m['cpus']} CPUs, load average {m['load_before']:.2f} before and "
            f"{m['load_after']:.2f} after; numpy {m['numpy']}, numba {m['numba']}.")


def render_rows(rows) -> str:
    """The markdown table of ``rows`` with a column saying whether each meets its target."""
    lines = ["| benchmark | baseline | speed-up (baseline time / simcomm time) | target | |",
             "|---|---|---|---|---|"]
    lines += [f"| {_cell(r['name'])} | {_cell(r['baseline'])} | {r['ratio']:.1f}x | {_cell(r['target'])} | "
              f"{_mark(target_met(r['ratio'], r['target']))} |" for r in rows]
    return "\n".join(lines)


def _summary(rows) -> str:
    met = [target_met(r["ratio"], r["target"]) for r in rows]
    judged = [m for m in met if m is not None]
    return f"{sum(judged)} of the {len(judged)} rows with a target meet it."


def render_full(table: dict) -> str:
    """docs/performance.md's block: every row."""
    rows = table["rows"]
    return "\n\n".join([provenance(table) + " " + _summary(rows), render_rows(rows)])


def render_headline(table: dict) -> str:
    """README.md's block: the hot kernels, and where the rest is."""
    rows = [r for r in table["rows"] if r["name"].startswith(HEADLINE)]
    note = ("Every row, and the measured ceiling where a target is missed: "
            "[docs/performance.md](docs/performance.md).")
    return "\n\n".join([provenance(table) + " " + _summary(rows), render_rows(rows), note])


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between the bench markers replaced by ``block``."""
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"no '{start}' ... '{end}' block")
    return text[: i + len(start)] + "\n" + block + "\n" + text[j:]


def main(argv=None) -> int:
    """Render the table at ``argv[0]`` (default: the committed one) into both pages."""
    path = Path(argv[0]) if argv else TABLE
    table = json.loads(path.read_text())
    for target, render in ((ROOT / "docs" / "performance.md", render_full), (ROOT / "README.md", render_headline)):
        target.write_text(replace_block(target.read_text(), render(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
