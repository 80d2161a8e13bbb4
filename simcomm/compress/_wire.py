r"""Wire form of a compressed vector: the :class:`Message` a node puts on the wire, field by field.

Every compressor builds its own message (``Compressor.to_message``) and reads one back
(``Compressor.decode``); :mod:`simcomm.network` turns a message into bytes and back
(``network.encode`` / ``network.decode``) without knowing which compressor made it. A message is
one of a few *kinds* of layout:

* ``dense``: the values in float32, float16 or bfloat16 (``value_dtype``);
* ``sparse``: sent values plus their sorted indices;
* ``qsgd``: a float32 norm and signed levels in :math:`\{-s..s\}`;
* ``ternary``: a float32 scale and trits in :math:`\{-1, 0, 1\}`;
* ``sround``: grid indices of the step ``scale``;
* ``coded``: float32 side values (``scales``: a sign's magnitude, the min and max of every bucket, a
  low-rank factor) and unsigned codes of ``width`` bits each (``width = 0``: no codes). Its bits are
  :math:`32\,|\mathrm{scales}| + \mathrm{width}\cdot|\mathrm{levels}|`; only the compressor that made it
  knows what the codes mean, so ``Message.dense`` needs it (``compressor.decode(msg)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcomm._errors import UserError

__all__ = ["Message", "to_bfloat16", "MESSAGE_KINDS"]

#: the message layouts :mod:`simcomm.network` can encode (their order is part of the wire format)
MESSAGE_KINDS = ("dense", "sparse", "qsgd", "ternary", "sround", "coded")


@dataclass(frozen=True, eq=False)
class Message:
    """One node's message in wire form.

    Attributes
    ----------
    kind : {"dense", "sparse", "qsgd", "ternary", "sround", "coded"}
    d : int
        Length of the vector the message stands for.
    value_dtype : str
        Dtype of ``values`` on the wire (``"bfloat16"`` values are held as float32 with zero low bits).
    values : numpy.ndarray or None
        Dense values (``dense``) or the sent values in index order (``sparse``).
    indices : numpy.ndarray of int64 or None
        Sorted sent coordinates (``sparse``).
    levels : numpy.ndarray of int64 or None
        Signed levels (``qsgd``, ``ternary``: in {-1, 0, 1}), grid indices (``sround``) or unsigned codes
        below ``2**width`` (``coded``).
    scale : float
        The float32 norm (``qsgd``), scale (``ternary``), or the grid step delta (``sround``).
    s : int
        QSGD levels (0 otherwise).
    scales : numpy.ndarray of float32 or None
        Side values of a ``coded`` message.
    width : int
        Bits per code of a ``coded`` message (0 otherwise).
    """

    kind: str
    d: int
    value_dtype: str = "float32"
    values: np.ndarray | None = None
    indices: np.ndarray | None = None
    levels: np.ndarray | None = None
    scale: float = 0.0
    s: int = 0
    scales: np.ndarray | None = None
    width: int = 0

    def __post_init__(self):  # noqa: D105
        if self.kind not in MESSAGE_KINDS:
            raise UserError(f"unknown message kind '{self.kind}'; use one of {', '.join(MESSAGE_KINDS)}")

    @property
    def count(self) -> int:
        """Entries on the wire: values (dense/sparse) or levels (codes)."""
        arr = self.values if self.kind in ("dense", "sparse") else self.levels
        return int(arr.size)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        if (self.kind, self.d, self.value_dtype, self.s, self.width) != (
                other.kind, other.d, other.value_dtype, other.s, other.width):
            return False
        if not (self.scale == other.scale or (math.isnan(self.scale) and math.isnan(other.scale))):
            return False
        for a, b in ((self.values, other.values), (self.indices, other.indices), (self.levels, other.levels),
                     (self.scales, other.scales)):
            if (a is None) != (b is None):
                return False
            if a is not None and (a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")):
                return False
        return True

    __hash__ = None

    def dense(self) -> np.ndarray:
        """The vector the message stands for (float64, length ``d``); a ``coded`` message needs its compressor."""
        if self.kind == "dense":
            return self.values.astype(np.float64)
        if self.kind == "coded":
            raise UserError("a coded message means what its compressor says: use compressor.decode(msg)")
        out = np.zeros(self.d)
        if self.kind == "sparse":
            out[self.indices] = self.values
        elif self.kind == "qsgd":
            out[:] = self.scale * self.levels / self.s
        elif self.kind == "ternary":
            out[:] = self.scale * self.levels
        else:
            out[:] = self.levels * self.scale
        return out


def to_bfloat16(x) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even); returned as float32 with zero low bits.

    Finite values beyond the largest bfloat16 (about 3.39e38) round to inf, as the hardware does.

    Examples
    --------
    >>> to_bfloat16([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8]).tolist()
    [1.0, 1.0, 1.015625]
    """
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return r.view(np.float32)
