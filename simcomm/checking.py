"""The main job as a library call: select specs, run them through one map, judge, draw.

Nothing here writes files: :func:`check` returns the tables, judgements, figures and report text,
and the CLI writes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from simcomm._errors import UserError, closest
from simcomm.claims import Judgement, judge
from simcomm.cost import cell_seconds
from simcomm.experiments import get_experiment
from simcomm.results import Results
from simcomm.runner import make_map, run_many, threads_for
from simcomm.spec import ControlSpec, Spec, check_plot_columns, find_specs, load, with_control

__all__ = ["select_specs", "evaluate", "CheckOutcome", "verdict_provenance", "split_runnable"]

#: how to install a package an experiment requires, where plain ``pip install NAME`` is not the way
_INSTALL = {"torch": "pip install torch==2.13.0"}


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


def split_runnable(specs: list[Spec]) -> tuple[list[Spec], str | None]:
    """The specs whose experiments can run here, and one line naming the rest and what they need (or ``None``).

    An experiment declares the packages of an extra it needs (``requires``); a spec whose experiment
    needs one that is not installed is set aside, so a check without the extra still judges the rest.
    """
    import importlib.util

    ok, missing = [], {}
    for spec in specs:
        absent = [p for p in get_experiment(spec.experiment).requires if importlib.util.find_spec(p) is None]
        if absent:
            for p in absent:
                missing.setdefault(p, []).append(spec.claim.id)
        else:
            ok.append(spec)
    if not missing:
        return ok, None
    parts = [f"{len(ids)} {'needs' if len(ids) == 1 else 'need'} {p} ({_INSTALL.get(p, 'pip install ' + p)}): "
             f"{', '.join(ids)}"
             for p, ids in missing.items()]
    return ok, "not run, " + "; ".join(parts)


def verdict_provenance(recorded: dict, specs: list[Spec]) -> dict[str, list[str]]:
    """Whether recorded full-grid verdicts come from these specs, by spec hash.

    Parameters
    ----------
    recorded : dict
        Claim id -> entry of ``verdicts.json`` (``claims``); an entry written by ``check --full`` has
        ``spec_hash`` (and ``commit``).
    specs : list of Spec
        The specs as ``check --full`` loads them (full grids).

    Returns
    -------
    dict
        ``stale``: claims whose recorded ``spec_hash`` differs from their spec's hash (the spec changed
        after its verdict was made: re-run it); ``unrecorded``: claims whose entry has no ``spec_hash``
        (made before hashes were recorded, so its provenance cannot be checked); ``missing``: claims
        without an entry.
    """
    out = {"stale": [], "unrecorded": [], "missing": []}
    for spec in specs:
        entry = recorded.get(spec.claim.id)
        if entry is None:
            out["missing"].append(spec.claim.id)
        elif not entry.get("spec_hash"):
            out["unrecorded"].append(spec.claim.id)
        elif entry["spec_hash"] != spec.hash:
            out["stale"].append(f"{spec.claim.id} (recorded {entry['spec_hash']}, spec now {spec.hash})")
    return out


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


@dataclass
class Trial:
    """One judgement to reach: a spec, its results so far, how it is judged, and the latest verdict.

    Claims and their negative controls are trials alike; adaptive replicates extend a trial in place
    of its own value (spec, results, judgement), never by position in parallel lists.
    """

    spec: Spec
    results: Results
    judge: Callable  # (spec, table) -> Judgement
    judgement: Judgement | str | None = None

    def rejudge(self) -> None:
        """Judge the current results (a control whose rows cannot be judged records why, as text)."""
        try:
            self.judgement = self.judge(self.spec, self.results.table)
        except UserError as exc:
            self.judgement = str(exc)

    @property
    def undecided(self) -> bool:
        """Adaptive replicates left and a cell still inconclusive."""
        j, s = self.judgement, self.spec
        return (isinstance(j, Judgement) and bool(s.max_replicates) and s.replicates < s.max_replicates
                and bool((j.cells["verdict"] == "inconclusive").any()))


def _more_replicates(trials: list[Trial], run) -> None:
    """Adaptive replicates: while a trial with ``{min, max}`` has undecided cells, double its replicates.

    Every look is judged at ``alpha / looks``, the looks planned when the spec was loaded
    (Bonferroni over the planned looks, :attr:`Spec.looks` never recomputed from the replicates
    reached), so adding replicates until a cell is decided cannot inflate the family-wise error.
    """
    while todo := [t for t in trials if t.undecided]:
        batch = [dataclasses.replace(t.spec, first_replicate=t.spec.replicates,
                                     replicates=min(2 * t.spec.replicates, t.spec.max_replicates)) for t in todo]
        for t, extra, b in zip(todo, run(batch), batch):
            t.results = Results(pd.concat([t.results.table, extra.table], ignore_index=True),
                                {**t.results.meta, "replicates_used": b.replicates})
            t.spec = dataclasses.replace(t.spec, replicates=b.replicates, first_replicate=0)
            t.rejudge()


def _claim_trial(spec: Spec, res: Results) -> Trial:
    t = Trial(spec, res, lambda s, table: _judge(s, table))
    t.rejudge()
    if isinstance(t.judgement, str):  # the claim itself must be judgeable: its error is the user's to fix
        raise UserError(t.judgement)
    return t


def _control_trials(owner: Trial, run_specs: dict) -> list[tuple[ControlSpec, Trial]]:
    """The owner's controls as trials: a ``set`` re-runs the experiment, the rest transform its table."""
    out = []
    for c in owner.spec.claim.controls:
        spec = run_specs.get(id(c), owner.spec)

        def judge_control(s, table, c=c):
            claim, table = c.transform(s.claim, table)
            return judge(claim, table, **design(s))

        out.append((c, Trial(spec, owner.results, judge_control)))
    return out


def _run_controls(trials: list[Trial], run) -> None:
    """Judge every claim's negative controls (adaptive replicates as for the claim); each must be violated."""
    reruns = {id(c): dataclasses.replace(with_control(t.spec, c), seed=t.spec.seed)
              for t in trials for c in t.spec.claim.controls if c.set}
    per_owner = [_control_trials(t, reruns) for t in trials]
    fresh = [ct for controls in per_owner for c, ct in controls if c.set]
    for ct, res in zip(fresh, run([ct.spec for ct in fresh]) if fresh else []):
        ct.results = res
    for controls in per_owner:
        for _, ct in controls:
            ct.rejudge()
    _more_replicates([ct for ct in fresh if isinstance(ct.judgement, Judgement)], run)
    for t, controls in zip(trials, per_owner):
        out = []
        for c, ct in controls:
            v = ct.judgement if isinstance(ct.judgement, str) else ct.judgement.verdict.value
            out.append((c.name, v if v in ("holds", "violated", "inconclusive", "ill-posed") else f"error: {v}"))
        t.judgement = dataclasses.replace(t.judgement, controls=tuple(out))


def evaluate(specs: list[Spec], *, jobs: int = 1, scheduler: str | None = None, backend: str = "numba",
             cache_dir=None, progress=None, controls: bool = False) -> CheckOutcome:
    """Run every spec (cells pooled through one map), judge each claim, draw each figure.

    Specs with adaptive replicates get more in batches until every cell is decided or their
    ``max`` is reached; with ``controls`` each claim's negative controls are run and judged too.
    """
    from simcomm.plotting import bound_vs_empirical

    mapper, executor = make_map(jobs, scheduler)

    # a progress bar that can name its passes (simcomm.cli._common.progress_bar.phase) is told which
    # one starts: the count restarts for adaptive replicates and for the controls
    phase = getattr(getattr(progress, "__self__", None), "phase", None)

    def run(batch, name=None):
        if name is not None and phase is not None:
            phase(name)
        return run_many(batch, map=mapper, backend=backend, cache_dir=cache_dir, progress=progress,
                        executor=executor, threads_per_cell=threads_for(jobs, scheduler), seconds=cell_seconds)

    specs = list(specs)
    results = run(specs)
    for spec, res in zip(specs, results):
        check_plot_columns(spec, res.table.columns)  # [plot] x/hue/labels name real columns
    trials = [_claim_trial(spec, res) for spec, res in zip(specs, results)]
    _more_replicates(trials, lambda batch: run(batch, "adaptive replicates"))
    if controls:
        _run_controls(trials, lambda batch: run(batch, "negative controls"))
    figures = {t.spec.claim.id: bound_vs_empirical(t.judgement, t.spec.plot, _context(t.spec, t.results))
               for t in trials}
    return CheckOutcome([t.results for t in trials], [t.judgement for t in trials], figures)
