"""``simcomm list``: the claims (or experiments) with their paper and provenance."""

from __future__ import annotations

from pathlib import Path

import click

from simcomm.cli import cli
from simcomm.cli._common import PluginCommand, plugin_option


@cli.command("list", cls=PluginCommand)
@plugin_option
@click.option("--experiments", is_flag=True, help="List the registered experiments and their parameters instead.")
@click.option("--topologies", is_flag=True, help="List the topology constructors (simcomm topology NAME) instead.")
@click.option("--methods", is_flag=True, help="List the named training methods and their settings instead.")
@click.option("--specs", "specs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of spec files (default: the shipped sims/).")
@click.option("--paths", is_flag=True, help="Show each claim's spec file (where the shipped specs live) instead.")
def list_(experiments, topologies, methods, specs_dir, paths):
    """List every claim: id, paper, class, kind, provenance tag and statement in one line.

    The class says what a claim is: seed (a seed paper's statement), other (another paper's), derived
    (a bound derived here) or check (a consistency check, never a finding about a paper).

    A claim id works wherever a spec file does: 'simcomm run expgraph.rho_even'.

    \b
    Examples:
      simcomm list
      simcomm list --paths
      simcomm list --experiments
      simcomm list --topologies
      simcomm list --methods
    """
    from simcomm.spec import find_specs, resolve, sims_dir

    if sum(map(bool, (experiments, topologies, methods, paths))) > 1:
        raise click.UsageError("give at most one of --experiments, --topologies, --methods and --paths")
    if methods:
        from simcomm.optim import METHODS

        for name, info in METHODS.items():
            run_as = f"spec experiment train_{name}" if info.family == "server" else f"family {info.family}"
            click.echo(f"{name}: {info.doc} ({run_as})")
            for key, p in info.params.items():
                default = "required" if p.default is None else f"default {p.default!r}"
                click.echo(f"    {key}: {p.allowed()}, {default}. {p.doc}")
        return
    if topologies:
        from simcomm.topology import TOPOLOGIES

        for name, info in TOPOLOGIES.items():
            alias = f" (alias {', '.join(info.aliases)})" if info.aliases else ""
            keys = "".join(f" [--{key} {key.upper()}]" for key in info.params if key not in ("rule", "rng"))
            click.echo(f"{name:<22} {info.doc}{alias}{keys}")
        return
    if experiments:
        from simcomm.experiments import EXPERIMENTS, get_experiment

        get_experiment  # noqa: B018  (importing registers every experiment)
        for name in sorted(EXPERIMENTS):
            exp = EXPERIMENTS[name]
            click.echo(f"{name}: {exp.doc.splitlines()[0] if exp.doc else ''}")
            for key, p in exp.params.items():
                default = "required" if p.default is None else f"default {p.default!r}"
                was = f" (was {p.former})" if p.former else ""
                click.echo(f"    {key}: {p.allowed()}, {default}. {p.doc}{was}")
        return
    if paths:
        click.echo(f"spec folder: {Path(specs_dir or sims_dir()).resolve()}")
    for path in find_specs(specs_dir):
        c = _claim_table(path)
        if c is None:
            continue
        if paths:
            click.echo(f"{c['id']:<32} {path.resolve()}")
            continue
        prov = c.get("provenance") or resolve(c["bound"]).info.provenance
        click.echo(f"{c['id']:<32} {c['paper']:<9} {c.get('class', '?'):<7} {c['kind']:<6} [{prov}] {c['statement']}")


def _claim_table(path: Path) -> dict | None:
    """A spec's ``[claim]`` table read from its TOML (None for a sweep), without loading its experiment.

    Listing reads what it prints: validating a spec imports its experiment and the numerical stack, which
    made ``simcomm list`` take seconds. A spec that does not parse, or a claim without the fields listed,
    is loaded in full so that its one-line error is the one ``run`` and ``check`` give.
    """
    import tomllib

    from simcomm.spec import CLASSES, load

    try:
        claim = tomllib.loads(path.read_text()).get("claim")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        claim = {}
    if claim is None:
        return None
    if not isinstance(claim, dict) or not all(isinstance(claim.get(k), str)
                                              for k in ("id", "paper", "kind", "statement", "class")) \
            or claim["class"] not in CLASSES:
        c = load(path).claim
        return None if c is None else {"id": c.id, "paper": c.paper, "kind": c.kind, "statement": c.statement,
                                       "provenance": c.provenance, "bound": c.bound, "class": c.claim_class}
    return claim
