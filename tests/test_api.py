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


@pytest.mark.parametrize("internal", ["problem_rng", "node_noise_rng", "resolve_topology", "ef_compress_rows", "BLOWUP",
                                      "worker_gradients", "EF_COMPRESSORS"])
def test_optim_internals_are_not_public(internal):
    import simcomm.optim

    assert internal not in simcomm.optim.__all__ and not hasattr(simcomm.optim, internal)


def test_every_public_name_resolves():
    import simcomm

    for pkg in ("compress", "optim", "models", "topology", "sampling", "estimate"):
        mod = getattr(simcomm, pkg)
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert not missing, f"simcomm.{pkg}.__all__ lists {missing}"


def test_python_walkthrough_runs():
    # docs/python.md (the README's "use it from Python" section) as a doctest
    res = doctest.testfile(str(ROOT / "docs" / "python.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 10 and res.failed == 0
