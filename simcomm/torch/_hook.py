r"""A simcomm compressor as a DDP communication hook: ``state, hook = comm_hook(compressor, feedback=True)``.

Per bucket (DDP hands the hook one flat buffer of local gradients per bucket, in float32 or float64):

.. math:: p = g + e_b, \qquad m = C(p), \qquad e_b \leftarrow p - m, \qquad
          \text{update} = \frac1n \sum_{\text{ranks}} m,

with :math:`e_b` the residual of bucket ``b`` (error feedback; :math:`e_b = 0` without it). The
residual is keyed by the bucket's *index*, never by its buffer, and survives DDP's bucket rebuild:
after the first iteration DDP re-lays the parameters out into new buckets (new buffers, and a bucket
index may then hold other parameters, e.g. one bucket of 32 coordinates becomes buckets of 20 and 12),
so the old residual is cut per parameter and re-assembled in the new layout (pytorch/pytorch#48867
lost it there). :class:`HookState` pickles for a checkpoint (the process group is dropped; the default
group is used after a restore) and a restored bucket with the same parameter sizes keeps its residual.

How the messages travel:

* linear compressors with a shared seed (:class:`~simcomm.compress.RandK`: every rank draws the same
  ``k`` indices from ``SeedSequence(seed, spawn_key=(bucket, step))``) allreduce their ``k`` values;
* the other sparsifiers (:class:`~simcomm.compress.TopK`, :class:`~simcomm.compress.RTopK`) all-gather
  each rank's ``k`` values and indices (one int32 tensor of ``2k`` words) and sum them;
* :class:`~simcomm.compress.Identity` allreduces the buffer (DDP's own ``allreduce_hook``, divided by ``n``
  before the sum, as PyTorch's hooks do);
* dense quantizers (QSGD, ternary, stochastic rounding, Bernoulli) allreduce the dequantized message:
  the arithmetic is the quantizer's, the bits on the wire are the ones :meth:`Compressor.bits` counts
  (recorded in the statistics), not the float32 values moved here.

Randomness that is not shared comes from ``SeedSequence(seed, spawn_key=(bucket, step, rank))``.
Statistics per bucket: messages sent, bits counted by the compressor's encoding, bytes handed to the
collective (:meth:`HookState.stats`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from simcomm._errors import UserError
from simcomm.backends import use
from simcomm.compress import Compressor, Identity, RandK, Sparsifier

__all__ = ["HookState", "comm_hook"]


@dataclass
class HookState:
    """Everything the hook keeps between steps; picklable (``torch.save`` it with the model's checkpoint).

    Attributes
    ----------
    compressor : Compressor
    feedback : bool
        Error feedback on (residual per bucket).
    seed : int
        Root seed of the compressor's randomness.
    residuals : dict
        Bucket index -> residual tensor (kept across bucket rebuilds and checkpoints).
    steps : dict
        Bucket index -> messages sent so far (the step counter of that bucket's random stream).
    bits : dict
        Bucket index -> bits sent so far, counted by the compressor's encoding (``compressor.bits(d)``).
    bytes_moved : dict
        Bucket index -> bytes handed to the collective by this rank.
    resets : int
        Residuals dropped (with a warning) because a restored checkpoint met another bucket layout.
    process_group : object
        The group to communicate in (``None``: the default group); not pickled.
    sizes : dict
        Bucket index -> its parameters' sizes, in order (to recognise the layout after a restore).
    """

    compressor: Compressor
    feedback: bool = True
    seed: int = 0
    residuals: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    bits: dict = field(default_factory=dict)
    bytes_moved: dict = field(default_factory=dict)
    resets: int = 0
    process_group: object = None
    sizes: dict = field(default_factory=dict)

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}  # storage addresses stay here
        state["process_group"] = None  # a live communicator does not pickle; the restored state uses the default
        return state

    def stats(self) -> dict:
        """Totals over buckets: ``messages``, ``bits`` (the compressor's count), ``bytes_moved``, ``resets``."""
        return {"messages": int(sum(self.steps.values())), "bits": float(sum(self.bits.values())),
                "bytes_moved": int(sum(self.bytes_moved.values())), "resets": self.resets}


def comm_hook(compressor: Compressor, *, feedback: bool = True, seed: int = 0, process_group=None):
    """A ``(state, hook)`` pair for ``DistributedDataParallel.register_comm_hook``.

    Parameters
    ----------
    compressor : Compressor
        Any simcomm compressor (``TopK(k)``, ``RandK(k)``, ``RTopK(k, r)``, ``QSGD(s)``, ``Identity()``, ...);
        ``k`` is taken per bucket (clipped to the bucket's length).
    feedback : bool, default True
        Keep each bucket's residual ``p - C(p)`` and add it to the next gradient (error feedback).
    seed : int, default 0
        Root seed of the compressor's randomness (the same on every rank).
    process_group : optional
        Communicate in this group (default: the default group).

    Returns
    -------
    (HookState, callable)
        ``model.register_comm_hook(state, hook)``.

    Raises
    ------
    UserError
        If ``compressor`` is not a simcomm compressor.

    Examples
    --------
    >>> from simcomm.compress import TopK
    >>> state, hook = comm_hook(TopK(4), feedback=True)
    >>> state.stats()
    {'messages': 0, 'bits': 0.0, 'bytes_moved': 0, 'resets': 0}
    """
    if not isinstance(compressor, Compressor):
        raise UserError(f"comm_hook: compressor = {compressor!r} is not a simcomm.compress.Compressor; pass e.g. "
                        "TopK(k) or compressor_from_name('rand_k', k=...)")
    return HookState(compressor, bool(feedback), int(seed), process_group=process_group), _hook


def _clip_k(c: Compressor, d: int) -> Compressor:
    import dataclasses

    if isinstance(c, Sparsifier) and c.k > d:
        kw = {"k": d}
        if getattr(c, "r", None) is not None:
            kw["r"] = d
        return dataclasses.replace(c, **kw)
    if isinstance(c, Sparsifier) and getattr(c, "r", None) is not None and c.r > d:
        return dataclasses.replace(c, r=d)
    return c


def _layout(bucket) -> list:
    """``[(data_ptr, numel)]`` of the bucket's parameters, in the buffer's order (this process only)."""
    return [(int(q.data_ptr()), int(q.numel())) for q in bucket.parameters()]


def _residual_for(state: HookState, b: int, bucket, d: int, buf):
    """Bucket ``b``'s residual in its current layout (None: zero), re-mapped by parameter after a rebuild.

    DDP rebuilds its buckets after the first iteration: a bucket index may then hold other parameters (or
    the same in another order). The residual of the old layout is cut per parameter (this process knows
    every parameter's storage) and re-assembled in the new one; after a checkpoint is restored (another
    process), a bucket whose parameter sizes are unchanged keeps its residual as it is.
    """
    import torch

    now = _layout(bucket)
    runtime = state.__dict__.setdefault("_runtime", {})  # bucket -> [(ptr, numel)]; never pickled
    pool = state.__dict__.setdefault("_pool", {})       # ptr -> residual of one parameter, between layouts
    e = state.residuals.get(b)
    if runtime.get(b) == now and e is not None and e.numel() == d:
        return e
    if b not in runtime and e is not None and state.sizes.get(b) == [n for _, n in now]:
        runtime[b] = now  # restored from a checkpoint: the same layout by sizes
        return e
    # a rebuild: cut this bucket's old residual, and every other one that shares a parameter with the new
    # layout, into per-parameter pieces
    mine = {ptr for ptr, _ in now}
    for bb, lay in list(runtime.items()):
        if bb == b or mine & {ptr for ptr, _ in lay}:
            r = state.residuals.pop(bb, None)
            if r is not None and sum(n for _, n in lay) == r.numel():
                for (ptr, _), piece in zip(lay, torch.split(r, [n for _, n in lay])):
                    pool[ptr] = piece
            runtime.pop(bb, None)
    pieces = [pool.pop(ptr, None) for ptr, _ in now]
    runtime[b] = now
    state.sizes[b] = [n for _, n in now]
    if all(x is None for x in pieces):
        if e is not None:
            warnings.warn(f"simcomm comm_hook: bucket {b}'s residual does not fit its new layout and is not known "
                          "per parameter here (a checkpoint from another layout); it restarts from zero",
                          RuntimeWarning, stacklevel=3)
            state.resets += 1
        return None
    return torch.cat([x if x is not None else torch.zeros(n, dtype=buf.dtype) for x, (_, n) in zip(pieces, now)])


def _hook(state: HookState, bucket):
    """The communication hook: compress this bucket's local gradients, exchange, return the average."""
    import torch
    import torch.distributed as dist

    group = state.process_group
    n = dist.get_world_size(group)
    rank = dist.get_rank(group)
    buf = bucket.buffer()
    b = int(bucket.index())
    d = buf.numel()
    flat = buf.reshape(-1)
    e = _residual_for(state, b, bucket, d, buf) if state.feedback else None
    p = flat + e if e is not None else flat.clone()
    t = state.steps.get(b, 0)
    state.steps[b] = t + 1
    c = _clip_k(state.compressor, d)
    state.bits[b] = state.bits.get(b, 0.0) + float(c.bits(d))
    shared = np.random.SeedSequence(state.seed, spawn_key=(b, t))
    own = np.random.SeedSequence(state.seed, spawn_key=(b, t, rank))
    p_np = p.detach().numpy().reshape(1, d)  # a view (CPU tensors): the compressors read it by DLPack

    if isinstance(c, Identity):
        m = p
        wire = (p / n).contiguous()
        fut = dist.all_reduce(wire, group=group, async_op=True).get_future()
        done = lambda f: f.value()[0]  # noqa: E731
    elif isinstance(c, RandK):
        # the same k indices on every rank (shared seed): the messages add up coordinate-wise, so the k values
        # are allreduced as they are (a linear compressor)
        with use("numpy"):
            idx_np = c.select_rows(p_np, rng=np.random.default_rng(shared))[0]
        idx = torch.from_numpy(np.ascontiguousarray(idx_np, dtype=np.int64))
        vals = p[idx] * (d / c.k if c.scale else 1.0)
        m = torch.zeros_like(p).index_copy_(0, idx, vals)
        wire = (vals / n).contiguous()
        fut = dist.all_reduce(wire, group=group, async_op=True).get_future()

        def done(f, idx=idx):
            return torch.zeros_like(p).index_copy_(0, idx, f.value()[0])
    elif isinstance(c, Sparsifier):
        with use("numpy"):
            idx_np = c.select_rows(p_np, rng=np.random.default_rng(own))[0]
        idx = torch.from_numpy(np.ascontiguousarray(idx_np, dtype=np.int64))
        vals = p[idx]
        m = torch.zeros_like(p).index_copy_(0, idx, vals)
        if p.dtype == torch.float64:
            packed = torch.cat([vals.view(torch.int64), idx])
        else:
            packed = torch.cat([vals.float().view(torch.int32), idx.to(torch.int32)])
        wire = packed
        gathered = [torch.empty_like(packed) for _ in range(n)]
        fut = dist.all_gather(gathered, packed, group=group, async_op=True).get_future()
        k = idx.numel()

        def done(f, gathered=gathered, k=k):
            out = torch.zeros_like(p)
            for g in gathered:
                v = g[:k].view(torch.float64) if p.dtype == torch.float64 else g[:k].view(torch.float32).to(p.dtype)
                out.index_add_(0, g[k:].to(torch.int64), v)
            return out / n
    else:
        with use("numpy"):
            m = torch.as_tensor(c.apply(p_np, rng=np.random.default_rng(own))[0], dtype=p.dtype)
        wire = (m / n).contiguous()
        fut = dist.all_reduce(wire, group=group, async_op=True).get_future()
        done = lambda f: f.value()[0]  # noqa: E731
    state.bytes_moved[b] = state.bytes_moved.get(b, 0) + wire.numel() * wire.element_size()
    if state.feedback and not isinstance(c, Identity):
        state.residuals[b] = (p - m).detach()
    return fut.then(lambda f: done(f).reshape(buf.shape).to(buf.dtype))
