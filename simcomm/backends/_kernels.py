r"""The kernel table: every kernel a backend implements, its signature and what it computes, in one place.

:class:`Kernels` is the contract; ``numpy`` (the readable reference), ``numba`` and ``cupy`` implement it
under the same names with the same parameters (``tests/test_backends_contract.py`` compares each backend,
and the cupy sources by their syntax tree where CuPy is not installed). A kernel's full documentation
(equations, conventions, ties) is the numpy reference's docstring; the one line here says what it is.
Every kernel that takes ``out`` writes its result there and returns it, except the casts and quantizers
that say they return whether ``x`` is finite (their one pass over ``x`` is the finiteness check).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["Kernels", "KERNELS"]


class Kernels(Protocol):
    """The kernels of one backend module (``simcomm.backends.get_backend(name)``)."""

    # --- decentralized steps (fused: one pass over the nodes' rows) (simcomm.backends._numpy.dsgd)

    def atc_shift_step(self, X, M, G, lr, beta, shifts, weights, out):
        r"""ATC momentum step with a 1-D circulant ``W`` (``W[i, i + h_t] = w_t``); see the module doc."""

    def atc_csr_step(self, X, M, G, lr, beta, indptr, indices, data, out):
        r"""ATC momentum step with a CSR ``W``; see :func:`atc_shift_step`."""

    def pushsum_shift_step(self, X, w, G, lr, shifts, weights, out, wout):
        r"""One push-sum SGD step on a shift pattern with per-node weights (column stochastic ``W``)."""

    def choco_shift_step(self, Xh, Xhat, Q, gamma, shifts, weights, out):
        r"""CHOCO's public-copy update and consensus step with a 1-D circulant ``W`` (Koloskova et al. 2019)."""

    def gt_shift_step(self, X, Y, G, Gp, lr, shifts, weights, xout, yout, gout=None):
        r"""One ATC gradient-tracking step with a 1-D circulant ``W`` (:func:`simcomm.optim.gt_update`)."""

    def choco_sparse_step(self, X, G, lr, Xhat, idx, vals, gamma, shifts, weights, hat_out, out):
        r"""CHOCO's step from a sparse message (``vals`` at ``idx`` per row) with a 1-D circulant ``W``."""

    def choco_diff(self, X, G, lr, Xhat, r0, out):
        r"""Rows ``r0:r0 + len(out)`` of CHOCO's difference ``(x - lr g) - xhat`` (``G`` ``None``: ``x - xhat``)."""

    # --- error feedback (fused accumulate, select and send) (simcomm.backends._numpy.ef)

    def ef_accumulate_topr(self, G, M, r, out=None):
        r"""``(P, top, sq)``: ``P = G + M``, top-r indices per row of ``P`` (ascending) and ``sum(P**2, axis=1)``."""

    def ef_send(self, P, idx, theta, lr):
        r"""``(vals, upd, theta_new)`` for the sent coordinates ``idx``; ``P`` is updated in place."""

    # --- elementwise quantizers and casts (simcomm.backends._numpy.elem)

    def sign_quantize(self, x, mode, out):
        r"""Scaled sign: :math:`C(x)_i = a\,\mathrm{sgn}(x_i)` with :math:`\mathrm{sgn}(0) = +1`."""

    def bf16_round(self, x, out):
        r"""Round float32 ``x`` to bfloat16 (nearest, ties to even; overflow to inf), held as float32."""

    def fp16_round(self, x, out):
        r"""Round ``x`` to IEEE half precision (nearest even, overflow to inf) in x's dtype; True if x is finite."""

    def natural_quantize(self, x, key, out):
        r"""Natural compression: unbiased random rounding of :math:`|x_i|` to a power of two."""

    def minmax_quantize(self, x, bucket, stochastic, key, out):
        r"""Min-max uint8 per bucket of ``bucket`` coordinates (``bucket`` divides ``d``); True if x is finite."""

    def int8_block_quantize(self, x, block, out):
        r"""Block-wise absmax int8: per block :math:`s = \max|x|/127`, :math:`C(x)_i = s\,\mathrm{rint}(x_i/s)`."""

    def dither_quantize(self, x, s, key, out):
        r"""Natural dithering: :math:`t_i = |x_i|/\|x\|` rounded at random to :math:`0, 2^{1-s}, \dots, 1/2, 1`."""

    # --- mixing by shifts, CSR rows or edges (simcomm.backends._numpy.gossip)

    def shift_mix(self, X, shifts, weights):
        r"""Circulant mixing :math:`Y_i = \sum_t w_t X_{(i + h_t) \bmod n}` (no n x n matrix)."""

    def csr_mix(self, indptr, indices, data, X):
        r"""Sparse mixing :math:`Y_i = \sum_p \mathrm{data}_p X_{\mathrm{indices}_p}` over row ``i`` of a CSR ``W``."""

    def node_shift_mix(self, X, shifts, weights):
        r"""Shift-pattern mixing with per-node weights, :math:`Y_i = \sum_t w_{t,i} X_{(i + h_t) \bmod n}`."""

    def edge_mix(self, indptr, indices, eid, data, kept, X, out=None):
        r"""Gossip over the kept edges only: :math:`Y_i = x_i + \sum_{p:\ \mathrm{kept}[e_p]} w_p (x_{j_p} - x_i)`."""

    # --- counter-based gradient noise (simcomm.backends._numpy.noise)

    def add_counter_normals(self, G, keys, step, sigma):
        r"""Add ``sigma`` times the counter normals of ``step`` to ``G`` in place (see the module doc)."""

    # --- quantizers on counter uniforms, row reductions (simcomm.backends._numpy.quant)

    def counter_uniforms(self, key, n, dtype=np.float64, start=0):
        r"""Uniforms ``u_start, ..., u_{start+n-1}`` of the counter stream ``key`` (see module docstring)."""

    def row_norms(self, x):
        r"""Euclidean norm of each row, accumulated in float64; returns float64 of shape ``(rows,)``."""

    def row_absmax(self, x):
        r"""Infinity norm of each row as float64, shape ``(rows,)``."""

    def qsgd_quantize(self, x, norms, s, key, out):
        r"""QSGD with ``s`` levels."""

    def ternary_quantize(self, x, scales, key, out):
        r"""Ternary (TernGrad-type) quantization."""

    def stochastic_round_quantize(self, x, delta, key, out):
        r"""Unbiased rounding to the grid :math:`\delta\mathbb{Z}`: up with probability equal to the fractional part."""

    def bernoulli_quantize(self, x, p, key, out):
        r"""Bernoulli sparsification: keep :math:`x_i/p` with probability ``p``, else 0."""

    # --- selections (top-k, uniform k-subsets, rTop-k) (simcomm.backends._numpy.select)

    def topk_indices(self, x, k):
        r"""Indices of the ``k`` largest ``|x|`` of each row, ascending; ties go to the lower index."""

    def topk_select(self, x, k, dense):
        r"""``(idx, finite)``: ``topk_indices(x, k)`` and whether ``x`` is finite; the dense top-k into ``dense``."""

    def floyd_sample(self, u, d):
        r"""Uniform k-subsets of ``range(d)`` by Floyd's algorithm, one per row of ``u``."""

    def rtopk_indices(self, x, k, r, u, dense=None):
        r"""``(idx, finite)``: a uniform k-subset (Floyd on ``u``) of the top-r of each row, ``x`` finite; dense too."""


#: the kernel names, in the table's order: what every backend module exports
KERNELS = tuple(name for name in Kernels.__dict__ if not name.startswith("_"))
