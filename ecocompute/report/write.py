"""Writing energy.json: validated first (an invalid report is an error, never a file),
then written atomically (temp file + rename: no partial file, an earlier one untouched)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ecocompute.errors import ReportInvalid
from ecocompute.report.atomic import write_text_atomic
from ecocompute.report.checks import written_report_problems
from ecocompute.report.numbers import dumps_strict

REPORT_NAME = "energy.json"


def check_for_writing(report: dict[str, Any]) -> None:
    """Raises ReportInvalid when the report fails any check `validate` makes (schema,
    finite numbers of a sane size, its own arithmetic) or one the published format's
    consumers make (report/checks.py)."""
    problems = written_report_problems(report)
    if problems:
        raise ReportInvalid(problems)


def report_text(report: dict[str, Any]) -> str:
    """The report as the file holds it, checked first (check_for_writing)."""
    check_for_writing(report)
    return dumps_strict(report, indent=2, sort_keys=False) + "\n"


def write_report(
    report: dict[str, Any], output_dir: str | os.PathLike[str], *, create_dir: bool = True
) -> Path:
    """Validate, then write <output_dir>/energy.json atomically.

    create_dir False: do not recreate an output folder that existed at the start of the
    run and has vanished since (see atomic.atomic_path).
    Raises ReportInvalid (nothing written) or RunError (the folder could not take the
    file; the temp file is removed and any earlier energy.json is left untouched).
    """
    text = report_text(report)
    return write_text_atomic(Path(output_dir) / REPORT_NAME, text, create_dir=create_dir)
