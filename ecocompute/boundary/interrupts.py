"""SIGINT, SIGTERM and SIGHUP as exceptions, so that an interrupted run unwinds like any
failure: every `with PowerSampler(...)` stops its thread, NVML is shut down, the temp
file of a report being written is removed, and no energy.json is written for the run.

SIGINT is Python's own KeyboardInterrupt. SIGTERM (what `kill`, `timeout`, Docker and
Kubernetes send) and SIGHUP (a closed terminal or SSH session) would end the process
at once without unwinding, so the CLI turns them into errors.Interrupted for the
duration of a command. Both are BaseExceptions: no `except Exception` on the way up
can swallow them. Before the CLI is even imported, ecocompute/cli/entry.py holds all three.

Raised the way Python raises KeyboardInterrupt (at any bytecode), an interrupt can
land where it is lost or misreported: inside the import system (a module-lock weakref
callback prints "Exception ignored" and the run carries on; a dataclass being created
by exec() marks the interrupt "unhandled", so Python kills itself with SIGINT at exit
after our message and exit status). So the process's handlers (on_signal) defer an
interrupt that arrives during an import: it is delivered again a few milliseconds
later, until no import is running, and then raised. And an interrupt that is raised
where Python can only print it (a __del__, a weakref callback) is caught by
unraisable_hook and delivered again, never dropped.

A held-down Ctrl-C is a burst of SIGINTs a few milliseconds apart. Raised one after
another, each would cut the unwinding of the one before it: through the `finally`
that stops a sampler or removes a temp file, through the very line that says what
happened (two half lines, or a traceback from the handler itself). So once an
interrupt is raised, the signals that follow it within REPEAT_S of each other are
that same interrupt: noted, not raised again (one_interrupt). One that comes after
a quiet REPEAT_S is a new one, in case the first was swallowed by a library.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ecocompute.errors import Interrupted

log = logging.getLogger(__name__)

SIGINT_EXIT = 128 + signal.SIGINT  # 130
# The signals that end a run with errors.Interrupted (SIGINT is KeyboardInterrupt).
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


REDELIVER_S = 0.005  # how soon a deferred or swallowed interrupt is delivered again
REPEAT_S = 1.0  # signals closer than this to the one before, after an interrupt, are it
_IMPORT_SYSTEM = ("<frozen importlib._bootstrap", "importlib/_bootstrap")


def _importing(frame: FrameType | None) -> bool:
    """Whether the interrupted code is inside the import system (any frame of it)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_SYSTEM):
            return True
        frame = frame.f_back
    return False


_pending: set[int] = set()  # signals with a delivery again on its way (one each)
_timers: list[threading.Timer] = []  # the deliveries again still to come
_forced: set[int] = set()  # signals to raise when delivered again, repeat or not


def deliver_again(signum: int, delay_s: float = REDELIVER_S, *, force: bool = False) -> None:
    """Send signum to this process again after delay_s (from a daemon thread), unless
    it is on its way already. force: raise it then even within a burst (an interrupt
    that was raised and lost, e.g. inside a __del__)."""
    if force:
        _forced.add(signum)
    if signum in _pending:
        return
    _pending.add(signum)

    def send() -> None:
        _pending.discard(signum)
        os.kill(os.getpid(), signum)

    timer = threading.Timer(delay_s, send)
    timer.daemon = True
    _timers.append(timer)
    timer.start()


def cancel_deliveries() -> None:
    """Call off the deliveries again still to come: the process is ending, and one sent
    during the interpreter's shutdown (its handlers gone) would kill it by the signal
    after it had finished and said so."""
    while _timers:
        _timers.pop().cancel()
    _pending.clear()


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum, signal.Signals(signum).name)


_deferred: list[int] = []  # signals deferred and not raised yet (at most one of each)
_holding = [0]  # how many held() blocks are open
# monotonic times: of the last interrupt raised, and of the last signal that came after it
_raised_at: list[float] = []
_last_seen: list[float] = []


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A few statements that must not be cut in two (creating a temp file and taking
    note of its name): an interrupt arriving meanwhile is raised just after."""
    _holding[0] += 1
    try:
        yield
    finally:
        _holding[0] -= 1


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The process's handler of SIGINT, SIGTERM and SIGHUP: the interrupt is raised here
    (KeyboardInterrupt or Interrupted), or, while an import runs or a held() block is
    open, deferred; a repeat of an interrupt already raised is noted, not raised."""
    if _holding[0] or _importing(frame):
        if signum not in _deferred:
            _deferred.append(signum)
        deliver_again(signum)
        return
    now = time.monotonic()
    repeat = bool(_raised_at) and now - _last_seen[-1] < REPEAT_S and signum not in _forced
    _last_seen[:] = [now]
    if repeat:
        _deferred.clear()  # the interrupt it repeats is under way
        return
    _forced.discard(signum)
    _deferred.clear()
    _raised_at[:] = [now]
    _raise_for(signum)


def _forget_interrupts() -> None:
    for state in (_raised_at, _last_seen, _deferred):
        state.clear()
    _forced.clear()


def one_interrupt() -> bool:
    """Whether an interrupt has been raised in this process: signals after it are the
    same Ctrl-C held down, or a second one while the first is told (entry.py says
    nothing more of them)."""
    return bool(_raised_at)


def deferred_signal() -> int | None:
    """A signal that arrived, was deferred and has not been raised yet (the command
    ended first): the caller must still report it."""
    return _deferred[0] if _deferred else None


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    on_signal(signum, frame)


def unraisable_hook(unraisable: Any) -> None:
    """sys.unraisablehook for the CLI's process: an interrupt raised where Python could
    only print it (a __del__, a weakref callback) is delivered again instead of being
    lost; anything else unraisable (a library's noise) goes to the debug log, not to
    stderr in several lines."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        deliver_again(signal.SIGINT, force=True)
    elif isinstance(exc, Interrupted):
        deliver_again(exc.signum, force=True)
    else:
        log.debug(
            "ignored in %r: %s: %s",
            unraisable.object,
            getattr(unraisable.exc_type, "__name__", unraisable.exc_type),
            exc,
        )


@contextlib.contextmanager
def process_handlers() -> Iterator[None]:
    """For the CLI's own process (entry.py): SIGINT, SIGTERM and SIGHUP go to on_signal
    and unraisable exceptions to unraisable_hook while the block runs (a signal the
    parent ignored stays ignored). Each block starts with no interrupt raised yet."""
    _forget_interrupts()
    previous = {}
    for signum in (signal.SIGINT, *TERMINATING):
        handler = signal.getsignal(signum)
        if handler != signal.SIG_IGN:
            previous[signum] = signal.SIG_DFL if handler is None else handler
            signal.signal(signum, on_signal)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable_hook
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise Interrupted in the main thread; the
    previous handlers are restored afterwards. Does nothing off the main thread (Python
    delivers signals only there), and leaves alone a signal the parent deliberately
    ignored (`nohup` ignores SIGHUP: the run must go on)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _forget_interrupts()  # a command starts with no interrupt raised
    previous = {}
    for signum in TERMINATING:
        handler = signal.getsignal(signum)
        if handler != signal.SIG_IGN:
            previous[signum] = signal.SIG_DFL if handler is None else handler
            signal.signal(signum, _raise_terminated)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def describe(exc: BaseException) -> tuple[str, int]:
    """(signal name, exit status) of KeyboardInterrupt or Interrupted."""
    if isinstance(exc, Interrupted):
        return exc.name, exc.exit_status
    return "SIGINT", SIGINT_EXIT
