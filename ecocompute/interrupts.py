"""SIGINT and SIGTERM as exceptions, so that an interrupted run unwinds like any failure:
every `with PowerSampler(...)` stops its thread, NVML is shut down, the temp file of a
report being written is removed, and no energy.json is written for the run.

SIGINT is Python's own KeyboardInterrupt. SIGTERM (what `kill`, `timeout`, Docker and
Kubernetes send) would end the process at once without unwinding, so the CLI turns it
into errors.Interrupted for the duration of a command. Both are BaseExceptions: no
`except Exception` on the way up can swallow them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from ecocompute.errors import Interrupted

SIGINT_EXIT = 128 + signal.SIGINT  # 130


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum, signal.Signals(signum).name)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises Interrupted in the main thread; the previous
    handler is restored afterwards. Does nothing off the main thread (Python delivers
    signals only there) or where SIGTERM was deliberately ignored by the parent."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def describe(exc: BaseException) -> tuple[str, int]:
    """(signal name, exit status) of KeyboardInterrupt or Interrupted."""
    if isinstance(exc, Interrupted):
        return exc.name, exc.exit_status
    return "SIGINT", SIGINT_EXIT
