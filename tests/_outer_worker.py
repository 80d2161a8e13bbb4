"""A Gloo rank for tests/test_torch_outer.py: one worker per process, OuterStep(distributed=True)."""

from __future__ import annotations

import os
import pickle
from datetime import timedelta

import numpy as np

D, ROUNDS = 10, 5


def local_model(rank: int, rnd: int) -> np.ndarray:
    """Worker ``rank``'s parameters after its inner steps of round ``rnd`` (fixed draws: the test's data)."""
    g = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(rank, rnd)))
    return g.standard_normal(D)


def worker(rank: int, world: int, port: int, path: str) -> None:
    import torch
    import torch.distributed as dist

    from simcomm.compress import TopK
    from simcomm.torch import OuterStep

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    x = torch.zeros(D, dtype=torch.float64)
    outer = OuterStep([x], lr=0.7, momentum=0.9, compressor=TopK(3), feedback="ef", workers=1, rng=rank,
                      distributed=True)
    out = []
    for r in range(ROUNDS):
        local = [torch.from_numpy(local_model(rank, r))]
        outer.step(local)
        out.append(x.numpy().copy())
    every = [None] * world
    dist.all_gather_object(every, np.stack(out))
    if rank == 0:
        with open(path, "wb") as fh:
            pickle.dump(every, fh)
    dist.barrier()
    dist.destroy_process_group()
