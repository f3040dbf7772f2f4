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
def atomic_path(target: Path) -> Iterator[Path]:
    """Yields a temp path beside target; renamed onto target when the block succeeds.
    Raises RunError when the folder cannot take the file."""
    tmp_name: str | None = None
    try:
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


def write_text_atomic(target: Path, text: str) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target
