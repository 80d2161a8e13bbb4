"""What the convolutional-net experiments share: the image task of a spec (real images and a network).

A spec of a convolutional-net claim names a data set and a network; :func:`image_task` turns those
parameters (:data:`IMAGE_PARAMS`) into a :class:`simcomm.models.Dataset` and a fresh
:class:`simcomm.models.TorchModel`, both drawn from the replicate's ``rng``. The experiments themselves
take any ``TorchModel`` and ``Dataset``, so a user's own ``nn.Module`` and images run through the same
code from Python (``docs/torch_models.md``).

PyTorch is an extra: :data:`REQUIRES` is what a spec of these experiments declares, and ``simcomm check``
lists such claims as needing it, in one line, where torch is not installed.
"""

from __future__ import annotations

import numpy as np

from simcomm.experiments._registry import Param
from simcomm.models import Dataset, lenet5, load_dataset, small_resnet

__all__ = ["IMAGE_PARAMS", "MODELS", "REQUIRES", "image_task", "subsample"]

#: the networks a spec can name (each maps flat 28x28 rows to logits)
MODELS = {"lenet5": lenet5, "small_resnet": small_resnet}
#: what a spec of a convolutional-net experiment declares it needs
REQUIRES = ("torch",)

IMAGE_PARAMS = {
    "dataset": Param("str", default="fashion_mnist", choices=("fashion_mnist", "mnist_full"),
                     doc="real images: Fashion-MNIST (60,000 / 10,000) or full MNIST (50,000 / 10,000 test)"),
    "model": Param("str", default="lenet5", choices=tuple(MODELS),
                   doc="network: LeNet-5 (61,706 parameters) or a ResNet-14 with GroupNorm (174,970)"),
    "n_train": Param("int", default=0, low=0,
                     doc="training images drawn at random without replacement (0: all of them)"),
    "n_test": Param("int", default=0, low=0,
                    doc="test images drawn at random without replacement (0: the whole published test set)"),
}


def subsample(ds: Dataset, n_train: int, n_test: int, rng) -> Dataset:
    """``ds`` with ``n_train`` training and ``n_test`` test rows drawn at random (0 keeps a part whole)."""
    rng = np.random.default_rng(rng)
    tr = np.sort(rng.choice(ds.y_train.size, n_train, replace=False)) if 0 < n_train < ds.y_train.size else None
    te = np.sort(rng.choice(ds.y_test.size, n_test, replace=False)) if 0 < n_test < ds.y_test.size else None
    return ds._replace(
        X_train=ds.X_train if tr is None else ds.X_train[tr], y_train=ds.y_train if tr is None else ds.y_train[tr],
        X_test=ds.X_test if te is None else ds.X_test[te], y_test=ds.y_test if te is None else ds.y_test[te])


def image_task(params, rng, *, device=None):
    """The spec's data set (its published split, subsampled as asked) and a fresh network, from ``rng``.

    Returns ``(dataset, model)``: a :class:`~simcomm.models.Dataset` (float32 rows, globally
    standardised pixels) and a :class:`~simcomm.models.TorchModel` with PyTorch's default initialisation
    drawn from ``rng``. The data set's split is drawn from a stream of its own, so two replicates differ
    in their subsample, weights and everything after.
    """
    data_rng, model_rng = np.random.default_rng(rng).spawn(2)
    ds = subsample(load_dataset(params["dataset"]), params["n_train"], params["n_test"], data_rng)
    return ds, MODELS[params["model"]](n_classes=ds.n_classes, rng=model_rng, device=device)
