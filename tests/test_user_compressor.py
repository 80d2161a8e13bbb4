"""A user's own compressor with only ``apply`` (the README's protocol: ``apply``, optionally ``bits``, ``beta``,
``unbiased``) instantiates and runs in the optimisers, ``simcomm payload`` and ``simcomm conform``.

Its default wire form is dense: ``C(x)`` as ``d`` float32 values, ``32 d`` bits.
"""

import json
import textwrap

import numpy as np
import pytest

from simcomm.compress import Compressor

USER_MODULE = textwrap.dedent('''
    from dataclasses import dataclass

    import numpy as np

    from simcomm.compress import Compressor


    @dataclass(frozen=True)
    class Threshold(Compressor):
        """Keeps the entries of magnitude at least tau times the row's largest: apply only."""

        tau: float = 0.5

        def apply(self, x, *, rng, backend=None):
            x = np.asarray(x, dtype=np.float64)
            big = np.abs(x).max(axis=-1, keepdims=True)
            return np.where(np.abs(x) >= self.tau * big, x, 0.0)


    class CoinFlip(Compressor):
        """The README's protocol: apply, bits, beta and unbiased (no dataclass, no wire form)."""

        unbiased = True

        def apply(self, x, *, rng, backend=None):
            x = np.asarray(x, dtype=np.float64)
            keep = np.random.default_rng(rng).random(x.shape) < 0.5
            return np.where(keep, 2.0 * x, 0.0)

        def bits(self, d):
            return 33 * d // 2   # what it reports: half the values and a bitmap

        def beta(self, d):
            return 1.0           # E||C(x) - x||^2 = ||x||^2 exactly


    threshold = Threshold(0.3)
    coin = CoinFlip()
''')


@pytest.fixture
def user(tmp_path, monkeypatch):
    (tmp_path / "usercomp.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import importlib

    import usercomp

    yield importlib.reload(usercomp)


def test_instantiates_with_apply_only_and_sends_dense(user):
    c, coin = user.Threshold(0.5), user.CoinFlip()
    x = np.array([1.0, -0.1, 2.0, 0.4])
    assert c.apply(x, rng=0).tolist() == [1.0, 0.0, 2.0, 0.0]
    assert c.bits(4) == 128 and c.label == "Threshold(tau=0.5)" and coin.label == "CoinFlip"
    assert not c.unbiased and c.beta(4) is None and c.error_factor(4) is None
    m = c.to_message(x, rng=0)
    assert m.kind == "dense" and m.values.dtype == np.float32 and c.decode(m).tolist() == [1.0, 0.0, 2.0, 0.0]
    # a randomised one: the message carries the draws apply makes on the same generator state (float32 values)
    want = coin.apply(x, rng=5)
    assert np.array_equal(coin.decode(coin.to_message(x, rng=5)), want.astype(np.float32).astype(np.float64))
    assert coin.bits(4) == 66 and coin.alpha(4) == 2.0 and coin.error_factor(4) == 1.0
    with pytest.raises(Exception, match="d = 0"):
        c.bits(0)


def test_wrong_shape_from_apply_is_one_line(user):
    from simcomm._errors import UserError

    class Short(Compressor):
        def apply(self, x, *, rng, backend=None):
            return np.asarray(x)[:-1]

    with pytest.raises(UserError, match=r"Short.apply returned shape \(3,\) for a vector of shape \(4,\)"):
        Short().to_message(np.ones(4))


def test_runs_in_compressed_gd_ef_sgd_and_choco(user):
    import simcomm
    from simcomm._errors import UserError

    p = simcomm.models.quadratic(4, 20, L=1.0, mu=0.2, sigma2=1.0, rng=0)
    for c in (user.threshold, user.coin):
        tr = simcomm.optim.compressed_gd(p, c, lr=0.2, steps=100, rng=0)
        assert tr.f_gap[0, -1] < 0.2 * tr.f_gap[0, 0]  # descends (a biased one without feedback plateaus)
    tr = simcomm.optim.compressed_gd(p, user.threshold, lr=0.2, steps=200, rng=0, feedback="ef")
    assert tr.f_gap[0, -1] < 1e-3 * tr.f_gap[0, 0]

    ds = simcomm.models.load_dataset("digits", rng=0)
    model = simcomm.models.logistic_regression(64, 10)
    for c in (user.threshold, user.coin):
        ef = simcomm.optim.ef_sgd(model, ds.X_train, ds.y_train, n=4, steps=20, lr=0.5, compressor=c, rng=1)
        assert ef.train_loss[-1] < ef.train_loss[0]
        assert int(ef.bits[-1]) == 20 * c.bits(650)  # the bits it reports (dense default: 32 a value)

    prob = simcomm.models.heterogeneous_least_squares(8, 4, b=0.0, rng=0)
    tr = simcomm.optim.run_choco_sgd(prob, "ring", user.coin, steps=1500, lr=0.2 / prob.L, gamma=0.3)
    assert tr.node_dist_sq[-1] < 1e-8 * tr.node_dist_sq[0]
    # CHOCO needs a stated constant; one that states none is refused in one line
    with pytest.raises(UserError, match="CHOCO needs a delta-contraction"):
        simcomm.optim.run_choco_sgd(prob, "ring", user.threshold, steps=10, lr=0.1, gamma=0.3)


def test_payload_cli_takes_an_instance_or_a_class(user, capsys):
    from simcomm.cli import main

    def run(*args):
        with pytest.raises(SystemExit) as exc:
            main(["payload", *args])
        out = capsys.readouterr()
        return exc.value.code, out.out, out.err

    code, out, err = run("usercomp:threshold", "-d", "100", "--json")
    info = json.loads(out)
    assert code == 0 and info["roundtrip"] is True and info["bits"] == info["declared_bits"] == 3200
    code, out, _ = run("usercomp:coin", "-d", "100", "--json")
    info = json.loads(out)
    assert code == 0 and info["bits"] == 3200 and info["declared_bits"] == 1650  # reported vs sent
    code, out, _ = run("usercomp:Threshold", "-d", "10", "--json")
    assert code == 0 and json.loads(out)["count"] == 10
    for args, msg in ((("usercomp:Threshold", "-d", "10", "--k", "3"), "--k does not apply to Threshold"),
                      (("usercomp:threshold", "-d", "10", "--k", "3"), "--k does not apply: usercomp:threshold is "
                                                                        "an instance"),
                      (("qsgd", "-d", "100", "--s", "4", "--k", "5"), "--k does not apply to qsgd"),
                      (("usercomp:np", "-d", "10"), "not a simcomm Compressor")):
        code, _, err = run(*args)
        assert code == 2 and msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_conform_takes_it(user, capsys):
    from simcomm.cli import main
    from simcomm.conform import conform

    r = conform(user.threshold, "compressor")
    assert r.verdicts() == {"determinism": "holds", "rng_use": "skipped", "unbiased": "skipped",
                            "contraction": "skipped", "variance_formula": "skipped", "payload": "holds",
                            "roundtrip": "holds"}, r.text()
    # deterministic, on the base class's default False: told, not failed
    assert "declare deterministic = True" in {x.check: x for x in r.results}["rng_use"].reason
    r = conform(user.coin, "compressor")
    v = r.verdicts()
    assert v["unbiased"] == "holds" and v["variance"] == "holds" and v["roundtrip"] == "holds", r.text()
    # its bits are what it reports, not what the default dense wire form sends: not judged against the payload
    assert v["payload"] == "skipped" and "default dense wire form" in {x.check: x for x in r.results}["payload"].reason
    with pytest.raises(SystemExit) as exc:
        main(["conform", "usercomp:coin", "--kind", "compressor", "--max-draws", "2000"])
    assert exc.value.code == 0, capsys.readouterr()
