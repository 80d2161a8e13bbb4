"""Text of the verdict table and of ``figures/REPORT.md`` from judgements (no I/O here)."""

from __future__ import annotations

import math
import re

from simcomm.claims import KINDS, Judgement

__all__ = ["report_markdown", "verdict_rows", "controls_text", "update_readme", "PAPERS", "with_committed",
           "verdict_counts", "RATIO_DEFINITIONS", "DETECT_DEFINITION", "CLASS_TITLES", "detect_text", "by_class",
           "class_counts", "seed_paper_summary"]

PAPERS = {
    "expgraph": "Ying et al. 2021, Exponential graph is provably efficient for decentralized deep training",
    "rtopk": "Barnes, Inan, Isik & Özgür 2020, rTop-k: a statistical estimation approach to distributed SGD",
    "urq": "Khirirat, Feyzmahdavian & Johansson 2018, Distributed learning with compressed gradients",
    "is": "Alain et al. 2015, Variance reduction in SGD by distributed importance sampling",
    "basegraph": "Takezawa, Sato, Niwa & Yamada 2023, Beyond exponential graph: communication-efficient "
                 "topologies for decentralized learning via finite-time convergence",
    "fmmc": "Boyd, Diaconis & Xiao 2004, Fastest mixing Markov chain on a graph",
    "thomsen": "Thomsen, Taylor & Dieuleveut 2025 (step sizes of compressed GD with and without error feedback, "
               "as cited in the notes [S])",
    "ef21": "Richtárik, Sokolov & Fatkhullin 2021, EF21: a new, simpler, theoretically better, and practically "
            "faster error feedback",
    "choco": "Koloskova, Stich & Jaggi 2019, Decentralized stochastic optimization and gossip algorithms with "
             "compressed communication (CHOCO)",
    "pushsum": "Assran, Loizou, Ballas & Rabbat 2019, Stochastic gradient push for distributed deep learning "
               "(push-sum; Kempe, Dobra & Gehrke 2003)",
    "equitopo": "Song et al. 2022, Communication-efficient topologies for decentralized learning with O(1) "
                "consensus rate (EquiTopo)",
    "tracking": "gradient tracking (Nedić, Olshevsky & Shi 2017) and exact diffusion (Yuan, Ying, Zhao & Sayed "
                "2019)",
    "pep": "performance estimation (Drori & Teboulle 2014; Taylor, Hendrickx & Glineur 2017; PEPit)",
    "natural": "Horváth et al. 2019, Natural compression for distributed deep learning (and the other unbiased "
               "compressors of this project)",
    "sign": "scaled-sign compressors: EF-signSGD (Karimireddy et al. 2019) and 1-bit Adam (Tang et al. 2021)",
    "net": "simcomm's network time model (no paper: this project's own statements)",
    "local": "local SGD / FedAvg and its heterogeneity floor (Koloskova et al. 2020; Woodworth et al. 2020, as "
             "recalled [R])",
    "diloco": "Douillard et al. 2023, DiLoCo: distributed low-communication training of language models (as "
              "recalled [R])",
    "streaming_diloco": "Douillard et al. 2025, Streaming DiLoCo with overlapping communication (as recalled [R])",
    "sparseloco": "Sarfi et al. 2025, SparseLoCo: sparse, quantised pseudo-gradients with error feedback (and "
                  "MuLoCo's 2-bit pseudo-gradients), as recalled [R]",
    "demo": "Peng, Quesnelle & Kingma 2024, DeMo: decoupled momentum optimization (as recalled [R])",
}
#: the four seed papers (papers/, seeds/): the report sums up what is decided about each
SEED_PAPERS = ("expgraph", "rtopk", "urq", "is")

#: Per paper: what it claims (with tags), what simcomm checks, what it cannot check here. The project's
#: own words; the longer notes are in docs/papers/.
PAPER_INTRO = {
    "expgraph": ("The static exponential graph has a spectral gap of order 1/log n, with rho <= 1 - 2/(1 + "
                 "ceil(log2 n)), attained for even n [P]; one-peer exponential graphs average exactly in "
                 "ceil(log2 n) steps (for powers of 2) [P, S]; decentralized momentum SGD over them is as "
                 "effective as over denser graphs [P]; transient iterations of order n^3/(1 - rho)^2 [R].",
                 "spectra and exact averaging (identities and their counterexamples), noisy consensus, DmSGD "
                 "against parallel SGD on quadratics and least squares, transient orderings with censoring.",
                 "the ImageNet experiments and the paper's rate constants."),
    "rtopk": ("Sparse, skewed gradients: keeping a random k of the top r coordinates (rTop-k) is the "
              "statistically optimal way to send them [P]; its estimation error scales like s^2 log d/(n k) "
              "[B]; with error feedback it trains better than top-k and random-k [P].",
              "operator identities, the mean-estimation error in a precisely stated stand-in model [N] "
              "(exact MSE, bound, scaling, the crossover against top-k'), skew of real gradients, EF-SGD "
              "on digits and MNIST-5000.",
              "CIFAR-10, ImageNet and Penn Treebank, and the paper's own model and constants."),
    "urq": ("Unbiased random quantizers with second-moment factor alpha, synchronous, delayed and "
            "asynchronous compressed gradient methods and compressed IAG, with explicit step sizes and "
            "rates [P, B]; a step-size condition 2/(L(1 + sqrt(1 + 8 tau(tau + 1)))) for delays [B].",
            "unbiasedness and exact variances, rates derived here [N], the exact stability threshold of "
            "delayed GD [N] and how far the seed's condition lies below it, compressed IAG.",
            "the paper's rate constants (the full text was not available)."),
    "is": ("Sampling examples in proportion to their gradient norm minimises the variance of the "
           "reweighted (unbiased) gradient [P]; stale scores from workers still reduce it, between the ideal "
           "and the uniform variance, and training is faster [P, S]; per-example norms from one backward "
           "pass [S].",
           "unbiasedness, the C3 minimum, sampled against exact Tr Cov, staleness, the norm trick, a byte "
           "model of communication [N], training on digits, breast cancer and MNIST-5000.",
           "permutation-invariant SVHN and the paper's network."),
    "basegraph": ("For every n and maximum degree k, a finite sequence of doubly stochastic matrices whose "
                  "product is exactly J [P], of length at most 2 log_{k+1}(n) + 2 [C]; better decentralized "
                  "learning than exponential graphs when n is not a power of 2 [P].",
                  "exact products for n up to 512 and k up to 4, the length, consensus error and loss of "
                  "DSGD against the one-peer exponential graph.",
                  "the paper's deep-learning experiments."),
    "fmmc": ("The weights minimising rho on a fixed graph solve a semidefinite program [P].",
             "the SDP never loses to Metropolis-Hastings weights; the even ring's closed form [N].",
             "graphs beyond n = 128 for the general SDP (too slow on 2 cores)."),
    "net": ("No paper: latency/bandwidth/straggler time model of this project [N].",
            "encoded payload sizes, the allgather/allreduce crossover, when EF top-k reaches a target first, "
            "one-peer against static gossip in simulated time.",
            "the comparison with measured MPI times needs a quiet machine (sims/extra/)."),
}
_PAPER_ORDER = ("expgraph", "basegraph", "fmmc", "choco", "pushsum", "equitopo", "tracking", "rtopk", "urq", "is",
                "thomsen", "ef21", "pep", "natural", "sign", "net", "local", "diloco", "streaming_diloco", "sparseloco",
                "demo")


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


def detect_text(j: Judgement) -> str:
    """The claim's detectable ratio for a table cell (see :data:`DETECT_DEFINITION`)."""
    d = j.detect
    if math.isnan(d):
        return "—"
    if math.isinf(d):
        return "none"
    if "exact" in j.cells and bool(j.cells["exact"].fillna(True).all()):
        return "exact"
    return f"{d:.3g}"


def by_class(judgements: list[Judgement]) -> list[tuple[str, list[Judgement]]]:
    """The judgements split into the report's tables, one per class (:data:`CLASS_TITLES`), in that order."""
    return [(a, [j for j in judgements if j.claim.claim_class == a]) for a in CLASS_TITLES
            if any(j.claim.claim_class == a for j in judgements)]


def class_counts(judgements: list[Judgement]) -> str:
    """One line: how many claims of each class, and that only the first three are findings."""
    n = {a: sum(j.claim.claim_class == a for j in judgements) for a in CLASS_TITLES}
    def count(k: int, words: tuple) -> str:
        return f"{k} {words[k != 1]}"

    parts = ", ".join(count(n[a], CLASS_TITLES[a][2]) for a in CLASS_TITLES)
    findings = n["seed"] + n["other"] + n["derived"]
    return (f"{count(len(judgements), ('claim', 'claims'))} by class: {parts}; the first three classes "
            f"({count(findings, ('claim', 'claims'))}) are findings, the consistency checks are not.")


def seed_paper_summary(judgements: list[Judgement], committed: dict | None = None) -> list[str]:
    """Per seed paper, what its seed-class claims decide: each one's verdict with its deciding numbers.

    The numbers are the verdict's own: the tightest ratio (see the kind's definition), the departure it
    would have detected with probability 0.8, and the reason of a verdict other than holds. Claims of
    other classes keyed by the paper are counted beside it: they are not findings about the paper.
    With ``committed`` (quick runs), a verdict that differs from the committed full-grid one shows both.
    """
    lines = ["**What is decided about each seed paper** (only its seed-class claims decide; tightest ratio "
             "and detects (80%) as defined below):", ""]
    for paper in SEED_PAPERS:
        mine = [j for j in judgements if j.claim.paper == paper]
        seed = [j for j in mine if j.claim.claim_class == "seed"]
        rest = {a: sum(j.claim.claim_class == a for j in mine) for a in ("derived", "check")}
        lines.append(f"- *{PAPERS[paper]}*: " + (verdict_counts(seed).replace("claims:", "seed claims:")
                                                  .replace("claim:", "seed claim:") if seed
                                                  else "no seed claim is judged here.")
                     + f" Beside them, not deciding: {rest['derived']} derived, {rest['check']} checks.")
        for j in seed:
            why = f" ({_short(j.reason)})" if j.reason and j.verdict.value != "holds" else ""
            verdict = with_committed(j.verdict.value, j, committed)
            lines.append(f"  - `{j.claim.id}` [{j.provenance}] **{verdict}**{why}: tightest ratio "
                         f"{_ratio(j.ratio)}, detects {detect_text(j)}" + (f"; controls {controls_text(j)}"
                                                                          if j.controls else "") + ".")
    return lines + [""]


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def verdict_rows(judgements: list[Judgement]) -> list[list[str]]:
    """Rows of the verdict table: id, paper, statement, provenance, verdict, reason, ratio, controls."""
    return [[j.claim.id, j.claim.paper, j.claim.statement + (f" ({j.scope()})" if j.scope() else ""), j.provenance,
             j.verdict.value, j.reason, _ratio(j.ratio), controls_text(j)] for j in judgements]


#: what "tightest ratio" means for each claim kind (the report defines it for readers of the table)
RATIO_DEFINITIONS = {name: kind.ratio for name, kind in KINDS.items()}

#: what the "detects (80%)" column means (power on the page)
DETECT_DEFINITION = (
    "**Detects (80%)**: the ratio, in the units of the tightest ratio, at which the claim's least powered cell "
    "would be called violated with probability 0.8, at its replicates and measured spread and the Holm level of "
    "one violated cell among its cells: a departure past the bound, margin or claimed effect at least this large "
    "would have been found; a smaller one could hide in a \"holds\" or an \"inconclusive\". `exact` marks "
    "cells without spread (any departure past the line is found); `none` a test that cannot reject at that level, "
    "or only at a ratio at or below 0 (a value of the other sign than the bound: no positive observable is flagged)."
)

#: what a claim is (the spec's ``class``): table title, what a verdict of the class means, (singular, plural)
CLASS_TITLES = {
    "seed": ("Claims of the seed papers",
             "a statement of one of the four seed papers ([P] its text, [B] the seed summary, [S] a secondary "
             "summary): a violation is a finding against the paper as stated",
             ("seed-paper claim", "seed-paper claims")),
    "other": ("Claims of other papers",
              "another paper's statement, keyed by that paper: a violation is a finding against it as recalled",
              ("other paper's claim", "other papers' claims")),
    "derived": ("Bounds derived here",
                "a bound or prediction derived in this project [N] (or recalled [R] and not verified): a violation "
                "refutes the derivation, not a paper", ("derived bound", "derived bounds")),
    "check": ("Consistency checks",
              "the implementation against its own closed form, or a fact that cannot fail: a violation is a bug "
              "here, never a finding about a paper", ("consistency check", "consistency checks")),
}

# Cell columns that hold measurements: NaN there means the runs diverged (non-finite values).
_MEASURED = {"mean", "ci_low", "ci_high", "mean_lo", "mean_hi", "other_mean", "other_lo", "other_hi"}


def with_committed(verdict: str, j: Judgement, committed: dict | None) -> str:
    """``verdict`` plus the committed full-grid verdict in brackets when it differs (quick runs)."""
    full = (committed or {}).get(j.claim.id)
    return verdict if full is None or full == verdict else f"{verdict} (full grid: {full})"


def verdict_counts(judgements: list[Judgement]) -> str:
    """One sentence: how many claims came out each way, e.g. "30 claims: 20 hold, 5 violated, ..."."""
    counts = {}
    for j in judgements:
        counts[j.verdict.value] = counts.get(j.verdict.value, 0) + 1
    def word(v: str, n: int) -> str:  # "1 holds", "2 hold"
        return ("holds" if n == 1 else "hold") if v == "holds" else v

    parts = [f"**{n} {word(v, n)}**" for v, n in sorted(counts.items(), key=lambda t: -t[1])]
    return f"{len(judgements)} claim{'s' if len(judgements) != 1 else ''}: " + ", ".join(parts) + "."


def _ratio_lines(judgements: list[Judgement]) -> list[str]:
    kinds = list(dict.fromkeys(j.claim.kind for j in judgements))
    return ["**Tightest ratio**, per kind of claim (— when no cell gives a finite ratio):", ""] + [
        f"- `{k}`: {KINDS[k].ratio}." for k in kinds if k in KINDS] + [""]


def _value(col: str, v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "diverged" if col in _MEASURED else "—"
        return f"{v:.4g}"
    return _cell(v)


def _column_names(j: Judgement, cols: list[str]) -> list[str]:
    """Column headers a reader can decode; an order claim's interval is of a difference of means."""
    if j.claim.kind not in ("order", "equivalent"):
        return [{"n_rep": "replicates"}.get(c, c) for c in cols]
    lower = j.claim.lower
    of = f"{lower}/other" if j.claim.scale == "log" else f"mean({lower}) - mean(other)"
    names = {"n_rep": "replicates", "other": "compared with", "mean": f"mean ({lower})",
             "other_mean": "mean (other)", "ratio": f"ratio {lower}/other",
             # on a log scale the interval is of the paired ratio, on a linear one of the difference
             "ci_low": f"CI low of {of}", "ci_high": f"CI high of {of}",
             "mean_lo": f"CI low ({lower})", "mean_hi": f"CI high ({lower})", "other_lo": "CI low (other)",
             "other_hi": "CI high (other)"}
    return [names.get(c, c) for c in cols]


def _cell_lines(j: Judgement, limit: int = 12) -> list[str]:
    cells = j.cells
    if "verdict" not in cells:  # recorded without its cells (verdicts.json)
        return ["", "Cells: not recorded in this report; `simcomm check " + j.claim.id + " --full` lists them."]
    bad = cells[cells["verdict"] != "holds"]
    show = bad if len(bad) else cells
    # the figure's columns (its point and lines) stay out of the table; a censored side shows when there is one
    hidden = {"note", "exact", "estimate", "line_low", "line_high"}
    if "censored_side" in show and not show["censored_side"].fillna("").astype(bool).any():
        hidden.add("censored_side")
    cols = [c for c in show.columns if c not in hidden]
    head = "| " + " | ".join(_column_names(j, cols)) + " | note |"
    lines = ["", f"{'Cells not holding' if len(bad) else 'Cells'} ({len(show)} of {len(cells)}"
             f"{', first ' + str(limit) + ' shown' if len(show) > limit else ''}):", "", head,
             "|" + "---|" * (len(cols) + 1)]
    for _, row in show.head(limit).iterrows():
        vals = [_value(c, row[c]) for c in cols]
        lines.append("| " + " | ".join(vals) + f" | {_cell(row.get('note', '') or '')} |")
    return lines


def _effect_text(c) -> str:
    if c.kind == "equal":
        return f"equivalence margin rel {c.margin_rel:g}, abs {c.margin_abs:g} (rounding atol {c.atol:g})"
    if c.kind == "equivalent":
        return f"two-sided equivalence of the methods, margin rel {c.margin_rel:g}, abs {c.margin_abs:g}"
    if c.kind == "slope":
        return f"slope margin {c.slope_tol:g}"
    sense = "" if c.kind != "order" else ("superiority (< by at least min_effect), " if c.strict
                                          else "non-inferiority (<= up to min_effect), ")
    return f"{sense}min_effect rel {c.min_effect_rel:g}, abs {c.min_effect_abs:g}"


def _why(claim, name: str) -> str:
    return next((c.why for c in claim.controls if c.name == name), "")


def _paper_intro(paper: str) -> list[str]:
    """The heading and opening paragraph of a paper's part of the report."""
    claims, checks, cannot = PAPER_INTRO.get(paper, ("", "", ""))
    lines = [f"# {PAPERS.get(paper, paper)}", ""]
    if claims:
        lines += [f"**What it claims.** {claims} **What simcomm checks.** {checks} **What it cannot check "
                  f"here.** {cannot} Notes: `docs/papers/`.", ""]
    return lines


def report_sections(text: str) -> dict[str, list[str]]:
    """The per-claim sections of a report (``## <id>`` up to the next heading), by claim id."""
    sections, current = {}, None
    for line in text.splitlines():
        if line.startswith("# "):
            current = None
        elif line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    return {k: v[:-1] if v and v[-1] == "" else v for k, v in sections.items()}


def report_markdown(judgements: list[Judgement], figures: dict[str, str], *, mode: str, meta: dict,
                    committed: dict | None = None, kept: dict[str, list[str]] | None = None) -> str:
    """The report: a verdict table, then one section per claim with its figure and cells.

    Parameters
    ----------
    judgements : list of Judgement
    figures : dict
        Claim id -> figure file name relative to the report.
    mode : {"quick", "full"}
    meta : dict
        Run metadata shown in the header (backend, executor, versions, commit).
    committed : dict, optional
        Claim id -> the committed full-grid verdict; shown next to a quick verdict that differs.
    kept : dict, optional
        Claim id -> the lines of its section in the previous report (:func:`report_sections`), used for
        a judgement recorded without its cells (a claim a partial ``--full`` run did not re-judge).
    """
    differ = [j.claim.id for j in judgements if with_committed(j.verdict.value, j, committed) != j.verdict.value]
    note = []
    if committed is not None and mode == "quick":
        note = [f"Quick grids: next to a verdict, in brackets, the committed full-grid verdict where it differs "
                f"({len(differ)} claim{'' if len(differ) == 1 else 's'}); the full grids decide.", ""]
    lines = ["# simcomm check — report", "", class_counts(judgements), "", verdict_counts(judgements), "", *note,
             f"Grids: **{mode}**. Backend: `{meta.get('backend')}`. Executor: {meta.get('executor')}. "
             f"simcomm {meta.get('versions', {}).get('simcomm')}, numpy {meta.get('versions', {}).get('numpy')}, "
             f"commit `{(meta.get('git_commit') or 'unknown')[:10]}`.", "",
             "Provenance tags (see `docs/papers/`): [P] the paper's text, [C] the authors' code, "
             "[N] derived here and checked numerically (not the paper's theorem), [B] the seed summary, "
             "[S] a secondary summary, [R] recollection. The full texts of the papers were not available: "
             "where the paper's exact statement is unknown, the claim checks the derived statement named in its "
             "row.", "",
             *seed_paper_summary(judgements, committed), *_ratio_lines(judgements), DETECT_DEFINITION, ""]
    for cls, group in by_class(judgements):
        title, what, _ = CLASS_TITLES[cls]
        lines += [f"**{title}** ({what}). {verdict_counts(group)}", "",
                  "| claim | paper | statement | provenance | verdict | reason | tightest ratio | detects (80%) "
                  "| controls |", "|---|---|---|---|---|---|---|---|---|"]
        for row, j in zip(verdict_rows(group), group):
            row[4] = with_committed(row[4], j, committed)
            row = [_cell(c) for c in row]
            row[0] = f"[{row[0]}](#{j.claim.id.replace('.', '').lower()})"
            row.insert(7, detect_text(j))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    order = {p: i for i, p in enumerate(_PAPER_ORDER)}
    paper = None
    for j in sorted(judgements, key=lambda j: (order.get(j.claim.paper, len(order)), j.claim.id)):
        c = j.claim
        if c.paper != paper:
            paper = c.paper
            lines += ["", *_paper_intro(paper)]
        if "verdict" not in j.cells and kept and c.id in kept:
            lines += ["", *kept[c.id]]
            continue
        lines += ["", f"## {c.id}", "",
                  f"*{PAPERS.get(c.paper, c.paper)}* — provenance [{j.provenance}] — kind `{c.kind}`", "",
                  f"**Statement.** {c.statement}" + (f" *Scope: {j.scope()}.*" if j.scope() else ""), "",
                  f"**Verdict: {j.verdict.value}**" + (f" ({j.reason})" if j.reason else "")
                  + f"; tightest ratio empirical/bound {_ratio(j.ratio)}; detects (80%) {detect_text(j)}; "
                  f"class {c.claim_class} ({CLASS_TITLES[c.claim_class][2][0]}); {len(j.cells)} cells; "
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


_SCALING_CELL = re.compile(r'<td width="50%"><a href="(?:\.\./)?figures/scaling_[^"]*">.*?</td>')


def _claims_table(judgements: list[Judgement], figures: dict[str, str], at: str = "figures") -> list[str]:
    lines = [class_counts(judgements), ""]
    for cls, group in by_class(judgements):
        title, what, _ = CLASS_TITLES[cls]
        lines += [f"**{title}** (class `{cls}`: {what}). {verdict_counts(group)}", "",
                  "| claim | statement | provenance | verdict | reason | tightest ratio | detects (80%) | controls "
                  "| figure |", "|---|---|---|---|---|---|---|---|---|"]
        for j in group:
            v = j.verdict.value
            shown = {"violated": f"**{v}**", "inconclusive": f"*{v}*", "ill-posed": f"*{v}*"}.get(v, v)
            fig = f"[png]({at}/{figures[j.claim.id]})" if j.claim.id in figures else ""
            lines.append("| " + " | ".join([f"`{j.claim.id}`", _cell(j.claim.statement), f"[{j.provenance}]", shown,
                                             _cell(j.reason), _ratio(j.ratio), detect_text(j),
                                             _cell(controls_text(j)), fig]) + " |")
        lines.append("")
    return lines[:-1]


def _gallery(judgements: list[Judgement], figures: dict[str, str], titles: dict[str, str],
             tail: list[str], at: str = "figures") -> list[str]:
    cells = [f'<td width="50%"><a href="{at}/{figures[j.claim.id]}"><img src="{at}/{figures[j.claim.id]}" '
             f'width="100%"></a><br><b>{j.claim.id}</b> ({j.verdict.value}): {titles.get(j.claim.id, "")}</td>'
             for j in judgements if j.claim.id in figures] + tail
    lines = ["<table>"]
    for i in range(0, len(cells), 2):
        lines += ["<tr>", *cells[i:i + 2], "</tr>"]
    return lines + ["</table>"]


def class_verdict_lines(judgements: list[Judgement]) -> list[str]:
    """The counts per class (:func:`class_counts`), then one line per class with its verdicts."""
    lines = [class_counts(judgements), ""]
    for a, js in by_class(judgements):
        lines.append(f"- {CLASS_TITLES[a][0]}: {verdict_counts(js)}")
    return lines


def update_readme(text: str, judgements: list[Judgement], figures: dict[str, str], titles: dict[str, str],
                  at: str = "figures") -> str:
    """A page's text with its generated blocks (between their markers) regenerated.

    The blocks: ``counts`` (claims per class and their verdicts), ``claims`` (the tables) and
    ``gallery``; a page holds any of them (README.md the counts, docs/claims.md the tables and the
    gallery). ``at`` is the figures folder as the page links it (``"../figures"`` from
    ``docs/claims.md``). The ``scaling_*`` figures of the gallery (drawn by ``simcomm scaling``) are kept.
    """
    def between(text, name, body):
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        return head + start + "\n" + "\n".join(body) + "\n" + end + tail

    present = [name for name in ("counts", "claims", "gallery")
               if f"<!-- {name}:start -->" in text and f"<!-- {name}:end -->" in text]
    if not present:
        raise ValueError("the page has none of the '<!-- counts|claims|gallery:start -->' ... ':end -->' markers")
    if "counts" in present:
        text = between(text, "counts", class_verdict_lines(judgements))
    if "claims" in present:
        text = between(text, "claims", _claims_table(judgements, figures, at))
    if "gallery" in present:
        old_gallery = text.split("<!-- gallery:start -->", 1)[-1].split("<!-- gallery:end -->", 1)[0]
        text = between(text, "gallery", _gallery(judgements, figures, titles, _SCALING_CELL.findall(old_gallery), at))
    return text
