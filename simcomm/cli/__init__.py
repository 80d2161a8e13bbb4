"""The ``simcomm`` command: a click group with one module per subcommand.

The CLI only parses, reads and writes; the science lives in the library. Errors a user can cause
print one line (what is wrong, how to fix it) and exit with code 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import sys

import click

from simcomm import __version__
from simcomm._errors import UserError
from simcomm.cli._common import Interrupted

__all__ = ["cli", "main"]


class _OrderedGroup(click.Group):
    def list_commands(self, ctx):
        return list(self.commands)


@click.group(cls=_OrderedGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="simcomm")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx, debug):
    """Simulate communication-efficient distributed SGD and check the papers' claims.

    \b
    Examples:
      simcomm check --quick                 # every claim on small grids: results/quick/REPORT.md
      simcomm check --full                  # the full grids: the gallery figures/ and figures/REPORT.md
      simcomm check expgraph.rho_even --full
      simcomm list                          # the claims, their papers and provenance tags
      simcomm run sims/expgraph_rho_even.toml --set "n=[8,16]"
      simcomm topology exponential -n 1024 --json
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _environment_fault(exc: OSError) -> str | None:
    """One line for a fault of the machine rather than the input (disk full, no permission), else None."""
    import errno

    where = f" '{exc.filename}'" if exc.filename else ""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"no space left on the disk while writing{where} ({why}): free some space or pass --out on "
                "another disk; the cells that finished are cached, so the same command resumes from them")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"no permission to write{where} ({why}): pass a writable --out (or -o) or fix the folder's "
                "permissions; the cells that finished are cached")
    if exc.errno in (errno.EIO, errno.ENOMEM, errno.EMFILE, errno.ENFILE):
        return f"the system refused an operation on{where or ' a file'} ({why}); free resources and run again"
    return None


def _sigterm_as_interrupt() -> None:
    """SIGTERM (a scheduler's or a user's kill) behaves like Ctrl-C: one line, the same exit code."""
    import signal
    import threading

    def handler(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _one_line_warnings() -> None:
    """simcomm's own warnings (a bad cache entry recomputed) as one 'warning: ...' line on stderr."""
    import warnings

    shown = warnings.showwarning
    if getattr(shown, "simcomm", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.startswith("simcomm"):
            click.echo(f"warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    show.simcomm = True
    warnings.showwarning = show


def main(argv=None) -> None:
    """Entry point: run the group, turning user errors into one line and exit code 2."""
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    _sigterm_as_interrupt()
    _one_line_warnings()
    try:
        cli.main(args=argv, prog_name="simcomm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Interrupted as exc:
        click.echo(str(exc), err=True)
        sys.exit(130)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        if debug:
            raise
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else " (see 'simcomm --help')"
        click.echo(f"error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(2)
    except UserError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        line = _environment_fault(exc)
        if debug or line is None:
            raise
        click.echo(f"error: {line}", err=True)
        sys.exit(2)
    except MemoryError as exc:
        if debug:
            raise
        detail = f" ({exc})" if str(exc) else ""
        click.echo(f"error: out of memory{detail}: use smaller sizes (n, d, k, ...) or free memory "
                   "(--debug shows where)", err=True)
        sys.exit(2)
    except OverflowError as exc:
        if debug:
            raise
        click.echo(f"error: a number is too large to compute with ({exc}): use smaller values "
                   "(--debug shows where)", err=True)
        sys.exit(2)
    sys.exit(0)


# Subcommands register themselves on import (order = order in --help).
from simcomm.cli import check, conform, list_, net, payload, plot, run, scaling, topology  # noqa: E402,F401

# isort: split
from simcomm.cli import advise  # noqa: E402,F401  (listed after the main job's commands in --help)
