"""Finding report files under the paths a user names: each file once, and every folder
that could not be searched said, never skipped in silence.

A file is the same file however it is named: `r`, `$PWD/r`, `r/../r`, a link to it, a
hard link. Identity is the file system's (device, inode), so one report named three
ways is found once. A folder is searched recursively; links to folders inside it are
not followed (a link may loop), while a folder or file named directly may be a link.
A folder that cannot be listed (permission denied, vanished while searched) is
returned with the reason, for the caller to report as it reports an invalid file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ecocompute.boundary.user_paths import file_key
from ecocompute.errors import InputError


@dataclass(frozen=True)
class Unsearchable:
    """A folder whose listing failed."""

    path: Path
    reason: str  # the system's words, e.g. "Permission denied"


@dataclass
class Found:
    """The files found (in the order given, each folder's sorted), and the folders that
    could not be searched."""

    files: list[Path] = field(default_factory=list)
    unsearchable: list[Unsearchable] = field(default_factory=list)
    _seen: set[tuple[int, int] | Path] = field(default_factory=set, repr=False)

    def add(self, path: Path) -> None:
        """path, unless the same file is already in (a missing file is kept, once: its
        reader says it is missing)."""
        identity = file_key(path) or path
        if identity not in self._seen:
            self._seen.add(identity)
            self.files.append(path)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: the reader says which
        return False


def _search(folder: Path, names: tuple[str, ...], found: Found) -> None:
    """Every file called one of names under folder, sorted; unlistable folders noted."""
    inside: list[Path] = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                listed = list(entries)
        except OSError as exc:
            found.unsearchable.append(Unsearchable(current, exc.strerror or str(exc)))
            continue
        for entry in listed:
            path = current / entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                    continue
            except OSError:
                pass
            # A report's name that is no regular file (a FIFO, a socket, a link to
            # /dev/zero or to nothing) is found too: its reader says what it is, in one
            # line, without opening it, never skipping it in silence.
            if entry.name in names:
                inside.append(path)
    for path in sorted(inside):
        found.add(path)


def find_files(paths: Iterable[str | os.PathLike[str]], names: tuple[str, ...]) -> Found:
    """Files named directly, plus every file called one of names under each folder;
    each file once (by identity), and the folders that could not be searched."""
    found = Found()
    for given in paths:
        text = os.fspath(given)  # as given: Path() would read '' as '.', 'r.json/' as 'r.json'
        if not text:
            raise InputError("PATH", text, "expected a non-empty path ('.' is this folder)")
        path = Path(text)
        if _is_dir(path):
            _search(path, names, found)
        elif text.endswith(os.sep):
            raise InputError("PATH", text, "ends in a '/', but names no folder")
        else:
            found.add(path)  # a missing or unreadable file is reported by its reader
    return found
