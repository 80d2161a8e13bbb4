"""Errors a user can cause (the CLI prints them as one line and exits with code 2), and the hint they carry.

The bottom layer of simcomm: it imports nothing from the package, so every layer may use it.
"""

import difflib

__all__ = ["UserError", "SpecError", "BackendUnavailable", "closest"]


class UserError(ValueError):
    """Bad input from a user: one line that says what is wrong and how to fix it."""


class SpecError(UserError):
    """A spec file (TOML) or a ``--set`` override that cannot be run."""


class BackendUnavailable(UserError):
    """A backend was asked for by name but cannot run here (missing package or device)."""


def closest(word: str, options) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest option, or ``""``.

    Examples
    --------
    >>> closest("qsdg", ["qsgd", "ternary"]), closest("zzz", ["qsgd"])
    (" (did you mean 'qsgd'?)", '')
    """
    match = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.5)
    return f" (did you mean '{match[0]}'?)" if match else ""

