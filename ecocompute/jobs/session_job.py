"""A session of several formats written as one report per format: every report is
built, validated and rendered before the first is written, then each goes in place
atomically in <output_dir>/<format>/energy.json. What was written is read from the
files themselves (as jobs/report_job.py does for one report), so an interrupt or a failure
between two renames is described truthfully: those written are complete and valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ecocompute.boundary.progress import Progress
from ecocompute.boundary.user_paths import check_link_into_folder
from ecocompute.core.printable import printable
from ecocompute.jobs.report_job import Written, check_encodable
from ecocompute.params import RunParams, check_output_dir
from ecocompute.report.atomic import file_identity, write_text_atomic
from ecocompute.report.build import build_report
from ecocompute.report.schema import require_validator
from ecocompute.report.summary import render_session
from ecocompute.report.write import REPORT_NAME, report_text
from ecocompute.task.machine import Machine
from ecocompute.task.run import run_session


@dataclass(frozen=True)
class SessionWritten:
    reports: tuple[Written, ...]  # one per format, in the order given
    summary: str  # the session's summary, already rendered (and encodable)

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
            check_link_into_folder("output_dir", target)
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
        write them one by one. Raises InputError, RunError or ReportInvalid with nothing
        written, or an interrupt (see written())."""
        outcomes = run_session(self.params, progress, machine=machine)
        reports = [build_report(outcome, command) for outcome in outcomes]
        texts = [report_text(report) for report in reports]  # every one validated first
        paths = list(self.targets.values())
        summary = render_session(reports, [printable(p) for p in paths])  # any bytes print
        if summary_encoding is not None:
            check_encodable(summary, summary_encoding)
        written = []
        for report, text, path in zip(reports, texts, paths, strict=True):
            write_text_atomic(path, text, create_dir=True)
            written.append(Written(path, report, ""))
        return SessionWritten(tuple(written), summary)
