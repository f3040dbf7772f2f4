"""`ecocompute upgrade`: reports of this tool's older formats copied into today's
published envelope (report/envelope.py), each source left as it is.

Each energy.json found (a folder is searched recursively, boundary/finding.py) is one
result: upgraded (the copy passes the published container's strict 1.3 schema), upgraded
but not a strict 1.3 report for a reason its own figures state (a precision that schema
does not name, INT4 or FP8; a rate below Protocol v1.1's 10 Hz floor; that schema
refuses it for that alone), already current (format 2.0, or a copy made before: copied
byte for byte, with the power-trace files it names), or failed (unreadable, invalid, not
a report of ours, or not written: nothing is written for it). A copy is checked before
it is written atomically: read back by our reader, as its source's format
(report/read.py), and against the published schemas where its precision allows. The
copy's path beneath the output folder is the source's relative to the current folder,
or, for a source outside it, its absolute path less the root (as tar names members).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ecocompute.boundary.atomic import write_texts_atomic
from ecocompute.boundary.user_paths import file_key
from ecocompute.core.json_types import JsonObject
from ecocompute.core.printable import printable
from ecocompute.errors import RunError
from ecocompute.params import check_output_dir
from ecocompute.report.envelope import to_current, upgraded_source
from ecocompute.report.files import found_in, listed, read_document_text
from ecocompute.report.model import FORMAT, Report
from ecocompute.report.numbers import NotReportJson, dumps_strict, loads_strict
from ecocompute.report.read import parse_report
from ecocompute.report.schema import (
    PUBLISHED_MIN_RATE_HZ,
    PUBLISHED_PRECISIONS,
    older_format,
    published_13_errors,
    published_facts_errors,
)
from ecocompute.report.write import REPORT_NAME

Outcome = Literal["upgraded", "not strict 1.3", "already current", "failed"]


class Upgrade(BaseModel):
    """What became of one source: its copy, or why there is none."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    outcome: Outcome
    target: str | None = None  # the copy written; None when it failed
    from_format: str | None = None  # the source's format, as provenance.upgraded_from names it
    why: tuple[str, ...] = ()  # failed: every reason; not strict 1.3: the reasons
    not_copied: tuple[str, ...] = ()  # power-trace files it names, not copied beside it (why)

    @property
    def ok(self) -> bool:
        return self.outcome != "failed"

    def line(self) -> str:
        if self.outcome == "failed":
            return printable(f"{self.source}: NOT UPGRADED {listed(self.why)}")
        head = f"{self.source} -> {self.target}: "
        if self.outcome == "already current":
            copy = f"a copy upgraded from {self.from_format}"
            what = f"format {FORMAT}" if self.from_format == FORMAT else copy
            head += f"already current ({what}), copied unchanged"
        else:
            head += f"upgraded from {self.from_format}"
        if self.not_copied:
            head += f" (its power trace not copied: {', '.join(self.not_copied)})"
        if self.outcome == "not strict 1.3" or self.why:
            return printable(f"{head}; not a strict 1.3 report: {'; '.join(self.why)}")
        return printable(f"{head}; passes the published strict 1.3 schema")


def upgrade_reports(
    paths: Sequence[str | os.PathLike[str]], output_dir: str | os.PathLike[str]
) -> list[Upgrade]:
    """One result per report found under paths (each file once), plus a failed one for
    each folder that could not be searched or holds no report. Raises InputError when
    output_dir is not a folder that can be written or made (nothing done)."""
    out = check_output_dir(output_dir)
    found, missing = found_in(paths, (REPORT_NAME,))
    results = [Upgrade(source=p, outcome="failed", why=(why,)) for p, why in missing]
    sources = {os.path.realpath(p) for p in found}
    identities = {file_key(p) for p in found} - {None}
    targets: dict[Path, Path] = {}
    for path in found:
        target = out / mirrored(path)
        clash = targets.setdefault(target, path)
        if clash != path:
            why = f"its copy {target} would also be the copy of {clash}: name them apart"
        elif os.path.realpath(target) in sources or file_key(target) in identities:
            why = f"its copy {target} would replace a file read: name another --output_dir"
        else:
            results.append(upgrade_file(path, target))
            continue
        results.append(Upgrade(source=str(path), outcome="failed", why=(why,)))
    return results


def mirrored(path: Path) -> Path:
    """A source's path beneath the output folder: relative to the current folder where
    it lies under it, else its absolute path less the root."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute.relative_to(absolute.anchor)


def upgrade_file(source: Path, target: Path) -> Upgrade:
    """source's copy in today's envelope, checked, then written atomically as target."""
    read, problems = read_document_text(source)
    if read is None:
        return Upgrade(source=str(source), outcome="failed", why=tuple(problems))
    text, document = read
    outcome: Outcome = "upgraded"
    if "ecocompute_format" in document or upgraded_source(document) is not None:
        outcome, from_format = "already current", upgraded_source(document) or FORMAT
    else:
        older = older_format(document)
        _, problems = parse_report(document)
        if not problems and older is not None and not older[0].startswith("ecocompute "):
            version = document.get("schema_version")
            problems = [
                f"a report of the published container's {version}, not of this tool's older "
                "formats: nothing to upgrade"
            ]
        if problems:
            return Upgrade(source=str(source), outcome="failed", why=tuple(problems))
        from_format = str(document["schema_version"])
        try:
            text = dumps_strict(to_current(document), indent=2) + "\n"
        except NotReportJson as exc:
            return Upgrade(source=str(source), outcome="failed", why=(str(exc),))
    copy = loads_strict(text)
    problems, reasons = copy_problems(copy)
    if problems:
        return Upgrade(source=str(source), outcome="failed", why=tuple(problems))
    if reasons and outcome == "upgraded":
        outcome = "not strict 1.3"
    traces, not_copied = _traces_beside(source, target, parse_report(copy)[0])
    try:
        written = write_texts_atomic([(target, text), *traces])[0]
    except RunError as exc:
        return Upgrade(source=str(source), outcome="failed", why=(str(exc),))
    return Upgrade(
        source=str(source),
        outcome=outcome,
        target=str(written),
        from_format=from_format,
        why=tuple(reasons),
        not_copied=tuple(not_copied),
    )


def _traces_beside(
    source: Path, target: Path, report: Report | None
) -> tuple[list[tuple[Path, str]], list[str]]:
    """The power-trace files the report names, read from beside it to go beside its copy,
    and each one that cannot be, with why (a name that is not a file's beside it, too)."""
    traces: list[tuple[Path, str]] = []
    not_copied: list[str] = []
    block = None if report is None else report.power_trace
    for name in dict.fromkeys(f.file for f in (block.files if block else [])):
        path = source.parent / name
        if Path(name).name != name or name in (".", ".."):
            not_copied.append(f"{name} (not a file's name beside the report)")
        elif not path.is_file():  # nothing there, or what would block when read (a FIFO)
            not_copied.append(f"{name} (no such file beside the report)")
        else:
            try:
                traces.append((target.parent / name, path.read_text("utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                not_copied.append(f"{name} ({getattr(exc, 'strerror', None) or exc})")
    return traces, not_copied


def copy_problems(document: JsonObject) -> tuple[list[str], list[str]]:
    """(why a copy may not be written, why the strict 1.3 schema cannot take it though
    it is sound). Read back by our reader; then the published schemas, where the
    precision is one they name; a precision they do not name, or a rate below the
    protocol's floor, is a reason of the second kind only when it is all that the
    strict schema refuses."""
    report, problems = parse_report(document)
    if report is None:
        return problems, []
    reasons = not_strict_reasons(report)
    tolerated = tuple(path for path, _ in reasons)
    problems = [
        f"published 1.3: {p}"
        for p in published_13_errors(document, thorough=True)
        if not p.startswith(tolerated)
    ]
    if report.workload.precision in PUBLISHED_PRECISIONS:
        problems += [f"published format: {p}" for p in published_facts_errors(document)]
    return problems, [why for _, why in reasons]


def not_strict_reasons(report: Report) -> list[tuple[str, str]]:
    """(the field, why) for each fact of a report that the strict 1.3 schema refuses."""
    reasons = []
    precision = report.workload.precision
    if precision not in PUBLISHED_PRECISIONS:
        named = ", ".join(PUBLISHED_PRECISIONS)
        why = f"its precision {precision} is not one that schema names ({named})"
        reasons.append(("$.workload.precision:", why))
    rate = report.measurement.sample_rate_hz
    if rate < PUBLISHED_MIN_RATE_HZ:
        why = f"sampled at {rate} Hz, below Protocol v1.1's floor of {PUBLISHED_MIN_RATE_HZ} Hz"
        reasons.append(("$.measurement.sample_rate_hz:", why))
    return reasons
