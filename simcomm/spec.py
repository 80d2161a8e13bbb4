"""Load and validate TOML specs (see ``sims/README.md``), resolve ``"module:name"`` strings.

Everything a user can get wrong in a spec is caught here, before anything runs, with one line that
names the file, the key and what is allowed.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcomm._errors import SpecError
from simcomm.experiments._registry import closest, get_experiment

__all__ = ["ClaimSpec", "Spec", "load", "loads", "resolve", "sims_dir", "find_specs", "content_hash"]

KINDS = ("upper", "lower", "equal", "slope", "order")
PAPERS = ("expgraph", "rtopk", "urq", "is", "basegraph", "fmmc")
_CLAIM_KEYS = {
    "id": str, "paper": str, "statement": str, "kind": str, "observable": str, "bound": str,
    "bound_args": dict, "atol": float, "rtol": float, "confidence": float, "strict": bool,
    "where": dict, "slope_in": str, "slope_tol": float, "slope_space": str, "compare": str,
    "lower": str, "higher": list, "provenance": str,
}
_EXPERIMENT_KEYS = {"name": str, "replicates": int, "seed": int}
_PLOT_KEYS = {
    "x": str, "hue": str, "logx": bool, "logy": bool, "xlabel": str, "ylabel": str, "title": str,
}
_TOP_KEYS = ("claim", "experiment", "params", "grid", "quick", "plot")


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
    rtol: float = 0.0
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

    def cells(self) -> list[dict]:
        """Cartesian product of the grid, each merged with the fixed parameters (file order)."""
        keys = list(self.grid)
        return [dict(self.params, **dict(zip(keys, combo))) for combo in itertools.product(*self.grid.values())]

    def to_dict(self) -> dict:
        """Plain-data form (for ``meta.json`` and the content hash)."""
        claim = None if self.claim is None else {k: v for k, v in vars(self.claim).items()}
        if claim is not None:
            claim["higher"] = list(claim["higher"])
        return dict(
            name=self.name, experiment=self.experiment, replicates=self.replicates, seed=self.seed,
            params=self.params, grid=self.grid, claim=claim, plot=self.plot, quick=self.quick,
        )

    @property
    def hash(self) -> str:
        """Content hash of everything that determines the results."""
        return content_hash(self.to_dict())


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
    except tomllib.TOMLDecodeError:
        value = raw  # a bare word is a string
    return key.strip(), value


def loads(text: str, *, name: str = "<string>", path: str = "<string>", quick: bool = False,
          overrides: tuple[str, ...] = ()) -> Spec:
    """Parse and validate a spec from TOML text. See :func:`load`."""
    where = path
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: not valid TOML ({exc})") from None
    for key in raw:
        if key not in _TOP_KEYS:
            raise SpecError(f"{where}: unknown table [{key}]{closest(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}")
    exp = dict(_check_table(raw.get("experiment", {}), _EXPERIMENT_KEYS, f"{where} [experiment]"))
    params = dict(_check_table(raw.get("params", {}), {k: object for k in raw.get("params", {})}, f"{where} [params]"))
    grid = dict(_check_table(raw.get("grid", {}), {k: object for k in raw.get("grid", {})}, f"{where} [grid]"))
    plot = dict(_check_table(raw.get("plot", {}), _PLOT_KEYS, f"{where} [plot]"))
    if "name" not in exp:
        raise SpecError(f"{where}: [experiment] needs 'name' (a registered experiment; see 'simcomm list --experiments')")
    try:
        experiment = get_experiment(exp["name"])
    except SpecError as exc:
        raise SpecError(f"{where} [experiment]: {exc}") from None

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
            raise SpecError(f"{origin}: unknown key '{key}'{closest(key, allowed)}; allowed: {', '.join(allowed)}")

    if quick:
        for key, value in raw.get("quick", {}).items():
            place(key, value, f"{where} [quick]")
    for text_ in overrides:
        key, value = _parse_override(text_)
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
    replicates = exp.get("replicates", 1)
    if replicates < 1:
        raise SpecError(f"{where}: 'replicates' must be >= 1, got {replicates}")
    seed = exp.get("seed", 0)
    if seed < 0:
        raise SpecError(f"{where}: 'seed' must be >= 0, got {seed}")
    # Validate every cell against the experiment's declared parameters (types, domains, cross rules).
    validated = {}
    for cell in (dict(params, **dict(zip(grid, c))) for c in itertools.product(*grid.values())):
        out = experiment.validate(cell, where)
        for key, value in out.items():
            validated.setdefault(key, value)
    for key, value in validated.items():  # declared defaults become explicit fixed parameters
        if key not in grid and key not in params:
            params[key] = value
    claim = None
    if "claim" in raw:
        claim = _claim(raw["claim"], f"{where} [claim]", set(grid))
    return Spec(name, path, exp["name"], replicates, seed, params, grid, claim, plot, quick)


def _claim(table: dict, where: str, grid_axes: set) -> ClaimSpec:
    _check_table(table, _CLAIM_KEYS, where)
    for key in ("id", "paper", "statement", "kind", "observable"):
        if key not in table:
            raise SpecError(f"{where}: missing '{key}'")
    if table["kind"] not in KINDS:
        raise SpecError(f"{where}: kind '{table['kind']}' is unknown{closest(table['kind'], KINDS)}; use one of {', '.join(KINDS)}")
    if table["paper"] not in PAPERS:
        raise SpecError(f"{where}: paper '{table['paper']}' is unknown{closest(table['paper'], PAPERS)}; use one of {', '.join(PAPERS)}")
    kind = table["kind"]
    if kind in ("upper", "lower", "equal", "slope") and "bound" not in table:
        article = "an" if kind in ("upper", "equal") else "a"
        raise SpecError(f"{where}: {article} '{kind}' claim needs 'bound' = \"theory.module:function\"")
    if kind == "slope" and ("slope_in" not in table or "slope_tol" not in table):
        raise SpecError(f"{where}: a 'slope' claim needs 'slope_in' (a grid parameter) and 'slope_tol'")
    if kind == "slope" and table["slope_in"] not in grid_axes:
        raise SpecError(f"{where}: slope_in '{table['slope_in']}' is not a grid axis"
                        f"{closest(table['slope_in'], grid_axes)}; grid axes: {', '.join(sorted(grid_axes)) or 'none'}")
    if kind == "order" and not {"compare", "lower", "higher"} <= set(table):
        raise SpecError(f"{where}: an 'order' claim needs 'compare', 'lower' and 'higher'")
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
    if not 0.5 <= table.get("confidence", 0.99) < 1:
        raise SpecError(f"{where}: 'confidence' must be in [0.5, 1), got {table['confidence']}")
    for key in ("atol", "rtol", "slope_tol"):
        if table.get(key, 0) < 0:
            raise SpecError(f"{where}: '{key}' must be >= 0, got {table[key]}")
    if table.get("slope_space", "loglog") not in ("loglog", "logx"):
        raise SpecError(f"{where}: 'slope_space' must be 'loglog' or 'logx'")
    data = dict(table)
    data["higher"] = tuple(data.get("higher", ()))
    for key in ("atol", "rtol", "slope_tol"):
        if key in data:
            data[key] = float(data[key])
    return ClaimSpec(**data)


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
    return loads(text, name=path.stem, path=str(path.name), quick=quick, overrides=tuple(overrides))

