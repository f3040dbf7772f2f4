"""Printing to stdout, which can fail (a full disk behind `> file`, /dev/full, a closed
pipe), told truthfully.

Output is block-buffered when stdout is not a terminal, so a failing stdout shows only
when the buffer is flushed: maybe at interpreter exit, after a command had already
reported success. Every command therefore flushes before it returns, and a command
that wrote files prints after writing them through print_after_write: if stdout cannot
take the text, the files are named as written (exit 3), never "nothing was written".
"""

from __future__ import annotations

import errno
import io
import logging
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from ecocompute.core.printable import printable, recordable

log = logging.getLogger(__name__)

WRITTEN_NOT_PRINTED = 3  # the exit status: files written, their summary not printed


def discard_stdout() -> None:
    """Point stdout at /dev/null so the text stuck in its buffer is dropped quietly
    instead of failing again (with a traceback) when Python exits."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        log.debug("could not redirect stdout after a failed print", exc_info=True)


# What a write to a full, broken or vanished stream raises. File writes of our own are
# turned into RunError by boundary/atomic.py, and an error opening a file names the file.
_OUTPUT_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EBADF}


def stdout_failure(exc: BaseException) -> OSError | None:
    """The stdout error behind exc, if exc is one: a broken pipe or a full or failing
    stream (an OSError of those kinds that names no file), or stdout that still cannot
    be flushed. Leaves a failed stdout discarded."""
    if not isinstance(exc, OSError):
        return None
    if isinstance(exc, BrokenPipeError) or (exc.errno in _OUTPUT_ERRNOS and exc.filename is None):
        discard_stdout()
        return exc
    return flush_stdout()


def flush_stdout() -> OSError | None:
    """Flush stdout; the error if it cannot take its text (then discarded)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        discard_stdout()
        return exc
    except (ValueError, AttributeError):  # closed or replaced by a caller
        return None
    return None


def print_after_write(text: str, written: Sequence[str]) -> int:
    """Print text (the summary of files already written) and flush: 0, or
    WRITTEN_NOT_PRINTED with one line on stderr naming the files as written."""
    try:
        print(recordable(text), flush=True)  # a path of undecodable bytes prints as \\xNN
    except OSError as exc:
        discard_stdout()
        names = ", ".join(printable(p) for p in written)
        print(
            f"ecocompute: {names} {'was' if len(written) == 1 else 'were'} written (complete"
            f"{' and valid' if all(p.endswith('.json') for p in written) else ''}), but the "
            f"summary could not be printed: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return WRITTEN_NOT_PRINTED
    return 0


class TolerantStderr:
    """sys.stderr for the CLI's process: what cannot be written (a full disk behind
    `2> file`, /dev/full, a closed pipe, a closed descriptor) is dropped, never raised.
    Progress lines, library progress bars and warnings all go to stderr; on a GPU a
    failed write there would otherwise throw a measurement away. What was lost is
    counted (lost_writes)."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.lost_writes = 0

    def write(self, text: str) -> int:
        if self._stream is not None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):
                pass
        self.lost_writes += 1
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.lost_writes += 1

    def isatty(self) -> bool:
        try:
            return self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> object:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def tolerant_stderr() -> None:
    """Install TolerantStderr as sys.stderr (once): with stderr closed (`2>&-`), Python
    sets it to None and print(file=sys.stderr) would write to stdout instead."""
    if not isinstance(sys.stderr, TolerantStderr):
        sys.stderr = TolerantStderr(sys.stderr)


class ClosedStdout(io.TextIOBase):
    """sys.stdout for a CLI process started with stdout closed (`>&-`), where Python sets
    it to None: print() to None prints nothing and says nothing (a table lost with exit
    0), and sys.stdout.encoding is an AttributeError (an internal error). Instead every
    write fails as a closed descriptor's does (EBADF), so the command tells it as any
    stdout that cannot take its text: exit 3 naming the files written, or "could not
    print the output"."""

    encoding = "utf-8"
    errors = "backslashreplace"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("stdout is closed")


def closed_stdout_told() -> None:
    """With stdout closed at start (sys.stdout None), install ClosedStdout, and hold
    descriptor 1 with /dev/null opened read-only, so that no file this run opens (a
    report's temp file) gets descriptor 1, and a write there (`-o /dev/stdout`, a
    library's) fails as on a closed descriptor instead of landing in that file."""
    if sys.stdout is not None:
        return
    sys.stdout = ClosedStdout()
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return
    if fd != 1:  # descriptor 1 was not free after all (or 0 is closed too): let it be
        os.close(fd)
