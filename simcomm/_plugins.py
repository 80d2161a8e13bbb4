"""Load a user's own module (a ``.py`` file or an importable module) so that what it registers is known.

A plugin is ordinary Python that decorates its functions and classes with simcomm's registries
(``@experiment``, ``@register_compressor``, ``@theory.bound``, a topology or a claim kind); importing
it registers them. The command line imports plugins (``--plugin``, and a spec's top-level
``plugins = [...]``) before it reads any registry, so a user's names are swept, judged, plotted and
conformed like the shipped ones.

A file plugin ``path/to/mine.py`` is imported as the module ``mine`` with its folder put first on
``sys.path``: worker processes (joblib/loky, a local Dask cluster) inherit the path and import it by
that name too, and ``"mine:my_bound"`` references in a spec resolve to it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from simcomm._errors import UserError

__all__ = ["load_plugins", "loaded_plugins", "import_plugins", "plugin_files"]

#: module name -> source file (or None for a module without one), in load order
_LOADED: dict[str, str | None] = {}
#: module name -> the folder put on sys.path for a file plugin
_FOLDERS: dict[str, str] = {}


def _is_file_ref(ref: str, base) -> bool:
    return ref.endswith(".py") or "/" in ref or "\\" in ref or (Path(base or ".") / ref).is_file()


def load_plugins(refs, *, base: str | Path | None = None, where: str = "--plugin") -> list[str]:
    """Import each plugin in ``refs`` (once) and return their module names.

    Parameters
    ----------
    refs : iterable of str
        Paths of ``.py`` files (relative ones against ``base``, default the working directory) or
        dotted names of importable modules.
    base : path, optional
        Folder relative file paths are read from (a spec's own folder).
    where : str
        What named the plugins, for the error line (``--plugin`` or ``spec.toml: plugins``).

    Raises
    ------
    UserError
        One line: the file does not exist, the module cannot be found, its name is taken by another
        module, or importing it raised (the exception named; ``--debug`` shows the traceback).
    """
    names = []
    for ref in refs:
        if not isinstance(ref, str) or not ref.strip():
            raise UserError(f"{where}: {ref!r} is not a plugin; give the path of a .py file or a module name")
        ref = ref.strip()
        if _is_file_ref(ref, base):
            names.append(_load_file(ref, base, where))
        else:
            names.append(_load_module(ref, where))
    return names


def _load_file(ref: str, base, where: str) -> str:
    path = Path(ref).expanduser()
    if not path.is_absolute():
        path = Path(base or ".") / path
    path = path.resolve()
    if path.suffix != ".py":
        raise UserError(f"{where} '{ref}': a plugin file must end in .py (or give a module name without a path)")
    if not path.is_file():
        raise UserError(f"{where} '{ref}': no such file ({path}); give the path of a .py file that registers your "
                        "code, or the name of an importable module")
    name = path.stem
    if not name.isidentifier():
        raise UserError(f"{where} '{ref}': '{name}' is not a Python module name; rename the file (letters, digits, "
                        "underscores)")
    mod = sys.modules.get(name)
    if mod is not None:
        origin = getattr(mod, "__file__", None)
        if origin is not None and Path(origin).resolve() == path:
            _LOADED.setdefault(name, str(path))
            _FOLDERS.setdefault(name, str(path.parent))
            return name
        raise UserError(f"{where} '{ref}': a module named '{name}' is already loaded from "
                        f"{origin or 'the standard library'}; rename the file")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    _import(name, ref, where)
    _LOADED[name] = str(path)
    _FOLDERS[name] = folder
    return name


def _load_module(ref: str, where: str) -> str:
    import os

    if os.getcwd() not in sys.path:  # a module in the working directory, as for python -m
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(ref)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UserError(f"{where} '{ref}': no module named '{ref}'; give the path of a .py file (e.g. ./{ref}.py) "
                        "or a module on the Python path")
    mod = _import(ref, ref, where)
    _LOADED[ref] = getattr(mod, "__file__", None)
    return ref


def _import(name: str, ref: str, where: str):
    try:
        return importlib.import_module(name)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module may raise anything while it registers
        sys.modules.pop(name, None)
        line = ""
        tb = exc.__traceback__
        while tb is not None:  # the deepest frame inside the plugin itself
            if tb.tb_frame.f_code.co_filename.endswith(f"{name.rpartition('.')[2]}.py"):
                line = f" (line {tb.tb_lineno})"
            tb = tb.tb_next
        if isinstance(exc, SyntaxError) and exc.lineno:
            line = f" (line {exc.lineno})"
        raise UserError(f"{where} '{ref}': importing it raised {type(exc).__name__}{line}: {exc}; fix the plugin "
                        "(--debug shows the traceback)") from exc


def loaded_plugins() -> tuple[tuple[str, str | None], ...]:
    """``(module name, folder of a file plugin or None)`` of each plugin loaded here, in load order.

    What a worker process imports before it runs a cell (:func:`import_plugins`).
    """
    return tuple((name, None if _FOLDERS.get(name) is None else _FOLDERS[name]) for name in _LOADED)


def import_plugins(plugins) -> None:
    """Import ``plugins`` (from :func:`loaded_plugins`) in this process: a worker started before they were loaded."""
    for name, folder in plugins:
        if folder is not None and folder not in sys.path:
            sys.path.insert(0, folder)
        importlib.import_module(name)


def plugin_files() -> tuple[str, ...]:
    """Source files of the loaded plugins (their contents are part of a cell's code version)."""
    return tuple(f for f in _LOADED.values() if f)
