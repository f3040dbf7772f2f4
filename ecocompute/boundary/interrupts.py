"""SIGINT, SIGTERM and SIGHUP in the command line's process: a handler that records the
signal and raises it, and safe points that check the record.

While a command runs (handled(), entered by cli/dispatch.py; never by the Python API)
a signal is raised where it lands: KeyboardInterrupt for SIGINT, errors.Interrupted for
SIGTERM and SIGHUP (both BaseExceptions, so no `except Exception` swallows them). That
is Python's own rule for Ctrl-C, and what ends promptly the long steps no check could
cut short (the first import of torch, a model load, a torch.compile of a minute): every
`with` and `finally` on the way up runs (samplers stopped, NVML shut down, a temp file
removed; boundary/atomic.py writes by temp file and rename). Instead:

- inside critical(), a few statements that must not be cut in two (creating a temp file
  and noting its name), the signal is recorded and raised as the section ends;
- raised where Python can only print it (a __del__, a weakref callback, e.g. inside the
  import system), it is recorded again by unraisable_hook, never printed, never lost,
  and raised by the next check(): once the formats are loaded, between warm-ups and
  trials, between a sweep's points, before a write (critical()'s end);
- a repeat is dropped: a held-down Ctrl-C is a burst of SIGINTs a few milliseconds
  apart, and each raised anew would cut the unwinding of the one before (the `finally`
  that removes a temp file, the one line that says what happened). Signals less than
  REPEAT_S after the one before, once an interrupt is raised, are that interrupt. One
  after a quiet REPEAT_S is raised, in case a library swallowed the first.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ecocompute.errors import Interrupted

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REPEAT_S = 1.0  # a signal closer than this to the one before, after an interrupt, is it


@dataclass
class State:
    """What the handler has seen in the current command (one per process: `state`)."""

    active: bool = False  # handled() is open: check() may raise
    pending: int | None = None  # a signal recorded and not raised yet
    raised: bool = False  # an interrupt was raised in this command
    raised_signum: int | None = None  # the signal raised (a library may swallow it)
    last_signal_s: float = -math.inf  # when the last signal came (clock)
    depth: int = 0  # open critical() sections
    clock: Callable[[], float] = time.monotonic  # tests pass a fake one

    def reset(self) -> None:
        self.pending, self.raised, self.last_signal_s, self.depth = None, False, -math.inf, 0
        self.raised_signum = None


state = State()


def _main_thread() -> bool:  # Python runs handlers there only: only there is raised into
    return threading.current_thread() is threading.main_thread()


def exception_for(signum: int) -> BaseException:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Interrupted(signum, signal.Signals(signum).name)


def check() -> None:
    """A safe point: raise the signal recorded and not raised yet, if any. Does nothing
    outside handled() (the Python API) and off the main thread."""
    signum = state.pending
    if signum is None or not state.active or not _main_thread():
        return
    state.pending = None
    state.raised, state.raised_signum = True, signum
    raise exception_for(signum)


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The handler of SIGINT, SIGTERM and SIGHUP while a command runs: records the
    signal and raises it here, unless inside critical() or it repeats an interrupt."""
    now = state.clock()
    repeat = state.raised and now - state.last_signal_s < REPEAT_S
    state.last_signal_s = now
    if repeat:
        return
    if state.pending is None:
        state.pending = signum
    if not state.depth:
        check()


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """A few statements that must not be cut in two (creating a temp file and noting its
    name): a signal arriving meanwhile is raised as the block ends, in place of any
    error the block raised (the interrupt is what the exit status must say)."""
    if not _main_thread():
        yield
        return
    if not state.active:  # the Python API: no handler of ours is installed
        with _ctrl_c_held():
            yield
        return
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        if not state.depth:
            check()


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """critical() outside a command (the Python API): where Python's own Ctrl-C handler
    is the one installed, a Ctrl-C during the block is recorded and raised as it ends
    (a session's reports all written, or a temp file named before it can leak); a
    handler of the caller's own is left as it is. The handler is Python's again after."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if caught:
            raise KeyboardInterrupt


def unraisable_hook(unraisable: Any) -> None:
    """sys.unraisablehook while a command runs: an interrupt raised where Python could
    only print it is recorded for the next check() (and the next signal is not a
    repeat); anything else (a library's noise) goes to the debug log, not to stderr."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt | Interrupted):
        state.pending = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        state.raised = False
        return
    name = getattr(unraisable.exc_type, "__name__", unraisable.exc_type)
    log.debug("ignored in %r: %s: %s", unraisable.object, name, exc)


@contextlib.contextmanager
def handled() -> Iterator[State]:
    """For one command of the CLI: on_signal handles SIGINT, SIGTERM and SIGHUP and
    unraisable_hook takes unraisable exceptions while the block runs; then the previous
    ones are back. A signal the parent ignored stays ignored (`nohup` ignores SIGHUP, a
    shell's background job SIGINT). Off the main thread nothing is installed."""
    if not _main_thread():
        yield state
        return
    state.reset()
    previous = {}
    for signum in SIGNALS:
        handler = signal.getsignal(signum)
        if handler != signal.SIG_IGN:
            previous[signum] = signal.SIG_DFL if handler is None else handler
            signal.signal(signum, on_signal)
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable_hook
    state.active = True
    try:
        yield state
    finally:
        state.active = False
        sys.unraisablehook = previous_hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def describe(exc: BaseException) -> tuple[str, int]:
    """(signal name, exit status) of KeyboardInterrupt or Interrupted."""
    if isinstance(exc, Interrupted):
        return exc.name, exc.exit_status
    return "SIGINT", 128 + signal.SIGINT
