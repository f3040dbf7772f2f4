"""Atomic file writes (energy.json, CSV tables, sweep.json, pictures): write a temp
file in the target's folder, fsync, rename. A failure leaves no partial file and any
earlier file untouched.

What the target already is decides how it is written (write_mode):
- nothing, or a regular file: replaced atomically, as above;
- a symbolic link: the link stays; the file it points to is replaced atomically (a
  dangling link: the file it names is created);
- a character device or a FIFO (/dev/null, a terminal, a named pipe), or a name for an
  open file descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N): written through,
  never replaced: renaming a file onto /dev/stdout would turn the device link into a
  regular file (as root). The content is made in full in a temp file first, so a
  failure while making it writes nothing; a failure while writing through may leave
  part of it in the pipe or device, and the error says so;
- a folder, a block device or a socket: refused (RunError naming the path).

Several files meant as one (a session's reports: write_texts_atomic) are all made in
full in their temp files before the first rename, then renamed with no signal acted on
in between: a failure while making them writes none; only a rename that fails after
another succeeded leaves some in place, and errors.PartlyWritten names them.

Temp files, and the removal of those a process killed outright (SIGKILL, a power cut)
left behind, are temp_files.py's, as is the scratch file content written through is
made in.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ecocompute.boundary.interrupts import critical
from ecocompute.boundary.temp_files import LEGACY_STALE_S as LEGACY_STALE_S  # re-exported
from ecocompute.boundary.temp_files import remove_stale_temps, scratch_file, temp_affixes
from ecocompute.boundary.user_paths import kind_of, unusable_path_reason
from ecocompute.errors import PartlyWritten, RunError

_DESCRIPTOR_ALIAS = re.compile(r"^/(?:dev|proc/(?:self|\d+))/fd/(\d+)$")
_STANDARD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}

REPLACE = "replace"
THROUGH = "through"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- what the target is -------------------------------------------------------------


def _descriptor_of(path: str) -> int | None:
    """The descriptor number a path stands for in this process, if it names one."""
    if path in _STANDARD_STREAMS:
        return _STANDARD_STREAMS[path]
    match = _DESCRIPTOR_ALIAS.match(path)
    if match is None:
        return None
    if path.startswith("/proc/") and not path.startswith(("/proc/self/", f"/proc/{os.getpid()}/")):
        return None  # another process's descriptor: reached through the file it names
    return int(match.group(1))


def _link_chain(target: Path) -> Iterator[str]:
    """The target's absolute path, then each hop of its symbolic links (at most 40)."""
    path = os.path.abspath(target)
    for _ in range(40):
        yield path
        try:
            link = os.readlink(path)
        except OSError:
            return
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))


def write_mode(target: Path) -> tuple[str, Path, int | None]:
    """(REPLACE, the regular file to replace atomically, None) or (THROUGH, target, the
    descriptor to write to or None to open the target). Raises RunError for a folder, a
    block device, a socket, or a path the system cannot look up."""
    try:
        own = os.lstat(target)
    except FileNotFoundError:
        return REPLACE, target, None
    except (OSError, ValueError) as exc:
        raise RunError(
            f"could not write {target}: {unusable_path_reason(exc)}; nothing was written"
        ) from None
    if stat.S_ISREG(own.st_mode):
        return REPLACE, target, None
    for hop in _link_chain(target):
        fd = _descriptor_of(hop)
        if fd is not None:
            return THROUGH, target, fd
    try:
        st = os.stat(target)  # what a link points to
    except FileNotFoundError:
        return REPLACE, Path(os.path.realpath(target)), None  # a dangling link: create it
    except (OSError, ValueError) as exc:
        raise RunError(
            f"could not write {target}: {unusable_path_reason(exc)}; nothing was written"
        ) from None
    if stat.S_ISREG(st.st_mode):
        return REPLACE, Path(os.path.realpath(target)), None
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return THROUGH, target, None
    raise RunError(
        f"could not write {target}: it is a {kind_of(st)}, which a report or table must not "
        "replace; nothing was written. Name a file."
    )


# -- writing ------------------------------------------------------------------------


def _folder_gone(target: Path, real: Path) -> RunError:
    if os.path.islink(target):  # energy.json itself is a link, into a missing folder
        return RunError(
            f"could not write {target}: it is a symbolic link to {real}, whose folder "
            "does not exist (now); nothing was written. Create that folder or remove "
            "the link, and run again."
        )
    return RunError(
        f"could not write {target}: the folder {real.parent} existed when the run "
        "started and is gone now (deleted, or its volume unmounted?); nothing was "
        "written. Recreate or remount it and run again."
    )


def _not_written(target: Path, exc: OSError) -> RunError:
    return RunError(
        f"could not write {target}: {exc.strerror or exc}; nothing was written "
        "(check the folder exists, is writable and the disk has space)"
    )


class _Staged:
    """One file's temp beside its target (REPLACE), made and noted; commit() renames it
    onto the target, discard() removes it if it is still there, and, where it was never
    committed, the folders it made for it (an interrupted write leaves nothing new)."""

    def __init__(self, target: Path, real: Path, *, create_dir: bool) -> None:
        self.target = target
        self.real = real
        self.tmp: str | None = None
        self.committed = False
        self.made: list[Path] = []  # the folders made for it, deepest first
        if not create_dir and not real.parent.is_dir():
            raise _folder_gone(target, real)
        fd_tmp: int | None = None
        try:
            if create_dir:
                missing = [p for p in (real.parent, *real.parent.parents) if not p.exists()]
                real.parent.mkdir(parents=True, exist_ok=True)
                self.made = missing
            remove_stale_temps(real)
            prefix, tail = temp_affixes(real)
            with critical():  # an interrupt between creating the file and naming it would leak it
                fd_tmp, self.tmp = tempfile.mkstemp(
                    prefix=f"{prefix}{os.getpid()}.", suffix=tail, dir=real.parent
                )
            os.close(fd_tmp)
            fd_tmp = None
            os.chmod(self.tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide results
        except BaseException as exc:  # an interrupt raised as critical() ends, too
            if fd_tmp is not None:
                with contextlib.suppress(OSError):
                    os.close(fd_tmp)
            self.discard()
            if isinstance(exc, OSError):
                raise _not_written(target, exc) from None
            raise

    @property
    def path(self) -> Path:
        assert self.tmp is not None
        return Path(self.tmp)

    def sync(self) -> None:
        """The content on disk before any rename (raises OSError)."""
        with open(self.path, "rb+") as handle:
            os.fsync(handle.fileno())

    def commit(self) -> None:
        """Rename the temp onto the target (raises OSError)."""
        os.replace(self.path, self.real)
        self.tmp = None
        self.committed = True

    def discard(self) -> None:
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None
        if not self.committed:
            for folder in self.made:  # only while empty: another file may be in it now
                try:
                    folder.rmdir()
                except OSError:
                    break
        self.made = []


@contextlib.contextmanager
def atomic_path(target: Path, *, create_dir: bool = True) -> Iterator[Path]:
    """Yields a temp path to write the whole content into; when the block succeeds it
    is renamed onto target (or, for a device, FIFO or descriptor, written through: see
    the module's docstring).

    create_dir False: the folder existed when the run started, and if it is gone now
    (deleted, or a volume unmounted) it is not silently recreated.
    Raises RunError when the target cannot take the file. Whatever stops the block (an
    error, KeyboardInterrupt, errors.Interrupted) removes the temp file.
    """
    mode, real, fd = write_mode(target)
    if mode == THROUGH:
        with _written_through(target, fd) as tmp:
            yield tmp
        return
    staged = _Staged(target, real, create_dir=create_dir)
    try:
        yield staged.path
        staged.sync()
        staged.commit()
    except OSError as exc:
        raise _not_written(target, exc) from None
    finally:
        staged.discard()


def write_texts_atomic(items: Sequence[tuple[Path, str]], *, create_dir: bool = True) -> list[Path]:
    """Write several files as one: every one is made in full in its temp file (and
    synced) before the first is renamed into place, then all are renamed, with no
    signal acted on between two renames (critical()). A failure while making them
    writes none (RunError, "nothing was written"), every earlier file untouched. Only a
    rename that fails after others succeeded (rare: the temp is beside its target)
    leaves some in place: PartlyWritten says exactly which. Targets written through (a
    device, FIFO, descriptor) are written after every rename. Returns the targets."""
    staged: list[_Staged] = []
    through: list[tuple[Path, int | None, bytes]] = []
    done: list[Path] = []
    try:
        for target, text in items:  # a folder, a socket: refused before anything is made
            mode, real, fd = write_mode(target)
            data = text.encode("utf-8")
            if mode == THROUGH:
                through.append((target, fd, data))
                continue
            one = _Staged(target, real, create_dir=create_dir)
            staged.append(one)
            try:
                one.path.write_bytes(data)
                one.sync()
            except OSError as exc:
                raise _not_written(target, exc) from None
        order = [s.target for s in staged] + [t for t, _, _ in through]
        with critical():  # all renames, or (a signal) none cut in two: raised after them
            for one in staged:
                try:
                    one.commit()
                except OSError as exc:
                    raise _partly(one.target, exc, done, order) from None
                done.append(one.target)
        for target, fd, data in through:  # outside critical(): a pipe may block
            try:
                _write_through(target, fd, data)
            except (OSError, RunError) as exc:
                raise _partly(target, exc, done, order) from None
            done.append(target)
    finally:
        for one in reversed(staged):  # the last made first: a folder two share, then empty
            one.discard()
    return [target for target, _ in items]


def _partly(failed: Path, exc: OSError | RunError, done: list[Path], order: list[Path]) -> RunError:
    if not done:
        return exc if isinstance(exc, RunError) else _not_written(failed, exc)
    if isinstance(exc, OSError):
        why = str(exc.strerror or exc)
    else:  # _write_through's own line, without what it says of this file alone
        why = str(exc).removeprefix(f"could not write {failed}: ").split("; nothing was")[0]
    rest = [p for p in order if p not in done]
    return PartlyWritten(failed, why, list(done), rest)


@contextlib.contextmanager
def _written_through(target: Path, fd: int | None) -> Iterator[Path]:
    """The content is made in full first (the target's folder, /dev say, takes no temp
    file), then written to the device, FIFO or descriptor in one go."""
    try:
        with scratch_file(target) as tmp:
            yield tmp
            data = tmp.read_bytes()
        _write_through(target, fd, data)
    except OSError as exc:
        raise RunError(
            f"could not write {target} (a device, FIFO or open descriptor, written "
            f"through): {exc.strerror or exc}; part of it may have reached {target}"
        ) from None


def _write_through(target: Path, fd: int | None, data: bytes) -> None:
    if fd is not None:
        import sys

        for stream in (sys.stdout, sys.stderr):  # keep the order of what was printed
            with contextlib.suppress(Exception):
                if stream.fileno() == fd:
                    stream.flush()
        _write_all(fd, data)
        return
    try:  # non-blocking open: a FIFO nobody reads is an error, not a hang
        out = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise RunError(
                f"could not write {target}: it is a FIFO and no process is reading it; "
                "nothing was written"
            ) from None
        raise
    try:
        flags = fcntl.fcntl(out, fcntl.F_GETFL)
        fcntl.fcntl(out, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        _write_all(out, data)
    finally:
        os.close(out)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_text_atomic(target: Path, text: str, *, create_dir: bool = True) -> Path:
    with atomic_path(target, create_dir=create_dir) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, mtime_ns) of a file, None if absent: a rename of a new file onto
    path changes it, so comparing it before and after tells whether a write committed."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns
