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
      simcomm check --quick                 # run every claim on small grids, write figures/REPORT.md
      simcomm check expgraph.rho_even --full
      simcomm list                          # the claims, their papers and provenance tags
      simcomm run sims/expgraph_rho_even.toml --set "n=[8,16]"
      simcomm topology exponential -n 1024 --json
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main(argv=None) -> None:
    """Entry point: run the group, turning user errors into one line and exit code 2."""
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
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
    sys.exit(0)


# Subcommands register themselves on import (order = order in --help).
from simcomm.cli import check, conform, list_, net, payload, plot, run, scaling, topology  # noqa: E402,F401
