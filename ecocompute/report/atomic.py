"""Atomic file writes (energy.json, CSV tables, sweep.json, pictures): write a temp
file in the target's folder, fsync, rename. A failure leaves no partial file and any
earlier file untouched."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ecocompute.errors import RunError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(target: Path, *, create_dir: bool = True) -> Iterator[Path]:
    """Yields a temp path beside target; renamed onto target when the block succeeds.

    create_dir False: the folder existed when the run started, and if it is gone now
    (deleted, or a volume unmounted) it is not silently recreated.
    Raises RunError when the folder cannot take the file. Whatever stops the block (an
    error, KeyboardInterrupt, errors.Interrupted) removes the temp file.
    """
    if not create_dir and not target.parent.is_dir():
        raise RunError(
            f"could not write {target}: the folder {target.parent} existed when the run "
            "started and is gone now (deleted, or its volume unmounted?); nothing was "
            "written. Recreate or remount it and run again."
        )
    tmp_name: str | None = None
    try:
        if create_dir:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=target.parent
        )
        os.close(fd)
        os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from others
        yield Path(tmp_name)
        with open(tmp_name, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
        tmp_name = None
    except OSError as exc:
        raise RunError(
            f"could not write {target}: {exc.strerror or exc}; nothing was written "
            "(check the folder exists, is writable and the disk has space)"
        ) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def write_text_atomic(target: Path, text: str, *, create_dir: bool = True) -> Path:
    with atomic_path(target, create_dir=create_dir) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, mtime_ns) of a file, None if absent: a rename of a new file onto
    path changes it, so comparing it before and after tells whether a write committed."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns
