"""Bring your own code through the command line: ``--plugin FILE.py`` and a spec's ``plugins = [...]``.

A plugin file written here registers a threshold compressor, an experiment that measures it and a bound;
the CLI sweeps, judges, lists, encodes and conforms them like the shipped ones. Bad plugin paths are one
line and exit 2.
"""

import json
import textwrap

import pytest

PLUGIN = textwrap.dedent('''
    """A threshold compressor, an experiment that measures it and a bound (a user's file)."""
    from dataclasses import dataclass

    import numpy as np

    from simcomm.compress import Compressor, compressor_from_name, register_compressor, setting
    from simcomm.experiments import Param, experiment
    from theory import bound


    @register_compressor("plugin_threshold")
    @dataclass(frozen=True)
    class Threshold(Compressor):
        """Keep the entries with |x_i| >= tau max|x| (the largest is always kept)."""

        tau: float = setting("kept: |x_i| >= tau max|x|, 0 <= tau <= 1", default=0.5, low=0.0, high=1.0)

        def apply(self, x, *, rng, backend=None):
            x = np.asarray(x, dtype=np.float64)
            return np.where(np.abs(x) >= self.tau * np.abs(x).max(axis=-1, keepdims=True), x, 0.0)

        def error_factor(self, d):
            return 1.0 - 1.0 / d  # the largest entry is kept: ||C(x) - x||^2 <= ||x||^2 - max^2


    @experiment("plugin_threshold_error", params={
        "d": Param("int", low=1, doc="dimension"),
        "tau": Param("float", default=0.5, low=0.0, high=1.0, doc="threshold"),
    })
    def threshold_error(params, rng, backend):
        """Relative error of the threshold compressor on a Gaussian vector."""
        c = compressor_from_name("plugin_threshold", tau=params["tau"])
        x = rng.standard_normal(params["d"])
        return [dict(metric="rel_error", value=float(((c.apply(x, rng=rng) - x) ** 2).sum() / (x ** 2).sum()))]


    @bound(kind="upper", provenance="N", paper="mine", statement="||C(x) - x||^2 <= (1 - 1/d) ||x||^2")
    def threshold_bound(d: int) -> float:
        """``1 - 1/d`` (upper; provenance [N]: the largest entry is always kept)."""
        return 1.0 - 1.0 / d


    thr = Threshold(0.3)
''')

SPEC = textwrap.dedent('''
    {plugins}
    [claim]
    id = "mine.threshold"
    paper = "mine"
    class = "derived"
    statement = "thresholding keeps the largest entry: ||C(x) - x||^2 <= (1 - 1/d) ||x||^2"
    kind = "upper"
    observable = "rel_error"
    bound = "{module}:threshold_bound"

    [experiment]
    name = "plugin_threshold_error"
    replicates = 10
    seed = 1

    [grid]
    d = [8, 32]
    tau = [0.3, 0.9]

    [[control]]
    name = "half_the_bound"
    why = "half the bound is below what thresholding loses"
    bound_scale = 0.5
''')


@pytest.fixture
def plug(tmp_path, monkeypatch):
    """A plugin file under a fresh module name (registries are process-wide), and a spec folder using it."""
    import sys

    name = f"userplug{next(_count)}"
    (tmp_path / f"{name}.py").write_text(PLUGIN.replace("plugin_threshold", f"{name}_threshold"))
    claims = tmp_path / "claims"
    claims.mkdir()
    body = SPEC.replace("plugin_threshold", f"{name}_threshold")
    (claims / "threshold.toml").write_text(body.format(plugins=f'plugins = ["../{name}.py"]', module=name))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "threshold.toml").write_text(body.format(plugins="", module=name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name


_count = iter(range(10**6))


def _main(args, capsys):
    from simcomm.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_spec_plugins_key_sweeps_and_judges_a_users_experiment_and_bound(plug, capsys):
    code, out, err = _main(["run", "claims/threshold.toml", "--jobs", "1", "--out", "out"], capsys)
    assert code == 0, err
    assert "mine.threshold" in out and "holds" in out
    folder = next((__import__("pathlib").Path("out/results/threshold")).iterdir())
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["verdict"] == "holds"


def test_plugin_option_on_check_list_payload_conform(plug, capsys):
    # check: a folder of the user's specs, the plugin named on the command line, negative controls in
    # worker processes (loky): the workers import the plugin by name too
    code, out, err = _main(["check", "--specs", "bare", "--plugin", f"{plug}.py", "--jobs", "2", "--controls",
                            "--out", "out", "--json", "v.json"], capsys)
    assert code == 0, err
    [row] = json.loads(open("v.json").read())
    assert row["verdict"] == "holds" and all(c["verdict"] == "violated" for c in row["controls"]), row

    code, out, _ = _main(["list", "--experiments", "--plugin", f"{plug}.py"], capsys)
    assert code == 0 and f"{plug}_threshold_error:" in out
    code, out, _ = _main(["list", "--specs", "bare", "--plugin", f"./{plug}.py"], capsys)
    assert code == 0 and "mine.threshold" in out and "[N]" in out

    # payload: the plugin's compressor by its registered name, its setting an option
    code, out, err = _main(["payload", f"{plug}_threshold", "-d", "64", "--tau", "0.9", "--plugin", f"{plug}.py",
                            "--json"], capsys)
    assert code == 0, err
    info = json.loads(out)
    assert info["roundtrip"] is True and info["bits"] == 64 * 32  # the default dense wire form

    # conform: its instance, the library's protocol (error_factor) read
    code, out, err = _main(["conform", f"{plug}:thr", "--kind", "compressor", "--plugin", f"{plug}.py",
                            "--max-draws", "1000"], capsys)
    assert code == 0, out + err
    assert any(line.split()[:2] == ["contraction", "holds"] for line in out.splitlines()), out


def test_bad_plugin_is_one_line_exit_2(plug, tmp_path, capsys):
    (tmp_path / "broken.py").write_text("x = (\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "json.py").write_text("")
    for args, msg in (
            (["list", "--plugin", "nope.py"], "--plugin 'nope.py': no such file"),
            (["list", "--plugin", "no_such_module"], "no module named 'no_such_module'"),
            (["run", "bare/threshold.toml", "--plugin", "broken.py"], "importing it raised SyntaxError (line 1)"),
            (["payload", "none", "-d", "4", "--plugin", "raises.py"], "raised RuntimeError (line 1): boom"),
            (["conform", "x:y", "--kind", "compressor", "--plugin", "json.py"], "a module named 'json' is already"),
            (["check", "--plugin", "plugin.txt"], "must end in .py"),
            (["run", "bare/threshold.toml"], "unknown experiment"),   # its experiment is in a plugin not loaded
    ):
        if "plugin.txt" in args:
            (tmp_path / "plugin.txt").write_text("")
        code, out, err = _main(args, capsys)
        assert code == 2 and msg in err, (args, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err


def test_docs_python_route_runs():
    # docs/your_code.md: spec.loads -> runner.run -> claims.judge -> plotting.bound_vs_empirical, as a doctest
    import doctest
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    res = doctest.testfile(str(root / "docs" / "your_code.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 8 and res.failed == 0
