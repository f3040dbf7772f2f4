"""Finding and reading many energy.json reports: the one reader of validate, aggregate,
plot, check and sweep.

A folder is searched recursively for files named energy.json; a file named on the
command line is read whatever its name. Every file is checked as `validate` checks it
(report/checks.py: its format's schema, sane numbers, its own arithmetic), then made
into one typed record (record.py), which refuses what it cannot read; an invalid file
is listed with its reasons and skipped, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.report.checks import energy_report_problems
from ecocompute.report.validate import files_under, read_document
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.record import Report, software_fingerprint, software_title, to_record
from ecocompute.results.upgrade import upgrade

__all__ = [
    "Invalid",
    "Report",
    "read_one",
    "read_reports",
    "record_of",
    "report_files",
    "software_fingerprint",
    "software_title",
]


@dataclass(frozen=True)
class Invalid:
    path: str
    problems: list[str]


def report_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files named directly, plus every energy.json under each folder, sorted, no repeats."""
    return files_under(paths, (REPORT_NAME,))


def record_of(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Report | Invalid:
    """A parsed document of any format this tool reads (1.0, 1.1, 1.2, 1.3) as its typed
    record, 1.2 converted to the current format first; or why it is not one."""
    problems = energy_report_problems(document)
    if problems:
        return Invalid(str(path), problems)
    record, problems = to_record(Path(path), upgrade(dict(document)))
    return Invalid(str(path), problems) if record is None else record


def read_one(path: str | os.PathLike[str]) -> Report | Invalid:
    """The record of one report file, or why the file is not one. Never raises for a
    bad file or path."""
    document, problems = read_document(path)
    if document is None:
        return Invalid(str(path), problems)
    return record_of(path, document)


def read_reports(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[Report], list[Invalid]]:
    """Every valid report under paths, and every file that is not one (with why)."""
    reports: list[Report] = []
    invalid: list[Invalid] = []
    for file in report_files(paths):
        one = read_one(file)
        if isinstance(one, Invalid):
            invalid.append(one)
        else:
            reports.append(one)
    return reports, invalid
