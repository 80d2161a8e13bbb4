"""Framework arrays in, the caller's kind out: torch tensors through every compressor by DLPack, no copies."""

import numpy as np
import pytest

from simcomm.backends._xp import from_framework, is_framework_array
from simcomm.compress import (
    QSGD,
    Bernoulli,
    Identity,
    RandK,
    RTopK,
    StochasticRound,
    Ternary,
    TopK,
    qsgd,
    rand_k,
    top_k,
    top_k_indices,
)

torch = pytest.importorskip("torch", reason="framework-array tests need the torch extra")

COMPRESSORS = [Identity(), TopK(3), RandK(3), RandK(3, scale=False), RTopK(2, 5), QSGD(4), Ternary(),
               StochasticRound(0.1), Bernoulli(0.5)]


@pytest.mark.parametrize("c", COMPRESSORS, ids=lambda c: c.label)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_in_torch_out_same_numbers(c, dtype):
    t = torch.from_numpy(np.random.default_rng(0).standard_normal((4, 10))).to(dtype)
    y = c.apply(t, rng=7)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.shape == t.shape
    np.testing.assert_array_equal(y.numpy(), c.apply(t.numpy(), rng=7))  # the same draws, bit for bit


def test_no_copy_in_or_out():
    t = torch.arange(12, dtype=torch.float64)
    view, back = from_framework(t)
    assert view.ctypes.data == t.data_ptr()  # the numpy view reads the tensor's memory
    out = np.ones(3)
    tt = back(out)
    assert isinstance(tt, torch.Tensor) and tt.data_ptr() == out.ctypes.data  # and the result is not copied back
    idx = top_k_indices(t, 3)
    assert isinstance(idx, torch.Tensor) and idx.tolist() == [9, 10, 11]


def test_requires_grad_and_numpy_passthrough():
    t = torch.randn(6, requires_grad=True)
    assert isinstance(top_k(t, 2), torch.Tensor)  # detached, no copy
    x = np.arange(4.0)
    assert not is_framework_array(x) and from_framework(x)[0] is x
    assert isinstance(rand_k(x, 2, rng=0), np.ndarray) and isinstance(qsgd([1.0, 2.0], 2, rng=0), np.ndarray)


def test_unsupported_dtype_is_one_line():
    from simcomm import UserError

    with pytest.raises(UserError, match="cannot be shared with numpy.*x.float"):
        top_k(torch.ones(4, dtype=torch.bfloat16), 2)
