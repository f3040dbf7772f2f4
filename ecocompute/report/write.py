"""Writing energy.json: checked first (an invalid report is an error, never a file),
then written atomically (temp file + rename: no partial file, an earlier one untouched).

What is checked is the text itself, read back as every reader reads it
(report/read.py): the model, its arithmetic derived again exactly, and, where its
precision is one the published format names, the published container's strict 1.3
schema (what its consumers accept).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ecocompute.boundary.atomic import write_text_atomic, write_texts_atomic
from ecocompute.errors import ReportInvalid
from ecocompute.report.model import FORMAT, Report
from ecocompute.report.numbers import NotReportJson, dumps_strict, loads_strict, unsafe_values
from ecocompute.report.read import parse_report, validation_messages
from ecocompute.report.schema import (
    PUBLISHED_MIN_RATE_HZ,
    PUBLISHED_PRECISIONS,
    published_13_errors,
    published_facts_errors,
)

REPORT_NAME = "energy.json"


def report_text(report: Report | Mapping[str, Any]) -> str:
    """The report (the model, or its JSON document) as the file holds it. Raises
    ReportInvalid with every reason when the text would not read back as a valid report
    of format 2.0."""
    if not isinstance(report, Report):
        unsafe = unsafe_values(report)
        if unsafe:
            raise ReportInvalid(unsafe)
        if report.get("ecocompute_format") != FORMAT:
            raise ReportInvalid([f"$.ecocompute_format: this tool writes format {FORMAT} only"])
        try:
            report = Report.model_validate(dict(report))
        except ValidationError as exc:
            raise ReportInvalid(validation_messages(exc)) from None
    if report.ecocompute_format != FORMAT:
        raise ReportInvalid([f"$.ecocompute_format: this tool writes format {FORMAT} only"])
    document = report.model_dump(mode="json")
    try:
        text = dumps_strict(document, indent=2) + "\n"
    except NotReportJson as exc:
        raise ReportInvalid([str(exc)]) from None
    _, problems = parse_report(loads_strict(text))
    if not problems:
        problems = _published_problems(report, document)
    if problems:
        raise ReportInvalid(problems)
    return text


def _published_problems(report: Report, document: Any) -> list[str]:
    """Where the published format can hold the report (a precision it names), what its
    readers would refuse: the container's strict 1.3 schema, which the report's
    schema_version names; below its 10 Hz floor, the 1.1 facts (the strict schema
    refuses such a report for its rate alone, as the protocol does)."""
    if report.workload.precision not in PUBLISHED_PRECISIONS:
        return []
    problems = [f"published format: {p}" for p in published_facts_errors(document, thorough=True)]
    if report.measurement.sample_rate_hz >= PUBLISHED_MIN_RATE_HZ:
        problems += [f"published 1.3: {p}" for p in published_13_errors(document, thorough=True)]
    return problems


def written_problems(document: Any) -> list[str]:
    """What the writer checks of a document: every reason a reader would refuse it, and,
    where its precision is one the published format names, the published schemas."""
    report, problems = parse_report(document)
    if report is None:
        return problems
    return _published_problems(report, document)


def write_report(
    report: Report | Mapping[str, Any],
    output_dir: str | os.PathLike[str],
    *,
    create_dir: bool = True,
) -> Path:
    """Check, then write <output_dir>/energy.json atomically.

    create_dir False: do not recreate an output folder that existed at the start of the
    run and has vanished since (see atomic.atomic_path).
    Raises ReportInvalid (nothing written) or RunError (the folder could not take the
    file; the temp file is removed and any earlier energy.json is left untouched).
    """
    text = report_text(report)
    return write_text_atomic(Path(output_dir) / REPORT_NAME, text, create_dir=create_dir)


def write_reports(
    reports: Sequence[tuple[Report | Mapping[str, Any], str | os.PathLike[str]]],
) -> list[Path]:
    """Check every report, then write each as <folder>/energy.json, all or none (a
    session's reports: atomic.write_texts_atomic). Raises ReportInvalid or RunError with
    nothing written (every earlier energy.json untouched), or atomic.PartlyWritten
    naming those written when a rename failed after others."""
    texts = [(Path(folder) / REPORT_NAME, report_text(report)) for report, folder in reports]
    return write_texts_atomic(texts)
