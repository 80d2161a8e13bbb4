"""Worker of tests/test_torch_hook.py: DDP on Gloo with and without simcomm's communication hook.

Runs in a spawned process (importable by path), so it imports torch only here. Least squares per rank,
f_i(w) = ||A_i w - b_i||^2 / (2 m), full local batch (deterministic gradients), float64 throughout so
that the comparison with simcomm's float64 simulation is limited by rounding, not by float32.
"""

import os
import pickle
from datetime import timedelta

import numpy as np

D1, D2, M, STEPS, LR = 20, 12, 40, 25, 0.05
# the split model: parameters of 12 and 20 coordinates and a bucket cap of 104 bytes; DDP starts with one
# bucket of everything and re-lays the parameters out into buckets of 20 and 12 after the first iteration
# (as it does for every model larger than one bucket: the first layout ignores the cap)
SPLIT, CAP_MB = 12, 1e-4


def data(rank: int):
    g = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(rank,)))
    return g.standard_normal((M, D1 + D2)), g.standard_normal(M)


def w0():
    return np.random.default_rng(12).standard_normal(D1 + D2) * 0.1


def _train(rank, split: bool, hook=None, bucket_cap_mb=25.0):  # noqa: C901
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            w = torch.from_numpy(w0())
            if split:
                self.w1, self.w2 = torch.nn.Parameter(w[:SPLIT].clone()), torch.nn.Parameter(w[SPLIT:].clone())
            else:
                self.w = torch.nn.Parameter(w.clone())

        def forward(self, A):
            return A[:, :SPLIT] @ self.w1 + A[:, SPLIT:] @ self.w2 if split else A @ self.w

        def flat(self):
            return torch.cat([self.w1, self.w2]) if split else self.w

    A_np, b_np = data(rank)
    A, b = torch.from_numpy(A_np), torch.from_numpy(b_np)
    model = Linear()
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    state = None
    if hook is not None:
        state, fn = hook
        ddp.register_comm_hook(state, fn)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    traj = [model.flat().detach().numpy().copy()]
    sizes = []
    local = np.zeros(A_np.shape[1])  # split: the sum over steps of this rank's gradient at the current w
    for _ in range(STEPS):
        if split:
            w = traj[-1]
            local += A_np.T @ (A_np @ w - b_np) / M
        opt.zero_grad()
        loss = 0.5 * ((ddp(A) - b) ** 2).mean()
        loss.backward()
        opt.step()
        traj.append(model.flat().detach().numpy().copy())
        if state is not None:
            sizes.append(sorted(sum(v) for v in state.sizes.values()))
    resid = None
    if state is not None and state.feedback:
        # each parameter's residual, cut out of its bucket by the layout the hook recorded
        ptrs = {p.data_ptr(): i for i, p in enumerate([model.w1, model.w2] if split else [model.w])}
        parts = {}
        for bidx, lay in state._runtime.items():
            r = state.residuals[bidx]
            for (ptr, _), piece in zip(lay, torch.split(r, [n for _, n in lay])):
                parts[ptrs[ptr]] = piece.numpy().copy()
        resid = np.concatenate([parts[i] for i in sorted(parts)])
    if split:  # the books: sum of this rank's gradients, total step, residual
        return (local, (traj[0] - traj[-1]) / LR), resid, sizes, state.stats(), b""
    return np.stack(traj), resid, sizes, (state.stats() if state is not None else None), pickle.dumps(state)


def worker(rank: int, world: int, port: int, path: str) -> None:
    import torch.distributed as dist

    from simcomm.compress import Identity, RandK, TopK
    from simcomm.torch import comm_hook

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    out = {
        "plain": _train(rank, False),
        "identity": _train(rank, False, comm_hook(Identity(), feedback=False)),
        "topk_ef": _train(rank, False, comm_hook(TopK(4), feedback=True)),
        "randk_ef": _train(rank, False, comm_hook(RandK(4, scale=False), feedback=True, seed=5)),
        "split_topk_ef": _train(rank, True, comm_hook(TopK(3), feedback=True), bucket_cap_mb=CAP_MB),
    }
    every = [None] * world
    dist.all_gather_object(every, out)
    if rank == 0:
        with open(path, "wb") as fh:
            pickle.dump(every, fh)
    _close(dist)


def _close(dist) -> None:
    """Free the DDP reducers (and the hooks they hold) while the group lives, then leave together."""
    import gc

    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
