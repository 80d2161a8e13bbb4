r"""EquiTopo-style random circulant graphs (Song et al., NeurIPS 2022): D-/U-EquiStatic and one-peer EquiDyn.

The construction, as recalled here (not checked against the paper's text): draw offsets
:math:`u_1, \dots, u_M` independently and uniformly from :math:`\{1, \dots, n-1\}` and let
:math:`P` be the cyclic shift (``(P x)_i = x_{i+1}``):

* ``d_equistatic``: :math:`W = \frac{1}{M+1}\big(I + \sum_m P^{u_m}\big)`, a directed circulant
  (node ``i`` listens to ``i + u_m``), doubly stochastic, normal;
* ``u_equistatic``: its symmetrisation :math:`(W + W^\top)/2` (undirected, ``2M`` peers);
* ``one_peer_equidyn``: one draw per step, :math:`W_t = (I + P^{u_t})/2` with one uniform
  :math:`u_t`: one peer per node and step.

All are circulants (``O(n d M)`` shift mixing, FFT spectra: no ``n x n`` matrix). The tail bound of
:math:`\|W - J\|_2` these satisfy is derived in ``theory/decentralized.py``
(``equistatic_norm``, [N]).
"""

from __future__ import annotations

import math

import numpy as np

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm._validate import generator, one_of
from simcomm.topology._graphs import Topology, _check_n, circulant
from simcomm.topology._registry import topology

__all__ = ["d_equistatic", "u_equistatic", "one_peer_equidyn", "equistatic_offsets", "OFFSET_LAWS"]

#: How the offsets are drawn: uniform over 1..n-1 (EquiTopo), or from a window 1..max(1, M // 4) (the control).
OFFSET_LAWS = ("uniform", "local")
_LAW = Param("str", choices=OFFSET_LAWS, doc="offset law: uniform (EquiTopo) or local")


def _default_M(n: int) -> int:
    return max(1, math.ceil(math.log2(n)))


def equistatic_offsets(n: int, M: int, *, rng, law: str = "uniform") -> np.ndarray:
    """``M`` offsets drawn independently from ``1 .. n - 1`` (``law="uniform"``) or ``1 .. max(1, M // 4)``.

    Examples
    --------
    >>> u = equistatic_offsets(100, 5, rng=0)
    >>> u.shape, bool(u.min() >= 1 and u.max() <= 99)
    ((5,), True)
    """
    one_of(law, OFFSET_LAWS, "offset law")
    rng = generator(rng, "equistatic_offsets")
    high = n - 1 if law == "uniform" else min(n - 1, max(1, M // 4))
    return rng.integers(1, high + 1, size=int(M))


def _check_M(M, n) -> int:
    if isinstance(M, (bool, np.bool_)) or not isinstance(M, (int, np.integer)) or M < 1:
        raise UserError(f"EquiStatic needs M >= 1 offsets (edges per node), got M={M!r}")
    return int(M)


@topology("d_equistatic", params={"M": Param("int", low=1, doc="offsets (out-edges per node); default ceil(log2 n)"),
                                   "rng": None, "law": _LAW},
          symmetric=False, random=True)
def d_equistatic(n: int, M: int | None = None, *, rng, law: str = "uniform") -> Topology:
    r"""D-EquiStatic: :math:`W = (I + \sum_{m=1}^M P^{u_m})/(M+1)`, offsets uniform on ``1..n-1`` (module doc).

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    M : int, optional
        Number of drawn offsets (repeated offsets add their weights); default :math:`\lceil\log_2 n\rceil`.
    rng : numpy.random.Generator or seed
        Required (one draw per call).
    law : {"uniform", "local"}

    Examples
    --------
    >>> from simcomm.topology import rho
    >>> t = d_equistatic(256, 64, rng=0)
    >>> t.stochasticity, t.directed, bool(rho(t) < 0.5)
    ('doubly', True, True)
    """
    n = _check_n(n)
    M = _default_M(n) if M is None else _check_M(M, n)
    u = equistatic_offsets(n, M, rng=rng, law=law)
    offs = np.concatenate([[0], u])[:, None]
    return circulant("d_equistatic", (n,), offs, np.full(M + 1, 1.0 / (M + 1)), "uniform")


@topology("u_equistatic", params={"M": Param("int", low=1, doc="offsets (2M peers per node); default ceil(log2 n)"),
                                   "rng": None, "law": _LAW},
          random=True)
def u_equistatic(n: int, M: int | None = None, *, rng, law: str = "uniform") -> Topology:
    r"""U-EquiStatic: the symmetrised D-EquiStatic, :math:`(W + W^\top)/2` (module doc).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import mixing_matrix
    >>> W = mixing_matrix(u_equistatic(12, 3, rng=1))
    >>> bool(np.array_equal(W, W.T)), round(float(W[0, 0]), 6)
    (True, 0.25)
    """
    n = _check_n(n)
    M = _default_M(n) if M is None else _check_M(M, n)
    u = equistatic_offsets(n, M, rng=rng, law=law)
    offs = np.concatenate([[0], u, -u])[:, None]
    w = np.concatenate([[1.0 / (M + 1)], np.full(2 * M, 0.5 / (M + 1))])
    return circulant("u_equistatic", (n,), offs, w, "uniform")


@topology("one_peer_equidyn", params=("rng",), symmetric=False, random=True)
def one_peer_equidyn(n: int, *, rng) -> Topology:
    r"""One round of one-peer EquiDyn: :math:`W_t = (I + P^{u})/2`, one offset ``u`` uniform on ``1..n-1``.

    A run draws one per step from its stream (as with :func:`~simcomm.topology.random_matching`).

    Examples
    --------
    >>> t = one_peer_equidyn(8, rng=0)
    >>> sorted(t.weights.tolist())
    [0.5, 0.5]
    """
    n = _check_n(n)
    u = equistatic_offsets(n, 1, rng=rng)
    return circulant("one_peer_equidyn", (n,), np.array([[0], [int(u[0])]]), np.array([0.5, 0.5]), "uniform")
