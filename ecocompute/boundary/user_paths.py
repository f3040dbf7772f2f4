"""Paths given by the user (--output_dir, --parameters_file, -o, report paths), looked at
without letting the operating system's refusals escape as bugs.

os.stat raises for a path it cannot even look up: a name longer than the file system
allows (ENAMETOOLONG), a NUL byte (ValueError), a loop of symbolic links (ELOOP), a
folder that may not be searched (EACCES). Those are bad input: InputError naming the
field, exit 2, before anything runs.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable

from ecocompute.errors import InputError

_WHY = {
    errno.ENAMETOOLONG: "a name in it is longer than the file system allows",
    errno.ELOOP: "it is a loop of symbolic links",
    errno.EACCES: "a folder on the way may not be searched (permission denied)",
    errno.ENOTDIR: "a part of it that should be a folder is a file",
}


def unusable_path_reason(exc: OSError | ValueError) -> str:
    """Why the operating system could not look a path up, in words."""
    if isinstance(exc, ValueError):
        return "it holds a NUL byte, which no file name can"
    return _WHY.get(exc.errno or 0, exc.strerror or str(exc))


def lstat_or_none(field: str, path: str | os.PathLike[str]) -> os.stat_result | None:
    """The path's own status (a link is not followed), None when nothing is there.
    Raises InputError when the path cannot be looked up at all."""
    return _status(field, path, follow=False)


def stat_or_none(field: str, path: str | os.PathLike[str]) -> os.stat_result | None:
    """The status of what the path names (links followed), None when nothing is there
    (a dangling link included). Raises InputError as lstat_or_none does."""
    return _status(field, path, follow=True)


def path_text(field: str, given: object, expected: str) -> str:
    """A path as the caller gave it, as text: a str, or an os.PathLike of one. An empty
    one, or one that is not text (None, bytes, a number), is an InputError (expected:
    what to give), never the current folder or a file named "None"."""
    path = os.fspath(given) if isinstance(given, os.PathLike) else given
    if not isinstance(path, str) or not path:
        raise InputError(field, path, expected)
    return path


def regular_file(field: str, path: str | os.PathLike[str], give: str) -> os.stat_result:
    """The status of the regular file an input path names (links followed). Raises
    InputError for anything else: a folder, nothing, or what would block or never end
    when read (a FIFO, a device such as /dev/zero); give: what to name instead."""
    st = stat_or_none(field, path)
    if st is None or not stat.S_ISREG(st.st_mode):
        what = {"folder": "is a folder", "missing": "does not exist"}.get(
            kind_of(st), "is not a regular file"
        )
        raise InputError(field, os.fspath(path), f"{what}; give {give}")
    return st


def _status(field: str, path: str | os.PathLike[str], *, follow: bool) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(
            field, os.fspath(path), f"cannot be used: {unusable_path_reason(exc)}"
        ) from None


_KINDS = (
    (stat.S_ISDIR, "folder"),
    (stat.S_ISREG, "file"),
    (stat.S_ISLNK, "symbolic link"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def kind_of(st: os.stat_result | None) -> str:
    """ "missing", "folder", "file", or what else it is, in words."""
    if st is None:
        return "missing"
    return next((kind for test, kind in _KINDS if test(st.st_mode)), "special file")


def check_output_file(field: str, path: str | os.PathLike[str]) -> None:
    """An output file the user named (-o): refused now, before any work, when it is a
    folder, a block device or a socket, or a path the system cannot look up. A regular
    file, a link, a character device or a FIFO are for boundary/atomic.py to write."""
    text = os.fspath(path)
    if not text:
        raise InputError(field, text, "is empty; name a file")
    if text.endswith((os.sep, os.sep + ".", os.sep + "..")) or text in (".", ".."):
        raise InputError(field, text, "names a folder (it ends in '/'); name a file in it")
    st = stat_or_none(field, path)
    kind = kind_of(st)
    if kind == "folder":
        raise InputError(field, os.fspath(path), "is a folder; name a file")
    if kind in ("block device", "socket", "special file"):
        raise InputError(field, os.fspath(path), f"is a {kind}; name a file")


def _limit(folder: str, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


def check_creatable(field: str, path: str | os.PathLike[str], room: int = 0) -> None:
    """A path that may not exist yet must be creatable: each name in the part that does
    not exist within the file system's NAME_MAX, the whole (plus room, for the names
    written inside it) within PATH_MAX. The system checks a name's length only once
    the folders before it exist, so a missing folder would hide a name too long until
    the write, after the run. Raises InputError."""
    absolute = os.path.abspath(os.fspath(path))
    existing = absolute
    while lstat_or_none(field, existing) is None:
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    name_max = _limit(existing, "PC_NAME_MAX", 255)
    path_max = _limit(existing, "PC_PATH_MAX", 4096)
    missing = os.path.relpath(absolute, existing) if absolute != existing else ""
    for name in missing.split(os.sep) if missing else []:
        if len(os.fsencode(name)) > name_max:
            raise InputError(
                field,
                os.fspath(path),
                f"cannot be used: a name in it is longer than the file system allows "
                f"({len(os.fsencode(name))} bytes; at most {name_max})",
            )
    if len(os.fsencode(absolute)) + room >= path_max:
        raise InputError(
            field,
            os.fspath(path),
            f"cannot be used: the path is too long for the file system (PATH_MAX {path_max})",
        )


def check_link_into_folder(field: str, path: str | os.PathLike[str]) -> None:
    """A file to be written that is a symbolic link: the folder it points into must
    exist (the link is followed, and a folder on the far side of a link is not made).
    Raises InputError naming the link and where it points."""
    if lstat_or_none(field, path) is None or not os.path.islink(path):
        return
    real = os.path.realpath(path)
    if stat_or_none(field, os.path.dirname(real)) is None:
        raise InputError(
            field,
            os.fspath(path),
            f"is a symbolic link to {real}, whose folder does not exist; remove the link "
            "or create that folder",
        )


def file_key(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(device, inode) of the file a path names (links followed); None if there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def check_not_an_input(
    field: str, output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]
) -> None:
    """An output file must not be one of the files a command read (`aggregate r -o
    r/energy.json` would replace the report it summarises): the same path once links
    and `..` are resolved, or the same file (a hard link). Raises InputError."""
    real = os.path.realpath(output)
    same = file_key(output)
    for given in inputs:
        if os.path.realpath(given) == real or (same is not None and file_key(given) == same):
            raise InputError(
                field,
                os.fspath(output),
                f"is {os.fspath(given)}, one of the files read; writing it would destroy "
                "that input: name another file",
            )
