"""Write the committed benchmark table into README.md and docs/performance.md.

The benchmarks record their ratios as JSON when asked::

    SIMCOMM_BENCH_TABLE=benchmarks/bench_table.json python -m pytest tests/benchmarks -p no:randomly
    python benchmarks/render_performance.py

The second command replaces the text between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` in
docs/performance.md (every row) and README.md (the hot kernels), so both say what the committed table
measured, at which commit and under what load. Memory-bound rows move by up to a third from one idle
run to the next, so the committed table is the per-row median of several runs at one commit::

    for i in 1 2 3; do SIMCOMM_BENCH_TABLE=/tmp/bench$i.json python -m pytest tests/benchmarks -p no:randomly; done
    python benchmarks/render_performance.py --median /tmp/bench1.json /tmp/bench2.json /tmp/bench3.json

``--median`` writes the merged table to benchmarks/bench_table.json, then renders it.
``tests/test_bench_table.py`` fails when either file drifts from the table, or when a kernel's source
changed after the commit the table was measured at.
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


def judged_value(row: dict) -> float:
    """The number a row's target is judged on: its time over the floor where it states one, else its ratio."""
    m = _FLOOR.search(row["target"])
    return float(m.group(1).rstrip(".")) if m else row["ratio"]


def merge_median(tables: list[dict]) -> dict:
    """One table from runs at the same clean commit, each row taken whole from one run.

    Per row, the run whose judged value (:func:`judged_value`) is the median (an odd number of runs: the
    middle one) gives the whole row, so a row's ratio and its target string come from the same run.

    >>> t = lambda r, c="c0": {"measured_at": {"commit": c, "dirty": False, "load_before": 0.1,
    ...     "load_after": 0.5, "date": "d"}, "rows": [{"name": "a", "ratio": r, "target": ">= 5x"}]}
    >>> [r["ratio"] for r in merge_median([t(4.0), t(6.0), t(5.0)])["rows"]]
    [5.0]
    """
    if len(tables) % 2 == 0:
        raise ValueError(f"--median needs an odd number of runs, got {len(tables)}")
    ats = [t["measured_at"] for t in tables]
    if len({a["commit"] for a in ats}) != 1 or any(a["dirty"] for a in ats):
        raise ValueError("--median merges runs at one clean commit; these differ or have uncommitted changes")
    names = [r["name"] for r in tables[0]["rows"]]
    if any([r["name"] for r in t["rows"]] != names for t in tables):
        raise ValueError("--median merges runs of the same benchmarks; the rows differ")
    rows = []
    for i in range(len(names)):
        runs = sorted((t["rows"][i] for t in tables), key=judged_value)
        rows.append(runs[len(runs) // 2])
    at = dict(ats[-1], runs=len(tables), load_before=max(a["load_before"] for a in ats),
              load_after=max(a["load_after"] for a in ats))
    return {"measured_at": at, "rows": rows}


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def _mark(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: ""}[met]


def provenance(table: dict) -> str:
    """One line: where and when the table was measured."""
    m = table["measured_at"]
    runs = f"; each row the median of {m['runs']} runs" if m.get("runs", 1) > 1 else ""
    worst = " (the highest of the runs)" if m.get("runs", 1) > 1 else ""
    return (f"Measured at commit `{m['commit'][:10]}`{' (uncommitted changes)' if m.get('dirty') else ''} "
            f"on {m['date']}, {m['cpus']} CPUs, load average {m['load_before']:.2f} before and "
            f"{m['load_after']:.2f} after{worst}; numpy {m['numpy']}, numba {m['numba']}{runs}.")


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
    """Render the table at ``argv[0]`` (default: the committed one) into both pages.

    With ``--median A B C``, first merge those runs (:func:`merge_median`) into the committed table.
    """
    argv = list(argv or [])
    if argv[:1] == ["--median"]:
        try:
            table = merge_median([json.loads(Path(p).read_text()) for p in argv[1:]])
        except (OSError, ValueError) as exc:
            print(f"render_performance: {exc}", file=sys.stderr)
            return 2
        TABLE.write_text(json.dumps(table, indent=1) + "\n")
    else:
        table = json.loads((Path(argv[0]) if argv else TABLE).read_text())
    for target, render in ((ROOT / "docs" / "performance.md", render_full), (ROOT / "README.md", render_headline)):
        target.write_text(replace_block(target.read_text(), render(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
