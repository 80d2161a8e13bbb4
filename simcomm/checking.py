"""The main job as a library call: select specs, run them through one map, judge, draw.

Nothing here writes files: :func:`check` returns the tables, judgements, figures and report text,
and the CLI writes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simcomm._errors import UserError, closest
from simcomm.claims import Judgement, judge
from simcomm.experiments import get_experiment
from simcomm.results import Results
from simcomm.runner import make_map, run_many, threads_for
from simcomm.spec import Spec, check_plot_columns, find_specs, load, with_control

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
        return judge(dataclasses.replace(spec.claim, where={}), res.table, **design(spec))
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


def design(spec: Spec) -> dict:
    """The keywords that tell :func:`judge` a spec's design: its parameters, the experiment's design columns, looks."""
    return dict(cell_params=set(spec.grid) | set(spec.params), columns=get_experiment(spec.experiment).columns,
                looks=spec.looks)


def _judge(spec: Spec, table, **kw) -> Judgement:
    return judge(spec.claim, table, **design(spec), **kw)


def _more_replicates(specs, results, judgements, run, judge_one=None) -> None:
    """Adaptive replicates: while a spec with ``{min, max}`` has undecided cells, double its replicates.

    Every look is judged at ``alpha / looks``, the looks planned when the spec was loaded
    (Bonferroni over the planned looks, :attr:`Spec.looks` never recomputed from the replicates
    reached), so adding replicates until a cell is decided cannot inflate the family-wise error. ``judge_one(i, spec,
    table)`` judges entry ``i`` (default: the spec's own claim).
    """
    judge_one = judge_one or (lambda i, spec, table: _judge(spec, table))
    while True:
        todo = [i for i, (s, j) in enumerate(zip(specs, judgements))
                if s.max_replicates and s.replicates < s.max_replicates
                and (j.cells["verdict"] == "inconclusive").any()]
        if not todo:
            return
        batch = [dataclasses.replace(specs[i], first_replicate=specs[i].replicates,
                                     replicates=min(2 * specs[i].replicates, specs[i].max_replicates)) for i in todo]
        for i, extra, b in zip(todo, run(batch), batch):
            table = pd.concat([results[i].table, extra.table], ignore_index=True)
            specs[i] = dataclasses.replace(specs[i], replicates=b.replicates, first_replicate=0)
            results[i] = Results(table, {**results[i].meta, "replicates_used": b.replicates})
            judgements[i] = judge_one(i, specs[i], table)


def _run_controls(specs, results, judgements, run) -> None:
    """Judge every claim's negative controls (adaptive replicates as for the claim); each must be violated."""
    entries = []  # (claim index, control, spec the control runs on)
    for i, spec in enumerate(specs):
        for c in spec.claim.controls:
            entries.append((i, c, dataclasses.replace(with_control(spec, c), seed=spec.seed) if c.set else spec))
    reruns = [k for k, (_, c, _) in enumerate(entries) if c.set]
    tables = {k: r.table for k, r in zip(reruns, run([entries[k][2] for k in reruns]) if reruns else [])}

    def judge_control(k, spec, table):
        _, c, _ = entries[k]
        return judge(spec.claim, table, **design(spec),
                     bound_scale=c.bound_scale, bound=c.bound, swap=c.swap, lower_scale=c.lower_scale)

    c_specs = [e[2] for e in entries]
    c_results = [Results(tables[k], {}) if k in tables else results[e[0]] for k, e in enumerate(entries)]
    c_judgements = []
    for k, spec in enumerate(c_specs):
        try:
            c_judgements.append(judge_control(k, spec, c_results[k].table))
        except UserError as exc:  # a control whose rows cannot be judged did not catch anything
            c_judgements.append(str(exc))
    live = [k for k, j in enumerate(c_judgements) if not isinstance(j, str) and entries[k][1].set]
    if live:
        sub_specs, sub_res = [c_specs[k] for k in live], [c_results[k] for k in live]
        sub_j = [c_judgements[k] for k in live]
        _more_replicates(sub_specs, sub_res, sub_j, run, judge_one=lambda i, s, t: judge_control(live[i], s, t))
        for k, j in zip(live, sub_j):
            c_judgements[k] = j
    for i in range(len(specs)):
        out = [(c.name, j if isinstance(j, str) else j.verdict.value)
               for (owner, c, _), j in zip(entries, c_judgements) if owner == i]
        out = [(n, v if v in ("holds", "violated", "inconclusive", "ill-posed") else f"error: {v}") for n, v in out]
        judgements[i] = dataclasses.replace(judgements[i], controls=tuple(out))


def evaluate(specs: list[Spec], *, jobs: int = 1, scheduler: str | None = None, backend: str = "numba",
             cache_dir=None, progress=None, controls: bool = False) -> CheckOutcome:
    """Run every spec (cells pooled through one map), judge each claim, draw each figure.

    Specs with adaptive replicates get more in batches until every cell is decided or their
    ``max`` is reached; with ``controls`` each claim's negative controls are run and judged too.
    """
    from simcomm.plotting import bound_vs_empirical

    mapper, executor = make_map(jobs, scheduler)

    def run(batch):
        return run_many(batch, map=mapper, backend=backend, cache_dir=cache_dir, progress=progress,
                        executor=executor, threads_per_cell=threads_for(jobs, scheduler))

    specs = list(specs)
    results = run(specs)
    for spec, res in zip(specs, results):
        check_plot_columns(spec, res.table.columns)  # [plot] x/hue/labels name real columns
    judgements = [_judge(spec, res.table) for spec, res in zip(specs, results)]
    _more_replicates(specs, results, judgements, run)
    if controls:
        _run_controls(specs, results, judgements, run)
    figures = {spec.claim.id: bound_vs_empirical(j, spec.plot, _context(spec, res))
               for spec, res, j in zip(specs, results, judgements)}
    return CheckOutcome(results, judgements, figures)
