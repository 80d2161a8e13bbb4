"""``simcomm scaling``: time the hot kernels against d and n and draw log-log figures."""

from __future__ import annotations

import click

from simcomm.cli import cli
from simcomm.cli._common import backend_option, ensure_writable, headless


@cli.command()
@click.option("--kernel", "kernels", multiple=True, type=click.Choice(["top_k", "qsgd", "gossip"]),
              help="Kernel(s) to time (default: all).")
@backend_option
@click.option("--scale", type=click.FloatRange(min=1e-3, max=4.0), default=1.0, show_default=True,
              help="Multiply every size by this factor (smaller is faster).")
@click.option("--out", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Figures go to OUT/figures/scaling_<kernel>.png and the table to OUT/results/scaling.csv.")
def scaling(kernels, backend, scale, out):
    """Time top-k, a quantizer and a gossip step against d and n; fit log-log exponents.

    \b
    Examples:
      simcomm scaling
      simcomm scaling --kernel top_k --scale 0.25
    """
    headless()
    import io

    import matplotlib.pyplot as plt

    from simcomm.backends import get_backend
    from simcomm.results import atomic_write_bytes, atomic_write_text
    from simcomm.scaling import KERNELS, fit_exponent, measure, scaling_figure

    get_backend(backend)
    out = ensure_writable(out)
    names = kernels or tuple(KERNELS)
    table = measure(names, backend=backend, rng=0, scale=scale)
    atomic_write_text(out / "results" / "scaling.csv", table.to_csv(index=False))
    for name in names:
        fig = scaling_figure(table, name)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        atomic_write_bytes(out / "figures" / f"scaling_{name}.png", buf.getvalue())
        for sweep in ("d", "n"):
            t = table[(table.kernel == name) & (table.sweep == sweep)]
            click.echo(f"{name:>7} time ~ {sweep}^{fit_exponent(t[sweep], t['seconds']):.2f}")
    click.echo(f"figures: {out / 'figures'}")
