"""Text of the verdict table and of ``figures/REPORT.md`` from judgements (no I/O here)."""

from __future__ import annotations

import math

from simcomm.claims import Judgement

__all__ = ["report_markdown", "verdict_rows", "PAPERS"]

PAPERS = {
    "expgraph": "Ying et al. 2021, Exponential graph is provably efficient for decentralized deep training",
    "rtopk": "Barnes, Inan, Isik & Özgür 2020, rTop-k: a statistical estimation approach to distributed SGD",
    "urq": "Khirirat, Feyzmahdavian & Johansson 2018, Distributed learning with compressed gradients",
    "is": "Alain et al. 2015, Variance reduction in SGD by distributed importance sampling",
}


def _cell(text) -> str:
    """Text safe inside a markdown table cell (statements contain norms like ||x||)."""
    return str(text).replace("|", "\\|")


def _ratio(r: float) -> str:
    return "—" if not math.isfinite(r) else f"{r:.4g}"


def controls_text(j: Judgement) -> str:
    """``2/2 caught`` (each control came out violated), or which ones were not; empty if none ran."""
    if not j.controls:
        return ""
    missed = [f"{n}: {v}" for n, v in j.controls if v != "violated"]
    caught = len(j.controls) - len(missed)
    return f"{caught}/{len(j.controls)} caught" + (f" (NOT caught: {', '.join(missed)})" if missed else "")


def verdict_rows(judgements: list[Judgement]) -> list[list[str]]:
    """Rows of the verdict table: id, paper, statement, provenance, verdict, reason, ratio, controls."""
    return [[j.claim.id, j.claim.paper, j.claim.statement + (f" ({j.scope()})" if j.scope() else ""), j.provenance,
             j.verdict.value, j.reason, _ratio(j.ratio), controls_text(j)] for j in judgements]


def _cell_lines(j: Judgement, limit: int = 12) -> list[str]:
    cells = j.cells
    bad = cells[cells["verdict"] != "holds"]
    show = bad if len(bad) else cells
    cols = [c for c in show.columns if c not in ("note",)]
    head = "| " + " | ".join(cols) + " | note |"
    lines = ["", f"{'Cells not holding' if len(bad) else 'Cells'} ({len(show)} of {len(cells)}"
             f"{', first ' + str(limit) + ' shown' if len(show) > limit else ''}):", "", head,
             "|" + "---|" * (len(cols) + 1)]
    for _, row in show.head(limit).iterrows():
        vals = [f"{v:.4g}" if isinstance(v, float) else _cell(v) for v in (row[c] for c in cols)]
        lines.append("| " + " | ".join(vals) + f" | {_cell(row.get('note', '') or '')} |")
    return lines


def _effect_text(c) -> str:
    if c.kind == "equal":
        return f"equivalence margin rel {c.margin_rel:g}, abs {c.margin_abs:g} (rounding atol {c.atol:g})"
    if c.kind == "slope":
        return f"slope margin {c.slope_tol:g}"
    sense = "" if c.kind != "order" else ("superiority (<), " if c.strict else "non-inferiority (<=), ")
    return f"{sense}min_effect rel {c.min_effect_rel:g}, abs {c.min_effect_abs:g}"


def _why(claim, name: str) -> str:
    return next((c.why for c in claim.controls if c.name == name), "")


def report_markdown(judgements: list[Judgement], figures: dict[str, str], *, mode: str, meta: dict) -> str:
    """The report: a verdict table, then one section per claim with its figure and cells.

    Parameters
    ----------
    judgements : list of Judgement
    figures : dict
        Claim id -> figure file name relative to the report.
    mode : {"quick", "full"}
    meta : dict
        Run metadata shown in the header (backend, executor, versions, commit).
    """
    lines = ["# simcomm check — report", "",
             f"Grids: **{mode}**. Backend: `{meta.get('backend')}`. Executor: {meta.get('executor')}. "
             f"simcomm {meta.get('versions', {}).get('simcomm')}, numpy {meta.get('versions', {}).get('numpy')}, "
             f"commit `{(meta.get('git_commit') or 'unknown')[:10]}`.", "",
             "Provenance tags (from `shared/papers/`): [P] the paper's text, [C] the authors' code, "
             "[N] derived here and checked numerically (not the paper's theorem), [B] the seed summary, "
             "[R] recollection. The full texts of the papers were not available: where the paper's exact "
             "statement is unknown, the claim checks the derived statement named in its row.", "",
             "| claim | paper | statement | provenance | verdict | reason | tightest ratio | controls |",
             "|---|---|---|---|---|---|---|---|"]
    for row, j in zip(verdict_rows(judgements), judgements):
        row = [_cell(c) for c in row]
        row[0] = f"[{row[0]}](#{j.claim.id.replace('.', '').lower()})"
        lines.append("| " + " | ".join(row) + " |")
    for j in judgements:
        c = j.claim
        lines += ["", f"## {c.id}", "",
                  f"*{PAPERS.get(c.paper, c.paper)}* — provenance [{j.provenance}] — kind `{c.kind}`", "",
                  f"**Statement.** {c.statement}" + (f" *Scope: {j.scope()}.*" if j.scope() else ""), "",
                  f"**Verdict: {j.verdict.value}**" + (f" ({j.reason})" if j.reason else "")
                  + f"; tightest ratio empirical/bound {_ratio(j.ratio)}; {len(j.cells)} cells; "
                  f"family-wise confidence {c.confidence:g} (Holm over the cells; per-cell level in the "
                  f"column `level`); {_effect_text(c)}; test `{c.test}` on a {c.scale} scale."]
        if j.controls:
            lines += ["", "**Negative controls** (each must come out violated): "
                      + "; ".join(f"`{n}` {v}" + (f" — {w}" if (w := _why(c, n)) else "") for n, v in j.controls)
                      + "."]
        if c.id in figures:
            lines += ["", f"![{c.id}]({figures[c.id]})"]
        lines += _cell_lines(j)
    return "\n".join(lines) + "\n"
