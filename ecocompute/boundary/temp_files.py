"""Temp files of atomic writes (boundary/atomic.py): their names, and the removal of those
left by a writer killed outright (SIGKILL, a power cut).

A temp file is named .<name>.<pid>.<random>.tmp<suffix> beside its target. One is
stale, and removed by the next write of the same name in that folder, when its
writer's pid is not running on this machine (or is this process's own, which began
after it: a container's runs are all pid 1) and the file is older than the current
process, or dated more than an hour ahead of the clock, or last written more than an
hour ago (a pid now held by another process, init's 1): a temp file lives for the
milliseconds of one write, so one older than this process whose writer is gone is
certain to be left over, and so is one from the future (no live writer's clock is an
hour off). A temp file newer than this process may be a writer's on another machine
sharing the folder, writing right now: it is kept.

Content written through (a device, a FIFO, a descriptor) is made in a scratch file:
an anonymous memory file (memfd) where the system has one, so that nothing on any disk
outlives the process; elsewhere a pid-named temp file in the temp folder, removed like
the others by the next such write.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ecocompute.boundary.interrupts import critical

_NAME_CHARS = 100  # of the target's name in a temp file's name (a name may be 255 bytes)
_SUFFIX_CHARS = 16
_MKSTEMP_RANDOM = r"[a-z0-9_]{8}"  # tempfile's names: 8 of these characters
LEGACY_STALE_S = 3600.0  # temp files named before the pid was in the name: an hour
FUTURE_STALE_S = 3600.0  # a temp file dated further ahead of the clock is no live write
# This process is older than this module: a temp file last written before it was
# imported is not this process's, nor any live writer's that started after it.
_STARTED_S = time.time()


def temp_affixes(target: Path) -> tuple[str, str]:
    """(prefix, tail) of the temp files of target: .<name>. and .tmp<suffix>."""
    suffix = target.suffix if len(target.suffix) <= _SUFFIX_CHARS else ""
    return f".{target.name[:_NAME_CHARS]}.", ".tmp" + suffix


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: running, as another user
        return True
    return True


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove temp files of target's name in its folder left by writers that are gone:
    pid-named ones whose pid is not running here (or is ours) and that were last written
    before this process began writing reports (this module's import), or an hour ago;
    ones named before the pid was in the name once they are an hour old. Returns what
    was removed; never raises."""
    prefix, tail = temp_affixes(target)
    named = re.compile(
        re.escape(prefix) + r"(?:(\d+)\.)?" + _MKSTEMP_RANDOM + re.escape(tail) + "$"
    )
    return _remove_stale(target.parent, named)


def _remove_stale(folder: str | os.PathLike[str], named: re.Pattern[str]) -> list[Path]:
    """remove_stale_temps for the files of folder whose names match named (group 1: the
    writer's pid, if the name holds one)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = named.match(entry.name)
        if match is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            pid = match.group(1)
            from_the_future = st.st_mtime > now + FUTURE_STALE_S
            if pid is not None:
                old = st.st_mtime < _STARTED_S or from_the_future
                # this process's own pid on a file older than it: an earlier process's
                # (in a container every run is pid 1); and no write lasts an hour, so an
                # older one is left over whoever holds its pid now (pid 1, init, always)
                gone = int(pid) == os.getpid() or not _pid_running(int(pid))
                stale = (old and gone) or st.st_mtime < now - LEGACY_STALE_S
            else:
                stale = st.st_mtime < now - LEGACY_STALE_S or from_the_future
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue  # gone already, or not ours to remove
    return removed


THROUGH_PREFIX = ".ecocompute.through."  # temp files of content written through


@contextlib.contextmanager
def scratch_file(target: Path) -> Iterator[Path]:
    """A file to make the content in, that nothing outlives: a memfd (a path under
    /proc/self/fd), else a pid-named temp file in the temp folder."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        try:
            with critical():
                scratch = memfd_create("ecocompute-" + target.name[:_NAME_CHARS])
        except OSError:
            scratch = None
        path = Path(f"/proc/self/fd/{scratch}")
        if scratch is not None and not path.exists():  # no /proc mounted
            os.close(scratch)
            scratch = None
        if scratch is not None:
            try:
                yield path
            finally:
                os.close(scratch)
            return
    tail = temp_affixes(target)[1]
    folder = tempfile.gettempdir()
    _remove_stale(
        folder,
        re.compile(re.escape(THROUGH_PREFIX) + r"(\d+)\." + _MKSTEMP_RANDOM + r"\.tmp[^/]*$"),
    )
    with critical():
        handle, tmp_name = tempfile.mkstemp(
            prefix=f"{THROUGH_PREFIX}{os.getpid()}.", suffix=tail, dir=folder
        )
    os.close(handle)
    try:
        yield Path(tmp_name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
