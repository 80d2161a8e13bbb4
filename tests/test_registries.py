"""Registries stay in step with each other; the library makes no process-wide choice at import."""

import importlib
import pkgutil
import subprocess
import sys

import pytest

import theory
from simcomm.spec import KINDS, PAPERS, find_specs, load, resolve

#: bounds whose kind or paper is deliberately outside the spec's lists, with the reason (none today)
EXEMPT: dict[str, str] = {}
# theory.conform's bounds are the constants a user declares, judged by `simcomm conform` (paper "conform"),
# never named by a spec: their paper is not one of the spec's.


def _bounds():
    for mod in pkgutil.iter_modules(theory.__path__):
        importlib.import_module(f"theory.{mod.name}")
    from theory import BOUNDS

    # theory's own bounds: the registry is process-wide, so a test's or a user plugin's bounds (tests/test_plugins.py
    # loads one with paper "mine") may be in it too
    return {name: fn for name, fn in BOUNDS.items() if name.startswith("theory.")}


def _outside(bounds) -> list[str]:
    return [f"{name}: kind={fn.info.kind!r}, paper={fn.info.paper!r}" for name, fn in bounds.items()
            if name not in EXEMPT and not name.startswith("theory.conform:")
            and (fn.info.kind not in KINDS or fn.info.paper not in PAPERS)]


def test_every_bound_declares_a_kind_and_paper_the_spec_knows():
    bad = _outside(_bounds())
    assert not bad, ("theory.BoundInfo kind/paper outside simcomm.spec.KINDS/PAPERS (add the kind or paper to the "
                     "spec, or an EXEMPT entry saying why):\n" + "\n".join(bad))


def test_every_claim_names_a_bound_of_its_own_kind_and_paper():
    bad = []
    for path in find_specs(None):
        claim = load(path).claim
        if claim is None or not getattr(claim, "bound", None):
            continue
        info = resolve(claim.bound).info
        if (info.kind, info.paper) != (claim.kind, claim.paper):
            bad.append(f"{claim.id}: claim ({claim.kind}, {claim.paper}) vs bound {claim.bound} ({info.kind}, "
                       f"{info.paper})")
    assert not bad, "\n".join(bad)


def test_check_can_fail_on_an_unknown_kind_or_paper():
    # the check above can fail: bounds declaring a kind or a paper the spec does not know are reported
    from types import SimpleNamespace

    from theory._bound import BoundInfo

    fake = {"a": SimpleNamespace(info=BoundInfo(kind="sideways", provenance="N", paper="expgraph", statement="x")),
            "b": SimpleNamespace(info=BoundInfo(kind="upper", provenance="N", paper="nowhere", statement="x")),
            "c": SimpleNamespace(info=BoundInfo(kind="upper", provenance="N", paper="expgraph", statement="x"))}
    assert [line.split(":")[0] for line in _outside(fake)] == ["a", "b"]


@pytest.mark.parametrize("module", ["simcomm.plotting", "simcomm.checking"])
def test_importing_the_library_leaves_the_matplotlib_backend_alone(module):
    # a user's notebook keeps its backend: only the CLI (simcomm.cli._common.headless) picks Agg
    code = (f"import matplotlib; matplotlib.use('svg'); import {module}; "
            "import sys; sys.exit(0 if matplotlib.get_backend() == 'svg' else 1)")
    env_free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={k: v for k, v in __import__("os").environ.items() if k != "MPLBACKEND"})
    assert env_free.returncode == 0, env_free.stderr[-500:]
