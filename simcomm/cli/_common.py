"""Options and helpers shared by several subcommands (parsing and I/O only)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from simcomm._errors import UserError

__all__ = ["ensure_writable", "backend_option", "jobs_option", "seed_option", "scheduler_option", "progress_bar"]


def ensure_writable(folder: str | Path) -> Path:
    """Create ``folder`` if needed and prove it is writable, before any work is done."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".simcomm-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"cannot write to output folder '{folder}' ({exc.strerror}); pass a writable --out DIR") from None
    return folder


backend_option = click.option("--backend", default="numba", show_default=True,
                              help="Compute backend: numpy (reference), numba (CPU) or cupy (GPU).")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=1), default=min(2, os.cpu_count() or 1),
                           show_default=True, help="Local worker processes (joblib/loky); 1 runs in this process.")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=None,
                           help="Override every spec's root seed.")
scheduler_option = click.option("--scheduler", default=None, metavar="ADDRESS",
                                help="Run cells on Dask: 'local' starts a LocalCluster, or tcp://HOST:PORT.")


class progress_bar:
    """A rich progress bar driven by ``update(done, total)``; on a non-terminal, a line every 30 s."""

    def __init__(self, label: str, enabled: bool = True):
        self.label, self.enabled, self._p, self._task = label, enabled, None, None
        self._last = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TimeElapsedColumn(), transient=True)
            self._p.__enter__()
            self._task = self._p.add_task(self.label, total=None)
        return self

    def update(self, done: int, total: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=done, total=total)
            return
        import sys
        import time

        now = time.monotonic()
        if self._last is None:
            self._last = now
        elif now - self._last >= 30 or done == total:
            self._last = now
            print(f"{self.label}: {done}/{total} cells", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)
        return False
