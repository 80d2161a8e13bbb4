"""Collect the speed ratios (baseline time / simcomm time) measured by the benchmarks in this run.

Each benchmark stores ``benchmark.extra_info["ratio"]`` and ``["baseline"]``; at the end of the
session the ratios are printed as one table, and written to ``$SIMCOMM_BENCH_TABLE`` when set: as
JSON with the commit, date and load it was measured under when the path ends in ``.json`` (what
``benchmarks/render_performance.py`` writes into README.md and docs/performance.md), else as markdown.
"""

import datetime
import json
import os
import subprocess

import pytest

_RATIOS: list[tuple[str, str, float, str]] = []
_LOAD_BEFORE: list[float] = []


def pytest_sessionstart(session):
    _LOAD_BEFORE.append(os.getloadavg()[0])


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(__file__)).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _measured_at() -> dict:
    import numba
    import numpy

    return {"commit": _git("rev-parse", "HEAD") or "unknown",
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "date": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
            "load_before": _LOAD_BEFORE[0] if _LOAD_BEFORE else float("nan"),
            "load_after": os.getloadavg()[0], "numpy": numpy.__version__, "numba": numba.__version__}


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
    if path and path.endswith(".json"):
        rows = [{"name": n, "baseline": b, "ratio": r, "target": t} for n, b, r, t in _RATIOS]
        measured_at = _measured_at()  # before the file is opened: it may be the tracked table itself
        with open(path, "w") as fh:
            json.dump({"measured_at": measured_at, "rows": rows}, fh, indent=1)
            fh.write("\n")
    elif path:
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
