"""DiLoCo against data-parallel SGD (experiment ``local_vs_dp``, simcomm/experiments/local.py)."""

from __future__ import annotations

import numpy as np
import pytest

from simcomm._errors import UserError
from simcomm.experiments import get_experiment
from simcomm.experiments.local import with_gradient_noise
from simcomm.models import quadratic


def _params(**kw):
    exp = get_experiment("local_vs_dp")
    p = {k: v.default for k, v in exp.params.items()}
    p.update(kw)
    return exp, p


def _rows(**kw):
    exp, p = _params(**kw)
    return {(r["metric"], r["method"]): r["value"] for r in exp.func(p, np.random.default_rng(5), None)}


def test_gradient_noise_is_common_to_copies_and_absent_at_zero():
    p = quadratic(3, 4, L=1.0, mu=0.5, rng=0)
    X, idx = np.ones((3, 4)), np.arange(3)
    a, b = with_gradient_noise(p, 0.3, 9), with_gradient_noise(p, 0.3, 9)
    first = a.grad(X, idx)
    assert np.array_equal(first, b.grad(X, idx))
    assert not np.array_equal(first, a.grad(X, idx))  # the stream moves on
    assert with_gradient_noise(p, 0.0, 9) is p


def test_one_inner_step_with_outer_sgd_of_one_is_the_data_parallel_arm():
    # DiLoCo at H = 1 with an outer SGD step of 1 is parallel SGD: with the same noise stream, the two arms
    # agree to rounding at equal steps; at H = 1 equal bytes are equal steps
    got = _rows(H=1, outer="sgd", outer_lr=1.0, steps=40, d=12)
    for metric in ("gap_equal_steps", "gap_equal_bytes"):
        assert got[metric, "diloco"] == pytest.approx(got[metric, "dp_sgd"], rel=1e-9)
    assert got["bytes", "diloco"] == got["bytes", "dp_sgd"] == 40 * 12 * 32 / 8


def test_equal_bytes_reads_sgd_after_steps_over_H():
    got = _rows(steps=64, H=8, d=12)
    # DiLoCo sends once per round: 8 rounds of 32 d bits a worker, SGD once per step
    assert got["bytes", "diloco"] == 8 * 12 * 4 and got["bytes", "dp_sgd"] == 64 * 12 * 4
    assert got["gap_equal_steps", "diloco"] == got["gap_equal_bytes", "diloco"]
    # SGD after 8 steps is further from the optimum than after 64
    assert got["gap_equal_bytes", "dp_sgd"] > got["gap_equal_steps", "dp_sgd"]
    assert got["gap_equal_bytes", "diloco"] < got["gap_equal_bytes", "dp_sgd"]


@pytest.mark.parametrize("bad, match", [(dict(steps=100, H=8), "multiple of H"),
                                        (dict(outer="sgd", outer_momentum=0.5), "outer_momentum")])
def test_settings_that_do_not_fit_are_one_line(bad, match):
    exp, p = _params(**bad)
    with pytest.raises(UserError, match=match):
        exp.check(p)
