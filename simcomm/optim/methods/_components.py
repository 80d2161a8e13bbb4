"""Settings that name components: a compressor label or object, an error-feedback name or variant."""

from __future__ import annotations

from simcomm._errors import UserError
from simcomm._params import Param
from simcomm.compress import AGGREGATORS, FEEDBACKS, Compressor, compressor_from_label, feedback_from_name

__all__ = ["as_compressor", "as_feedback", "COMPRESSOR", "LR", "FEEDBACK", "AGGREGATE"]

#: the shared declarations of the settings most methods take
COMPRESSOR = Param("str", default="none", doc="compressor label, e.g. 'qsgd(s=4)' or 'top_k(k=10)'")
LR = Param("float", low=0.0, low_open=True, doc="step size")
FEEDBACK = Param("str", default="none", choices=("none", *FEEDBACKS), doc="error feedback around the compressor")
AGGREGATE = Param("str", default="mean", choices=tuple(AGGREGATORS), doc="how the server combines the workers")


def as_compressor(value, what: str = "compressor") -> Compressor:
    """A :class:`~simcomm.compress.Compressor` from a label (``"qsgd(s=4)"``) or the object itself."""
    if isinstance(value, str):
        return compressor_from_label(value)
    if not isinstance(value, Compressor):
        raise UserError(f"{what} = {value!r} is not a simcomm.compress.Compressor; pass e.g. QSGD(s) or "
                        "Identity(), or a label such as 'qsgd(s=4)'")
    return value


def as_feedback(value, compressor: Compressor):
    """``None`` (no feedback), or the variant named ``value`` around ``compressor``, or ``value`` itself."""
    if value is None or value == "none":
        return None
    return feedback_from_name(value, compressor) if isinstance(value, str) else value
