r"""Error feedback (residual memory) around any compressor, as pure (init, apply) pairs.

:class:`ErrorFeedback` (below), :class:`EF21` (the node keeps the server's estimate of its gradient and
sends the compressed change) and :class:`ErrorFeedbackLR` (the memory rescaled when the step changes).

Algorithm (rtopk.md section (d), the memory update of Stich et al. 2018 / Karimireddy et al. 2019):

.. math::
    p = g + e, \qquad m = C(p), \qquad e' = p - m,

the node sends ``m`` and keeps the residual ``e'`` for the next step. The state is an explicit
:class:`ErrorFeedbackState`; ``apply`` returns a new state and never mutates the old one.
:func:`simcomm.optim.ef_sgd` runs the same update for all workers at once (fused with the optimiser step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError
from simcomm.compress._compressor import Compressor

__all__ = ["ErrorFeedback", "ErrorFeedbackState", "EF21", "EF21State", "ErrorFeedbackLR", "ErrorFeedbackLRState",
           "EF21SGDM", "EF21SGDMState", "DIANA", "DIANAState", "MARINA", "MARINAState", "FEEDBACKS",
           "register_feedback", "feedback_from_name"]

#: the error-feedback registry: name -> (init, apply) class taking a compressor first (filled in definition order)
FEEDBACKS: dict[str, type] = {}


def register_feedback(name: str):
    """Class decorator: register an error-feedback variant under ``name`` (its ``name`` attribute)."""

    def deco(cls):
        if name in FEEDBACKS and FEEDBACKS[name] is not cls:
            raise ValueError(f"feedback name '{name}' is already registered by {FEEDBACKS[name].__name__}")
        cls.name = name
        FEEDBACKS[name] = cls
        return cls

    return deco


def _zeros(x) -> np.ndarray:
    if isinstance(x, (tuple, list, int)):
        return np.zeros(x)
    x = np.asarray(x)
    return np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32))


class ErrorFeedbackState(NamedTuple):
    """Residual memory: what the compressor has not sent yet, one vector per node."""

    residual: np.ndarray


@register_feedback("ef")
@dataclass(frozen=True)
class ErrorFeedback:
    r"""Any :class:`~simcomm.compress.Compressor` with residual memory, as pure functions.

    ``apply(g, state, rng=...)`` computes :math:`p = g + e`, sends :math:`m = C(p)` and keeps
    :math:`e' = p - m`, so :math:`p = m + e'` holds exactly (for an unscaled compressor such as
    :class:`~simcomm.compress.TopK` or :class:`~simcomm.compress.RTopK` every entry of ``p`` ends up
    in exactly one of ``m`` and ``e'``).

    Parameters
    ----------
    compressor : Compressor
        Applied to ``p`` with the ``rng`` given to :meth:`apply` (on the active backend).

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = ErrorFeedback(TopK(1))
    >>> state = ef.init(np.zeros(3))
    >>> msg, state = ef.apply(np.array([1.0, 0.5, 0.25]), state, rng=0)
    >>> msg.tolist(), state.residual.tolist()
    ([1.0, 0.0, 0.0], [0.0, 0.5, 0.25])
    >>> msg, state = ef.apply(np.array([0.0, 0.75, 0.0]), state, rng=0)  # the residual is sent later
    >>> msg.tolist(), state.residual.tolist()
    ([0.0, 1.25, 0.0], [0.0, 0.0, 0.25])
    """

    compressor: Compressor

    def init(self, x) -> ErrorFeedbackState:
        """Zero residual shaped like ``x`` (an array, or a shape)."""
        if isinstance(x, (tuple, list, int)):
            return ErrorFeedbackState(np.zeros(x))
        x = np.asarray(x)
        return ErrorFeedbackState(np.zeros(x.shape, dtype=np.result_type(x.dtype, np.float32)))

    def apply(self, g, state: ErrorFeedbackState, *, rng) -> tuple[np.ndarray, ErrorFeedbackState]:
        """Return ``(message, new_state)`` for the gradient ``g``; ``state`` is not modified."""
        p = np.asarray(g) + state.residual  # add back what was not sent before
        m = self.compressor.apply(p, rng=rng)
        return m, ErrorFeedbackState(p - m)  # residual kept locally for the next step


class EF21State(NamedTuple):
    """EF21 memory: each node's running estimate ``h`` of its gradient (what the server holds for it)."""

    estimate: np.ndarray


@register_feedback("ef21")
@dataclass(frozen=True)
class EF21:
    r"""EF21 (Richtárik, Sokolov, Fatkhullin 2021) around any compressor, as pure functions.

    .. math:: c = C(g - h), \qquad h' = h + c,

    the node sends ``c`` and the server, which holds the same ``h``, uses ``h'`` as the node's gradient.
    ``apply`` returns ``(h', new_state)`` (the direction the server averages); the message is
    ``h' - h``. With a contraction :math:`C`, :math:`\|h' - g\|^2 \le (1-\delta)\|h - g\|^2`.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = EF21(TopK(1))
    >>> h, state = ef.apply(np.array([1.0, 0.5]), ef.init(2), rng=0)
    >>> h.tolist(), ef.apply(np.array([1.0, 0.5]), state, rng=0)[0].tolist()
    ([1.0, 0.0], [1.0, 0.5])
    """

    compressor: Compressor

    def init(self, x) -> EF21State:
        """Zero estimate shaped like ``x`` (an array, or a shape)."""
        return EF21State(ErrorFeedback(self.compressor).init(x).residual)

    def apply(self, g, state: EF21State, *, rng) -> tuple[np.ndarray, EF21State]:
        """Return ``(h', new_state)`` for the gradient ``g``; ``state`` is not modified."""
        c = self.compressor.apply(np.asarray(g) - state.estimate, rng=rng)
        h = state.estimate + c
        return h, EF21State(h)


class ErrorFeedbackLRState(NamedTuple):
    """Residual memory and the step size it was accumulated at."""

    residual: np.ndarray
    lr: float


@register_feedback("ef_lr")
@dataclass(frozen=True)
class ErrorFeedbackLR:
    r"""Error feedback with the learning-rate correction, as pure functions.

    Plain error feedback adds the residual as it is; when the step size changes from
    :math:`\eta_{t-1}` to :math:`\eta_t` the residual is a gradient scaled for the old step, so the
    corrected update rescales it (the memory of :math:`x`-space error feedback, Stich et al. 2018):

    .. math:: p = g + \frac{\eta_{t-1}}{\eta_t} e, \qquad m = C(p), \qquad e' = p - m.

    With a constant step this is :class:`ErrorFeedback` exactly.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> ef = ErrorFeedbackLR(TopK(1))
    >>> m, s = ef.apply(np.array([1.0, 0.5]), ef.init(2), lr=1.0, rng=0)
    >>> m, s = ef.apply(np.array([0.0, 0.0]), s, lr=0.5, rng=0)   # the residual 0.5 counts twice
    >>> m.tolist()
    [0.0, 1.0]
    """

    compressor: Compressor
    #: apply needs the step size (lr=)
    takes_lr = True

    def init(self, x) -> ErrorFeedbackLRState:
        """Zero residual shaped like ``x``; no step seen yet."""
        return ErrorFeedbackLRState(ErrorFeedback(self.compressor).init(x).residual, 0.0)

    def apply(self, g, state: ErrorFeedbackLRState, *, lr: float, rng):
        """Return ``(message, new_state)`` for ``g`` at step size ``lr`` (> 0); ``state`` is not modified."""
        if not (isinstance(lr, (int, float, np.floating)) and math.isfinite(lr) and lr > 0):
            raise UserError(f"ErrorFeedbackLR: lr = {lr!r} must be a finite step size > 0 (the memory is rescaled "
                            "by the ratio of consecutive step sizes)")
        ratio = state.lr / lr if state.lr > 0 else 1.0
        p = np.asarray(g) + ratio * state.residual
        m = self.compressor.apply(p, rng=rng)
        return m, ErrorFeedbackLRState(p - m, float(lr))


class EF21SGDMState(NamedTuple):
    """EF21-SGDM memory: the momentum ``v`` of the node's gradients and the server's estimate ``h`` of it."""

    momentum: np.ndarray
    estimate: np.ndarray
    started: bool


def _check_unit(value, name: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not (0 < value <= 1) or not math.isfinite(value):
        raise UserError(f"{owner}: {name} = {value!r} is not allowed; use a number in (0, 1]")
    return float(value)


@register_feedback("ef21_sgdm")
@dataclass(frozen=True)
class EF21SGDM:
    r"""EF21 with momentum (EF21-SGDM, Fatkhullin, Tyurin, Richtárik 2023, Algorithm 1 [R]), as pure functions.

    .. math:: v' = (1 - \eta) v + \eta g, \qquad c = C(v' - h), \qquad h' = h + c,

    the node sends ``c``; ``apply`` returns ``h'`` (the direction the server averages). The first call
    starts the momentum at the gradient itself (:math:`v' = g`: an average started at zero would be
    biased toward 0). ``momentum = 1`` is :class:`EF21` exactly.

    Examples
    --------
    >>> from simcomm.compress import Identity
    >>> ef = EF21SGDM(Identity(), momentum=0.5)
    >>> h, s = ef.apply(np.array([2.0]), ef.init(1), rng=0)
    >>> h2, s = ef.apply(np.array([0.0]), s, rng=0)      # no compression: h' is the momentum itself
    >>> h.tolist(), h2.tolist()
    ([2.0], [1.0])
    """

    compressor: Compressor
    momentum: float = 0.1

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "momentum", _check_unit(self.momentum, "momentum", "EF21SGDM"))

    def init(self, x) -> EF21SGDMState:
        """Zero momentum and estimate shaped like ``x``; the momentum starts at the first gradient."""
        return EF21SGDMState(_zeros(x), _zeros(x), False)

    def apply(self, g, state: EF21SGDMState, *, rng) -> tuple[np.ndarray, EF21SGDMState]:
        """Return ``(h', new_state)`` for the gradient ``g``; ``state`` is not modified."""
        g = np.asarray(g)
        eta = self.momentum if state.started else 1.0
        v = (1.0 - eta) * state.momentum + eta * g
        c = self.compressor.apply(v - state.estimate, rng=rng)
        h = state.estimate + c
        return h, EF21SGDMState(v, h, True)


class DIANAState(NamedTuple):
    """DIANA memory: the node's shift ``h`` (the server holds the same one)."""

    shift: np.ndarray


@register_feedback("diana")
@dataclass(frozen=True)
class DIANA:
    r"""DIANA (Mishchenko, Gorbunov, Takáč, Richtárik 2019) around an unbiased compressor, as pure functions.

    .. math:: m = C(g - h), \qquad \hat g = h + m, \qquad h' = h + a\,m,

    the node sends ``m``; ``apply`` returns :math:`\hat g` (unbiased: :math:`\mathbb{E}\hat g = g`), the server
    updates the same shift. ``shift_step`` :math:`a` defaults to :math:`1/(1 + \omega)`, :math:`\omega` =
    ``compressor.beta(d)`` (the paper's choice); ``shift_step = 0`` is plain compressed GD.

    Examples
    --------
    >>> from simcomm.compress import Identity, QSGD
    >>> ef = DIANA(Identity())
    >>> g, s = ef.apply(np.array([1.0, -2.0]), ef.init(2), rng=0)
    >>> g.tolist(), s.shift.tolist()
    ([1.0, -2.0], [1.0, -2.0])
    >>> DIANA(QSGD(4)).step_for(100)          # 1/(1 + min(100/16, 10/4))
    0.2857142857142857
    """

    compressor: Compressor
    shift_step: float | None = None

    def __post_init__(self):  # noqa: D105
        a = self.shift_step
        if a is not None and (isinstance(a, bool) or not isinstance(a, (int, float, np.floating, np.integer))
                              or not 0 <= a <= 1):
            raise UserError(f"DIANA: shift_step = {a!r} is not allowed; use a number in [0, 1] "
                            "(or None: 1/(1 + omega))")

    def step_for(self, d: int) -> float:
        r"""The shift step at dimension ``d``: ``shift_step``, or :math:`1/(1+\omega)` from the compressor."""
        if self.shift_step is not None:
            return float(self.shift_step)
        w = self.compressor.beta(d) if self.compressor.unbiased else None
        if w is None or not math.isfinite(w):
            raise UserError(f"DIANA: shift_step is needed for {self.compressor.label}: its variance factor omega is "
                            f"{'not declared (biased)' if w is None else 'infinite'}; pass shift_step= in [0, 1]")
        return 1.0 / (1.0 + w)

    def init(self, x) -> DIANAState:
        """Zero shift shaped like ``x``."""
        return DIANAState(_zeros(x))

    def apply(self, g, state: DIANAState, *, rng) -> tuple[np.ndarray, DIANAState]:
        """Return ``(g_hat, new_state)`` for the gradient ``g``; ``state`` is not modified."""
        g = np.asarray(g)
        a = self.step_for(g.shape[-1])
        m = self.compressor.apply(g - state.shift, rng=rng)
        return state.shift + m, DIANAState(state.shift + a * m)


class MARINAState(NamedTuple):
    """MARINA memory: the node's estimate ``h`` and its previous gradient."""

    estimate: np.ndarray
    previous: np.ndarray
    started: bool


@register_feedback("marina")
@dataclass(frozen=True)
class MARINA:
    r"""MARINA (Gorbunov, Burlachenko, Li, Richtárik 2021), per node, as pure functions.

    With probability ``p`` (one coin per call, shared by the nodes: the server draws it and tells them)
    the node sends its full gradient, :math:`h' = g`; otherwise it sends the compressed change of its
    gradient, :math:`h' = h + C(g - g_{\mathrm{prev}})`. ``apply`` returns :math:`h'`; the server's
    direction is the mean of the nodes' :math:`h'`. The first call sends the full gradient. The coin is one
    per leading index of ``g`` (all but the last two axes: replicates), shared over the node axis ``-2``.

    Examples
    --------
    >>> from simcomm.compress import Identity
    >>> ef = MARINA(Identity(), p=0.5)
    >>> h, s = ef.apply(np.array([[1.0, 2.0]]), ef.init((1, 2)), rng=0)
    >>> h2, s = ef.apply(np.array([[0.0, 5.0]]), s, rng=1)
    >>> h.tolist(), h2.tolist()
    ([[1.0, 2.0]], [[0.0, 5.0]])
    """

    compressor: Compressor
    p: float = 0.1

    def __post_init__(self):  # noqa: D105
        object.__setattr__(self, "p", _check_unit(self.p, "p", "MARINA"))

    def init(self, x) -> MARINAState:
        """Zero estimate and previous gradient shaped like ``x``; the first call sends the full gradient."""
        return MARINAState(_zeros(x), _zeros(x), False)

    def apply(self, g, state: MARINAState, *, rng) -> tuple[np.ndarray, MARINAState]:
        """Return ``(h', new_state)`` for the gradient ``g``; ``state`` is not modified."""
        g = np.asarray(g)
        rng = np.random.default_rng(rng)
        lead = g.shape[:-2] + (1, 1) if g.ndim >= 2 else (1,)
        full = rng.random(lead) < self.p  # the server's coin (drawn even on the first call: fixed stream)
        c = self.compressor.apply(g - state.previous, rng=rng)
        h = np.where(full | (not state.started), g, state.estimate + c)
        return h, MARINAState(h, g.copy(), True)


def feedback_from_name(name: str, compressor: Compressor, **settings):
    """Build the error-feedback variant ``name`` (a key of :data:`FEEDBACKS`) around ``compressor``.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> feedback_from_name("ef21_sgdm", TopK(2), momentum=0.5)
    EF21SGDM(compressor=TopK(k=2), momentum=0.5)
    """
    from simcomm._errors import closest

    cls = FEEDBACKS.get(name)
    if cls is None:
        raise UserError(f"unknown error feedback '{name}'{closest(name, FEEDBACKS)}; use one of {', '.join(FEEDBACKS)}")
    try:
        return cls(compressor, **settings)
    except TypeError:
        import dataclasses

        names = [f.name for f in dataclasses.fields(cls)][1:]
        raise UserError(f"error feedback '{name}' takes {', '.join(names) or 'no settings'}; got "
                        f"{', '.join(settings)}") from None
