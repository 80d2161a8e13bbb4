"""The command line through click's CliRunner: exit codes, one-line errors, files written."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tests._toy  # noqa: F401
from simcomm.cli import main

DATA = Path(__file__).parent / "data"


def _run(args):
    """Run ``main(args)`` capturing output and the exit code (main always exits)."""
    return CliRunner().invoke(_Entry(args))


class _Entry:
    """Adapter so CliRunner can call simcomm.cli.main with fixed argv (main calls sys.exit)."""

    def __init__(self, args):
        self.args = args
        self.name = "simcomm"

    def main(self, args=None, prog_name=None, **extra):
        main(self.args)


def test_version_and_help():
    r = _run(["--version"])
    assert r.exit_code == 0 and "simcomm" in r.output
    for cmd in ([], ["check"], ["list"], ["run"], ["plot"], ["topology"]):
        r = _run([*cmd, "--help"])
        assert r.exit_code == 0 and "Examples:" in r.output


@pytest.mark.parametrize("args, needle", [
    (["nope"], "No such command 'nope'"),
    (["check", "--bogus"], "No such option '--bogus'"),
    (["check", "no.such_claim", "--specs", str(DATA)], "unknown claim id 'no.such_claim'"),
    (["run", "missing.toml"], "spec file 'missing.toml' does not exist"),
    (["run", str(DATA / "toy_claim.toml"), "--set", "nn=3"], "unknown key 'nn'"),
    (["check", "--jobs", "0"], "Invalid value for '--jobs'"),
    (["check", "--backend", "cuda", "--specs", str(DATA), "--jobs", "1"], "unknown backend 'cuda'"),
    (["plot", "."], "is not a results folder"),
])
def test_user_errors_exit_2_with_one_line(args, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = _run(args)
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.output
    assert "Traceback" not in r.output


def test_unwritable_out_leaves_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _run(["check", "--specs", str(DATA), "--jobs", "1", "--out", str(blocker / "sub")])
    assert r.exit_code == 2 and "cannot write to output folder" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_check_writes_figures_report_json(tmp_path):
    out = tmp_path / "out"
    r = _run(["check", "--specs", str(DATA), "--jobs", "1", "--out", str(out), "--json", str(tmp_path / "v.json"),
              "--strict"])
    assert r.exit_code == 0, r.output
    assert "toy.mean" in r.output and "holds" in r.output
    # the default is --quick: its figures and report go to results/quick/, never over the gallery
    assert not (out / "figures").exists()
    assert (out / "results" / "quick" / "toy_mean.png").stat().st_size > 1000
    report = (out / "results" / "quick" / "REPORT.md").read_text()
    assert "![toy.mean](toy_mean.png)" in report and "**Verdict: holds**" in report
    verdicts = json.loads((tmp_path / "v.json").read_text())
    assert verdicts == [{"id": "toy.mean", "paper": "expgraph", "kind": "equal", "verdict": "holds",
                         "reason": "", "provenance": "N", "ratio": verdicts[0]["ratio"], "n_cells": 1,
                         "about": "paper", "detect": verdicts[0]["detect"], "controls": []}]
    assert verdicts[0]["detect"] > 1  # an equal claim flags a departure above the bound beyond its margin
    folders = list((out / "results" / "toy_claim").iterdir())
    assert len(folders) == 1 and {p.name for p in folders[0].iterdir()} == {"table.csv", "meta.json", "verdict.json"}
    # plot DIR redraws from the written table
    r = _run(["plot", str(folders[0])])
    assert r.exit_code == 0 and (folders[0] / "figure.png").is_file()
    # no temporary files are left behind
    assert not [p for p in out.rglob("*.tmp")]


def test_strict_exits_1_on_violation(tmp_path):
    r = _run(["run", str(DATA / "toy_claim.toml"), "--set", "mu=2.0", "--out", str(tmp_path), "--jobs", "1"])
    assert r.exit_code == 0
    bad = tmp_path / "specs"
    bad.mkdir()
    (bad / "toy.toml").write_text((DATA / "toy_claim.toml").read_text()
                                  .replace("mu = 2.0", "mu = 2.0\nshape = \"exp\"")
                                  .replace('bound = "tests._toy:toy_mean"',
                                           'bound = "tests._toy:toy_mean"\nbound_args = {mu = 30.0}'))
    r = _run(["check", "--specs", str(bad), "--jobs", "1", "--out", str(tmp_path), "--strict"])
    assert r.exit_code == 1 and "violated" in r.output


def test_topology_json_keys_and_values():
    r = _run(["topology", "exponential", "-n", "64", "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert list(info) == ["name", "n", "max_degree", "rho", "spectral_gap", "doubly_stochastic", "period",
                          "product_deviation"]
    # rho = 1 - 2/(1 + ceil(log2 64)) = 5/7 for even n (papers/exponential_graph.md C1)
    assert info["n"] == 64 and info["max_degree"] == 6 and abs(info["rho"] - 5 / 7) < 1e-12
    assert info["period"] is None and info["doubly_stochastic"] is True
    r = _run(["topology", "one_peer_exponential", "-n", "32", "--json"])
    info = json.loads(r.output)
    assert info["period"] == 5 and abs(info["product_deviation"]) < 1e-12


@pytest.mark.parametrize("args, needle", [
    (["topology", "ring", "-n", "1"], "n must be an integer >= 2"),
    (["topology", "hypercube", "-n", "12"], "hypercube needs n = 2^dim"),
    (["topology", "erdos_renyi", "-n", "8", "--p", "0"], "p must be a finite number in (0, 1]"),
    (["topology", "torus", "-n", "6", "--shape", "1x6"], "torus"),
    (["topology", "nosuch", "-n", "8"], "unknown topology 'nosuch'"),
])
def test_topology_bad_input(args, needle):
    r = _run(args)
    assert r.exit_code == 2 and r.output.startswith("error: ") and needle in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_list_experiments_names_the_former_name_of_a_renamed_parameter():
    res = _run(["list", "--experiments"])
    assert res.exit_code == 0, res.output
    assert "lr: a number > 0, default 0.1. step size (was gamma)" in res.output  # urq_floor
    assert "draws: an integer >= 1" in res.output and "(was mc)" in res.output
