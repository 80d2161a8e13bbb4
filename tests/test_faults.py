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


# --- environmental faults: one line, exit 2, nothing half written ------------------------------------------------
import errno  # noqa: E402
import json  # noqa: E402

import pytest  # noqa: E402

import tests._toy  # noqa: E402,F401
from tests.test_cli import _run  # noqa: E402

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


def _lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.strip() and not ln.startswith(("plan:", "warning:"))]


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fail_writes_under(monkeypatch, folder: Path, code: int, after: int = 1):
    """Make the ``after``-th temporary file created under ``folder`` fail with ``code`` (ENOSPC, EACCES)."""
    import tempfile

    import simcomm.results

    real, calls = tempfile.mkstemp, []

    def mkstemp(*args, dir=None, **kw):
        if dir is not None and Path(folder) in [Path(dir), *Path(dir).parents]:
            calls.append(dir)
            if len(calls) >= after:
                raise OSError(code, os.strerror(code))
        return real(*args, dir=dir, **kw)

    monkeypatch.setattr(simcomm.results.tempfile, "mkstemp", mkstemp)
    return calls


@pytest.mark.parametrize("code, needle", [(errno.ENOSPC, "no space left on the disk"),
                                          (errno.EACCES, "no permission to write")])
def test_disk_full_or_no_permission_while_writing_the_report_is_one_line_and_keeps_the_old_set(
        tmp_path, monkeypatch, code, needle):
    out = tmp_path / "out"
    args = ["check", "--specs", str(DATA), "--jobs", "1", "--out", str(out)]
    assert _run(args).exit_code == 0
    before = _snapshot(out / "results")
    # The second file of the set (figure, REPORT.md, table, metadata) fails: none of them may change.
    calls = _fail_writes_under(monkeypatch, out / "results", code, after=2)
    (out / "results" / ".cache").rename(tmp_path / "cache")  # recompute: new tables, figure and report
    (tmp_path / "cache").rename(out / "results" / ".cache")
    r = _run([*args, "--seed", "5"])
    assert len(calls) >= 2, "the fault was never injected"
    lines = _lines(r.output)
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.output
    assert "Traceback" not in r.output
    after = _snapshot(out / "results")
    assert {k: v for k, v in after.items() if ".cache" not in str(k)} == \
           {k: v for k, v in before.items() if ".cache" not in str(k)}, "a partial report was written"
    assert not list(out.rglob("*.tmp"))


def test_disk_full_on_a_fresh_output_leaves_no_partial_gallery(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _fail_writes_under(monkeypatch, out / "results" / "quick", errno.ENOSPC, after=2)
    r = _run(["check", "--specs", str(DATA), "--jobs", "1", "--out", str(out)])
    assert r.exit_code == 2 and "no space left on the disk while writing" in r.output, r.output
    assert not (out / "results" / "quick").exists() and not list(out.rglob("*.tmp"))
    assert not (out / "results" / "toy_claim").exists()  # the tables are part of the set too
    assert list((out / "results" / ".cache").rglob("*.json")), "the computed cells stay cached"


def _spec(tmp_path: Path, experiment: str, params: str, grid: str = "[1, 2, 3]", replicates: int = 2) -> Path:
    path = tmp_path / f"{experiment}.toml"
    path.write_text(f'[experiment]\nname = "{experiment}"\nreplicates = {replicates}\n[params]\n{params}\n'
                    f'[grid]\nn = {grid}\n')
    return path


def test_a_worker_killed_by_the_system_is_one_line_naming_its_cell(tmp_path):
    path = _spec(tmp_path, "toy_kill", f"kill_at = 2\nmain_pid = {os.getpid()}")
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "2"])
    lines = _lines(r.output)
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert "a worker process was killed by the system (exit {SIGKILL(-9)})" in lines[0]
    assert "while running the cell kill_at=2" in lines[0] and "n=2 of toy_kill" in lines[0], lines[0]
    assert "it had reached" in lines[0] and "cells that finished are cached" in lines[0]
    assert "Traceback" not in r.output
    # the cells that did finish are cached: the grid without the killed cell computes nothing
    from simcomm import cost
    from simcomm.spec import load

    spec = load(_spec(tmp_path, "toy_kill", f"kill_at = 2\nmain_pid = {os.getpid()}", grid="[1]"))
    assert cost.estimate([spec], cache_dir=tmp_path / "results" / ".cache").todo == 0


def test_a_cell_measured_too_large_for_the_workers_is_refused_before_anything_runs(tmp_path, monkeypatch):
    import simcomm._proc

    # 64 MiB in the last cell; pretend 100 MiB are available: one such cell fits, two at once do not.
    monkeypatch.setattr(simcomm._proc, "available_memory", lambda: 100 * 2**20)
    path = _spec(tmp_path, "toy_alloc", "mib = 64\nbig_at = 3", grid="[1, 2, 3]")
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "2"])
    lines = _lines(r.output)
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert "the cell mib=64, big_at=3, n=3" in lines[0] and "(measured on its first replicate" in lines[0], lines[0]
    assert "2 cells of that size running at once need" in lines[0] and "use --jobs 1" in lines[0], lines[0]
    assert not list((tmp_path / "results" / ".cache").rglob("*.json")), "nothing ran"
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output


def test_a_cell_over_the_memory_ceiling_fails_fast_as_one_line(tmp_path, monkeypatch):
    import simcomm._proc

    # 1 GiB "available" (the smallest ceiling); the last cell asks for 64 GiB: the allocation itself
    # fails under the ceiling (no page is touched), long before the kernel would kill anything.
    monkeypatch.setattr(simcomm._proc, "available_memory", lambda: 2**30)
    path = _spec(tmp_path, "toy_alloc", "mib = 65536\nbig_at = 3")
    t0 = time.monotonic()
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "1"])
    lines = _lines(r.output)
    assert r.exit_code == 2 and len(lines) == 1 and "ran out of memory" in lines[0], r.output
    assert "on its first replicate, before any cell ran" in lines[0]
    assert time.monotonic() - t0 < 60


# --- a cache that cannot lie -------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["edit", "truncate", "garbage", "old_format", "swap"])
def test_a_bad_cache_entry_is_named_recomputed_and_counted_as_to_compute(tmp_path, damage):
    out = tmp_path / "out"
    args = ["run", str(DATA / "toy_claim.toml"), "--out", str(out), "--jobs", "1"]
    assert _run(args).exit_code == 0
    (table,) = out.glob("results/toy_claim/*/table.csv")
    clean = table.read_bytes()
    entries = sorted((out / "results" / ".cache").rglob("*.json"))
    assert len(entries) == 2
    victim = entries[0]
    data = victim.read_bytes()
    head, _, body = data.partition(b"\n")
    if damage == "edit":  # one value changed, the JSON still valid: only the checksum can tell
        rows = json.loads(body)
        rows[0]["value"] = rows[0]["value"] + 1.0
        victim.write_bytes(head + b"\n" + json.dumps(rows).encode())
    elif damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        victim.write_bytes(b"\x00\xffnot json at all")
    elif damage == "old_format":  # a bare list of rows, as older versions wrote
        victim.write_bytes(body)
    else:  # a valid entry of the other cell under this cell's name
        victim.write_bytes(entries[1].read_bytes())
    r = _run(args)
    assert r.exit_code == 0, r.output
    plan = [ln for ln in r.output.splitlines() if ln.startswith("plan:")]
    assert plan == [plan[0]] and "1 bad cache entry to recompute" in plan[0] and "all 2 cells" not in plan[0], plan
    warnings = [ln for ln in r.output.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and str(victim) in warnings[0] and "recomputing the cell" in warnings[0], r.output
    assert table.read_bytes() == clean, "the recomputed table differs from the clean one"
    r = _run(args)
    assert "all 2 cells are cached" in r.output and "warning:" not in r.output


# --- workers end with the main process; SIGTERM is Ctrl-C --------------------------------------------------------
_SLOW = ("import sys, tests._toy; from simcomm.cli import main; "
         "main(['run', sys.argv[1], '--jobs', '2', '--out', sys.argv[2]])")


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _slow_run(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    import tempfile

    path = tmp_path / "slow.toml"
    path.write_text('[experiment]\nname = "toy_mean"\nreplicates = 2\n[params]\ndelay = 2.0\n'
                    '[grid]\nn = [1, 2, 3, 4, 5, 6, 7, 8]\n')
    proc = subprocess.Popen([sys.executable, "-c", _SLOW, str(path), str(tmp_path / "out")], cwd=ROOT,
                            env=dict(os.environ, PYTHONHASHSEED="0"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline, workers = time.monotonic() + 120, []
    while time.monotonic() < deadline:
        # the workers are running cells once the ledger names them
        workers = [p for p in _children(proc.pid)
                   if any(Path(tempfile.gettempdir()).glob(f"simcomm-ledger-*/{p}.json"))]
        if len(workers) >= 1:
            break
        time.sleep(0.1)
    assert workers, "no worker started"
    return proc, workers


def _gone(pids: list[int], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_kill_9_of_the_main_process_leaves_no_worker_behind(tmp_path):
    proc, workers = _slow_run(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # the watchdog checks its parent every second; it exits at once, mid-cell
    assert _gone(workers), f"workers {workers} outlived the killed main process"


def test_sigterm_behaves_like_ctrl_c(tmp_path):
    proc, workers = _slow_run(tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("plan:")]
    assert proc.returncode == 130, err
    assert len(lines) == 1 and lines[0].startswith("interrupted: the cells that finished are cached"), err
    assert _gone(workers)
