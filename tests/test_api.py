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
    # one Trace type, one view: long format, ``step`` first, values equal to the trace's arrays
    import numpy as np

    from simcomm.compress import QSGD, TopK
    from simcomm.models import heterogeneous_least_squares, load_dataset, logistic_regression, quadratic
    from simcomm.optim import compressed_gd, ef_sgd, importance_sgd, run_dsgd

    srv = compressed_gd(quadratic(4, 6, rng=0), QSGD(2), lr=0.5, steps=10, replicates=3, record_every=5, rng=1)
    t = srv.table()
    assert list(t.columns[:2]) == ["replicate", "step"] and len(t) == 3 * srv.step.size
    np.testing.assert_array_equal(t["f_gap"], srv.f_gap.ravel())
    np.testing.assert_array_equal(t["bits"], np.tile(srv.bits, 3))
    dsgd = run_dsgd(heterogeneous_least_squares(4, 3, rng=0), "ring", steps=10, lr=0.1, record_every=5)
    np.testing.assert_array_equal(dsgd.table()["subopt"], dsgd.subopt)
    ds = load_dataset("digits", n_samples=300, rng=0)
    m = logistic_regression(64, 10)
    ef = ef_sgd(m, ds.X_train, ds.y_train, n=2, steps=6, lr=0.1, compressor=TopK(5), rng=1, record_every=3)
    assert list(ef.table().columns) == ["step", "train_loss", "test_accuracy", "bits"]
    np.testing.assert_array_equal(ef.table()["train_loss"], ef.train_loss)
    imp = importance_sgd(m, ds.X_train, ds.y_train, steps=6, lr=0.1, batch_size=8, record_every=3, rng=1)
    it = imp.table()
    assert it.columns[0] == "step" and len(it) == imp.step.size
    np.testing.assert_array_equal(it["train_loss"], imp.train_loss)


def test_every_optimiser_returns_the_one_trace_type():
    # the six optimisers return simcomm.optim.Trace with the same fields: step, records, x, diverged_at
    # (one int per replicate, -1 = no divergence) and info; the old per-optimiser types are gone
    import pickle

    import numpy as np

    import simcomm.optim as so
    from simcomm.compress import QSGD, Identity, TopK
    from simcomm.models import heterogeneous_least_squares, load_dataset, logistic_regression, quadratic

    for gone in ("DSGDTrace", "EFTrace", "ISTrace"):
        assert gone not in so.__all__ and not hasattr(so, gone)
    p = quadratic(4, 6, rng=0)
    ds = load_dataset("digits", n_samples=300, rng=0)
    m = logistic_regression(64, 10)
    runs = {
        "compressed_gd": so.compressed_gd(p, QSGD(2), lr=0.5, steps=10, replicates=3, record_every=5, track_grad=True,
                                          rng=1),
        "async": so.async_compressed_gd(p, QSGD(2), lr=0.5, steps=10, tau=2, replicates=2, rng=1),
        "iag": so.compressed_iag(p, Identity(), lr=0.2, steps=10, rng=1),
        "dsgd": so.run_dsgd(heterogeneous_least_squares(4, 3, rng=0), "ring", steps=10, lr=0.1, record_every=5),
        "ef": so.ef_sgd(m, ds.X_train, ds.y_train, n=2, steps=6, lr=0.1, compressor=TopK(5), rng=1,
                        record_every=3),
        "is": so.importance_sgd(m, ds.X_train, ds.y_train, steps=6, lr=0.1, batch_size=8, record_every=3, rng=1),
    }
    R = {"compressed_gd": 3, "async": 2}
    for name, tr in runs.items():
        assert type(tr) is so.Trace, name
        assert tr.diverged_at.dtype.kind == "i" and tr.diverged_at.tolist() == [-1] * R.get(name, 1), name
        assert tr.replicates == R.get(name, 1) and not tr.diverged.any() and tr.notes() == [""] * tr.replicates
        T = tr.step.size
        assert T >= 2 and all(np.shape(v)[-1] == T for v in tr.records.values()), name
        for k, v in tr.records.items():  # attribute access reads the same array
            assert getattr(tr, k) is v
        back = pickle.loads(pickle.dumps(tr))  # the runner's worker processes ship traces
        np.testing.assert_array_equal(back.step, tr.step)
        assert list(back.records) == list(tr.records)
    assert runs["compressed_gd"].x.shape == (3, p.d) and runs["dsgd"].x.shape == (4, 3)
    assert runs["compressed_gd"].grad2_mean.shape == (3,) and np.isfinite(runs["compressed_gd"].grad2_mean).all()
    ef = runs["ef"]
    assert ef.comp_error.shape == (6,) and ef.bits_per_step == TopK(5).bits(m.n_params)
    assert ef.x.shape == (m.n_params,) and runs["is"].x.shape == (m.n_params,)
    assert {"trace_cov_uniform", "trace_cov_ideal", "trace_cov_actual"} <= set(runs["is"].records)


def test_trace_attribute_errors_notes_and_first_below():
    import numpy as np

    from simcomm.optim import Trace

    tr = Trace(np.array([0, 5, 10]), {"f_gap": np.array([[3.0, 1.0, 0.5], [3.0, 2.0, np.inf]])}, np.zeros((2, 1)),
               np.array([-1, 7]), {"grad2_mean": np.array([1.0, np.inf])})
    with pytest.raises(AttributeError, match="no record or info 'dist2'; records: f_gap; info: grad2_mean"):
        tr.dist2  # noqa: B018
    assert not hasattr(tr, "theta") and not hasattr(tr, "steps")  # the old names are gone, not aliased
    assert tr.notes() == ["", "diverged at step 7"] and tr.note == "replicate 1 diverged at step 7"
    assert tr.diverged.tolist() == [False, True]
    np.testing.assert_array_equal(tr.first_below(1.0), [5.0, np.nan])
    one = Trace(np.array([0, 4]), {"subopt": np.array([2.0, 0.1])}, diverged_at=np.array([-1]))
    assert one.note == "" and one.first_below(0.5, "subopt").tolist() == [4.0]
    assert list(one.table().columns) == ["step", "subopt"]  # 1-D records: no replicate column
    assert list(tr.table().columns) == ["replicate", "step", "f_gap"]
    with pytest.raises(AttributeError):
        tr.step = np.array([0])  # frozen
    assert {"f_gap", "grad2_mean", "table"} <= set(dir(tr))
    assert repr(tr) == ("Trace(3 recorded steps, 2 replicate(s), records: f_gap; info: grad2_mean; "
                        "diverged_at: [-1, 7])")
    with pytest.raises(AttributeError, match="final parameters are 'x'"):
        tr.theta  # noqa: B018
    shared = Trace(np.array([0, 1]), {"loss": np.array([2.0, 0.5])}, diverged_at=np.array([-1, -1, -1]))
    assert shared.first_below(1.0, "loss").tolist() == [1.0, 1.0, 1.0]  # a (T,) record serves every replicate


@pytest.mark.parametrize("records, info, diverged_at, needle", [
    ({"step": [1.0, 2.0]}, {}, [-1], "would hide"),          # would replace the step column of table()
    ({"x": [1.0, 2.0]}, {}, [-1], "would hide"),             # a field
    ({"table": [1.0, 2.0]}, {}, [-1], "would hide"),         # a method
    ({"replicate": [1.0, 2.0]}, {}, [-1], "would hide"),     # a table column
    ({"loss": [1.0, 2.0]}, {"loss": 3.0}, [-1], "both records and info"),
    ({"loss": [1.0, 2.0, 3.0]}, {}, [-1], "one value per recorded step"),
    ({"loss": [[1.0, 2.0], [3.0, 4.0]]}, {}, [-1], "replicate axis"),
])
def test_trace_refuses_ambiguous_records(records, info, diverged_at, needle):
    import numpy as np

    from simcomm.optim import Trace

    with pytest.raises(ValueError, match=needle):
        Trace(np.array([0, 1]), {k: np.asarray(v) for k, v in records.items()}, None, np.array(diverged_at), info)
