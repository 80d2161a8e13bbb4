"""``simcomm net``: calibrate the network model (alpha, beta) and compare it with a real MPI run.

``simcomm net calibrate`` fits alpha and beta from MPI micro-benchmarks; ``simcomm net compare`` puts a
real MPI DSGD run's measured exchange times next to the model's.
"""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


@cli.group()
def net():
    """Network model tools (alpha-beta calibration, model vs a real MPI run)."""


@net.command()
@click.option("--np", "np_", type=int, default=2, show_default=True, help="MPI ranks started on this machine (>= 2).")
@click.option("--sizes", default=None, metavar="B1,B2,...",
              help="Message sizes in bytes (default 8,1024,16384,131072,1048576,4194304).")
@click.option("--reps", type=int, default=10, show_default=True, help="Repetitions per size (the best counts).")
@click.option("--mpiexec", "mpiexec", default=None, help="Path of mpiexec (default: next to Python, then PATH).")
@click.option("-o", "--out", "out", default="network.toml", show_default=True, help="TOML file to write.")
@click.option("--json", "as_json", is_flag=True, help="Also print the result as one JSON object.")
def calibrate(np_, sizes, reps, mpiexec, out, as_json):
    """Fit alpha (s/message) and beta (s/byte) from an MPI ping-pong and an Allreduce on loopback.

    Starts mpiexec with --np local ranks, writes [network] alpha, beta (ping-pong fit) and the raw
    times to OUT; a spec or Network.from_toml reads it. Nothing is written if anything fails.

    \b
    Examples:
      simcomm net calibrate -o net.toml
      simcomm net calibrate --np 4 --sizes 8,65536,1048576 --reps 5 --json
    """
    from simcomm._errors import UserError
    from simcomm.network._calibrate import DEFAULT_SIZES, calibration_toml
    from simcomm.network._calibrate import calibrate as run_calibration
    from simcomm.results import atomic_write_text

    if sizes is None:
        size_list = list(DEFAULT_SIZES)
    else:
        try:
            size_list = [int(s) for s in sizes.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"--sizes '{sizes}' is not a comma-separated list of byte counts, "
                            "e.g. 8,1024,65536") from None
    res = run_calibration(np_=np_, sizes=size_list, reps=reps, mpiexec=mpiexec)
    atomic_write_text(out, calibration_toml(res))
    if as_json:
        click.echo(json.dumps(dict(res, out=str(out))))
    else:
        click.echo(f"alpha = {res['alpha']:.3e} s/message, beta = {res['beta']:.3e} s/byte "
                   f"({1 / res['beta'] / 1e9 if res['beta'] > 0 else float('inf'):.2f} GB/s) -> {out}")


@net.command()
@click.argument("result", metavar="RESULT.npz", type=click.Path(dir_okay=False))
@click.option("--network", "network", required=True, metavar="FILE",
              help="TOML with [network] alpha, beta (e.g. written by 'simcomm net calibrate' on the same machine).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (per-step arrays included).")
def compare(result, network, as_json):
    """Measured per-step exchange time of an MPI DSGD run next to the network model's prediction.

    RESULT.npz is the --out file of 'python -m simcomm.mpi dsgd' (it records, per step, the slowest
    rank's exchange time); the model gets the same payloads (d float64 values per message) and the
    same topology, exchanged as the MPI run does (one phase per circulant offset).

    \b
    Examples:
      simcomm net calibrate --np 4 -o net.toml
      mpiexec -n 4 python -m simcomm.mpi dsgd --topology exponential --steps 100 --barrier --out r.npz
      simcomm net compare r.npz --network net.toml
    """
    from simcomm.network import Network, compare_dsgd_comm

    res = compare_dsgd_comm(result, Network.from_toml(network))
    if as_json:
        click.echo(json.dumps({k: v.tolist() if hasattr(v, "tolist") else v for k, v in res.items()}))
    else:
        click.echo(f"{res['topology']}, n = {res['n']}, d = {res['d']}: measured median {res['measured_median']:.3e} s "
                   f"per step, model {res['predicted_median']:.3e} s, ratio measured/model {res['ratio']:.3g}")
