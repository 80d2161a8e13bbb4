"""simcomm.torch.OuterStep against simcomm's DiLoCo, and ``simcomm conform --kind outer`` on outer-step factories.

The parity checks run float64 DiLoCo (conform's battery: 4 workers, H = 4, 8 rounds on quadratics) and
compare the global model after every round with ``simcomm.optim``'s ``diloco`` at 1e-9 relative: the two
form the same quantities, some in another order (the workers' mean, ``p - lr * direction`` fused), which is
a few ulps a round (measured ~2e-16); the deliberately broken outer steps differ by 0.1 and more.
"""

from __future__ import annotations

import functools
import pickle
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="OuterStep needs the torch extra (pip install torch==2.13.0)")

from simcomm._errors import UserError  # noqa: E402
from simcomm.compress import TopK  # noqa: E402
from simcomm.conform import conform, conform_all  # noqa: E402
from simcomm.torch import OuterStep  # noqa: E402

F = "simcomm.conform_fixtures:"


def _make(params, *, workers, rng, **settings):
    return OuterStep(params, workers=workers, rng=rng, **settings)


@pytest.mark.parametrize("settings", [
    dict(),                                                                       # DiLoCo defaults, uncompressed
    dict(compressor="top_k(k=3)", feedback="ef", momentum=0.8),
    dict(compressor="rand_k(k=5, scale=false)", feedback="ef21"),                 # draws: the streams must agree
    dict(compressor="qsgd(s=4)", momentum=0.0, lr=1.0),                            # outer SGD of 1: FedAvg
    dict(compressor=TopK(4), feedback=True, lr=0.5, momentum=0.9),
])
def test_outer_step_is_simulators_diloco(settings):
    r = conform(functools.partial(_make, **settings), "outer")
    assert r.verdicts() == {"determinism": "holds", "simulator": "holds", "checkpoint": "holds"}, r.text()
    assert r.results[1].measured < 1e-13


@pytest.mark.parametrize("bug", ["outer_ef_dropped", "outer_forgot_nesterov"])
def test_broken_outer_steps_are_violated_and_twins_hold(bug):
    bad, twin, shipped = conform_all([F + bug, F + "torch_sgd_outer", F + "outer_step"], "outer")
    assert bad.verdicts()["simulator"] == "violated" and bad.exit_code == 1, bad.text()
    assert bad.results[1].measured > 1e-2  # many orders above rounding: a difference of method
    for good in (twin, shipped):
        assert set(good.verdicts().values()) == {"holds"}, good.text()
        assert good.exit_code == 0


class _ForgetsResiduals(OuterStep):
    """BUG: a checkpoint without the error-feedback residuals (they restart from zero after a restore)."""

    def state_dict(self):
        state = super().state_dict()
        state["memory"] = torch.zeros_like(state["memory"])
        return state


def test_a_checkpoint_that_drops_the_residuals_is_violated():
    def make(params, *, workers, rng):
        return _ForgetsResiduals(params, compressor="top_k(k=4)", feedback="ef", workers=workers, rng=rng)

    r = conform(make, "outer")
    assert r.verdicts() == {"determinism": "holds", "simulator": "holds", "checkpoint": "violated"}, r.text()


def test_heavy_ball_is_not_simulated_and_says_so():
    r = conform(functools.partial(_make, momentum=0.9, nesterov=False), "outer")
    assert r.verdicts()["simulator"] == "skipped" and "heavy-ball" in r.results[1].reason
    assert r.exit_code == 0


def test_an_outer_step_that_draws_from_its_own_seed_is_bad_input():
    def make(params, *, workers, rng):
        del rng
        return OuterStep(params, compressor="rand_k(k=4, scale=false)", feedback="ef", workers=workers)

    r = conform(make, "outer")
    assert r.verdicts()["determinism"] == "error" and r.exit_code == 2
    assert "rng the factory is given" in r.errors[0]


def test_an_outer_step_without_declarations_is_one_line():
    class Bare:
        def __init__(self, params):
            self.params = params

        def step(self, local):
            pass

    r = conform(lambda params, *, workers, rng: Bare(params), "outer")
    assert r.verdicts()["simulator"] == "error" and "declares no lr, momentum" in r.errors[0], r.text()


def test_cli_outer_exit_codes(capsys):
    from simcomm.cli import main

    for target, code in (("outer_forgot_nesterov", 1), ("outer_step", 0)):
        with pytest.raises(SystemExit) as e:
            main(["conform", F + target, "--kind", "outer"])
        assert e.value.code == code
    out = capsys.readouterr().out
    assert "simulator" in out and "violated" in out


# ------------------------------------------------------------------------------------------------------------ API


def test_in_place_no_copies_and_sync():
    x = [torch.zeros(2, 3, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)]
    ptrs = [p.data_ptr() for p in x]
    outer = OuterStep(x, lr=1.0, momentum=0.0, workers=2, rng=0)
    local = [[torch.full((2, 3), -1.0, dtype=torch.float64), torch.full((4,), -3.0, dtype=torch.float64)],
             [torch.full((2, 3), -3.0, dtype=torch.float64), torch.full((4,), -1.0, dtype=torch.float64)]]
    buf = outer._delta.data_ptr()
    outer.step(local)
    assert [p.data_ptr() for p in x] == ptrs and outer._delta.data_ptr() == buf
    # outer SGD of step 1 without compression is the workers' average (FedAvg), copied back to them
    assert torch.equal(x[0], torch.full((2, 3), -2.0, dtype=torch.float64))
    assert torch.equal(local[1][1], x[1])
    assert outer.stats() == {"rounds": 1, "bits": 2 * 32.0 * 10}


def test_nesterov_matches_torch_sgd_on_its_direction():
    # fed the same averaged direction g every round, the outer step is torch.optim.SGD(nesterov=True) with grad g
    x = torch.zeros(5, dtype=torch.float64)
    y = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([y], lr=0.3, momentum=0.9, nesterov=True)
    outer = OuterStep([x], lr=0.3, momentum=0.9, workers=1, rng=0)
    g = np.random.default_rng(3)
    for _ in range(6):
        d = torch.from_numpy(g.standard_normal(5))
        outer.step([x - d], sync=False)  # Delta = x - (x - d) = d
        y.grad = d.clone()
        opt.step()
    assert torch.allclose(x, y.detach(), rtol=0, atol=1e-14)


def test_checkpoint_round_trip_and_mismatch():
    x = torch.zeros(6, dtype=torch.float64)
    a = OuterStep([x], compressor=TopK(2), feedback="ef", workers=2, rng=1)
    a.step([[torch.ones(6, dtype=torch.float64)], [torch.arange(6.0, dtype=torch.float64)]], sync=False)
    state = pickle.loads(pickle.dumps(a.state_dict()))
    b = OuterStep([x.clone()], compressor=TopK(2), feedback="ef", workers=2, rng=99)
    b.load_state_dict(state)
    assert torch.equal(a.residuals(), b.residuals()) and b.stats() == a.stats()
    with pytest.raises(UserError, match="settings"):
        OuterStep([x], compressor=TopK(3), feedback="ef", workers=2).load_state_dict(state)


@pytest.mark.parametrize("kw, match", [
    (dict(lr=0.0), "lr = 0.0"),
    (dict(momentum=1.0), "momentum = 1.0"),
    (dict(feedback="diana"), "feedback = 'diana'"),
    (dict(compressor="top_q(k=2)"), "top_q"),
    (dict(compressor=object()), "not a simcomm.compress.Compressor"),
    (dict(workers=0), "workers = 0"),
])
def test_bad_settings_are_one_line(kw, match):
    with pytest.raises(UserError, match=match) as e:
        OuterStep([torch.zeros(3)], **kw)
    assert "\n" not in str(e.value)


def test_one_worker_passes_its_module_or_its_parameters():
    g = torch.nn.Linear(3, 1).double()
    for local_of in (lambda m: m, lambda m: m.parameters(), lambda m: list(m.parameters())):
        model = torch.nn.Linear(3, 1).double()
        model.load_state_dict(g.state_dict())
        w = torch.nn.Linear(3, 1).double()
        with torch.no_grad():
            for p, q in zip(w.parameters(), model.parameters()):
                p.copy_(q - 1.0)
        OuterStep(model.parameters(), lr=1.0, momentum=0.0, rng=0).step(local_of(w))
        assert all(torch.equal(p, q) for p, q in zip(w.parameters(), model.parameters()))  # synced
        assert torch.allclose(model.weight, g.weight - 1.0)  # outer SGD of 1: the worker's model


def test_bad_locals_are_one_line():
    outer = OuterStep([torch.zeros(3), torch.zeros(2)], workers=2)
    with pytest.raises(UserError, match="got 1 workers"):
        outer.step([torch.zeros(3), torch.zeros(2)])
    with pytest.raises(UserError, match="shapes"):
        outer.step([[torch.zeros(3), torch.zeros(2)], [torch.zeros(3), torch.zeros(3)]])
    with pytest.raises(UserError, match="not a torch.Tensor"):
        OuterStep([np.zeros(3)])
    with pytest.raises(UserError, match="local is a int"):
        outer.step(3)


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_distributed_ranks_take_the_one_process_step(tmp_path):
    # two Gloo ranks, one worker each, equal one process holding both workers (top-k draws nothing)
    import torch.multiprocessing as mp

    from tests import _outer_worker as W

    path = tmp_path / "out.pkl"
    mp.start_processes(W.worker, args=(2, _port(), str(path)), nprocs=2, join=True, start_method="spawn")
    with open(path, "rb") as fh:
        ranks = pickle.load(fh)
    np.testing.assert_array_equal(ranks[0], ranks[1])
    x = torch.zeros(W.D, dtype=torch.float64)
    outer = OuterStep([x], lr=0.7, momentum=0.9, compressor=TopK(3), feedback="ef", workers=2, rng=0)
    for r in range(W.ROUNDS):
        outer.step([[torch.from_numpy(W.local_model(i, r))] for i in range(2)])
        np.testing.assert_allclose(ranks[0][r], x.numpy(), rtol=0, atol=1e-14)
