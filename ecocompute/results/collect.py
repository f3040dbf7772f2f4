"""Finding and reading many energy.json reports: the one reader of validate, aggregate,
plot, check and sweep.

A folder is searched recursively for files named energy.json; a file named on the
command line is read whatever its name. Every file is checked as `validate` checks it
(report/checks.py: its format's schema, sane numbers, its own arithmetic), then made
into one typed record (record.py), which refuses what it cannot read; an invalid file
is listed with its reasons and skipped, never fatal. Each file is read once however it
is named, each report counted once however many files hold it (results/identity.py),
and a folder that cannot be searched is listed with the invalid files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.boundary.finding import find_files
from ecocompute.core.json_types import JsonObject
from ecocompute.report.files import UNSEARCHABLE, read_document
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.identity import content_key, measurement_key, repeats
from ecocompute.results.in_parallel import map_files
from ecocompute.results.record import Report, software_fingerprint, software_title, to_record

__all__ = [
    "Invalid",
    "Report",
    "read_one",
    "read_reports",
    "record_of",
    "software_fingerprint",
    "software_title",
]


@dataclass(frozen=True)
class Invalid:
    path: str
    problems: list[str]


def record_of(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Report | Invalid:
    """A parsed document of any format this tool reads (2.0, 1.0-1.4) as its typed
    record, read into the report model first; or why it is not one."""
    record, problems = to_record(Path(path), document)
    return Invalid(str(path), problems) if record is None else record


def read_one(path: str | os.PathLike[str]) -> Report | Invalid:
    """The record of one report file, or why the file is not one. Never raises for a
    bad file or path."""
    return _read(path)[0]


def _read(path: str | os.PathLike[str]) -> tuple[Report | Invalid, JsonObject | None]:
    """read_one, with the document it was read from (None where none was)."""
    document, problems = read_document(path)
    if document is None:
        return Invalid(str(path), problems), None
    return record_of(path, document), document


def _read_keyed(path: Path) -> tuple[Report | Invalid, str, str]:
    """read_one, with the content key of a valid report's document (identity.py)."""
    one, document = _read(path)
    if isinstance(one, Invalid) or document is None:
        return one, "", ""
    content = content_key(document)
    what = f"{one.card}, {one.model}, {one.format_label}, {one.protocol}"
    return one, measurement_key(document, what) if one.measured else content, content


def read_reports(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[Report], list[Invalid]]:
    """Every valid report under paths, each once, and every file that is not one (with
    why; a copy of a report read before is listed as such). A large folder's files are
    read in worker processes (in_parallel.py), with the same result."""
    reports: list[Report] = []
    keys: list[tuple[Path, str, str]] = []
    found = find_files(paths, (REPORT_NAME,))  # each file once, however it was named
    invalid = [Invalid(f"{f.path}/", [f"{UNSEARCHABLE}: {f.reason}"]) for f in found.unsearchable]
    for one, key, content in map_files(_read_keyed, found.files):
        if isinstance(one, Invalid):
            invalid.append(one)
        else:
            reports.append(one)
            keys.append((one.path, key, content))
    repeated = repeats(keys)  # each report once, too
    invalid += [Invalid(str(reports[k].path), [why]) for k, why in repeated.items()]
    return [r for k, r in enumerate(reports) if k not in repeated], invalid
