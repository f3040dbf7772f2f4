"""A session of several formats written as one report per format: every report is
built, validated and rendered before the first is written, then each goes in place
in <output_dir>/<format>/energy.json, all or none (boundary/atomic.py write_texts_atomic:
every temp file made before the first rename, no signal acted on between renames). What
was written is read from the files themselves (as jobs/report_job.py does for one
report), so an interrupt is described truthfully.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ecocompute.boundary.atomic import file_identity, write_texts_atomic
from ecocompute.boundary.progress import Progress
from ecocompute.core.printable import printable
from ecocompute.errors import InputError, PartlyWritten
from ecocompute.jobs.report_job import (
    Written,
    check_encodable,
    check_report_target,
    keep_inputs,
)
from ecocompute.params import RunParams, check_output_dir
from ecocompute.report.build import build_report
from ecocompute.report.schema import require_validator
from ecocompute.report.write import REPORT_NAME, report_text
from ecocompute.summary.session import render_session
from ecocompute.task.machine import Machine
from ecocompute.task.run import run_session, session_refusals


@dataclass(frozen=True)
class SessionWritten:
    reports: tuple[Written, ...]  # one per format measured, in the order given
    summary: str  # the session's summary, already rendered (and encodable)
    # the formats the regime refused (none written for them), and why
    refused: Mapping[str, str] = field(default_factory=dict)

    @property
    def paths(self) -> list[Path]:
        return [w.path for w in self.reports]


class SessionJob:
    """The reports of one session: their targets and, from before the run, what was
    at each, so that written() can tell afterwards which renames happened."""

    def __init__(self, params: RunParams) -> None:
        self.params = params
        require_validator()  # before anything is measured
        folder = check_output_dir(params.output_dir)
        self.targets = {
            str(params.spec(f)): folder / params.spec(f).key / REPORT_NAME
            for f in params.session_formats
        }
        for target in self.targets.values():  # as ReportJob: before the run, not after
            check_output_dir(target.parent)  # a format's folder: a file, a dangling link
            check_report_target(target)
        real = [os.path.realpath(t) for t in self.targets.values()]
        if len(set(real)) < len(real):  # links: one format's report would replace another's
            raise InputError(
                "output_dir", os.fspath(folder), "two formats' energy.json lead to one file"
            )
        keep_inputs(params, list(self.targets.values()))
        self._before = {key: file_identity(path) for key, path in self.targets.items()}

    def written(self) -> list[Path]:
        """The reports this job has put in place so far."""
        return [p for k, p in self.targets.items() if file_identity(p) != self._before[k]]

    def run(
        self,
        progress: Progress,
        *,
        machine: Machine | None = None,
        command: list[str] | None = None,
        summary_encoding: str | None = None,
    ) -> SessionWritten:
        """Run the session, build and validate every report, render the summary; then
        write them all or none. Raises InputError, RunError or ReportInvalid with nothing
        written, PartlyWritten (a RunError) naming those written when a rename failed
        after others, or an interrupt (see written())."""
        outcomes = run_session(self.params, progress, machine=machine)
        reports = [build_report(outcome, command) for outcome in outcomes]
        texts = [report_text(report) for report in reports]  # every one validated first
        paths = [self.targets[str(o.params.spec())] for o in outcomes]  # refused: none
        refused = session_refusals(outcomes)
        summary = render_session(reports, [printable(p) for p in paths])  # any bytes print
        if summary_encoding is not None:
            check_encodable(summary, summary_encoding)
        # All or none: every report made in full beside its target before the first
        # rename (a folder in one's place, a full disk: none written, every earlier
        # one untouched); PartlyWritten names those in place if a rename fails.
        written = [Written(p, r, "") for p, r in zip(paths, reports, strict=True)]
        try:
            write_texts_atomic(list(zip(paths, texts, strict=True)), create_dir=True)
        except PartlyWritten as exc:
            raise SessionPartlyWritten(exc, [w for w in written if w.path in exc.written]) from None
        return SessionWritten(tuple(written), summary, refused)


class SessionPartlyWritten(PartlyWritten):
    """A session's reports of which some were put in place before a rename failed:
    .reports are those written (complete and valid), as Written."""

    def __init__(self, cause: PartlyWritten, reports: list[Written]) -> None:
        super().__init__(cause.failed, cause.why, cause.written, cause.not_written)
        self.reports = tuple(reports)
