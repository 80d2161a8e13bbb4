"""Every registered bound is a formula: it depends on its inputs, unless its statement is a constant.

A bound that returns 1 while the observable is pre-divided by a closed form computed in ``simcomm``
would let a bug shared by a kernel and its closed form "hold"; this test refuses such stand-ins.
"""

import importlib
import inspect
import math
import pkgutil

import pytest

import theory
from theory._bound import BOUNDS

for _mod in pkgutil.iter_modules(theory.__path__):  # registers every module's bounds
    importlib.import_module(f"theory.{_mod.name}")

# Values tried for each argument, by annotation; several combinations per bound.
# Integers include non-powers of 2 (some formulas vanish at every power of 2, e.g. one-peer deviation).
_TRIALS = {int: [4, 16, 64, 8, 12, 24], float: [0.5, 2.0, 0.25, 3.0], str: None}


def _categories() -> dict:
    """Values of every string parameter in the shipped specs (grids, fixed params, bound_args, controls).

    A categorical argument of a bound (topology, quantizer, axis, coding) is tried with the values the
    specs actually use, so such bounds are checked too instead of skipped.
    """
    from simcomm.spec import find_specs, load

    out: dict = {}

    def add(key, value):
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                out.setdefault(key, set()).add(v)

    for path in find_specs():
        spec = load(path)
        for table in (spec.params, spec.grid, spec.claim.bound_args if spec.claim else {},
                      *(c.set for c in (spec.claim.controls if spec.claim else ()))):
            for key, value in table.items():
                add(key, value)
    return {k: sorted(v) for k, v in out.items()}


_CATEGORIES = _categories()


def _values(p: inspect.Parameter):
    ann = p.annotation
    if ann in (int, "int"):
        return _TRIALS[int]
    if ann in (float, "float"):
        return _TRIALS[float]
    if ann in (str, "str") and p.name in _CATEGORIES:
        return _CATEGORIES[p.name]
    return None


def _evaluations(fn):
    params = [p for p in inspect.signature(fn).parameters.values()]
    grids = []
    for p in params:
        vals = _values(p)
        if vals is None:
            if p.default is inspect.Parameter.empty:
                return None  # a categorical argument without default: covered by its own tests
            vals = [p.default]
        grids.append(vals)
    out = []
    # the first 64 combinations, plus up to 64 spread over the whole grid (the first ones vary the
    # last arguments only: a bound that is exactly 0 in that corner would look constant); combinations
    # are decoded from their index, never materialised (12 arguments make 10^8 of them)
    total = math.prod(len(g) for g in grids)
    indices = dict.fromkeys([*range(min(64, total)), *range(0, total, max(1, total // 64))])

    def combo(i):
        values = []
        for g in reversed(grids):
            i, r = divmod(i, len(g))
            values.append(g[r])
        return tuple(reversed(values))

    for combo in map(combo, indices):
        try:
            v = float(fn(*combo))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError, KeyError):  # outside its domain
            continue
        if math.isfinite(v):
            out.append((combo, v))
    return out


# Stand-ins still to be replaced by their closed forms (must shrink to empty).
_KNOWN_STAND_INS: set = set()  # stand-ins still to be replaced by their closed forms: none left


@pytest.mark.parametrize("name", sorted(n for n in BOUNDS if n.startswith("theory.")))
def test_bound_depends_on_its_inputs(name):
    fn = BOUNDS[name]
    if fn.info.constant:
        return
    if name in _KNOWN_STAND_INS:
        pytest.xfail(f"{name}: a constant stand-in, to be replaced by its closed form")
    params = inspect.signature(fn).parameters
    assert params, f"{name} takes no input: a constant stand-in (declare constant=True only if the statement is it)"
    evals = _evaluations(fn)
    if evals is None or len(evals) < 2:
        pytest.skip(f"{name}: a categorical argument no shipped spec gives values for; the claim's own tests check it")
    assert len({round(v, 12) for _, v in evals}) > 1, f"{name} returns the same value for every input tried"
