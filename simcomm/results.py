"""Tidy results: a long-format table plus run metadata, written atomically."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["Results", "atomic_write_text", "versions", "git_commit", "read_results"]


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename (no torn files)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (no torn files)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600; give it the mode open() would (0666 minus the umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process umask (read by setting it and setting it back; there is no read-only call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def versions() -> dict:
    """Versions of the packages that determine results."""
    import numpy

    import simcomm

    out = {"python": platform.python_version(), "numpy": numpy.__version__, "pandas": pd.__version__,
           "simcomm": simcomm.__version__}
    try:
        import numba

        out["numba"] = numba.__version__
    except ImportError:  # pragma: no cover - numba is a core dependency
        pass
    return out


def git_commit() -> str | None:
    """The checkout's commit when simcomm runs from a git work tree, else None."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass
class Results:
    """Long-format table (one row per cell, replicate and metric) plus metadata."""

    table: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def write(self, folder: str | Path, verdict: dict | None = None) -> Path:
        """Write ``table.csv``, ``meta.json`` (and ``verdict.json``) into ``folder`` atomically."""
        folder = Path(folder)
        atomic_write_text(folder / "table.csv", self.table.to_csv(index=False))
        atomic_write_text(folder / "meta.json", json.dumps(self.meta, indent=2, default=str))
        if verdict is not None:
            atomic_write_text(folder / "verdict.json", json.dumps(verdict, indent=2, default=str))
        return folder


def read_results(folder: str | Path) -> Results:
    """Read a folder written by :meth:`Results.write`."""
    folder = Path(folder)
    table = pd.read_csv(folder / "table.csv", keep_default_na=True)
    meta = json.loads((folder / "meta.json").read_text())
    return Results(table, meta)
