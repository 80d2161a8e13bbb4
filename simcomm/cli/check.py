"""``simcomm check``: run claims, print the verdict table, write figures and the report."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import click

from simcomm._errors import UserError
from simcomm.cli import cli
from simcomm.cli._common import (
    Interrupted,
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
@click.argument("claim_ids", nargs=-1, metavar="[CLAIM_ID]...")
@plugin_option
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
              help="Folder for results/ (tables, metadata, cell cache). --full writes the gallery to "
                   "OUT/figures/ (PNG, REPORT.md, verdicts.json); --quick writes its own to OUT/results/quick/.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the verdicts as JSON to this file.")
@click.option("--readme", "readme", type=click.Path(dir_okay=False, exists=True), multiple=True,
              help="Regenerate the generated blocks of this page (between their markers; repeatable): README.md, "
                   "docs/claims.md.")
@click.option("--specs", "specs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of spec files (default: the shipped sims/).")
@click.option("--wide", is_flag=True, help="Print every column of the verdict table (paper, statement, provenance, "
                                            "controls), not the compact claim / verdict / ratio / reason.")
@max_cells_option
@max_hours_option
@yes_option
def check(claim_ids, quick, strict, controls, jobs, backend, seed, scheduler, out, json_path, readme, specs_dir,
          wide, max_cells, max_hours, yes):
    """Run the registered claims and report a verdict for each.

    Prints the plan (cells, estimated time and memory), then a table (claim id, verdict, tightest
    ratio empirical/bound, a short reason; --wide adds paper, statement, provenance and controls) and
    the totals. --full writes one figure per claim, REPORT.md
    and verdicts.json to OUT/figures/ (the gallery); --quick writes them to OUT/results/quick/ and
    shows, next to each verdict, the committed full-grid verdict where it differs. Exits 0 when the
    run completed; with --strict, exits 1 if any claim is violated.

    \b
    Examples:
      simcomm check --quick
      simcomm check expgraph.rho_even expgraph.one_peer_exact --full --jobs 2
      simcomm check --json verdicts.json --strict
      simcomm check --specs my_claims/ --plugin mine.py    # your own claims, judged like the shipped ones
    """
    headless()
    from simcomm import checking

    specs, not_run = checking.split_runnable(checking.select_specs(claim_ids, quick=quick, seed=seed, folder=specs_dir))
    if not_run is not None:
        if claim_ids or not specs:  # the claims asked for by name cannot run: say how to make them runnable
            raise UserError(not_run.replace("not run, ", "cannot run: ", 1))
        click.echo(not_run, err=True)
    out = ensure_writable(out)
    if json_path is not None:
        ensure_writable(Path(json_path).parent if str(Path(json_path).parent) else ".", option="--json FILE")
    # the registered ids, read now: a spec added while a long run computes must not stop its writes
    known = {s.claim.id for s in checking.select_specs((), quick=True, folder=specs_dir)} if not quick else None
    cache = out / "results" / ".cache"
    plan(specs, backend=backend, jobs=jobs, scheduler=scheduler, cache_dir=cache, max_cells=max_cells,
         max_hours=max_hours, yes=yes, controls=controls, judged=True)
    with progress_bar(f"checking {len(specs)} claims", enabled=sys.stderr.isatty()) as bar, resumable(cache):
        outcome = checking.evaluate(specs, jobs=jobs, scheduler=scheduler, backend=backend,
                                    cache_dir=cache, progress=bar.update, controls=controls)
    figures = out / "figures" if not quick else out / "results" / "quick"
    committed = committed_verdicts(out) if quick else None
    extra, whole, specs_all = {}, None, specs
    if not quick:
        path = figures / "verdicts.json"
        extra[path] = verdicts_text(outcome.judgements, path, meta=outcome.results[0].meta, known=known,
                                    results=outcome.results)
        if claim_ids or readme:  # claims this run did not judge keep their committed full-grid rows
            whole, specs_all = _with_committed_rows(outcome.judgements, specs_dir, path)
    # a partial full run: the gallery's REPORT.md keeps every registered claim
    write_outcome(outcome, specs, out, mode="quick" if quick else "full", figures=figures, committed=committed,
                  extra=extra, report_judgements=whole if claim_ids else None)
    title = "simcomm check " + ("--quick" if quick else "--full") + "".join(f" {c}" for c in claim_ids)
    _print_table(outcome.judgements, title=title, committed=committed, wide=wide)
    click.echo(f"report: {outcome.report_path}")
    if json_path is not None:
        from simcomm.results import atomic_write_text

        atomic_write_text(json_path, json.dumps([j.summary() for j in outcome.judgements], indent=2))
    for page in readme:
        from simcomm.report import update_readme
        from simcomm.results import atomic_write_text

        judgements = outcome.judgements if whole is None else whole
        names = {j.claim.id: f"{j.claim.id.replace('.', '_')}.png" for j in judgements}
        titles = {s.claim.id: s.plot.get("title", "") for s in specs_all}
        at = Path(os.path.relpath(figures.resolve(), Path(page).resolve().parent)).as_posix()
        atomic_write_text(page, update_readme(Path(page).read_text(), judgements, names, titles, at))
    if strict and any(j.verdict.value == "violated" for j in outcome.judgements):
        raise SystemExit(1)


def _with_committed_rows(judgements, specs_dir, verdicts_path: Path):
    """Every registered claim's judgement, in id order: this run's, else the one recorded in verdicts.json."""
    from simcomm import checking
    from simcomm.claims import Judgement

    specs = checking.select_specs((), quick=False, folder=specs_dir)
    ran = {j.claim.id: j for j in judgements}
    try:
        recorded = json.loads(Path(verdicts_path).read_text())["claims"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = {}
    out = [ran.get(s.claim.id) or (Judgement.from_summary(s.claim, recorded[s.claim.id])
                                   if s.claim.id in recorded else None) for s in specs]
    return [j for j in out if j is not None], specs


@contextlib.contextmanager
def resumable(cache: Path):
    """Turn Ctrl-C into a message saying that the finished cells are cached and how to resume."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: the cells that finished are cached in {cache}; "
                          "run the same command again to resume from them") from None


def shipped_figures() -> Path:
    """The committed gallery: the repository's figures/ (next to sims/)."""
    from simcomm.spec import sims_dir

    return sims_dir().parent / "figures"


def committed_verdicts(out: Path) -> dict | None:
    """Full-grid verdicts by claim id: OUT/figures/verdicts.json, else the committed gallery's."""
    for path in (out / "figures" / "verdicts.json", shipped_figures() / "verdicts.json"):
        try:
            data = json.loads(path.read_text())
            return {cid: v["verdict"] for cid, v in data["claims"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return None


def write_verdicts(judgements, path: Path, *, meta: dict, known: set | None = None, results=None) -> None:
    """Merge this full run's verdicts into ``path`` (a partial --full run keeps the other claims').

    With ``known`` (the ids of the specs in the folder), entries of claims no longer registered (retired
    or renamed) are dropped, so the file holds exactly the registered claims.
    """
    from simcomm.results import atomic_write_text

    atomic_write_text(path, verdicts_text(judgements, path, meta=meta, known=known, results=results))


def verdicts_text(judgements, path: Path, *, meta: dict, known: set | None = None, results=None) -> str:
    """The text of ``path`` with this full run's verdicts merged in (the other registered claims' kept).

    Each entry this run writes records its provenance: ``commit`` (the checkout's commit, with
    ``uncommitted: true`` when tracked files differed from it) and ``spec_hash`` (the content hash of
    the spec that was judged), from ``results`` (one :class:`~simcomm.results.Results` per judgement).
    Entries of claims this run did not judge keep their own.
    """
    from simcomm.results import git_dirty
    try:
        data = json.loads(path.read_text())
        claims = dict(data["claims"])
    except (OSError, ValueError, KeyError, TypeError):
        claims = {}
    dirty = git_dirty()
    for i, j in enumerate(judgements):
        entry = {k: v for k, v in j.summary().items() if k != "id"}
        run_meta = results[i].meta if results is not None else meta
        entry["commit"] = run_meta.get("git_commit")
        entry["spec_hash"] = run_meta.get("spec_hash")
        if dirty:
            entry["uncommitted"] = True
        claims[j.claim.id] = entry
    if known is not None:
        claims = {k: v for k, v in claims.items() if k in known}
    data = {"grids": "full", "git_commit": meta.get("git_commit"),
            "claims": dict(sorted(claims.items()))}
    return json.dumps(data, indent=2) + "\n"


def write_outcome(outcome, specs, out: Path, *, mode: str, figures: Path | None = None,
                  names: dict | None = None, committed: dict | None = None, extra: dict | None = None,
                  report_judgements: list | None = None) -> None:
    """Write results/<spec>/<hash>/, one PNG per claim and REPORT.md into ``figures``, as one set.

    ``names`` maps claim id -> figure file name (default ``<claim_id with _>.png``); ``extra`` maps
    more paths to their contents (verdicts.json). ``report_judgements`` (this run's and the recorded
    ones of the claims it did not judge) makes REPORT.md whole after a partial run: the sections of
    the claims not re-judged are kept from the previous REPORT.md. Every file is rendered first and then written all
    or none (:func:`simcomm.results.write_files`): a full disk or a refused write leaves the previous
    gallery as it was, never half of a new one.
    """
    import io

    import matplotlib.pyplot as plt

    from simcomm.report import report_markdown
    from simcomm.results import write_files

    figures = out / "figures" if figures is None else figures
    names = dict(names or {})
    files = {}
    for spec, res, j in zip(specs, outcome.results, outcome.judgements):
        files.update(res.files(out / "results" / spec.name / spec.hash,
                               verdict={**j.summary(), "cells": j.cells.to_dict("records")}))
        fig = outcome.figures[j.claim.id]
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        names.setdefault(j.claim.id, f"{j.claim.id.replace('.', '_')}.png")
        files[figures / names[j.claim.id]] = buf.getvalue()
    meta = outcome.results[0].meta if outcome.results else {}
    outcome.report_path = figures / "REPORT.md"
    kept = None
    if report_judgements is not None:
        from simcomm.report import report_sections

        try:
            kept = report_sections(outcome.report_path.read_text())
        except OSError:
            kept = {}
        for j in report_judgements:
            if j.claim.id not in names and (figures / f"{j.claim.id.replace('.', '_')}.png").exists():
                names[j.claim.id] = f"{j.claim.id.replace('.', '_')}.png"
    outcome.report = report_markdown(outcome.judgements if report_judgements is None else report_judgements,
                                     names, mode=mode, meta=meta, committed=committed, kept=kept)
    files[outcome.report_path] = outcome.report
    files.update(extra or {})
    write_files(files)


def _short_reason(text: str, limit: int = 60) -> str:
    """The reason cut at a word boundary to ``limit`` characters (the report has it whole)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + " ..."


def _print_table(judgements, title: str = "simcomm check", committed: dict | None = None, wide: bool = False) -> None:
    """The verdict table: compact (claim, verdict, ratio, short reason) or ``wide`` (all columns); then the totals."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from simcomm.report import (
        CLASS_TITLES,
        by_class,
        class_counts,
        detect_text,
        verdict_counts,
        verdict_rows,
        with_committed,
    )

    colors = {"holds": "green", "violated": "red", "inconclusive": "yellow", "ill-posed": "magenta"}
    table = Table(title=title, show_lines=False)
    if wide:
        widths = {"statement": 48, "reason": 36, "controls": 20}
        columns = ("claim", "paper", "class", "statement", "prov.", "verdict", "reason", "ratio", "detects", "controls")
    else:
        columns = ("claim", "verdict", "ratio", "detects", "reason")
    for col in columns:
        if col == "claim":  # ids are never cut mid-word
            table.add_column(col, no_wrap=True)
        elif wide:
            table.add_column(col, overflow="fold", max_width=widths.get(col))
        else:
            table.add_column(col, overflow="fold")
    for row, j in zip(verdict_rows(judgements), judgements):
        row = [escape(cell) for cell in row]  # statements such as E[f - f*] are text, not markup
        color = colors.get(row[4], "white")
        verdict = f"[{color}]{escape(with_committed(j.verdict.value, j, committed))}[/]"
        if wide:
            row[4] = verdict
            row.insert(7, detect_text(j))
            row.insert(2, j.claim.claim_class)
            table.add_row(*row)
        else:
            table.add_row(row[0], verdict, row[6], detect_text(j), escape(_short_reason(j.reason)))
    console = Console(width=160 if not sys.stdout.isatty() else None)
    console.print(table)
    if not judgements:
        raise UserError("no claims were run")
    console.print(escape(class_counts(judgements)))
    for cls, group in by_class(judgements):
        console.print(f"{CLASS_TITLES[cls][0]}: " + escape(verdict_counts(group).replace("**", "")))
    console.print(escape(verdict_counts(judgements).replace("**", "")) +
                  ("" if wide else " (--wide adds paper, class, statement, provenance and controls)"))
