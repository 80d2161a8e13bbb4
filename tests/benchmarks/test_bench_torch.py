"""Torch tensors through the compressors by DLPack (no copy) against a numpy round trip with copies.

A user without DLPack support copies the tensor into numpy and the result back,
``torch.from_numpy(C(t.numpy().copy()).copy())`` (the cheapest copying route: memcpy both ways).
``framework_arrays`` reads the tensor's memory as a numpy view and hands the result back as a tensor
sharing the result's memory, so the only cost above the numpy call itself is two DLPack capsules.
Reported per compressor at d = 2^22 float32 (set SIMCOMM_BENCH_TORCH_D): ``ratio`` = round-trip
time / DLPack time, and ``vs_numpy`` = DLPack time / the same call on a numpy array (the floor;
1.0 means no overhead).
"""

import os

import numpy as np
import pytest

from simcomm.backends import use
from simcomm.backends._xp import from_framework
from simcomm.compress import QSGD, RandK, TopK
from tests.benchmarks._timing import best_time as _best

torch = pytest.importorskip("torch", reason="the torch extra")

D = int(os.environ.get("SIMCOMM_BENCH_TORCH_D", str(2**22)))


@pytest.mark.parametrize("comp", [RandK(1024), TopK(1024), QSGD(4)], ids=lambda c: c.name)
def test_bench_torch_tensor_vs_numpy_round_trip(benchmark, comp):
    t = torch.from_numpy(np.random.default_rng(3).standard_normal(D).astype(np.float32))
    view, back = from_framework(t)
    assert np.shares_memory(view, t.numpy())  # the compressor reads the tensor's own memory

    def dlpack():
        return use("numba")(comp.apply)(t, rng=1)

    def round_trip():
        return torch.from_numpy(use("numba")(comp.apply)(t.numpy().copy(), rng=1).copy())

    def numpy_only():
        return use("numba")(comp.apply)(view, rng=1)

    out = dlpack()  # compile
    assert isinstance(out, torch.Tensor) and torch.equal(out, round_trip())
    benchmark.pedantic(dlpack, rounds=1, iterations=1)
    t_dl, _ = _best(dlpack, 5)
    t_rt, _ = _best(round_trip, 5)
    t_np, _ = _best(numpy_only, 5)
    benchmark.extra_info.update(ratio=t_rt / t_dl, baseline=f"copy in, C, copy out; {comp.label}, d={D}",
                                target="> 1 (no copies); vs_numpy ~ 1", vs_numpy=t_dl / t_np, seconds=t_dl)
