"""simcomm.torch.comm_hook under real DDP on Gloo (2 processes on loopback) against simcomm's simulation.

* Identity hook == un-hooked DDP (rtol 1e-5, PyTorch's own parity criterion; float64 gives ~1e-15);
* top-k with error feedback == simcomm.optim.ef_update on the same gradients (float64: 1e-9 relative
  allows the different summation order of two ranks' messages, rounding only);
* shared-seed rand-k (allreduce of k values) == the simulation with every rank drawing the same subset;
* two parameters (12 and 20 coordinates) and a 104-byte bucket cap: DDP starts with one bucket of both
  and re-lays them out into two after the first iteration (as for every model larger than a bucket); the
  residual is carried over per parameter, so the error-feedback books balance to rounding:
  sum_t (mean gradient_t) - sum_t update_t = mean residual_T (a lost residual breaks it by its size).
"""

import pickle
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the DDP hook test needs the torch extra (pip install torch==2.13.0)")

from tests import _ddp_worker as W  # noqa: E402


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import torch.multiprocessing as mp

    path = tmp_path_factory.mktemp("ddp") / "out.pkl"
    mp.start_processes(W.worker, args=(2, _port(), str(path)), nprocs=2, join=True, start_method="spawn")
    with open(path, "rb") as fh:
        return pickle.load(fh)


def _grads(w):
    """Per-rank local gradients at w, (2, D): A_i^T (A_i w - b_i) / m, the gradient of W's loss."""
    out = []
    for rank in range(2):
        A, b = W.data(rank)
        out.append(A.T @ (A @ w - b) / W.M)
    return np.stack(out)


def test_ranks_agree(runs):
    for name in runs[0]:
        if name != "split_topk_ef":
            np.testing.assert_array_equal(runs[0][name][0], runs[1][name][0])
    np.testing.assert_array_equal(runs[0]["split_topk_ef"][0][1], runs[1]["split_topk_ef"][0][1])


def test_identity_hook_equals_plain_ddp(runs):
    np.testing.assert_allclose(runs[0]["identity"][0], runs[0]["plain"][0], rtol=1e-5, atol=0)
    # and plain DDP is gradient descent on the mean loss (a check of the worker itself)
    w = W.w0()
    for _ in range(W.STEPS):
        w = w - W.LR * _grads(w).mean(axis=0)
    np.testing.assert_allclose(runs[0]["plain"][0][-1], w, rtol=1e-10)


def test_topk_feedback_hook_equals_simulation(runs):
    from simcomm.compress import TopK
    from simcomm.optim import ef_init, ef_update

    traj = runs[0]["topk_ef"][0]
    s = ef_init(W.w0(), 2)
    for t in range(W.STEPS):
        s, _ = ef_update(s, _grads(s.x), lr=W.LR, compressor=TopK(4), rng=t, backend="numpy")
        np.testing.assert_allclose(traj[t + 1], s.x, rtol=1e-9, atol=1e-12)
    # every rank's residual, as the hook keeps it, equals the simulation's memory of that worker
    for rank in range(2):
        np.testing.assert_allclose(runs[rank]["topk_ef"][1], s.residual[rank], rtol=1e-9, atol=1e-12)
    stats = runs[0]["topk_ef"][3]
    assert stats["messages"] == W.STEPS and stats["bits"] == W.STEPS * TopK(4).bits(W.D1 + W.D2)


def test_shared_seed_randk_hook_equals_simulation(runs):
    from simcomm.backends import use
    from simcomm.compress import RandK

    c, d = RandK(4, scale=False), W.D1 + W.D2
    w, e = W.w0(), np.zeros((2, d))
    for t in range(W.STEPS):
        p = _grads(w) + e
        with use("numpy"):  # the subset every rank draws (bucket 0, step t)
            idx = c.select_rows(p[:1], rng=np.random.default_rng(np.random.SeedSequence(5, spawn_key=(0, t))))[0]
        m = np.zeros_like(p)
        m[:, idx] = p[:, idx]
        e = p - m
        w = w - W.LR * m.mean(axis=0)
        np.testing.assert_allclose(runs[0]["randk_ef"][0][t + 1], w, rtol=1e-9, atol=1e-12)
    assert runs[0]["randk_ef"][3]["bytes_moved"] == W.STEPS * 4 * 8  # k float64 values a step, not d


def test_residual_survives_the_bucket_rebuild(runs):
    (_, step_sum), _, sizes, stats, _ = runs[0]["split_topk_ef"]
    assert sizes[0] == [W.D1 + W.D2] and sizes[-1] == [W.SPLIT, W.D1 + W.D2 - W.SPLIT], sizes  # DDP did re-lay them out
    assert stats["resets"] == 0
    mean_grad = (runs[0]["split_topk_ef"][0][0] + runs[1]["split_topk_ef"][0][0]) / 2
    mean_resid = (runs[0]["split_topk_ef"][1] + runs[1]["split_topk_ef"][1]) / 2
    np.testing.assert_allclose(mean_grad - step_sum, mean_resid, rtol=1e-8, atol=1e-10)
    assert np.abs(mean_resid).max() > 1e-3  # the books balance with a residual that matters


def test_state_pickles(runs):
    state = pickle.loads(runs[0]["topk_ef"][4])
    assert state.process_group is None and state.feedback and 0 in state.residuals
    assert not any(k.startswith("_") for k in vars(state))  # storage addresses stay in the process
