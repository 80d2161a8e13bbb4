"""Errors a user can cause (the CLI prints them as one line and exits with code 2), and the hint they carry.

The bottom layer of simcomm: it imports nothing from the package, so every layer may use it.
"""

import difflib

__all__ = ["UserError", "SpecError", "BackendUnavailable", "closest", "RENAMED", "renamed"]


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


#: Old names of parameters and the one name each concept now has everywhere: the step size is ``lr``, the
#: number of nodes or workers ``n``, the L2 penalty ``l2``, Monte Carlo repetitions ``draws``, the
#: recording period ``record_every``. A spec, ``--set`` or control key with an old
#: name is a one-line error naming the new one (a Python keyword with an old name is a plain TypeError).
RENAMED = {"gamma": "lr", "N": "n", "n_workers": "n", "lam": "l2", "base_gamma_scale": "base_lr_scale",
           "mc": "draws", "eval_every": "record_every"}


def renamed(word: str, options) -> str | None:
    """The new name of ``word`` when it is an old name whose new name is among ``options``, else ``None``.

    Examples
    --------
    >>> renamed("gamma", ["lr", "beta"]), renamed("gamma", ["beta"]), renamed("lr", ["lr"])
    ('lr', None, None)
    """
    new = RENAMED.get(str(word))
    return new if new is not None and new in options else None
