"""The public surface: lazy subpackages after ``import simcomm``, lean ``__all__``, the Python walkthrough."""

import doctest
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_simcomm_is_cheap_and_subpackages_load_on_access():
    code = ("import sys, simcomm; before = sorted(m for m in sys.modules if m.startswith('simcomm')); "
            "c = simcomm.compress.TopK(2); t = simcomm.topology.ring(4); "
            "print(before, type(c).__name__, 'simcomm.optim' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split("] ")[0] + "]" == "['simcomm', 'simcomm._errors']"  # nothing else until asked for
    assert out.split()[-2:] == ["TopK", "False"]  # topology loaded on access; optim still not


def test_unknown_attribute_is_an_attribute_error():
    import simcomm

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        simcomm.nope  # noqa: B018
    assert {"compress", "optim", "models", "topology"} <= set(dir(simcomm))


def test_every_public_module_loads_lazily():
    # a subpackage or module missing from simcomm._LAZY would raise AttributeError after ``import simcomm``
    import simcomm

    pkg = ROOT / "simcomm"
    public = {p.parent.name for p in pkg.glob("*/__init__.py")} | {p.stem for p in pkg.glob("*.py")}
    public = {m for m in public if not m.startswith("_")}
    assert public == set(simcomm._LAZY)
    for name in sorted(public):
        assert getattr(simcomm, name).__name__ == f"simcomm.{name}"


@pytest.mark.parametrize("internal", ["problem_rng", "node_noise_rng", "resolve_topology", "ef_compress_rows", "BLOWUP",
                                      "worker_gradients", "EF_COMPRESSORS"])
def test_optim_internals_are_not_public(internal):
    import simcomm.optim

    assert internal not in simcomm.optim.__all__ and not hasattr(simcomm.optim, internal)


def test_every_public_name_resolves():
    import simcomm

    for pkg in ("compress", "optim", "models", "topology", "sampling", "estimate", "network"):
        mod = getattr(simcomm, pkg)
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not missing, f"simcomm.{pkg}.__all__ lists {missing}"


def test_python_walkthrough_runs():
    # docs/python.md (the README's "use it from Python" section) as a doctest
    res = doctest.testfile(str(ROOT / "docs" / "python.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 10 and res.failed == 0


def test_every_optimiser_record_has_the_same_tidy_table():
    # one view of the four trace types: long format, ``step`` first, values equal to the trace's arrays
    import numpy as np

    from simcomm.compress import QSGD, TopK
    from simcomm.models import heterogeneous_least_squares, load_dataset, logistic_regression, quadratic
    from simcomm.optim import compressed_gd, ef_sgd, importance_sgd, run_dsgd

    srv = compressed_gd(quadratic(4, 6, rng=0), QSGD(2), 0.5, 10, replicates=3, record_every=5, rng=1)
    t = srv.table()
    assert list(t.columns[:2]) == ["replicate", "step"] and len(t) == 3 * srv.steps.size
    np.testing.assert_array_equal(t["f_gap"], srv.f_gap.ravel())
    np.testing.assert_array_equal(t["bits"], np.tile(srv.bits, 3))
    dsgd = run_dsgd(heterogeneous_least_squares(4, 3, rng=0), "ring", steps=10, lr=0.1, record_every=5)
    np.testing.assert_array_equal(dsgd.table()["subopt"], dsgd.subopt)
    ds = load_dataset("digits", n_samples=300, rng=0)
    m = logistic_regression(64, 10)
    ef = ef_sgd(m, ds.X_train, ds.y_train, n=2, steps=6, lr=0.1, compressor=TopK(5), rng=1, eval_every=3)
    assert list(ef.table().columns) == ["step", "train_loss", "test_accuracy", "bits"]
    np.testing.assert_array_equal(ef.table()["train_loss"], ef.train_loss)
    imp = importance_sgd(m, ds.X_train, ds.y_train, steps=6, lr=0.1, batch_size=8, eval_every=3, rng=1)
    it = imp.table()
    assert it.columns[0] == "step" and len(it) == imp.step.size
    np.testing.assert_array_equal(it["train_loss"], imp.train_loss)
