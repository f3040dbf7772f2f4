"""The Python API: what the command line does, as functions that return typed results.

    import ecocompute
    result = ecocompute.estimate("TinyLlama/TinyLlama-1.1B-Chat-v1.0", precision="NF4")
    print(result.verdict, result.delta_pct, result.interval_pct, result.basis)
    result.write("outputs/python")          # energy.json (one per format of a session)

estimate() measures on this machine's GPU (NVML) or, where it cannot, gives the
labelled figure derived from the published dataset, exactly as `energy_estimate` does;
it takes the same options (keyword arguments named as the flags, without dashes).
Several formats (precision="NF4,INT4,FP8" or a list) are one session against one FP16
baseline. sweep() is `ecocompute sweep` and returns the typed Sweep (sweep.json's
model); read_report() reads one report of any format this tool reads as its typed
record.

Errors are the project's exception types (ecocompute.errors): InputError for bad input
(the command line's exit 2), RunError for a run that failed (exit 1), ReportInvalid
for a report that fails its own checks. Nothing is installed behind the caller's back:
no signal handler (a Ctrl-C is the caller's KeyboardInterrupt; a write it interrupts
leaves no partial file), no logging configuration, no progress unless asked, and no
environment variable or library setting that outlives the call (those a run needs,
such as inductor's cache folder or quiet progress bars, are put back on the way out).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecocompute.boundary.progress import Progress
from ecocompute.errors import InputError, ReportInvalid, RunError

if TYPE_CHECKING:
    from ecocompute.params import RunParams
    from ecocompute.sweeps.document import Sweep


@dataclass(frozen=True)
class FormatResult:
    """One format's answer against FP16 (FP16 alone: its own figures, no delta)."""

    precision: str  # FP16, NF4, INT8, INT4, FP8
    format: str  # the precision, with the library where not its default (INT8-torchao)
    basis: str  # measured | interpolated | extrapolated | unavailable
    energy_per_token_mj: float | None
    fp16_energy_per_token_mj: float | None
    delta_pct: float | None  # energy per token vs FP16, percent (3 decimals)
    interval_pct: tuple[float, float] | None  # its paired 95% interval
    verdict: str | None  # saves | costs | inconclusive (measured only)
    n_pairs: int | None
    throughput_tokens_per_s: float | None
    report: dict[str, Any]  # the energy.json document, validated

    def write(self, folder: str | os.PathLike[str]) -> Path:
        """Write the report as <folder>/energy.json, atomically (validated again)."""
        from ecocompute.report.write import write_report

        return write_report(self.report, folder)


@dataclass(frozen=True)
class Estimate:
    """The answer of estimate(): one FormatResult per format asked for (a session of
    several shares one FP16 baseline). The properties give the first format's figures,
    the whole answer of a one-format run."""

    formats: tuple[FormatResult, ...]

    def _first(self) -> FormatResult:
        return self.formats[0]

    @property
    def basis(self) -> str:
        return self._first().basis

    @property
    def measured(self) -> bool:
        return self._first().basis == "measured"

    @property
    def delta_pct(self) -> float | None:
        return self._first().delta_pct

    @property
    def interval_pct(self) -> tuple[float, float] | None:
        return self._first().interval_pct

    @property
    def verdict(self) -> str | None:
        return self._first().verdict

    @property
    def report(self) -> dict[str, Any]:
        return self._first().report

    def by_format(self) -> dict[str, FormatResult]:
        return {f.format: f for f in self.formats}

    def write(self, folder: str | os.PathLike[str]) -> list[Path]:
        """One format: <folder>/energy.json; a session: <folder>/<format>/energy.json."""
        if len(self.formats) == 1:
            return [self.formats[0].write(folder)]
        return [f.write(Path(folder) / f.format) for f in self.formats]


def _format_result(report: dict[str, Any]) -> FormatResult:
    res, work = report["results"], report["workload"]
    precision = str(work["precision"])
    stats = (res.get("per_format") or {}).get(precision) or {}
    delta = res.get("vs_fp16_energy_pct_3dp", res.get("vs_fp16_energy_pct"))
    ci = res.get("vs_fp16_ci95_pct")
    return FormatResult(
        precision=precision,
        format=str(stats.get("format", precision)),
        basis=str(res["basis"]),
        energy_per_token_mj=res.get("energy_per_token_mj"),
        fp16_energy_per_token_mj=res.get("fp16_energy_per_token_mj"),
        delta_pct=None if precision == "FP16" else delta,
        interval_pct=None if not ci else (float(ci[0]), float(ci[1])),
        verdict=res.get("verdict"),
        n_pairs=res.get("n_pairs"),
        throughput_tokens_per_s=res.get("throughput_tokens_per_s"),
        report=report,
    )


def _flags(model: str, precision: str | Sequence[str], options: Mapping[str, Any]) -> dict:
    from ecocompute.params import FIELDS

    unknown = sorted(set(options) - set(FIELDS))
    if unknown:
        raise InputError(unknown[0], options[unknown[0]], "not an option of estimate()")
    chosen = precision if isinstance(precision, str) else ",".join(precision)
    return {**options, "model_name": model, "precision": chosen}


def estimate(
    model: str,
    precision: str | Sequence[str] = "NF4",
    *,
    batch_size: int = 1,
    decode: str = "eager",
    progress: bool = False,
    machine: Any = None,
    **options: Any,
) -> Estimate:
    """Energy per generated token of `model` at `precision` against FP16, measured on
    this machine's GPU, or the labelled published figure where it cannot be measured.

    precision: "NF4", "INT8", "INT4", "FP8", "FP16", or several ("NF4,INT4" or a list:
    one session, one FP16 baseline). Other options as `energy_estimate --help` names
    them (iterations=, tokens=, ci_target_pts=, backend=, gpu_arch=, dry_run=, ...).
    progress: print progress lines on stderr. machine: stand-ins for tests
    (ecocompute.task.machine.Machine). Nothing is written: call .write(folder).
    Raises InputError, RunError, ReportInvalid."""
    from ecocompute.params import resolve
    from ecocompute.report.build import build_report
    from ecocompute.report.write import check_for_writing
    from ecocompute.task.run import run_session

    flags = _flags(model, precision, {**options, "batch_size": batch_size, "decode": decode})
    flags.setdefault("output_dir", ".")  # not written to: .write() takes the folder
    params = resolve(None, flags)
    outcomes = run_session(params, Progress(quiet=not progress), machine=machine)
    results = []
    for outcome in outcomes:
        report = build_report(outcome, None)
        check_for_writing(report)  # as every report the command line writes
        results.append(_format_result(report))
    return Estimate(tuple(results))


def sweep(
    models: Sequence[str],
    precisions: Sequence[str] = ("NF4",),
    *,
    output_dir: str | os.PathLike[str],
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

    if params is not None and options:
        name = sorted(options)[0]
        raise InputError(name, options[name], "give params= or options by name, not both")
    shared = params if params is not None else {**options, "quiet": not progress}
    done = run_sweep(
        list(models),
        list(precisions),
        output_dir,
        options=shared,
        batch_sizes=batch_sizes,
        progress=Progress(quiet=not progress),
        machine=machine,
    )
    if done.failed:
        raise SweepFailed(done)
    return done


class SweepFailed(RunError):
    """A sweep whose points did not all finish: .sweep is its Sweep (sweep.json is
    written), the failed points in .sweep.failed with why."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        super().__init__(
            f"{len(sweep.failed)} of {len(sweep.runs)} run(s) failed; the others were fitted"
        )


def read_report(path: str | os.PathLike[str]) -> Any:
    """One report file of any format this tool reads (1.0 and 1.1 of the published
    container, 1.2, 1.3, 1.4) as its typed record (ecocompute.results.record.Report).
    Raises ReportInvalid with every reason when it is not a valid report."""
    from ecocompute.results.collect import Invalid, read_one

    one = read_one(path)
    if isinstance(one, Invalid):
        raise ReportInvalid(one.problems)
    return one


def pool_units(*paths: str | os.PathLike[str]) -> Any:
    """Measured reports under paths (folders searched recursively), grouped as aggregate
    groups them, each group pooled across its GPU units: every unit's own estimate
    (reports of one unit combined, never counted twice), the random-effects pool with
    the between-unit spread and a prediction interval for a unit not yet measured, and
    the same per board part or VBIOS where the units differ in it. A list of
    ecocompute.pooling.units.UnitPool; invalid files are skipped (aggregate lists them).
    Raises InputError without a path."""
    from ecocompute.pooling.groups import group_reports
    from ecocompute.pooling.units import pool_units as pool
    from ecocompute.results.collect import read_reports

    if not paths:
        raise InputError("paths", "()", "at least one report or folder")
    reports, _invalid = read_reports([str(p) for p in paths])
    return pool(group_reports(reports))
