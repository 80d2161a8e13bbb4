r"""Reference values for error-feedback SGD and real-gradient claims (rTop-k paper, rtopk.md (d)-(f)).

Provenance tags (papers/rtopk.md section 0): [S] a secondary summary, [N] derived here, NOT the
paper's theorem. Pure functions of scalars; nothing here imports simcomm.
"""

from __future__ import annotations

from theory._bound import bound

__all__ = ["top1_share_multiple_lower", "fitted_model_error"]

PAPER = "rtopk"


@bound(kind="lower", provenance="N", paper=PAPER, constant=True,
       statement="the top 1% of a real gradient's coordinates carries more than 10 times its uniform share "
                 "(1%) of the squared norm")
def top1_share_multiple_lower() -> float:
    r"""Threshold for "skewed": the top-1% share of :math:`\|g\|^2` is at least 10 times 1%.

    **Statement** (lower; provenance [N]): :math:`S_{0.01}/0.01 \ge 10`, with :math:`S_f` the share of
    the squared norm in the :math:`\lceil f D\rceil` largest coordinates. The paper's premise that
    gradients are sparse and skewed is [P] (abstract); the factor 10 is this project's operational
    threshold, not a number from the paper. The value IS the statement (a threshold), so it is a
    constant; the claim can still fail: i.i.d. normal vectors of the same dimension give about 8.5
    (the spec's control).

    Examples
    --------
    >>> top1_share_multiple_lower()
    10.0
    """
    return 10.0


@bound(kind="equal", provenance="N", paper=PAPER,
       statement="the sparse skewed model fitted to real gradients reproduces the error ||g - C(g)||^2/||g||^2 "
                 "of top-k and of rTop-k with small r/k measured on the real gradients")
def fitted_model_error(real_err: float) -> float:
    r"""Predicted error of an operator on the fitted model: its measured error on the real gradients.

    **Statement** (equal; provenance [N]): this project's test of the fit, not a claim of the paper.
    For an unscaled operator :math:`C`, the mean of :math:`\|g - C(g)\|^2/\|g\|^2` over vectors drawn
    from the sparse skewed model fitted to captured gradients equals the mean over the real gradients
    (``real_err``, a measured statistic of the same replicate); the margin is stated in the spec.
    Informative only where the error is not confined by the operator itself: rtopk.md B2 [N] puts
    E err(rTop-k) in :math:`[1 - k/r, 1 - k/D]` for EVERY vector and E err(rand-k) at
    :math:`1 - k/D`, so rand-k and rTop-k with large r/k agree for any model; top-k (error in
    :math:`[0, 1 - k/D]`) and rTop-k with small r/k carry the test.

    Parameters
    ----------
    real_err : float
        Mean relative error of the operator on the real gradients.

    Examples
    --------
    >>> fitted_model_error(0.42)
    0.42
    """
    return float(real_err)
