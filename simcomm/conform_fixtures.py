r"""Five documented bug classes as small user-style objects, each with its fixed twin, for ``simcomm conform``.

Each bug must come out violated and each twin must hold (``tests/test_conform.py``); run one with e.g.
``simcomm conform simcomm.conform_fixtures:biased_rand_k --kind compressor``.

=============================  ==========  =================================================================
bug (twin)                     kind        where it was seen
=============================  ==========  =================================================================
``biased_rand_k``              compressor  rand-k with indices drawn with replacement and no d/k scale
(``rand_k``)                               (GRACE's random-k): E C(x) = (1 - (1 - 1/d)^k) x, not x
``uint8_round``                compressor  8-bit quantization that rounds to the nearest level: biased
(``uint8_stochastic``)                     (the twin rounds stochastically)
``ef_reset_on_rebuild``        hook        error feedback keyed by the bucket's buffer, re-zeroed when DDP
(``ef_hook``)                              rebuilds its buckets (pytorch/pytorch#48867)
``fp16_sum_overflow``          hook        float16 allreduce that sums before dividing by the world size: inf
(``fp16_hook``)                            at n workers for values below the float16 maximum (#57410, #59522)
``flipped_pseudo_gradient``    outer       DiLoCo pseudo-gradient theta_local - theta with an SGD outer step:
(``pseudo_gradient``)                      the outer step climbs (meta-pytorch/torchft#233)
``outer_ef_dropped``           outer       a user's DiLoCo outer step (top-k pseudo-gradients, error feedback,
(``torch_sgd_outer``,                      ``torch.optim.SGD`` as the outer optimiser) that never keeps the
``outer_step``)                            residual: declared error feedback, none done
``outer_forgot_nesterov``      outer       the same with ``torch.optim.SGD(momentum=0.9)`` and no
(``torch_sgd_outer``)                      ``nesterov=True``: heavy ball where Nesterov is declared
=============================  ==========  =================================================================

``ef_flipped_residual`` (feedback; twin ``ef_top_k``) keeps ``m - p`` instead of ``p - m``, for the
error-feedback invariant. The outer-step factories ``make(params, *, workers, rng)`` are checked against
simcomm's DiLoCo round by round (``simulator``); ``outer_step`` is the shipped
:class:`simcomm.torch.OuterStep` with the same settings. The hooks and outer steps need torch; the others
only numpy.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["biased_rand_k", "rand_k", "uint8_round", "uint8_stochastic", "ef_flipped_residual", "ef_top_k",
           "ef_reset_on_rebuild", "ef_hook", "fp16_sum_overflow", "fp16_hook", "flipped_pseudo_gradient",
           "pseudo_gradient", "outer_step", "torch_sgd_outer", "outer_ef_dropped", "outer_forgot_nesterov"]


def _k(d: int) -> int:
    return max(1, d // 4)


# --------------------------------------------------------------------------------------------- rand-k


def _randk_encode(x, idx, vals) -> bytes:
    return struct.pack("<H", x.shape[-1]) + np.asarray(vals, "<f4").tobytes() + np.asarray(idx, "<u2").tobytes()


def _randk_decode(blob):
    (d,) = struct.unpack_from("<H", blob)
    k = (len(blob) - 2) // 6
    vals = np.frombuffer(blob, "<f4", k, 2)
    idx = np.frombuffer(blob, "<u2", k, 2 + 4 * k)
    out = np.zeros(d, np.float32)
    out[idx] = vals
    return out


def _biased_pick(x, rng):
    d = x.shape[-1]
    idx = rng.integers(0, d, size=_k(d))  # the bug: with replacement, and no d/k scale below
    return idx, x[idx]


def biased_rand_k(x, rng):
    r"""BUG: rand-k drawing its ``k = d/4`` indices with replacement and sending them unscaled.

    :math:`\mathbb{E}\,C(x)_j = (1 - (1 - 1/d)^k)\,x_j`; declared unbiased with
    :math:`\beta = d/k - 1` (what the fixed :func:`rand_k` has).
    """
    x = np.asarray(x)
    idx, vals = _biased_pick(x, rng)
    out = np.zeros_like(x)
    out[idx] = vals
    return out


def _biased_encode(x, rng):
    x = np.asarray(x)
    idx, vals = _biased_pick(x, rng)
    return _randk_encode(x, idx, vals)


def _randk_pick(x, rng):
    d = x.shape[-1]
    k = _k(d)
    idx = np.sort(rng.choice(d, size=k, replace=False))
    return idx, (x[idx] * (d / k)).astype(x.dtype)


def rand_k(x, rng):
    r"""Fixed twin: ``k = d/4`` indices without replacement, scaled by ``d/k``: unbiased, :math:`\beta = d/k - 1`."""
    x = np.asarray(x)
    idx, vals = _randk_pick(x, rng)
    out = np.zeros_like(x)
    out[idx] = vals
    return out


def _randk_encode_fixed(x, rng):
    x = np.asarray(x)
    idx, vals = _randk_pick(x, rng)
    return _randk_encode(x, idx, vals)


for _f, _enc in ((biased_rand_k, _biased_encode), (rand_k, _randk_encode_fixed)):
    _f.unbiased = True
    _f.beta = lambda d: d / _k(d) - 1.0
    _f.bits = lambda d: 16 + 48 * _k(d)  # a uint16 d, then k float32 values and k uint16 indices
    _f.encode = _enc
    _f.decode = _randk_decode


# --------------------------------------------------------------------------------------------- uint8


def _grid(x):
    x = np.asarray(x)
    lo = np.float32(x.min())
    step = np.float32((float(x.max()) - float(lo)) / 255.0) or np.float32(1.0)
    return x, lo, step


def _levels(x, rng, stochastic: bool):
    x, lo, step = _grid(x)
    t = (x.astype(np.float64) - float(lo)) / float(step)
    q = np.floor(t + rng.random(t.shape)) if stochastic else np.round(t)  # the bug: round to nearest
    return np.clip(q, 0, 255).astype(np.uint8), lo, step


def _dequant(q, lo, step, dtype):
    return (float(lo) + q.astype(np.float64) * float(step)).astype(dtype)


def uint8_round(x, rng):
    r"""BUG: 8-bit quantization onto 256 levels between min and max, rounding to the nearest level.

    Deterministic, so biased: the error of every coordinate is the same at every call and never
    averages out. Declared unbiased with the stochastic twin's :math:`\beta = d/255^2`.
    """
    q, lo, step = _levels(x, rng, stochastic=False)
    return _dequant(q, lo, step, np.asarray(x).dtype)


def uint8_stochastic(x, rng):
    r"""Fixed twin: stochastic rounding onto the same 256 levels; unbiased.

    Variance: at most :math:`d\Delta^2/4` with :math:`\Delta = (\max - \min)/255 \le 2\|x\|_\infty/255`, so
    :math:`\mathbb{E}\|C(x)-x\|^2 \le d\|x\|_\infty^2/255^2 \le (d/255^2)\|x\|^2`: :math:`\beta = d/255^2`.
    """
    q, lo, step = _levels(x, rng, stochastic=True)
    return _dequant(q, lo, step, np.asarray(x).dtype)


def _uint8_encoder(stochastic):
    def encode(x, rng):
        q, lo, step = _levels(x, rng, stochastic)
        return struct.pack("<ff", lo, step) + q.tobytes()

    return encode


def _uint8_decode(blob):
    lo, step = struct.unpack_from("<ff", blob)
    return _dequant(np.frombuffer(blob, np.uint8, offset=8), np.float32(lo), np.float32(step), np.float32)


for _f, _st in ((uint8_round, False), (uint8_stochastic, True)):
    _f.unbiased = True
    _f.beta = lambda d: d / 255.0**2
    _f.bits = lambda d: 64 + 8 * d  # a float32 minimum and step, then one byte a coordinate
    _f.encode = _uint8_encoder(_st)
    _f.decode = _uint8_decode


# --------------------------------------------------------------------------------------------- error feedback


class _EF:
    """Top-k error feedback as (init, apply) with the residual in ``state.residual``."""

    def __init__(self, flipped: bool):
        self.flipped = flipped

    def init(self, g):
        from simcomm.compress import ErrorFeedbackState

        return ErrorFeedbackState(np.zeros_like(np.asarray(g), dtype=np.float32))

    def apply(self, g, state, *, rng):
        from simcomm.compress import ErrorFeedbackState, top_k

        p = np.asarray(g, np.float32) + state.residual
        m = top_k(p, _k(p.shape[-1]))
        return m, ErrorFeedbackState((m - p) if self.flipped else (p - m))  # the bug: the residual's sign


#: BUG: top-k error feedback keeping m - p, not p - m (the invariant e' = e + g - m fails at every step)
ef_flipped_residual = _EF(flipped=True)
#: fixed twin: top-k error feedback with e' = p - m
ef_top_k = _EF(flipped=False)


# --------------------------------------------------------------------------------------------- outer step


def flipped_pseudo_gradient(theta, theta_local):
    """BUG: ``theta_local - theta`` used as the pseudo-gradient of an SGD outer step (the step climbs)."""
    return theta_local - theta


def pseudo_gradient(theta, theta_local):
    """Fixed twin: DiLoCo's ``theta - theta_local`` (an SGD outer step ``theta - lr * Delta`` descends)."""
    return theta - theta_local


#: the outer steps' settings: outer Nesterov 0.9 at step 0.7 (DiLoCo's), top-k of a quarter with error feedback
_OUTER = dict(lr=0.7, momentum=0.9, nesterov=True, feedback="ef")


class _UserOuter:
    """A user's own DiLoCo outer step: top-k pseudo-gradients with error feedback, ``torch.optim.SGD`` outside."""

    def __init__(self, params, workers, *, keep_residual=True, nesterov=True):
        import torch

        from simcomm.compress import TopK

        self.params = list(params)
        self.dim = sum(p.numel() for p in self.params)
        self.lr, self.momentum, self.nesterov, self.feedback = (_OUTER[k] for k in ("lr", "momentum", "nesterov",
                                                                                    "feedback"))
        self.compressor = TopK(_k(self.dim))  # declared; the selection below is torch's own
        self.keep = keep_residual
        self.residual = [torch.zeros(self.dim, dtype=self.params[0].dtype) for _ in range(workers)]
        self.opt = torch.optim.SGD(self.params, lr=self.lr, momentum=self.momentum, nesterov=nesterov)

    def step(self, local):
        import torch

        with torch.no_grad():
            x = torch.cat([p.reshape(-1) for p in self.params])
            msgs = []
            for i, ts in enumerate(local):
                p = x - torch.cat([t.reshape(-1) for t in ts]) + self.residual[i]
                idx = torch.topk(p.abs(), self.compressor.k).indices
                m = torch.zeros_like(p)
                m[idx] = p[idx]
                # the bug when keep is False: the residual is dropped every round (no error feedback at all)
                self.residual[i] = p - m if self.keep else torch.zeros_like(p)
                msgs.append(m)
            g = torch.stack(msgs).mean(dim=0)
            at = 0
            for q in self.params:
                q.grad = g[at:at + q.numel()].view_as(q).clone()
                at += q.numel()
        self.opt.step()

    def state_dict(self):
        return {"opt": self.opt.state_dict(), "residual": [r.clone() for r in self.residual]}

    def load_state_dict(self, state):
        self.opt.load_state_dict(state["opt"])
        self.residual = [r.clone() for r in state["residual"]]


def torch_sgd_outer(params, *, workers, rng):
    """Fixed twin (outer-step factory): top-k + error feedback, ``torch.optim.SGD(momentum=0.9, nesterov=True)``."""
    del rng  # top-k draws nothing
    return _UserOuter(params, workers)


def outer_ef_dropped(params, *, workers, rng):
    """BUG (outer-step factory): declares error feedback and drops the residual every round."""
    del rng
    return _UserOuter(params, workers, keep_residual=False)


def outer_forgot_nesterov(params, *, workers, rng):
    """BUG (outer-step factory): declares Nesterov, builds ``torch.optim.SGD(momentum=0.9)`` (heavy ball)."""
    del rng
    return _UserOuter(params, workers, nesterov=False)


def outer_step(params, *, workers, rng):
    """Fixed twin (outer-step factory): :class:`simcomm.torch.OuterStep` with the same settings."""
    from simcomm.compress import TopK
    from simcomm.torch import OuterStep

    dim = sum(p.numel() for p in params)
    return OuterStep(params, compressor=TopK(_k(dim)), workers=workers, rng=rng, **_OUTER)


# --------------------------------------------------------------------------------------------- hooks (torch)


class _ResetOnRebuildState:
    """BUG: residuals keyed by the bucket buffer's storage address, which a rebuild changes."""

    def __init__(self):
        self.residuals = {}

    def __getstate__(self):
        return {"residuals": self.residuals}


def _reset_hook(state, bucket):
    import torch
    import torch.distributed as dist

    buf = bucket.buffer()
    key = buf.data_ptr()  # the bug: a new buffer after DDP rebuilds its buckets gets a zero residual
    e = state.residuals.get(key)
    p = buf + (e if e is not None else 0)
    k = _k(p.numel())
    idx = torch.topk(p.abs(), k, sorted=False).indices
    m = torch.zeros_like(p)
    m[idx] = p[idx]
    state.residuals[key] = p - m
    fut = dist.all_reduce(m.div_(dist.get_world_size()), async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def ef_reset_on_rebuild():
    """BUG (hook factory): top-k error feedback whose residual is lost when DDP rebuilds its buckets."""
    return _ResetOnRebuildState(), _reset_hook


def ef_hook():
    """Fixed twin (hook factory): :func:`simcomm.torch.comm_hook` with top-k and error feedback by bucket index."""
    from simcomm.compress import TopK
    from simcomm.torch import comm_hook

    return comm_hook(TopK(4), feedback=True)


def _fp16_hook(divide_first: bool):
    def hook(state, bucket):
        import torch
        import torch.distributed as dist

        n = dist.get_world_size()
        t = bucket.buffer().to(torch.float16)
        if divide_first:
            t.div_(n)
        fut = dist.all_reduce(t, async_op=True).get_future()

        def done(f):
            out = f.value()[0]
            if not divide_first:
                out = out / n  # the bug: the float16 sum of n workers has already overflowed
            return out.to(bucket.buffer().dtype)

        return fut.then(done)

    return hook


def fp16_sum_overflow():
    """BUG (hook factory): float16 allreduce that divides by the world size after summing."""
    return None, _fp16_hook(divide_first=False)


def fp16_hook():
    """Fixed twin (hook factory): divide by the world size before the float16 sum (PyTorch's fp16_compress_hook)."""
    return None, _fp16_hook(divide_first=True)
