r"""Closed forms and constants of the compressors issue 27 adds (sign, casts, 8-bit, natural compression).

Pure functions of scalars (math only). Provenance tags:

* [N] derived here (the derivation is in each docstring) and checked numerically, not quoted from a paper.

The claims are filed under the paper key ``urq`` (unbiased random quantizers and their relatives):
the spec format has no key for compressor identities yet.
"""

from __future__ import annotations

import math

from theory._bound import bound

__all__ = [
    "scaled_sign_l1_error",
    "scaled_sign_l2_error",
    "contraction_limit",
    "non_contraction_limit",
    "fp16_sum_overflows",
    "FP16_MAX",
    "natural_variance_bound",
    "bias_zero",
]

PAPER = "urq"
#: the largest finite IEEE half-precision value, (2 - 2^-10) 2^15
FP16_MAX = 65504.0


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="scaled sign with a = ||v||_1/d: ||C(v) - v||^2 = ||v||^2 - ||v||_1^2/d exactly")
def scaled_sign_l1_error(norm2: float, norm1: float, d: int) -> float:
    r"""Error of the EF-signSGD scaled sign, :math:`\|v\|^2 - \|v\|_1^2/d` [N].

    :math:`\|a\,\mathrm{sgn}(v) - v\|^2 = \|v\|^2 - 2a\|v\|_1 + a^2 d` (since
    :math:`\langle \mathrm{sgn}(v), v\rangle = \|v\|_1`), and :math:`a = \|v\|_1/d` gives the form.

    Examples
    --------
    >>> scaled_sign_l1_error(1.0, 1.0, 4)    # a 1-sparse unit vector: 1 - 1/d
    0.75
    """
    return norm2 - norm1 * norm1 / d


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="scaled sign with a = ||v||/sqrt(d): ||C(v) - v||^2 = 2 ||v||^2 (1 - ||v||_1/(sqrt(d) ||v||))")
def scaled_sign_l2_error(norm2: float, norm1: float, d: int) -> float:
    r"""Error of the 1-bit-Adam-scaled sign, :math:`2\|v\|^2 - 2\|v\|\,\|v\|_1/\sqrt d` [N].

    Examples
    --------
    >>> round(scaled_sign_l2_error(1.0, 1.0, 1000), 4)   # 1-sparse at d = 1000: 1.94 ||v||^2
    1.9368
    """
    return 2.0 * norm2 - 2.0 * math.sqrt(norm2) * norm1 / math.sqrt(d)


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="a contraction: ||C(v) - v||^2 <= ||v||^2 (the squared norm of v itself)")
def contraction_limit(norm2: float) -> float:
    r"""The contraction limit :math:`\|v\|^2`: a compressor with :math:`\|C(v)-v\|^2 > \|v\|^2` is not one [N].

    Examples
    --------
    >>> contraction_limit(2.5)
    2.5
    """
    return norm2


@bound(kind="lower", provenance="N", paper=PAPER,
       statement="not a contraction: ||C(v) - v||^2 >= ||v||^2 (the squared norm of v itself)")
def non_contraction_limit(norm2: float) -> float:
    r"""The same limit :math:`\|v\|^2`, as the lower bound a compressor that is not a contraction exceeds [N].

    Examples
    --------
    >>> non_contraction_limit(2.5)
    2.5
    """
    return norm2


@bound(kind="equal", provenance="N", paper="net",
       statement="summing n float16 gradients of scale s before dividing by n overflows iff n s > 65504")
def fp16_sum_overflows(n: int, s: float, limit: float = FP16_MAX) -> float:
    r"""1.0 if :math:`n s >` ``limit`` (65504: the sum of ``n`` values ``s`` leaves float16's range), else 0.0 [N].

    The exact threshold of round-to-nearest is 65520 (halfway to the next binade's first value
    :math:`2^{16}`); cells are kept away from both (ratios 0.9 and 1.1), where the two agree.

    Examples
    --------
    >>> fp16_sum_overflows(64, 1100.0), fp16_sum_overflows(64, 900.0)
    (1.0, 0.0)
    """
    return 1.0 if n * s > limit else 0.0


@bound(kind="upper", provenance="N", paper=PAPER,
       statement="natural compression: E||C(v) - v||^2 <= ||v||^2/8 (beta = 1/8)")
def natural_variance_bound(norm2: float) -> float:
    r""":math:`\|v\|^2/8` [N].

    Per coordinate :math:`(2^{e+1} - t)(t - 2^e) \le t^2/8`, with equality at :math:`t = \tfrac43 2^e`.

    Examples
    --------
    >>> natural_variance_bound(8.0)
    1.0
    """
    return norm2 / 8.0


@bound(kind="equal", provenance="N", paper=PAPER, constant=True,
       statement="an unbiased compressor: E C(v) - v = 0 along every direction")
def bias_zero() -> float:
    """The bias of an unbiased compressor, 0 [N].

    Examples
    --------
    >>> bias_zero()
    0.0
    """
    return 0.0
