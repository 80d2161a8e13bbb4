"""Bad input corpus: every row is one bad command line or one out-of-domain parameter.

Each must give exit code 2, exactly one line that names the problem (and usually the fix), no
traceback and no files left behind. Adding a case is one line in tests/data/bad_cli.txt.
"""

import math
import shlex
from pathlib import Path

import pytest

import tests._toy  # noqa: F401  (the bad specs use the toy experiment)
from simcomm import SpecError
from simcomm.spec import find_specs, load
from tests.test_cli import _run

DATA = Path(__file__).parent / "data"
SIMS = Path(__file__).resolve().parents[1] / "sims"


def _cases():
    for line in (DATA / "bad_cli.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            args, _, needle = line.partition(" ==> ")
            marks = ()
            if "'cupy' is not available" in needle:
                from simcomm.backends import available_backends

                marks = pytest.mark.skipif("cupy" in available_backends(),
                                           reason="CuPy and a GPU are present: the cupy backend is available here")
            yield pytest.param(args, needle.strip(), id=args[:60], marks=marks)


@pytest.mark.parametrize("args, needle", list(_cases()))
def test_bad_command_line(args, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("x")
    argv = [a.replace("OUT", str(tmp_path)).replace("DATA", str(DATA)).replace("SIMS", str(SIMS))
            for a in shlex.split(args)]
    if argv[0] in ("check", "run") and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    r = _run(argv)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert needle in lines[0], lines[0]
    # Nothing half-written: at most the empty output folder created by the writability probe.
    left = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "file.txt"]
    assert not left, left


def _bad_values(p):
    """Values outside a declared parameter's domain, as TOML literals."""
    if p.kind in ("int", "float"):
        yield '"text"'
        yield "true"
        if p.low is not None:
            yield repr(p.low if p.low_open else (p.low - 1 if p.kind == "int" else p.low - abs(p.low) * 0.5 - 1.0))
        if p.high is not None:
            yield repr(p.high if p.high_open else (p.high + 1 if p.kind == "int" else p.high * 1.5 + 1.0))
        if p.kind == "int":
            yield "1.5"
        else:
            yield "nan"
    elif p.kind == "str":
        yield "3"
        if p.choices:
            yield '"no_such_choice"'
    elif p.kind == "bool":
        yield '"yes"'


def _param_cases():
    from simcomm.experiments import get_experiment

    seen = set()
    for path in find_specs(SIMS):
        spec = load(path, quick=True)
        if spec.experiment in seen:
            continue
        seen.add(spec.experiment)
        for key, p in get_experiment(spec.experiment).params.items():
            for bad in _bad_values(p):
                if p.low is not None and bad != '"text"' and bad not in ("true", "1.5", "nan"):
                    if not math.isfinite(float(bad)):
                        continue
                yield pytest.param(path, key, bad, id=f"{spec.experiment}:{key}={bad}")


@pytest.mark.parametrize("path, key, bad", list(_param_cases()))
def test_out_of_domain_parameter_is_one_line(path, key, bad):
    with pytest.raises(SpecError) as err:
        load(path, quick=True, overrides=(f"{key}={bad}",))
    msg = str(err.value)
    assert "\n" not in msg and f"'{key}'" in msg, msg


def _library_cases():
    import numpy as np

    from simcomm.compress import QSGD, RandK, Ternary, TopK, message_bits
    from simcomm.models import heterogeneous_least_squares
    from simcomm.optim import run_dsgd
    from simcomm.topology import rho

    prob = heterogeneous_least_squares(8, 4, b=0.0, rng=0)
    return [
        (lambda: Ternary().apply(np.empty(0), rng=0), "ternary: x is empty"),
        (lambda: TopK(2).bits(-5), "TopK.bits: d = -5 is not allowed"),
        (lambda: message_bits(2, -5), "message_bits: d = -5"),
        (lambda: QSGD(4).beta(0), "QSGD.beta: d = 0 is not allowed"),
        (lambda: rho("ring"), "got the string 'ring'; build the topology first"),
        (lambda: run_dsgd(prob, "ring", steps=2, lr=0.1, seed=-1), "run_dsgd: seed = -1 is not allowed"),
        (lambda: RandK(2).apply(np.ones(5), rng=-1), "rand_k: rng = -1 is not a seed"),
        (lambda: QSGD(4).apply(np.ones(5), rng=-3), "qsgd: rng = -3 is not a seed"),
    ]


@pytest.mark.parametrize("index", range(8))
def test_library_misuse_names_the_argument_and_the_fix(index):
    from simcomm import UserError

    call, needle = _library_cases()[index]
    with pytest.raises(UserError) as err:
        call()
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_mix_of_integer_input_averages_in_floating_point():
    import numpy as np

    from simcomm.topology import mix, ring

    out = mix(ring(4), np.array([[1], [2], [0], [3]]))
    # Metropolis weights on the 4-ring are 1/3 (self and both neighbours): node 0 gets (1 + 2 + 3)/3
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.ravel(), [2.0, 1.0, 5 / 3, 4 / 3])
    np.testing.assert_allclose(mix(ring(4), np.array([1, 2, 0, 3])), out.ravel())


def test_mix_of_a_matrix_names_the_fix():
    import numpy as np

    from simcomm import UserError
    from simcomm.topology import from_matrix, mix, mixing_matrix, ring

    W = mixing_matrix(ring(4))
    with pytest.raises(UserError, match="from_matrix") as err:
        mix(W, np.ones(4))
    assert "\n" not in str(err.value)
    np.testing.assert_allclose(mix(from_matrix(W), np.arange(4.0)), W @ np.arange(4.0))
