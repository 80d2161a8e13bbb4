"""The ``@bound`` decorator: attaches provenance metadata to a pure function of scalars."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["bound", "BoundInfo", "BOUNDS", "PROVENANCE"]

#: Provenance tags, as defined in ``shared/papers/*.md`` section 0.
PROVENANCE = {
    "P": "the paper's own text",
    "C": "the authors' public code",
    "S": "a secondary summary",
    "B": "the seed summary (unverified)",
    "N": "derived here and checked numerically, not quoted from the paper",
    "R": "recollection (unverified hypothesis)",
}
KINDS = ("upper", "lower", "equal", "slope", "order")


@dataclass(frozen=True)
class BoundInfo:
    """Metadata of a bound: what it states, where it comes from, which way it goes."""

    kind: str
    provenance: str
    paper: str
    statement: str
    constant: bool = False


BOUNDS: dict[str, object] = {}


def bound(*, kind: str, provenance: str, paper: str, statement: str, constant: bool = False):
    """Register a bound and attach :class:`BoundInfo` as ``func.info``; the function is unchanged.

    Parameters
    ----------
    kind : {"upper", "lower", "equal", "slope", "order"}
        Which way the comparison with the empirical value goes.
    provenance : str
        Tag(s) from the paper notes, e.g. ``"N"`` or ``"P+N"``.
    paper : str
        Paper key: ``expgraph``, ``rtopk``, ``urq`` or ``is``.
    statement : str
        The exact statement encoded, in one line.
    constant : bool
        The statement itself is a constant (e.g. "the bias is 0"); every other bound must depend
        on its inputs (a test checks), so a closed form never hides in ``simcomm`` behind a stand-in.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    for tag in provenance.replace("+", " ").split():
        if tag not in PROVENANCE:
            raise ValueError(f"unknown provenance tag {tag!r}; use one of {sorted(PROVENANCE)}")

    def attach(func):
        func.info = BoundInfo(kind, provenance, paper, statement, constant)
        BOUNDS[f"{func.__module__}:{func.__name__}"] = func
        return func

    return attach
