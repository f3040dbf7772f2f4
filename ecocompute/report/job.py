"""Run one energy_estimate and write its report: the one path energy_estimate and every
point of a sweep take.

Everything that can fail is done before the rename that puts energy.json in place: the
run, the report's validation, its JSON text, the summary and its encoding. After the
rename only printing is left, and whether the report was written is read from the
file itself (a new file has a new identity), so an interrupt or a failure at any
moment is described truthfully.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.errors import RunError
from ecocompute.estimate.machine import Machine
from ecocompute.estimate.run import run_energy_estimate
from ecocompute.params import RunParams, check_output_dir
from ecocompute.progress import Progress
from ecocompute.report.atomic import file_identity, write_text_atomic
from ecocompute.report.build import build_report
from ecocompute.report.summary import render
from ecocompute.report.write import REPORT_NAME, report_text


@dataclass(frozen=True)
class Written:
    path: Path
    report: dict[str, Any]
    summary: str  # the human summary, already rendered (and encodable)


class ReportJob:
    """One report's life: its target and, from before the run, the identity of whatever
    file was there, so that written() can tell afterwards whether the rename happened."""

    def __init__(self, params: RunParams) -> None:
        self.params = params
        folder = check_output_dir(params.output_dir)
        self.folder_existed = folder.is_dir()
        self.target = folder / REPORT_NAME
        self._before = file_identity(self.target)

    def written(self) -> bool:
        """True once this job's report has replaced whatever was at the target."""
        return file_identity(self.target) != self._before

    def run(
        self,
        progress: Progress,
        *,
        machine: Machine | None = None,
        command: list[str] | None = None,
        summary_encoding: str | None = None,
    ) -> Written:
        """Run, build, validate, render; then write. Raises InputError, RunError or
        ReportInvalid with nothing written, or an interrupt (see written())."""
        outcome = run_energy_estimate(self.params, progress, machine=machine)
        report = build_report(outcome, command)
        text = report_text(report)
        summary = render(report, str(self.target))
        if summary_encoding is not None:
            _check_encodable(summary, summary_encoding)
        write_text_atomic(self.target, text, create_dir=not self.folder_existed)
        return Written(self.target, report, summary)


def _check_encodable(summary: str, encoding: str) -> None:
    """Fail now, before the write, if stdout cannot take the summary."""
    try:
        summary.encode(encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        raise RunError(
            f"the summary cannot be printed in this output's encoding ({encoding}: {exc}); "
            "set PYTHONIOENCODING=utf-8 and run again; nothing was written"
        ) from None
