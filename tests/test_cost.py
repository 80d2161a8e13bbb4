"""Runs that estimate their cost: cells counted without building them, time and memory from the
experiment's cost model (or one timed replicate), refusals above the limits, out-of-memory cells."""

import math
import time
from pathlib import Path

import pytest

import tests._toy  # noqa: F401
from simcomm import cost
from simcomm._errors import UserError
from simcomm.experiments import Param, experiment
from simcomm.spec import load, loads
from tests.test_cli import _run

DATA = Path(__file__).parent / "data"
SIMS = Path(__file__).resolve().parents[1] / "sims"


@experiment("toy_memory", params={"n": Param("int", low=1), "fail_at": Param("int", default=0, low=0)})
def toy_memory(params, rng, backend):
    """Raises MemoryError in the cell n == fail_at (stands in for numpy's 'Unable to allocate')."""
    if params["n"] == params["fail_at"]:
        raise MemoryError("Unable to allocate 1.42 PiB for an array with shape (2000, 100000000000)")
    return [dict(metric="mean", value=float(rng.normal()))]


def _toy_memory_spec(tmp_path, grid="[1, 2, 3]", fail_at=2):
    path = tmp_path / "mem.toml"
    path.write_text(f'[experiment]\nname = "toy_memory"\nreplicates = 2\n[params]\nfail_at = {fail_at}\n'
                    f'[grid]\nn = {grid}\n')
    return path


def test_huge_grid_is_counted_and_validated_without_building_cells():
    # 100^4 = 10^8 cells: validation looks at each axis value and a bounded sample, the count is a
    # product; both must be instant (cell-by-cell validation took minutes before).
    values = "[" + ", ".join(str(v) for v in range(1, 101)) + "]"
    draws = "[" + ", ".join(str(v) for v in range(2, 102)) + "]"
    spec = load(SIMS / "randk_variance.toml",
                overrides=(f"k={values}", f"nnz={values}", f"draws={draws}", f"alpha={values}"))
    assert spec.n_cells == 100**4
    with pytest.raises(UserError, match=r"100,000,000 cells exceed --max-cells 10,000: narrow the grid"):
        cost.estimate([spec])


def test_huge_grid_still_catches_a_bad_value_on_any_axis():
    values = ", ".join(str(v) for v in range(1, 200))
    with pytest.raises(UserError, match="'k' = 2000 is not allowed|k = 2000 exceeds d"):
        load(SIMS / "randk_variance.toml",
             overrides=(f"nnz=[{values}]", f"draws=[{values.replace('1, ', '', 1)}]", f"k=[{values}, 2000]"))


def test_cost_model_refuses_a_cell_that_cannot_fit_in_memory():
    spec = load(SIMS / "randk_variance.toml", overrides=("d=100000000000", "k=[10]"))
    with pytest.raises(UserError, match=r"needs ~.* PiB of memory .* more than the .* available"):
        cost.estimate([spec])


def test_cost_model_estimate_and_time_limit():
    spec = load(SIMS / "randk_variance.toml", quick=True)
    est = cost.estimate([spec], jobs=2)
    # quick grid: 2 cells x 6 replicates x draws 500 x d 1000 entries x 1.5e-7 s per entry
    assert est.cells == 2 and est.runs == 12 and est.source == "cost model"
    assert math.isclose(est.seconds, 12 * 500 * 1000 * 1.5e-7)
    assert est.peak_bytes == 5 * 8 * 500 * 1000
    assert "estimated ~" in est.line() and "peak ~" in est.line()
    big = load(SIMS / "randk_variance.toml", overrides=("replicates=100000000",))
    with pytest.raises(UserError, match="over --max-hours 24"):
        cost.estimate([big])
    assert cost.estimate([big], yes=True).seconds > 24 * 3600


def test_without_cost_model_one_replicate_is_timed_for_a_large_run():
    spec = load(SIMS / "expgraph_rho_even.toml", overrides=("replicates=100000000",))
    t0 = time.perf_counter()
    with pytest.raises(UserError, match=r"one timed replicate\), over --max-hours"):
        cost.estimate([spec])
    del t0
    small = load(SIMS / "expgraph_rho_even.toml", quick=True)
    est = cost.estimate([small])
    assert est.seconds is None and "ETA follows the first cells" in est.line()


def test_cached_cells_cost_nothing(tmp_path):
    path = _toy_memory_spec(tmp_path, fail_at=0)
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    spec = load(path)
    est = cost.estimate([spec], cache_dir=tmp_path / "results" / ".cache")
    assert est.todo == 0 and "all 3 cells are cached" in est.line()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_memory_error_in_a_cell_is_one_line_and_finished_cells_stay_cached(tmp_path, jobs):
    path = _toy_memory_spec(tmp_path)
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", jobs])
    lines = [ln for ln in r.output.splitlines() if ln.strip() and not ln.startswith("plan:")]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert "ran out of memory" in lines[0] and "Unable to allocate 1.42 PiB" in lines[0]
    assert "the 2 cells that finished are cached" in lines[0]
    assert "Traceback" not in r.output
    assert len(list((tmp_path / "results" / ".cache").rglob("*.json"))) == 2
    # the same command with a smaller grid resumes from the cache: nothing is recomputed
    spec = load(_toy_memory_spec(tmp_path, grid="[1, 3]"))
    assert cost.estimate([spec], cache_dir=tmp_path / "results" / ".cache").todo == 0


def test_progress_line_has_eta_and_a_heartbeat(capsys, monkeypatch):
    from simcomm.cli._common import progress_bar

    monkeypatch.setattr(progress_bar, "HEARTBEAT_S", 0.05)
    with progress_bar("running x", enabled=False) as bar:
        bar.update(0, 4)
        time.sleep(0.02)
        bar.update(2, 4)
        assert bar.eta() != "?"
        time.sleep(0.2)  # a long cell: the heartbeat keeps printing
    err = capsys.readouterr().err
    assert "running x: 2/4 cells" in err and "ETA" in err and "(running)" in err


def test_max_cells_flag_and_yes(tmp_path):
    path = _toy_memory_spec(tmp_path, fail_at=0)
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "1", "--max-cells", "2"])
    assert r.exit_code == 2 and "3 cells exceed --max-cells 2" in r.output
    r = _run(["run", str(path), "--out", str(tmp_path), "--jobs", "1", "--max-cells", "2", "--yes"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("plan: 3 cells")


def test_spec_text_grid_validation_small_grid_checks_every_cell():
    # below the sampling threshold every cell is validated, cross rules included (k <= d per cell)
    text = (SIMS / "randk_variance.toml").read_text()
    with pytest.raises(UserError, match="exceeds d"):
        loads(text, overrides=("d=[50, 2000]", "k=[10, 100]", "nnz=[10]"))
