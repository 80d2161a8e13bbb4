"""``simcomm plot DIR``: redraw the figure of a results folder written by ``run`` or ``check``."""

from __future__ import annotations

from pathlib import Path

import click

from simcomm._errors import UserError
from simcomm.cli import cli


@cli.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="PNG to write (default: DIR/figure.png).")
def plot(folder, output):
    """Judge and draw the claim of a results folder (table.csv + meta.json) again.

    \b
    Examples:
      simcomm plot results/expgraph_rho_even/<hash>
      simcomm plot results/expgraph_rho_even/<hash> -o rho.png
    """
    import matplotlib.pyplot as plt

    from simcomm.claims import judge
    from simcomm.plotting import bound_vs_empirical
    from simcomm.results import read_results
    from simcomm.spec import ClaimSpec

    folder = Path(folder)
    if not (folder / "table.csv").is_file() or not (folder / "meta.json").is_file():
        raise UserError(f"'{folder}' is not a results folder (needs table.csv and meta.json); "
                        "pass a folder written by 'simcomm run' or 'simcomm check'")
    res = read_results(folder)
    spec = res.meta.get("spec") or {}
    if not spec.get("claim"):
        raise UserError(f"'{folder}' holds a sweep without a claim; there is no bound to draw against")
    try:
        claim = ClaimSpec(**{**spec["claim"], "higher": tuple(spec["claim"].get("higher", ()))})
    except TypeError as exc:
        raise UserError(f"'{folder}/meta.json' comes from an incompatible simcomm version ({exc}); re-run the spec") from None
    cell_params = set(spec.get("grid", {})) | set(spec.get("params", {}))
    fig = bound_vs_empirical(judge(claim, res.table, cell_params), spec.get("plot", {}))
    target = Path(output) if output else folder / "figure.png"
    fig.savefig(target, dpi=110)
    plt.close(fig)
    click.echo(f"figure: {target}")
