"""Run one energy_estimate and write its report: the path of a single format, on the
command line and at every point of a sweep (several formats: session_job.py).

Everything that can fail is done before the rename that puts energy.json in place: the
run, the report's validation, its JSON text, the summary and its encoding. After the
rename only share_url.txt (--share, a copy of the report's share_url) and printing
are left, and whether the report was written is read from the file itself (a new file
has a new identity), so an interrupt or a failure at any moment is described truthfully.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ecocompute.boundary.atomic import (
    file_identity,
    write_mode,
    write_text_atomic,
    write_texts_atomic,
)
from ecocompute.boundary.progress import Progress, say
from ecocompute.boundary.user_paths import check_link_into_folder, check_not_an_input
from ecocompute.core.printable import printable
from ecocompute.errors import InputError, RunError
from ecocompute.params import (
    RunParams,
    check_output_dir,
    params_b_from_model_name,
    quality_text_problem,
)
from ecocompute.report.build import build_report
from ecocompute.report.model import Prefetch, Report
from ecocompute.report.schema import require_validator
from ecocompute.report.share import SHARE_FILE, with_share_url
from ecocompute.report.trace_block import FP16_FILE, PRIMARY_FILE, trace_files
from ecocompute.report.write import REPORT_NAME, report_text
from ecocompute.summary.report import render
from ecocompute.task.machine import Machine
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.run import run_energy_estimate


@dataclass(frozen=True)
class Written:
    path: Path
    report: Report
    summary: str  # the human summary, already rendered (and encodable)

    @property
    def document(self) -> dict[str, object]:
        """The report as its file holds it (JSON)."""
        return self.report.model_dump(mode="json")


def check_report_target(target: Path) -> None:
    """What writing a report at target would refuse after the run (a folder in its
    place, a link into a folder that is not there), refused before it: nothing is
    measured. Its folder is the caller's to check (check_output_dir). Raises InputError."""
    check_link_into_folder("output_dir", target)
    try:
        write_mode(target)
    except RunError as exc:
        why = str(exc).removeprefix(f"could not write {target}: ")
        raise InputError("output_dir", os.fspath(target), why) from None


def keep_inputs(params: RunParams, outputs: list[Path]) -> None:
    """No file the run will write is one it reads (--quality_text out/energy.json would be
    replaced by the report). Raises InputError."""
    read = [params.quality_text] if params.quality_text is not None else []
    for output in outputs:
        check_not_an_input("output_dir", output, read)


class ReportJob:
    """One report's life: its target and, from before the run, the identity of whatever
    file was there, so that written() can tell afterwards whether the rename happened."""

    def __init__(self, params: RunParams) -> None:
        self.params = params
        require_validator()  # before anything is measured
        folder = check_output_dir(params.output_dir)
        self.folder_existed = folder.is_dir()
        self.target = folder / REPORT_NAME
        check_report_target(self.target)  # before the run, not after it
        extra = [PRIMARY_FILE, FP16_FILE] if params.power_trace else []
        keep_inputs(params, [self.target, *(folder / n for n in [*extra, SHARE_FILE])])
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
        # Before anything is loaded or measured: never inside a measured window.
        p = self.params
        if p.quality_text is not None and p.quality_probe:
            problem = quality_text_problem(p.quality_text)
            if problem is not None:  # the container's way: the run goes on, no probe
                say(
                    f"quality_text: {printable(p.quality_text)} {problem}; the quality probe "
                    "is skipped"
                )
        prefetched = _prefetch(p, progress, machine) if p.prefetch else None
        outcome = run_energy_estimate(p, progress, machine=machine)
        report = build_report(outcome, command)
        if prefetched is not None and report.provenance is not None:
            provenance = report.provenance.model_copy(update={"prefetch": prefetched})
            report = report.model_copy(update={"provenance": provenance})
        # The link goes in the report before it is checked, so the file and
        # share_url.txt hold the same one.
        link = None
        if p.share:
            report, link = with_share_url(report, p.site)  # unchanged where no link
            if link is None:
                say(
                    f"share: no delta vs FP16 in this report (basis {report.results.basis}); "
                    "no link written"
                )
        text = report_text(report)
        summary = render(report, printable(self.target))  # a path of any bytes prints
        if summary_encoding is not None:
            check_encodable(summary, summary_encoding)
        traces = []  # the trace's CSV files beside the report; the published path has none
        if p.power_trace and isinstance(outcome, MeasuredRun):
            traces = [(self.target.parent / n, csv) for n, csv in trace_files(outcome).items()]
        elif p.power_trace:
            say(NO_TRACE)
        if traces:  # with the report as one: all made before the first rename, traces first
            items = [*traces, (self.target, text)]
            write_texts_atomic(items, create_dir=not self.folder_existed)
        else:
            write_text_atomic(self.target, text, create_dir=not self.folder_existed)
        if link is not None:
            _write_share_file(self.target.parent / SHARE_FILE, link)
        return Written(self.target, report, summary)


NO_TRACE = (
    "power_trace: no trace to record: this figure is derived from the published dataset, "
    "not measured here (power_trace.csv needs a measured run)"
)


def _prefetch(params: RunParams, progress: Progress, machine: Machine | None) -> Prefetch:
    """--prefetch: the site's predicted delta, or one line saying why there is none."""
    from ecocompute.published.prefetch import (
        EstimateInputs,
        answered_line,
        prefetch,
        skipped_line,
    )
    from ecocompute.task.run import arch_before_run

    # the class the run will answer for: --gpu_arch auto is read from NVML's name here,
    # before anything is loaded (a dry run's auto is the headline card's)
    arch = arch_before_run(params, machine)
    spec = params.spec()
    inputs = EstimateInputs(
        model_name=params.model_name,
        params_b=params.params_b or params_b_from_model_name(params.model_name),
        precision=str(params.precision),
        batch_size=params.batch_size,
        gpu_arch=arch,
        unpublished_format=None if spec.published_as_set else spec.label_as_set,
    )
    result = prefetch(params.api_base, inputs)
    if result.predicted_vs_fp16_pct is None:
        say(skipped_line(result))
    else:
        progress(answered_line(result))
    # every part already of its type (published/prefetch.py keeps no other); the
    # record's tuples are the report's lists
    return Prefetch.model_validate(asdict(result), strict=False)


def _write_share_file(path: Path, link: str) -> None:
    """After energy.json is in place: a failure here is one line, never an error, since
    the report (which holds the link as share_url) is already written."""
    try:
        write_text_atomic(path, link + "\n", create_dir=False)
    except RunError as exc:
        say(f"share: {exc}; the link is in energy.json (share_url)")


def check_encodable(summary: str, encoding: str) -> None:
    """Fail now, before the write, if stdout cannot take the summary."""
    try:
        summary.encode(encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        raise RunError(
            f"the summary cannot be printed in this output's encoding ({encoding}: {exc}); "
            "set PYTHONIOENCODING=utf-8 and run again; nothing was written"
        ) from None
