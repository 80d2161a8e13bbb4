"""``simcomm run SPEC``: run one spec (with overrides), write its table, judge its claim."""

from __future__ import annotations

import shlex
import sys

import click

from simcomm.cli import cli
from simcomm.cli._common import (
    PluginCommand,
    backend_option,
    ensure_writable,
    headless,
    jobs_option,
    max_cells_option,
    max_hours_option,
    plan,
    plugin_option,
    progress_bar,
    scheduler_option,
    seed_option,
    yes_option,
)


@cli.command(cls=PluginCommand)
@click.argument("spec_path", metavar="SPEC")
@plugin_option
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a parameter, grid axis, 'replicates' or 'seed' (TOML value). Repeatable.")
@click.option("--quick/--full", default=False, show_default=True, help="Apply the spec's [quick] table.")
@jobs_option
@backend_option
@seed_option
@scheduler_option
@click.option("--out", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Everything goes to OUT/results/<spec>/<hash>/: table, metadata, verdict, <spec>.png, REPORT.md.")
@max_cells_option
@max_hours_option
@yes_option
def run(spec_path, overrides, quick, jobs, backend, seed, scheduler, out, max_cells, max_hours, yes):
    """Run one spec: a sweep over its grid, judged against its claim if it has one.

    SPEC is a spec file, or a shipped claim id or spec name ('simcomm list --paths' shows them). The
    outputs are named after the spec file and never touch the committed gallery (figures/).

    \b
    Examples:
      simcomm run expgraph.rho_even
      simcomm run sims/expgraph_rho_even.toml
      simcomm run sims/expgraph_noisy_consensus.toml --set "n=[8,16,32]" --set replicates=20
      simcomm run my_sweep.toml --plugin mine.py     # your experiment, compressor or bound in mine.py
    """
    headless()
    import dataclasses

    from simcomm import checking
    from simcomm.cli.check import _print_table, resumable, write_outcome
    from simcomm.spec import load, locate

    out = ensure_writable(out)
    spec = load(locate(spec_path), quick=quick, overrides=tuple(overrides))
    if seed is not None:
        spec = dataclasses.replace(spec, seed=seed)
    cache = out / "results" / ".cache"
    plan([spec], backend=backend, jobs=jobs, scheduler=scheduler, cache_dir=cache, max_cells=max_cells,
         max_hours=max_hours, yes=yes)
    folder = out / "results" / spec.name / spec.hash
    with progress_bar(f"running {spec.name}", enabled=sys.stderr.isatty()) as bar, resumable(cache):
        if spec.claim is None:
            from simcomm.cost import cell_seconds
            from simcomm.runner import make_map, threads_for
            from simcomm.runner import run as run_spec

            mapper, executor = make_map(jobs, scheduler)
            res = run_spec(spec, map=mapper, backend=backend, cache_dir=cache, progress=bar.update,
                           executor=executor, threads_per_cell=threads_for(jobs, scheduler), seconds=cell_seconds)
        else:
            outcome = checking.evaluate([spec], jobs=jobs, scheduler=scheduler, backend=backend,
                                        cache_dir=cache, progress=bar.update)
    if spec.claim is None:
        res.write(folder)
        if spec.plot.get("style") == "paper":  # the spec asks for a publication figure of the sweep (PDF + PNG)
            from simcomm.results import atomic_write_bytes

            files = _sweep_paper_figures(res, spec, folder)
            for path, blob in files.items():
                atomic_write_bytes(path, blob)
            click.echo(f"results: {folder} (figures {', '.join(p.name for p in files)})")
            return
        click.echo(f"results: {folder}")
        return
    extra = {}
    if spec.plot.get("style") == "paper":  # the spec asks for a publication figure too (vector + PNG)
        extra = _paper_figures(outcome.judgements[0], spec, folder)
    write_outcome(outcome, [spec], out, mode="quick" if quick else "full", figures=folder,
                  names={spec.claim.id: f"{spec.name}.png"}, extra=extra)
    words = ["simcomm", "run", spec_path, *(["--quick"] if quick else []),
             *[w for o in overrides for w in ("--set", o)]]
    _print_table(outcome.judgements, title=shlex.join(words), wide=True)  # one claim: every column fits
    click.echo(f"results: {folder} (figure {spec.name}.png, REPORT.md)")


def _paper_figures(judgement, spec, folder) -> dict:
    """``<spec>_paper.pdf`` and ``<spec>_paper.png`` (path -> bytes), next to the report's annotated figure."""
    import io

    import matplotlib.pyplot as plt

    from simcomm.plotting import paper_figure

    fig = paper_figure(judgement, spec.plot)
    files = {}
    for fmt in ("pdf", "png"):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=200)
        files[folder / f"{spec.name}_paper.{fmt}"] = buf.getvalue()
    plt.close(fig)
    return files


def _sweep_paper_figures(res, spec, folder) -> dict:
    """``<spec>_paper.pdf`` and ``.png`` of a sweep (path -> bytes), drawn as ``simcomm plot`` does.

    A table with several metrics gets one pair per metric, ``<spec>_paper_<metric>.pdf``.
    """
    import io

    from simcomm.plotting import sweep_axes, sweep_figure

    plot = {k: v for k, v in spec.plot.items() if k in ("x", "hue", "logx", "logy", "xlabel", "ylabel", "title",
                                                        "labels")}
    hue = plot.pop("hue", None)
    hue = None if hue is None else [h.strip() for h in hue.split(",") if h.strip()]
    x = plot.pop("x", None)
    rows = res.table[res.table["step"].isna()] if "step" in res.table else res.table
    metrics = sorted(map(str, rows["metric"].unique()))
    files = {}
    for metric in metrics:
        m, xcol, hues = sweep_axes(res.table, spec.grid, metric=metric, x=x, hue=hue)
        fig = sweep_figure(res.table, m, xcol, hues, plot, style="paper")
        stem = f"{spec.name}_paper" if len(metrics) == 1 else f"{spec.name}_paper_{metric}"
        for fmt in ("pdf", "png"):
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=200)
            files[folder / f"{stem}.{fmt}"] = buf.getvalue()
    return files
