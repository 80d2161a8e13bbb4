"""Errors a user can cause: the CLI prints them as one line and exits with code 2."""

__all__ = ["UserError", "SpecError", "BackendUnavailable"]


class UserError(ValueError):
    """Bad input from a user: one line that says what is wrong and how to fix it."""


class SpecError(UserError):
    """A spec file (TOML) or a ``--set`` override that cannot be run."""


class BackendUnavailable(UserError):
    """A backend was asked for by name but cannot run here (missing package or device)."""
