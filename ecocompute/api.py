"""The Python API: what the command line does, as functions that return typed results.

    import ecocompute
    result = ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0", precision="NF4")
    print(result.verdict, result.delta_pct, result.interval_pct, result.basis)
    result.write("outputs/python")          # energy.json (one per format of a session)

estimate() measures on this machine's GPU (NVML) or, where it cannot, gives the
labelled figure derived from the published dataset, exactly as `energy_estimate` does;
it takes the same parameters (keyword arguments named as the flags, without dashes,
each a value of its type), or a RunParams whole (ecocompute.params). Several formats
(precision="NF4,INT4,FP8" or a list) are one session against one FP16 baseline.
sweep() is `ecocompute sweep` and returns the typed Sweep (sweep.json's model);
read_report() reads one report of any format this tool reads as its typed record.

Errors are the project's exception types (ecocompute.errors): InputError for bad input
(the command line's exit 2), RunError for a run that failed (exit 1), ReportInvalid
for a report that fails its own checks. Nothing is installed behind the caller's back:
no signal handler (a Ctrl-C is the caller's KeyboardInterrupt; a write it interrupts
leaves no partial file), no logging configuration, no progress unless asked, and no
environment variable or library setting that outlives the call (those a run needs,
such as inductor's cache folder or quiet progress bars, are put back on the way out).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecocompute.boundary.progress import Progress, library_progress_bars_hidden
from ecocompute.boundary.user_paths import path_text
from ecocompute.core.environment import environment_kept  # first: before torch
from ecocompute.core.printable import printable
from ecocompute.errors import InputError, ReportInvalid, RunError
from ecocompute.report.model import Report

if TYPE_CHECKING:
    from ecocompute.params import RunParams
    from ecocompute.pooling.units import UnitPool
    from ecocompute.results.record import Report as ReportRecord
    from ecocompute.sweeps.document import Sweep


@dataclass(frozen=True)
class FormatResult:
    """One format's answer against FP16 (FP16 alone: its own figures, no delta)."""

    precision: str  # FP16, NF4, INT8, INT4, FP8
    format: str  # the precision, with the library where not its default (INT8-torchao)
    basis: str  # measured | interpolated | extrapolated | unavailable
    energy_per_token_mj: float | None
    fp16_energy_per_token_mj: float | None
    delta_pct: float | None  # energy per token vs FP16, percent (unrounded)
    interval_pct: tuple[float, float] | None  # its paired 95% interval
    verdict: str | None  # saves | costs | inconclusive (measured only)
    n_pairs: int | None
    throughput_tokens_per_s: float | None
    report: Report  # the report (ecocompute.report.model.Report), checked

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write the report as <folder>/energy.json, atomically (checked again). The
        folder is taken as given: an empty one, or one that is not a path (None, bytes),
        is an InputError, never the current folder."""
        from ecocompute.params import check_output_dir
        from ecocompute.report.write import write_report

        return write_report(self.report, check_output_dir(folder))


@dataclass(frozen=True)
class Estimate:
    """The answer of estimate(): one FormatResult per format asked for (a session of
    several shares one FP16 baseline), except those the session's decode regime refused
    while preparing them (refused: format -> why; measured: none, no report; check it
    where several were asked for). The properties give the first measured format's
    figures, the whole answer of a one-format run."""

    formats: tuple[FormatResult, ...]
    refused: Mapping[str, str] = field(default_factory=dict)

    @property
    def basis(self) -> str:
        return self.formats[0].basis

    @property
    def measured(self) -> bool:
        return self.formats[0].basis == "measured"

    @property
    def delta_pct(self) -> float | None:
        return self.formats[0].delta_pct

    @property
    def interval_pct(self) -> tuple[float, float] | None:
        return self.formats[0].interval_pct

    @property
    def verdict(self) -> str | None:
        return self.formats[0].verdict

    @property
    def report(self) -> Report:
        return self.formats[0].report

    def by_format(self) -> dict[str, FormatResult]:
        return {f.format: f for f in self.formats}

    def write(self, folder: str | os.PathLike[str]) -> list[Path]:
        """One format asked for: <folder>/energy.json; a session (several asked for, some
        perhaps refused): <folder>/<format>/energy.json, as the command line lays it out,
        all or none (every report is made in full before the first is put in place; a
        failure leaves every earlier one untouched). Raises RunError (PartlyWritten,
        naming those written, only if a rename fails after others succeeded)."""
        from ecocompute.params import check_output_dir
        from ecocompute.report.write import write_reports

        if len(self.formats) + len(self.refused) == 1:
            return [self.formats[0].write(folder)]
        root = check_output_dir(folder)
        return write_reports([(f.report, root / f.format) for f in self.formats])


def _format_result(report: Report, params: RunParams) -> FormatResult:
    """One format's answer; its name as the command line's folders have it (a report
    with no per-format figures, the no-GPU path's, names it from the run's backend)."""
    res, work = report.results, report.workload
    stats = res.per_format.get(work.precision)
    ci = res.vs_fp16_ci95_pct
    return FormatResult(
        precision=work.precision,
        format=stats.format if stats else params.spec(work.precision).key,
        basis=res.basis,
        energy_per_token_mj=res.energy_per_token_mj,
        fp16_energy_per_token_mj=res.fp16_energy_per_token_mj,
        delta_pct=None if work.precision == "FP16" else res.vs_fp16_energy_pct_exact,
        interval_pct=None if not ci else (ci[0], ci[1]),
        verdict=res.verdict,
        n_pairs=res.n_pairs,
        throughput_tokens_per_s=res.throughput_tokens_per_s,
        report=report,
    )


class _Unset:
    def __repr__(self) -> str:
        return "RunParams' default"


_UNSET: Any = _Unset()  # not given: RunParams' own default (or the RunParams' own value)


# Run parameters estimate() has no use for: it writes nothing and prints only on request.
_NOT_OPTIONS = {
    "model_name": "give the model as estimate()'s first argument",
    "output_dir": "estimate() writes nothing: call .write(folder) on its result",
    "quiet": "estimate() is silent unless progress=True",
    "share": "a command-line option of energy_estimate (it writes share_url.txt)",
    "prefetch": "a command-line option of energy_estimate (it adds the site's prediction)",
    "power_trace": "a command-line option of energy_estimate (it writes power_trace.csv)",
    "formats": 'give a session\'s formats as precision ("NF4,INT4" or a list)',
}


def _params(
    model: str | os.PathLike[str] | RunParams, precision: object, options: Mapping[str, Any]
) -> RunParams:
    """The run's parameters: a RunParams, with any keyword arguments over it, or the
    model (a checkpoint folder may be a path object) and keyword arguments, typed, into
    one (defaults from RunParams alone)."""
    from ecocompute.params import FIELDS, RunParams, check_files

    if isinstance(model, os.PathLike):
        model = os.fspath(model)

    for name, value in options.items():
        if name not in FIELDS or name in _NOT_OPTIONS:
            raise InputError(name, value, _NOT_OPTIONS.get(name, "not an option of estimate()"))
    given = {**options, **({} if precision is _UNSET else {"precision": precision, "formats": ()})}
    if isinstance(model, RunParams):
        _no_command_line_options(model)
        return check_files(dataclasses.replace(model, **given))
    return check_files(RunParams(model_name=model, **given))


_COMMAND_LINE_ONLY = ("share", "prefetch", "power_trace")


def _checked_progress(progress: object) -> bool:
    if not isinstance(progress, bool):  # "no" would print progress: it is truthy
        raise InputError("progress", progress, "True or False")
    return progress


def _output_dir_given(output_dir: str | os.PathLike[str] | None) -> str | os.PathLike[str]:
    if output_dir is None:
        raise InputError(
            "output_dir", None, "the folder the sweep writes its reports and sweep.json into"
        )
    return output_dir


def _no_command_line_options(given: RunParams | Mapping[str, Any]) -> None:
    """share, prefetch and power_trace write files or ask the network: the command
    line's; set in a RunParams or given by name, an InputError."""
    for name in _COMMAND_LINE_ONLY:
        on = given.get(name) if isinstance(given, Mapping) else getattr(given, name)
        if on:
            raise InputError(name, True, _NOT_OPTIONS[name])


def estimate(
    model: str | os.PathLike[str] | RunParams,
    precision: str | Sequence[str] = _UNSET,
    *,
    progress: bool = False,
    machine: Any = None,
    **options: Any,
) -> Estimate:
    """Energy per generated token of `model` at `precision` against FP16, measured on
    this machine's GPU, or the labelled published figure where it cannot be measured.

    model: a Hugging Face id, a local checkpoint folder or synthetic:<preset>; or the
    run's parameters whole, a RunParams (keyword arguments then replace its fields).
    precision: "NF4", "INT8", "INT4", "FP8", "FP16", or several ("NF4,INT4" or a list:
    one session, one FP16 baseline); default: RunParams' (NF4). Other options are
    RunParams' fields, as `energy_estimate --help` names them (iterations=, tokens=,
    batch_size=, decode=, ci_target_pts=, backend=, gpu_arch=, dry_run=, ...), each a
    value of its type (batch_size=4, not "4"). progress: print progress lines on stderr.
    machine: stand-ins for tests (ecocompute.task.machine.Machine). Nothing is written:
    call .write(folder). Raises InputError (naming the field), RunError, ReportInvalid."""
    from ecocompute.report.build import build_report
    from ecocompute.report.write import report_text
    from ecocompute.task.run import run_session, session_refusals

    params, progress = _params(model, precision, options), _checked_progress(progress)
    # nothing outlives the call: a variable a library sets on its first import inside it
    # (inductor's cache folder), the bars the libraries draw themselves unless asked
    with environment_kept(), library_progress_bars_hidden(not progress):
        outcomes = run_session(params, Progress(quiet=not progress), machine=machine)
    results = []
    for outcome in outcomes:
        report = build_report(outcome, None)
        report_text(report)  # checked as every report the command line writes
        results.append(_format_result(report, params))
    return Estimate(tuple(results), session_refusals(outcomes))


def sweep(
    models: Sequence[str] | str,
    precisions: Sequence[str] | str = ("NF4",),
    *,
    output_dir: str | os.PathLike[str] | None = None,
    batch_sizes: Sequence[int] | None = None,
    params: RunParams | None = None,
    progress: bool = False,
    machine: Any = None,
    **options: Any,
) -> Sweep:
    """`ecocompute sweep`: one session per model (and batch size), every report written
    under output_dir, then the size fit or the batch axis, sweep.json and its plot;
    returns the Sweep (ecocompute.sweeps.document.Sweep, sweep.json as a typed model).
    The parameters every point shares: params (a RunParams) or options by name
    (tokens=, iterations=, dry_run=, ... as for estimate()). A point that fails is
    recorded and the others run; then SweepFailed (a RunError) carrying the Sweep.
    Raises InputError before anything runs."""
    from ecocompute.sweeps.sweep import sweep as run_sweep

    output_dir = _output_dir_given(output_dir)
    shared = _sweep_options(params, options, progress)
    with environment_kept():
        done = run_sweep(
            models,  # a text is one list ("gpt-1b", "NF4,INT8"), never its letters
            precisions,
            output_dir,
            options=shared,
            batch_sizes=batch_sizes,
            progress=Progress(quiet=not progress),
            machine=machine,
        )
    if done.failed:
        raise SweepFailed(done)
    return done


def _sweep_options(
    params: RunParams | None, options: Mapping[str, Any], progress: bool
) -> RunParams | Mapping[str, object]:
    """What every point of a sweep shares: params whole (quiet as progress asks), or
    options by name, each of its type as estimate() takes it ("4" for batch_size is
    refused, not read as the command line reads it). Raises InputError."""
    from ecocompute.params import FIELDS, RunParams

    progress = _checked_progress(progress)
    if params is not None and options:
        name = sorted(options)[0]
        raise InputError(name, options[name], "give params= or options by name, not both")
    _no_command_line_options(options)  # as estimate() refuses them
    if params is not None:
        if not isinstance(params, RunParams):
            raise InputError(
                "params", params, "a RunParams (ecocompute.params), or options by name"
            )
        _no_command_line_options(params)
        return dataclasses.replace(params, quiet=not progress)
    # each of its type, as RunParams takes it (the sweep itself refuses unknown names and
    # the fields it sets per point)
    per_point = {"model_name", "precision", "formats", "output_dir", "quiet"}
    typed = {n: v for n, v in options.items() if n in FIELDS and n not in per_point}
    RunParams(**typed)  # raises InputError naming the field
    return {**options, "quiet": not progress}


def prompt_sweep(
    models: Sequence[str],
    prompt_lengths: Sequence[int],
    precisions: Sequence[str] = ("NF4",),
    *,
    output_dir: str | os.PathLike[str] | None = None,
    batch_sizes: Sequence[int] | None = None,
    params: RunParams | None = None,
    progress: bool = False,
    machine: Any = None,
    **options: Any,
) -> dict[int, Sweep]:
    """`ecocompute sweep --prompt_tokens 128,1024,...`: sweep() once per prompt length in
    one pass, each length's reports and sweep.json under <output_dir>/p<length>/; returns
    each length's Sweep. A point that fails is recorded; then SweepFailed carrying the
    first length's Sweep that has one. Raises InputError before anything runs."""
    from ecocompute.sweeps.plan import checked_prompt_lengths
    from ecocompute.sweeps.sweep import prompt_sweep as run_prompt_sweep

    output_dir = _output_dir_given(output_dir)
    shared = _sweep_options(params, options, progress)
    with environment_kept():
        done = run_prompt_sweep(
            models,  # a text is one list, never its letters (sweeps.plan.names_list)
            precisions,
            output_dir,
            checked_prompt_lengths(prompt_lengths),
            options=shared,
            batch_sizes=batch_sizes,
            progress=Progress(quiet=not progress),
            machine=machine,
        )
    failed = [one for one in done.values() if one.failed]
    if failed:
        raise SweepFailed(failed[0])
    return done


class SweepFailed(RunError):
    """A sweep whose points did not all finish: .sweep is its Sweep (sweep.json is
    written), the failed points in .sweep.failed with why."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        super().__init__(
            f"{len(sweep.failed)} of {len(sweep.runs)} run(s) failed; the others were fitted"
        )


def read_report(path: str | os.PathLike[str]) -> ReportRecord:
    """One report file of any format this tool reads (1.0 and 1.1 of the published
    container, this tool's 1.2, 1.3, 1.4 and 2.0) as its typed record
    (ecocompute.results.record.Report: what aggregate, check and the plots read).
    Raises ReportInvalid with every reason when it is not a valid report, InputError
    when path is not a path (None, bytes, a number)."""
    from ecocompute.results.collect import Invalid, read_one

    one = read_one(_path("path", path))
    if isinstance(one, Invalid):
        raise ReportInvalid(one.problems, read_from=printable(os.fspath(path)))
    return one


def pool_units(*paths: str | os.PathLike[str]) -> list[UnitPool]:
    """Measured reports under paths (folders searched recursively), grouped as aggregate
    groups them, each group pooled across its GPU units: every unit's own estimate
    (reports of one unit combined, never counted twice), the random-effects pool with
    the between-unit spread and a prediction interval for a unit not yet measured, and
    the same per board part or VBIOS where the units differ in it, and (from four units)
    the pool without each unit in turn, most influential first. A list of
    ecocompute.pooling.units.UnitPool; invalid files are skipped (aggregate lists them).
    Raises InputError without a path, or for one that is not a path or does not exist."""
    from ecocompute.pooling.groups import group_reports
    from ecocompute.pooling.units import pool_units as pool
    from ecocompute.results.collect import read_reports

    if not paths:
        raise InputError("paths", "()", "at least one report or folder")
    given = [_path("paths", p) for p in paths]
    for p in given:
        if not os.path.lexists(p):
            raise InputError("paths", p, "does not exist")
    reports, _invalid = read_reports(given)
    return pool(group_reports(reports))


def _path(field: str, value: object) -> str:
    return path_text(field, value, "a report's or folder's path (str or os.PathLike)")
