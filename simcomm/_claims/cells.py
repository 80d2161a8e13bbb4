"""From a results table to the rows of each judged cell: selection, the design's cells, bounds per row."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pandas as pd

from simcomm._errors import SpecError

_NON_PARAM = {"metric", "value", "replicate", "note", "censored"}


def _excluded_cells(claim, table: pd.DataFrame, kept: pd.DataFrame, design=None) -> int:
    if not claim.where:
        return 0
    rows = table[table["metric"] == claim.observable]
    by = _cells_by(rows, design)
    if not by:
        return 0
    return int(rows.groupby(by, dropna=False).ngroups - kept.groupby(by, dropna=False).ngroups)


def _select(claim, table: pd.DataFrame) -> pd.DataFrame:
    if "metric" not in table or "value" not in table:
        raise SpecError(f"claim {claim.id}: the results table has no 'metric'/'value' columns")
    rows = table[table["metric"] == claim.observable]
    if rows.empty:
        found = ", ".join(sorted(map(str, table["metric"].unique())))
        raise SpecError(f"claim {claim.id}: observable '{claim.observable}' is not among the metrics ({found})")
    for col, want in claim.where.items():
        if col not in rows:
            raise SpecError(f"claim {claim.id}: 'where' names column '{col}' that the table does not have")
        rows = rows[rows[col].isin(want if isinstance(want, list) else [want])]
    if rows.empty:
        raise SpecError(f"claim {claim.id}: no rows left after 'where' = {claim.where}")
    rows = rows.copy()
    if "replicate" not in rows:
        rows["replicate"] = 0
    rows["censored"] = rows["censored"].fillna(False).astype(bool) if "censored" in rows else False
    return rows


def _varying(rows: pd.DataFrame, exclude=()) -> list[str]:
    cols = [c for c in rows.columns if c not in _NON_PARAM and c not in exclude]
    return [c for c in cols if rows[c].nunique(dropna=False) > 1]


def _cells_by(rows: pd.DataFrame, design, exclude=()) -> list[str]:
    """Columns that define the judged cells: the design's, never a measurement's.

    ``design`` names the spec's parameters and the design columns the experiment emits inside a cell
    (:attr:`Experiment.columns`); those that vary split the cells. A column outside the design that
    is constant within every cell (a quantity derived from the parameters, e.g. the number of
    parameters of a model) describes the cells and is carried along for the table and the figure; one
    that varies within a cell (a measured norm, a hitting time) is a measurement and splits nothing.
    Without ``design`` (a bare table) every varying column defines the cells.
    """
    if design is None:
        return _varying(rows, exclude)
    design = set(design)
    by = [c for c in _varying(rows, exclude) if c in design]
    others = [c for c in _varying(rows, exclude) if c not in design]
    if not others:
        return by
    if by:
        within = rows.groupby(by, dropna=False)[others].nunique(dropna=False).max()
    else:
        within = rows[others].nunique(dropna=False)
    return by + [c for c in others if int(within[c]) <= 1]


def _groups(rows: pd.DataFrame, by: list[str]):
    if not by:
        yield {}, rows
        return
    for key, grp in rows.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key)), grp


@functools.lru_cache(maxsize=512)
def _signature(fn) -> inspect.Signature:
    return inspect.signature(fn)


def _bound_kwargs(fn, claim, row: dict) -> dict:
    sig = _signature(fn)
    kwargs = {}
    for name, p in sig.parameters.items():
        if name in claim.bound_args:
            kwargs[name] = claim.bound_args[name]
        elif name in row:
            value = row[name]
            kwargs[name] = value.item() if hasattr(value, "item") else value
        elif p.default is inspect.Parameter.empty:
            raise SpecError(
                f"claim {claim.id}: bound '{claim.bound}' needs '{name}', which is neither a parameter of the "
                f"cells nor a column of the rows; add it to [params] or [claim.bound_args]"
            )
    return kwargs


def _call_bound(fn, claim, row: dict, scale: float = 1.0) -> float:
    kwargs = _bound_kwargs(fn, claim, row)
    try:
        return scale * float(fn(**kwargs))
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        raise SpecError(f"claim {claim.id}: bound '{claim.bound}' cannot be evaluated at {kwargs}: {exc}") from None


def _notes(grp: pd.DataFrame) -> str:
    if "note" not in grp:
        return ""
    notes = sorted({str(n) for n in grp["note"].dropna() if str(n)})
    return "; ".join(notes[:3]) + (f" (+{len(notes) - 3} more)" if len(notes) > 3 else "")


def _bound_rows(rows: pd.DataFrame, fn, claim, bound_scale: float) -> np.ndarray:
    """The bound on every row, evaluated once per distinct combination of the columns it reads."""
    names = [n for n in _signature(fn).parameters if n in rows.columns and n not in claim.bound_args]
    if not names:
        return np.full(len(rows), _call_bound(fn, claim, {}, bound_scale))
    keys = list(rows[names].itertuples(index=False, name=None))
    memo = {}
    for key in keys:
        if key not in memo:
            memo[key] = _call_bound(fn, claim, dict(zip(names, key)), bound_scale)
    return np.array([memo[k] for k in keys], dtype=float)


def _split(labels: np.ndarray) -> list[np.ndarray]:
    """Positions of each distinct label, labels in sorted order, positions in row order."""
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]])
    return np.split(order, starts[1:])


def _per_replicate(values: np.ndarray, bounds: np.ndarray, censored: np.ndarray, replicates: np.ndarray):
    """Per replicate (sorted): mean observable, mean bound (of every row), censored flag."""
    groups = _split(replicates)
    return (np.array([float(np.mean(values[g])) for g in groups]),
            np.array([float(np.mean(bounds[g])) for g in groups]),
            np.array([bool(censored[g].any()) for g in groups]))


def _group_positions(rows: pd.DataFrame, by: list[str]):
    """``(params, positions)`` of each cell, in the order of :func:`_groups`."""
    if not by:
        yield {}, np.arange(len(rows))
        return
    gb = rows.groupby(by, sort=True, dropna=False)
    keys = list(gb.size().index)
    for key, pos in zip(keys, _split(gb.ngroup().to_numpy())):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(by, key)), pos


def _log_or_fail(claim, v: np.ndarray, what: str, params: dict) -> np.ndarray:
    if np.any(v <= 0):
        raise SpecError(f"claim {claim.id}: scale = 'log' needs a positive {what}, got {v[v <= 0][0]:g} at "
                        f"{params or 'the only cell'}; use scale = 'linear'")
    return np.log(v)
