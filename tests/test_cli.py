"""The command line through click's CliRunner: exit codes, one-line errors, files written."""

import json
from pathlib import Path

import pandas as pd
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
                         "class": "derived", "detect": verdicts[0]["detect"], "detect_none": False,
                         "detect_exact": False, "controls": []}]
    assert verdicts[0]["detect"] > 1  # an equal claim flags a departure above the bound beyond its margin
    folders = list((out / "results" / "toy_claim").iterdir())
    assert len(folders) == 1 and {p.name for p in folders[0].iterdir()} == {"table.csv", "meta.json", "verdict.json"}
    # plot DIR redraws from the written table
    r = _run(["plot", str(folders[0])])
    assert r.exit_code == 0 and (folders[0] / "figure.png").is_file()
    # no temporary files are left behind
    assert not [p for p in out.rglob("*.tmp")]


def test_list_shows_each_claims_class_and_a_bad_class_is_one_line(tmp_path):
    r = _run(["list"])
    assert r.exit_code == 0, r.output
    rows = {line.split()[0]: line.split()[1:4] for line in r.output.splitlines() if line.strip()}
    assert rows["rtopk.sgd_intermediate_r"] == ["rtopk", "seed", "order"]
    assert rows["rtopk.contraction"] == ["rtopk", "check", "upper"]
    assert rows["expgraph.choco_gossip"] == ["choco", "other", "upper"]
    assert {cls for _, cls, _ in rows.values()} == {"seed", "other", "derived", "check"}
    bad = tmp_path / "specs"
    bad.mkdir()
    text = (DATA / "toy_claim.toml").read_text()
    (bad / "toy.toml").write_text(text.replace('class = "derived"', 'class = "finding"'))
    for argv in (["list", "--specs", str(bad)], ["run", str(bad / "toy.toml"), "--out", str(tmp_path)]):
        r = _run(argv)
        assert r.exit_code == 2, r.output
        assert r.output.strip().count("\n") == 0 and "class 'finding' is unknown; use one of seed, other, derived, " \
            "check" in r.output


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
    assert list(info) == ["name", "n", "max_degree", "rho", "spectral_gap", "doubly_stochastic", "stochasticity",
                          "period", "product_deviation", "rate_per_step", "spectral_gap_per_step"]
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


def _readme_first_spec() -> str:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    return text.split("```toml\n", 1)[1].split("```", 1)[0]


def test_plot_draws_the_readme_sweep_without_a_claim(tmp_path):
    spec = tmp_path / "my.toml"
    spec.write_text(_readme_first_spec())
    # the README's spec verbatim, on shorter runs (the plot is what is tested here)
    r = _run(["run", str(spec), "--out", str(tmp_path), "--jobs", "1", "--set", "burn_in=20", "--set", "steps=60",
              "--set", "replicates=3", "--set", "n=[8, 16]"])
    assert r.exit_code == 0, r.output
    (folder,) = (tmp_path / "results" / "my").iterdir()
    r = _run(["plot", str(folder)])
    assert r.exit_code == 0, r.output
    assert (folder / "figure.png").stat().st_size > 5000
    r = _run(["plot", str(folder), "--x", "topology", "--hue", "n", "-o", str(tmp_path / "cat.svg")])
    assert r.exit_code == 0 and (tmp_path / "cat.svg").is_file(), r.output
    svg = (tmp_path / "cat.svg").read_text()
    assert "exponential" in svg and "topology=" not in svg  # plain category labels, not key=value


@pytest.mark.parametrize("args, needle", [
    (["--x", "k"], "--x 'k' is not a column of"),
    (["--trace", "consensus_error", "--x", "k"], "--x 'k' is not a column of"),
    (["--hue", "topolgy"], "--hue 'topolgy' is not a column of table.csv (did you mean 'topology'?)"),
    (["--metric", "loss"], "--metric 'loss' is not a metric of the table"),
    (["--trace", "consensus_error"], "no trace rows of metric 'consensus_error'"),
])
def test_plot_names_a_bad_column_in_one_line(tmp_path, args, needle):
    from simcomm.results import Results

    table = pd.DataFrame({"topology": ["ring", "ring", "exponential", "exponential"], "n": [8, 16, 8, 16],
                          "replicate": 0, "metric": "consensus_error", "value": [0.1, 0.2, 0.01, 0.02]})
    Results(table, {"spec": {"name": "my", "grid": {"topology": ["ring", "exponential"], "n": [8, 16]}}}).write(
        tmp_path / "res")
    r = _run(["plot", str(tmp_path / "res"), *args])
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and needle in lines[0], r.output


def test_topology_time_varying_reports_its_per_period_rate_and_never_a_negative_gap():
    r = _run(["topology", "one_peer_exponential", "-n", "100", "--json"])
    info = json.loads(r.output)
    # a one-peer layer alone does not contract (rho 1); a period of 7 steps does
    assert info["rho"] == 1.0 and info["spectral_gap"] == 0.0 and info["period"] == 7
    assert 0 < info["product_deviation"] < 1
    assert abs(info["rate_per_step"] - info["product_deviation"] ** (1 / 7)) < 1e-12
    for name, n in (("base", "25"), ("one_peer_exponential", "64"), ("simple_base_graph", "10")):
        info = json.loads(_run(["topology", name, "-n", n, "--json"]).output)
        assert info["spectral_gap"] >= 0 and info["spectral_gap_per_step"] >= 0, info


@pytest.mark.parametrize("name, n", [("ring", "16"), ("one_peer_exponential", "100"), ("base", "25"), ("star", "9")])
def test_topology_steps_prints_the_consensus_error_after_t_steps(name, n):
    import numpy as np

    from simcomm.topology import build, mixing_matrix

    r = _run(["topology", name, "-n", n, "--steps", "9", "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    topo = build(name, int(n))
    P = np.eye(int(n))
    for k in range(9):  # the explicit product of the nine mixing matrices
        P = mixing_matrix(topo, k) @ P
    assert info["steps"] == 9 and abs(info["consensus_after_steps"] - np.linalg.norm(P - 1 / int(n), 2)) < 1e-10
    r = _run(["topology", name, "-n", n, "--steps", "-1"])
    assert r.exit_code == 2 and "Invalid value for '--steps'" in r.output


def test_check_table_is_compact_with_totals_and_wide_on_request(tmp_path):
    args = ["check", "--specs", str(DATA), "--jobs", "1", "--out", str(tmp_path)]
    r = _run(args)
    assert r.exit_code == 0, r.output
    header = next(ln for ln in r.output.splitlines() if "claim" in ln and "verdict" in ln)
    assert "ratio" in header and "reason" in header and "statement" not in header and "paper" not in header
    assert "1 claim: 1 holds." in r.output and "--wide adds" in r.output
    r = _run([*args, "--wide"])
    header = next(ln for ln in r.output.splitlines() if "claim" in ln and "verdict" in ln)
    assert "statement" in header and "controls" in header and "the sample mean equals mu" in r.output
    assert "class" in header and "derived" in r.output  # what the claim is, per row
    totals = " ".join(r.output.split())
    assert "1 claim by class: 0 seed-paper claims, 0 other papers' claims, 1 derived bound" in totals


def test_short_reason_cuts_at_a_word():
    from simcomm.cli.check import _short_reason

    text = "the confidence interval straddles the margin in 3 of 8 cells; more replicates would decide it"
    short = _short_reason(text, 40)
    assert short.endswith(" ...") and len(short) <= 44 and text.startswith(short[:-4])
    assert _short_reason("short", 40) == "short"


@pytest.mark.parametrize("argv", [["--help"], ["list"]])
def test_help_and_list_import_no_heavy_library(argv):
    # `simcomm --help` and `simcomm list` stay fast by importing lazily: numba, pandas, scipy and matplotlib
    # load only when a command needs them (the start-up time itself is machine-dependent and never asserted)
    import subprocess
    import sys

    code = (f"import sys\nsys.argv = ['simcomm', *{argv!r}]\nfrom simcomm.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY=' + ','.join(m for m in ('numba', 'pandas', 'scipy', 'matplotlib', 'torch')\n"
            "                          if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY=\n" in out, out[-200:]
