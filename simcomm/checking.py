"""The main job as a library call: select specs, run them through one map, judge, draw.

Nothing here writes files: :func:`check` returns the tables, judgements, figures and report text,
and the CLI writes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from simcomm._errors import UserError
from simcomm.claims import Judgement, judge
from simcomm.experiments._registry import closest
from simcomm.results import Results
from simcomm.runner import make_map, run_many, threads_for
from simcomm.spec import Spec, check_plot_columns, find_specs, load

__all__ = ["select_specs", "evaluate", "CheckOutcome"]


def select_specs(claim_ids=(), *, quick: bool = True, seed: int | None = None, folder=None,
                 overrides: tuple[str, ...] = ()) -> list[Spec]:
    """Load the specs of the given claim ids (all claims when empty), validated, in id order."""
    specs = [load(p, quick=quick, overrides=overrides) for p in find_specs(folder)]
    specs = [s for s in specs if s.claim is not None]
    if seed is not None:
        specs = [dataclasses.replace(s, seed=seed) for s in specs]
    by_id = {s.claim.id: s for s in specs}
    for cid in claim_ids:
        if cid not in by_id:
            raise UserError(f"unknown claim id '{cid}'{closest(cid, by_id)}; 'simcomm list' shows the claims")
    chosen = [by_id[c] for c in dict.fromkeys(claim_ids)] if claim_ids else sorted(specs, key=lambda s: s.claim.id)
    if not chosen:
        raise UserError(f"no claim specs found in '{folder}'; point --specs at a folder of *.toml specs")
    return chosen


def _context(spec: Spec, res: Results) -> Judgement | None:
    """The claim judged on every row (no ``where``), to draw what lies outside its range."""
    if not spec.claim.where or spec.claim.kind not in ("upper", "lower", "equal"):
        return None
    try:
        return judge(dataclasses.replace(spec.claim, where={}), res.table, cell_params=set(spec.grid) | set(spec.params))
    except (UserError, ValueError, TypeError):
        return None


@dataclass
class CheckOutcome:
    """Everything a check produced, for the CLI to print and write."""

    results: list[Results]
    judgements: list[Judgement]
    figures: dict  # claim id -> matplotlib Figure
    report: str = ""
    report_path: Path | None = None


def evaluate(specs: list[Spec], *, jobs: int = 1, scheduler: str | None = None, backend: str = "numba",
             cache_dir=None, progress=None) -> CheckOutcome:
    """Run every spec (cells pooled through one map), judge each claim, draw each figure."""
    from simcomm.plotting import bound_vs_empirical

    mapper, executor = make_map(jobs, scheduler)
    results = run_many(specs, map=mapper, backend=backend, cache_dir=cache_dir, progress=progress,
                       executor=executor, threads_per_cell=threads_for(jobs, scheduler))
    judgements, figures = [], {}
    for spec, res in zip(specs, results):
        check_plot_columns(spec, res.table.columns)  # [plot] x/hue/labels name real columns
        j = judge(spec.claim, res.table, cell_params=set(spec.grid) | set(spec.params))
        judgements.append(j)
        figures[spec.claim.id] = bound_vs_empirical(j, spec.plot, _context(spec, res))
    return CheckOutcome(results, judgements, figures)
