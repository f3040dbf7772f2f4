"""A parsed document as the report model, with every reason it is not a valid report:
the one reader of validate, aggregate, plot, check, the sweep and the fleet.

Keyed on the format: a document that names ecocompute_format is this tool's 2.0 and is
validated by the model itself, then checked exactly; one of an older format (its
schema_version, and its benchmark to tell this tool's 1.2/1.3 from the published
container's of the same names) is checked against its own schema, upgraded into the
model (report/legacy.py) and checked within its rounding (report/checks.py); a copy of
one that `upgrade` put in today's published names (provenance.upgraded_from) is taken
back to it first (report/envelope.py) and read as it. The JSON
itself was read strictly before (report/numbers.py: no NaN, no huge numbers, no repeated
key, shallow nesting).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from ecocompute.report.checks import report_problems
from ecocompute.report.envelope import source_of, upgraded_source
from ecocompute.report.files import read_document
from ecocompute.report.legacy import upgraded
from ecocompute.report.model import FORMAT, Report
from ecocompute.report.numbers import unsafe_values
from ecocompute.report.schema import (
    json_path,
    known_formats,
    older_format,
    schema_errors,
    sweep_errors,
)

MAX_LISTED = 20


def validation_messages(exc: ValidationError) -> list[str]:
    """pydantic's errors as "$.json.path: message" lines."""
    return [
        f"{json_path(error['loc']).removesuffix('.')}: {error['msg']}"
        for error in exc.errors()[:MAX_LISTED]
    ]


def parse_report(document: Any) -> tuple[Report | None, list[str]]:
    """(the report, []) or (None, why it is not one). Never raises for a bad document."""
    if not isinstance(document, dict):
        return None, [f"not a report: a JSON {type(document).__name__}, not an object"]
    problems = unsafe_values(document)
    if problems:
        return None, problems
    own = document.get("ecocompute_format")
    if own is not None and own != FORMAT:
        return None, [f"$.ecocompute_format: {own!r} is not a format this tool reads ({FORMAT})"]
    if own is None:  # an older format, checked against its own schema first
        if upgraded_source(document) is not None:  # a copy `upgrade` made: read as its source
            document, problems = source_of(document)
            if problems:
                return None, problems
        version, older = document.get("schema_version"), older_format(document)
        if older is None:
            return None, [
                f"$.schema_version: {version!r} (benchmark {document.get('benchmark')!r}) is not "
                f"a report format this tool reads ({known_formats()})"
            ]
        problems = schema_errors(document, older[1])
        if problems:
            return None, problems
    try:
        report = Report.model_validate(document) if own is not None else upgraded(document)
    except ValidationError as exc:
        return None, validation_messages(exc)
    problems = report_problems(report)  # exactly for 2.0, within its rounding for older
    if own is None and report.ours:  # in the names its own file uses
        problems = [p.replace("pct_exact:", "pct_3dp:") for p in problems]
    elif own is None:  # the published formats have one delta: the exact one is read from it
        problems = [p for p in problems if not p.startswith("$.results.vs_fp16_energy_pct_exact:")]
    return (None, problems) if problems else (report, [])


def energy_report_problems(document: Any) -> list[str]:
    """Every reason a document is not a valid energy report (its schema or model, then
    its arithmetic); empty when valid."""
    return parse_report(document)[1]


validation_errors = energy_report_problems  # the same question, by its older name


def sweep_problems(document: Any) -> list[str]:
    """Why a document is not a valid sweep.json; empty when it is."""
    return unsafe_values(document) or sweep_errors(document)


def problems_in(path: str | os.PathLike[str]) -> list[str]:
    """Why a file is not a valid energy report; empty when it is."""
    document, problems = read_document(path)
    return problems if document is None else energy_report_problems(document)
