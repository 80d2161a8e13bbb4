r"""What a user's compressor, error-feedback step, hook or outer step declares, as bounds ``simcomm conform`` judges.

These are not a paper's theorems: each is the *definition* a user's code declares it satisfies (an
unbiased compressor, a variance factor :math:`\beta`, a contraction :math:`\delta`, a bit count) or an
elementary fact of floating point and optimisation. Provenance [N]: stated here, checked numerically
against the library's own compressors in ``tests/test_conform.py``. Pure functions of scalars; nothing
here imports simcomm (``simcomm.conform`` names them by string).
"""

from __future__ import annotations

from theory._bound import bound

__all__ = ["unbiased_coordinate", "declared_variance", "declared_contraction", "closed_form_variance", "declared_bits",
           "zero_defect", "descent_lower"]

PAPER = "conform"


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="an unbiased compressor: E C(x)_j = x_j for every coordinate j of every x")
def unbiased_coordinate(x: float) -> float:
    r"""Mean of coordinate ``j`` of an unbiased compressor's output: :math:`\mathbb{E}\,C(x)_j = x_j`.

    **Statement** (equal; provenance [N], the definition of unbiasedness): the value is the input
    coordinate itself.

    Parameters
    ----------
    x : float
        The coordinate :math:`x_j` of the test vector.

    Examples
    --------
    >>> unbiased_coordinate(-1.5)
    -1.5
    """
    return x


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="declared variance factor: E||C(x) - x||^2 <= beta ||x||^2 for an unbiased compressor")
def declared_variance(beta: float, norm2: float) -> float:
    r"""Declared variance bound of an unbiased compressor, :math:`\beta\|x\|^2`.

    **Statement** (upper; provenance [N], the definition of a :math:`\beta`-bounded unbiased
    compressor, e.g. :math:`\beta = d/k - 1` for scaled rand-k):
    :math:`\mathbb{E}\|C(x) - x\|^2 \le \beta\|x\|^2`.

    Parameters
    ----------
    beta : float
        The declared factor.
    norm2 : float
        :math:`\|x\|^2` of the test vector.

    Examples
    --------
    >>> declared_variance(3.0, 2.0)
    6.0
    """
    return beta * norm2


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="declared contraction: E||C(x) - x||^2 <= (1 - delta) ||x||^2 for a biased compressor")
def declared_contraction(delta: float, norm2: float) -> float:
    r"""Declared contraction bound of a biased compressor, :math:`(1 - \delta)\|x\|^2`.

    **Statement** (upper; provenance [N], the definition of a :math:`\delta`-contraction used by error
    feedback, e.g. :math:`\delta = k/d` for top-k): :math:`\mathbb{E}\|C(x) - x\|^2 \le (1-\delta)\|x\|^2`.

    Parameters
    ----------
    delta : float
        The declared contraction, ``0 < delta <= 1``.
    norm2 : float
        :math:`\|x\|^2` of the test vector.

    Examples
    --------
    >>> declared_contraction(0.25, 4.0)
    3.0
    """
    return (1.0 - delta) * norm2


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="declared closed form: E||C(x) - x||^2 = variance(x), the compressor's exact error on x")
def closed_form_variance(variance: float) -> float:
    r"""Exact expected squared error of a compressor on ``x``, the closed form it declares.

    **Statement** (equal; provenance [N], the definition of the declared ``variance(x)``, e.g.
    :math:`(d/k - 1)\|x\|^2` for scaled rand-k): :math:`\mathbb{E}\|C(x) - x\|^2 = ` ``variance(x)``.

    Parameters
    ----------
    variance : float
        The declared value on the test vector.

    Examples
    --------
    >>> closed_form_variance(2.5)
    2.5
    """
    return variance


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="the encoded payload of one message has the declared number of bits (up to byte padding)")
def declared_bits(bits: float) -> float:
    r"""Bits of one encoded message: the count the compressor declares.

    **Statement** (equal; provenance [N]): :math:`8 \times` the payload's bytes equals the declared
    bit count; the claim's margin allows the padding of the last byte.

    Parameters
    ----------
    bits : float
        The declared count for the message's dimension.

    Examples
    --------
    >>> declared_bits(420)
    420
    """
    return bits


@bound(kind="equal", provenance="N", paper=PAPER, constant=True,
       statement="a defect that must vanish: the error-feedback invariant e' = e + g - m, a run equal to its "
                 "checkpointed/rebuilt twin, a low-precision mean equal to its rescaled twin")
def zero_defect() -> float:
    r"""The defect of an identity that must hold exactly (up to the claim's stated rounding): 0.

    **Statement** (equal; provenance [N]): the largest relative difference between two quantities that
    are equal by construction is 0 -- the error-feedback residual :math:`e'` and :math:`e + g - m`
    (every step), a run and the same run checkpointed and restored or with its buckets rebuilt, and
    a low-precision mean of gradients and :math:`2^{s}` times the mean of the gradients scaled by
    :math:`2^{-s}` (scaling by a power of two is exact in floating point unless a value overflows or
    underflows). The value IS the statement, so it is a constant; the claims still fail when the
    defect is not 0 (the fixtures in ``simcomm.conform_fixtures``).

    Examples
    --------
    >>> zero_defect()
    0.0
    """
    return 0.0


@bound(kind="lower", provenance="N", paper=PAPER, constant=True,
       statement="an outer step theta - lr * Delta with the pseudo-gradient Delta = theta - theta_local descends: "
                 "the cosine between Delta and grad f(theta) is positive when local steps descend")
def descent_lower() -> float:
    r"""Lower bound 0 on :math:`\cos(\Delta, \nabla f(\theta))` for a pseudo-gradient of descending local steps.

    **Statement** (lower; provenance [N]): local gradient steps on :math:`f(\theta) = \tfrac12\|A\theta\|^2`
    from :math:`\theta` reach :math:`\theta_{loc}`; the pseudo-gradient :math:`\Delta = \theta - \theta_{loc}`
    (DiLoCo's convention, applied as :math:`\theta \leftarrow \theta - \eta\Delta`) is a positive
    combination of gradients, so its cosine with :math:`\nabla f(\theta)` is positive; a flipped sign
    makes it negative. The value IS the statement (a threshold), so it is a constant.

    Examples
    --------
    >>> descent_lower()
    0.0
    """
    return 0.0
