"""The optimiser algebra: blocks, chain, the one loop, the method registry and the parameter-server methods.

Every named parameter-server method has one row in ``SERVER_ROWS``: its settings as a spec writes them
(strings and numbers) and, where one exists, the public function it must equal bit for bit.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from simcomm._errors import UserError
from simcomm.compress import EF21, QSGD, Identity, TopK
from simcomm.models import heterogeneous_least_squares, quadratic
from simcomm.optim import (
    METHODS,
    aggregate,
    async_compressed_gd,
    build_method,
    chain,
    compress,
    compressed_gd,
    compressed_iag,
    delayed,
    descend,
    error_feedback,
    get_method,
    local_gradients,
    momentum,
    run,
    run_choco_gossip,
    run_choco_sgd,
    run_dsgd,
    run_pushsum,
    run_pushsum_sgd,
    run_tracking,
    run_unreliable_gossip,
    scale_by_lr,
)
from simcomm.topology import LinkFailures

PROBLEM = quadratic(4, 12, L=1.0, mu=0.2, sigma2=1.0, rng=3)


def _same(a, b):
    assert np.array_equal(a.step, b.step)
    assert a.records.keys() == b.records.keys()
    for k in a.records:
        assert np.array_equal(a.records[k], b.records[k], equal_nan=True), k
    assert np.array_equal(a.x, b.x, equal_nan=True)
    assert np.array_equal(a.diverged_at, b.diverged_at)


# name -> (spec-style settings, the public function of the same run or None)
SERVER_ROWS = {
    "compressed_gd": (dict(compressor="qsgd(s=2)", lr=0.3, feedback="ef21", downlink="top_k(k=6)"),
                      lambda **kw: compressed_gd(PROBLEM, QSGD(2), lr=0.3, feedback="ef21", downlink=TopK(6), **kw)),
    "async_gd": (dict(compressor="top_k(k=3)", lr=0.2, tau=3, delay="uniform"),
                 lambda **kw: async_compressed_gd(PROBLEM, TopK(3), lr=0.2, tau=3, delay="uniform", **kw)),
    "iag": (dict(compressor="qsgd(s=4)", lr=0.1, order="random"),
            lambda **kw: compressed_iag(PROBLEM, QSGD(4), lr=0.1, order="random", **kw)),
    "ef21_hb_delayed": (dict(compressor="top_k(k=4)", lr=0.05, beta=0.5, tau=2, delay="adversarial"), None),
    # local-update methods (tests/test_local_updates.py: identities and the definition written out)
    "local_sgd": (dict(lr=0.1, H=4, compressor="qsgd(s=4)", feedback="ef"), None),
    "diloco": (dict(lr=0.1, H=4, inner="momentum", inner_beta=0.5, compressor="top_k(k=6)", feedback="ef"), None),
    "streaming_diloco": (dict(lr=0.1, H=4, fragments=2, overlap=1, alpha=0.5), None),
    "sparseloco": (dict(lr=0.1, H=4, k=3, value_bits=2, ef_beta=0.9), None),
    "demo": (dict(lr=0.1, beta=0.5, k=2, chunk=4), None),
}


def test_every_server_method_has_a_row():
    server = {name for name, info in METHODS.items() if info.family == "server"}
    assert server == set(SERVER_ROWS)


@pytest.mark.parametrize("name", sorted(SERVER_ROWS))
def test_named_method_equals_its_public_function(name):
    settings, public = SERVER_ROWS[name]
    kw = dict(replicates=3, record_every=4, rng=7)
    tr = run(PROBLEM, build_method(name, **settings), 40, **kw)
    assert tr.f_gap.shape == (3, tr.step.size) and tr.step[-1] == 40
    if public is not None:
        _same(tr, public(steps=40, **kw))
    assert np.isfinite(tr.f_gap).all() and tr.f_gap[:, -1].max() < tr.f_gap[:, 0].min()


@pytest.mark.parametrize("name", sorted(SERVER_ROWS))
def test_named_method_is_a_training_experiment(name):
    from simcomm.experiments import get_experiment

    exp = get_experiment(f"train_{name}")
    assert set(METHODS[name].params) <= set(exp.params)


NODES = heterogeneous_least_squares(8, 4, b=1.0, rng=0)
X0 = np.random.default_rng(1).standard_normal((8, 3))
# the decentralized methods run by run() with no watch and no start given, against their public drivers
DECENTRALIZED_ROWS = {
    "dsgd": (NODES, dict(topology="ring", lr=0.1), lambda **kw: run_dsgd(NODES, "ring", lr=0.1, **kw)),
    "gradient_tracking": (NODES, dict(topology="exponential", lr=0.05, sigma=0.3, seed=2),
                          lambda **kw: run_tracking(NODES, "exponential", lr=0.05, sigma=0.3, seed=2, **kw)),
    "exact_diffusion": (NODES, dict(topology="ring", lr=0.05),
                        lambda **kw: run_tracking(NODES, "ring", method="exact_diffusion", lr=0.05, **kw)),
    "pushsum_sgd": (NODES, dict(topology="ring", lr=0.05, sigma=0.2, seed=1),
                    lambda **kw: run_pushsum_sgd(NODES, "ring", lr=0.05, sigma=0.2, seed=1, **kw)),
    "choco_sgd": (NODES, dict(compressor="top_k(k=2)", lr=0.05, gamma=0.3, sigma=0.3, seed=3),
                  lambda **kw: run_choco_sgd(NODES, "ring", TopK(2), lr=0.05, gamma=0.3, sigma=0.3, seed=3, rng=0,
                                             **kw)),
    "pushsum": (None, dict(topology="directed_exponential"),
                lambda **kw: run_pushsum(X0, "directed_exponential", rng=0, **kw)),
    "choco_gossip": (None, dict(compressor="top_k(k=1)", gamma=0.2),
                     lambda **kw: run_choco_gossip(X0, "ring", TopK(1), gamma=0.2, rng=0, **kw)),
    "unreliable_gossip": (None, dict(topology="ring", q=0.3),
                          lambda **kw: run_unreliable_gossip(X0, "ring", LinkFailures(q=0.3), rng=0, **kw)),
}


def test_every_decentralized_method_has_a_row():
    assert {n for n, i in METHODS.items() if i.family in ("nodes", "consensus")} == set(DECENTRALIZED_ROWS)


@pytest.mark.parametrize("steps", [0, 60])
@pytest.mark.parametrize("name", sorted(DECENTRALIZED_ROWS))
def test_run_picks_a_decentralized_method_s_watch_and_start(name, steps):
    problem, settings, public = DECENTRALIZED_ROWS[name]
    x0 = X0 if problem is None else None  # a consensus method starts from the nodes' own values
    with np.errstate(all="ignore"):
        got = run(problem, build_method(name, **settings), steps, rng=0, x0=x0, record_every=7)
    _same(got, public(steps=steps, record_every=7))
    assert got.step[-1] == steps


@pytest.mark.parametrize("name", sorted(n for n, i in METHODS.items() if i.family == "nodes"))
def test_decentralized_method_is_a_training_experiment(name):
    # train_<name> trains on heterogeneous least squares, run by run() with the method's own watch
    from simcomm.experiments import get_experiment

    exp = get_experiment(f"train_{name}")
    settings = dict(DECENTRALIZED_ROWS[name][1])
    settings.setdefault("topology", "ring")
    params = exp.validate({**settings, "n": 8, "d": 4, "steps": 20, "record_every": 10}, "test")
    rows = exp.func(params, np.random.default_rng(0), None)
    final = {r["metric"]: r["value"] for r in rows if "step" not in r}
    assert final["diverged"] == 0.0 and len(final) > 2


def test_the_worked_example_is_one_short_file():
    import simcomm.optim.methods.ef21_hb_delayed as mod

    assert len(Path(mod.__file__).read_text().splitlines()) <= 60


def test_ef21_hb_delayed_is_its_blocks():
    # the registered method and the same chain written out by hand give the same run
    by_hand = descend(chain(delayed(local_gradients(), 2, "uniform"), error_feedback(EF21(TopK(4))), aggregate("mean"),
                            momentum(0.5), scale_by_lr(0.05)), bits=lambda k, p: k * p.n * TopK(4).bits(p.d))
    a = run(PROBLEM, by_hand, 30, rng=1, replicates=2)
    b = run(PROBLEM, build_method("ef21_hb_delayed", compressor="top_k(k=4)", lr=0.05, beta=0.5, tau=2,
                                  delay="uniform"), 30, rng=1, replicates=2)
    _same(a, b)


def test_no_delay_and_no_momentum_is_plain_ef21():
    a = run(PROBLEM, build_method("ef21_hb_delayed", compressor=TopK(4), lr=0.1, beta=0.0, tau=0), 25, rng=2)
    b = compressed_gd(PROBLEM, TopK(4), lr=0.1, steps=25, feedback="ef21", rng=2)
    _same(a, b)


def test_momentum_is_torch_sgd_convention():
    # heavy ball and Nesterov against a naive loop of torch.optim.SGD's update on the same directions
    g = np.random.default_rng(0).normal(size=(5, 1, 3))
    for nesterov in (False, True):
        t = momentum(0.9, nesterov)
        s = t.init(None, None)
        buf = None
        for u in g:
            out, s = t.update(u, s, None, None)
            buf = u if buf is None else 0.9 * buf + u
            assert np.array_equal(out, u + 0.9 * buf if nesterov else buf)


def test_delay_zero_is_no_delay():
    a = run(PROBLEM, descend(chain(delayed(local_gradients(), 0), compress(Identity()), aggregate(),
                                   scale_by_lr(0.2)), bits=lambda k, p: k * p.n * 32 * p.d), 20, rng=0)
    b = compressed_gd(PROBLEM, Identity(), lr=0.2, steps=20, rng=0)
    _same(a, b)


def test_chain_runs_left_to_right_and_keeps_each_state():
    from simcomm.optim import Transform

    add = Transform(lambda x, c: 0, lambda u, s, x, c: (u + 1, s + 1))
    dbl = Transform(lambda x, c: (), lambda u, s, x, c: (2 * u, s))
    t = chain(add, dbl)
    u, s = t.update(1, t.init(None, None), None, None)
    assert (u, s) == (4, (1, ()))
    u, s = chain(dbl, add).update(1, s[::-1], None, None)
    assert (u, s) == (3, ((), 2))


def test_registry_errors_are_one_line():
    with pytest.raises(UserError, match="did you mean 'compressed_gd'"):
        get_method("compresed_gd")
    with pytest.raises(UserError, match="unknown setting 'lrr'.*did you mean 'lr'"):
        build_method("compressed_gd", lrr=0.1)
    with pytest.raises(UserError, match="setting 'lr' is required"):
        build_method("iag", compressor="none")
    with pytest.raises(Exception, match="'tau' = -1 is not allowed"):
        build_method("async_gd", lr=0.1, tau=-1)
    with pytest.raises(UserError, match="needs mode = 'workers'"):
        build_method("compressed_gd", lr=0.1, feedback="ef", mode="aggregate")


def test_every_method_declares_its_settings():
    for name, info in METHODS.items():
        sig = inspect.signature(info.build)
        assert set(sig.parameters) == set(info.params), name
        assert info.doc, f"{name}: give the builder a one-line docstring"


def test_a_new_method_registers_and_runs(tmp_path):
    from simcomm._params import Param
    from simcomm.optim import method
    from simcomm.optim._registry import METHODS as REG

    @method("test_sign_descent", params={"lr": Param("float", low=0.0, low_open=True, doc="step")})
    def build(*, lr):
        """Sign of the full gradient."""
        from simcomm.optim import full_gradient, stateless

        return descend(chain(full_gradient(), stateless(lambda u, x, c: np.sign(u)), scale_by_lr(lr)))

    try:
        tr = run(PROBLEM, build_method("test_sign_descent", lr=0.01), 50, rng=0)
        assert tr.f_gap[0, -1] < tr.f_gap[0, 0]
    finally:
        REG.pop("test_sign_descent")


def test_the_methods_page_runs():
    import doctest

    path = Path(__file__).resolve().parents[1] / "docs" / "methods.md"
    result = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


USER_METHOD = '''
import numpy as np
from simcomm._params import Param
from simcomm.optim import chain, descend, full_gradient, method, scale_by_lr, stateless


@method("{name}", params={{"lr": Param("float", low=0.0, low_open=True, doc="step")}})
def build(*, lr):
    """Sign of the full gradient, a user's method."""
    return descend(chain(full_gradient(), stateless(lambda u, x, c: np.sign(u)), scale_by_lr(lr)))
'''

USER_SPEC = '''plugins = ["{module}.py"]
[experiment]
name = "train_{name}"
replicates = 2
seed = 1
[params]
steps = 60
record_every = 30
[grid]
lr = [0.001, 0.01]
'''


def test_a_users_method_runs_from_a_spec_and_the_cli(tmp_path, monkeypatch, capsys):
    # a plugin file registers a method; the spec names its training experiment; list shows it
    import sys

    from simcomm.cli import main
    from simcomm.optim._registry import METHODS as REG

    module, name = "user_sign_method", "user_sign_gd"
    (tmp_path / f"{module}.py").write_text(USER_METHOD.format(name=name))
    (tmp_path / "sign.toml").write_text(USER_SPEC.format(module=module, name=name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        with pytest.raises(SystemExit) as exc:
            main(["run", "sign.toml", "--jobs", "1", "--out", "out"])
        assert exc.value.code == 0, capsys.readouterr().err
        table = next(Path("out/results/sign").iterdir()) / "table.csv"
        import pandas as pd

        t = pd.read_csv(table)
        final = t[t.metric == "final_f_gap"].groupby("lr").value.mean()
        first = t[(t.metric == "f_gap") & (t.step == 0)].value.mean()
        assert set(final.index) == {0.001, 0.01} and (final < first).all()
        with pytest.raises(SystemExit):
            main(["list", "--methods", "--plugin", f"{module}.py"])
        assert f"{name}: Sign of the full gradient" in capsys.readouterr().out
    finally:
        REG.pop(name, None)
        from simcomm.experiments import EXPERIMENTS

        EXPERIMENTS.pop(f"train_{name}", None)
