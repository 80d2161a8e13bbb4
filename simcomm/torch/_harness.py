"""Run a user's DDP communication hook on Gloo processes on loopback and measure what ``simcomm conform`` judges.

Each worker process imports the factory ``module:name`` (it returns ``(state, hook)``), builds buckets
that behave like DDP's ``GradBucket`` (``index()``, ``buffer()``, ``gradients()``, ``parameters()``,
``is_last()``, ``set_buffer()``) over two parameters of 40 and 24 float32 coordinates, and runs the
hook for a few steps on per-rank Gaussian gradients. It records, per replicate, the largest relative
difference between runs that must agree: the same run twice (determinism), the ranks' updates (rank
consistency), a run restored from a pickled state half-way (checkpoint), a run whose bucket buffers are
replaced half-way (rebuild), and the float16-range run against its rescaled twin (overflow). Rank 0
writes them to a pickle the caller reads; the judging happens in :mod:`simcomm.conform`.
"""

from __future__ import annotations

import importlib
import math
import os
import pickle
import socket
import tempfile
import traceback
from datetime import timedelta

import numpy as np

from simcomm._errors import UserError

__all__ = ["run_hook_battery"]

_SIZES = (40, 24)  # two parameters, one bucket each (bucket 0 holds the last parameter, as DDP orders them)
_STEPS = 12
_REPS = 3
_SHIFT = 12  # the overflow check compares gradients g with g * 2^-12


class _Bucket:
    """What a DDP communication hook sees of a bucket (duck-typed ``torch.distributed.GradBucket``)."""

    def __init__(self, index: int, params: list, buffer, last: bool):
        self._index, self._params, self._buffer, self._last = index, params, buffer, last

    def index(self) -> int:  # noqa: D102
        return self._index

    def buffer(self):  # noqa: D102
        return self._buffer

    def gradients(self) -> list:  # noqa: D102
        out, at = [], 0
        for p in self._params:
            out.append(self._buffer[at:at + p.numel()].view_as(p))
            at += p.numel()
        return out

    def parameters(self) -> list:  # noqa: D102
        return self._params

    def is_last(self) -> bool:  # noqa: D102
        return self._last

    def set_buffer(self, tensor) -> None:  # noqa: D102
        self._buffer.copy_(tensor)


def _factory(target: str):
    mod, _, name = target.partition(":")
    return getattr(importlib.import_module(mod), name)


def _pair(factory):
    out = factory()
    if not (isinstance(out, tuple) and len(out) == 2 and callable(out[1])):
        raise UserError(f"the factory returned {type(out).__name__}, not (state, hook); return e.g. "
                        "simcomm.torch.comm_hook(TopK(4), feedback=True)")
    return out


def _grads(seed: int, rank: int, rep: int, t: int, fp16: bool) -> np.ndarray:
    d = sum(_SIZES)
    if not fp16:
        g = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(300, rep, rank, t)))
        return g.standard_normal(d).astype(np.float32)
    # the same signs on every rank (so the sum grows), magnitudes in [0.75, 1] * 0.75 * float16 max: every
    # value is representable in float16, the sum of 2 workers is not
    shared = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(301, rep, t)))
    own = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(302, rep, rank, t)))
    sign = np.where(shared.random(d) < 0.5, -1.0, 1.0)
    return (sign * own.uniform(0.75, 1.0, d) * 0.75 * float(np.finfo(np.float16).max)).astype(np.float32)


def _run(factory, seed, rank, rep, *, restore_at=None, rebuild_at=None, fp16=False, scale=1.0) -> np.ndarray:
    """The updates of one run, ``(steps, d)`` float64."""
    import torch

    state, hook = _pair(factory)
    params = [torch.zeros(n) for n in reversed(_SIZES)]  # DDP puts the last parameter into bucket 0
    buffers = [torch.zeros(p.numel()) for p in params]
    out = []
    for t in range(_STEPS):
        if t == restore_at:
            state = pickle.loads(pickle.dumps(state))  # written to and read from a checkpoint
            _, hook = _pair(factory)  # a new process registers a fresh hook with the restored state
        if t == rebuild_at:
            buffers = [torch.zeros(p.numel()) for p in params]  # new buffers, same indices and layout
        g = torch.from_numpy(_grads(seed, rank, rep, t, fp16) * np.float32(scale))
        rows, at = [], 0
        for i, (p, buf) in enumerate(zip(params, buffers)):
            buf.copy_(g[at:at + p.numel()])
            at += p.numel()
            fut = hook(state, _Bucket(i, [p], buf, i == len(params) - 1))
            res = fut.wait()
            res = res[0] if isinstance(res, (list, tuple)) else res
            rows.append(res.detach().to(torch.float64).reshape(-1).numpy().copy())
        out.append(np.concatenate(rows))
    return np.stack(out)


def _defect(a: np.ndarray, b: np.ndarray) -> float:
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.inf
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-300)


def _battery(rank: int, world: int, target: str, seed: int) -> dict:
    import torch.distributed as dist

    found: dict = {"calls": 0}
    try:
        factory = _factory(target)
        base = {}

        def check(name, fn):
            try:
                found[name] = [fn(r) for r in range(_REPS)]
            except Exception as exc:  # noqa: BLE001 - the user's hook may raise anything: that is the finding
                found[name] = f"the hook raised {type(exc).__name__}: {exc}".splitlines()[0]

        def determinism(r):
            base[r] = _run(factory, seed, rank, r)
            return _defect(_run(factory, seed, rank, r), base[r])

        check("determinism", determinism)

        def consistency(r):
            if r not in base:
                base[r] = _run(factory, seed, rank, r)
            every = [None] * world
            dist.all_gather_object(every, base[r])
            return max(_defect(u, every[0]) for u in every)

        check("rank_consistency", consistency)
        check("checkpoint", lambda r: _defect(_run(factory, seed, rank, r, restore_at=_STEPS // 2), base[r]))
        check("rebuild", lambda r: _defect(_run(factory, seed, rank, r, rebuild_at=_STEPS // 2), base[r]))

        def overflow(r):
            big = _run(factory, seed, rank, r, fp16=True)
            small = _run(factory, seed, rank, r, fp16=True, scale=2.0**-_SHIFT)
            return _defect(big, small * 2.0**_SHIFT)

        check("fp16_overflow", overflow)
        found["calls"] = _STEPS * len(_SIZES)  # hook calls of one run
    except Exception as exc:  # noqa: BLE001
        found = {k: f"{type(exc).__name__}: {exc}".splitlines()[0] for k in
                 ("determinism", "rank_consistency", "checkpoint", "rebuild", "fp16_overflow")}
        found["trace"] = traceback.format_exc()
    every = [None] * world
    dist.all_gather_object(every, found)
    merged = dict(every[0])
    for name, value in merged.items():
        if isinstance(value, list):  # the worst rank's defect per replicate
            vals = [v[name] for v in every if isinstance(v.get(name), list)]
            merged[name] = [max(col) for col in zip(*vals)]
    return merged


def _worker(rank: int, world: int, port: int, targets: list, seed: int, path: str) -> None:
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    found = {t: _battery(rank, world, t, seed) for t in targets}
    if rank == 0:
        with open(path, "wb") as fh:
            pickle.dump(found, fh)
    import gc

    gc.collect()  # the user's hooks and states go while the group lives; then every rank leaves together
    dist.barrier()
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_hook_battery(targets: list, *, workers: int = 2, seed: int = 0) -> dict:
    """Measure the hook battery's defects on ``workers`` Gloo processes (one process group for every target).

    Returns ``{target: {check: [defect per replicate] or an error line}}``.

    Raises
    ------
    UserError
        If the worker processes could not run (one line).
    """
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "found.pkl")
        try:
            mp.start_processes(_worker, args=(workers, _free_port(), list(targets), seed, path), nprocs=workers,
                               join=True, start_method="spawn")
        except Exception as exc:  # noqa: BLE001
            raise UserError(f"the {workers} Gloo worker processes failed ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
        with open(path, "rb") as fh:
            return pickle.load(fh)
