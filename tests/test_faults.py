"""Faults: a sweep killed with SIGKILL and re-run ends with the same table as an uninterrupted run."""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SIMS = Path(__file__).resolve().parents[1] / "sims"
ARGS = ["run", str(SIMS / "expgraph_noisy_consensus.toml"), "--quick", "--jobs", "1",
        "--set", "topology=[\"ring\", \"exponential\", \"torus\", \"star\"]", "--set", "n=[16, 32, 64]"]


def _simcomm(out: Path, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.Popen([sys.executable, "-m", "simcomm", *ARGS, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def _table_hash(out: Path) -> str:
    (table,) = list(out.glob("results/expgraph_noisy_consensus/*/table.csv"))
    return hashlib.sha256(table.read_bytes()).hexdigest()


def test_sigkill_mid_sweep_then_rerun_gives_identical_table(tmp_path):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert _simcomm(clean).wait(timeout=300) == 0
    # Kill at a random point after the first cell was cached (literal seed: reproducible point).
    extra = float(np.random.default_rng(20261130).uniform(0.0, 0.5))
    proc = _simcomm(killed)
    deadline = time.monotonic() + 240
    while not list(killed.glob("results/.cache/*/*.json")) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(extra)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    partial = list(killed.glob("results/.cache/*/*.json"))
    assert 1 <= len(partial) < 12, "the kill did not land mid-sweep"
    assert not list(killed.glob("results/expgraph_noisy_consensus/*/table.csv")), "no table before the sweep ends"
    assert _simcomm(killed).wait(timeout=300) == 0
    assert _table_hash(clean) == _table_hash(killed)
    # The cache holds exactly one entry per cell: no duplicates from the interrupted attempt.
    assert len(list(killed.glob("results/.cache/*/*.json"))) == 12
