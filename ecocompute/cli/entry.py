"""The process's entry point (`ecocompute` and `python -m ecocompute`): signals are in
hand before anything else is imported, and to the very end.

Importing the CLI takes tens of milliseconds. With Python's own SIGINT handler, a
Ctrl-C in that time raises KeyboardInterrupt wherever the import happens to be: a
traceback, or, inside a library's import that catches broadly, an interrupt that is
swallowed while the run carries on. So this module imports nothing of the package at
its top, and main() first holds SIGINT, SIGTERM and SIGHUP with a handler that only
records them; once the CLI is imported, a recorded signal ends the process with its
one-line message and 128 + its number. From then on SIGINT is KeyboardInterrupt and
SIGTERM/SIGHUP raise errors.Interrupted (interrupts.on_signal: deferred while an
import runs, never lost where Python could only print it), caught here around the
whole command (argument parsing included); a signal that arrives after the command has
finished is reported as such, and the interpreter's shutdown runs with them ignored.

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
    from types import FrameType

_HELD = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


class _Recorder:
    """A signal handler that only notes which signal came first."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum


def _hold(recorder: _Recorder) -> dict[int, object]:
    """Install recorder for the held signals that the parent did not ignore (`nohup`
    ignores SIGHUP, a shell's background job SIGINT: those stay ignored)."""
    previous: dict[int, object] = {}
    for signum in _HELD:
        handler = _signal.getsignal(signum)
        if handler == _signal.SIG_IGN:
            continue
        previous[signum] = handler
        _signal.signal(signum, recorder)
    return previous


def _message(signum: int, when: str) -> int:
    import signal

    name = signal.Signals(signum).name
    print(f"ecocompute: interrupted by {name} {when}", file=sys.stderr)
    return 128 + signum


def main(
    argv: Sequence[str] | None = None, *, exiting: bool = True, arrived: list[int] | None = None
) -> int:
    """Run the CLI with signals held throughout; returns the exit status.

    exiting: the process ends when this returns (the console script, python -m), so the
    held signals are left ignored for the interpreter's own shutdown, which would
    otherwise put back their default action (a silent death by the signal after the
    command had finished and said so). Pass False to call this in a longer-lived
    process.
    arrived: signals noted by whoever held them before this module was imported
    (__main__.py)."""
    recorder = _Recorder()
    previous = _hold(recorder)
    if arrived:
        recorder.signum = arrived[0]
    stderr = sys.stderr
    try:
        return _run(argv, recorder)
    finally:
        if exiting:
            from ecocompute.boundary.interrupts import cancel_deliveries

            cancel_deliveries()
        for signum, handler in previous.items():
            _signal.signal(signum, _signal.SIG_IGN if exiting else handler)
        if exiting:
            # The interpreter's shutdown can put back a signal's default action before
            # the process ends (seen with CPython 3.11: a SIGINT at the tail of a burst
            # then killed a run that had finished and said so); blocked, it never lands.
            _signal.pthread_sigmask(_signal.SIG_BLOCK, list(previous))
        if not exiting:
            sys.stderr = stderr  # _run made it tolerant (printing.tolerant_stderr)


def _run(argv: Sequence[str] | None, recorder: _Recorder) -> int:
    from ecocompute import cli
    from ecocompute.boundary.interrupts import deferred_signal, one_interrupt, process_handlers
    from ecocompute.boundary.printing import tolerant_stderr
    from ecocompute.errors import Interrupted

    tolerant_stderr()  # a stderr that cannot be written never fails the run
    if recorder.signum is not None:
        return _message(recorder.signum, "while starting: nothing was run or written")
    _tolerant_stdout()
    try:
        with process_handlers():
            status = cli.main(argv)
    except (KeyboardInterrupt, Interrupted) as exc:
        # outside cli.main's own handling (argument parsing, or while it was printing)
        signum = exc.signum if isinstance(exc, Interrupted) else _signal.SIGINT
        return _message(
            signum,
            "before the command could say more: every file it writes is either complete "
            "or untouched (an interrupted write leaves no partial file)",
        )
    # after an interrupt the command has told, more signals are that Ctrl-C held down
    late = None if one_interrupt() else deferred_signal() or recorder.signum
    if late is not None:
        import signal

        name = signal.Signals(late).name
        print(
            f"ecocompute: {name} arrived as the command finished (exit status {status}); "
            "what it wrote and printed is complete",
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
