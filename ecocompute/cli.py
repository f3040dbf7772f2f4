"""Command line: argument parsing and dispatch to one function per command.

Exit status: 0 a report was written (or every file valid), 2 bad input (nothing
written), 1 the run failed after its input was accepted (and said why), 3 the report
was written but the summary could not be printed, 129 / 130 / 143 interrupted by
SIGHUP / SIGINT / SIGTERM (the message says whether the report had been written).
Every failure is one line on stderr. The process starts in ecocompute/entry.py, which
holds the signals before this module is imported.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from ecocompute import __version__
from ecocompute.errors import EcoComputeError, InputError, Interrupted
from ecocompute.interrupts import describe as describe_interrupt
from ecocompute.interrupts import sigterm_raises
from ecocompute.params import FIELDS, RunParams, help_for
from ecocompute.printable import printable, recordable
from ecocompute.printing import WRITTEN_NOT_PRINTED, flush_stdout, print_after_write, stdout_failure

log = logging.getLogger("ecocompute")

SWEEP_DIR = "outputs/sweep"
__all__ = ["WRITTEN_NOT_PRINTED", "build_parser", "main"]

# (flag spellings, RunParams field, metavar). Values stay strings here: params.py
# converts and validates flags and YAML values the same way.
_VALUE_FLAGS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("--model", "--model_name", "--model-name"), "model_name", "ID"),
    (("--params_b", "--params-b"), "params_b", "B"),
    (("--precision",), "precision", "{FP16,NF4,INT8,INT4,FP8}[,...]"),
    (("--backend",), "backend", "{auto,bitsandbytes,torchao}"),
    (("--batch_size", "--batch-size"), "batch_size", "N"),
    (("--gpu_arch", "--gpu-arch"), "gpu_arch", "ARCH"),
    (("--context_length", "--context-length"), "context_length", "N"),
    (("--tokens",), "tokens", "N"),
    (("--iterations",), "iterations", "N"),
    (("--warmup",), "warmup", "N"),
    (("--sample_rate_hz", "--sample-rate-hz"), "sample_rate_hz", "HZ"),
    (("--quality_seq_len", "--quality-seq-len"), "quality_seq_len", "N"),
    (("--quality_text", "--quality-text"), "quality_text", "FILE"),
    (("--llm_int8_threshold", "--llm-int8-threshold"), "llm_int8_threshold", "X"),
    (("--idle_seconds", "--idle-seconds"), "idle_seconds", "S"),
    (("--max_gpu_memory_gib", "--max-gpu-memory-gib"), "max_gpu_memory_gib", "GIB"),
    (("--decode",), "decode", "{eager,graphs,compiled}"),
    (("--ci_target_pts", "--ci-target-pts"), "ci_target_pts", "PTS"),
    (("--max_rounds", "--max-rounds"), "max_rounds", "N"),
    (("--max_minutes", "--max-minutes"), "max_minutes", "MIN"),
    (("--output_dir", "--output-dir"), "output_dir", "DIR"),
    (("--site",), "site", "URL"),
    (("--api_base", "--api-base"), "api_base", "URL"),
)
_SWITCHES: tuple[tuple[tuple[str, ...], str, bool, str], ...] = (
    (("--dry_run", "--dry-run"), "dry_run", True, help_for("dry_run")),
    (
        ("--no_quality_probe", "--no-quality-probe"),
        "quality_probe",
        False,
        "skip the perplexity probe",
    ),
    (("--quiet", "-q"), "quiet", True, help_for("quiet")),
    (("--share",), "share", True, help_for("share")),
    (("--prefetch",), "prefetch", True, help_for("prefetch")),
)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one `ecocompute: error:` line and exit 2; usage is in --help."""

    def error(self, message: str) -> NoReturn:
        print(
            f"ecocompute: error: {printable(message)} (see `{self.prog} --help`)", file=sys.stderr
        )
        raise SystemExit(2)


def _add_run_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """energy_estimate's flags (all strings here; params.py converts them)."""
    for names, dest, metavar in _VALUE_FLAGS:
        if dest in skip:
            continue
        text = help_for(dest)
        if "default:" not in text:
            text += f" (default: {FIELDS[dest].default})"
        help_text = text.replace("%", "%%")  # argparse %-formats help
        p.add_argument(*names, dest=dest, metavar=metavar, default=None, help=help_text)
    for names, dest, value, text in _SWITCHES:
        p.add_argument(
            *names, dest=dest, action="store_const", const=value, default=None, help=text
        )


def _parameters_file_flag(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument(
        "--parameters_file", "--parameters-file", metavar="YAML", default=None, help=text
    )


def _run_flags_given(args: argparse.Namespace, *, leave_out: tuple[str, ...] = ()) -> dict:
    return {n: getattr(args, n) for n in FIELDS if hasattr(args, n) and n not in leave_out}


# -- energy_estimate ---------------------------------------------------------------------


def _add_energy_estimate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "energy_estimate",
        aliases=["energy-estimate", "run"],  # run: the published container's name
        help="measure (or, without a usable GPU, look up) energy per token vs FP16",
        description="Measure GPU-package energy per generated token of FP16 and a quantized "
        "format of the same model with NVML; without a usable GPU, write a labelled figure "
        "from the published EcoCompute dataset. Flags override the parameters file.",
    )
    _parameters_file_flag(p, "YAML file whose keys mirror the flags below")
    _add_run_flags(p)
    p.set_defaults(handler=_cmd_energy_estimate)


def _cmd_energy_estimate(args: argparse.Namespace) -> int:
    from ecocompute.params import resolve
    from ecocompute.progress import Progress, quiet_library_progress_bars
    from ecocompute.report.job import ReportJob

    params = resolve(args.parameters_file, _run_flags_given(args))
    if params.quiet:
        quiet_library_progress_bars()
    if len(params.session_formats) > 1:
        return _energy_session(args, params)
    job = ReportJob(params)
    args.after_interrupt = lambda name: (
        f"{name} arrived just after {job.target} was written; that report is complete and valid"
        if job.written()
        else f"interrupted by {name}: no energy.json was written and any earlier one is untouched"
    )
    command = [recordable(a) for a in sys.argv[1:]]  # a path's undecodable bytes as \xNN
    written = job.run(Progress(params.quiet), command=command, summary_encoding=sys.stdout.encoding)
    # the report is in place: if stdout cannot take the summary, say so (exit 3)
    return print_after_write(written.summary, [str(written.path)])


def _energy_session(args: argparse.Namespace, params: RunParams) -> int:
    """Several formats against one FP16 baseline: one report per format."""
    from ecocompute.progress import Progress
    from ecocompute.report.session_job import SessionJob

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
        Progress(params.quiet), command=sys.argv[1:], summary_encoding=sys.stdout.encoding
    )
    return print_after_write(written.summary, [str(p) for p in written.paths])


# -- validate ------------------------------------------------------------------------


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check energy.json and sweep.json files against their schemas",
        description="Check reports against their schemas and their own arithmetic. Folders "
        "are searched recursively for energy.json and sweep.json. One line per file.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    from ecocompute.results.validate_files import validate_paths

    return validate_paths(args.paths, sys.stdout)


# -- sweep ---------------------------------------------------------------------------


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="energy_estimate over several models, then fit the crossover on this card",
        description="Run one energy_estimate per model and format (each report in "
        "<output_dir>/<model>-<format>/energy.json), fit dE%(N) = A - S x/(1+x), "
        "x = N/Nstar to this card's measured points (derived points are never fitted), "
        "and report the crossover size where dE% = 0 with a bootstrap 95% interval, in "
        "<output_dir>/sweep.json plus sweep.png. Other flags pass through to every run.",
    )
    p.add_argument(
        "--models",
        metavar="M1,M2,...",
        default=None,
        help="models (Hugging Face ids, folders or synthetic:<preset>), comma-separated",
    )
    p.add_argument(
        "--precisions",
        metavar="NF4,INT4,...",
        default="NF4",
        help="quantized formats, comma-separated: NF4, INT8, INT4, FP8; several are "
        "measured in one session per point against one FP16 baseline (default: NF4)",
    )
    p.add_argument(
        "--batch_sizes",
        "--batch-sizes",
        metavar="1,4,16,64",
        default=None,
        help="the batch axis: one session per model and batch size, then per format the "
        "delta against the batch size and where it crosses zero (default: --batch_size)",
    )
    _parameters_file_flag(p, "YAML parameters shared by every run (flags override)")
    p.add_argument(
        "--fit_only",
        "--fit-only",
        action="store_true",
        help="run nothing: fit the reports already under --output_dir (e.g. "
        "written by sweeps on several GPUs into one folder), or under --reports",
    )
    p.add_argument(
        "--reports",
        nargs="+",
        metavar="PATH",
        default=None,
        help="with --fit_only: fit the reports under these files and folders instead of "
        "--output_dir's (sweep.json and sweep.png still go to --output_dir)",
    )
    p.add_argument(
        "--output_dir",
        "--output-dir",
        metavar="DIR",
        default=SWEEP_DIR,
        help=f"folder for the runs' reports, sweep.json and sweep.png (default: {SWEEP_DIR})",
    )
    _add_fleet_flags(p)
    _add_run_flags(p, skip=("model_name", "params_b", "precision", "output_dir"))
    p.set_defaults(handler=_cmd_sweep)


def _add_fleet_flags(p: argparse.ArgumentParser) -> None:
    """The sweep on Dask (the [fleet] extra; docs/fleet.md)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the points on the workers of this Dask scheduler (e.g. tcp://host:8786), "
        "one point per GPU at a time; needs ecocompute[fleet]",
    )
    where.add_argument(
        "--local_cluster",
        "--local-cluster",
        action="store_true",
        help="start a Dask cluster here, one worker per visible GPU, and run the points on "
        "it; needs ecocompute[fleet]",
    )
    p.add_argument(
        "--one_per_host",
        "--one-per-host",
        action="store_true",
        help="with --scheduler/--local_cluster: at most one point per host at a time (eager "
        "decode is host-bound: a busy neighbour disturbs the measurement)",
    )
    p.add_argument("--workers", type=int, default=None, help=argparse.SUPPRESS)  # tests


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ecocompute.results.fleet_options import options_from_flags
    from ecocompute.results.sweep import sweep
    from ecocompute.results.sweep_plan import split_batches, split_list

    fleet = options_from_flags(
        scheduler=args.scheduler,
        local_cluster=args.local_cluster,
        one_per_host=args.one_per_host,
        workers=args.workers,
        fit_only=args.fit_only,
    )
    if fleet is not None:
        args.after_interrupt = lambda name: (
            f"interrupted by {name}: the runs that finished keep their energy.json; "
            "sweep.json lists them and the cancelled ones"
        )
    # A sweep writes each point's report as it goes: a failure after the first one
    # must not say that nothing was written.
    from ecocompute.report.written import sweep_leaves

    args.written_so_far = sweep_leaves(args.output_dir)
    if args.reports and not args.fit_only:
        raise InputError("reports", args.reports, "only with --fit_only")
    models = None if args.fit_only else split_list("models", args.models)
    return sweep(
        models,
        split_list("precisions", args.precisions),
        _run_flags_given(args, leave_out=("output_dir",)),
        args.output_dir,
        parameters_file=args.parameters_file,
        fit_only=args.fit_only,
        command=[recordable(a) for a in sys.argv[1:]],  # a path's bytes as \xNN
        fleet=fleet,
        reports_from=args.reports,
        batch_sizes=split_batches(args.batch_sizes),
    )


# -- aggregate, plot, check ------------------------------------------------------------


def _add_aggregate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "aggregate",
        help="many energy.json reports into one table (and a CSV)",
        description="Read energy.json reports (folders are searched recursively), group "
        "them by measured/derived, card, model, size, format, software fingerprint and "
        "protocol (tokens per run, batch), and print n, mean, sd and CV of energy per "
        "token and of the delta vs FP16. Invalid files are listed and skipped.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument(
        "-o", "--output", metavar="TABLE.csv", default=None, help="also write the table as CSV"
    )
    p.set_defaults(handler=_cmd_aggregate)


def _cmd_aggregate(args: argparse.Namespace) -> int:
    from ecocompute.results.aggregate import aggregate_paths

    return aggregate_paths(args.paths, sys.stdout, sys.stderr, args.output)


def _add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot",
        help="delta vs FP16 against model size, with the published curve",
        description="Plot one card's NF4/INT8 reports (folders searched recursively): "
        "delta vs FP16 against model size on a log axis, the published curve of the "
        "card's arch class (solid where fitted, dashed beyond; borrowed curves say so), "
        "a break-even line, 95% intervals, filled markers where n >= 2 reports. PNG, or "
        "SVG when the name ends in .svg. Needs matplotlib (ecocompute[plot]).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("-o", "--output", metavar="FILE.png", required=True)
    p.add_argument(
        "--card",
        metavar="NAME",
        default=None,
        help="plot only this card's reports (needed when the paths hold several)",
    )
    p.set_defaults(handler=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> int:
    from ecocompute.results.plot import plot_paths

    return plot_paths(args.paths, args.output, args.card, sys.stdout, sys.stderr)


def _add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="grade a measured report against the published figures (exit 0/1/2)",
        description="Grade one measured report: its FP16 energy against the published FP16 "
        "anchor of the same size (within 5%), only when that anchor was measured on the "
        "report's own arch class (tolerance k x the published CV bound, 2%); and its delta "
        "vs FP16 against the published fitted curve of its own arch class (tolerance k x "
        "the curve's residual spread: RMS of the published single-card points where there "
        "are any, else a 10 pp project default, named in the output). Borrowed curves or "
        "anchors (Hopper borrows Ampere's) are never graded against, nor is a derived "
        "report (circular). Exit 0: within; 1: outside; 2: not gradeable or invalid.",
    )
    p.add_argument("report", metavar="REPORT", help="an energy.json file")
    p.add_argument(
        "--k", default=None, help="tolerance in units of the spread, a positive number (default: 2)"
    )
    p.set_defaults(handler=_cmd_check)


def _cmd_check(args: argparse.Namespace) -> int:
    from ecocompute.results.check import check_path

    return check_path(args.report, args.k, sys.stdout, sys.stderr)


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_energy_estimate,
    _add_validate,
    _add_aggregate,
    _add_plot,
    _add_sweep,
    _add_check,
]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ecocompute",
        description="Does quantizing an LLM's weights (NF4, INT8) save GPU energy per token?",
    )
    parser.add_argument("--version", action="version", version=f"ecocompute {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit status. Failures are one line on stderr: an
    EcoComputeError says what happened and what to do; SIGINT/SIGTERM exit 130/143 and
    say what was written; anything else is a bug, reported in one line (--verbose
    re-raises it with its traceback)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        with sigterm_raises():
            status: int = args.handler(args)
            failed = flush_stdout()
        if failed is not None:
            print(
                f"ecocompute: error: could not print the output: {failed.strerror or failed}",
                file=sys.stderr,
            )
            return status or 1
    except EcoComputeError as exc:
        written = getattr(args, "written_so_far", None)
        also = f" ({printable(written())})" if written and not isinstance(exc, InputError) else ""
        print(f"ecocompute: error: {printable(exc)}{also}", file=sys.stderr)
        return exc.exit_status
    except (KeyboardInterrupt, Interrupted) as exc:
        name, status = describe_interrupt(exc)
        after = getattr(args, "after_interrupt", None)
        what = (
            after(name)
            if after is not None
            else f"interrupted by {name}: the file being written, if any, was not, and "
            "earlier files are untouched"
        )
        print(f"ecocompute: {printable(what)}", file=sys.stderr)
        return status
    except Exception as exc:
        failed = stdout_failure(exc)
        if failed is not None:
            print(
                f"ecocompute: error: could not print the output: {failed.strerror or failed}; "
                "nothing was written",
                file=sys.stderr,
            )
            return 1
        if args.verbose:
            raise
        written_so_far = getattr(args, "written_so_far", None)
        written = written_so_far() if written_so_far else "nothing was written"
        print(
            f"ecocompute: internal error: {type(exc).__name__}: {printable(str(exc)[:300])} "
            "(a bug in ecocompute; run `ecocompute --verbose ...` for the traceback and "
            f"report it); {printable(written)}",
            file=sys.stderr,
        )
        return 1
    return status
