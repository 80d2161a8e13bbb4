"""``python -m simcomm.mpi dsgd ...``: run DmSGD with one MPI rank per node (see :mod:`simcomm.mpi`).

Example (as root in a container, 8 ranks on one machine)::

    mpiexec --allow-run-as-root --oversubscribe -n 8 python -m simcomm.mpi dsgd \
        --topology one_peer_exponential --steps 100 --seed 1 --sigma 1 --out result.npz

and push-sum SGD over a column-stochastic digraph with uneven self-weights drawn from the seed::

    mpiexec --allow-run-as-root --oversubscribe -n 16 python -m simcomm.mpi pushsum \
        --topology directed_exponential --steps 100 --seed 1 --out result.npz
"""

from __future__ import annotations

import argparse
import sys


def parse(argv=None) -> argparse.Namespace:
    """Parse the command line (sub-commands ``dsgd`` and ``pushsum``)."""
    p = argparse.ArgumentParser(prog="python -m simcomm.mpi",
                                description="Decentralized SGD with one MPI rank per node.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dsgd", help="decentralized (momentum) SGD, adapt-then-combine")
    d.add_argument("--topology", required=True, help="ring, exponential, one_peer_exponential, torus, ... or parallel")
    d.add_argument("--n", type=int, default=None, help="number of nodes of the topology (default: the number of ranks)")
    d.add_argument("--steps", type=int, required=True)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--problem", default="least_squares", help="least_squares, logistic, digits or diagonal")
    d.add_argument("--d", type=int, default=10, help="dimension (least_squares, diagonal) or features (logistic)")
    d.add_argument("--b", type=float, default=1.0, help="heterogeneity at the optimum (least_squares, diagonal)")
    d.add_argument("--split", default="iid", help="iid or label (logistic, digits)")
    d.add_argument("--lr", type=float, default=0.05, help="step size (> 0)")
    d.add_argument("--beta", type=float, default=0.0, help="momentum in [0, 1)")
    d.add_argument("--sigma", type=float, default=1.0, help="gradient noise std per coordinate")
    d.add_argument("--schedule", default="constant", help="constant or inv_sqrt")
    d.add_argument("--k0", type=float, default=10.0, help="decay scale of inv_sqrt")
    d.add_argument("--noise", default="auto", help="stream (per-node numpy streams; auto) or counter (counter normals)")
    d.add_argument("--barrier", action="store_true",
                   help="untimed MPI Barrier before each exchange: comm_time is the exchange alone, not the "
                        "wait for a slower neighbour")
    d.add_argument("--out", default=None, help="rank 0 writes the final iterates here (.npz, atomic)")
    ps = sub.add_parser("pushsum", help="push-sum SGD (SGP) over a column-stochastic digraph")
    ps.add_argument("--topology", required=True, help="directed_ring or directed_exponential (push weights)")
    ps.add_argument("--self-low", type=float, default=0.1, help="self-weights a_i ~ U[self-low, self-high]")
    ps.add_argument("--self-high", type=float, default=0.9, help="see --self-low")
    for name in ("--n", "--steps", "--seed", "--problem", "--d", "--b", "--split", "--lr", "--sigma", "--out"):
        action = next(a for a in d._actions if name in a.option_strings)
        ps.add_argument(name, type=action.type, default=action.default, required=action.required, help=action.help)
    return p.parse_args(argv)


if __name__ == "__main__":
    from simcomm.mpi import main

    sys.exit(main())
