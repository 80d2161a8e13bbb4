"""Unclean inputs that once hung, were silently resolved, trained on NaN or leaked a traceback or warnings."""

import errno
import gc
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import tests._toy  # noqa: F401  (the specs below use the toy experiment)
from simcomm._errors import UserError
from tests.test_cli import _run

DATA = Path(__file__).parent / "data"


def _one_error_line(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.strip() and not ln.startswith("plan:")]


def test_ef_sgd_refuses_nan_data_up_front():
    from simcomm.compress import TopK
    from simcomm.models import load_dataset, logistic_regression
    from simcomm.optim import ef_sgd

    ds = load_dataset("digits", rng=0)
    X = ds.X_train.copy()
    X[3, 5] = np.nan
    with pytest.raises(UserError, match=r"X \(training features\) has 1 NaN or inf entry \(first at index \(3, 5\)\)"):
        ef_sgd(logistic_regression(64, 10), X, ds.y_train, n=2, steps=5, lr=0.1, compressor=TopK(5), rng=0)
    X_test = ds.X_test.copy()
    X_test[0, 0] = np.inf
    with pytest.raises(UserError, match="X_test"):
        ef_sgd(logistic_regression(64, 10), ds.X_train, ds.y_train, n=2, steps=5, lr=0.1, compressor=TopK(5),
               rng=0, X_test=X_test, y_test=ds.y_test)


def test_a_cache_entry_replaced_by_a_folder_is_named_and_recomputed(tmp_path):
    out = tmp_path / "out"
    args = ["run", str(DATA / "toy_claim.toml"), "--out", str(out), "--jobs", "1"]
    assert _run(args).exit_code == 0
    (table,) = out.glob("results/toy_claim/*/table.csv")
    clean = table.read_bytes()
    victim = sorted((out / "results" / ".cache").rglob("*.json"))[0]
    victim.unlink()
    (victim / "inside").mkdir(parents=True)
    for _ in range(2):  # named every time while the folder stands; never a traceback
        r = _run(args)
        assert r.exit_code == 0 and "Traceback" not in r.output, r.output
        warn = [ln for ln in r.output.splitlines() if ln.startswith("warning:")]
        assert len(warn) == 1 and str(victim) in warn[0] and "is a folder" in warn[0], r.output
        assert table.read_bytes() == clean
    assert (victim / "inside").is_dir()  # the user's folder is left alone


def test_a_full_disk_mid_sweep_is_one_line_without_joblib_warnings(tmp_path, monkeypatch):
    import simcomm.runner

    n = ", ".join(str(i) for i in range(2, 42))
    spec = tmp_path / "many.toml"
    spec.write_text(f'[experiment]\nname = "toy_mean"\nreplicates = 2\n[grid]\nn = [{n}]\n')
    real, calls = simcomm.runner._write_entry, []

    def write(path, data):  # the second cache entry meets a full disk, with tasks still running
        calls.append(path)
        if len(calls) >= 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(simcomm.runner, "_write_entry", write)
    gc.collect()  # an earlier test's abandoned joblib generator, collected in the block below, would warn there
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = _run(["run", str(spec), "--out", str(tmp_path / "out"), "--jobs", "2"])
        output, code = r.output, r.exit_code
        del r  # its traceback holds the run's frames: joblib warns when its abandoned generator is collected
        gc.collect()
    lines = _one_error_line(output)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: no space left on the disk"), output
    assert not [w for w in caught if "joblib" in (w.filename or "")], [str(w.message) for w in caught]


def test_a_key_in_params_and_grid_is_refused():
    r = _run(["run", str(DATA / "bad_specs" / "params_in_grid.toml")])
    lines = _one_error_line(r.output)
    assert r.exit_code == 2 and len(lines) == 1 and "'n' is in both [params] and [grid]" in lines[0]

