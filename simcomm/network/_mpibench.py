"""MPI micro-benchmarks for :func:`simcomm.network.calibrate` (run under mpiexec, one process per rank).

``mpiexec -n N python -m simcomm.network._mpibench --sizes 8,1024,... --reps R --out t.json``:
ranks 0 and 1 ping-pong each size (the half round trip is one message time), then all ranks run a
ring-friendly ``Allreduce`` of float32 arrays of each size (the slowest rank's time counts). Rank 0
writes the best-of-``R`` times as JSON (atomic write).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _round_trip(comm, rank, buf, tag_out, tag_back):
    """Rank 0 sends ``buf`` to rank 1 and waits for it to come back; other ranks do nothing."""
    if rank == 0:
        comm.Send(buf, dest=1, tag=tag_out)
        comm.Recv(buf, source=1, tag=tag_back)
    elif rank == 1:
        comm.Recv(buf, source=0, tag=tag_out)
        comm.Send(buf, dest=0, tag=tag_back)


def _bench(comm, sizes, reps):
    rank, size = comm.Get_rank(), comm.Get_size()
    ping = []
    warm = np.zeros(8, dtype=np.uint8)
    for _ in range(50):  # establish the connection and wake both ranks before anything is timed
        _round_trip(comm, rank, warm, 0, 0)
    for b in sizes:
        buf = np.zeros(max(1, b), dtype=np.uint8)
        best = np.inf
        for _ in range(reps + 1):  # the first round warms up the connection
            comm.Barrier()
            t = time.perf_counter()
            _round_trip(comm, rank, buf, 1, 2)
            best = min(best, (time.perf_counter() - t) / 2)
        ping.append(best)
    allred = []
    for b in sizes:
        src = np.ones(max(1, b // 4), dtype=np.float32)
        dst = np.empty_like(src)
        best = np.inf
        for _ in range(reps + 1):
            comm.Barrier()
            t = time.perf_counter()
            comm.Allreduce(src, dst)
            el = comm.allreduce(time.perf_counter() - t, op=_max())
            best = min(best, el)
        allred.append(best)
    return dict(n=size, sizes=[int(s) for s in sizes], pingpong=ping, allreduce=allred)


def _max():
    from mpi4py import MPI

    return MPI.MAX


def main(argv=None) -> int:
    from mpi4py import MPI

    p = argparse.ArgumentParser(prog="python -m simcomm.network._mpibench")
    p.add_argument("--sizes", required=True)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        print("error: calibration needs at least 2 ranks (mpiexec -n 2 or more)", file=sys.stderr)
        return 2
    res = _bench(comm, [int(s) for s in args.sizes.split(",")], args.reps)
    if comm.Get_rank() == 0:
        from simcomm.results import atomic_write_text

        atomic_write_text(args.out, json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
