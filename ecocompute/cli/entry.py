"""The process's entry point (`ecocompute` and `python -m ecocompute`): signals are in
hand before anything else is imported, and to the very end.

Importing the CLI takes tens of milliseconds. With Python's own SIGINT handler, a Ctrl-C
in that time raises KeyboardInterrupt wherever the import happens to be: a traceback.
So this module imports nothing of the package at its top, and main() first holds
SIGINT, SIGTERM and SIGHUP with a handler that only notes them; once the CLI is
imported, a noted signal ends the process with its one-line message and 128 + its
number. The command itself runs under boundary/interrupts.py's handler (cli/dispatch.py
installs it); afterwards the noting handler is back, so a signal that arrives as the
command finishes is reported as such, and the interpreter's shutdown runs with the
signals ignored and blocked.

What remains is the interpreter's own start-up before the first line of this package
runs (site, runpy: about 5-10 ms on an idle machine): a Ctrl-C there is Python's, and
Python prints its KeyboardInterrupt traceback; nothing of ours has run or been written.

This module imports only the standard library at its top; keep it that way.
"""

from __future__ import annotations

# _signal, not signal: the interpreter loaded it before site.py, so holding the signals
# costs no import (signal imports enum, a few milliseconds in which Ctrl-C would still
# be Python's KeyboardInterrupt). Everything else here is imported only after.
import _signal
import sys

TYPE_CHECKING = False  # typing itself takes milliseconds to import
if TYPE_CHECKING:
    from collections.abc import Sequence

_HELD = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


def main(
    argv: Sequence[str] | None = None, *, exiting: bool = True, arrived: list[int] | None = None
) -> int:
    """Run the CLI with signals held throughout; returns the exit status.

    exiting: the process ends when this returns (the console script, python -m), so the
    held signals are left ignored and blocked for the interpreter's own shutdown, which
    would otherwise put back their default action (a silent death by the signal after
    the command had finished and said so). Pass False in a longer-lived process.
    arrived: signals noted by whoever held them before this module was imported
    (__main__.py)."""
    noted: list[int] = [] if arrived is None else arrived
    previous: dict[int, object] = {}
    for signum in _HELD:  # those the parent ignored (nohup, a background job) stay so
        handler = _signal.getsignal(signum)
        if handler != _signal.SIG_IGN:
            previous[signum] = handler
            _signal.signal(signum, lambda signum, frame: noted.append(signum))
    stderr, stdout = sys.stderr, sys.stdout
    try:
        return _run(argv, noted)
    finally:
        for signum, handler in previous.items():
            _signal.signal(signum, _signal.SIG_IGN if exiting else handler)
        if exiting:
            _signal.pthread_sigmask(_signal.SIG_BLOCK, list(previous))
            # A KeyboardInterrupt that left an exec() (a dataclass or namedtuple being
            # made, code torch.compile generates) marks it "unhandled" in CPython, and
            # `python -m` then kills itself with SIGINT at exit, after our line and exit
            # status (-2, not 130). Executing a string clears that mark.
            exec("")
        else:
            sys.stderr = stderr  # _run made it tolerant (printing.tolerant_stderr)
            sys.stdout = stdout  # and a closed one told (printing.closed_stdout_told)


def _message(signum: int, when: str) -> int:
    import signal

    print(f"ecocompute: interrupted by {signal.Signals(signum).name} {when}", file=sys.stderr)
    return 128 + signum


def _run(argv: Sequence[str] | None, noted: list[int]) -> int:
    from ecocompute.boundary import interrupts
    from ecocompute.boundary.printing import closed_stdout_told, tolerant_stderr
    from ecocompute.cli import dispatch
    from ecocompute.core import environment  # noqa: F401  (the environment at start)
    from ecocompute.errors import Interrupted

    tolerant_stderr()  # a stderr that cannot be written never fails the run
    if noted:
        return _message(noted[0], "while starting: nothing was run or written")
    closed_stdout_told()  # `>&-`: told as a stdout that cannot be written (exit 3)
    _tolerant_stdout()
    try:
        status = dispatch.main(argv)
    except (KeyboardInterrupt, Interrupted) as exc:
        # outside dispatch's own handling (argument parsing, or while it was printing)
        return _message(
            exc.signum if isinstance(exc, Interrupted) else _signal.SIGINT,
            "before the command could say more: every file it writes is either complete "
            "or untouched (an interrupted write leaves no partial file)",
        )
    # after an interrupt the command has told, more signals are that Ctrl-C held down
    state = interrupts.state
    late = None if state.raised else state.pending or (noted[0] if noted else None)
    if late is not None:
        import signal

        print(
            f"ecocompute: {signal.Signals(late).name} arrived as the command finished (exit "
            f"status {status}); what it wrote and printed is complete",
            file=sys.stderr,
        )
    return status


def _tolerant_stdout() -> None:
    """Text that stdout's encoding cannot show (a model name in an ASCII terminal) is
    printed as escapes instead of failing the command. energy_estimate still refuses,
    before writing, a summary its stdout cannot encode (jobs/report_job.py)."""
    import contextlib

    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
