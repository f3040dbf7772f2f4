"""Running a sweep's points one after another on this machine (jobs/report_job.py and
jobs/session_job.py, as energy_estimate does), the models of one model's points
kept loaded across its batch sizes; and reading the reports of an earlier sweep
(--fit_only)."""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ecocompute.boundary.interrupts import check as check_interrupt
from ecocompute.boundary.progress import Progress
from ecocompute.errors import DecodeCaptureFailed, EcoComputeError
from ecocompute.jobs.report_job import ReportJob, Written
from ecocompute.jobs.session_job import SessionJob, SessionPartlyWritten
from ecocompute.llm.resident import ResidentModels
from ecocompute.params import RunParams
from ecocompute.results.collect import read_reports
from ecocompute.sweeps.document import RunRecord
from ecocompute.sweeps.plan import SWEEP_FORMATS, Plan, compiles_ahead
from ecocompute.sweeps.records import answered, new_record, written_record
from ecocompute.task.machine import Machine


def run_sweep(
    the_plan: Plan,
    progress: Progress,
    *,
    machine: Machine | None = None,
    command: Sequence[str] | None = None,
) -> list[RunRecord]:
    """Run and write every point's reports (through jobs.report_job / jobs.session_job, as
    energy_estimate does); a point that fails is recorded and the sweep goes on. The
    points of one model share its loaded models. machine: the real one unless a test
    hands in stand-ins."""
    from ecocompute.task import run as estimate_run  # this_machine, at call time

    base = machine or estimate_run.this_machine()
    resident = ResidentModels(base.backend)
    shared = dataclasses.replace(base, backend=resident)
    records: list[RunRecord] = []
    total = len(the_plan.runs)
    ahead = compiles_ahead(the_plan)
    if ahead:
        progress(ahead)
    try:
        for i, params in enumerate(the_plan.runs, 1):
            check_interrupt()  # a safe point: between points
            formats = ",".join(map(str, params.session_formats)) or str(params.precision)
            progress(
                f"sweep {i}/{total}: {params.model_name} {formats} batch {params.batch_size} "
                f"-> {params.output_dir}"
            )
            records += run_point(params, shared, command, the_plan.output_dir, progress, i, total)
            _free_device_memory()
    finally:
        resident.clear()
        _free_device_memory()
    return records


def run_point(
    params: RunParams,
    machine: Machine,
    command: Sequence[str] | None,
    root: Path,
    progress: Progress,
    i: int,
    total: int,
) -> list[RunRecord]:
    """One point's records, one per format (each failed, with why, if the point failed;
    a session of which some reports were written before a rename failed: those
    answered, the others failed; a format the session's regime refused: failed, with
    the refusal, beside the others' answers)."""
    singles = [
        dataclasses.replace(params, precision=f, formats=()) for f in params.session_formats
    ] or [params]
    started = time.monotonic()
    argv = None if command is None else list(command)
    error: str | None = None
    failed: str | None = None  # the format a capture failure named
    answers: list[Written | None] = []  # one per format, None where not written
    refused: Mapping[str, str] = {}  # formats the session's regime refused, and why
    try:
        if len(singles) > 1:
            job = SessionJob(params)
            done = job.run(Progress(params.quiet), machine=machine, command=argv)
            refused, answers = done.refused, _by_target(job, done.reports)
        else:
            one = ReportJob(params).run(Progress(params.quiet), machine=machine, command=argv)
            answers = [one]
    except SessionPartlyWritten as exc:  # some of its reports are in place
        error = str(exc)
        answers = _by_target(job, exc.reports)
    except EcoComputeError as exc:  # this point failed; the others still answer
        error = str(exc)
        answers = [None] * len(singles)
        failed = exc.label if isinstance(exc, DecodeCaptureFailed) else None
    if error is not None:
        progress(f"sweep {i}/{total}: {params.model_name} FAILED: {error}")
    elapsed = round(time.monotonic() - started, 2)
    records = []
    for p, w in zip(singles, answers, strict=True):
        if w is None:
            why = refused.get(p.spec().key)
            why = f"not measured: {why}" if why else _format_error(error, str(p.precision), failed)
            records.append(new_record(p, error=why))
            continue
        report = written_record(w.path, w.report)
        records.append(
            answered(p.model_name, str(p.precision), report, root, {"elapsed_s": elapsed})
        )
    return records


def _by_target(job: SessionJob, written: Sequence[Written]) -> list[Written | None]:
    """A session's written reports in the order of its formats, None where none was."""
    by_path = {w.path: w for w in written}
    return [by_path.get(target) for target in job.targets.values()]


def _format_error(error: str | None, precision: str, failed: str | None) -> str | None:
    """Why one format of a point has no report: the point's error, or, where one other
    format's capture failed and stopped its session, that this one was not measured."""
    if error is None or failed is None or failed in (precision, "FP16"):
        return error
    return f"not measured: the session stopped when {failed} failed ({error})"


def _free_device_memory() -> None:
    """Drop the last run's models before the next loads (torch only if already loaded)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def existing_records(
    output_dir: Path, sources: Sequence[str | os.PathLike[str]] | None = None
) -> tuple[list[RunRecord], list[str]]:
    """For a fit of reports already written: the reports under sources (default: under
    output_dir), as run records, and the files skipped (each "path: why")."""
    reports, invalid = read_reports(list(sources) if sources else [output_dir])
    # in the order a sweep runs them: by model, batch size (a number, not text), format
    rank = {fmt: i for i, fmt in enumerate(SWEEP_FORMATS)}
    reports = sorted(
        reports, key=lambda r: (r.model, r.batch_size, rank.get(r.precision, len(rank)))
    )
    records = [answered(r.model, r.precision, r, output_dir) for r in reports]
    skipped = [f"{bad.path}: {bad.problems[0]}" for bad in invalid]
    return records, skipped
