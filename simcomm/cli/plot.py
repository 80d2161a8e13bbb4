"""``simcomm plot DIR``: redraw the figure of a results folder written by ``run`` or ``check``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from simcomm._errors import UserError
from simcomm.cli import cli
from simcomm.cli._common import headless

FORMATS = ("png", "pdf", "svg")


@cli.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="File to write (default: DIR/figure.<format>); its suffix picks the format unless --format "
                   "is given.")
@click.option("--style", type=click.Choice(("annotated", "paper")), default=None,
              help="annotated: verdict and flags, as in the report; paper: the same data for a publication "
                   "(no verdict, the paper's symbols, colour-blind-safe, line style and marker per series). "
                   "Default: the spec's [plot] style, else annotated.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="png (raster, 200 dpi for paper) or pdf/svg (vector). Default: from -o, else png.")
@click.option("--trace", "trace", default=None, metavar="METRIC",
              help="Draw this metric's trace rows (e.g. train_loss) against --x instead of the claim.")
@click.option("--x", "x", default=None, metavar="COLUMN",
              help="The x axis: with --trace step (default), bits, or time when the spec has a [network] table; "
                   "for a sweep without a claim any column (default: the grid axis with the most values).")
@click.option("--hue", "hue", default=None, metavar="COLUMN[,COLUMN]",
              help="For a sweep without a claim: one series per value of these columns (default: the other "
                   "grid axes).")
@click.option("--metric", "metric", default=None, metavar="METRIC",
              help="For a sweep without a claim: the metric to draw (default: the table's only one).")
@click.option("--logx", is_flag=True, help="A log x axis (times spanning decades).")
@click.option("--size", type=click.Choice(("single", "double")), default=None,
              help="With --style paper: one column (3.5 in wide, the default) or the page width of a two-column "
                   "layout (7.16 in).")
@click.option("--no-subtitle", "no_subtitle", is_flag=True,
              help="For a sweep: leave out the '(mean and 95% CI of R replicates)' line under the title.")
def plot(folder, output, style, fmt, trace, x, hue, metric, logx, size, no_subtitle):
    """Judge and draw the claim of a results folder (table.csv + meta.json) again, draw a trace, or a sweep.

    A sweep without a claim is drawn as its metric (mean and 95% CI over replicates) against --x, one
    series per --hue. --style paper draws a one-column figure (3.5 in, 7-8 pt fonts; --size double for
    the page width); every PDF embeds TrueType fonts.

    \b
    Examples:
      simcomm plot results/expgraph_rho_even/<hash>
      simcomm plot results/expgraph_rho_even/<hash> --style paper --format pdf -o rho.pdf
      simcomm plot results/net_compression_pays/<hash> --trace train_loss --x time --logx
      simcomm plot results/my/<hash> --x n --hue topology
      simcomm plot results/my/<hash> --style paper --no-subtitle -o sweep.pdf
    """
    headless()
    from simcomm.claims import judge
    from simcomm.plotting import bound_vs_empirical
    from simcomm.spec import ClaimSpec, ControlSpec

    folder = Path(folder)
    if not (folder / "table.csv").is_file() or not (folder / "meta.json").is_file():
        raise UserError(f"'{folder}' is not a results folder (needs table.csv and meta.json); "
                        "pass a folder written by 'simcomm run' or 'simcomm check'")
    if fmt is None:
        suffix = Path(output).suffix.lower().lstrip(".") if output else ""
        fmt = suffix if suffix in FORMATS else "png"
    target = Path(output) if output else folder / f"figure.{fmt}"
    _check_target(target)
    res = _read(folder)
    columns = [c for c in res.table.columns if c not in ("metric", "value")]
    if x is not None and x not in columns:
        from simcomm._errors import closest

        raise UserError(f"--x '{x}' is not a column of '{folder}/table.csv'{closest(x, columns)}; "
                        f"columns: {', '.join(columns)}")
    if size is not None and style != "paper" and not (style is None and _spec_style(res) == "paper"):
        raise UserError("--size applies to --style paper only; add --style paper (or leave --size out)")
    if trace is not None:
        if style is not None or size is not None or no_subtitle:
            raise UserError("--style, --size and --no-subtitle do not apply to --trace; leave them out")
        from simcomm.plotting import trace_figure

        _save(trace_figure(res.table, trace, x=x or "step", plot={"logx": logx}), target, fmt, 110)
        return
    spec = res.meta.get("spec") or {}
    if not isinstance(spec, dict) or not spec.get("claim") or metric is not None or hue is not None:
        from simcomm.plotting import sweep_axes, sweep_figure

        grid = spec.get("grid", {}) if isinstance(spec, dict) and isinstance(spec.get("grid"), dict) else {}
        hues = None if hue is None else [h.strip() for h in hue.split(",") if h.strip()]
        m, xcol, hues = sweep_axes(res.table, grid, metric=metric, x=x, hue=hues)
        options = dict(spec.get("plot", {})) if isinstance(spec, dict) and isinstance(spec.get("plot"), dict) else {}
        options = {k: v for k, v in options.items() if k in ("logx", "logy", "xlabel", "ylabel", "title")}
        if logx:
            options["logx"] = True
        style = style or _spec_style(res) or "annotated"
        fig = sweep_figure(res.table, m, xcol, hues, options, style=style, size=size, subtitle=not no_subtitle)
        _save(fig, target, fmt, 200 if style == "paper" else 110)
        return
    if no_subtitle:
        raise UserError("--no-subtitle applies to a sweep's figure only (a claim's paper figure has no subtitle); "
                        "leave it out")
    try:
        claim = ClaimSpec(**{**spec["claim"], "higher": tuple(spec["claim"].get("higher", ())),
                             "controls": tuple(ControlSpec(**c) for c in spec["claim"].get("controls", ()))})
    except (TypeError, AttributeError) as exc:
        raise UserError(f"'{folder}/meta.json' comes from an incompatible simcomm version ({exc}); "
                        "re-run the spec") from None
    cell_params = set(spec.get("grid", {})) | set(spec.get("params", {}))
    options = dict(spec.get("plot", {}))
    style = style or options.get("style", "annotated")
    try:
        from simcomm.experiments import get_experiment
        from simcomm.spec import looks

        j = judge(claim, res.table, cell_params, columns=get_experiment(spec["experiment"]).columns,
                  looks=looks(spec.get("replicates", 1), spec.get("max_replicates")))
    except (KeyError, ValueError) as exc:  # a table that does not match its metadata
        raise UserError(f"'{folder}/table.csv' does not match its meta.json ({exc}); re-run the spec") from None
    if style == "paper":
        from simcomm.plotting import paper_figure

        fig = paper_figure(j, options, size=size)
    else:
        fig = bound_vs_empirical(j, options)
    _save(fig, target, fmt, 200 if style == "paper" else 110)


def _spec_style(res) -> str | None:
    """The ``[plot] style`` recorded with the results (None when there is none)."""
    spec = res.meta.get("spec")
    options = spec.get("plot") if isinstance(spec, dict) else None
    return options.get("style") if isinstance(options, dict) else None


def _save(fig, target: Path, fmt: str, dpi: int) -> None:
    """Write ``fig`` atomically to ``target``; a failure is one line naming -o."""
    import io

    from simcomm.results import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    try:
        atomic_write_bytes(target, buf.getvalue())
    except OSError as exc:
        raise UserError(f"cannot write the figure to '{target}' ({exc.strerror or exc}); "
                        "pass a writable -o FILE") from None
    click.echo(f"figure: {target}")


def _check_target(target: Path) -> None:
    """Fail before drawing when -o cannot be written (one line naming -o)."""
    import os

    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserError(f"-o '{target}' is a folder; pass a file name such as {target / 'figure.png'}")
    if not parent.is_dir() or not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"cannot write the figure to '{target}' (folder missing or not writable); "
                        "pass a writable -o FILE")


def _read(folder: Path):
    """Read the results folder; a corrupt or empty file is one line, not a traceback."""
    import pandas as pd

    from simcomm.results import read_results

    try:
        res = read_results(folder)
    except pd.errors.EmptyDataError:
        raise UserError(f"'{folder}/table.csv' is empty; re-run the spec to write it again") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"'{folder}/table.csv' is not a readable CSV table ({exc}); re-run the spec") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"'{folder}/meta.json' is not valid JSON ({exc}); re-run the spec to write it again") from None
    if res.table.empty or not {"metric", "value"} <= set(res.table.columns):
        raise UserError(f"'{folder}/table.csv' has no rows of results (needs metric and value columns); "
                        "re-run the spec")
    if not isinstance(res.meta, dict):
        raise UserError(f"'{folder}/meta.json' is not a metadata object; re-run the spec to write it again")
    return res
