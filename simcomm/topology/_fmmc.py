r"""Fastest-mixing weights: the symmetric doubly stochastic ``W`` on a graph's edges with the smallest rho.

Boyd, Diaconis and Xiao, "Fastest Mixing Markov Chain on a Graph" (SIAM Review 46(4), 2004): among
all symmetric, nonnegative, doubly stochastic ``W`` with :math:`W_{ij} = 0` off the edges of a graph,
minimise :math:`\rho(W) = \|W - J\|_2`. With one weight :math:`w_e \ge 0` per edge,
:math:`W(w) = I - \sum_e w_e (e_i - e_j)(e_i - e_j)^\top`; the problem

.. math:: \min_{w, s} s \quad\text{s.t.}\quad w \ge 0,\ \sum_{e \ni i} w_e \le 1,\
          -sI \preceq W(w) - J \preceq sI

is a semidefinite program (the eigenvalue of ``W - J`` on :math:`\mathbf 1` is 0, so the two linear
matrix inequalities constrain exactly the other eigenvalues). It is convex, so the optimum is global;
Metropolis-Hastings weights are one feasible point, hence never better.

Solvers (both ship with cvxpy, the ``opt`` extra): CLARABEL (interior point, default tolerances
``1e-8`` on the duality gap) for ``n <= 48``, SCS (first-order ADMM, ``eps_abs = eps_rel = 1e-7`` by
default) above: an interior-point method stores dense Hessian blocks of size
:math:`(n(n+1)/2)^2` for each ``n x n`` matrix inequality, which does not fit for ``n`` in the
hundreds, while SCS needs one ``n x n`` eigendecomposition per iteration.

Symmetry (Boyd, Diaconis, Parrilo and Xiao, "Fastest mixing Markov chain on graphs with symmetries",
SIAM J. Optim. 2009): on a circulant topology (a Cayley graph of :math:`\mathbb Z_{s_1}\times\dots`:
ring, torus, hypercube, complete) rho is a convex function invariant under the translations, so
averaging any optimal ``W`` over them gives an optimal ``W`` that is circulant too. Its eigenvalues
:math:`\lambda_m = 1 - \sum_h w_h (1 - \cos 2\pi\langle m, h/s\rangle)` are LINEAR in the
weights, and the SDP becomes the linear program :math:`\min s` s.t. :math:`|\lambda_m(w)| \le s`
(:math:`m \ne 0`), :math:`w \ge 0`, :math:`\sum_h w_h \le 1`, with one weight per pair
:math:`\{h, -h\}` (``method="symmetric"``, the default for circulants; CLARABEL, tolerance
``1e-8``). ``method="sdp"`` forces the general SDP.

The solver's weights are made exactly feasible before ``W`` is built (negatives clipped to 0; a node
whose weights sum above 1 by round-off has its edges scaled down), and the returned :class:`FMMCInfo`
carries the solver's optimal value next to :math:`\rho` of the ``W`` actually returned.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from simcomm._errors import UserError, closest
from simcomm.topology._graphs import Topology
from simcomm.topology._mixing import sparse_matrix

__all__ = ["fastest_mixing", "FMMCInfo", "SOLVERS", "METHODS", "graph_edges"]

#: Solvers accepted by :func:`fastest_mixing` (both ship with cvxpy).
SOLVERS = ("CLARABEL", "SCS")
# Interior point up to this n (measured: ring(64) takes 20 s with CLARABEL, 4 s with SCS).
_CLARABEL_MAX_N = 48
_SCS_EPS = 1e-7


@dataclass(frozen=True)
class FMMCInfo:
    """What the SDP solver reported for :func:`fastest_mixing`.

    Attributes
    ----------
    solver : str
    status : str
        cvxpy's status (``"optimal"`` or ``"optimal_inaccurate"``).
    objective : float
        The solver's optimal value of :math:`s` (an approximation of the optimal rho).
    tolerance : float
        The solver's stopping tolerance (CLARABEL: duality gap; SCS: ``eps_abs = eps_rel``).
    iterations : int
    seconds : float
        Wall time of canonicalisation and solve.
    """

    solver: str
    status: str
    objective: float
    tolerance: float
    iterations: int
    seconds: float


def graph_edges(topology: Topology) -> np.ndarray:
    """Undirected edges ``(i, j)``, ``i < j``, of a static topology: the off-diagonal support of ``W``.

    Examples
    --------
    >>> from simcomm.topology import ring
    >>> graph_edges(ring(4)).tolist()
    [[0, 1], [0, 3], [1, 2], [2, 3]]
    """
    if topology.edges is not None:
        return np.asarray(topology.edges)
    W = sp.coo_array(sparse_matrix(topology))
    keep = (W.row < W.col) & (W.data != 0)
    e = np.stack([W.row[keep], W.col[keep]], axis=1).astype(np.int64)
    return np.unique(e, axis=0)


def _check_input(topology, solver):
    if not isinstance(topology, Topology):
        raise UserError(f"fastest_mixing needs a Topology (e.g. ring(16)), got {type(topology).__name__}")
    if topology.time_varying:
        raise UserError(f"fastest_mixing needs a static topology; '{topology.name}' is time-varying (pick one layer)")
    if topology.directed:
        raise UserError(f"fastest_mixing needs an undirected graph; '{topology.name}' is directed")
    if solver is not None and solver not in SOLVERS:
        raise UserError(f"unknown solver '{solver}'{closest(solver, SOLVERS)}; use one of {', '.join(SOLVERS)}")
    edges = graph_edges(topology)
    n = topology.n
    from scipy.sparse.csgraph import connected_components

    adj = sp.coo_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    ncomp, _ = connected_components(adj, directed=False)
    if ncomp > 1:
        raise UserError(
            f"fastest_mixing needs a connected graph, but '{topology.name}' has {ncomp} components "
            "(rho = 1 for every weighting); connect it or optimise each component separately"
        )
    return edges


def _feasible(n: int, edges: np.ndarray, w: np.ndarray) -> sp.csr_array:
    """Symmetric doubly stochastic W from edge weights, after clipping solver round-off."""
    w = np.clip(np.asarray(w, dtype=np.float64), 0.0, None)
    i, j = edges[:, 0], edges[:, 1]
    load = np.bincount(np.concatenate([i, j]), weights=np.concatenate([w, w]), minlength=n)
    w = w / np.maximum(1.0, np.maximum(load[i], load[j]))  # only acts on a sum above 1 (round-off)
    load = np.bincount(np.concatenate([i, j]), weights=np.concatenate([w, w]), minlength=n)
    rows = np.concatenate([i, j, np.arange(n)])
    cols = np.concatenate([j, i, np.arange(n)])
    data = np.concatenate([w, w, np.maximum(1.0 - load, 0.0)])
    W = sp.csr_array(sp.coo_array((data, (rows, cols)), shape=(n, n)))
    W.sum_duplicates()
    W.sort_indices()
    return W


METHODS = ("auto", "symmetric", "sdp")


def _import_cvxpy():
    try:
        import cvxpy as cp
    except ImportError:
        raise UserError("fastest_mixing needs cvxpy, a dependency of simcomm missing here: pip install cvxpy") from None
    return cp


def _solve(cp, prob, solver, kwargs, name, n, progress):
    try:
        with warnings.catch_warnings():
            # "Solution may be inaccurate": the status says so too (FMMCInfo.status), and rho of the
            # returned W is what callers measure
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            prob.solve(solver=solver, verbose=bool(progress), **kwargs)
    except cp.error.SolverError as exc:
        raise UserError(f"the solver {solver} failed on '{name}' (n={n}): {exc}; try solver='SCS'") from None
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise UserError(f"the solver {solver} returned status '{prob.status}' on '{name}' (n={n}); try another solver")


def _orbits(topology: Topology):
    """Offsets h != 0 of a circulant grouped in pairs {h, -h}: (representatives, member offsets, sizes)."""
    shape = topology.shape
    offs = [tuple(int(v) for v in h) for h in topology.offsets if np.any(h != 0)]
    seen, reps, members = set(), [], []
    for h in offs:
        if h in seen:
            continue
        neg = tuple(int(v) for v in np.mod(-np.asarray(h), shape))
        group = [h] if neg == h else [h, neg]
        seen.update(group)
        reps.append(h)
        members.append(group)
    return reps, members


def _circulant_lp(cp, topology: Topology, progress: bool):
    """Symmetric-reduction LP of a circulant topology (module doc): returns (Topology, s, iterations)."""
    from simcomm.topology import circulant

    shape = topology.shape
    reps, members = _orbits(topology)
    # modes m (all multi-indices), eigenvalue coefficient of each orbit weight: sum_h (1 - cos 2 pi <m, h/s>)
    grids = np.meshgrid(*[np.arange(s_) / s_ for s_ in shape], indexing="ij")
    modes = np.stack([g.ravel() for g in grids], axis=1)[1:]  # drop m = 0
    C = np.stack([sum(1.0 - np.cos(2 * np.pi * modes @ np.asarray(h, dtype=float)) for h in grp)
                  for grp in members], axis=1)
    sizes = np.array([len(g) for g in members], dtype=float)
    w = cp.Variable(len(reps), nonneg=True)
    s = cp.Variable()
    lam = 1.0 - C @ w
    prob = cp.Problem(cp.Minimize(s), [sizes @ w <= 1, lam <= s, -lam <= s])
    _solve(cp, prob, "CLARABEL", {}, topology.name, topology.n, progress)
    wv = np.clip(np.asarray(w.value, dtype=float), 0.0, None)
    wv = wv / max(1.0, float(sizes @ wv))
    offsets = [np.zeros(len(shape), dtype=np.int64)]
    weights = [1.0 - float(sizes @ wv)]
    for grp, x in zip(members, wv):
        for h in grp:
            offsets.append(np.asarray(h, dtype=np.int64))
            weights.append(float(x))
    out = circulant(topology.name, shape, np.array(offsets), np.array(weights), "fastest")
    return out, float(s.value), int(prob.solver_stats.num_iters or 0)


def fastest_mixing(topology: Topology, *, solver: str | None = None, method: str = "auto", eps: float | None = None,
                   progress: bool = False, return_info: bool = False):
    r"""Optimal symmetric weights on ``topology``'s edges: the fastest-mixing Markov chain SDP (module doc).

    Parameters
    ----------
    topology : Topology
        A static undirected connected graph (only its edges are used; its weights are ignored).
    solver : {"CLARABEL", "SCS"}, optional
        SDP solver. Default: CLARABEL for ``n <= 48``, SCS above (module doc). The symmetric LP
        always uses CLARABEL.
    method : {"auto", "symmetric", "sdp"}
        ``auto``: the symmetry-reduced LP for circulant topologies, the SDP otherwise;
        ``symmetric`` requires a circulant; ``sdp`` always solves the general SDP.
    eps : float, optional
        SCS tolerance (``eps_abs = eps_rel``, default ``1e-7``); ignored by CLARABEL.
    progress : bool
        Print the solver's iteration log (useful for graphs with hundreds of nodes).
    return_info : bool
        Also return an :class:`FMMCInfo`.

    Returns
    -------
    Topology or (Topology, FMMCInfo)
        ``rule="fastest"``, same edges; circulant when the symmetric LP was used, sparse otherwise.

    Raises
    ------
    UserError
        cvxpy missing (install the ``opt`` extra), a time-varying, directed or disconnected graph,
        an unknown solver or method, or a solver failure.

    Examples
    --------
    >>> from simcomm.topology import ring, rho, fastest_mixing
    >>> round(rho(fastest_mixing(ring(6))), 6)    # (1 + cos(pi/3)) / (3 - cos(pi/3)) = 0.6
    0.6
    >>> round(rho(fastest_mixing(ring(6), method="sdp")), 6)
    0.6
    """
    if method not in METHODS:
        raise UserError(f"unknown method '{method}'{closest(method, METHODS)}; use one of {', '.join(METHODS)}")
    edges = _check_input(topology, solver)
    circulant = topology.kind == "circulant"
    if method == "symmetric" and not circulant:
        raise UserError(f"method='symmetric' needs a circulant topology (ring, torus, hypercube, complete); "
                        f"'{topology.name}' is {topology.kind}; use method='sdp'")
    cp = _import_cvxpy()
    n, m = topology.n, len(edges)
    t0 = time.perf_counter()
    if circulant and method != "sdp":
        out, value, iters = _circulant_lp(cp, topology, progress)
        info = FMMCInfo("CLARABEL", "optimal", value, 1e-8, iters, time.perf_counter() - t0)
        return (out, info) if return_info else out
    solver = solver or ("CLARABEL" if n <= _CLARABEL_MAX_N else "SCS")
    i, j = edges[:, 0], edges[:, 1]
    ar = np.arange(m)
    B = sp.csr_array((np.r_[np.ones(m), -np.ones(m)], (np.r_[i, j], np.r_[ar, ar])), shape=(n, m))
    w = cp.Variable(m, nonneg=True)
    s = cp.Variable()
    D = (np.eye(n) - 1.0 / n) - B @ cp.diag(w) @ B.T  # W(w) - J, affine in w
    cons = [abs(B) @ w <= 1, D << s * np.eye(n), D >> -s * np.eye(n)]
    prob = cp.Problem(cp.Minimize(s), cons)
    if solver == "SCS":
        tol = float(_SCS_EPS if eps is None else eps)
        kwargs = dict(eps_abs=tol, eps_rel=tol, max_iters=200_000)
    else:
        tol, kwargs = 1e-8, {}
    _solve(cp, prob, solver, kwargs, topology.name, n, progress)
    W = _feasible(n, edges, w.value)
    out = Topology(n=n, name=topology.name, directed=False, rule="fastest", matrix=W, edges=edges)
    if not return_info:
        return out
    info = FMMCInfo(solver, str(prob.status), float(s.value), tol, int(prob.solver_stats.num_iters or 0),
                    time.perf_counter() - t0)
    return out, info
