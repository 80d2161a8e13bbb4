r"""One record type for every optimiser of :mod:`simcomm.optim`: :class:`Trace`.

:func:`~simcomm.optim.compressed_gd`, :func:`~simcomm.optim.async_compressed_gd`,
:func:`~simcomm.optim.compressed_iag`, :func:`~simcomm.optim.run_dsgd`, :func:`~simcomm.optim.ef_sgd`
and :func:`~simcomm.optim.importance_sgd` all return a :class:`Trace`: the recorded steps, one array
per recorded quantity (``records``), the final iterate(s) ``x``, per replicate the step at which the run
diverged (``diverged_at``, ``-1`` where it did not) and run-level extras (``info``). Records and extras
read as attributes (``tr.f_gap``, ``tr.consensus``, ``tr.train_loss``, ``tr.bits_per_step``), and
``table()`` puts any trace in the same tidy long format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Trace", "tidy"]


def tidy(steps, columns: dict, replicates: bool = False):
    """Long-format table of per-step records.

    Parameters
    ----------
    steps : array_like, shape (T,)
        Recorded steps.
    columns : dict of str to array_like
        Each of shape ``(T,)``, or ``(R, T)`` with ``replicates=True`` (a ``(T,)`` column is then
        repeated for every replicate).
    replicates : bool
        Whether the records have a leading replicate axis (adds a ``replicate`` column).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> tidy([0, 1], {"loss": [2.0, 1.0]}).to_dict("list")
    {'step': [0, 1], 'loss': [2.0, 1.0]}
    >>> tidy([0, 5], {"gap": [[3.0, 2.0], [4.0, 1.0]]}, replicates=True)["replicate"].tolist()
    [0, 0, 1, 1]
    """
    import pandas as pd

    steps = np.asarray(steps)
    T = steps.size
    if not replicates:
        return pd.DataFrame({"step": steps, **{k: np.asarray(v)[:T] for k, v in columns.items()}})
    R = next((np.shape(v)[0] for v in columns.values() if np.ndim(v) == 2), 1)
    out = {"replicate": np.repeat(np.arange(R), T), "step": np.tile(steps, R)}
    for k, v in columns.items():
        v = np.asarray(v)
        out[k] = v.reshape(-1) if v.ndim == 2 else np.tile(v[:T], R)
    return pd.DataFrame(out)


def no_divergence(replicates: int = 1) -> np.ndarray:
    """``diverged_at`` of a run none of whose ``replicates`` diverged: ``-1`` each."""
    return np.full(int(replicates), -1, dtype=np.int64)


def diverged_at_step(step: int | None) -> np.ndarray:
    """``diverged_at`` of a single run: ``[step]``, or ``[-1]`` for ``None`` (it did not diverge)."""
    return np.array([-1 if step is None else int(step)], dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Trace:
    r"""What an optimiser run recorded (every optimiser of :mod:`simcomm.optim` returns one).

    Attributes
    ----------
    step : numpy.ndarray of int, shape (T,)
        Iterations at which the records were taken (``0`` = before any update; the last is the final
        step, or the step a run stopped at).
    records : dict of str to numpy.ndarray
        Per-step recorded quantities, each of shape ``(T,)`` (one run) or ``(R, T)`` (``R`` replicates
        simulated together; a ``(T,)`` entry is then shared by every replicate). Which keys exist
        depends on the optimiser, e.g. ``f_gap``, ``dist2``, ``grad2``, ``bits`` (parameter server and
        IAG), ``consensus``, ``grad_norm_sq``, ``node_grad_norm_sq``, ``subopt``, ``messages``,
        ``bytes`` (decentralized), ``train_loss``, ``test_accuracy`` (error feedback, importance
        sampling), ``max_weight``, ``mean_staleness``, ``score_bytes``, ``trace_cov_uniform``,
        ``trace_cov_ideal``, ``trace_cov_actual`` (importance sampling).
    x : numpy.ndarray
        Final iterate(s): ``(R, d)`` for the parameter-server optimisers, the nodes' ``(n, d)`` for
        decentralized SGD, the parameters ``(D,)`` for the neural-network optimisers.
    diverged_at : numpy.ndarray of int, shape (R,)
        Per replicate, the step at which the run diverged; ``-1`` where it did not (``R = 1`` for a
        single run).
    info : dict
        Run-level extras that are not one value per recorded step, e.g. ``grad2_mean`` (``(R,)``),
        ``bits_per_step``, ``comp_error`` (one value per step taken, not per recorded step).

    Notes
    -----
    ``tr.name`` reads ``tr.records[name]``, else ``tr.info[name]``; an unknown name raises an
    ``AttributeError`` that lists what the trace holds. A record or info entry may not reuse the name
    of a field, method or table column (``step``, ``replicate``, ``x``, ``table``, ...), and every
    record must have one value per recorded step: a trace that breaks either rule is refused when it is
    built. The dataclass is frozen (its fields cannot be reassigned); the arrays and dicts it holds are
    the optimiser's own, not copies. Traces compare by identity (``eq=False``): equality of arrays is
    not a single truth value.

    After a divergence the records follow one convention (:mod:`simcomm.optim._driver`): from the
    step it was detected on, error-like records (losses, gaps, distances, squared norms, consensus
    errors, variances) hold ``inf`` and the others (accuracies, weights, staleness, bytes) ``NaN``.
    Where the trace ends still depends on how the optimiser runs: replicates simulated together end
    at the last record made when every one has diverged (parameter server, asynchronous, IAG), a
    decentralized run keeps its whole schedule, and importance sampling and error feedback record
    the step of the divergence.

    Examples
    --------
    >>> tr = Trace(np.array([0, 10]), {"f_gap": np.array([[2.0, 0.5]])}, np.zeros((1, 3)),
    ...            np.array([-1]), {"grad2_mean": np.array([1.5])})
    >>> tr.f_gap[0, -1], tr.grad2_mean[0], tr.note, tr.first_below(1.0)
    (np.float64(0.5), np.float64(1.5), '', array([10.]))
    >>> tr.table().columns.tolist()
    ['replicate', 'step', 'f_gap']
    >>> tr
    Trace(2 recorded steps, 1 replicate(s), records: f_gap; info: grad2_mean; diverged_at: [-1])
    """

    step: np.ndarray
    records: dict = field(default_factory=dict)
    x: np.ndarray | None = None
    diverged_at: np.ndarray = field(default_factory=no_divergence)
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        clash = sorted((set(self.records) | set(self.info)) & _RESERVED)
        if clash:
            raise ValueError(f"Trace: record or info name(s) {clash} would hide a field, method or table column "
                             "of the trace; rename them")
        both = sorted(set(self.records) & set(self.info))
        if both:
            raise ValueError(f"Trace: {both} named in both records and info; keep one")
        T = np.size(self.step)
        bad = [k for k, v in self.records.items() if np.ndim(v) not in (1, 2) or np.shape(v)[-1] != T]
        if bad:
            raise ValueError(f"Trace: record(s) {bad} do not have one value per recorded step ({T}); "
                             "give arrays of shape (T,) or (R, T)")
        R = self.replicates
        wide = [k for k, v in self.records.items() if np.ndim(v) == 2 and np.shape(v)[0] != R]
        if wide:
            raise ValueError(f"Trace: record(s) {wide} have a replicate axis of another length than "
                             f"diverged_at ({R}); pass diverged_at for every replicate")

    def __getattr__(self, name: str):
        # only reached when normal lookup fails; the guard keeps copy/pickle (which probe attributes on
        # an instance whose fields are not set yet) from recursing
        if name.startswith("_") or name in ("records", "info"):
            raise AttributeError(name)
        d = self.__dict__
        if name in d.get("records", {}):
            return d["records"][name]
        if name in d.get("info", {}):
            return d["info"][name]
        hint = {"theta": " (the final parameters are 'x')", "steps": " (the recorded steps are 'step')"}.get(name, "")
        raise AttributeError(f"Trace has no record or info '{name}'{hint}; records: {', '.join(d.get('records', {}))}"
                             f"; info: {', '.join(d.get('info', {})) or '(none)'}; fields: step, records, x, "
                             "diverged_at, info")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.records) | set(self.info))

    def __repr__(self) -> str:
        # a summary: the arrays of a long run would fill the screen
        return (f"Trace({self.step.size} recorded steps, {self.replicates} replicate(s), records: "
                f"{', '.join(self.records) or '(none)'}; info: {', '.join(self.info) or '(none)'}; "
                f"diverged_at: {np.asarray(self.diverged_at).tolist()})")

    @property
    def replicates(self) -> int:
        """Number of replicates ``R`` (the length of ``diverged_at``)."""
        return int(np.size(self.diverged_at))

    @property
    def diverged(self) -> np.ndarray:
        """Per replicate, whether the run diverged (``diverged_at >= 0``), bool array of shape (R,)."""
        return np.asarray(self.diverged_at) >= 0

    def table(self):
        """Long-format table of the records.

        Returns
        -------
        pandas.DataFrame
            ``step`` and one column per record, in the order of ``records``; a ``replicate`` column
            comes first when the records are 2-D (``(R, T)``).
        """
        return tidy(self.step, self.records, replicates=any(np.ndim(v) == 2 for v in self.records.values()))

    def notes(self) -> list[str]:
        """Per replicate, what happened to the run.

        Returns
        -------
        list of str
            ``"diverged at step t"``, or ``""`` where the replicate did not diverge.
        """
        return [f"diverged at step {t}" if t >= 0 else "" for t in np.asarray(self.diverged_at).tolist()]

    @property
    def note(self) -> str:
        """The runner's ``note`` column: ``"diverged at step t"`` or ``""`` for one run.

        With several replicates, the non-empty notes prefixed by their replicate, joined by ``"; "``.
        """
        notes = self.notes()
        if len(notes) == 1:
            return notes[0]
        return "; ".join(f"replicate {r} {s}" for r, s in enumerate(notes) if s)

    def first_below(self, eps: float, record: str = "f_gap") -> np.ndarray:
        """Per replicate, the first recorded step at which ``record`` is at most ``eps``.

        Parameters
        ----------
        eps : float
            Threshold.
        record : str, default "f_gap"
            Name of a record (``f_gap`` exists for the parameter-server optimisers; e.g. ``subopt`` for
            decentralized SGD, ``train_loss`` for error feedback and importance sampling).

        Returns
        -------
        numpy.ndarray of float, shape (R,)
            The step, or ``nan`` where the record never reaches ``eps``. A record shared by every
            replicate (shape ``(T,)``) gives the same step for each.
        """
        if record not in self.records:
            raise AttributeError(f"Trace has no record '{record}'; records: {', '.join(self.records)}")
        v = np.asarray(self.records[record])
        if v.ndim == 1:
            v = np.broadcast_to(v, (self.replicates, v.size))
        hit = v <= eps
        first = np.where(hit.any(axis=1), self.step[hit.argmax(axis=1)], np.nan)
        return first.astype(float)


#: names a record or info entry may not take: the fields, methods and properties of Trace, and the
#: ``replicate`` column of ``table()``
_RESERVED = frozenset(m for m in dir(Trace) if not m.startswith("_")) | set(Trace.__dataclass_fields__) | {"replicate"}
