r"""Decentralized (momentum) SGD on real processes with MPI: one rank per node, neighbour messages.

``mpiexec -n N python -m simcomm.mpi dsgd --topology NAME --steps T --seed S --out result.npz``
runs the algorithm of :func:`simcomm.optim.run_dsgd` with rank ``i`` holding node ``i``'s parameters,
momentum buffer and data. Per step, rank ``i``

1. computes its stochastic gradient (same data, same per-node noise stream
   ``SeedSequence(seed, spawn_key=(NOISE_KEY, i))`` as the simulator; with ``--noise counter`` the
   counter normals keyed by that stream's first draw, as ``run_dsgd(noise="counter")``),
2. adapts: ``m <- beta m + g``, ``y <- x - lr_k m`` (the simulator's two roundings),
3. exchanges ``y`` with its neighbours by point-to-point messages (``Sendrecv`` per offset for
   circulant graphs, ``Isend``/``Irecv`` for sparse ones) and combines
   ``x <- sum_j W_ij y_j`` in the simulator's summation order.

So the iterates equal the simulator's to rounding (tests/test_mpi.py checks 1e-12 for ring and
one-peer exponential at n = 4 and 8). Rank 0 writes the final iterates (atomic write).

Every rank also times its exchange of each step with ``MPI.Wtime`` (the sends and receives of step
3, or the ``Allreduce`` of ``parallel``; not the gradient or the combine); the output holds, per step,
the maximum over ranks (``comm_time``, seconds), the time a synchronous step waits for its slowest
exchange. Without ``--barrier`` that includes waiting for a neighbour still computing (ranks drift
apart on a loaded machine); with it, an untimed ``Barrier`` before each exchange leaves the exchange.
:func:`simcomm.network.dsgd_comm_prediction` gives the network model's time for the same payloads
(``d`` float64 values per message) and topology, to compare with (``simcomm net compare``).

``mpiexec -n N python -m simcomm.mpi pushsum --topology directed_exponential ...`` runs push-sum
SGD (:func:`simcomm.optim.run_pushsum_sgd`) the same way (:func:`run_pushsum_rank`): rank ``i`` holds
the numerator ``x_i`` and the weight ``w_i``, takes its gradient at ``z_i = x_i / w_i``, and exchanges
``(x_i - lr g_i, w_i)`` as one message of ``d + 1`` floats per out-neighbour (``Sendrecv`` per shift of
the digraph), combining with the column-stochastic weights of :func:`simcomm.optim.uneven_digraph`
(drawn from the seed on every rank: nothing but the models travels). tests/test_mpi.py checks 1e-12
against the simulator at 16 ranks on the directed exponential graph.

Running as root (containers) needs ``mpiexec --allow-run-as-root --oversubscribe``. On a cluster, the
same command under the site's launcher (``srun``/``mpirun`` with a hostfile) runs one node per process.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

from simcomm._errors import UserError

# DSGD's checks and random streams: private to simcomm.optim, shared here so that a rank draws what the simulator draws
from simcomm.optim._decentralized import check_hyper, node_noise_rng, noise_kind, problem_rng, resolve_topology

__all__ = ["run_rank", "run_pushsum_rank", "main"]


def _plan(layer, rank: int):
    """Neighbour plan of ``rank`` for one static layer: list of (weight, source, dest) in summation order.

    ``source`` is the rank whose ``y`` is added (``None`` = self); ``dest`` is the rank this rank
    must send its own ``y`` to for the same message slot (circulant), or ``None`` (sparse: sends are
    listed separately).
    """
    from simcomm.topology import sparse_matrix

    n = layer.n
    if layer.kind == "circulant" and len(layer.shape) == 1:
        out = []
        for h, w in zip(layer.offsets[:, 0].tolist(), layer.weights.tolist()):
            h %= n
            out.append((w, None if h == 0 else (rank + h) % n, None if h == 0 else (rank - h) % n))
        return "shift", out, []
    W = sparse_matrix(layer)
    row = range(W.indptr[rank], W.indptr[rank + 1])
    terms = [(float(W.data[p]), None if int(W.indices[p]) == rank else int(W.indices[p]), None) for p in row]
    col = W.tocsc()
    sends = [int(r) for r in col.indices[col.indptr[rank]:col.indptr[rank + 1]] if int(r) != rank]
    return "csr", terms, sends


def run_rank(comm, *, topology, problem, steps: int, lr: float, beta: float = 0.0, sigma: float = 0.0,
             seed: int = 0, schedule: str = "constant", k0: float = 10.0, noise: str = "auto", comm_times=None,
             barrier: bool = False):
    """Run DmSGD for the node of this rank; return ``(x, m)`` of this rank after ``steps`` steps.

    Parameters mirror :func:`simcomm.optim.run_dsgd` (``topology`` must be a Topology with
    ``n == comm.size`` or ``"parallel"``; ``noise="auto"`` is ``"stream"``, as on the host backends).
    ``comm_times``, a float array of shape ``(steps,)`` if given, receives this rank's exchange time of
    each step (``MPI.Wtime`` around the sends and receives; the arithmetic of the combine is not
    counted). ``barrier=True`` puts an untimed ``Barrier`` before each exchange, so the time is the
    exchange itself, not the wait for a slower neighbour's compute (the iterates are the same either way).
    """
    from simcomm.backends import get_backend
    from simcomm.models import node_gradients, node_slice
    from simcomm.optim import step_size

    check_hyper(lr, beta)
    add_counter_normals = get_backend("numpy").add_counter_normals
    kind = noise_kind(noise, np)
    rank, size = comm.Get_rank(), comm.Get_size()
    local = node_slice(problem, rank, rank + 1)
    noise = node_noise_rng(seed, rank) if sigma > 0 else None
    # counter noise: this node's key is its stream's first draw (simcomm.optim.counter_keys)
    key = None
    if noise is not None and kind == "counter":
        key = np.array([noise.integers(0, 2**64, dtype=np.uint64)], dtype=np.uint64)
    x = np.array(problem.x0, dtype=np.float64)
    m = np.zeros_like(x)
    if topology == "parallel":
        plans = None
    else:
        layers = topology.layers if topology.time_varying else (topology,)
        plans = [_plan(layer, rank) for layer in layers]
    recv = np.empty_like(x)
    from mpi4py import MPI

    wtime = MPI.Wtime
    for k in range(int(steps)):
        g = node_gradients(local, x[None, :])[0]
        if key is not None:
            add_counter_normals(g[None, :], key, k, sigma)
        elif noise is not None:
            g += sigma * noise.standard_normal(x.size)
        np.multiply(m, beta, out=m)
        m += g
        y = np.multiply(m, step_size(lr, k, schedule, k0, steps))
        np.subtract(x, y, out=y)
        spent = 0.0
        if barrier:
            comm.Barrier()
        if plans is None:
            total = np.empty_like(y)
            t0 = wtime()
            comm.Allreduce(y, total)
            spent = wtime() - t0
            x = total / size
        else:
            kind, terms, sends = plans[k % len(plans)]
            acc = np.zeros_like(y)
            if kind == "shift":
                for w, src, dst in terms:
                    if src is None:
                        acc += w * y
                    else:
                        t0 = wtime()
                        comm.Sendrecv(y, dest=dst, sendtag=k, recvbuf=recv, source=src, recvtag=k)
                        spent += wtime() - t0
                        acc += w * recv
            else:
                bufs = {src: np.empty_like(y) for _, src, _ in terms if src is not None}
                t0 = wtime()
                reqs = [comm.Irecv(buf, source=src, tag=k) for src, buf in bufs.items()]
                reqs += [comm.Isend(y, dest=dst, tag=k) for dst in sends]
                MPI.Request.Waitall(reqs)
                spent = wtime() - t0
                for w, src, _ in terms:
                    acc += w * (y if src is None else bufs[src])
            x = acc
        if comm_times is not None:
            comm_times[k] = spent
    return x, m


def run_pushsum_rank(comm, *, topology, problem, steps: int, lr: float, sigma: float = 0.0, seed: int = 0):
    """Run push-sum SGD for the node of this rank; return ``(z, w)`` (de-biased model, weight) after ``steps``.

    ``topology`` is a static shift pattern with per-node weights (:func:`simcomm.optim.uneven_digraph`)
    with ``n == comm.size``. Rank ``i`` adds ``W[i, i + h_t] * (y, w)_{i + h_t}`` over the shifts in
    order, from 0.0, as the simulator's ``pushsum_shift_step`` does, so the iterates agree to rounding.
    """
    from simcomm.models import node_gradients, node_slice

    check_hyper(lr, 0.0)
    if getattr(topology, "node_shifts", None) is None:
        raise UserError(f"the MPI push-sum run needs a shift digraph (directed_ring, directed_exponential), "
                        f"got '{getattr(topology, 'name', topology)}'")
    rank, size = comm.Get_rank(), comm.Get_size()
    local = node_slice(problem, rank, rank + 1)
    noise = node_noise_rng(seed, rank) if sigma > 0 else None
    shifts = np.asarray(topology.node_shifts, dtype=np.int64) % size
    weights = np.asarray(topology.node_weights)[:, rank]
    d = problem.d
    x = np.array(problem.x0, dtype=np.float64)
    w = 1.0
    send = np.empty(d + 1)
    recv = np.empty(d + 1)
    for k in range(int(steps)):
        z = x / w
        g = node_gradients(local, z[None, :])[0]
        if noise is not None:
            g += sigma * noise.standard_normal(d)
        np.subtract(x, np.multiply(g, lr), out=send[:d])
        send[d] = w
        acc = np.zeros(d + 1)
        for h, wt in zip(shifts.tolist(), weights.tolist()):
            if h == 0:
                acc += wt * send
            else:
                # this rank listens to rank + h and is heard by rank - h (the digraph's shift h)
                comm.Sendrecv(send, dest=(rank - h) % size, sendtag=k, recvbuf=recv, source=(rank + h) % size,
                              recvtag=k)
                acc += wt * recv
        x, w = acc[:d], float(acc[d])
    return x / w, w


def _atomic_save(path: str, **arrays) -> None:
    folder = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _finish_pushsum(comm, args, z, w) -> int:
    Z, Wt = comm.gather(z, root=0), comm.gather(w, root=0)
    if comm.Get_rank() == 0:
        Z, Wt = np.stack(Z), np.asarray(Wt)
        if args.out:
            _atomic_save(args.out, z=Z, w=Wt, steps=np.int64(args.steps), seed=np.int64(args.seed),
                         topology=np.str_(args.topology))
        print(f"push-sum SGD on {args.topology} with {comm.Get_size()} ranks: {args.steps} steps, "
              f"weights in [{Wt.min():.3g}, {Wt.max():.3g}]" + (f", written to {args.out}" if args.out else ""))
    return 0


def main(argv=None) -> int:
    """Entry point of ``python -m simcomm.mpi`` (see the module doc); returns the exit code."""
    from simcomm.mpi.__main__ import parse

    args = parse(argv)
    try:
        from mpi4py import MPI
    except ImportError:
        print("error: mpi4py is not installed; install the mpi extra: pip install 'simcomm[mpi]'", file=sys.stderr)
        return 2
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    try:
        from simcomm.models import make_node_problem
        from simcomm.optim import step_size

        n = size if args.n is None else args.n
        if n != size:
            raise UserError(f"the topology has n={n} nodes but mpiexec started {size} ranks; "
                            f"run mpiexec -n {n} (one rank per node)")
        if args.sigma < 0:
            raise UserError(f"noise sigma must be >= 0, got {args.sigma}")
        if args.command == "pushsum":
            from simcomm.optim import uneven_digraph

            topo = uneven_digraph(args.topology, n, seed=args.seed, low=args.self_low, high=args.self_high)
            problem = make_node_problem(args.problem, n, d=args.d, b=args.b, split=args.split,
                                        rng=problem_rng(args.seed))
            z, w = run_pushsum_rank(comm, topology=topo, problem=problem, steps=args.steps, lr=args.lr,
                                    sigma=args.sigma, seed=args.seed)
            return _finish_pushsum(comm, args, z, w)
        topo = resolve_topology(args.topology, n)
        step_size(args.lr, 0, args.schedule, args.k0, args.steps)
        problem = make_node_problem(args.problem, n, d=args.d, b=args.b, split=args.split, rng=problem_rng(args.seed))
        times = np.zeros(max(int(args.steps), 0))
        x, m = run_rank(comm, topology=topo, problem=problem, steps=args.steps, lr=args.lr, beta=args.beta,
                        sigma=args.sigma, seed=args.seed, schedule=args.schedule, k0=args.k0, noise=args.noise,
                        comm_times=times, barrier=args.barrier)
    except UserError as exc:
        if rank == 0:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    X = comm.gather(x, root=0)
    M = comm.gather(m, root=0)
    slowest = np.zeros_like(times) if rank == 0 else None
    comm.Reduce(times, slowest, op=MPI.MAX, root=0)  # a step's exchange lasts until its slowest rank's ends
    if rank == 0:
        X, M = np.stack(X), np.stack(M)
        if args.out:
            _atomic_save(args.out, x=X, m=M, steps=np.int64(args.steps), seed=np.int64(args.seed),
                         comm_time=slowest, d=np.int64(X.shape[1]), topology=np.str_(args.topology))
        med = f"{np.median(slowest):.3g} s" if slowest.size else "n/a"
        print(f"dsgd on {args.topology} with {size} ranks: {args.steps} steps, mean of final iterates "
              f"||xbar|| = {np.linalg.norm(X.mean(axis=0)):.6g}, median communication time per step {med}"
              + (f", written to {args.out}" if args.out else ""))
    return 0
