"""Every check a report file must pass, in one place: its schema, then what the schema
cannot say (report/numbers.py: finite numbers of a sane size, valid text, shallow
nesting; report/consistency.py: figures that recompute from its trials).

Used by the writer (a report that would fail is an error, never a file), by `validate`
and by every reader of reports (results/collect.py), so all of them agree.
"""

from __future__ import annotations

from typing import Any

from ecocompute.report.consistency import consistency_problems
from ecocompute.report.numbers import unsafe_values
from ecocompute.report.schema import (
    PUBLISHED_PRECISIONS,
    published_facts_errors,
    sweep_errors,
    validation_errors,
)


def energy_report_problems(document: Any, *, thorough: bool = False) -> list[str]:
    """Why a document is not a valid energy report; empty when it is. The arithmetic is
    checked only on a document of the right shape and sane values. thorough: the schema
    by jsonschema alone (the writer's check), not its compiled fast path."""
    problems = unsafe_values(document)
    if problems:
        return problems
    problems = validation_errors(document, thorough=thorough)
    if problems:
        return problems
    return consistency_problems(document)


def written_report_problems(document: Any) -> list[str]:
    """What the writer checks before a report becomes a file: everything `validate`
    checks, and, where its precision is one the published format names, that the
    published container's consumers accept it (the published schema's facts)."""
    problems = energy_report_problems(document, thorough=True)
    if problems or document["workload"]["precision"] not in PUBLISHED_PRECISIONS:
        return problems
    facts = published_facts_errors(document, thorough=True)
    return [f"published format: {p}" for p in facts]


def sweep_problems(document: Any) -> list[str]:
    """Why a document is not a valid sweep.json; empty when it is."""
    return unsafe_values(document) or sweep_errors(document)
