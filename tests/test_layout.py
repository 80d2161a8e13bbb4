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
    # theory/pep.py alone reads and writes its cache of solved SDPs (json, os for SIMCOMM_PEP_CACHE, pathlib),
    # times its solves (time) and, on a cache miss, solves with PEPit (imported lazily: the ``pep`` extra),
    # silencing PEPit's prints and cvxpy's warnings (contextlib, io, warnings): a bound that is the value of an
    # SDP needs its solver, and the shipped cache keeps the claims running without it
    per_file = {"pep.py": {"json", "os", "pathlib", "time", "contextlib", "io", "warnings", "PEPit"}}
    for path in (ROOT / "theory").rglob("*.py"):
        extra = _imports(path) - allowed - per_file.get(path.name, set())
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


# --- layer order ------------------------------------------------------------------------------------------------
# Dependencies point down: a unit of simcomm may import only from its own layer or lower ones. Every import
# counts, including the lazy ones inside functions (a lazy upward import still loads the higher layer: the
# "did you mean" hint once imported every experiment module to print one line). The root package imports only
# _errors eagerly and loads the subpackages lazily by name, so it sits at the bottom.
LAYERS = [
    {"_errors", "_validate", "_params", "results", "__init__", "_proc", "_plugins", "_claims"},
    {"backends", "_dask"},
    {"compress", "topology", "sampling", "estimate"},
    {"models", "network", "torch"},
    {"optim", "scaling"},
    {"experiments", "mpi"},
    {"spec", "runner", "claims"},
    {"plotting", "report", "checking", "cost", "conform", "conform_fixtures"},
    {"cli", "__main__"},
]
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    """The layer unit of a dotted simcomm module name: its first component below simcomm."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _simcomm_imports(path: Path):
    """``(module, names, line)`` for every absolute simcomm import in ``path`` (``names`` of a from-import)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, (), node.lineno) for a in node.names if a.name.split(".")[0] == "simcomm")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.split(".")[0] == "simcomm":
            yield node.module, tuple(a.name for a in node.names), node.lineno


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
    return ".".join(parts)


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)) if _module_name(p) != "simcomm" else "__init__"
             for p in (ROOT / "simcomm").rglob("*.py")}
    assert units <= set(LAYER), f"give {sorted(units - set(LAYER))} a layer in tests/test_layout.py"


def test_imports_point_down_the_layers():
    bad = []
    for path in (ROOT / "simcomm").rglob("*.py"):
        me = _module_name(path)
        src = _unit(me) if me != "simcomm" else "__init__"
        for mod, _names, line in _simcomm_imports(path):
            dst = _unit(mod)
            if LAYER[dst] > LAYER[src]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({src}, layer {LAYER[src]}) imports {mod} "
                           f"(layer {LAYER[dst]})")
    assert not bad, "imports from a lower layer to a higher one:\n" + "\n".join(bad)


def test_layer_check_catches_an_upward_import(tmp_path):
    # the check above can fail: an upward lazy import (the old home of the "did you mean" helper) is found
    pkg = tmp_path / "compress"
    pkg.mkdir()
    (pkg / "x.py").write_text("def f():\n    from simcomm.experiments._registry import closest\n")
    found = [(mod, LAYER[_unit(mod)] > LAYER["compress"]) for mod, _, _ in _simcomm_imports(pkg / "x.py")]
    assert found == [("simcomm.experiments._registry", True)]


def _cycles(root=ROOT) -> list[str]:
    """Cycles of imports (module-level and lazy ones alike) between the modules of ``root/simcomm``."""
    files = {".".join(p.relative_to(root).with_suffix("").parts[:-1] if p.name == "__init__.py"
                      else p.relative_to(root).with_suffix("").parts): p for p in (root / "simcomm").rglob("*.py")}
    graph = {}
    for me, path in files.items():
        deps = set()
        for mod, names, _ in _simcomm_imports(path):
            deps.add(mod)
            deps |= {f"{mod}.{n}" for n in names}  # ``from pkg import submodule`` depends on the submodule
        graph[me] = {d for d in deps if d in files and d != me}
    # a package importing its own submodules is how it re-exports them; only cycles through other edges count
    cycles, state = [], {}

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if m.startswith(n + "."):
                continue
            if state.get(m) == 1:
                cyc = stack[stack.index(m):]
                cycles.append(" -> ".join(cyc + [m]))
            elif m not in state:
                visit(m, stack)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
    return cycles


def test_no_import_cycle_between_modules():
    assert not _cycles(), "import cycles:\n" + "\n".join(_cycles())


def test_cycle_check_finds_a_cycle(tmp_path):
    # the check can fail: two modules that import each other (lazily, as topology._graphs and _mixing once did)
    pkg = tmp_path / "simcomm" / "topology"
    pkg.mkdir(parents=True)
    (tmp_path / "simcomm" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "_a.py").write_text("from simcomm.topology._b import g\n")
    (pkg / "_b.py").write_text("def g():\n    from simcomm.topology._a import f\n")
    assert _cycles(tmp_path) == ["simcomm.topology._a -> simcomm.topology._b -> simcomm.topology._a"]


# --- public where it crosses a boundary ----------------------------------------------------------------------------
# What one subpackage takes from another comes from that subpackage's public names (its __init__'s __all__) or from a
# shared private module at the root (simcomm._validate, simcomm._params, simcomm._claims: scipy's _lib). These few
# imports of another subpackage's private modules are the exceptions, each with its reason.
PRIVATE_IMPORTS_ALLOWED = {
    # a real MPI rank draws DSGD's noise streams and runs its checks exactly as the simulator does; the helpers
    # stay private to optim (tests/test_api.py) because no user calls them
    ("simcomm.mpi", "simcomm.optim._decentralized"),
    # the registered numba whole-run acceleration of DSGD is numba-only: its kernel is no part of the kernel table
    # every backend implements
    ("simcomm.optim._decentralized", "simcomm.backends._numba.dsgd_run"),
    # conform's torch hook battery needs torch and a process group; it is a test harness, not simcomm.torch's API
    ("simcomm.conform", "simcomm.torch._harness"),
}


def _private_imports(root=ROOT) -> list[tuple[str, str, int]]:
    """``(importer, imported, line)`` for every import of another subpackage's private module (``simcomm.x._y``)."""
    out = []
    for path in (root / "simcomm").rglob("*.py"):
        me = _module_name(path) if root == ROOT else ".".join(path.relative_to(root).with_suffix("").parts)
        mine = _unit(me)
        for mod, names, line in _simcomm_imports(path):
            # ``from simcomm.models import _nn`` imports the private module _nn too
            folder = root.joinpath(*mod.split("."))
            targets = [mod] + [f"{mod}.{n}" for n in names if n.startswith("_") and
                               ((folder / f"{n}.py").exists() or (folder / n / "__init__.py").exists())]
            for target in targets:
                parts = target.split(".")
                # a unit whose own name is private (simcomm._claims) is a shared module at the root, open to all
                if len(parts) >= 3 and parts[1] != mine and not parts[1].startswith("_") and \
                        any(p.startswith("_") for p in parts[2:]):
                    out.append((me, target, line))
                    break
    return out


def test_few_imports_of_another_subpackages_private_modules():
    assert len(PRIVATE_IMPORTS_ALLOWED) <= 10
    found = _private_imports()
    bad = [f"{me}:{line} imports {mod}" for me, mod, line in found if (me, mod) not in PRIVATE_IMPORTS_ALLOWED]
    assert not bad, ("make the name public in its subpackage's __all__ (or move it to a shared module at the root):\n"
                     + "\n".join(bad))
    assert len(found) <= 10, found


def test_private_import_check_finds_one(tmp_path):
    # the check can fail: optim reaching into topology's private module is found, its own private modules are not
    pkg = tmp_path / "simcomm" / "optim"
    pkg.mkdir(parents=True)
    (tmp_path / "simcomm" / "models").mkdir()
    (tmp_path / "simcomm" / "models" / "_nn.py").write_text("")
    (pkg / "x.py").write_text("from simcomm.topology._mixing import FFT_OFFSETS\nfrom simcomm.optim._loop import run\n"
                              "from simcomm.models import _nn\n")
    found = sorted(mod for _, mod, _ in _private_imports(tmp_path))
    assert found == ["simcomm.models._nn", "simcomm.topology._mixing"]


#: where a backend is configured beyond the decorated entry points: the runner's cells, caches and workers
#: are keyed by the backend's name, and an experiment's function is registered (and run under ``use``) by
#: the registry's own wrapper
BACKEND_CONFIGURED = {"simcomm/runner.py", "simcomm/checking.py", "simcomm/cost.py", "simcomm/experiments/_registry.py",
                      "simcomm/experiments/train.py"}


def _backend_parameters(root=ROOT) -> list[str]:
    """``path:line name`` of every function below the entry points that takes ``backend``."""
    out = []
    for path in sorted((root / "simcomm").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("simcomm/backends/", "simcomm/cli/")) or rel in BACKEND_CONFIGURED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            if "backend" not in {a.arg for a in args}:
                continue
            decorators = {ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
            if not decorators & {"entry_point", "experiment"}:
                out.append(f"{rel}:{node.lineno} {node.name}")
    return out


def test_backend_is_a_parameter_of_entry_points_only():
    # below an entry point the arrays and the active backend (simcomm.backends.use) say where code runs
    bad = _backend_parameters()
    assert not bad, ("decorate a function that configures a run with simcomm.backends.entry_point; below one, take "
                     "the active backend (get_backend()) or the arrays' (backend_for(None, x)):\n" + "\n".join(bad))


def test_backend_parameter_check_finds_one(tmp_path):
    pkg = tmp_path / "simcomm" / "topology"
    pkg.mkdir(parents=True)
    (pkg / "x.py").write_text("from simcomm.backends import entry_point\n\n\n"
                              "def mix(X, *, backend=None):\n    pass\n\n\n"
                              "@entry_point\ndef run(X, *, backend=None):\n    pass\n")
    assert _backend_parameters(tmp_path) == ["simcomm/topology/x.py:4 mix"]
