"""Command line: argument parsing and dispatch to one function per command.

Exit status: 0 a report was written (or every file valid), 2 bad input (nothing
written), 1 the run failed after its input was accepted (and said why), 3 the report
was written but the summary could not be printed, 129 / 130 / 143 interrupted by
SIGHUP / SIGINT / SIGTERM (the message says whether the report had been written).
Every failure is one line on stderr. The process starts in ecocompute/cli/entry.py, which
holds the signals before this module is imported; main() handles them while a command
runs (boundary/interrupts.py)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

from ecocompute import __version__
from ecocompute.boundary import interrupts
from ecocompute.boundary.interrupts import describe as describe_interrupt
from ecocompute.boundary.interrupts import handled
from ecocompute.boundary.printing import flush_stdout, stdout_failure
from ecocompute.cli.estimate_command import add_energy_estimate
from ecocompute.cli.flags import OneLineParser
from ecocompute.cli.reports_commands import (
    add_aggregate,
    add_check,
    add_plot,
    add_upgrade,
    add_validate,
)
from ecocompute.cli.sweep_command import add_sweep
from ecocompute.core.printable import printable
from ecocompute.errors import EcoComputeError, InputError, Interrupted

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_energy_estimate,
    add_validate,
    add_upgrade,
    add_aggregate,
    add_plot,
    add_sweep,
    add_check,
]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ecocompute",
        description="Does quantizing an LLM's weights (NF4, INT8, INT4, FP8) save GPU energy "
        "per token?",
    )
    parser.add_argument("--version", action="version", version=f"ecocompute {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit status. Failures are one line on stderr: an
    EcoComputeError says what happened and what to do; SIGINT/SIGTERM exit 130/143 and
    say what was written; anything else is a bug, reported in one line (--verbose
    re-raises it with its traceback). Signals are handled meanwhile (boundary/interrupts.py)."""
    with handled():
        return _dispatch(argv)


def _working_folder_gone() -> bool:
    """The process's current folder was deleted (or unmounted) under it: every relative
    path, the default output folder included, then fails to resolve."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _dispatch(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        status: int = args.handler(args)
        failed = flush_stdout()
        if failed is not None:
            print(
                f"ecocompute: error: could not print the output: {failed.strerror or failed}",
                file=sys.stderr,
            )
            return status or 1
    except EcoComputeError as exc:
        written = getattr(args, "written_so_far", None)
        also = f" ({printable(written())})" if written and not isinstance(exc, InputError) else ""
        print(f"ecocompute: error: {printable(exc)}{also}", file=sys.stderr)
        return exc.exit_status
    except (KeyboardInterrupt, Interrupted) as exc:
        return _interrupted(args, exc)
    except Exception as exc:
        if interrupts.state.raised_signum is not None:
            # the interrupt was raised and a library turned it into another error (a
            # signal inside `import numpy.dtypes`, made a ModuleNotFoundError by
            # transformers' lazy import): the interrupt is what the status must say
            return _interrupted(args, interrupts.exception_for(interrupts.state.raised_signum))
        return _failed(args, exc)
    return status


def _interrupted(args: argparse.Namespace, exc: BaseException) -> int:
    name, status = describe_interrupt(exc)
    after = getattr(args, "after_interrupt", None)
    what = (
        after(name)
        if after is not None
        else f"interrupted by {name}: the file being written, if any, was not, and "
        "earlier files are untouched"
    )
    print(f"ecocompute: {printable(what)}", file=sys.stderr)
    return status


def _failed(args: argparse.Namespace, exc: Exception) -> int:
    """An error that is none of ours: the output that could not be printed, the working
    folder gone, or an internal error (a bug), saying what was written."""
    failed = stdout_failure(exc)
    if failed is not None:
        print(
            f"ecocompute: error: could not print the output: {failed.strerror or failed}; "
            "nothing was written",
            file=sys.stderr,
        )
        return 1
    written_so_far = getattr(args, "written_so_far", None)
    written = written_so_far() if written_so_far else "nothing was written"
    if isinstance(exc, FileNotFoundError) and _working_folder_gone():
        print(
            "ecocompute: error: the current folder no longer exists (deleted, or its "
            "volume unmounted), so a relative path cannot be found: cd to a folder "
            f"that exists, or give absolute paths; {printable(written)}",
            file=sys.stderr,
        )
        return 1
    if args.verbose:
        raise exc
    print(
        f"ecocompute: internal error: {type(exc).__name__}: {printable(str(exc)[:300])} "
        "(a bug in ecocompute; run `ecocompute --verbose ...` for the traceback and "
        f"report it); {printable(written)}",
        file=sys.stderr,
    )
    return 1
