r"""DiLoCo's outer step for a user's PyTorch loop: ``OuterStep(model.parameters(), ...).step(local)``.

After every worker has taken ``H`` inner steps from the global model :math:`x`, one call of
:meth:`OuterStep.step` makes, on the parameters' own tensors,

.. math:: \Delta_i = x - x_i, \qquad m_i = C(\Delta_i + e_i), \qquad e_i \leftarrow \Delta_i + e_i - m_i,
          \qquad g = \frac1n \sum_i m_i,

(error feedback ``"ef"``; ``"ef21"`` keeps :math:`h_i \leftarrow h_i + C(\Delta_i - h_i)` and averages the
:math:`h_i`; without feedback :math:`m_i = C(\Delta_i)`), then the outer optimiser in the convention of
``torch.optim.SGD(momentum=mu, nesterov=...)``:

.. math:: b \leftarrow \mu b + g \;(b = g \text{ at the first step}), \qquad
          x \leftarrow x - \eta\,(g + \mu b) \;\text{(Nesterov)}, \quad x - \eta\, b \;\text{(heavy ball)},

and, unless told not to, copies the new :math:`x` into every worker's parameters (the workers start the
next round from it). This is :func:`simcomm.optim.build_method` ``("diloco", ...)``'s outer step (the
simulator, :mod:`simcomm.optim._local`): ``simcomm conform MODULE:factory --kind outer`` checks a user's
outer step against it, round by round, to rounding.

The compressor is any :class:`~simcomm.compress.Compressor`; it compresses the ``(n, D)`` stack of the
workers' flattened pseudo-gradients row by row in one call, drawing from the step's own generator
(``rng``), so a run with ``rng=seed`` draws what the simulator run with ``rng=seed`` draws. Memory
kept: one ``(n, D)`` buffer of pseudo-gradients, the ``(n, D)`` residuals (with feedback) and the
``(D,)`` momentum buffer, all allocated once; nothing else is copied but the compressor's message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcomm._errors import UserError
from simcomm.compress import Compressor, Identity, compressor_from_label

__all__ = ["OuterStep", "FEEDBACK_KINDS"]

#: the error-feedback variants :class:`OuterStep` keeps (per worker, in place)
FEEDBACK_KINDS = ("none", "ef", "ef21")


@dataclass
class _Stats:
    rounds: int = 0
    bits: float = 0.0


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - simcomm.torch is imported only with torch present
        raise UserError(f"OuterStep needs torch ({exc}); pip install torch==2.13.0 (CPU wheel)") from None
    return torch


def _tensors(params, what: str) -> list:
    """The tensors of ``params`` (an iterable of tensors, or an ``nn.Module``), as a list."""
    torch = _torch()
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    if isinstance(params, torch.Tensor):
        params = [params]
    try:
        out = list(params)
    except TypeError:
        raise UserError(f"{what} is a {type(params).__name__}; pass model.parameters(), a list of tensors or a "
                        "module") from None
    bad = [type(p).__name__ for p in out if not isinstance(p, torch.Tensor)]
    if bad:
        raise UserError(f"{what} holds a {bad[0]}, not a torch.Tensor; pass model.parameters() or a list of tensors")
    return out


class OuterStep:
    r"""The outer step of DiLoCo / local SGD on a user's torch parameters (module docstring).

    Parameters
    ----------
    params : iterable of torch.Tensor or torch.nn.Module
        The global model's parameters; :meth:`step` updates them in place.
    lr : float, default 0.7
        Outer step size :math:`\eta > 0` (1 with ``momentum=0``: FedAvg, the workers' average).
    momentum : float, default 0.9
        Outer momentum :math:`\mu \in [0, 1)` (0: outer SGD).
    nesterov : bool, default True
        Nesterov momentum as ``torch.optim.SGD(nesterov=True)``; ``False``: heavy ball; ignored without momentum.
    compressor : Compressor or str, optional
        Applied to every worker's pseudo-gradient (a label such as ``"top_k(k=100)"`` works too);
        default: none (:class:`~simcomm.compress.Identity`).
    feedback : {"none", "ef", "ef21"} or bool, default "none"
        Error feedback around the compressor, one memory per worker (``True``: ``"ef"``).
    workers : int, default 1
        Workers whose local parameters one :meth:`step` receives.
    rng : numpy.random.Generator or seed, optional
        The compressor's draws (``numpy.random.default_rng(rng)``; ``None``: fresh entropy).
    distributed : bool, default False
        Average over the ranks of ``torch.distributed`` too (every rank passes its own ``workers``; the
        compressed messages are all-reduced, so every rank takes the same outer step). Give each rank
        its own ``rng`` stream.
    process_group : optional
        The group to average in (default: the default group); with ``distributed``.

    Raises
    ------
    UserError
        One line, for a setting out of range or parameters that are not tensors.

    Examples
    --------
    >>> import torch
    >>> from simcomm.compress import TopK
    >>> x = torch.zeros(4, dtype=torch.float64)
    >>> outer = OuterStep([x], lr=1.0, momentum=0.0, compressor=TopK(1), feedback="ef", workers=2, rng=0)
    >>> local = [[torch.tensor([-1.0, -0.5, 0.0, 0.0], dtype=torch.float64)],
    ...          [torch.tensor([0.0, 0.0, 0.0, -2.0], dtype=torch.float64)]]
    >>> outer.step(local)
    >>> x.tolist()                           # x minus the mean of top-1 of each worker's x - x_i
    [-0.5, 0.0, 0.0, -1.0]
    >>> outer.residuals()[0].tolist()        # worker 0 keeps what top-1 did not send
    [0.0, 0.5, 0.0, 0.0]
    >>> local[0][0].tolist()                 # the workers restart from the new global model
    [-0.5, 0.0, 0.0, -1.0]
    """

    def __init__(self, params, *, lr: float = 0.7, momentum: float = 0.9, nesterov: bool = True, compressor=None,
                 feedback="none", workers: int = 1, rng=None, distributed: bool = False, process_group=None):
        torch = _torch()
        self.params = _tensors(params, "OuterStep: params")
        if not self.params:
            raise UserError("OuterStep: params is empty; pass the global model's parameters")
        dtypes = {p.dtype for p in self.params}
        devices = {p.device for p in self.params}
        if len(dtypes) > 1 or len(devices) > 1 or not self.params[0].is_floating_point():
            raise UserError(f"OuterStep: the parameters must share one floating dtype and device (got "
                            f"{sorted(map(str, dtypes))} on {sorted(map(str, devices))})")
        self.lr = float(lr)
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise UserError(f"OuterStep: lr = {lr!r} is not allowed; use a finite outer step size > 0")
        self.momentum = float(momentum)
        if not 0.0 <= self.momentum < 1.0:
            raise UserError(f"OuterStep: momentum = {momentum!r} is not allowed; use a number in [0, 1)")
        self.nesterov = bool(nesterov) and self.momentum > 0.0
        if isinstance(compressor, str):
            compressor = compressor_from_label(compressor)
        self.compressor = Identity() if compressor is None else compressor
        if not isinstance(self.compressor, Compressor):
            raise UserError(f"OuterStep: compressor = {compressor!r} is not a simcomm.compress.Compressor; pass e.g. "
                            "TopK(k) or a label such as 'top_k(k=100)'")
        fb = "ef" if feedback is True else "none" if feedback is False or feedback is None else feedback
        if fb not in FEEDBACK_KINDS:
            raise UserError(f"OuterStep: feedback = {feedback!r} is not kept here; use one of "
                            f"{', '.join(map(repr, FEEDBACK_KINDS))} (the other variants run in simcomm.optim)")
        self.feedback = fb
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
            raise UserError(f"OuterStep: workers = {workers!r} is not allowed; use an integer >= 1")
        self.workers = int(workers)
        self.distributed = bool(distributed)
        self.process_group = process_group
        self._rng = np.random.default_rng(rng)
        p0 = self.params[0]
        self._sizes = [p.numel() for p in self.params]
        D = sum(self._sizes)
        self.dim = D
        with torch.no_grad():
            self._delta = torch.empty((self.workers, D), dtype=p0.dtype, device=p0.device)
            self._memory = (torch.zeros((self.workers, D), dtype=p0.dtype, device=p0.device)
                            if self.feedback != "none" else None)
        self._buffer = None
        self._stats = _Stats()

    # ------------------------------------------------------------------------------------------------- reading

    def residuals(self):
        """The workers' error-feedback memory ``(workers, D)`` (EF: residuals; EF21: estimates), or ``None``."""
        return self._memory

    def stats(self) -> dict:
        """``rounds`` taken and ``bits`` sent by this process's workers (counted by the compressor's encoding)."""
        return {"rounds": self._stats.rounds, "bits": self._stats.bits}

    def state_dict(self) -> dict:
        """What a checkpoint needs (tensors and the generator's state); :meth:`load_state_dict` restores it."""
        return {"memory": None if self._memory is None else self._memory.clone(),
                "momentum_buffer": None if self._buffer is None else self._buffer.clone(),
                "rng": self._rng.bit_generator.state, "rounds": self._stats.rounds, "bits": self._stats.bits,
                "settings": self._settings()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output (the settings must be the same)."""
        if not isinstance(state, dict) or "settings" not in state:
            raise UserError("OuterStep.load_state_dict: pass what OuterStep.state_dict() returned")
        if state["settings"] != self._settings():
            raise UserError(f"OuterStep.load_state_dict: the checkpoint's settings {state['settings']} differ from "
                            f"these {self._settings()}")
        if self._memory is not None:
            self._memory.copy_(state["memory"])
        self._buffer = None if state["momentum_buffer"] is None else state["momentum_buffer"].to(self._delta).clone()
        self._rng.bit_generator.state = state["rng"]
        self._stats = _Stats(int(state["rounds"]), float(state["bits"]))

    def _settings(self) -> dict:
        return dict(lr=self.lr, momentum=self.momentum, nesterov=self.nesterov, compressor=self.compressor.label,
                    feedback=self.feedback, workers=self.workers, dim=self.dim)

    # ------------------------------------------------------------------------------------------------- the step

    def _locals(self, local) -> list:
        """``local`` as ``workers`` lists of tensors shaped like the parameters."""
        torch = _torch()
        if isinstance(local, torch.nn.Module):
            groups = [local]
        else:
            try:
                items = list(local)
            except TypeError:
                raise UserError(f"OuterStep.step: local is a {type(local).__name__}; pass the workers' parameter "
                                "lists (or one worker's parameters)") from None
            # one worker's tensors (a list, or model.parameters()), else one entry per worker
            groups = [items] if items and all(isinstance(t, torch.Tensor) for t in items) else items
        if len(groups) != self.workers:
            raise UserError(f"OuterStep.step: got {len(groups)} workers' parameters, expected workers = "
                            f"{self.workers}; pass a list of {self.workers} parameter lists (or one list if 1)")
        out = []
        for i, g in enumerate(groups):
            ts = _tensors(g, f"OuterStep.step: worker {i}'s parameters")
            if [t.shape for t in ts] != [p.shape for p in self.params]:
                raise UserError(f"OuterStep.step: worker {i}'s parameters have shapes {[tuple(t.shape) for t in ts]}, "
                                f"the global model's {[tuple(p.shape) for p in self.params]}")
            out.append(ts)
        return out

    def step(self, local, *, sync: bool = True) -> None:
        r"""Take the outer step from the workers' local parameters after their inner steps.

        Parameters
        ----------
        local : list
            This process's workers' parameters: a list of ``workers`` lists of tensors (or modules), or
            with ``workers = 1`` the one list (or module).
        sync : bool, default True
            Copy the new global parameters into every worker's parameters afterwards.

        Raises
        ------
        UserError
            If ``local`` does not match ``workers`` or the parameters' shapes.
        """
        torch = _torch()
        groups = self._locals(local)
        with torch.no_grad():
            delta = self._delta
            for i, ts in enumerate(groups):  # Delta_i = x - x_i, written into row i (no other copy)
                at = 0
                for p, t, size in zip(self.params, ts, self._sizes):
                    torch.sub(p.reshape(-1), t.reshape(-1), out=delta[i, at:at + size])
                    at += size
            msg = self._send(delta)
            g = msg.sum(dim=0) if self.distributed else msg.mean(dim=0)
            if self.distributed:
                import torch.distributed as dist

                dist.all_reduce(g, group=self.process_group)
                g.div_(self.workers * dist.get_world_size(self.process_group))
            if self.momentum > 0.0:  # torch.optim.SGD: b = g at the first step, then b = mu b + g
                self._buffer = g.clone() if self._buffer is None else self._buffer.mul_(self.momentum).add_(g)
                direction = g.add_(self._buffer, alpha=self.momentum) if self.nesterov else self._buffer
            else:
                direction = g
            at = 0
            for p, size in zip(self.params, self._sizes):
                p.sub_(direction[at:at + size].view_as(p), alpha=self.lr)
                at += size
            if sync:
                for ts in groups:
                    for p, t in zip(self.params, ts):
                        t.copy_(p)
        self._stats.rounds += 1
        self._stats.bits += self.workers * float(self.compressor.bits(self.dim))

    def _send(self, delta):
        """What the workers send, ``(workers, D)``: the compressed pseudo-gradients with their memory."""
        C = self.compressor
        identity = isinstance(C, Identity)
        if self.feedback == "ef":  # p = Delta + e, m = C(p), e = p - m
            p = delta.add_(self._memory)
            m = p if identity else C.apply(p, rng=self._rng)
            if identity:
                self._memory.zero_()
            else:
                _torch().sub(p, m, out=self._memory)
            return m
        if self.feedback == "ef21":  # c = C(Delta - h), h = h + c, send h (the server holds it)
            c = delta.sub_(self._memory)
            self._memory.add_(c if identity else C.apply(c, rng=self._rng))
            return self._memory
        return delta if identity else C.apply(delta, rng=self._rng)
