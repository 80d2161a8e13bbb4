"""Every backend implements the kernel table (:class:`simcomm.backends._kernels.Kernels`), name for name.

numpy and numba are imported; the cupy sources are read by their syntax tree, so the contract is
checked on machines without CuPy too (its kernels run in tests/test_gpu.py where a device is present).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from simcomm.backends import get_backend
from simcomm.backends._kernels import KERNELS, Kernels

ROOT = Path(__file__).resolve().parents[1] / "simcomm" / "backends"


def _table() -> dict[str, list[tuple[str, str | None]]]:
    out = {}
    for name in KERNELS:
        sig = inspect.signature(getattr(Kernels, name))
        out[name] = [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
                     for p in list(sig.parameters.values())[1:]]
    return out


def _defaults_text(value) -> str:
    return "np.float64" if value == repr(__import__("numpy").float64) else value


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_imported_backend_implements_the_table(backend):
    be = get_backend(backend)
    assert tuple(be.__all__[: len(KERNELS)]) == KERNELS
    for name, params in _table().items():
        fn = getattr(be, name, None)
        assert fn is not None, f"{backend} lacks kernel {name}"
        got = [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
               for p in inspect.signature(getattr(fn, "py_func", fn)).parameters.values()]
        assert got == params, f"{backend}.{name}{got} differs from the table {params}"


def _cupy_defs() -> dict[str, list[str]]:
    """Top-level function definitions of the cupy backend's modules: name -> parameter names."""
    out = {}
    for path in (ROOT / "_cupy").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                out[node.name] = [a.arg for a in node.args.args + node.args.kwonlyargs]
    return out


def test_cupy_sources_implement_the_table():
    defs = _cupy_defs()
    for name, params in _table().items():
        assert name in defs, f"cupy lacks kernel {name}"
        assert defs[name] == [p for p, _ in params], f"cupy.{name}{defs[name]} differs from the table"


def test_table_check_catches_a_renamed_parameter(monkeypatch):
    import simcomm.backends._numpy as nb

    def bad(x, kk):  # topk_indices with its second parameter renamed
        return x

    monkeypatch.setattr(nb, "topk_indices", bad)
    with pytest.raises(AssertionError, match="topk_indices"):
        test_imported_backend_implements_the_table("numpy")
