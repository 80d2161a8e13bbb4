"""Importance sampling on PyTorch networks: the one-pass per-example norms, the experiments, their specs."""

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install torch==2.13.0)")

from simcomm.experiments import get_experiment  # noqa: E402
from simcomm.experiments.cnn_importance import cnn_smoothing_step, cnn_staleness, cnn_training  # noqa: E402
from simcomm.models import Dataset, TorchModel, small_resnet  # noqa: E402
from simcomm.models._idx import _FASHION_SYSTEM  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPECS = ("is_cnn_variance_reduction", "is_cnn_smoothing_step", "extra/is_cnn_training_faster")


def _net(*layers):
    torch.manual_seed(0)
    return TorchModel(torch.nn.Sequential(*layers).double())


def _vmap_norms(model, theta, X, y):
    model.fast_norms = False  # the general path: vmap of per-example gradients
    try:
        return model.per_example_grad_norms(theta, X, y)
    finally:
        model.fast_norms = True


@pytest.mark.parametrize("conv", [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), dilation=2, bias=False),
])
def test_one_pass_norms_equal_the_per_example_gradients_of_a_cnn(rng, conv):
    nn = torch.nn
    torch.manual_seed(0)
    net = torch.nn.Sequential(nn.Unflatten(1, (2, 8, 8)), nn.Conv2d(2, 3, **conv), nn.ReLU(), nn.Flatten(),
                              nn.LazyLinear(4))
    net(torch.zeros(1, 128))  # materialise the lazy layer's shape
    model = TorchModel(net.double())
    assert model.fast_norms
    X, y = rng.standard_normal((11, 128)), rng.integers(0, 4, 11)
    theta = model.params() + 0.1 * rng.standard_normal(model.n_params)
    ref = _vmap_norms(model, theta, X, y)
    # float64, the same products summed in another order: agreement to ~1e-12 of the norms
    np.testing.assert_allclose(model.per_example_grad_norms(theta, X, y), ref, rtol=1e-11)


def test_one_pass_norms_of_a_linear_model_and_the_fallbacks(rng):
    nn = torch.nn
    X, y = rng.standard_normal((7, 5)), rng.integers(0, 3, 7)
    lin = _net(nn.Linear(5, 3))
    np.testing.assert_allclose(lin.per_example_grad_norms(lin.params(), X, y),
                               _vmap_norms(lin, lin.params(), X, y), rtol=1e-12)
    shared = nn.Linear(5, 5)  # one layer run twice: weights shared across calls, the shortcut does not apply
    twice = _net(shared, nn.Tanh(), shared, nn.Linear(5, 3))
    assert twice.fast_norms  # only Linear layers, so it tries, and falls back on seeing the second call
    np.testing.assert_allclose(twice.per_example_grad_norms(twice.params(), X, y),
                               _vmap_norms(twice, twice.params(), X, y), rtol=1e-12)
    assert not small_resnet(blocks=1, widths=(8, 16), groups=4, rng=0).fast_norms  # GroupNorm's parameters


def _tiny_task(rng, n=40):
    X = rng.standard_normal((n, 6)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)
    ds = Dataset(X_train=X, y_train=y, X_test=X[:10], y_test=y[:10], n_classes=3, name="tiny")
    torch.manual_seed(1)
    return ds, TorchModel(torch.nn.Linear(6, 3))


RUN = dict(steps=12, lr=0.1, batch_size=5, n=2, mode="delay", period=4, mean_delay=3.0, smoothing_rel=0.0,
           record_every=4, score_offset=0)


def test_staleness_rows_for_any_torch_model(rng):
    ds, model = _tiny_task(rng)
    rows = cnn_staleness(RUN, ds, model, 0)
    metrics = {r["metric"] for r in rows}
    assert {"stale_over_uniform_max", "stale_over_uniform", "sqrt_trace_cov", "max_weight"} <= metrics
    per = [r for r in rows if r["metric"] == "stale_over_uniform"]
    assert [r["step"] for r in per] == [4, 8, 12]
    top = next(r["value"] for r in rows if r["metric"] == "stale_over_uniform_max")
    assert top == pytest.approx(max(r["value"] for r in per)) and top > 0
    again = cnn_staleness(RUN, ds, model, 0)  # the module is not trained in place: the same run again
    assert [r["value"] for r in again] == [r["value"] for r in rows]


def test_smoothing_step_arms_and_training_methods(rng):
    ds, model = _tiny_task(rng)
    p = {**RUN, "lr_small": 0.05, "lr_large": 0.2, "smoothing_small": 1.0, "smoothing_large": 10.0}
    rows = cnn_smoothing_step(p, ds, model, 1)
    means = {r["arm"]: r["value"] for r in rows if r["metric"] == "stale_over_uniform_mean"}
    assert set(means) == {"small_step_c1", "large_step_c10"} and all(v > 0 for v in means.values())
    rows = cnn_training({**RUN, "reweight": "importance"}, ds, model, 2)
    final = {r["method"]: r["value"] for r in rows if r["metric"] == "final_train_loss"}
    assert set(final) == {"uniform", "stale"} and all(np.isfinite(v) for v in final.values())


def test_experiments_declare_torch_and_validate_their_parameters():
    for name in ("is_cnn_staleness", "is_cnn_smoothing_step", "is_cnn_training"):
        exp = get_experiment(name)
        assert exp.requires == ("torch",)
        assert exp.params["dataset"].default == "fashion_mnist" and exp.params["model"].default == "lenet5"
    exp = get_experiment("is_cnn_smoothing_step")
    with pytest.raises(ValueError, match="lr_small"):
        exp.check({**RUN, "lr_small": 0.3, "lr_large": 0.1})
    assert not get_experiment("is_cnn_training").params["reweight"].keyed_at_default


@pytest.mark.parametrize("name", SPECS)
def test_specs_load_full_and_quick(name):
    from simcomm.spec import load

    for quick in (False, True):
        spec = load(ROOT / "sims" / f"{name}.toml", quick=quick)
        assert spec.claim.paper == "is" and spec.claim.claim_class == "seed"
        assert spec.claim.controls and get_experiment(spec.experiment).requires == ("torch",)
        assert spec.params["dataset"] == "fashion_mnist" and spec.params["model"] == "lenet5"


@pytest.mark.skipif(not Path(_FASHION_SYSTEM).exists(), reason="Fashion-MNIST files are not installed")
def test_lenet_on_fashion_mnist_runs_a_few_steps():
    exp = get_experiment("is_cnn_staleness")
    p = exp.validate(dict(n_train=64, n_test=32, steps=4, batch_size=8, record_every=2, period=2), "test")
    rows = exp.func(p, np.random.default_rng(5), None)
    per = [r["value"] for r in rows if r["metric"] == "stale_over_uniform"]
    assert len(per) == 2 and np.all(np.isfinite(per))
