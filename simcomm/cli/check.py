"""``simcomm check``: run claims, print the verdict table, write figures and the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from simcomm._errors import UserError
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
@click.argument("claim_ids", nargs=-1, metavar="[CLAIM_ID]...")
@click.option("--quick/--full", default=True, show_default=True,
              help="Small grids (minutes) or the grids the committed gallery was made with.")
@click.option("--strict", is_flag=True, help="Exit 1 if any claim is violated.")
@click.option("--controls", is_flag=True,
              help="Also run each claim's negative controls (perturbations under which it must be violated).")
@jobs_option
@backend_option
@seed_option
@scheduler_option
@click.option("--out", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Folder for figures/ (PNG + REPORT.md) and results/ (tables, metadata, cell cache).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the verdicts as JSON to this file.")
@click.option("--specs", "specs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of spec files (default: the shipped sims/).")
def check(claim_ids, quick, strict, controls, jobs, backend, seed, scheduler, out, json_path, specs_dir):
    """Run the registered claims and report a verdict for each.

    Prints a table (claim id, paper, statement, provenance, verdict, tightest ratio empirical/bound),
    writes one figure per claim to OUT/figures/ and OUT/figures/REPORT.md. Exits 0 when the run
    completed; with --strict, exits 1 if any claim is violated.

    \b
    Examples:
      simcomm check --quick
      simcomm check expgraph.rho_even expgraph.one_peer_exact --full --jobs 2
      simcomm check --json verdicts.json --strict
    """
    from simcomm import checking

    out = ensure_writable(out)
    if json_path is not None:
        ensure_writable(Path(json_path).parent if str(Path(json_path).parent) else ".")
    specs = checking.select_specs(claim_ids, quick=quick, seed=seed, folder=specs_dir)
    with progress_bar(f"checking {len(specs)} claims", enabled=sys.stderr.isatty()) as bar:
        outcome = checking.evaluate(specs, jobs=jobs, scheduler=scheduler, backend=backend,
                                    cache_dir=out / "results" / ".cache", progress=bar.update, controls=controls)
    write_outcome(outcome, specs, out, mode="quick" if quick else "full")
    _print_table(outcome.judgements)
    click.echo(f"report: {outcome.report_path}")
    if json_path is not None:
        from simcomm.results import atomic_write_text

        atomic_write_text(json_path, json.dumps([j.summary() for j in outcome.judgements], indent=2))
    if strict and any(j.verdict.value == "violated" for j in outcome.judgements):
        raise SystemExit(1)


def write_outcome(outcome, specs, out: Path, *, mode: str) -> None:
    """Write results/<spec>/<hash>/, figures/<claim>.png and figures/REPORT.md (all atomic)."""
    import io

    import matplotlib.pyplot as plt

    from simcomm.report import report_markdown
    from simcomm.results import atomic_write_bytes, atomic_write_text

    names = {}
    for spec, res, j in zip(specs, outcome.results, outcome.judgements):
        res.write(out / "results" / spec.name / spec.hash, verdict={**j.summary(), "cells": j.cells.to_dict("records")})
        fig = outcome.figures[j.claim.id]
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        names[j.claim.id] = f"{j.claim.id.replace('.', '_')}.png"
        atomic_write_bytes(out / "figures" / names[j.claim.id], buf.getvalue())
    meta = outcome.results[0].meta if outcome.results else {}
    outcome.report = report_markdown(outcome.judgements, names, mode=mode, meta=meta)
    outcome.report_path = out / "figures" / "REPORT.md"
    atomic_write_text(outcome.report_path, outcome.report)


def _print_table(judgements) -> None:
    from rich.console import Console
    from rich.table import Table

    from simcomm.report import verdict_rows

    colors = {"holds": "green", "violated": "red", "inconclusive": "yellow", "ill-posed": "magenta"}
    table = Table(title="simcomm check", show_lines=False)
    widths = {"statement": 48, "reason": 36, "controls": 20}
    for col in ("claim", "paper", "statement", "prov.", "verdict", "reason", "ratio", "controls"):
        table.add_column(col, overflow="fold", max_width=widths.get(col))
    from rich.markup import escape

    for row in verdict_rows(judgements):
        row = [escape(cell) for cell in row]  # statements such as E[f - f*] are text, not markup
        row[4] = f"[{colors[row[4]]}]{row[4]}[/]"
        table.add_row(*row)
    Console(width=160 if not sys.stdout.isatty() else None).print(table)
    if not judgements:
        raise UserError("no claims were run")
