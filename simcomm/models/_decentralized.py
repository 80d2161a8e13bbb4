r"""Problems for decentralized SGD: node-specific data, known constants, vectorised over nodes.

Node ``i`` of ``n`` holds its own data and its own objective :math:`f_i`; the network minimises
:math:`f = \frac1n \sum_i f_i` (papers/exponential_graph.md (a)). Every function here takes one
iterate per node, an ``(n, d)`` array, and returns the ``n`` local gradients at once (batched BLAS
calls, one per node, so node ``i``'s gradient is computed by the same call whether the other nodes
are there or not: a real process holding one node reproduces it bit for bit).

* :func:`heterogeneous_least_squares`: :math:`f_i(x) = \frac1{2m}\|A_i x - y_i\|^2` with Gaussian
  :math:`A_i`, and :math:`y_i = A_i (x_\star^{0} + s\,u_i)` where the node offsets :math:`u_i` sum to
  zero and :math:`s` is set so that the heterogeneity at the optimum is EXACTLY ``b``:
  :math:`b^2 = \frac1n \sum_i \|\nabla f_i(x^\star)\|^2`. ``b = 0`` puts every local minimiser at
  the same point; ``shared=True`` also gives every node the same :math:`A_i` (identical
  :math:`f_i`). :math:`x^\star`, :math:`f^\star`, :math:`L`, :math:`\mu` are exact (linear algebra).
* :func:`logistic_problem`: multinomial logistic regression (softmax cross-entropy plus
  :math:`\frac{\lambda}{2}\|x\|^2`) on a synthetic Gaussian mixture or on scikit-learn's digits
  (loaded by :func:`simcomm.models.load_dataset`), split across nodes iid or label-sorted
  (:func:`simcomm.models.split_workers`); :math:`f^\star` by L-BFGS to a gradient norm below
  ``1e-9``, :math:`L \le \frac12 \max_i \lambda_{\max}(A_i^\top A_i/m) + \lambda` (the softmax
  Hessian is at most :math:`\frac12 I` in the logits), :math:`\mu \ge \lambda`.
* :func:`diagonal_quadratic`: :math:`f_i(x) = \frac12\sum_j h_j (x_j - c_{ij})^2`, an O(d) oracle
  (no data matrix), so runs at ``n = 256``, ``d = 10^6`` fit in memory; heterogeneity exactly ``b``
  and every constant in closed form.

Every function that touches the state works in the array namespace of its argument
(``xp = array_namespace(X)``: numpy, or cupy for device arrays) with the same operations in the
same order, so numpy results do not depend on this; :func:`problem_to` moves a problem's data to a
namespace once, before a run.

Stochastic gradients add Gaussian noise of a chosen ``sigma`` per coordinate (drawn by the optimiser
from each node's own stream, see :mod:`simcomm.optim`), so :math:`E\|g_i - \nabla f_i\|^2 = \sigma^2 d`.
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import numpy as np

from simcomm._errors import UserError, closest
from simcomm._validate import integer, real
from simcomm.backends import array_namespace
from simcomm.models._ops import log_softmax_and_softmax

__all__ = [
    "NodeProblem",
    "heterogeneous_least_squares",
    "diagonal_quadratic",
    "logistic_problem",
    "node_gradients",
    "global_loss",
    "global_gradient",
    "global_gradients",
    "suboptimality",
    "heterogeneity",
    "NODE_PROBLEMS",
    "make_node_problem",
    "problem_to",
    "node_slice",
    "NodeOracle",
    "ORACLES",
]



class NodeProblem(NamedTuple):
    r"""A decentralized problem: per-node data stacked on a leading node axis, and its constants.

    Attributes
    ----------
    kind : {"least_squares", "logistic", "diagonal"}
    A : ndarray, shape (n, m, p), or None
        Features of each node's ``m`` examples (``None`` for ``"diagonal"``, which has no data matrix).
    y : ndarray, shape (n, m), or None
        Targets (least squares) or integer labels stored as float (logistic); ``None`` for
        ``"diagonal"``.
    n_classes : int
        Classes (logistic); 0 for least squares. The parameter is ``x = W.ravel()``, ``W`` of shape
        ``(p, n_classes)``, so ``d = p * n_classes``.
    l2 : float
        Ridge penalty :math:`\lambda` (logistic).
    L : float
        Every :math:`f_i` is ``L``-smooth.
    mu : float
        :math:`f` is ``mu``-strongly convex.
    x_star : ndarray, shape (d,)
        Minimiser of :math:`f`.
    f_star : float
        :math:`f(x^\star)`.
    b : float
        Heterogeneity at the optimum, :math:`\sqrt{\frac1n\sum_i\|\nabla f_i(x^\star)\|^2}`.
    x0 : ndarray, shape (d,)
        Common starting point.
    H : ndarray, shape (p, p) or None
        Least squares: Hessian :math:`\frac1n\sum_i A_i^\top A_i/m` of :math:`f` (exact suboptimality).
    name : str
        ``"least_squares"``, ``"logistic"``, ``"diagonal"`` or the data set name.
    h : ndarray, shape (d,), or None
        Diagonal problem: the curvatures :math:`h_j` (the Hessian of every :math:`f_i` is
        :math:`\mathrm{diag}(h)`); ``None`` otherwise.
    centers : ndarray, shape (n, d), or None
        Diagonal problem: node ``i``'s minimiser :math:`c_i`; ``None`` otherwise.
    """

    kind: str
    A: np.ndarray
    y: np.ndarray
    n_classes: int
    l2: float
    L: float
    mu: float
    x_star: np.ndarray
    f_star: float
    b: float
    x0: np.ndarray
    H: np.ndarray | None
    name: str
    h: np.ndarray | None = None
    centers: np.ndarray | None = None

    @property
    def oracle(self) -> "NodeOracle":
        """The gradient oracle of this problem's family (:data:`ORACLES` ``[kind]``)."""
        return ORACLES[self.kind]

    @property
    def n(self) -> int:
        """Number of nodes."""
        return self.oracle.n(self)

    @property
    def d(self) -> int:
        """Parameter dimension."""
        return self.oracle.d(self)

    def node_gradients(self, X, out=None):
        r"""Local gradients :math:`\nabla f_i(x_i)` at one iterate per node (:func:`node_gradients`)."""
        return node_gradients(self, X, out)

    def global_gradient(self, x):
        r""":math:`\nabla f(x)` at one point (:func:`global_gradient`)."""
        return global_gradient(self, x)

    def global_gradients(self, X):
        r""":math:`\nabla f(x_j)` at every row of ``X`` (:func:`global_gradients`)."""
        return global_gradients(self, X)

    def value(self, x) -> float:
        r""":math:`f(x)` (:func:`global_loss`)."""
        return global_loss(self, x)

    def suboptimality(self, x) -> float:
        r""":math:`f(x) - f^\star` (:func:`suboptimality`)."""
        return suboptimality(self, x)


#: fields of NodeProblem holding one entry per node (sliced by :func:`node_slice`)
_PER_NODE = ("A", "y", "centers")
#: fields of NodeProblem that are arrays (moved by :func:`problem_to`)
_ARRAYS = ("A", "y", "x_star", "x0", "H", "h", "centers")


def problem_to(problem: NodeProblem, xp) -> NodeProblem:
    """The problem with its arrays in the namespace ``xp`` (one copy to a device; numpy: unchanged).

    Examples
    --------
    >>> import numpy as np
    >>> prob = heterogeneous_least_squares(4, 3, rng=0)
    >>> problem_to(prob, np) is prob
    True
    """
    if xp is np:
        from simcomm.backends import to_host

        if all(getattr(problem, f) is None or isinstance(getattr(problem, f), np.ndarray) for f in _ARRAYS):
            return problem
        return problem._replace(**{f: to_host(getattr(problem, f)) for f in _ARRAYS if getattr(problem, f) is not None})
    return problem._replace(**{f: xp.asarray(getattr(problem, f)) for f in _ARRAYS if getattr(problem, f) is not None})


def node_slice(problem: NodeProblem, start: int, stop: int) -> NodeProblem:
    """The problem restricted to nodes ``start .. stop - 1`` (what a process holding them sees).

    Per-node data are sliced; the constants of the whole problem (``x_star``, ``L``, ...) are kept.

    Examples
    --------
    >>> prob = heterogeneous_least_squares(4, 3, rng=0)
    >>> node_slice(prob, 1, 2).n
    1
    """
    return problem._replace(**{f: getattr(problem, f)[start:stop] for f in _PER_NODE
                               if getattr(problem, f) is not None})


# --------------------------------------------------------------------------- gradient oracles
#
# One oracle per problem family, registered by its ``kind``: the functions below (and the NodeProblem
# methods) look the family up once and call the same method for every kind, so adding a family is
# one class here and one constructor, never another branch in seven functions. Each method runs the
# operations its family always ran, in the same order, so results are bit for bit what they were.


def _ls_grad(A, y, X, xp):
    # r_i = A_i x_i - y_i ; g_i = A_i^T r_i / m   (one gemv per node, batched)
    m = A.shape[1]
    r = xp.matmul(A, X[:, :, None])[:, :, 0] - y
    return xp.matmul(A.transpose(0, 2, 1), r[:, :, None])[:, :, 0] / m


def _softmax_parts(A, y, X, C, xp):
    """Log-probabilities and probabilities of every node's examples, each ``(n, m, C)``."""
    n, m, p = A.shape
    Z = xp.matmul(A, X.reshape(n, p, C))  # (n, m, C) logits
    return log_softmax_and_softmax(Z, axis=2)


def _onehot(y, C, xp):
    return (y[:, :, None] == xp.arange(C)[None, None, :]).astype(xp.float64)


def _lr_grad(A, y, X, C, l2, xp):
    n, m, p = A.shape
    _, P = _softmax_parts(A, y, X, C, xp)
    P -= _onehot(y, C, xp)
    G = xp.matmul(A.transpose(0, 2, 1), P) / m  # (n, p, C)
    return G.reshape(n, p * C) + l2 * X


class NodeOracle(abc.ABC):
    r"""The gradient oracle of a family of node problems (data matrices ``A``, ``y``: the default).

    Every method takes the :class:`NodeProblem` and arrays already in one namespace ``xp``. A family
    overrides what it computes differently; the defaults are the generic ones (node gradients and
    losses from :meth:`local_gradients`/:meth:`node_losses`, global quantities as node means).
    """

    def n(self, p) -> int:
        """Number of nodes."""
        return p.A.shape[0]

    def d(self, p) -> int:
        """Parameter dimension."""
        return p.A.shape[2] * max(p.n_classes, 1)

    @abc.abstractmethod
    def local_gradients(self, p, X, xp):
        r""":math:`\nabla f_i(x_i)`, ``(n, d)``, in a new array."""

    def node_gradients(self, p, X, out, xp):
        """:meth:`local_gradients`, written into ``out`` when given."""
        G = self.local_gradients(p, X, xp)
        if out is None:
            return G
        out[...] = G
        return out

    @abc.abstractmethod
    def node_losses(self, p, X, xp):
        r""":math:`f_i(x_i)` for every node, ``(n,)``."""

    def global_gradient(self, p, x, xp):
        r""":math:`\nabla f(x)` at one point: the mean of the node gradients there."""
        return self.node_gradients(p, xp.broadcast_to(x, (p.n, p.d)).copy(), None, xp).mean(axis=0)

    def global_gradients(self, p, X, xp):
        r""":math:`\nabla f(x_j)` at every row of ``X``."""
        return xp.stack([self.global_gradient(p, X[j], xp) for j in range(X.shape[0])])

    def suboptimality(self, p, x, xp) -> float:
        r""":math:`f(x) - f^\star` from the losses."""
        return global_loss(p, x) - p.f_star


class _LeastSquares(NodeOracle):
    def local_gradients(self, p, X, xp):
        return _ls_grad(p.A, p.y, X, xp)

    def node_losses(self, p, X, xp):
        r = xp.matmul(p.A, X[:, :, None])[:, :, 0] - p.y
        return 0.5 * xp.mean(r * r, axis=1)

    def global_gradient(self, p, x, xp):
        if p.H is None:
            return super().global_gradient(p, x, xp)
        # grad f(x) = H (x - x*): exact, O(p^2), no cancellation near the optimum
        return p.H @ (x - p.x_star)

    def global_gradients(self, p, X, xp):
        if p.H is None:
            return super().global_gradients(p, X, xp)
        return (X - p.x_star) @ p.H

    def suboptimality(self, p, x, xp) -> float:
        if p.H is None:
            return super().suboptimality(p, x, xp)
        e = x - p.x_star
        return float(0.5 * e @ p.H @ e)


class _Logistic(NodeOracle):
    def local_gradients(self, p, X, xp):
        return _lr_grad(p.A, p.y, X, p.n_classes, p.l2, xp)

    def node_losses(self, p, X, xp):
        logp, _ = _softmax_parts(p.A, p.y, X, p.n_classes, xp)
        ce = -xp.sum(logp * _onehot(p.y, p.n_classes, xp), axis=2).mean(axis=1)
        return ce + 0.5 * p.l2 * xp.sum(X * X, axis=1)

    def global_gradients(self, p, X, xp):
        # every example of every node at every row of X: one batched softmax
        n, m, q = p.A.shape
        C = p.n_classes
        A = p.A.reshape(n * m, q)
        y = p.y.reshape(1, n * m)
        Z = xp.matmul(A[None], X.reshape(-1, q, C))  # (points, N, C)
        Z -= Z.max(axis=2, keepdims=True)
        P = xp.exp(Z)
        P /= P.sum(axis=2, keepdims=True)
        P -= _onehot(xp.broadcast_to(y, (X.shape[0], n * m)), C, xp)
        G = xp.matmul(A.T[None], P) / (n * m)
        return G.reshape(X.shape[0], q * C) + p.l2 * X


class _Diagonal(NodeOracle):
    def n(self, p) -> int:
        return p.centers.shape[0]

    def d(self, p) -> int:
        return p.centers.shape[1]

    def node_gradients(self, p, X, out, xp):
        # grad f_i(x_i) = h * (x_i - c_i): one pass, written straight into out
        G = xp.subtract(X, p.centers, out=out)
        G *= p.h
        return G

    def local_gradients(self, p, X, xp):
        return self.node_gradients(p, X, None, xp)

    def node_losses(self, p, X, xp):
        D = X - p.centers
        return 0.5 * xp.sum(p.h * D * D, axis=1)

    def global_gradient(self, p, x, xp):
        return p.h * (x - p.x_star)  # mean_i c_i = x*: exact, O(d)

    def global_gradients(self, p, X, xp):
        return (X - p.x_star) * p.h

    def suboptimality(self, p, x, xp) -> float:
        e = x - p.x_star
        return float(0.5 * ((p.h * e) @ e))  # 1/2 sum_j h_j (x_j - x*_j)^2


#: The oracle of each problem family, by ``NodeProblem.kind``.
ORACLES = {"least_squares": _LeastSquares(), "logistic": _Logistic(), "diagonal": _Diagonal()}


def node_gradients(problem: NodeProblem, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    r"""Exact local gradients :math:`\nabla f_i(x_i)` for every node, one iterate per row.

    Parameters
    ----------
    problem : NodeProblem
        With its arrays in the namespace of ``X`` (:func:`problem_to`).
    X : ndarray, shape (n, d)
        Numpy, or a CuPy array for a problem on the device.
    out : ndarray, shape (n, d), optional
        Receives the gradients (the diagonal problem then allocates nothing); must not alias ``X``.

    Returns
    -------
    ndarray, shape (n, d)
        ``out`` if given.

    Examples
    --------
    >>> import numpy as np
    >>> prob = heterogeneous_least_squares(4, 3, b=0.0, rng=0)
    >>> G = node_gradients(prob, np.tile(prob.x_star, (4, 1)))
    >>> bool(np.abs(G).max() < 1e-12)   # b = 0: every f_i is minimised at x*
    True
    """
    xp = array_namespace(X)
    X = xp.asarray(X, dtype=xp.float64)
    if X.shape != (problem.n, problem.d):
        raise UserError(f"X must have shape (n, d) = ({problem.n}, {problem.d}), got {X.shape}")
    return problem.oracle.node_gradients(problem, X, out, xp)


def _node_losses(problem: NodeProblem, X: np.ndarray) -> np.ndarray:
    return problem.oracle.node_losses(problem, X, array_namespace(X))


def global_loss(problem: NodeProblem, x: np.ndarray) -> float:
    r""":math:`f(x) = \frac1n\sum_i f_i(x)` at one point ``x`` of shape ``(d,)``.

    Examples
    --------
    >>> prob = heterogeneous_least_squares(4, 3, b=0.0, rng=0)
    >>> abs(global_loss(prob, prob.x_star)) < 1e-20
    True
    """
    xp = array_namespace(x)
    x = xp.asarray(x, dtype=xp.float64)
    return float(xp.mean(_node_losses(problem, xp.broadcast_to(x, (problem.n, problem.d)).copy())))


def global_gradient(problem: NodeProblem, x: np.ndarray) -> np.ndarray:
    r""":math:`\nabla f(x) = \frac1n\sum_i \nabla f_i(x)` at one point ``x`` of shape ``(d,)``.

    Examples
    --------
    >>> import numpy as np
    >>> prob = heterogeneous_least_squares(4, 3, b=1.0, rng=0)
    >>> bool(np.linalg.norm(global_gradient(prob, prob.x_star)) < 1e-12)
    True
    """
    xp = array_namespace(x)
    x = xp.asarray(x, dtype=xp.float64)
    return problem.oracle.global_gradient(problem, x, xp)


def global_gradients(problem: NodeProblem, X: np.ndarray) -> np.ndarray:
    r""":math:`\nabla f(x_i)` of the GLOBAL objective at every node's own iterate (rows of ``X``).

    ``mean_i ||grad f(x_i)||^2`` measures the models the nodes actually hold; for least squares it
    equals :math:`\|\nabla f(\bar x)\|^2 + \frac1n\sum_i\|H(x_i-\bar x)\|^2` (consensus enters directly).

    Examples
    --------
    >>> import numpy as np
    >>> prob = heterogeneous_least_squares(4, 3, b=1.0, rng=0)
    >>> bool(np.abs(global_gradients(prob, np.tile(prob.x_star, (4, 1)))).max() < 1e-12)
    True
    """
    xp = array_namespace(X)
    X = xp.asarray(X, dtype=xp.float64)
    return problem.oracle.global_gradients(problem, X, xp)


def suboptimality(problem: NodeProblem, x: np.ndarray) -> float:
    r""":math:`f(x) - f^\star` (exact for least squares, :math:`\frac12 (x-x^\star)^\top H (x-x^\star)`, and diagonal).

    Examples
    --------
    >>> import numpy as np
    >>> prob = heterogeneous_least_squares(4, 3, b=1.0, rng=0)
    >>> suboptimality(prob, prob.x_star)
    0.0
    """
    xp = array_namespace(x)
    x = xp.asarray(x, dtype=xp.float64)
    return problem.oracle.suboptimality(problem, x, xp)


def heterogeneity(problem: NodeProblem, x: np.ndarray | None = None) -> float:
    r""":math:`\sqrt{\frac1n\sum_i \|\nabla f_i(x) - \nabla f(x)\|^2}` at ``x`` (default :math:`x^\star`).

    Examples
    --------
    >>> prob = heterogeneous_least_squares(8, 5, b=0.7, rng=1)
    >>> round(heterogeneity(prob), 12)
    0.7
    """
    xp = array_namespace(problem.x_star if x is None else x)
    x = problem.x_star if x is None else xp.asarray(x, dtype=xp.float64)
    G = node_gradients(problem, xp.broadcast_to(x, (problem.n, problem.d)).copy())
    G = G - G.mean(axis=0)
    return float(xp.sqrt(xp.mean(xp.sum(G * G, axis=1))))


# --------------------------------------------------------------------------- constructors


def heterogeneous_least_squares(n: int, d: int, *, m: int | None = None, b: float = 1.0, shared: bool = False,
                                rng=None) -> NodeProblem:
    r"""Least squares with node-specific data and heterogeneity exactly ``b`` at the optimum.

    :math:`f_i(x) = \frac{1}{2m}\|A_i x - y_i\|^2`, :math:`A_i` with i.i.d. :math:`N(0, 1)` entries,
    :math:`y_i = A_i(x^0 + s\,u_i)`, :math:`u_i` Gaussian and centred over nodes, :math:`s \ge 0`
    chosen so that :math:`\frac1n\sum_i\|\nabla f_i(x^\star)\|^2 = b^2` (it is linear in ``s``).

    Parameters
    ----------
    n : int
        Nodes, ``>= 1``.
    d : int
        Dimension, ``>= 1``.
    m : int, optional
        Examples per node (default ``2 d``, so every :math:`f_i` is strongly convex).
    b : float
        Heterogeneity at the optimum, ``>= 0``.
    shared : bool
        Give every node the same :math:`A_i` (with ``b = 0``: identical :math:`f_i`).
    rng : numpy.random.Generator or seed

    Returns
    -------
    NodeProblem

    Examples
    --------
    >>> prob = heterogeneous_least_squares(8, 5, b=0.5, rng=0)
    >>> prob.A.shape, round(prob.b, 12), prob.mu <= prob.L
    ((8, 10, 5), 0.5, True)
    """
    n = integer(n, "n", low=1)
    d = integer(d, "d", low=1)
    m = 2 * d if m is None else integer(m, "m (examples per node)", low=1)
    b = real(b, "heterogeneity b", low=0.0)
    rng = np.random.default_rng(rng)
    A = np.broadcast_to(rng.standard_normal((1, m, d)), (n, m, d)).copy() if shared else rng.standard_normal((n, m, d))
    x0 = rng.standard_normal(d)
    U = rng.standard_normal((n, d))
    U -= U.mean(axis=0)
    Hs = np.matmul(A.transpose(0, 2, 1), A) / m  # (n, d, d)
    H = Hs.mean(axis=0)
    evals = np.linalg.eigvalsh(H)
    if evals[0] <= 1e-10 * evals[-1]:
        raise UserError(f"f is not strongly convex with n*m = {n * m} examples in d = {d}; "
                        "use more examples per node (m)")
    # y_i = A_i (x0 + s u_i): x*(s) = x0 + s H^{-1} mean_i(H_i u_i), grad f_i(x*) = s H_i (H^{-1} c - u_i)
    c = np.einsum("nij,nj->i", Hs, U) / n
    v = np.linalg.solve(H, c)
    grads1 = np.einsum("nij,nj->ni", Hs, v[None, :] - U)
    b1 = float(np.sqrt(np.mean(np.sum(grads1 * grads1, axis=1))))
    s = 0.0 if (b == 0 or b1 == 0) else float(b) / b1
    if b > 0 and b1 == 0:
        raise UserError("heterogeneity b > 0 is impossible with identical nodes; use shared=False or n >= 2")
    y = np.matmul(A, (x0[None, :] + s * U)[:, :, None])[:, :, 0]
    x_star = x0 + s * v
    L = float(max(np.linalg.eigvalsh(Hs[i])[-1] for i in range(n)))
    prob = NodeProblem(kind="least_squares", A=A, y=y, n_classes=0, l2=0.0, L=L, mu=float(evals[0]),
                       x_star=x_star, f_star=0.0, b=0.0, x0=np.zeros(d), H=H, name="least_squares")
    f_star = global_loss(prob, x_star)
    return prob._replace(f_star=f_star, b=float(s * b1))


def diagonal_quadratic(n: int, d: int, *, b: float = 1.0, mu: float = 0.1, L: float = 1.0, rng=None) -> NodeProblem:
    r"""Separable quadratics with an O(d) gradient oracle and heterogeneity exactly ``b`` at the optimum.

    :math:`f_i(x) = \frac12\sum_j h_j (x_j - c_{ij})^2` with curvatures :math:`h_j` log-spaced from
    ``mu`` to ``L`` and node minimisers :math:`c_i = x^\star + s\,u_i`: :math:`x^\star` and
    :math:`u_i` Gaussian, the :math:`u_i` centred over nodes (:math:`\sum_i u_i = 0`, so
    :math:`\bar c = x^\star` minimises :math:`f = \frac1n\sum_i f_i`). Then
    :math:`\nabla f_i(x^\star) = -s\,h \odot u_i`, so
    :math:`b^2 = \frac1n\sum_i\|\nabla f_i(x^\star)\|^2 = s^2 \frac1n\sum_{i,j} h_j^2 u_{ij}^2`
    fixes :math:`s = b / b_1`, and in closed form :math:`f^\star = \frac{s^2}{2n}\sum_{i,j} h_j
    u_{ij}^2`, :math:`f(x) - f^\star = \frac12\sum_j h_j (x_j - x^\star_j)^2`, every :math:`f_i` is
    ``L``-smooth and :math:`f` is ``mu``-strongly convex (both attained). Memory is one ``(n, d)``
    array of minimisers, so ``n = 256``, ``d = 10^6`` (2 GB) fits where least squares (``m >= d/n``
    examples of dimension ``d`` per node) cannot.

    The Gaussians are counter normals (:func:`simcomm.backends._numpy.noise.add_counter_normals`, step
    0) keyed by ``n + 1`` draws of ``rng``: :math:`x^\star` from the first key, :math:`u_i` from key
    ``i + 1``. So the problem is built by the active backend (:func:`simcomm.backends.use`; default
    ``numba``) where it computes (on the GPU under ``cupy``: nothing crosses from the host), and every
    backend builds the same problem up to the last-ulp differences of its ``log``/``cos``.

    Parameters
    ----------
    n : int
        Nodes, ``>= 1``.
    d : int
        Dimension, ``>= 1``.
    b : float
        Heterogeneity at the optimum, ``>= 0`` (``b > 0`` needs ``n >= 2``).
    mu, L : float
        Smallest and largest curvature, ``0 < mu <= L`` (with ``d = 1`` the one curvature is ``mu``,
        and the problem's ``L`` is ``mu``).
    rng : numpy.random.Generator or seed

    Returns
    -------
    NodeProblem
        ``kind = "diagonal"``, ``h`` and ``centers`` set, ``A = y = H = None``, ``x0 = 0``.

    Examples
    --------
    >>> prob = diagonal_quadratic(8, 5, b=0.5, rng=0)
    >>> prob.centers.shape, round(heterogeneity(prob), 12), (prob.mu, prob.L)
    ((8, 5), 0.5, (0.1, 1.0))
    """
    n = integer(n, "n", low=1)
    d = integer(d, "d", low=1)
    b = real(b, "heterogeneity b", low=0.0)
    ok = all(isinstance(v, (int, float, np.floating)) and np.isfinite(v) for v in (mu, L))
    if not (ok and 0 < mu <= L):
        raise UserError(f"curvatures need 0 < mu <= L (finite), got mu={mu!r}, L={L!r}")
    from simcomm.backends import get_backend, namespace_of_backend

    be = get_backend()
    xp = namespace_of_backend(be)
    rng = np.random.default_rng(rng)
    keys = rng.integers(0, 2**64, size=n + 1, dtype=np.uint64)
    h_host = np.geomspace(float(mu), float(L), d)  # end points exactly mu and L (d = 1: just mu)
    h = h_host if xp is np else xp.asarray(h_host)
    if xp is not np:
        keys = xp.asarray(keys)
    x_star = be.add_counter_normals(xp.zeros((1, d)), keys[:1], 0, 1.0)[0]
    C = be.add_counter_normals(xp.zeros((n, d)), keys[1:], 0, 1.0)
    C -= C.mean(axis=0)  # u_i, centred over nodes
    # sum_i u_ij^2 per coordinate without an (n, d) temporary
    q = xp.einsum("ij,ij->j", C, C)
    b1 = float(xp.sqrt(xp.dot(h * h, q) / n))
    if b > 0 and b1 == 0:
        raise UserError("heterogeneity b > 0 is impossible with one node; use n >= 2 or b = 0")
    s = 0.0 if b == 0 else float(b) / b1
    f_star = 0.5 * s * s * float(xp.dot(h, q)) / n
    C *= s
    C += x_star  # c_i = x* + s u_i, in place (one (n, d) array in all)
    return NodeProblem(kind="diagonal", A=None, y=None, n_classes=0, l2=0.0, L=float(h_host.max()),
                       mu=float(h_host.min()), x_star=x_star, f_star=f_star, b=float(s * b1), x0=xp.zeros(d), H=None,
                       name="diagonal", h=h, centers=C)


def _mixture(n_examples: int, p: int, C: int, sep: float, rng):
    means = sep * rng.standard_normal((C, p)) / np.sqrt(p)
    y = rng.integers(0, C, size=n_examples)
    return means[y] + rng.standard_normal((n_examples, p)), y


def logistic_problem(n: int, *, dataset: str = "synthetic", split: str = "iid", l2: float = 1e-2,
                     n_samples: int = 2000, features: int = 10, n_classes: int = 2, sep: float = 3.0,
                     rng=None) -> NodeProblem:
    r"""Multinomial logistic regression with each node's data from an iid or a label-sorted split.

    Parameters
    ----------
    n : int
        Nodes, ``>= 1``.
    dataset : {"synthetic", "digits"}
        A Gaussian mixture (``n_samples`` points, ``features`` dims, ``n_classes`` classes with mean
        separation ``sep``), or scikit-learn's digits training part (1,438 images, 64 pixels,
        10 classes; needs the ``data`` extra).
    split : {"iid", "label"}
        ``"label"`` sorts by label before cutting, so nodes see few classes (heterogeneous).
    l2 : float
        Ridge penalty :math:`\lambda > 0` (also on the bias): makes :math:`f` strongly convex.
    rng : numpy.random.Generator or seed

    Returns
    -------
    NodeProblem
        Each node keeps ``m = floor(N / n)`` of the ``N`` examples (at most one example per node is dropped
        so the nodes stack into one array); a bias feature 1 is appended.

    Examples
    --------
    >>> prob = logistic_problem(4, n_samples=400, rng=0)
    >>> prob.A.shape, prob.d, prob.f_star > 0
    ((4, 100, 11), 22, True)
    """
    from scipy.optimize import minimize

    from simcomm.models._data import load_dataset, split_workers

    n = integer(n, "n", low=1)
    l2 = real(l2, "l2", low=0.0, low_open=True, hint="it makes the optimum unique and f* well defined")
    rng = np.random.default_rng(rng)
    if dataset == "digits":
        ds = load_dataset("digits", rng=rng)
        Xp, yp, C = ds.X_train, ds.y_train, ds.n_classes
    elif dataset == "synthetic":
        C = integer(n_classes, "n_classes", low=2)
        Xp, yp = _mixture(integer(n_samples, "n_samples", low=2), integer(features, "features", low=1), C, sep, rng)
    else:
        hint = closest(dataset, ("synthetic", "digits"))
        raise UserError(f"unknown dataset '{dataset}'{hint}; use 'synthetic' or 'digits'")
    if n > len(yp):
        raise UserError(f"n = {n} nodes exceeds the {len(yp)} examples of '{dataset}'; use fewer nodes")
    shards = split_workers(yp, n, split=split, rng=rng)
    m = min(len(s) for s in shards)
    idx = np.stack([s[:m] for s in shards])
    Xb = np.concatenate([Xp, np.ones((len(yp), 1))], axis=1)
    A = Xb[idx]  # (n, m, p)
    y = yp[idx].astype(np.float64)
    p = A.shape[2]
    prob = NodeProblem(kind="logistic", A=A, y=y, n_classes=int(C), l2=float(l2), L=0.0, mu=float(l2),
                       x_star=np.zeros(p * C), f_star=0.0, b=0.0, x0=np.zeros(p * C), H=None,
                       name=dataset if dataset != "synthetic" else "logistic")

    def fg(x):
        X = np.broadcast_to(x, (n, p * C)).copy()
        return float(np.mean(_node_losses(prob, X))), node_gradients(prob, X).mean(axis=0)

    res = minimize(fg, np.zeros(p * C), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 5000})
    x_star = res.x
    L = 0.5 * max(float(np.linalg.eigvalsh(A[i].T @ A[i] / m)[-1]) for i in range(n)) + l2
    prob = prob._replace(x_star=x_star, f_star=float(res.fun), L=L)
    return prob._replace(b=heterogeneity(prob))


def make_node_problem(name: str, n: int, *, d: int = 10, b: float = 1.0, split: str = "iid", l2: float = 1e-2,
                      rng=None) -> NodeProblem:
    r"""Build a problem by name (what experiments and ``python -m simcomm.mpi`` call).

    ``"least_squares"`` (dimension ``d``, heterogeneity ``b``), ``"logistic"`` (synthetic mixture in
    ``d`` features, 2 classes, ``split``), ``"digits"`` (real data, ``split``) or ``"diagonal"``
    (:func:`diagonal_quadratic` in dimension ``d``, heterogeneity ``b``, default curvatures, built by
    the active backend: on the device under ``cupy``; the other problems are built on the host).

    Examples
    --------
    >>> make_node_problem("least_squares", 4, d=3, b=0.0, rng=0).d
    3
    """
    build = _NODE_PROBLEMS.get(name)
    if build is None:
        raise UserError(f"unknown problem '{name}'{closest(name, NODE_PROBLEMS)}; "
                        f"choose one of {', '.join(NODE_PROBLEMS)}")
    return build(n, d=d, b=b, split=split, l2=l2, rng=rng)


#: How :func:`make_node_problem` builds each named problem (the names are :data:`NODE_PROBLEMS`).
_NODE_PROBLEMS = {
    "least_squares": lambda n, *, d, b, split, l2, rng: heterogeneous_least_squares(n, d, b=b, rng=rng),
    "logistic": lambda n, *, d, b, split, l2, rng: logistic_problem(n, dataset="synthetic", split=split, l2=l2,
                                                                    features=d, rng=rng),
    "digits": lambda n, *, d, b, split, l2, rng: logistic_problem(n, dataset="digits", split=split, l2=l2, rng=rng),
    "diagonal": lambda n, *, d, b, split, l2, rng: diagonal_quadratic(n, d, b=b, rng=rng),
}
#: Problem names accepted by :func:`make_node_problem`.
NODE_PROBLEMS = tuple(_NODE_PROBLEMS)
