"""Architecture rules from DESIGN.md that a test can enforce."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_theory_imports_only_math_numpy_theory():
    allowed = {"math", "numpy", "theory", "__future__", "dataclasses", "functools", "typing", "fractions", "itertools"}
    for path in (ROOT / "theory").rglob("*.py"):
        extra = _imports(path) - allowed
        assert not extra, f"{path.name} imports {extra}; theory may import only math/numpy/theory"


def test_simcomm_never_imports_theory_statically():
    for path in (ROOT / "simcomm").rglob("*.py"):
        assert "theory" not in _imports(path), f"{path.relative_to(ROOT)} imports theory; use a spec string"


def test_no_legacy_global_rng():
    pattern = re.compile(r"np\.random\.(seed|rand|randn|randint|normal|uniform|choice|shuffle|permutation)\(")
    for folder in ("simcomm", "theory", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not pattern.search(path.read_text()), f"{path.relative_to(ROOT)} uses numpy's global RNG"


def test_every_bound_has_provenance_and_docstring():
    import importlib
    import pkgutil

    import theory

    for mod in pkgutil.iter_modules(theory.__path__):
        importlib.import_module(f"theory.{mod.name}")
    from theory import BOUNDS

    assert BOUNDS, "no bounds registered"
    for name, fn in BOUNDS.items():
        if name.startswith("tests."):
            continue
        assert fn.__doc__ and len(fn.__doc__) > 40, f"{name} needs a docstring stating the bound"
        assert fn.info.provenance and fn.info.statement, name
