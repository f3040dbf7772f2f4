"""Reading report files safely, and finding them under folders: the ground floor of
`validate` and of every reader of reports (results/collect.py, results/validate_files.py).

A file that is unreadable, huge, deeply nested, not UTF-8, or holds NaN or numbers too
large for a float is a reason, never an exception. A file named twice (`r` and `$PWD/r`,
a link) is found once, and a folder that cannot be searched is said, never skipped in
silence (boundary/finding.py).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from ecocompute.boundary.finding import Found, find_files
from ecocompute.boundary.user_paths import kind_of
from ecocompute.core.json_types import JsonObject
from ecocompute.report.numbers import NotReportJson, loads_strict

UNSEARCHABLE = "cannot search this folder (its reports, if any, were not read)"
MAX_REPORT_BYTES = 64 * 2**20  # far above any real report; refuses to parse a huge file
SWEEP_NAME = "sweep.json"
LISTED = 5  # reasons a one-line verdict on a file names (validate, upgrade)


def listed(problems: Sequence[str]) -> str:
    """The first LISTED reasons, "; "-joined, and how many more there are."""
    more = f" (+{len(problems) - LISTED} more)" if len(problems) > LISTED else ""
    return "; ".join(problems[:LISTED]) + more


def _os_reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):  # os.stat on a path with a NUL byte
        return "not a usable path (it holds a NUL byte)"
    return exc.strerror or str(exc)


def _link_words(file: Path) -> str:
    """ "a symbolic link to <target>, " where file is one, else nothing."""
    try:
        return f"a symbolic link to {os.readlink(file)}, " if os.path.islink(file) else ""
    except OSError:
        return "a symbolic link, "


def read_document(path: str | os.PathLike[str]) -> tuple[JsonObject | None, list[str]]:
    """(the JSON object in a file, []) or (None, why it is not one). Never raises for a
    bad file or path."""
    read, problems = read_document_text(path)
    return (None, problems) if read is None else (read[1], [])


def read_document_text(
    path: str | os.PathLike[str],
) -> tuple[tuple[str, JsonObject] | None, list[str]]:
    """((the file's text, the JSON object it holds), []) or (None, why it is not one):
    read_document with the text itself, for a command that copies a file unchanged."""
    file = Path(path)
    try:
        st = file.stat()  # never opened unless a regular file: a FIFO would block
    except FileNotFoundError as exc:
        if os.path.islink(file):
            return None, [f"not a file: {_link_words(file)}which does not exist"]
        return None, [f"cannot read: {_os_reason(exc)}"]
    except (OSError, ValueError) as exc:
        return None, [f"cannot read: {_os_reason(exc)}"]
    size = st.st_size
    if not stat.S_ISREG(st.st_mode):
        return None, [f"not a file: {_link_words(file)}a {kind_of(st)}, not a report (not read)"]
    if size > MAX_REPORT_BYTES:
        return None, [f"too large to be a report ({size} bytes > {MAX_REPORT_BYTES})"]
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, ["not UTF-8 text"]
    except OSError as exc:
        return None, [f"cannot read: {_os_reason(exc)}"]
    try:
        document = loads_strict(text)
    except json.JSONDecodeError as exc:
        return None, [f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]
    except NotReportJson as exc:
        return None, [f"not a report: it {exc}"]
    except RecursionError:
        return None, ["not a report (JSON nested too deeply)"]
    if not isinstance(document, dict):
        return None, [f"not a report: top level is a JSON {type(document).__name__}, not an object"]
    return (text, document), []


def found_in(
    paths: Iterable[str | os.PathLike[str]], names: tuple[str, ...]
) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every file called one of names under paths, each once however it was named, and
    (a path, why) for each folder that could not be searched and each path that holds
    none of them: `validate` and `upgrade` list both."""
    files = Found()
    missing: list[tuple[str, str]] = []
    for given in paths:
        found = find_files([given], names)
        missing += [(f"{f.path}/", f"{UNSEARCHABLE}: {f.reason}") for f in found.unsearchable]
        if not found.files and not found.unsearchable:
            missing.append((os.fspath(given), f"no {' or '.join(names)} in this folder"))
        for path in found.files:
            files.add(path)
    return files.files, missing
