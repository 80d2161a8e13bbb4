"""Claims whose experiment needs an extra that is not installed are listed in one line, never run."""

import shutil

import tests._toy  # noqa: F401
from tests.test_cli import _run
from tests.test_outputs import DATA

NEEDS = """[claim]
id = "toy.needs_extra"
paper = "expgraph"
class = "derived"
statement = "never judged here: its experiment needs a package that is not installed"
kind = "equal"
observable = "mean"
bound = "tests._toy:toy_mean"
margin_abs = 0.5

[experiment]
name = "toy_needs_extra"
replicates = 2
seed = 1

[grid]
n = [10]

[[control]]
name = "shifted"
why = "the bound moved by 10"
bound_scale = 10.0
"""


def _specs(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    shutil.copy(DATA / "toy_claim.toml", folder)
    (folder / "needs.toml").write_text(NEEDS)
    return folder


def test_check_lists_claims_needing_an_absent_extra_and_judges_the_rest(tmp_path):
    r = _run(["check", "--specs", str(_specs(tmp_path)), "--jobs", "1", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    line = ("not run, 1 needs simcomm_no_such_package (pip install simcomm_no_such_package): toy.needs_extra")
    assert line in r.output
    assert "toy.mean" in r.output  # the runnable claim is judged
    report = (tmp_path / "out" / "results" / "quick" / "REPORT.md").read_text()
    assert "toy.needs_extra" not in report


def test_check_of_a_claim_needing_an_absent_extra_by_name_is_one_line_exit_2(tmp_path):
    r = _run(["check", "toy.needs_extra", "--specs", str(_specs(tmp_path)), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert "cannot run: 1 needs simcomm_no_such_package" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()  # nothing written, not even the output folder
