"""``simcomm topology NAME -n N``: degree, rho, spectral gap and doubly-stochastic check of a topology."""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


@cli.command()
@click.argument("name")
@click.option("-n", "n", type=int, required=True, help="Number of nodes (grid/torus: r*c; hypercube: 2^dim).")
@click.option("--rule", default="metropolis", show_default=True, help="Weights of undirected graphs: metropolis or max_degree.")
@click.option("--shape", default=None, metavar="RxC", help="Grid/torus shape, e.g. 4x8 (default: the squarest).")
@click.option("--p", "p", type=float, default=None, help="Edge probability of erdos_renyi, in (0, 1].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for erdos_renyi.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def topology(name, n, rule, shape, p, seed, as_json):
    """Describe a topology: n, max out-degree, rho = ||W - J||_2, spectral gap, doubly stochastic.

    NAME is one of ring, star, grid, torus, hypercube, complete, erdos_renyi, exponential,
    one_peer_exponential. Time-varying topologies also report the period and the deviation of
    the product of one period from J.

    \b
    Examples:
      simcomm topology exponential -n 1024
      simcomm topology torus -n 64 --shape 8x8 --json
      simcomm topology erdos_renyi -n 32 --p 0.5 --seed 3
    """
    from simcomm.topology import build, describe

    info = describe(build(name, n, shape=shape, p=p, rule=rule, rng=seed))
    if as_json:
        click.echo(json.dumps(info))
        return
    for key, value in info.items():
        click.echo(f"{key:>18}: {value:.6g}" if isinstance(value, float) else f"{key:>18}: {value}")
