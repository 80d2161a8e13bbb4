"""``simcomm run SPEC``: run one spec (with overrides), write its table, judge its claim."""

from __future__ import annotations

import sys

import click

from simcomm.cli import cli
from simcomm.cli._common import (
    backend_option,
    ensure_writable,
    jobs_option,
    progress_bar,
    scheduler_option,
    seed_option,
)


@cli.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a parameter, grid axis, 'replicates' or 'seed' (TOML value). Repeatable.")
@click.option("--quick/--full", default=False, show_default=True, help="Apply the spec's [quick] table.")
@jobs_option
@backend_option
@seed_option
@scheduler_option
@click.option("--out", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Results go to OUT/results/<spec>/<hash>/ and the figure to OUT/figures/.")
def run(spec_path, overrides, quick, jobs, backend, seed, scheduler, out):
    """Run one spec file: a sweep over its grid, judged against its claim if it has one.

    \b
    Examples:
      simcomm run sims/expgraph_rho_even.toml
      simcomm run sims/expgraph_noisy_consensus.toml --set "n=[8,16,32]" --set replicates=20
    """
    import dataclasses

    from simcomm import checking
    from simcomm.cli.check import _print_table, write_outcome
    from simcomm.spec import load

    out = ensure_writable(out)
    spec = load(spec_path, quick=quick, overrides=tuple(overrides))
    if seed is not None:
        spec = dataclasses.replace(spec, seed=seed)
    with progress_bar(f"running {spec.name}", enabled=sys.stderr.isatty()) as bar:
        if spec.claim is None:
            from simcomm.runner import make_map, threads_for
            from simcomm.runner import run as run_spec

            mapper, executor = make_map(jobs, scheduler)
            res = run_spec(spec, map=mapper, backend=backend, cache_dir=out / "results" / ".cache",
                           progress=bar.update, executor=executor, threads_per_cell=threads_for(jobs, scheduler))
            folder = res.write(out / "results" / spec.name / spec.hash)
            click.echo(f"results: {folder}")
            return
        outcome = checking.evaluate([spec], jobs=jobs, scheduler=scheduler, backend=backend,
                                    cache_dir=out / "results" / ".cache", progress=bar.update)
    write_outcome(outcome, [spec], out, mode="quick" if quick else "full")
    _print_table(outcome.judgements)
    click.echo(f"results: {out / 'results' / spec.name / spec.hash}")
