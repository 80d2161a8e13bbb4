r"""How the server combines the workers' messages: the mean, or the majority vote of signs (signSGD).

An aggregator is a small frozen class registered by name in :data:`AGGREGATORS`; ``aggregate(M)``
combines the messages ``M[..., i, :]`` of the ``n`` workers (the node axis is ``-2``) into the direction the
server applies and broadcasts. :func:`simcomm.optim.compressed_gd` takes any of them (``aggregate=``).

* ``mean``: :math:`\frac1n\sum_i m_i` (32-bit floats back to the workers);
* ``majority_vote`` (signSGD with majority vote, Bernstein, Wang, Azizzadenesheli, Anandkumar 2018,
  Algorithm 3 [R]): :math:`\mathrm{sgn}(\sum_i \mathrm{sgn}(m_i))`, one bit per coordinate back to the workers.
  Ties (an even ``n`` split evenly) go to :math:`+1`, the convention of :class:`~simcomm.compress.Sign`
  (:math:`\mathrm{sgn}(0) = +1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = ["AGGREGATORS", "Mean", "MajorityVote", "majority_vote", "aggregator_from_name"]

#: name -> aggregator class
AGGREGATORS: dict[str, type] = {}


def _register(name):
    def deco(cls):
        cls.name = name
        AGGREGATORS[name] = cls
        return cls

    return deco


def majority_vote(messages, axis: int = -2) -> np.ndarray:
    r"""Coordinate-wise majority of the signs along ``axis``: :math:`\mathrm{sgn}(\sum_i \mathrm{sgn}(m_i))`, ties +1.

    Examples
    --------
    >>> majority_vote([[1.0, -2.0, 0.5], [-3.0, -1.0, 2.0], [2.0, 4.0, -1.0]], axis=0).tolist()
    [1.0, -1.0, 1.0]
    """
    m = np.asarray(messages)
    votes = np.where(m >= 0, 1, -1).sum(axis=axis)  # sgn(0) = +1, as Sign
    return np.where(votes >= 0, 1.0, -1.0)


@_register("mean")
@dataclass(frozen=True)
class Mean:
    """The average of the messages (the parameter server's default)."""

    name: ClassVar[str] = "mean"

    def aggregate(self, messages, axis: int = -2) -> np.ndarray:
        """Mean along the node axis."""
        return np.asarray(messages).mean(axis=axis)

    def bits_down(self, d: int) -> int:
        """Bits of the broadcast direction: ``32 d``."""
        return 32 * d


@_register("majority_vote")
@dataclass(frozen=True)
class MajorityVote:
    """The majority vote of the messages' signs (:func:`majority_vote`); one bit a coordinate downlink."""

    name: ClassVar[str] = "majority_vote"

    def aggregate(self, messages, axis: int = -2) -> np.ndarray:
        """:func:`majority_vote` along the node axis."""
        return majority_vote(messages, axis=axis)

    def bits_down(self, d: int) -> int:
        """Bits of the broadcast direction: ``d``."""
        return d


def aggregator_from_name(name):
    """The aggregator ``name`` (a key of :data:`AGGREGATORS`), or ``name`` itself if it is one already."""
    from simcomm._errors import UserError, closest

    if not isinstance(name, str):
        if hasattr(name, "aggregate"):
            return name
        raise UserError(f"aggregate = {name!r} is not an aggregator; use one of {', '.join(AGGREGATORS)}")
    if name not in AGGREGATORS:
        raise UserError(f"unknown aggregator '{name}'{closest(name, AGGREGATORS)}; use one of {', '.join(AGGREGATORS)}")
    return AGGREGATORS[name]()
