"""Paths and addresses the user gives: the quality text, URLs, the output folder. The
model checks what a value says (run_params.py); these check what it names, on this
machine, when a run is about to use it."""

from __future__ import annotations

import os
import stat
import tempfile
import urllib.parse
from pathlib import Path

from ecocompute.boundary.user_paths import (
    check_creatable,
    kind_of,
    lstat_or_none,
    path_text,
    stat_or_none,
)
from ecocompute.errors import InputError

MAX_QUALITY_TEXT_BYTES = 16 * 2**20
# a leading ~ no shell expanded (--output_dir=~/out, or quoted): taken as given it names
# a folder "~" here, which the summary would print as if it were the home folder
UNEXPANDED = "begins with ~, which no shell expanded here (as in --flag=~/x); give the full path"


def quality_text_problem(path: str) -> str | None:
    """Why --quality_text cannot be scored (None: it can). A name that cannot be a path
    at all (a NUL byte, too long) is bad input (InputError); a file that is missing or
    unreadable is a reason the run goes on without the probe, as the published
    container's does."""
    file = Path(path)
    st = stat_or_none("quality_text", path)  # a name too long, a NUL byte: InputError
    if st is None and path.startswith("~"):
        return UNEXPANDED
    if st is None or not stat.S_ISREG(st.st_mode):
        return "is not a file; give a UTF-8 text file"
    if st.st_size > MAX_QUALITY_TEXT_BYTES:  # before reading it: an 8 GiB file is no text
        return "is larger than 16 MiB; not a scoring text"
    try:
        data = file.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if len(data) > MAX_QUALITY_TEXT_BYTES:  # it grew since
        return "is larger than 16 MiB; not a scoring text"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    if len(text.split()) < 2:
        return "holds too little text to score"
    return None


def refuse_credentials(name: str, url: str) -> None:
    """A URL with a user name or password (user:pw@) is refused, and shown without them:
    stderr must not hold them. Raises InputError."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        shown = f"{scheme}://***@{authority.rsplit('@', 1)[1]}{slash}{path}"
        raise InputError(
            name,
            shown,
            "must not carry a user name or password (user:pw@): the site is public, and "
            "the report and stderr would show them",
        )


def check_http_url(name: str, url: str) -> None:
    """--site and --api_base: an http(s) address of a host, with no spaces, query or
    fragment (a path is appended to it), and no user name or password (never echoed).
    Raises InputError."""
    refuse_credentials(name, url)
    if any(c.isspace() or not c.isprintable() for c in url):
        raise InputError(name, url, "must be an http(s) URL without spaces")
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a bad port or bracketed host
        port_ok = False
        parts = urllib.parse.urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise InputError(name, url, "must be an http(s) URL such as https://quantenergy.tech")
    if "?" in url or "#" in url:
        raise InputError(name, url, "must not carry a query or fragment (? or #)")


def check_output_dir(given: str | os.PathLike[str]) -> Path:
    """The output folder must be a folder we can write, or creatable. Writes nothing.
    Taken exactly as given (never stripped): an empty one, or one that is not text (None,
    bytes), is refused rather than read as the current folder or a folder named "None".
    Raises InputError for anything else, including a path the system cannot look up
    (a name too long, a NUL byte, a loop of links)."""
    path = path_text("output_dir", given, "expected a non-empty string")
    out = Path(path)
    if path.startswith("~"):  # --output_dir=~/x: the shell left it (./~ names a folder ~)
        raise InputError("output_dir", path, f"{UNEXPANDED}, or ./{path} for that folder")
    st = stat_or_none("output_dir", path)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise InputError("output_dir", path, f"is a {kind_of(st)}; give a folder")
    if st is None and lstat_or_none("output_dir", path) is not None:
        raise InputError("output_dir", path, "is a symbolic link to nothing; give a folder")
    existing = out
    while (found := stat_or_none("output_dir", existing)) is None:
        existing = existing.parent
    if not stat.S_ISDIR(found.st_mode):
        raise InputError("output_dir", path, f"{existing} is a {kind_of(found)}, not a folder")
    # each missing folder's name, and room for the files it will hold
    check_creatable("output_dir", out, room=len(_LONGEST_NAME_INSIDE) + 1)
    try:  # root ignores permission bits, so try for real; the probe file is removed
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise InputError("output_dir", path, f"cannot be written ({exc.strerror})") from None
    return out


# As long as the longest name written inside an output folder (a report's temp file,
# boundary/atomic.py): a folder whose path leaves no room for it is refused up front.
_LONGEST_NAME_INSIDE = "." + "x" * 63
