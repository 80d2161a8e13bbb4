"""Load and validate TOML specs (see ``sims/README.md``), resolve ``"module:name"`` strings.

Everything a user can get wrong in a spec is caught here, before anything runs, with one line that
names the file, the key and what is allowed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import itertools
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcomm._errors import SpecError, closest

__all__ = ["ClaimSpec", "ControlSpec", "Spec", "CLASSES", "PAPERS", "SEED_PAPERS", "MAX_ILL_POSED", "load", "loads",
           "with_control", "resolve", "sims_dir",
           "find_specs",
           "content_hash", "locate", "n_cells", "check_plot_columns", "PLOT_STYLES"]

#: what a claim is (``class`` in ``[claim]``): only the first three are findings (DESIGN.md, "What a
#: verdict means"). ``seed``: a statement of one of the four seed papers ([P] its text, [B] the seed
#: summary, [S] a secondary summary of it); ``other``: a statement of another paper, keyed by that
#: paper; ``derived``: a bound or prediction derived here [N] (a wrong derivation fails it);
#: ``check``: the implementation against its own closed form, or a fact that cannot fail (a violation
#: is a bug here, never a finding about a paper).
CLASSES = ("seed", "other", "derived", "check")
#: the four seed papers (``papers/``, ``seeds/``)
SEED_PAPERS = ("expgraph", "rtopk", "urq", "is")
#: every paper key: the seed papers, then the other papers a claim may be about; titles in simcomm.report
PAPERS = SEED_PAPERS + ("basegraph", "fmmc", "thomsen", "ef21", "choco", "pushsum", "equitopo", "tracking", "pep",
                        "natural", "sign", "net", "local", "diloco", "streaming_diloco", "sparseloco", "demo")
_CLAIM_KEYS = {
    "id": str, "paper": str, "statement": str, "kind": str, "observable": str, "bound": str,
    "bound_args": dict, "atol": float, "confidence": float, "strict": bool,
    "where": dict, "slope_in": str, "slope_tol": float, "slope_space": str, "compare": str,
    "lower": str, "higher": list, "provenance": str, "margin_rel": float, "margin_abs": float,
    "min_effect_rel": float, "min_effect_abs": float, "scale": str, "test": str, "class": str,
    "method": str, "versus": list, "reaches": list, "max_ill_posed": float,
}
_REPLACED = {"rtol": "'rtol' is gone: an 'equal' claim states an equivalence margin with 'margin_rel' and/or "
                     "'margin_abs'; upper/lower/order state 'min_effect_rel'/'min_effect_abs'",
             "about": "'about' is replaced by 'class': one of " + ", ".join(CLASSES) + " (seed: a seed paper's "
                      "statement; other: another paper's, keyed by 'paper'; derived: a bound derived here [N]; "
                      "check: the implementation against its own closed form, or a fact that cannot fail)"}
_CONTROL_KEYS = {"name": str, "why": str, "set": dict, "bound_scale": float, "bound": str, "swap": bool,
                 "lower_scale": float}
SCALES = ("linear", "log")
#: default largest fraction of a claim's cells that may be ill-posed (the question cannot be asked there)
#: before the claim is inconclusive instead of holding; a spec states its own with ``max_ill_posed``
MAX_ILL_POSED = 0.25
TESTS = ("t", "sign", "bootstrap")
_EXPERIMENT_KEYS = {"name": str, "replicates": object, "seed": int}
_PLOT_KEYS = {
    "x": str, "hue": str, "logx": bool, "logy": bool, "xlabel": str, "ylabel": str, "title": str,
    "style": str, "labels": dict,
}
#: ``[plot] style``: "annotated" (verdict in the title, for the report) or "paper" (see plotting.py)
PLOT_STYLES = ("annotated", "paper")
#: grids up to this many cells are validated cell by cell; larger ones per axis value plus a sample
_VALIDATE_ALL = 10_000
_VALIDATE_SAMPLE = 2_000
_TOP_KEYS = ("plugins", "claim", "experiment", "params", "grid", "quick", "plot", "control", "network")


@dataclass(frozen=True)
class ControlSpec:
    """A negative control: a perturbation under which the claim must come out violated.

    ``set`` re-runs the experiment with parameters overridden (like ``--set``); ``bound_scale``
    multiplies the bound (or predicted slope); ``bound`` judges against another bound; ``swap``
    exchanges ``lower`` and the first of ``higher`` in an order claim; ``lower_scale`` multiplies the
    measured values of an order claim's ``lower`` method (the effect the experiment must resolve).
    """

    name: str
    why: str = ""
    set: dict = field(default_factory=dict)
    bound_scale: float = 1.0
    bound: str | None = None
    swap: bool = False
    lower_scale: float = 1.0

    def transform(self, claim: "ClaimSpec", table):
        """The (claim, table) this control judges: its bound, scale, swap and method scaling applied.

        ``set`` is not applied here: it re-runs the experiment (:func:`with_control`), which changes
        the table the claim is judged on. The judge itself stays pure: it sees only the result.
        """
        if self.bound:
            claim = dataclasses.replace(claim, bound=self.bound)
        if self.bound_scale != 1.0:
            claim = dataclasses.replace(claim, bound_scale=claim.bound_scale * self.bound_scale)
        if self.swap:
            claim = dataclasses.replace(claim, swapped=not claim.swapped)
        if self.lower_scale != 1.0:  # the claimed-lower method made worse by a stated factor
            table = table.copy()
            rows = (table["metric"] == claim.observable) & (table[claim.compare].astype(str) == claim.lower)
            table.loc[rows, "value"] = table.loc[rows, "value"] * self.lower_scale
        return claim, table


@dataclass(frozen=True)
class ClaimSpec:
    """What a claim compares: an observable against a bound (or two methods), and how."""

    id: str
    paper: str
    statement: str
    kind: str
    observable: str
    bound: str | None = None
    bound_args: dict = field(default_factory=dict)
    atol: float = 0.0
    margin_rel: float = 0.0
    margin_abs: float = 0.0
    min_effect_rel: float = 0.0
    min_effect_abs: float = 0.0
    scale: str = "linear"
    test: str = "t"
    confidence: float = 0.99
    strict: bool = False
    where: dict = field(default_factory=dict)
    slope_in: str | None = None
    slope_tol: float | None = None
    slope_space: str = "loglog"
    compare: str | None = None
    lower: str | None = None
    higher: tuple = ()
    provenance: str | None = None
    controls: tuple = ()
    claim_class: str = "derived"
    reaches: tuple = ()
    max_ill_posed: float = MAX_ILL_POSED
    # set by a negative control's transform (never by a spec, never part of the content hash)
    bound_scale: float = 1.0
    swapped: bool = False


@dataclass(frozen=True)
class Spec:
    """A validated spec: experiment, fixed parameters, grid, claim and plot options."""

    name: str
    path: str
    experiment: str
    replicates: int
    seed: int
    params: dict
    grid: dict
    claim: ClaimSpec | None
    plot: dict
    quick: bool
    max_replicates: int | None = None
    source: str = ""
    overrides: tuple = ()
    first_replicate: int = 0  # adaptive replicates: a batch runs replicates first_replicate..replicates-1
    network: dict | None = None  # the validated [network] table: times the experiment's trace rows
    # Planned looks at the data, fixed when the spec is loaded (from replicates = {min, max}) and never
    # recomputed from the replicates reached so far: every look is judged at alpha / looks.
    planned_looks: int = 1
    # the folder the spec was read from (its relative plugin paths are read from there); not hashed
    base: str | None = None

    @property
    def looks(self) -> int:
        """Planned looks at the data: 1, or one per doubling from ``min`` to ``max`` replicates (see :func:`looks`)."""
        return self.planned_looks

    @property
    def n_cells(self) -> int:
        """Number of cells (product of the axis lengths), without building them."""
        return n_cells(self.grid)

    def cells(self) -> list[dict]:
        """Cartesian product of the grid, each merged with the fixed parameters (file order)."""
        keys = list(self.grid)
        return [dict(self.params, **dict(zip(keys, combo))) for combo in itertools.product(*self.grid.values())]

    def to_dict(self) -> dict:
        """Plain-data form (for ``meta.json`` and the content hash)."""
        claim = None if self.claim is None else {k: v for k, v in vars(self.claim).items()
                                                 if k not in ("bound_scale", "swapped")}
        if claim is not None:
            claim["higher"] = list(claim["higher"])
            claim["controls"] = [vars(c) for c in claim["controls"]]
        return dict(
            name=self.name, experiment=self.experiment, replicates=self.replicates,
            max_replicates=self.max_replicates, seed=self.seed,
            params=self.params, grid=self.grid, claim=claim, plot=self.plot, quick=self.quick,
            **({"network": self.network} if self.network else {}),
        )

    @property
    def hash(self) -> str:
        """Content hash of everything that determines the results."""
        return content_hash(self.to_dict())


def __getattr__(name: str):
    """``KINDS``: the names of the registered claim kinds (:data:`simcomm.claims.KINDS`), loaded lazily."""
    if name == "KINDS":
        from simcomm._claims.kinds import KINDS

        return tuple(KINDS)
    raise AttributeError(f"module 'simcomm.spec' has no attribute '{name}'")


def looks(low: int, high: int | None) -> int:
    """Looks of adaptive replicates ``{min = low, max = high}``: low, 2 low, 4 low, ... capped at high.

    Examples
    --------
    >>> looks(4, 32), looks(5, 16), looks(8, None)
    (4, 3, 1)
    """
    if not high or high <= low:
        return 1
    return 1 + math.ceil(math.log2(high / low))


def content_hash(obj: Any) -> str:
    """Short SHA-256 of the canonical JSON form of ``obj``."""
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def sims_dir() -> Path:
    """The folder of shipped specs: the repository's ``sims/`` or the copy inside the wheel."""
    repo = Path(__file__).resolve().parents[1] / "sims"
    return repo if repo.is_dir() else Path(__file__).resolve().parent / "_sims"


def find_specs(folder: Path | None = None) -> list[Path]:
    """All ``*.toml`` spec files in ``folder`` (default: :func:`sims_dir`), sorted by name."""
    return sorted(Path(folder or sims_dir()).glob("*.toml"))


def resolve(ref: str, where: str = "spec"):
    """Import ``"package.module:name"`` and return the object."""
    if not isinstance(ref, str) or ":" not in ref:
        raise SpecError(f"{where}: '{ref}' is not a 'module:name' reference (e.g. 'theory.expgraph:rho_bound')")
    mod_name, _, attr = ref.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError:
        raise SpecError(f"{where}: cannot import module '{mod_name}' named in '{ref}'") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        names = [n for n in dir(mod) if not n.startswith("_")]
        raise SpecError(f"{where}: module '{mod_name}' has no '{attr}'{closest(attr, names)}") from None


def _check_table(table: Any, allowed: dict, where: str) -> dict:
    if not isinstance(table, dict):
        raise SpecError(f"{where}: must be a table")
    for key, value in table.items():
        if key not in allowed:
            raise SpecError(f"{where}: unknown key '{key}'{closest(key, allowed)}; allowed: {', '.join(allowed)}")
        want = allowed[key]
        ok = isinstance(value, want) and not (want in (int, float) and isinstance(value, bool))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            kind = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
                    dict: "a table", list: "a list"}[want]
            raise SpecError(f"{where}: '{key}' must be {kind}, got {value!r}")
    return table


def _parse_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise SpecError(f"--set '{text}': expected key=value, e.g. --set n=[8,16] or --set replicates=5")
    key, _, raw = text.partition("=")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError as exc:
        opener = raw.strip()[:1]
        if opener in ('[', '{', '"', "'"):  # meant as a list, table or quoted string, but not closed
            what = {"[": "list", "{": "table", '"': "string", "'": "string"}[opener]
            raise SpecError(f"--set {key.strip()}: the {what} '{raw}' is malformed ({exc}); "
                            "write a TOML value, e.g. --set \"n=[8, 16]\"") from None
        value = raw  # a bare word is a string
    return key.strip(), value


def loads(text: str, *, name: str = "<string>", path: str = "<string>", quick: bool = False,
          overrides: tuple[str, ...] = (), base: str | Path | None = None) -> Spec:
    """Parse and validate a spec from TOML text. See :func:`load`.

    ``base`` is the folder the spec's relative ``plugins`` paths are read from (default: the working
    directory); the shipped folder (:func:`sims_dir`) also holds its claims to the shipped papers' keys.
    """
    where = path
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML ({exc})") from None
    for key in raw:
        if key not in _TOP_KEYS:
            raise SpecError(f"{where}: unknown table [{key}]{closest(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}")
    if "plugins" in raw:
        # a user's modules register their experiments, compressors, bounds before anything below reads a registry
        plugins = raw["plugins"]
        if isinstance(plugins, str):
            plugins = [plugins]
        if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
            raise SpecError(f"{where}: 'plugins' must be a list of .py paths or module names, e.g. "
                            "plugins = [\"mine.py\"] (before the first [table])")
        from simcomm._plugins import load_plugins

        load_plugins(plugins, base=base, where=f"{where}: plugins")
    exp = dict(_check_table(raw.get("experiment", {}), _EXPERIMENT_KEYS, f"{where} [experiment]"))
    params = dict(_check_table(raw.get("params", {}), {k: object for k in raw.get("params", {})}, f"{where} [params]"))
    grid = dict(_check_table(raw.get("grid", {}), {k: object for k in raw.get("grid", {})}, f"{where} [grid]"))
    plot = dict(_check_table(raw.get("plot", {}), _PLOT_KEYS, f"{where} [plot]"))
    if both := sorted(set(params) & set(grid)):
        raise SpecError(f"{where}: '{both[0]}' is in both [params] and [grid]; keep it in one table "
                        "([params] fixes a value, [grid] sweeps a list)")
    if "name" not in exp:
        raise SpecError(f"{where}: [experiment] needs 'name' "
                        "(a registered experiment; see 'simcomm list --experiments')")
    try:
        from simcomm.experiments import get_experiment  # lazy: the experiments load the numerical stack

        experiment = get_experiment(exp["name"])
    except SpecError as exc:
        raise SpecError(f"{where} [experiment]: {exc}") from None
    network = None
    if "network" in raw:
        # alpha/beta (or a calibration file) and the compute times become fixed parameters of an
        # experiment that declares them ([params] wins); the whole table also times the trace rows
        # the experiment returns (runner: simcomm.network.trace_time).
        from simcomm.network import spec_network_params

        network = spec_network_params(raw["network"], f"{where} [network]",
                                      provided=set(params) | set(grid) | set(raw.get("quick", {})))
        for key, value in network.items():
            if key in experiment.params:
                params.setdefault(key, value)

    def place(key: str, value: Any, origin: str) -> None:
        if key in _EXPERIMENT_KEYS and key != "name":
            exp[key] = value
        elif key.startswith("grid."):
            grid[key[5:]] = value
        elif key.startswith("params."):
            params[key[7:]] = value
        elif key in grid:
            grid[key] = value
        elif key in params or key in experiment.params:
            params[key] = value
        else:
            allowed = sorted(set(experiment.params) | {"replicates", "seed"})
            if new := experiment.renamed(key):
                raise SpecError(f"{origin}: '{key}' was renamed to '{new}'; write {new} = ... instead")
            raise SpecError(f"{origin}: unknown key '{key}'{closest(key, allowed)}; allowed: {', '.join(allowed)}")

    if quick:
        for key, value in raw.get("quick", {}).items():
            place(key, value, f"{where} [quick]")
    for text_ in overrides:
        key, value = text_ if isinstance(text_, tuple) else _parse_override(text_)
        place(key, value, f"--set {key}")
    # A list set on a fixed parameter makes it a grid axis; a scalar on a grid axis fixes it.
    for key in list(params):
        if isinstance(params[key], list):
            grid[key] = params.pop(key)
    for key in list(grid):
        if not isinstance(grid[key], list):
            grid[key] = [grid[key]]
        if len(grid[key]) == 0:
            raise SpecError(f"{where}: grid axis '{key}' is empty; give at least one value")
        if key in params:
            del params[key]
    replicates, max_replicates = _replicates(exp.get("replicates", 1), where)
    seed = exp.get("seed", 0)
    if seed < 0:
        raise SpecError(f"{where}: 'seed' must be >= 0, got {seed}")
    # Validate the cells against the experiment's declared parameters (types, domains, cross rules);
    # a huge grid is validated per axis value and on a bounded sample, never cell by cell.
    validated = {}
    for cell in _cells_to_validate(params, grid):
        out = experiment.validate(cell, where)
        for key, value in out.items():
            validated.setdefault(key, value)
    for key, value in validated.items():  # declared defaults become explicit fixed parameters
        if key not in grid and key not in params:
            params[key] = value
    _check_plot(plot, f"{where} [plot]")
    claim = None
    if "claim" in raw:
        controls = _controls(raw.get("control", []), f"{where} [[control]]", experiment, set(grid) | set(params))
        shipped = base is not None and Path(base).resolve() == sims_dir().resolve()
        claim = _claim(raw["claim"], f"{where} [claim]", set(grid), controls, shipped=shipped)
    elif "control" in raw:
        raise SpecError(f"{where}: [[control]] needs a [claim] to control")
    spec = Spec(name, path, exp["name"], replicates, seed, params, grid, claim, plot, quick, max_replicates,
                text, tuple(overrides), network=network, planned_looks=looks(replicates, max_replicates),
                base=None if base is None else str(base))
    if claim is not None:
        _check_decidable(spec, experiment, where)
        overridden = {(o if isinstance(o, tuple) else _parse_override(o))[0] for o in overrides}
        for c in claim.controls:
            if set(c.set) <= overridden:  # the control's own re-run (with_control) or a --set of its keys
                continue
            if c.set and all(_same_setting(params, grid, k, v) for k, v in c.set.items()):
                raise SpecError(f"{where} [[control]] '{c.name}': 'set' = {c.set} changes nothing (the spec already "
                                "has these values); set a value that breaks what the claim is about")
    return spec


def _same_setting(params: dict, grid: dict, key: str, value: Any) -> bool:
    """Whether a control's ``key = value`` is what the spec already runs."""
    if key in grid:
        return list(grid[key]) == (value if isinstance(value, list) else [value])
    return key in params and params[key] == value


def _judged_cells(spec: Spec) -> int:
    """Comparisons the claim makes: grid cells inside ``where`` (times the competitors of a two-method claim)."""
    claim, grid = spec.claim, spec.grid
    axes = [[v for v in values if k not in claim.where
             or v in (claim.where[k] if isinstance(claim.where[k], list) else [claim.where[k]])]
            for k, values in grid.items() if not (claim.kind == "slope" and k == claim.slope_in)]
    return max(1, math.prod(len(a) for a in axes)) * max(1, len(claim.higher))


#: the smallest replicate count at which the percentile bootstrap's level was measured to hold
#: (tests/test_calibration.py: normal and log-normal replicates, one cell, alpha = 0.01)
BOOTSTRAP_MIN_REPLICATES = 20


def _check_decidable(spec: Spec, experiment, where: str) -> None:
    """Refuse a claim that cannot be decided with its replicates, before anything runs.

    A stochastic experiment needs two replicates per cell for an interval (only an experiment
    registered ``deterministic`` has exact one-replicate cells); a sign test needs
    ``0.5 ** n <= alpha / (looks m)`` to reject even the first of its ``m`` Holm-ordered cells.
    """
    claim = spec.claim
    n = spec.replicates
    deterministic = all(experiment.is_deterministic(c) for c in _cells_to_validate(spec.params, spec.grid))
    if n < 2 and not deterministic:
        raise SpecError(f"{where}: experiment '{spec.experiment}' is stochastic, so a claim needs at least 2 "
                        f"replicates per cell for an interval (replicates = {n}); set replicates = 5 or more")
    alpha = (1 - claim.confidence) / spec.looks
    m = _judged_cells(spec)
    most = spec.max_replicates or n  # adaptive replicates: the last look has the most
    if claim.test == "sign" and not deterministic:
        need = math.ceil(math.log2(m / alpha))
        if most < need:
            raise SpecError(f"{where}: a sign test over {m} cells at confidence {claim.confidence} with {spec.looks} "
                            f"look(s) needs at least {need} replicates to reject anywhere (0.5^n <= alpha/(looks m)); "
                            f"replicates = {most}: set replicates = {need} or more, or test = \"t\"")
    if claim.test == "bootstrap" and most < BOOTSTRAP_MIN_REPLICATES:
        raise SpecError(f"{where}: the percentile bootstrap keeps its level only from {BOOTSTRAP_MIN_REPLICATES} "
                        f"replicates (replicates = {most}); set replicates = {BOOTSTRAP_MIN_REPLICATES} or more, "
                        "or test = \"t\"")


def _replicates(value: Any, where: str) -> tuple[int, int | None]:
    """``replicates = 5`` or ``replicates = {min = 4, max = 16}`` (adaptive)."""
    if isinstance(value, dict):
        extra = set(value) - {"min", "max"}
        if extra or not {"min", "max"} <= set(value):
            raise SpecError(f"{where}: 'replicates' as a table needs exactly 'min' and 'max', "
                            "e.g. {min = 4, max = 16}")
        lo, hi = value["min"], value["max"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi)):
            raise SpecError(f"{where}: 'replicates' min and max must be integers, got {value}")
        if lo < 1:
            raise SpecError(f"{where}: 'replicates' min must be >= 1, got {lo}")
        if lo > hi:
            raise SpecError(f"{where}: 'replicates' min ({lo}) is larger than max ({hi}); swap them")
        return lo, (hi if hi > lo else None)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{where}: 'replicates' must be an integer or {{min = .., max = ..}}, got {value!r}")
    if value < 1:
        raise SpecError(f"{where}: 'replicates' must be >= 1, got {value}")
    return value, None


def _controls(tables: Any, where: str, experiment, known: set) -> tuple:
    if not isinstance(tables, list):
        raise SpecError(f"{where}: write controls as [[control]] tables (an array of tables)")
    out, names = [], set()
    for i, table in enumerate(tables):
        here = f"{where} #{i + 1}"
        _check_table(table, _CONTROL_KEYS, here)
        if "name" not in table:
            raise SpecError(f"{here}: missing 'name'")
        if table["name"] in names:
            raise SpecError(f"{here}: control name '{table['name']}' is used twice")
        names.add(table["name"])
        if not {"set", "bound_scale", "bound", "swap", "lower_scale"} & set(table):
            raise SpecError(f"{here}: a control needs at least one of 'set', 'bound_scale', 'bound', 'swap', "
                            "'lower_scale'")
        for key in table.get("set", {}):
            if key not in experiment.params and key not in known:
                allowed = sorted(set(experiment.params) | known)
                if new := experiment.renamed(key):
                    raise SpecError(f"{here}: 'set' names '{key}', which was renamed to '{new}'; "
                                    f"write {new} = ... instead")
                raise SpecError(f"{here}: 'set' names unknown parameter '{key}'{closest(key, allowed)}; "
                                f"parameters: {', '.join(allowed)}")
        if "bound_scale" in table and not (table["bound_scale"] > 0 and table["bound_scale"] != 1):
            raise SpecError(f"{here}: 'bound_scale' must be positive and not 1, got {table['bound_scale']}")
        if "bound" in table:
            fn = resolve(table["bound"], here)
            if not hasattr(fn, "info"):
                raise SpecError(f"{here}: '{table['bound']}' is not a registered bound")
        data = dict(table)
        for key in ("bound_scale", "lower_scale"):
            if key in data:
                if not (data[key] > 0 and data[key] != 1):
                    raise SpecError(f"{here}: '{key}' must be positive and not 1, got {data[key]}")
                data[key] = float(data[key])
        out.append(ControlSpec(**data))
    return tuple(out)


def n_cells(grid: dict) -> int:
    """Number of cells of ``grid``: the product of its axis lengths (nothing is built)."""
    return math.prod(len(v) for v in grid.values())


def _cells_to_validate(params: dict, grid: dict):
    """Every cell of a small grid; for a large one, each axis value once and a bounded sample.

    Per-value rules (types, domains) see every value of every axis; cross-parameter rules see each
    value next to the other axes' first values and a deterministic sample of whole cells, so a grid
    of 10^8 cells is validated in milliseconds.
    """
    axes = list(grid)
    total = n_cells(grid)
    if total <= _VALIDATE_ALL:
        for combo in itertools.product(*grid.values()):
            yield dict(params, **dict(zip(axes, combo)))
        return
    first = {a: grid[a][0] for a in axes}
    for a in axes:
        for value in grid[a]:
            yield dict(params, **dict(first, **{a: value}))
    import random

    pick = random.Random(0)  # a fixed sample: validation is deterministic (not a simulation stream)
    for _ in range(_VALIDATE_SAMPLE):
        yield dict(params, **{a: grid[a][pick.randrange(len(grid[a]))] for a in axes})


def _check_plot(plot: dict, where: str) -> None:
    """Values of ``[plot]`` keys that can be checked before the run (columns are checked after it)."""
    if "style" in plot and plot["style"] not in PLOT_STYLES:
        raise SpecError(f"{where}: style '{plot['style']}' is unknown{closest(plot['style'], PLOT_STYLES)}; "
                        f"use one of {', '.join(PLOT_STYLES)}")
    for key, value in plot.get("labels", {}).items():
        ok = isinstance(value, str) or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
        if not ok:
            raise SpecError(f"{where}: labels.{key} must be a string (the column's label) or a table of strings "
                            f"(one label per value), got {value!r}")


def check_plot_columns(spec: "Spec", columns) -> None:
    """Raise :class:`SpecError` when ``[plot]`` names a column (x, hue, labels) the results lack.

    Called once the table exists (experiments may add columns of their own), before anything is drawn
    or written.
    """
    columns = [str(c) for c in columns]
    where = f"{spec.path} [plot]"

    def hint(name):
        from simcomm.experiments import get_experiment

        new = get_experiment(spec.experiment).renamed(name)
        return f" ('{name}' was renamed to '{new}')" if new else closest(name, columns)

    for key in ("x", "hue"):
        name = spec.plot.get(key)
        if name is not None and name not in columns:
            raise SpecError(f"{where}: {key} = '{name}' is not a column of the results{hint(name)}; "
                            f"columns: {', '.join(c for c in columns if c not in ('value', 'replicate'))}")
    for name in spec.plot.get("labels", {}):
        if name not in columns and name != "metric":
            raise SpecError(f"{where}: labels names '{name}', which is not a column of the results{hint(name)}")


def locate(ref: str | Path) -> Path:
    """The spec file named by ``ref``.

    ``ref`` is a path, a shipped claim id (``expgraph.rho_even``) or a shipped spec's name
    (``expgraph_rho_even``).

    Raises
    ------
    SpecError
        When ``ref`` is none of these.
    """
    path = Path(ref)
    if path.is_file() or path.suffix == ".toml" or any(sep in str(ref) for sep in ("/", "\\")):
        return path
    shipped = find_specs()
    by_name = {p.stem: p for p in shipped}
    if str(ref) in by_name:
        return by_name[str(ref)]
    ids = {}
    for p in shipped:
        try:
            claim = tomllib.loads(p.read_text()).get("claim", {})
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if isinstance(claim, dict) and isinstance(claim.get("id"), str):
            ids[claim["id"]] = p
    if str(ref) in ids:
        return ids[str(ref)]
    hint = closest(str(ref), list(ids) + list(by_name))
    raise SpecError(f"'{ref}' is neither a spec file nor a shipped claim id{hint}; "
                    "'simcomm list --paths' shows the shipped specs")


def _claim(table: dict, where: str, grid_axes: set, controls: tuple = (), shipped: bool = True) -> ClaimSpec:
    for key, why in _REPLACED.items():
        if key in table:
            raise SpecError(f"{where}: {why}")
    _check_table(table, _CLAIM_KEYS, where)
    for key in ("id", "paper", "statement", "kind", "observable"):
        if key not in table:
            raise SpecError(f"{where}: missing '{key}'")
    from simcomm._claims.kinds import KINDS  # the kind registry, below spec and claims

    if table["kind"] not in KINDS:
        raise SpecError(f"{where}: kind '{table['kind']}' is unknown{closest(table['kind'], KINDS)}; "
                        f"use one of {', '.join(KINDS)}")
    if shipped and table["paper"] not in PAPERS:  # a user's own spec names its own paper
        raise SpecError(f"{where}: paper '{table['paper']}' is unknown{closest(table['paper'], PAPERS)}; "
                        f"use one of {', '.join(PAPERS)}")
    kind = KINDS[table["kind"]]
    kind.validate(table, where, grid_axes)
    _check_class(table, where)
    if "bound" in table:
        fn = resolve(table["bound"], where)
        if not hasattr(fn, "info"):
            raise SpecError(f"{where}: '{table['bound']}' is not a registered bound (decorate it with @theory.bound)")
        if "provenance" in table and table["provenance"] != fn.info.provenance:
            raise SpecError(f"{where}: provenance '{table['provenance']}' contradicts the bound's tag "
                            f"'{fn.info.provenance}'; drop the key or fix the bound's @bound(provenance=...)")
        accepted = set(inspect.signature(fn).parameters)
        for key in table.get("bound_args", {}):
            if key not in accepted:
                raise SpecError(f"{where}: bound_args key '{key}' is not an argument of '{table['bound']}'"
                                f"{closest(key, accepted)}; arguments: {', '.join(sorted(accepted)) or 'none'}")
    elif "provenance" not in table:
        raise SpecError(f"{where}: a claim without 'bound' needs 'provenance' (a tag from papers/: P, C, N, B, R)")
    tag = fn.info.provenance if "bound" in table else table["provenance"]
    if table["class"] == "seed" and not set(str(tag).split("+")) & {"P", "B", "S"}:
        raise SpecError(f"{where}: class 'seed' is a seed paper's statement, tagged [P], [B] or [S]; the tag is "
                        f"[{tag}]: a statement derived here is class 'derived'")
    if not 0.5 <= table.get("confidence", 0.99) < 1:
        raise SpecError(f"{where}: 'confidence' must be in [0.5, 1), got {table['confidence']}")
    numbers = ("atol", "slope_tol", "margin_rel", "margin_abs", "min_effect_rel", "min_effect_abs")
    for key in numbers:
        if table.get(key, 0) < 0 or table.get(key, 0) != table.get(key, 0):
            raise SpecError(f"{where}: '{key}' must be >= 0, got {table[key]}")
    if table.get("slope_space", "loglog") not in ("loglog", "logx"):
        raise SpecError(f"{where}: 'slope_space' must be 'loglog' or 'logx'")
    if table.get("scale", "linear") not in SCALES:
        raise SpecError(f"{where}: scale '{table['scale']}' is unknown{closest(table['scale'], SCALES)}; "
                        f"use one of {', '.join(SCALES)}")
    if table.get("test", "t") not in TESTS:
        raise SpecError(f"{where}: test '{table['test']}' is unknown{closest(table['test'], TESTS)}; "
                        f"use one of {', '.join(TESTS)}")
    kind.validate_size(table, where)
    if table.get("scale") == "log" and table.get("min_effect_abs", 0) > 0:
        raise SpecError(f"{where}: with scale = 'log' state the effect as 'min_effect_rel' (a ratio), "
                        "not 'min_effect_abs'")
    for c in controls:
        kind.check_control(c, where)
    data = kind.normalise(dict(table))
    data["claim_class"] = data.pop("class")
    data["reaches"] = tuple(data.get("reaches", ()))
    if "max_ill_posed" in data:
        data["max_ill_posed"] = float(data["max_ill_posed"])
    data["higher"] = tuple(data.get("higher", ()))
    data["controls"] = controls
    for key in numbers:
        if key in data:
            data[key] = float(data[key])
    return ClaimSpec(**data)


def _check_class(table: dict, where: str) -> None:
    """``class`` (required), its consistency with ``paper``, and the blind-cell keys ``reaches``/``max_ill_posed``."""
    allowed = ", ".join(CLASSES)
    if "class" not in table:
        raise SpecError(f"{where}: missing 'class'; say what the claim is: one of {allowed} (seed: a seed paper's "
                        "statement; other: another paper's; derived: a bound derived here [N]; check: the "
                        "implementation against its own closed form, or a fact that cannot fail)")
    cls = table["class"]
    if cls not in CLASSES:
        raise SpecError(f"{where}: class '{cls}' is unknown{closest(cls, CLASSES)}; use one of {allowed}")
    if cls == "seed" and table["paper"] not in SEED_PAPERS:
        raise SpecError(f"{where}: class 'seed' needs one of the seed papers as 'paper' ({', '.join(SEED_PAPERS)}), "
                        f"got '{table['paper']}'; another paper's claim is class 'other'")
    if cls == "other" and (table["paper"] in SEED_PAPERS or table["paper"] == "net"):
        raise SpecError(f"{where}: class 'other' is another paper's claim: key it by that paper "
                        f"({', '.join(p for p in PAPERS if p not in SEED_PAPERS and p != 'net')}), not "
                        f"'{table['paper']}'")
    if not 0 <= table.get("max_ill_posed", MAX_ILL_POSED) < 1:
        raise SpecError(f"{where}: 'max_ill_posed' must be in [0, 1), got {table['max_ill_posed']}")
    if "reaches" in table:
        named = [table.get("lower"), *table.get("higher", []), table.get("method"), *table.get("versus", [])]
        named = [m for m in named if m is not None]
        if not named:
            raise SpecError(f"{where}: 'reaches' names methods of an 'order' or 'equivalent' claim; a "
                            f"'{table['kind']}' claim has none (a non-finite observable already violates it)")
        for m in table["reaches"]:
            if m not in named:
                raise SpecError(f"{where}: 'reaches' names '{m}', which the claim does not compare"
                                f"{closest(str(m), named)}; methods: {', '.join(map(str, named))}")


def with_control(spec: Spec, control: ControlSpec) -> Spec:
    """The spec re-loaded with a control's ``set`` overrides (after the spec's own)."""
    return loads(spec.source, name=spec.name, path=spec.path, quick=spec.quick,
                 overrides=spec.overrides + tuple(control.set.items()), base=spec.base)


def load(path: str | Path, *, quick: bool = False, overrides: tuple[str, ...] = ()) -> Spec:
    """Load and validate a spec file.

    Parameters
    ----------
    path : str or Path
        A ``.toml`` file (see ``sims/README.md`` for the format).
    quick : bool
        Apply the ``[quick]`` table (small grids for a fast check).
    overrides : tuple of str
        ``key=value`` strings (``--set``), TOML values: ``n=[8,16]``, ``replicates=5``.

    Raises
    ------
    SpecError
        One line naming the file, the key and what is allowed.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"spec file '{path}' does not exist; 'simcomm list' shows the shipped specs") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read spec file '{path}': {exc}") from None
    return loads(text, name=path.stem, path=str(path.name), quick=quick, overrides=tuple(overrides), base=path.parent)

