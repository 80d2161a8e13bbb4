"""Options and helpers shared by several subcommands (parsing and I/O only)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from simcomm._errors import UserError

__all__ = ["PluginCommand", "plugin_option",
           "headless", "ensure_writable", "backend_option", "jobs_option", "seed_option", "scheduler_option",
           "progress_bar", "max_cells_option", "max_hours_option", "yes_option", "plan", "Interrupted"]


def headless() -> None:
    """Draw with matplotlib's Agg backend (the CLI saves figures, it never shows them).

    Called by the commands that draw, before anything imports pyplot: a process-wide choice the CLI may
    make, which ``simcomm.plotting`` (used from a user's notebook too) never makes at import. The
    fonts of every PDF and PostScript file are embedded as TrueType (Type 42), never Type 3.
    """
    import matplotlib

    matplotlib.use("Agg")
    # every PDF/PS the CLI writes embeds TrueType (Type 42) fonts: IEEE and ACM reject Type 3
    matplotlib.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42})


def ensure_writable(folder: str | Path, option: str = "--out DIR") -> Path:
    """Create ``folder`` if needed and prove it is writable, before any work is done.

    ``option`` names the option that gave the folder, so the error says which one to fix.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".simcomm-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        what = "output folder" if option.startswith("--out") else f"the folder of {option.split()[0]}"
        raise UserError(f"cannot write to {what} '{folder}' ({exc.strerror}); pass a writable {option}") from None
    return folder


backend_option = click.option("--backend", default="numba", show_default=True,
                              help="Compute backend: numpy (reference), numba (CPU) or cupy (GPU).")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=1), default=min(2, os.cpu_count() or 1),
                           show_default=True, help="Local worker processes (joblib/loky); 1 runs in this process.")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=None,
                           help="Override every spec's root seed.")
scheduler_option = click.option("--scheduler", default=None, metavar="ADDRESS",
                                help="Run cells on Dask: 'local' starts a LocalCluster, or tcp://HOST:PORT.")


max_cells_option = click.option("--max-cells", type=click.IntRange(min=1), default=None, metavar="N",
                                help="Refuse a run with more cells than this (default 10000; --yes overrides).")
def _finite_hours(ctx, param, value):
    import math

    if value is not None and not math.isfinite(value):  # FloatRange lets nan through (nan > 0 is False)
        raise click.BadParameter(f"{value} is not a number of hours; pass a finite H > 0, e.g. --max-hours 2")
    return value


max_hours_option = click.option("--max-hours", type=click.FloatRange(min=0, min_open=True), default=None, metavar="H",
                                callback=_finite_hours,
                                help="Refuse a run estimated to take longer than this (default 24; --yes overrides).")
yes_option = click.option("--yes", "-y", is_flag=True, help="Run even above --max-cells / --max-hours.")


class Interrupted(Exception):
    """Ctrl-C during a run whose finished cells are cached (the CLI exits 130 with this message)."""


def plan(specs, *, backend, jobs, scheduler, cache_dir, max_cells, max_hours, yes, controls=False, judged=False):
    """Estimate the run (cells, time, memory) and print it; refuse it above the limits (one line).

    ``controls`` and ``judged`` (``simcomm check``): count the negative controls' cells and the judging.
    """
    import sys

    from simcomm import cost
    from simcomm.backends import get_backend

    get_backend(backend)  # an unknown or unavailable backend is reported before the plan
    if scheduler:
        from simcomm._dask import dask_map

        dask_map(scheduler)  # validates the address; starts nothing
    est = cost.estimate(specs, backend=backend, jobs=jobs, cache_dir=cache_dir,
                        max_cells=max_cells or cost.MAX_CELLS, max_hours=max_hours or cost.MAX_HOURS, yes=yes,
                        check_memory=not scheduler or scheduler == "local", controls=controls, judged=judged)
    click.echo(est.line(), err=True)
    sys.stderr.flush()
    return est


class progress_bar:
    """Progress driven by ``update(done, total)``, with the elapsed time and an ETA; it says what it counts.

    On a terminal, a rich bar whose clock and spinner keep moving while a long cell runs. Elsewhere
    (logs, CI), a line every 30 s, also while no cell finishes, so a long cell shows it is alive.

    The ETA extrapolates from modelled time when the runner reports it (:meth:`work`: the cost model's
    seconds of the cells done and to do), so a few heavy cells first do not inflate it, and a cheap
    start does not deflate it; otherwise from the mean time per finished cell.

    A run may come in passes: the grid's cells, then batches of more replicates for the cells an
    adaptive claim left undecided, then the negative controls. Each pass restarts ``update``'s count
    (a smaller ``done`` or another ``total``); the bar then names the pass ("pass 2: more replicates
    or controls") instead of silently counting something else. A caller that knows what the next
    pass is calls :meth:`phase` with its name.
    """

    HEARTBEAT_S = 30.0

    def __init__(self, label: str, enabled: bool = True):
        self.label, self.enabled, self._p, self._task = label, enabled, None, None
        self._state = (0, None)
        self._start = None
        self._stop = None
        self._pass = 1
        self._named = None  # the name phase() gave the coming pass
        self._work = None  # (modelled seconds done, of total) of this pass, from work()

    def phase(self, name: str) -> None:
        """Name the pass that starts with the next ``update`` (e.g. ``"adaptive replicates, batch 2"``)."""
        self._named = name

    def _what(self) -> str:
        """What the count is: the grid's cells, or a later pass's cells (named)."""
        if self._pass == 1:
            return self.label
        name = self._named or "more replicates or controls"
        return f"{self.label}, pass {self._pass} ({name})"

    def __enter__(self):
        import threading
        import time

        self._start = time.monotonic()
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._p = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                               transient=True)
            self._p.__enter__()
            self._task = self._p.add_task(self.label, total=None, eta="?")
        else:
            self._stop = threading.Event()
            threading.Thread(target=self._heartbeat, daemon=True).start()
        return self

    def work(self, done: float, total: float) -> None:
        """Modelled seconds of this pass done and in all (from the cost model; called by the runner)."""
        self._work = (done, total)

    #: the model's own remaining time counts as this share of the pass's modelled time, measured: early
    #: in a pass (little measured) the ETA is mostly the model's, later mostly the measured pace
    PRIOR = 0.05

    def eta(self) -> str:
        """Remaining time: modelled time left, scaled by measured over modelled time so far ('?' if unknown).

        Without a model, the mean time per finished cell times the cells left.
        """
        import time

        from simcomm.cost import fmt_seconds

        done, total = self._state
        first = getattr(self, "_first", None)
        if total is None or first is None:
            return "?"
        elapsed = time.monotonic() - first[1]
        if self._work is not None and self._work[1] > 0:
            w_done, w_total = self._work
            prior = self.PRIOR * w_total
            return fmt_seconds((elapsed + prior) / (w_done + prior) * (w_total - w_done))
        if done <= first[0]:
            return "?"
        return fmt_seconds(elapsed / (done - first[0]) * (total - done))

    def status(self) -> str:
        import time

        from simcomm.cost import fmt_seconds

        done, total = self._state
        elapsed = fmt_seconds(time.monotonic() - self._start)
        count = f"{done}/{total if total is not None else '?'} cells"
        return f"{self._what()}: {count}, {elapsed} elapsed, ETA {self.eta()}"

    def _heartbeat(self) -> None:
        import sys

        while not self._stop.wait(self.HEARTBEAT_S):
            print(self.status() + " (running)", file=sys.stderr, flush=True)

    def update(self, done: int, total: int) -> None:
        import time

        prev_done, prev_total = self._state
        if prev_total is not None and (done < prev_done or total != prev_total):
            self._pass += 1  # a new pass restarts the count: say so, and time its ETA afresh
            self._first = None
            self._work = None
        if getattr(self, "_first", None) is None:
            self._first = (done, time.monotonic())  # cached cells arrive at once: time from here
        self._state = (done, total)
        if self._p is not None:
            self._p.update(self._task, completed=done, total=total, description=self._what(), eta=self.eta())

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
        if self._p is not None:
            self._p.__exit__(*exc)
        return False


def _plugin_refs(args) -> list[str]:
    """The values of ``--plugin X`` / ``--plugin=X`` in raw command-line ``args`` (up to ``--``)."""
    refs, it = [], iter(args)
    for a in it:
        if a == "--":
            break
        if a == "--plugin":
            value = next(it, None)
            if value is None:
                raise click.UsageError("--plugin needs a value: the path of a .py file or a module name")
            refs.append(value)
        elif a.startswith("--plugin="):
            refs.append(a.split("=", 1)[1])
    return refs


class PluginCommand(click.Command):
    """A command whose ``--plugin`` modules are imported before anything else is parsed.

    A plugin registers experiments, compressors, bounds, topologies or claim kinds; importing it before
    the arguments are parsed makes those names (and a plugin compressor's settings, as options of
    ``simcomm payload``) known to every step that follows. ``after_plugins(ctx, args)``, where a
    command defines it, adds what depends on them.
    """

    after_plugins = None

    def parse_args(self, ctx, args):  # noqa: D102
        from simcomm._plugins import load_plugins

        load_plugins(_plugin_refs(args))
        if self.after_plugins is not None:
            self.after_plugins(ctx, args)
        return super().parse_args(ctx, args)


def _load_plugin_values(ctx, param, value):
    from simcomm._plugins import load_plugins

    load_plugins(value)  # already imported by PluginCommand.parse_args: a no-op that keeps the order explicit
    return value


def plugin_option(func):
    """``--plugin FILE.py|MODULE`` (repeatable): a user's module, imported before the registries are read."""
    return click.option("--plugin", "plugins", multiple=True, metavar="FILE.py|MODULE", expose_value=False,
                        is_eager=True, callback=_load_plugin_values,
                        help="Import your own module first (a .py file or a module name; repeatable): the "
                             "experiments, compressors, bounds and topologies it registers become usable here.")(func)


def save_figure(draw, stem: str) -> None:
    """Draw a figure headless with ``draw()`` and write ``stem.pdf`` and ``stem.png`` (TrueType fonts) as one set."""
    import io

    import matplotlib

    from simcomm.plotting import EMBED_TRUETYPE
    from simcomm.results import write_files

    headless()
    fig = draw()
    files = {}
    with matplotlib.rc_context(EMBED_TRUETYPE):
        for fmt in ("pdf", "png"):
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=200)
            files[f"{stem}.{fmt}"] = buf.getvalue()
    write_files(files)
