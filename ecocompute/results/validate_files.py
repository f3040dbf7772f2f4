"""`ecocompute validate`: check report files, one line per file.

A folder is searched recursively for energy.json and sweep.json; a file named directly
is read whatever its name, and validated as a sweep when its schema_version says so.
An energy report is read by the same reader as aggregate, plot, check and sweep
(results/collect.py): "valid" means those tools read it, and a file they would refuse
is INVALID here, with why. Every file is checked on its own: one that is unreadable,
huge, deeply nested, not UTF-8, holds NaN or numbers too large for a float, or
contradicts its own trials is one INVALID line, and the others are still checked. A
file named twice (`r` and `$PWD/r`, a link) is checked once, and a folder that cannot be
searched is an INVALID line too, never skipped in silence (boundary/finding.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ecocompute.core.printable import printable
from ecocompute.report.files import SWEEP_NAME, found_in, listed, read_document
from ecocompute.report.read import sweep_problems
from ecocompute.report.schema import SWEEP_SCHEMA_VERSION
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.collect import Invalid, Report, record_of
from ecocompute.results.in_parallel import map_files


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


@dataclass(frozen=True)
class FileCheck:
    """One line of `ecocompute validate`: a file (or a folder) and why it is not valid,
    or what a valid one is."""

    path: str  # as found (a folder that could not be searched ends in '/')
    problems: tuple[str, ...] = ()
    note: str = ""  # what a valid report is, where it is not of this tool's format

    @property
    def valid(self) -> bool:
        return not self.problems

    def line(self) -> str:
        if self.problems:
            return f"{printable(self.path)}: INVALID {printable(listed(self.problems))}"
        return f"{printable(self.path)}: valid{self.note}"


def validate_paths(paths: Iterable[str]) -> list[FileCheck]:
    """One check per file found under paths (each file once, however it was named), a
    folder that could not be searched and a path that holds no report among them as
    INVALID lines of their own."""
    files, missing = found_in(paths, (REPORT_NAME, SWEEP_NAME))
    checks = [FileCheck(path, (why,)) for path, why in missing]
    for path, (problems, note) in zip(files, map_files(_check_one, files), strict=True):
        checks.append(FileCheck(str(path), tuple(problems), "" if problems else note))
    return checks
