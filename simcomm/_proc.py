"""What a process knows about itself: its memory, a memory ceiling, a parent watchdog, a ledger of running cells.

The bottom layer (standard library only). The runner uses it so that a cell too large for this machine
fails with a ``MemoryError`` (one line) instead of being killed by the kernel, so that worker processes
end when the process that started them ends (``kill -9`` included), and so that a worker killed by the
system can be named afterwards (the ledger: one small file per worker saying which cell it runs and how
much memory it has reached).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path

__all__ = ["available_memory", "rss", "peak_rss", "reset_peak", "memory_ceiling", "start_watchdog", "Ledger"]

def _status(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status in bytes (VmRSS, VmHWM, VmSize), or None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory() -> int | None:
    """Bytes of memory available to a new process on this machine (MemAvailable), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def rss() -> int | None:
    """Resident memory of this process now, in bytes (None where it cannot be read)."""
    return _status("VmRSS")


def peak_rss() -> int | None:
    """Peak resident memory of this process since start or since :func:`reset_peak`, in bytes."""
    peak = _status("VmHWM")
    if peak is None:
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports kB
        except (ImportError, OSError):
            return None
    return peak


def reset_peak() -> bool:
    """Reset the peak-RSS mark (Linux >= 4.0: write 5 to /proc/self/clear_refs); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


@contextlib.contextmanager
def memory_ceiling(extra: int | None):
    """Let this process grow by at most ``extra`` bytes of address space while the block runs.

    Above it an allocation raises ``MemoryError`` (numpy and numba both do) instead of the kernel's
    out-of-memory killer ending the process: the soft ``RLIMIT_AS`` is set to the current address
    space plus ``extra`` and restored afterwards. Address space counts at least what is resident, so
    the ceiling is conservative. ``None`` (or a platform without ``resource``) sets nothing.
    """
    if extra is None:
        yield
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        size = _status("VmSize")
        if size is None:
            raise OSError("no VmSize")
        limit = size + int(extra)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_watchdog_started = False


def start_watchdog(parent: int, interval: float = 1.0) -> bool:
    """In a worker: end this process (``os._exit``) once ``parent`` is gone; started once per process.

    A worker's parent is the process that started the pool. When that one ends without shutting its
    pool down (``kill -9``, a crash), the worker is re-parented and would run its cell to the end;
    the watchdog notices the new parent within ``interval`` seconds and exits. Returns False (and
    watches nothing) when ``parent`` is not this process's parent (a Dask nanny, a thread pool).
    """
    global _watchdog_started
    if _watchdog_started or os.getppid() != parent:
        return False
    _watchdog_started = True

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="simcomm-parent-watchdog", daemon=True).start()
    return True


class Ledger:
    """One file per worker in a folder: the cell it is running and the most memory it has reached.

    The worker writes ``<pid>.json`` when a cell starts, updates its memory every ``interval``
    seconds from a thread while the cell runs, and removes the file when the cell ends. When a worker
    is killed (by the out-of-memory killer, a signal), its file stays: the parent reads which cell it
    was and how far its memory had grown.
    """

    def __init__(self, folder: str | Path, interval: float = 0.5):
        self.folder, self.interval = Path(folder), interval

    @contextlib.contextmanager
    def running(self, index: int, label: str):
        """Record that this process runs cell ``index`` (``label`` names it) while the block runs."""
        path = self.folder / f"{os.getpid()}.json"
        state = {"index": index, "label": label, "pid": os.getpid(), "rss": rss() or 0}
        stop = threading.Event()

        def write():
            tmp = path.with_suffix(".tmp")
            try:
                tmp.write_text(json.dumps(state))
                os.replace(tmp, path)
            except OSError:
                pass  # the ledger is best effort: a full disk must not fail the cell

        def sample():
            while not stop.wait(self.interval):
                now = rss() or 0
                if now > state["rss"]:
                    state["rss"] = now
                    write()

        write()
        thread = threading.Thread(target=sample, name="simcomm-ledger", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            with contextlib.suppress(OSError):
                path.unlink()

    def entries(self) -> list[dict]:
        """The cells whose workers did not finish them (one dict per file: index, label, pid, rss)."""
        out = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return out
