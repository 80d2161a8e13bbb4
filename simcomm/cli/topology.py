"""``simcomm topology NAME -n N``: degree, rho, spectral gap and doubly-stochastic check of a topology."""

from __future__ import annotations

import json

import click

from simcomm.cli import cli


class _RegistryHelp(click.Command):
    """A command whose help names the registered topologies, read when the help is shown (not at import)."""

    def format_help_text(self, ctx, formatter):
        from simcomm.topology import TOPOLOGIES

        template = self.help
        names = ", ".join(name + (f" (alias {', '.join(i.aliases)})" if i.aliases else "")
                          for name, i in TOPOLOGIES.items())
        self.help = template.replace("{names}", names)
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = template


@cli.command(cls=_RegistryHelp)
@click.argument("name")
@click.option("-n", "n", type=int, required=True, help="Number of nodes (grid/torus: r*c; hypercube: 2^dim).")
@click.option("--k", "k", type=int, default=None,
              help="Maximum peers per step, for the topologies that take k (simcomm list --topologies); "
                   "also NAME:k=K.")
@click.option("--rule", default="metropolis", show_default=True,
              help="Weights of undirected graphs: metropolis or max_degree.")
@click.option("--weights", default="rule", show_default=True,
              help="rule (the --rule weights) or fastest (optimal weights on the same edges: "
                   "fastest-mixing SDP, needs cvxpy).")
@click.option("--shape", default=None, metavar="RxC", help="Grid/torus shape, e.g. 4x8 (default: the squarest).")
@click.option("--p", "p", type=float, default=None, help="Edge probability of erdos_renyi, in (0, 1].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the random topologies (one draw).")
@click.option("--steps", "steps", type=click.IntRange(min=0), default=None, metavar="T",
              help="Also print the worst-case consensus error after T gossip steps, ||W_T...W_1 - J||_2 "
                   "(static or time-varying).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def topology(name, n, k, rule, weights, shape, p, seed, steps, as_json):
    """Describe a topology: n, max out-degree, rho = ||W - J||_2, spectral gap, doubly stochastic.

    NAME is one of {names}; a constructor's own keywords go after a colon (NAME:key=value).
    Time-varying topologies also report the period (the sequence length), the deviation of the
    product of one period from J (0 up to rounding for the exact sequences) and the per-step rate
    (its period-th root; for a static topology the rate is rho). --steps T adds
    consensus_after_steps: ||x_T - xbar|| <= that times ||x_0 - xbar||, tight for the worst start.

    \b
    Examples:
      simcomm topology exponential -n 1024
      simcomm topology one_peer_exponential -n 100 --steps 20
      simcomm topology base -n 25 --k 2 --json
      simcomm topology ring -n 16 --weights fastest
      simcomm topology torus -n 64 --shape 8x8 --json
      simcomm topology erdos_renyi -n 32 --p 0.5 --seed 3
    """
    from simcomm.topology import build, describe, get_topology, split_name

    if weights not in ("rule", "fastest"):
        raise click.BadParameter(f"'{weights}' is not one of rule, fastest", param_hint="--weights")
    if weights == "fastest":
        try:
            import cvxpy  # noqa: F401
        except ImportError:
            raise click.ClickException(
                "--weights fastest needs cvxpy, a dependency of simcomm missing here: pip install cvxpy"
            ) from None
    topo = build(name, n, shape=shape, p=p, rule=rule, rng=seed, k=k, weights=weights)
    info = describe(topo)
    if steps is not None:
        from simcomm.topology import deviation_after

        info["steps"] = int(steps)
        info["consensus_after_steps"] = float(deviation_after(topo, steps))
    base, keys = split_name(name)
    reg = get_topology(base)
    if "k" in reg.params:
        info["k"] = int(keys.get("k", reg.defaults().get("k", 1) if k is None else k))
    if weights == "fastest":
        info["weights"] = "fastest"
    if as_json:
        click.echo(json.dumps(info))
        return
    width = max(map(len, info))
    for key, value in info.items():
        click.echo(f"{key:>{width}}: {value:.6g}" if isinstance(value, float) else f"{key:>{width}}: {value}")
