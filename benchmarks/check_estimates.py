"""Compare the plan's estimate of ``simcomm check`` runs with what they measure.

Usage::

    python benchmarks/check_estimates.py --quick                      # every claim, quick grids
    python benchmarks/check_estimates.py --full CLAIM [CLAIM ...]     # one full-grid run per claim

Each run is ``simcomm check ... --jobs 2`` in a fresh output folder (nothing cached). Printed per run:
the modelled wall time (the plan's line) and the measured one, and the modelled CPU seconds (cells,
dispatch and judging) against the CPU seconds the run's processes used (``RUSAGE_CHILDREN``: the
command and its worker processes). On a shared machine the wall time depends on the load; the CPU
ratio is the one to read there. ``--json FILE`` appends the rows to a file; ``--table FILE`` prints
them again with the estimates of the current model.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def one(claims: list[str], quick: bool, jobs: int, controls: bool) -> dict:
    """Plan and run ``simcomm check`` on ``claims``; the plan's estimate next to the measured wall and CPU time."""
    from simcomm import checking, cost

    specs = checking.select_specs(tuple(claims), quick=quick)
    est = cost.estimate(specs, jobs=jobs, controls=controls, judged=True, yes=True)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "simcomm", "check", *claims, "--quick" if quick else "--full",
               "--jobs", str(jobs), "--out", out, "--yes"] + (["--controls"] if controls else [])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    model_cpu = est.seconds + est.serial_seconds
    plan = next((ln for ln in done.stderr.splitlines() if ln.startswith("plan:")), "")
    return {"claims": " ".join(claims) or ("all (quick)" if quick else "all (full)"), "cells": est.cells,
            "estimate_wall_s": round(est.wall, 1), "measured_wall_s": round(wall, 1),
            "estimate_cpu_s": round(model_cpu, 1), "measured_cpu_s": round(cpu, 1),
            "cpu_ratio": round(model_cpu / cpu, 2), "wall_ratio": round(est.wall / wall, 2),
            "load": [round(load0, 1), round(os.getloadavg()[0], 1)], "plan": plan}


def reestimate(path: str) -> None:
    """Print the table of the runs recorded in ``path`` with the estimates of the current model."""
    from simcomm import checking, cost

    print("| claims | cells | estimate (wall) | measured (wall) | estimate (CPU) | measured (CPU) | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    for line in open(path):
        row = json.loads(line)
        quick = row["claims"].endswith("(quick)")
        claims = () if row["claims"].startswith("all") else tuple(row["claims"].split())
        est = cost.estimate(checking.select_specs(claims, quick=quick), jobs=2, judged=True, yes=True)
        model_cpu = est.seconds + est.serial_seconds
        print(f"| {row['claims']} | {est.cells} | {est.wall:.0f} s | {row['measured_wall_s']:.0f} s (load "
              f"{row['load'][0]}-{row['load'][1]}) | {model_cpu:.0f} s | {row['measured_cpu_s']:.0f} s | "
              f"{model_cpu / row['measured_cpu_s']:.2f} |")


def main() -> None:
    """Run the comparisons named on the command line (or print the recorded table)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("claims", nargs="*")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--controls", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--table", default=None, help="print the recorded runs of this file with the current model")
    a = ap.parse_args()
    if a.table:
        return reestimate(a.table)
    runs = [[]] if a.quick or not a.claims else [[c] for c in a.claims]
    for claims in runs:
        row = one(claims, quick=not a.full, jobs=a.jobs, controls=a.controls)
        print(json.dumps(row), flush=True)
        if a.json:
            with open(a.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
