"""`ecocompute validate`: check report files, one line per file.

A folder is searched recursively for energy.json and sweep.json; a file named directly
is read whatever its name, and validated as a sweep when its schema_version says so.
An energy report is read by the same reader as aggregate, plot, check and sweep
(results/collect.py): "valid" means those tools read it, and a file they would refuse
is INVALID here, with why. Every file is checked on its own: one that is unreadable,
huge, deeply nested, not UTF-8, holds NaN or numbers too large for a float, or
contradicts its own trials is one INVALID line, and the others are still checked. A
file named twice (`r` and `$PWD/r`, a link) is checked once, and a folder that cannot be
searched is an INVALID line too, never skipped in silence (report/finding.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from ecocompute.core.printable import printable
from ecocompute.report.files import SWEEP_NAME, UNSEARCHABLE, read_document
from ecocompute.report.finding import Found, find_files
from ecocompute.report.read import sweep_problems
from ecocompute.report.schema import SWEEP_SCHEMA_VERSION
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.collect import Invalid, Report, record_of

_LISTED = 5


def _listed(problems: list[str]) -> str:
    more = f" (+{len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
    return "; ".join(problems[:_LISTED]) + more


def _check_one(path: Path) -> tuple[list[str], str]:
    """(why the file is not valid, what a valid one is)."""
    document, problems = read_document(path)
    if document is None:
        return problems, ""
    if document.get("schema_version") == SWEEP_SCHEMA_VERSION:
        return sweep_problems(document), ""
    one = record_of(path, document)
    if isinstance(one, Invalid):
        return one.problems, ""
    return [], format_note(one)


def format_note(r: Report) -> str:
    """What a valid report is, where it is not this tool's current report format."""
    if r.from_published_container:
        note = f" (published container's format {r.format_name}: a single run, no trials"
        if r.kind == "illustrative":
            note += "; ILLUSTRATIVE: it says it is not a real measurement"
        return note + ")"
    if r.format == "ecocompute-energy/1.2":
        return " (format 1.2, ecocompute 0.2: read as 1.3 by the results tools)"
    return ""


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
        problems, note = _check_one(path)
        if problems:
            status = 1
            print(f"{printable(path)}: INVALID {printable(_listed(problems))}", file=out)
        else:
            print(f"{printable(path)}: valid{note}", file=out)
    return status
