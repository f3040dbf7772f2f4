"""`ecocompute validate`: check report files, one line per file.

A folder is searched recursively for energy.json and sweep.json; a file named directly
is read whatever its name, and validated as a sweep when its schema_version says so.
Every file is checked on its own: one that is unreadable, huge, deeply nested, not
UTF-8, holds NaN or numbers too large for a float, or contradicts its own trials is
one INVALID line, and the others are still checked. A file named twice (`r` and
`$PWD/r`, a link) is checked once, and a folder that cannot be searched is an INVALID
line too, never skipped in silence (report/finding.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from ecocompute.printable import printable
from ecocompute.report.checks import energy_report_problems, sweep_problems
from ecocompute.report.finding import Found, find_files
from ecocompute.report.numbers import NotReportJson, loads_strict
from ecocompute.report.schema import SWEEP_SCHEMA_VERSION
from ecocompute.report.write import REPORT_NAME

UNSEARCHABLE = "cannot search this folder (its reports, if any, were not read)"
MAX_REPORT_BYTES = 64 * 2**20  # far above any real report; refuses to parse a huge file
SWEEP_NAME = "sweep.json"


def _os_reason(exc: OSError | ValueError) -> str:
    if isinstance(exc, ValueError):  # os.stat on a path with a NUL byte
        return "not a usable path (it holds a NUL byte)"
    return exc.strerror or str(exc)


def read_document(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """(the JSON object in a file, []) or (None, why it is not one). Never raises for a
    bad file or path."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if not file.is_file():
            return None, ["not a file"]
    except (OSError, ValueError) as exc:
        return None, [f"cannot read: {_os_reason(exc)}"]
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
    return document, []


def problems_in(path: str | os.PathLike[str]) -> list[str]:
    """Why a file is not a valid energy report; empty when it is."""
    document, problems = read_document(path)
    return problems if document is None else energy_report_problems(document)


def _problems_of_any(path: Path) -> list[str]:
    """Validated as a sweep when it says it is one, else as an energy report."""
    document, problems = read_document(path)
    if document is None:
        return problems
    if document.get("schema_version") == SWEEP_SCHEMA_VERSION:
        return sweep_problems(document)
    return energy_report_problems(document)


def files_under(paths: Iterable[str | os.PathLike[str]], names: tuple[str, ...]) -> list[Path]:
    """Files named directly, plus every file called one of names under each folder, each
    once (report/finding.py; the folders that could not be searched are left out here)."""
    return find_files(paths, names).files


_LISTED = 5


def _listed(problems: list[str]) -> str:
    more = f" (+{len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
    return "; ".join(problems[:_LISTED]) + more


def validate_paths(paths: Iterable[str], out: TextIO) -> int:
    """Print one line per file: "valid", or "INVALID" and its problems; 0 when every
    file is valid, 1 when one is not or no file was found."""
    status = 0
    files = Found()
    for given in paths:
        found = find_files([given], (REPORT_NAME, SWEEP_NAME))
        for folder in found.unsearchable:
            print(f"{printable(folder.path)}/: INVALID {UNSEARCHABLE}: {folder.reason}", file=out)
            status = 1
        if not found.files and not found.unsearchable:
            print(
                f"{printable(given)}: INVALID no {REPORT_NAME} or {SWEEP_NAME} in this folder",
                file=out,
            )
            status = 1
        for path in found.files:
            files.add(path)  # one file named two ways is checked once
    for path in files.files:
        problems = _problems_of_any(path)
        if problems:
            status = 1
            print(f"{printable(path)}: INVALID {printable(_listed(problems))}", file=out)
        else:
            print(f"{printable(path)}: valid{_format_note(path)}", file=out)
    return status


def _format_note(path: Path) -> str:
    """What a valid file is, where it is not this tool's current report format."""
    document, _ = read_document(path)
    version = (document or {}).get("schema_version")
    if version == "ecocompute-energy/1.1":
        return " (published container's format 1.1: a single run, no trials)"
    if version == "ecocompute-energy/1.2":
        return " (format 1.2, ecocompute 0.2: read as 1.3 by the results tools)"
    return ""
