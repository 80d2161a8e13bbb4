r"""Spectral quantities: :math:`\rho = \|W - J\|_2`, the spectral gap and the one-period product deviation.

Fast paths (papers/exponential_graph.md (a), C1): a circulant ``W`` is normal, so
:math:`\rho = \max_{m \ne 0} |\lambda_m|` with :math:`\lambda` the DFT of the first row
(``O(n log n)`` time, ``O(n)`` memory); a product of circulants on the same group has the product of
their eigenvalue vectors. Other graphs use ARPACK (``eigsh`` on the symmetric ``W - J``, ``svds``
otherwise) through a LinearOperator; a dense matrix is only formed for ``n <= 512``.
"""

from __future__ import annotations

import numpy as np
import scipy.fft
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from simcomm._errors import UserError
from simcomm.topology._graphs import Topology
from simcomm.topology._mixing import is_doubly_stochastic, max_degree, sparse_matrix

__all__ = ["rho", "spectral_gap", "product_deviation", "deviation_after", "rate_per_step", "circulant_eigenvalues",
           "describe"]

# Below this size the spectrum of a non-circulant W is computed densely (exact LAPACK).
_DENSE_SPECTRUM = 512


def _first_row(topo: Topology) -> np.ndarray:
    c = np.zeros(topo.shape)
    c[tuple(topo.offsets.T)] = topo.weights
    return c


def circulant_eigenvalues(topology: Topology, k: int = 0) -> np.ndarray:
    r"""Eigenvalues :math:`\lambda_m = \sum_h w_h\, \omega^{m \cdot h}` of a circulant ``W^(k)``.

    Shape ``topology.shape``; ``lam[m]`` belongs to the Fourier mode ``m`` (multi-index for a torus
    or hypercube); ``lam[0] = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring, circulant_eigenvalues
    >>> lam = circulant_eigenvalues(ring(6))
    >>> bool(np.allclose(lam, (1 + 2 * np.cos(2 * np.pi * np.arange(6) / 6)) / 3))
    True
    """
    layer = topology.layer(k)
    if layer.kind != "circulant":
        raise UserError(f"'{layer.name}' is not circulant; use rho() for its spectrum")
    # fftn gives sum_h w_h omega^{-m.h} = lambda_{-m}; the conjugate puts lambda_m at index m
    return np.conj(scipy.fft.fftn(_first_row(layer)))


def _max_nonzero_mode(lam_half: np.ndarray) -> float:
    mag = np.abs(lam_half)
    mag.flat[0] = 0.0  # the consensus mode m = 0 (eigenvalue 1) is removed by J
    return float(mag.max())


def _rho_circulant(layer: Topology) -> float:
    # real first row: rfftn holds every |lambda_m| (the rest are conjugates)
    return _max_nonzero_mode(scipy.fft.rfftn(_first_row(layer)))


def _rho_matrix(W, symmetric: bool | None = None) -> float:
    n = W.shape[0]
    if symmetric is None:
        symmetric = ((sp.csr_array(W) - sp.csr_array(W).T).count_nonzero() == 0 if sp.issparse(W)
                     else bool(np.array_equal(W, W.T)))
    if n <= _DENSE_SPECTRUM:
        D = (W.toarray() if sp.issparse(W) else np.asarray(W, dtype=np.float64)) - 1.0 / n
        if symmetric:
            return float(np.abs(np.linalg.eigvalsh(D)).max())
        return float(np.linalg.norm(D, 2))
    W = sp.csr_array(W)
    WT = W.T.tocsr()
    op = spla.LinearOperator(
        (n, n),
        matvec=lambda x: W @ x - x.mean(axis=0),
        rmatvec=lambda x: WT @ x - x.mean(axis=0),
        dtype=np.float64,
    )
    v0 = np.random.default_rng(0).standard_normal(n)  # fixed start: reproducible ARPACK
    ncv = min(n - 1, 64)
    if symmetric:
        vals = spla.eigsh(op, k=1, which="LM", v0=v0, ncv=ncv, maxiter=50 * n, return_eigenvectors=False)
        return float(np.abs(vals).max())
    s = spla.svds(op, k=1, v0=v0, ncv=ncv, maxiter=50 * n, return_singular_vectors=False)
    return float(s.max())


def rho(W, k: int | None = None) -> float:
    r""":math:`\rho = \|W - J\|_2`, :math:`J = \mathbf{1}\mathbf{1}^\top/n` (the quantity the paper bounds).

    Parameters
    ----------
    W : Topology, ndarray or scipy.sparse matrix
        A topology or a doubly stochastic matrix.
    k : int, optional
        For a time-varying topology, the layer ``W^(k)``; by default the largest per-step value over
        one period.

    Returns
    -------
    float
        In ``[0, 1]`` for doubly stochastic ``W``; ``1`` means no contraction (disconnected).

    Examples
    --------
    >>> from simcomm.topology import exponential, rho
    >>> round(rho(exponential(10**6)), 12) == round(1 - 2 / (1 + 20), 12)   # n even: equality, C1
    True
    """
    if isinstance(W, Topology):
        if W.time_varying:
            layers = W.layers if k is None else (W.layer(k),)
            return max(rho(t) for t in layers)
        if W.kind == "circulant":
            return _rho_circulant(W)
        return _rho_matrix(W.matrix, symmetric=not W.directed)
    if isinstance(W, str):
        raise UserError(f"rho needs a Topology or a mixing matrix, got the string {W!r}; build the topology "
                        f"first, e.g. rho(simcomm.topology.build({W!r}, n=16))")
    if not sp.issparse(W):
        try:
            W = np.asarray(W, dtype=np.float64)
        except (TypeError, ValueError):
            raise UserError(f"rho needs a Topology or a square matrix of numbers, got {type(W).__name__}") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise UserError(f"rho needs a square matrix, got shape {W.shape}")
    return _rho_matrix(W)


def spectral_gap(W, k: int | None = None) -> float:
    r"""Spectral gap :math:`1 - \rho`, with :math:`\rho = \|W - J\|_2` (see :func:`rho`).

    Examples
    --------
    >>> import numpy as np
    >>> from simcomm.topology import ring, spectral_gap
    >>> bool(np.isclose(spectral_gap(ring(8)), (2 - np.sqrt(2)) / 3))
    True
    """
    return 1.0 - rho(W, k)


def product_deviation(topology: Topology, k0: int = 0) -> float:
    r"""One-period deviation :math:`\|W^{(k_0+\tau-1)} \cdots W^{(k_0)} - J\|_2` (:math:`\tau` = period).

    For a static topology (period 1) this is :func:`rho`. Circulant layers on one group commute, so
    the product's eigenvalues are the products of the layers' eigenvalues (FFT, ``O(n log n)``) and
    the value does not depend on ``k0``; other layers are applied as a LinearOperator (ARPACK).

    Examples
    --------
    >>> from simcomm.topology import one_peer_exponential, product_deviation
    >>> product_deviation(one_peer_exponential(1024)) < 1e-12    # exact averaging, papers C2
    True
    >>> round(product_deviation(one_peer_exponential(7)), 12)    # 2^-tau for n = 2^tau - 1
    0.125
    """
    if not topology.time_varying:
        return rho(topology)
    layers = [topology.layer(k0 + j) for j in range(topology.period)]
    if all(t.kind == "circulant" and t.shape == layers[0].shape for t in layers):
        lam = np.ones(scipy.fft.rfftn(np.zeros(layers[0].shape)).shape, dtype=complex)
        for t in layers:
            lam *= scipy.fft.rfftn(_first_row(t))
        return _max_nonzero_mode(lam)
    mats = [sparse_matrix(t) for t in layers]
    n = topology.n

    def matvec(x):
        for M in mats:
            x = M @ x
        return x - x.mean(axis=0)

    def rmatvec(x):
        for M in reversed(mats):
            x = M.T @ x
        return x - x.mean(axis=0)

    if n <= _DENSE_SPECTRUM:
        return float(np.linalg.norm(matvec(np.eye(n)), 2))
    op = spla.LinearOperator((n, n), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(n)
    try:
        s = spla.svds(op, k=1, v0=v0, ncv=min(n - 1, 64), maxiter=50 * n, return_singular_vectors=False)
    except spla.ArpackError:
        # ARPACK stops when the operator maps its start vector to exactly 0, which happens for an
        # exact product (P = J to the last bit, e.g. the Base-(k+1) graph): power iteration instead
        return _power_norm(matvec, rmatvec, v0)
    return float(s.max())


def deviation_after(topology: Topology, steps: int, k0: int = 0) -> float:
    r"""Worst-case consensus error after ``steps`` gossip steps: :math:`\|W^{(k_0+T-1)} \cdots W^{(k_0)} - J\|_2`.

    For doubly stochastic mixing, :math:`\|x_T - \mathbf 1\bar x\| \le` this value times
    :math:`\|x_0 - \mathbf 1\bar x\|`, with equality for the worst start; any topology, static or
    time-varying (``T`` need not be a multiple of the period). Circulant layers on one group: the
    product of their DFT eigenvalues (``O(n log n)`` per distinct layer); otherwise the product of one
    period is formed densely for ``n <= 512`` and raised to the number of whole periods, or applied
    as a LinearOperator (ARPACK) above.

    Examples
    --------
    >>> from simcomm.topology import deviation_after, exponential, one_peer_exponential, rho
    >>> round(deviation_after(exponential(16), 3), 12) == round(rho(exponential(16)) ** 3, 12)   # normal W
    True
    >>> deviation_after(one_peer_exponential(16), 4) < 1e-12     # exact average after one period
    True
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise UserError(f"deviation_after: steps = {steps!r} is not allowed; pass an integer number of steps >= 0")
    steps, period = int(steps), topology.period or 1
    if steps == 0:
        return 1.0  # ||I - J||_2
    layers = [topology.layer(k0 + j) for j in range(min(steps, period))]
    full, rem = divmod(steps, period)
    if all(t.kind == "circulant" and t.shape == layers[0].shape for t in layers):
        lams = [scipy.fft.rfftn(_first_row(t)) for t in layers]
        lam = np.ones(lams[0].shape, dtype=complex)
        for j, lj in enumerate(lams):  # layers on one group commute: the order does not matter
            lam *= lj ** (full + (1 if j < rem else 0))
        return _max_nonzero_mode(lam)
    n = topology.n
    mats = [sparse_matrix(t) for t in layers]
    if n <= _DENSE_SPECTRUM:
        def product(ms):
            P = np.eye(n)
            for M in ms:
                P = M @ P
            return P

        P = np.linalg.matrix_power(product(mats), full) if full else np.eye(n)
        P = product(mats[:rem]) @ P
        return float(np.linalg.norm(P - 1.0 / n, 2))
    sequence = [mats[j % len(mats)] for j in range(steps)]

    def matvec(x):
        for M in sequence:
            x = M @ x
        return x - x.mean(axis=0)

    def rmatvec(x):
        for M in reversed(sequence):
            x = M.T @ x
        return x - x.mean(axis=0)

    op = spla.LinearOperator((n, n), matvec=matvec, rmatvec=rmatvec, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(n)
    try:
        sv = spla.svds(op, k=1, v0=v0, ncv=min(n - 1, 64), maxiter=50 * n, return_singular_vectors=False)
    except spla.ArpackError:
        return _power_norm(matvec, rmatvec, v0)  # the product maps the start to exactly 0 (exact averaging)
    return float(sv.max())


def rate_per_step(topology: Topology) -> float:
    r"""Contraction per step: :math:`\rho` (static), or the period-th root of the one-period product deviation.

    For a time-varying topology of period :math:`\tau` the rate is
    :math:`\|W^{(\tau-1)} \cdots W^{(0)} - J\|_2^{1/\tau}` (0 for an exact sequence).

    A time-varying layer alone may not contract at all (a one-peer layer has :math:`\rho = 1`); its
    rate is what a period achieves, spread over the period's steps.

    Examples
    --------
    >>> from simcomm.topology import one_peer_exponential, rate_per_step
    >>> round(rate_per_step(one_peer_exponential(7)), 12)    # (2^-3)^(1/3)
    0.5
    """
    if not topology.time_varying:
        r = rho(topology)
        return 1.0 if 1.0 < r <= 1.0 + 1e-12 else r  # above 1 by rounding only
    dev = product_deviation(topology)
    return float(dev ** (1.0 / topology.period)) if dev > 1e-12 else 0.0


def _power_norm(matvec, rmatvec, v, iters: int = 100) -> float:
    """||A||_2 by power iteration on A^T A (0 if A maps the start vector to exactly 0)."""
    est = 0.0
    for _ in range(iters):
        nv = np.linalg.norm(v)
        if nv == 0.0:
            return 0.0
        v = v / nv
        u = matvec(v)
        est_new = float(np.linalg.norm(u))
        if est_new == 0.0:
            return 0.0
        v = rmatvec(u)
        if abs(est_new - est) <= 1e-12 * est_new:
            return est_new
        est = est_new
    return est


def describe(topology: Topology) -> dict:
    r"""Summary used by ``simcomm topology``: plain Python values, JSON-ready.

    Keys: ``name, n, max_degree, rho, spectral_gap, doubly_stochastic, stochasticity, period,
    product_deviation`` (the last two ``None`` for a static topology), ``rate_per_step,
    spectral_gap_per_step``. For a time-varying topology ``rho`` is the largest per-step value over one
    period (a one-peer layer alone does not contract: 1), ``product_deviation`` the rho of the product
    over one period and ``rate_per_step`` its period-th root (:func:`rate_per_step`); for a static one
    the rate is rho. Gaps are never negative (rho above 1 by rounding is 1).

    Examples
    --------
    >>> from simcomm.topology import describe, one_peer_exponential
    >>> d = describe(one_peer_exponential(16))
    >>> d["period"], d["max_degree"], d["product_deviation"] < 1e-12
    (4, 1, True)
    """
    r = rho(topology)
    if 1.0 < r <= 1.0 + 1e-12:  # ||W - J||_2 <= 1 for doubly stochastic W: above 1 by rounding only
        r = 1.0
    dev = float(product_deviation(topology)) if topology.time_varying else None
    rate = rate_per_step(topology) if topology.time_varying else r
    return {
        "name": topology.name,
        "n": int(topology.n),
        "max_degree": int(max_degree(topology)),
        "rho": float(r),
        "spectral_gap": float(max(0.0, 1.0 - r)),
        "doubly_stochastic": bool(is_doubly_stochastic(topology, atol=1e-10)),
        "stochasticity": topology.stochasticity,
        "period": topology.period,
        "product_deviation": dev,
        "rate_per_step": float(rate),
        "spectral_gap_per_step": float(max(0.0, 1.0 - rate)),
    }
