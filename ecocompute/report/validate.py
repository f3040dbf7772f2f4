"""`ecocompute validate`: check report files against the schema, one line per problem."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from ecocompute.report.document import validation_errors

MAX_REPORT_BYTES = 64 * 2**20  # far above any real report; refuses to parse a huge file


def problems_in(path: str) -> list[str]:
    """Why a file is not a valid report; empty when it is."""
    file = Path(path)
    try:
        size = file.stat().st_size
    except OSError as exc:
        return [f"cannot read: {exc.strerror}"]
    if not file.is_file():
        return ["not a file"]
    if size > MAX_REPORT_BYTES:
        return [f"too large to be a report ({size} bytes > {MAX_REPORT_BYTES})"]
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ["not UTF-8 text"]
    except OSError as exc:
        return [f"cannot read: {exc.strerror}"]
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]
    except RecursionError:
        return ["not a report (JSON nested too deeply)"]
    if not isinstance(document, dict):
        return [f"not a report: top level is a JSON {type(document).__name__}, not an object"]
    return validation_errors(document)


def validate_files(paths: Iterable[str], out: TextIO) -> int:
    """Print one line per file (and per problem); 0 when every file is valid, else 1."""
    status = 0
    for path in paths:
        problems = problems_in(path)
        if problems:
            status = 1
            for problem in problems:
                print(f"{path}: INVALID {problem}", file=out)
        else:
            print(f"{path}: valid", file=out)
    return status
