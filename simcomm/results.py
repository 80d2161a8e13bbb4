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

__all__ = ["Results", "atomic_write_text", "atomic_write_bytes", "write_files", "versions", "git_commit", "git_dirty",
           "read_results"]


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
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def write_files(files: dict) -> None:
    """Write several files as one set: all of them or, when any write fails, none.

    ``files`` maps path -> bytes (or str, written as UTF-8). Every file is first written in full to a
    temporary name in its own folder; only when all are written are they renamed into place (a
    rename takes no space, so a full disk or a refused write leaves the old files as they were and no
    temporary file behind). Folders created for the set are removed again when it fails.
    """
    made, temps = [], []
    mode = 0o666 & ~_umask()
    try:
        for path, data in files.items():
            path = Path(path)
            missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made.extend(reversed(missing))
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append((tmp, path))
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    except BaseException as exc:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    for tmp, path in temps:
        os.replace(tmp, path)


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


def git_dirty() -> bool:
    """Whether tracked files of the checkout differ from its commit (False outside a git work tree)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and bool(out.stdout.strip())


@dataclass
class Results:
    """Long-format table (one row per cell, replicate and metric) plus metadata."""

    table: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def files(self, folder: str | Path, verdict: dict | None = None) -> dict:
        """The files :meth:`write` writes: path -> text (``table.csv``, ``meta.json``, ``verdict.json``)."""
        folder = Path(folder)
        out = {folder / "table.csv": self.table.to_csv(index=False),
               folder / "meta.json": json.dumps(self.meta, indent=2, default=str)}
        if verdict is not None:
            out[folder / "verdict.json"] = json.dumps(verdict, indent=2, default=str)
        return out

    def write(self, folder: str | Path, verdict: dict | None = None) -> Path:
        """Write ``table.csv``, ``meta.json`` (and ``verdict.json``) into ``folder`` as a set (all or none)."""
        write_files(self.files(folder, verdict))
        return Path(folder)


def read_results(folder: str | Path) -> Results:
    """Read a folder written by :meth:`Results.write`."""
    folder = Path(folder)
    table = pd.read_csv(folder / "table.csv", keep_default_na=True)
    meta = json.loads((folder / "meta.json").read_text())
    return Results(table, meta)
