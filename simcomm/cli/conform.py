"""``simcomm conform MODULE:callable --kind KIND``: a user's compressor, feedback step, hook or outer step, judged."""

from __future__ import annotations

import json
import sys

import click

from simcomm.cli import cli
from simcomm.cli._common import PluginCommand, plugin_option


@cli.command(cls=PluginCommand)
@click.argument("targets", metavar="MODULE:CALLABLE...", nargs=-1, required=True)
@plugin_option
@click.option("--kind", required=True, help="What the callable is: compressor, feedback, hook or outer.")
@click.option("-d", "d", type=int, default=16, show_default=True, help="Dimension of the test vectors.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Root seed of every draw.")
@click.option("--confidence", type=click.FloatRange(0.5, 1.0, min_open=False, max_open=True), default=0.99,
              show_default=True, help="Family-wise confidence of each check over its cells.")
@click.option("--tolerance", type=click.FloatRange(min=0.0, min_open=True), default=0.1, show_default=True,
              help="Bias allowed (a fraction of sqrt(beta)) and slack on a declared constant, stated before the data.")
@click.option("--max-draws", type=click.IntRange(min=1000), default=16000, show_default=True,
              help="Most calls per test vector of the Monte Carlo checks.")
@click.option("--workers", type=click.IntRange(min=2, max=8), default=2, show_default=True,
              help="Gloo processes on loopback for --kind hook.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def conform(targets, kind, d, seed, confidence, tolerance, max_draws, workers, as_json):
    """Run users' compressors, error-feedback steps, DDP hooks or outer steps through the conformance battery.

    Each check is judged like a claim (simcomm.claims.judge): unbiasedness and the declared variance or
    contraction by Monte Carlo, determinism under a seed, payload bits against the declared count, the
    error-feedback invariant every step, state surviving a checkpoint and a bucket rebuild, float16
    overflow at n workers, the sign of a pseudo-gradient, and an outer-step factory make(params, *, workers,
    rng) (e.g. simcomm.torch:OuterStep) against simcomm's DiLoCo round by round. Several targets of one
    kind may be given (hooks then share one set of worker processes). What a callable must declare is in docs/torch.md.
    Exit code 0: every check holds or is skipped; 1: one is violated; 2: bad input (a
    callable that raises, returns the wrong shape or dtype, is not deterministic under a fixed seed or
    declares no constant a check needs; one line each on stderr, the other checks still run).

    \b
    Examples:
      simcomm conform simcomm.conform_fixtures:biased_rand_k --kind compressor
      simcomm conform simcomm.conform_fixtures:ef_top_k --kind feedback
      simcomm conform simcomm.conform_fixtures:fp16_sum_overflow simcomm.conform_fixtures:fp16_hook --kind hook
      simcomm conform simcomm.conform_fixtures:outer_forgot_nesterov --kind outer
      simcomm conform mypkg.comp:my_topk --kind compressor -d 64 --json
      simcomm conform mine:threshold --kind compressor --plugin ./mine.py
    """
    import os

    from simcomm.conform import conform_all

    if os.getcwd() not in sys.path:  # MODULE may be a file in the working directory, as for python -m
        sys.path.insert(0, os.getcwd())
    reps = conform_all(targets, kind, d=d, seed=seed, confidence=confidence, tolerance=tolerance,
                       max_draws=max_draws, workers=workers)
    if as_json:
        click.echo(json.dumps([r.summary() for r in reps] if len(reps) > 1 else reps[0].summary()))
    else:
        click.echo("\n\n".join(r.text() for r in reps))
    for line in (e for r in reps for e in r.errors):
        click.echo(f"error: {line}", err=True)
    sys.stdout.flush()
    codes = [r.exit_code for r in reps]
    sys.exit(2 if 2 in codes else max(codes))
