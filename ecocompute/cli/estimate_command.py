"""`energy_estimate` (alias `run`): one format, or a session of several, one report each."""

from __future__ import annotations

import argparse
import sys

from ecocompute.boundary.printing import print_after_write
from ecocompute.cli.flags import (
    add_run_flags,
    parameters_file_flag,
    recorded_command,
    run_flags_given,
)
from ecocompute.errors import FormatsRefused
from ecocompute.params import RunParams

# -- energy_estimate ---------------------------------------------------------------------


def add_energy_estimate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "energy_estimate",
        aliases=["energy-estimate", "run"],  # run: the published container's name
        help="measure (or, without a usable GPU, look up) energy per token vs FP16",
        description="Measure GPU-package energy per generated token of FP16 and a quantized "
        "format of the same model with NVML; without a usable GPU, write a labelled figure "
        "from the published EcoCompute dataset. Flags override the parameters file.",
    )
    parameters_file_flag(p, "YAML file whose keys mirror the flags below")
    add_run_flags(p)
    p.set_defaults(handler=_cmd_energy_estimate)


def _cmd_energy_estimate(args: argparse.Namespace) -> int:
    from ecocompute.boundary.progress import library_progress_bars_hidden
    from ecocompute.params import resolve

    params = resolve(args.parameters_file, run_flags_given(args))
    with library_progress_bars_hidden(params.quiet):
        return _energy_estimate(args, params)


def _energy_estimate(args: argparse.Namespace, params: RunParams) -> int:
    from ecocompute.boundary.progress import Progress
    from ecocompute.jobs.report_job import ReportJob

    if len(params.session_formats) > 1:
        return _energy_session(args, params)
    job = ReportJob(params)
    args.after_interrupt = lambda name: (
        f"{name} arrived just after {job.target} was written; that report is complete and valid"
        if job.written()
        else f"interrupted by {name}: no energy.json was written and any earlier one is untouched"
    )
    written = job.run(
        Progress(params.quiet), command=recorded_command(), summary_encoding=sys.stdout.encoding
    )
    # the report is in place: if stdout cannot take the summary, say so (exit 3)
    return print_after_write(written.summary, [str(written.path)])


def _energy_session(args: argparse.Namespace, params: RunParams) -> int:
    """Several formats against one FP16 baseline: one report per format."""
    from ecocompute.boundary.progress import Progress
    from ecocompute.jobs.session_job import SessionJob

    job = SessionJob(params)

    def after(name: str) -> str:
        done = job.written()
        if not done:
            return (
                f"interrupted by {name}: no energy.json was written and earlier ones are untouched"
            )
        listed = ", ".join(str(p) for p in done)
        return (
            f"{name} arrived after {len(done)} of {len(job.targets)} reports were written "
            f"({listed}); those are complete and valid, the others were not written"
        )

    args.after_interrupt = after
    written = job.run(
        Progress(params.quiet), command=recorded_command(), summary_encoding=sys.stdout.encoding
    )
    status = print_after_write(written.summary, [str(p) for p in written.paths])
    if written.refused:  # the others' reports are in place; the run did not do all it was asked
        raise FormatsRefused(written.refused, written.paths)
    return status
