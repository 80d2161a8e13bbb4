"""Run a spec: grid expansion, seed streams, an injected ``map``, a per-cell cache, progress.

Stream for (cell, replicate) is ``default_rng(SeedSequence(seed, spawn_key=(cell_id, replicate)))``
where ``cell_id`` is a stable integer derived from the cell's parameters, so results do not depend on
execution order, on the executor, on the rest of the grid, or on which cells were re-run.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from simcomm._errors import UserError
from simcomm._plugins import import_plugins, loaded_plugins, plugin_files
from simcomm.experiments import get_experiment
from simcomm.results import Results, atomic_write_bytes, git_commit, versions
from simcomm.spec import Spec, content_hash

__all__ = ["run", "run_many", "run_cell", "cell_id", "cell_key", "code_version", "make_map", "threads_for",
           "CellOutOfMemory", "WorkerKilled", "CacheWarning", "read_cache_entry", "cache_problem"]

Map = Callable[[Callable, Iterable], Iterable]


def cell_id(params: dict, experiment=None) -> int:
    """Stable 32-bit id of a cell, from its parameters (used as the first spawn key).

    With ``experiment`` (an :class:`~simcomm.experiments.Experiment`), a renamed parameter counts under
    its former name (:attr:`Param.former <simcomm.experiments.Param>`): renaming a parameter changes no
    random stream, so results computed before the rename are reproduced bit for bit. A parameter
    declared ``keyed_at_default=False`` (added later, e.g. a negative-control switch) is left out of
    the key while it has its default value, so adding it moves no stream either; one declared
    ``column_at_default=False`` (a recording switch, which changes no draw) is never in the key.
    """
    if experiment is not None:
        declared = experiment.params
        # a parameter added later (keyed_at_default = False) is not part of the key at its default
        params = {(declared[k].former or k) if k in declared else k: v for k, v in params.items()
                  if not (k in declared and not declared[k].keyed_at_default and v == declared[k].default)
                  and not (k in declared and not declared[k].column_at_default)}  # recording only: no draw
    return int(content_hash(params)[:8], 16)


# Sources that never change a results table (judging, drawing, reporting, the CLI, other executors):
# editing them keeps the cell cache valid.
_NOT_IN_TABLES = {"cli", "mpi", "plotting.py", "report.py", "claims", "checking.py", "scaling.py", "_dask.py",
                  "cost.py", "results.py", "_proc.py"}


@functools.lru_cache(maxsize=None)
def code_version(module: str | None = None) -> str:
    """Hash of the sources that can change the table of an experiment defined in ``module``.

    The library (every simcomm module that computes), plus the experiment's own module; the other
    experiment modules are left out, so editing one paper's experiments keeps the other papers'
    cached cells. An experiment defined outside simcomm (a user's script) adds its own file, and each
    loaded plugin (``--plugin``, a spec's ``plugins``) its file.
    """
    root = Path(__file__).resolve().parent
    own = None
    if module is not None:
        spec = importlib.util.find_spec(module)
        own = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if rel[0] in _NOT_IN_TABLES:
            continue
        if rel[0] == "experiments" and not rel[-1].startswith("_") and path.resolve() != own:
            continue
        digest.update(path.read_bytes())
    if own is not None and root not in own.parents:
        digest.update(own.read_bytes())
    for path in plugin_files():  # a user's plugin may change what a shipped experiment computes
        if own is None or Path(path).resolve() != own:
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def run_cell(experiment: str, params: dict, seed: int, replicates: int, backend: str,
             module: str | None = None, threads: int | None = None, first: int = 0,
             network: dict | None = None, memory: int | None = None, plugins: tuple = ()) -> list[dict]:
    """Run every replicate of one cell; pure apart from the experiment's own computation.

    ``module`` is where the experiment is defined; a worker process imports it first, so experiments
    registered outside :mod:`simcomm.experiments` (a user's script, a test) run on any executor.
    ``plugins`` (``(module, folder)`` pairs, :func:`simcomm._plugins.loaded_plugins`) are imported before
    it: what a user's plugin registers (a compressor a shipped experiment builds by name) is known in the
    worker too, even one started before the plugin was loaded.
    ``threads`` caps numba's threads inside the cell (several cells running at once would otherwise
    oversubscribe the cores, and numba's parallel kernels collapse under oversubscription).

    ``network`` (a spec's ``[network]`` table) adds the simulated ``time`` column to the trace rows
    (``step`` and ``bits``) of every replicate (:func:`simcomm.network.trace_time`); its straggler
    draws come from the stream ``SeedSequence(seed, spawn_key=(2**32, cell_id, replicate))``, apart from
    every experiment stream (cell ids are below ``2**32``).

    ``memory`` (bytes), optional, is how much this process may grow while the cell runs
    (:func:`simcomm._proc.memory_ceiling`): a larger allocation raises ``MemoryError`` (a one-line
    :class:`CellOutOfMemory`) instead of the kernel's out-of-memory killer ending the process.

    Returns rows with the cell's parameters and ``replicate`` added. An exception inside the
    experiment is a bug, not a numerical fault, and propagates; numerical faults come back as rows.
    """
    import importlib

    from simcomm.backends import get_backend, use

    import_plugins(plugins)  # a user's plugins (--plugin, a spec's plugins): their compressors, topologies, ...
    if module is not None:
        importlib.import_module(module)
    from threadpoolctl import threadpool_limits

    exp = get_experiment(experiment)
    be = get_backend(backend)
    if threads is not None:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    cid = cell_id(params, exp)
    rows = []
    from simcomm._proc import memory_ceiling

    # One BLAS thread per cell: cells are the unit of parallelism, and multithreaded BLAS on small
    # matrices is slower (and oversubscribes the cores when several cells run at once).
    with threadpool_limits(limits=1):
        for rep in range(first, replicates):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(cid, rep)))
            try:
                with memory_ceiling(memory), use(be):  # everything the experiment calls computes on be
                    out = exp.func(dict(params), rng, be)
            except MemoryError as exc:
                # A plain one-line error that pickles across processes (no worker traceback).
                del rows
                what = f"the {_fmt_bytes(memory)} it may use here" if memory is not None else "the memory here"
                detail = f"{exc}; " if str(exc) else ""
                raise CellOutOfMemory(f"the cell {_short(params)} of experiment '{experiment}' ran out of memory "
                                      f"({detail}more than {what})") from None
            if network:
                from simcomm.network import trace_time

                out = trace_time(list(out), network, params,
                                 rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32, cid, rep))))
            for row in out:
                rows.append({**params, "replicate": rep, **row})
    return rows


class CellOutOfMemory(UserError):
    """A cell needed more memory than the machine had (raised in the worker, shown as one line)."""


class WorkerKilled(UserError):
    """A worker process was killed by the system (out of memory, a signal) while it ran a cell."""


class CacheWarning(UserWarning):
    """A cache entry failed its check (unreadable, truncated, edited, another cell's): it is recomputed."""


def _fmt_bytes(b: float | None) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if b < 1024 or unit == "PiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} EiB"  # pragma: no cover


def _short(params: dict, limit: int = 160) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return text if len(text) <= limit else text[:limit] + "..."


class _OutOfMemory(str):
    """What a task returns instead of rows when its cell ran out of memory (the message)."""


def _cell_task(args: tuple) -> list[dict] | _OutOfMemory:
    # Returned, not raised: executors stop at the first exception and drop the cells that finished
    # meanwhile; returned, every other cell still finishes and is cached.
    try:
        return run_cell(*args)
    except CellOutOfMemory as exc:
        return _OutOfMemory(str(exc))


def _in_worker(func, args, parent: int, ledger: str, index: int):
    """Run ``func(args)`` in a loky worker: with a parent watchdog, and recorded in the ledger."""
    from simcomm._proc import Ledger, start_watchdog

    start_watchdog(parent)
    label = _short(args[1]) if isinstance(args, tuple) and len(args) > 1 and isinstance(args[1], dict) else str(index)
    with Ledger(ledger).running(index, label):
        return func(args)


class _WorkersLost(Exception):
    """Raised by the loky map when the pool broke: the cells its dead workers were running."""

    def __init__(self, entries: list[dict], why: str):
        super().__init__(why)
        self.entries, self.why = entries, why


def threads_for(jobs: int, scheduler: str | None = None) -> int | None:
    """Numba threads per cell so that concurrent cells do not oversubscribe this machine's cores."""
    import os

    if scheduler:
        return 1
    return None if jobs == 1 else max(1, (os.cpu_count() or 1) // jobs)


def make_map(jobs: int = 1, scheduler: str | None = None) -> tuple[Map, str]:
    """Build the executor: builtin map, joblib/loky processes, or Dask (``local`` or ``tcp://...``).

    Returns ``(map, description)``; the map yields results in input order. The loky map's workers
    end when this process ends (a watchdog in each), and a worker killed by the system is reported by
    the cell it was running (:class:`WorkerKilled` from :func:`run_many`). The map carries
    ``workers`` (processes running cells at once on this machine; 0 for Dask, whose workers' memory
    is not known here), which :func:`run_many` uses for its memory guard.
    """
    if scheduler:
        from simcomm._dask import dask_map

        mapper = dask_map(scheduler)
        mapper.workers = 0
        return mapper, f"dask ({scheduler})"
    if jobs == 1:
        return builtins.map, "serial"
    import os
    import shutil
    import tempfile
    import warnings

    from joblib import Parallel, delayed

    def loky_map(func, iterable):
        from joblib.externals.loky.process_executor import BrokenProcessPool

        from simcomm._proc import Ledger

        ledger = tempfile.mkdtemp(prefix="simcomm-ledger-")
        parent = os.getpid()
        results = Parallel(n_jobs=jobs, backend="loky", return_as="generator")(
            delayed(_in_worker)(func, a, parent, ledger, i) for i, a in enumerate(iterable))
        try:
            for out in results:  # not `yield from`: the close below must run inside the warnings filter
                yield out
        except BrokenProcessPool as exc:
            codes = str(exc).partition("exit codes of the workers are ")[2].split("\n")[0].strip()
            raise _WorkersLost(Ledger(ledger).entries(), codes) from None
        finally:
            # A run stopped early (a full disk, an error) cancels the rest; joblib's warning about the unused
            # and cancelled tasks would follow the one-line error, so it is dropped here.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*tasks (have been successfully executed|which were)",
                                        category=UserWarning)
                results.close()
            shutil.rmtree(ledger, ignore_errors=True)

    loky_map.workers = jobs
    return loky_map, f"joblib/loky ({jobs} processes)"


def _close(stream) -> None:
    """Close a map's result stream now, not when it is collected.

    A run stopped early (a full disk, an error) leaves its stream suspended. Closed here, the executor's
    map cancels the rest inside its own warnings filter. Left to the garbage collector, joblib's generator
    may be finalized before the map that filters its warning about the unused and cancelled tasks, and
    that warning would follow the one-line error. A builtin ``map`` has nothing to close.
    """
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / key[:2] / f"{key}.json"


def _key(spec: Spec, params: dict, backend: str, version: str) -> str:
    reps = spec.replicates if not spec.first_replicate else [spec.first_replicate, spec.replicates]
    key = [spec.experiment, params, spec.seed, reps, backend, version]
    if spec.network:  # the [network] table changes the time column: part of the cell's identity
        key.append(spec.network)
    return content_hash(key)


def cell_key(spec: Spec, params: dict, backend: str, cache_dir: str | Path) -> Path:
    """Path of the cache entry of one cell of ``spec`` (present when the cell is cached)."""
    version = code_version(get_experiment(spec.experiment).func.__module__)
    return _cache_path(Path(cache_dir), _key(spec, params, backend, version))


# A cache entry is two parts: one line of JSON (the header: format, key, experiment, code version,
# parameters, SHA-256 and length of the body), then the body (the rows as JSON). The body is checked
# against the header's checksum and the header's key against the entry's name, so a truncated,
# edited or misplaced entry is recomputed, never trusted.
_CACHE_FORMAT = 2


def _entry_bytes(key: str, spec: Spec, params: dict, version: str, rows: list[dict]) -> bytes:
    body = json.dumps(rows, default=_jsonable).encode()
    head = {"format": _CACHE_FORMAT, "key": key, "experiment": spec.experiment, "code_version": version,
            "params": params, "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
    return json.dumps(head, default=str).encode() + b"\n" + body


def read_cache_entry(path: str | Path) -> tuple[list[dict] | None, str | None]:
    """Read and verify one cache entry: ``(rows, None)``, or ``(None, what is wrong)``; missing is ``(None, None)``.

    An entry is trusted only when its header parses, its key is its file name, and the SHA-256 of
    its body matches the header (so a value edited inside the rows, a truncation or garbage is caught).
    """
    path = Path(path)
    if path.is_dir():
        return None, "it is a folder, not a file (remove the folder to cache this cell again)"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    head_text, newline, body = data.partition(b"\n")
    try:
        head = json.loads(head_text)
    except ValueError:
        return None, "not a cache entry of this simcomm (unparsable header: garbage or an older format)"
    if not newline or not isinstance(head, dict) or head.get("format") != _CACHE_FORMAT:
        return None, "not a cache entry of this simcomm (garbage or an older format)"
    if head.get("key") != path.stem:
        return None, f"its header names another cell ({str(head.get('key'))[:16]}): moved or copied"
    if len(body) != head.get("bytes") or hashlib.sha256(body).hexdigest() != head.get("sha256"):
        size = f" ({len(body)} bytes, the header says {head.get('bytes')})" if len(body) != head.get("bytes") else ""
        return None, f"its checksum does not match its content{size}: truncated or edited"
    try:
        rows = json.loads(body)
    except ValueError:  # pragma: no cover - a body that passes its checksum parses
        return None, "its body is not JSON"
    return rows, None


def _write_entry(path: Path, data: bytes) -> None:
    """Cache one cell; a folder standing where the entry goes (named by the read's warning) is left alone."""
    if not path.is_dir():
        atomic_write_bytes(path, data)


def cache_problem(spec: Spec, params: dict, backend: str, cache_dir: str | Path) -> tuple[bool, str | None]:
    """``(cached, problem)`` for one cell: a valid entry is ``(True, None)``; a bad one names what is wrong."""
    rows, problem = read_cache_entry(cell_key(spec, params, backend, cache_dir))
    return rows is not None, problem


def _cache_warning(path: Path, spec: Spec, params: dict, problem: str) -> None:
    import warnings

    warnings.warn(CacheWarning(f"cache entry {path} (cell {_short(params, 80)} of {spec.name}) is not used: "
                               f"{problem}; recomputing the cell"), stacklevel=3)


def _memory_budget(map) -> tuple[int | None, int]:
    """(bytes one cell may use, cells running at once) for ``map`` on this machine; None: no guard."""
    from simcomm._proc import available_memory

    workers = 1 if map is builtins.map else getattr(map, "workers", None)
    if not workers:
        return None, 0  # an unknown or remote executor: its memory is not known here
    avail = available_memory()
    if avail is None:
        return None, workers
    # At least 1 GiB: a lower ceiling could starve numba's JIT and thread start-up rather than the cell.
    return max(avail // workers, 2**30), workers


def _probe_task(args: tuple) -> tuple[list[dict] | _OutOfMemory, int | None]:
    """Run a probe (a cell's first replicate) and measure this process's peak memory above its baseline.

    Runs where the map puts it (a worker, or here for the builtin map); returns ``(rows, peak bytes)``,
    the peak ``None`` where it cannot be measured.
    """
    from simcomm import _proc

    before = _proc.rss()
    measured = _proc.reset_peak() and before is not None
    rows = _cell_task(args)
    if isinstance(rows, _OutOfMemory) or not measured:
        return rows, None
    return rows, max(0, (_proc.peak_rss() or 0) - before)


def _probe_fits(spec: Spec, params: dict, out, workers: int, cells: int) -> list[dict]:
    """The rows of a probe, or one :class:`CellOutOfMemory` line when its cell cannot run ``workers`` at once.

    The measured peak (resident memory above what the worker held before) times the cells that may
    run at once must fit in the memory available.
    """
    from simcomm import _proc

    rows, peak = out
    if isinstance(rows, _OutOfMemory):
        raise CellOutOfMemory(f"{spec.name}: {rows} on its first replicate, before any cell ran; use smaller values")
    if peak is None:
        return rows
    avail = _proc.available_memory() or 0
    at_once = max(1, min(workers, cells))
    if avail and peak * at_once > avail:  # (read after the probe: its memory is free again)
        fit = max(1, int(avail // max(peak, 1)))
        fix = f"use --jobs {fit} or smaller values" if fit < at_once else "use smaller values"
        raise CellOutOfMemory(
            f"{spec.name}: the cell {_short(params)} of experiment '{spec.experiment}' needs ~{_fmt_bytes(peak)} "
            f"per replicate (measured on its first replicate, the grid's last cell); {at_once} cells of that size "
            f"running at once need "
            f"~{_fmt_bytes(peak * at_once)}, more than the {_fmt_bytes(avail)} available; {fix}")
    return rows


def run_many(specs: list[Spec], *, map: Map = builtins.map, backend: str = "numba",
             cache_dir: str | Path | None = None, progress: Callable[[int, int], None] | None = None,
             executor: str = "serial", threads_per_cell: int | None = None,
             seconds: Callable[[Spec, dict, int], float | None] | None = None) -> list[Results]:
    """Run several specs through one ``map`` call (cells of all specs are pooled).

    Parameters
    ----------
    specs : list of Spec
    map : callable
        ``map(func, iterable)`` yielding results in order (builtin map, joblib, Dask, ...).
    backend : str
        Backend name passed to every experiment and recorded in the metadata.
    cache_dir : path, optional
        Per-cell cache: a cell whose key (spec experiment, cell, replicates, seed, backend, code
        version) is already there, with a body that matches its checksum, is not recomputed, so an
        interrupted run resumes. A bad entry is named in a :class:`CacheWarning` and recomputed.
    progress : callable, optional
        ``progress(done, total)`` after each cell.
    threads_per_cell : int, optional
        Numba threads inside each cell (see :func:`run_cell`); ``None`` leaves numba's default.
    seconds : callable, optional
        ``seconds(spec, params, replicates)``: the modelled time of a task (e.g.
        :func:`simcomm.cost.cell_seconds`), by which a progress bar with a ``work`` method weighs the
        tasks done; without it every task weighs the same.

    Notes
    -----
    Memory guard, on this machine's executors (builtin map and :func:`make_map`'s; not Dask): every
    cell runs under a memory ceiling (the available memory shared by the cells running at once), so
    a cell too large fails as a one-line :class:`CellOutOfMemory` while the other cells finish and
    are cached. For an experiment without a memory model (``cost``), the first replicate of the spec's
    last cell (grids usually ascend, so its largest) runs first: these probes go through ``map`` (the
    workers in parallel) before any other cell, each measures its own process's peak memory, and that
    peak times the cells that may run at once must fit before anything else starts. The probe's rows
    are the cell's replicate 0. A worker killed by the system
    anyway becomes one :class:`WorkerKilled` line naming the cell and the memory it had reached.
    """
    cache_dir = None if cache_dir is None else Path(cache_dir)
    budget, workers = _memory_budget(map) if backend != "cupy" else (None, 0)
    tasks, keys, owners, heads = [], [], [], {}
    cached: dict[tuple[int, int], list[dict]] = {}
    pending_of: dict[int, list[int]] = {}
    cells_of = [spec.cells() for spec in specs]  # built once: cells() expands the grid on each call
    plugins = loaded_plugins()
    for s, spec in enumerate(specs):
        module = get_experiment(spec.experiment).func.__module__
        version = code_version(module)
        for c, params in enumerate(cells_of[s]):
            key = _key(spec, params, backend, version)
            if cache_dir is not None:
                rows, problem = read_cache_entry(_cache_path(cache_dir, key))
                if rows is not None:
                    cached[(s, c)] = rows
                    continue
                if problem is not None:
                    _cache_warning(_cache_path(cache_dir, key), spec, params, problem)
            pending_of.setdefault(s, []).append(c)
    n_pending = sum(len(v) for v in pending_of.values())
    total = n_pending + len(cached)
    done = len(cached)
    if progress is not None:
        progress(done, total)
    probes, probe_tasks = [], []
    for s, cs in pending_of.items():
        spec = specs[s]
        exp = get_experiment(spec.experiment)
        module, version = exp.func.__module__, code_version(exp.func.__module__)
        probe = cs[-1] if budget is not None and exp.cost is None and not spec.first_replicate else None
        for c in cs:
            params = cells_of[s][c]
            first = spec.first_replicate
            if c == probe:
                # its ceiling is all the memory available, as for a cell alone: one too large to run beside
                # others fails the fit check below (with a --jobs hint), not as out of memory
                probes.append((s, c))
                probe_tasks.append((spec.experiment, params, spec.seed, 1, backend, module, threads_per_cell, 0,
                                    spec.network, budget * workers, plugins))
                first = 1
                if spec.replicates <= 1:
                    continue
            tasks.append((spec.experiment, params, spec.seed, spec.replicates, backend, module, threads_per_cell,
                          first, spec.network, budget, plugins))
            keys.append(_key(spec, params, backend, version))
            owners.append((s, c))
    where = f" in {cache_dir}" if cache_dir is not None else ""
    work = _work_meter(progress, seconds, specs, cells_of, probes, owners, tasks, workers)
    if probes:  # through the same map as the cells (the workers in parallel), before any other cell starts
        outs = []
        probe_stream = map(_probe_task, probe_tasks)
        try:
            for owner, out in zip(probes, probe_stream):
                outs.append(out)
                work(("probe", owner))
        except _WorkersLost as lost:
            raise WorkerKilled(_lost_message(lost, probes, specs, cells_of, done, where)) from None
        finally:
            _close(probe_stream)
        for (s, c), out in zip(probes, outs):
            heads[(s, c)] = _probe_fits(specs[s], cells_of[s][c], out, workers, n_pending)
        for s, c in probes:  # every probe fits: a cell of one replicate is finished
            spec = specs[s]
            if spec.replicates <= 1:
                cached[(s, c)] = heads.pop((s, c))
                if cache_dir is not None:
                    version = code_version(get_experiment(spec.experiment).func.__module__)
                    key = _key(spec, cells_of[s][c], backend, version)
                    _write_entry(_cache_path(cache_dir, key),
                                 _entry_bytes(key, spec, cells_of[s][c], version, cached[(s, c)]))
                done += 1
                if progress is not None:
                    progress(done, total)
    # No map call without tasks: an executor given nothing to do still starts (and joblib warns
    # "0 tasks ... cancelled" on a fully cached rerun).
    stream = map(_cell_task, tasks) if tasks else iter(())
    failed = []
    try:
        for owner, key, rows in zip(owners, keys, stream):
            work(("cell", owner))
            if isinstance(rows, _OutOfMemory):
                failed.append(rows)
                continue
            rows = heads.pop(owner, []) + rows
            cached[owner] = rows
            if cache_dir is not None:
                spec = specs[owner[0]]
                params = cells_of[owner[0]][owner[1]]
                version = code_version(get_experiment(spec.experiment).func.__module__)
                _write_entry(_cache_path(cache_dir, key), _entry_bytes(key, spec, params, version, rows))
            done += 1
            if progress is not None:
                progress(done, total)
    except _WorkersLost as lost:
        raise WorkerKilled(_lost_message(lost, owners, specs, cells_of, done, where)) from None
    finally:
        _close(stream)
    if failed:
        more = f" (and {len(failed) - 1} more cells)" if len(failed) > 1 else ""
        raise CellOutOfMemory(f"{failed[0]}{more}; the {done} cells that finished are cached{where}, so the same "
                              "command with a smaller grid resumes from them")
    out = []
    for s, spec in enumerate(specs):
        rows = [row for c in range(len(cells_of[s])) for row in cached[(s, c)]]
        timed = set(get_experiment(spec.experiment).wall_clock)
        clock = [row for row in rows if row.get("metric") in timed] if timed else []
        if clock:  # wall-clock rows differ between runs: metadata, never the judged table
            rows = [row for row in rows if row.get("metric") not in timed]
        table = pd.DataFrame(rows)
        declared = get_experiment(spec.experiment).params
        quiet = [k for k, p in declared.items() if not p.column_at_default and k in table.columns
                 and k not in spec.grid and spec.params.get(k, p.default) == p.default]
        if quiet:  # a recording switch left at its default: the table is the one computed before it existed
            table = table.drop(columns=quiet)
        meta = dict(
            spec=spec.to_dict(), spec_hash=spec.hash, seed=spec.seed,
            spawn_key="(cell_id(params), replicate); cell_id = first 8 hex digits of sha256(params), "
                      "renamed parameters under their former names",
            cells=[{"params": p, "cell_id": cell_id(p, get_experiment(spec.experiment))} for p in cells_of[s]],
            backend=backend, executor=executor, versions=versions(), git_commit=git_commit(),
            code_version=code_version(get_experiment(spec.experiment).func.__module__),
        )
        if clock:
            meta["wall_clock"] = clock
        out.append(Results(table, meta))
    return out


def _lost_message(lost: _WorkersLost, owners, specs, cells_of, done: int, where: str) -> str:
    """One line for a broken pool: the cell a killed worker was running, its memory, what is cached."""
    entries = [e for e in lost.entries if isinstance(e.get("index"), int) and 0 <= e["index"] < len(owners)]
    # The kernel's out-of-memory killer picks the largest process: the entry with the most memory.
    entries.sort(key=lambda e: -int(e.get("rss") or 0))
    signal = f" (exit {lost.why})" if lost.why else ""
    if entries:
        e = entries[0]
        s, c = owners[e["index"]]
        spec = specs[s]
        exp = get_experiment(spec.experiment)
        params = cells_of[s][c]
        mem = f"; it had reached {_fmt_bytes(e['rss'])}" if e.get("rss") else ""
        if exp.cost is not None:
            mem += f" (cost model: ~{_fmt_bytes(float(exp.cost(params)[1]))} per replicate)"
        others = f", one of {len(entries)} cells running then" if len(entries) > 1 else ""
        what = f"the cell {_short(params)} of {spec.name}{others}{mem}"
    else:
        what = "a cell"
    return (f"a worker process was killed by the system{signal} while running {what}, most likely for lack of "
            f"memory; the {done} cells that finished are cached{where}: run the same command again with fewer "
            "--jobs or smaller values to resume from them")


def run(spec: Spec, **kwargs) -> Results:
    """Run one spec; see :func:`run_many` for the keyword arguments."""
    return run_many([spec], **kwargs)[0]


def _jsonable(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"row value of type {type(obj).__name__} is not JSON serialisable")


def _work_meter(progress, seconds, specs, cells_of, probes, owners, tasks, workers) -> Callable:
    """``work(event)``: tell a progress bar with a ``work(done, total)`` method the modelled time done.

    Each probe and each cell task weighs its modelled seconds (``seconds(spec, params, replicates)``,
    divided among the cells running at once); a task without a model (or every task, when
    ``seconds`` is None) weighs the mean of those with one. The bar then extrapolates from modelled
    time, not from a count of cells of unequal size.
    """
    report = getattr(getattr(progress, "__self__", None), "work", None)
    if report is None:
        return lambda event: None
    cell_seconds = seconds or (lambda spec, params, replicates: None)
    weights = {("probe", o): cell_seconds(specs[o[0]], cells_of[o[0]][o[1]], 1) for o in probes}
    for o, task in zip(owners, tasks):
        weights[("cell", o)] = cell_seconds(specs[o[0]], cells_of[o[0]][o[1]], task[3] - task[7])
    known = [w for w in weights.values() if w is not None]
    fill = sum(known) / len(known) if known else 1.0
    weights = {k: (fill if w is None else w) / max(1, workers) for k, w in weights.items()}
    total, done = sum(weights.values()), [0.0]
    report(0.0, total)

    def work(event) -> None:
        done[0] += weights.get(event, 0.0)
        report(done[0], total)

    return work
