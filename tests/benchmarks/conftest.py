"""Collect the speed ratios (baseline time / simcomm time) measured by the benchmarks in this run.

Each benchmark stores ``benchmark.extra_info["ratio"]`` and ``["baseline"]``; at the end of the
session the ratios are printed as one table, and written to ``$SIMCOMM_BENCH_TABLE`` when set
(``python -m pytest tests/benchmarks --benchmark-enable`` regenerates the README's table).
"""

import os

import pytest

_RATIOS: list[tuple[str, str, float, str]] = []


@pytest.fixture(autouse=True)
def _collect_ratio(request):
    yield
    bench = request.node.funcargs.get("benchmark") if hasattr(request.node, "funcargs") else None
    if bench is None:
        return
    info = getattr(bench, "extra_info", {}) or {}
    if "ratio" in info:
        _RATIOS.append((request.node.name, str(info.get("baseline", "?")), float(info["ratio"]),
                        str(info.get("target", ""))))


def pytest_terminal_summary(terminalreporter):
    if not _RATIOS:
        return
    lines = ["| benchmark | baseline | speed-up (baseline time / simcomm time) | target |", "|---|---|---|---|"]
    def cell(text):  # baselines such as argpartition(|x|) must not split a markdown cell
        return str(text).replace("|", "\\|")

    lines += [f"| {cell(name)} | {cell(base)} | {ratio:.1f}x | {cell(target)} |"
              for name, base, ratio, target in _RATIOS]
    terminalreporter.write_sep("-", "simcomm speed ratios (measured in this run)")
    for line in lines:
        terminalreporter.write_line(line)
    path = os.environ.get("SIMCOMM_BENCH_TABLE")
    if path:
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
