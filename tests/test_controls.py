"""Every shipped claim has a negative control, and every control comes out violated on the quick grid.

A control is a perturbation under which the claim must fail (a biased compressor, wrong weights, the
methods swapped, the bound moved); a control that is not caught means the claim could not have failed.
This runs the whole quick check once (the main job's grids) with the controls.
"""

import pytest

from simcomm.checking import evaluate, select_specs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    specs = select_specs(quick=True)
    return evaluate(specs, jobs=2, backend="numba", controls=True,
                    cache_dir=tmp_path_factory.mktemp("cache"))


def test_every_claim_has_a_control(outcome):
    missing = [j.claim.id for j in outcome.judgements if not j.claim.controls]
    assert not missing, f"claims without a [[control]]: {missing}"


def test_every_control_is_violated(outcome):
    missed = [(j.claim.id, name, v) for j in outcome.judgements for name, v in j.controls if v != "violated"]
    assert not missed, f"controls not caught (claim, control, verdict): {missed}"
