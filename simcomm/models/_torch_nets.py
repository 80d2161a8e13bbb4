r"""Two convolutional classifiers for 28x28 images, as :class:`~simcomm.models.TorchModel` s.

* :func:`lenet5`: LeNet-5 (LeCun et al. 1998) with ReLU and max-pooling: conv 5x5 (6, padded), pool,
  conv 5x5 (16), pool, 400 -> 120 -> 84 -> classes; 61,706 parameters for one channel and 10 classes.
* :func:`small_resnet`: a ResNet (He et al. 2016) of basic blocks, 3 stages of widths
  ``(16, 32, 64)``, ``blocks`` per stage, stride 2 between stages, global average pooling, with
  GroupNorm in place of BatchNorm (BatchNorm mixes the examples of a batch, so per-example and
  per-worker gradients would not be defined); 174,970 parameters with 2 blocks per stage.

Both take flat rows ``(B, 784)`` (what :func:`simcomm.models.load_dataset` returns) or images
``(B, C, 28, 28)``. Their initial weights are PyTorch's default initialisation drawn from ``rng``
(torch's global generator is left as it was).
"""

from __future__ import annotations

import numpy as np

from simcomm._errors import UserError
from simcomm.models._torch_nn import TorchModel, import_torch

__all__ = ["lenet5", "small_resnet"]


def _seeded(build, rng):
    """``build(torch)`` with torch's generator seeded from ``rng``, restored afterwards."""
    torch = import_torch()
    seed = int(np.random.default_rng(rng).integers(2**62))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build(torch)


def _images(torch, channels, side):
    class Images(torch.nn.Module):
        """Flat rows ``(B, C * side * side)`` or images to images ``(B, C, side, side)``."""

        def forward(self, x):
            return x.reshape(x.shape[0], channels, side, side)

    return Images()


def _check(channels, n_classes, side):
    for name, v, low in (("channels", channels, 1), ("n_classes", n_classes, 2), ("side", side, 8)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise UserError(f"{name} = {v!r} must be an integer >= {low}")


def lenet5(*, channels: int = 1, n_classes: int = 10, side: int = 28, rng=None, device=None) -> TorchModel:
    """LeNet-5 (ReLU, max-pooling) for ``side x side`` images with ``channels`` channels.

    Parameters
    ----------
    channels : int, default 1
    n_classes : int, default 10
    side : int, default 28
        Image height and width (the first convolution is padded: 28 gives LeNet-5's 400 features).
    rng : numpy.random.Generator or seed, optional
        Drives the initial weights.
    device : str, optional
        Where the network runs (``"cuda"`` for a GPU).

    Returns
    -------
    TorchModel

    Examples
    --------
    >>> lenet5(rng=0).n_params
    61706
    """
    _check(channels, n_classes, side)
    flat = 16 * (((side // 2) - 4) // 2) ** 2

    def build(torch):
        nn = torch.nn
        return nn.Sequential(
            _images(torch, channels, side),
            nn.Conv2d(channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, n_classes))

    return TorchModel(_seeded(build, rng), device=device)


def small_resnet(*, blocks: int = 2, widths=(16, 32, 64), channels: int = 1, n_classes: int = 10, side: int = 28,
                 groups: int = 8, rng=None, device=None) -> TorchModel:
    """A small ResNet of basic blocks with GroupNorm, for ``side x side`` images.

    Parameters
    ----------
    blocks : int, default 2
        Basic blocks per stage (2: a ResNet-14).
    widths : sequence of int, default (16, 32, 64)
        Channels of the stages (stride 2 between them), each divisible by ``groups``.
    channels, n_classes, side : int
        Input channels, classes, image side.
    groups : int, default 8
        GroupNorm groups.
    rng : numpy.random.Generator or seed, optional
        Drives the initial weights.
    device : str, optional

    Returns
    -------
    TorchModel

    Examples
    --------
    >>> small_resnet(rng=0).n_params
    174970
    """
    _check(channels, n_classes, side)
    widths = tuple(int(w) for w in widths)
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1:
        raise UserError(f"blocks = {blocks!r} must be a positive integer")
    if not widths or any(w < groups or w % groups for w in widths):
        raise UserError(f"widths = {widths} must be positive multiples of groups = {groups}")

    def build(torch):
        nn = torch.nn

        class Block(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.norm1 = nn.GroupNorm(groups, cout)
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.norm2 = nn.GroupNorm(groups, cout)
                self.short = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(groups, cout))

            def forward(self, x):
                h = torch.relu(self.norm1(self.conv1(x)))
                return torch.relu(self.norm2(self.conv2(h)) + self.short(x))

        layers = [_images(torch, channels, side), nn.Conv2d(channels, widths[0], 3, 1, 1, bias=False),
                  nn.GroupNorm(groups, widths[0]), nn.ReLU()]
        cin = widths[0]
        for i, w in enumerate(widths):
            for b in range(blocks):
                layers.append(Block(cin, w, 2 if (i > 0 and b == 0) else 1))
                cin = w
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, n_classes)]
        return nn.Sequential(*layers)

    return TorchModel(_seeded(build, rng), device=device)
