"""The commands that read reports: `validate`, `upgrade`, `aggregate`, `plot` and
`check`: each calls the library, prints what it returns and chooses the exit status."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ecocompute.boundary.printing import print_after_write
from ecocompute.core.printable import printable
from ecocompute.errors import InputError

if TYPE_CHECKING:
    from ecocompute.results.collect import Report
    from ecocompute.results.conformance import Conformance

# -- validate ------------------------------------------------------------------------


def add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check energy.json and sweep.json files against their schemas",
        description="Check reports against their schemas and their own arithmetic. Folders "
        "are searched recursively for energy.json and sweep.json. One line per file.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument(
        "--profile",
        choices=("v1.1-core", "dataset-eligible"),
        default=None,
        help="judge each report as the published container's validator does, against "
        "Protocol v1.1: schema-invalid (exit 2), schema-valid (1), protocol-conformant, "
        "dataset-eligible (0 when the profile holds; 1 under dataset-eligible when only "
        "conformant); exit 3 when a file cannot be read",
    )
    p.add_argument(
        "--schema",
        metavar="FILE",
        default=None,
        help="with --profile: also check each report against this JSON schema",
    )
    p.add_argument(
        "--json", action="store_true", help="with --profile: the verdicts as JSON (for CI)"
    )
    p.set_defaults(handler=_cmd_validate)


USAGE_ERROR = 3  # the published validator's status for input it cannot read


def _cmd_validate(args: argparse.Namespace) -> int:
    from ecocompute.results.validate_files import validate_paths

    if args.profile is None:
        if args.schema is not None or args.json:
            flag = "--schema" if args.schema is not None else "--json"
            raise InputError(
                flag, "without --profile", "it goes with --profile v1.1-core or dataset-eligible"
            )
        checks = validate_paths(args.paths)
        for check in checks:
            print(check.line())
        return 0 if checks and all(c.valid for c in checks) else 1
    return _validate_profile(args)


def _validate_profile(args: argparse.Namespace) -> int:
    """One verdict per report; the status is the worst file's (3 for one that cannot be
    read, or a --schema that cannot be used)."""
    import json

    from ecocompute.results.conformance import judge_file, read_schema

    schema = None
    if args.schema is not None:
        got = read_schema(args.schema)
        if isinstance(got, str):
            print(f"ecocompute validate: cannot read --schema {printable(args.schema)}: {got}",
                  file=sys.stderr)  # fmt: skip
            return USAGE_ERROR
        schema = got
    status, answers = 0, []
    for path in args.paths:
        verdict = judge_file(path, args.profile, schema)
        if isinstance(verdict, str):
            print(f"ecocompute validate: cannot read {printable(path)}: {verdict}",
                  file=sys.stderr)  # fmt: skip
            status = max(status, USAGE_ERROR)
            continue
        status = max(status, verdict.exit_status)
        answers.append(
            {
                "report": path,
                "profile": verdict.profile,
                "verdict": verdict.verdict,
                "violations": list(verdict.violations),
                "notes": list(verdict.notes),
            }
        )
        if not args.json:
            print(_render_verdict(printable(path), verdict))
    if args.json and (answers or len(args.paths) > 1):  # a list for several paths, always
        print(json.dumps(answers[0] if len(args.paths) == 1 else answers, indent=2))
    return status


def _render_verdict(path: str, v: Conformance) -> str:
    from ecocompute.results.conformance import SCHEMA_INVALID, SCHEMA_VALID

    lines = [f"== {path} ({v.profile}) =="]
    valid = "no" if v.verdict == SCHEMA_INVALID else "yes"
    lines.append(f"schema-valid:        {valid} ({printable(str(v.schema_version))})")
    if v.verdict == SCHEMA_INVALID:
        lines += [f"schema error:        {printable(p)}" for p in v.violations]
    else:
        lines.append(f"protocol violations: {len(v.violations)}")
        lines += [f"  - {printable(p)}" for p in v.violations]
    lines.append(f"verdict:             {v.verdict}")
    lines += [f"note:                {n}" for n in v.notes]
    if v.verdict == SCHEMA_VALID:
        lines.append("hint: the structure holds, but Protocol v1.1's MUSTs above do not")
    return "\n".join(lines)


# -- upgrade ---------------------------------------------------------------------------


def add_upgrade(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "upgrade",
        help="copy reports of this tool's older formats into today's published envelope",
        description="Copy each energy.json of this tool's older formats (1.2-1.4; folders "
        "are searched recursively) into --output_dir, at its path relative to the current "
        "folder, under the published container's names (ecocompute-energy/1.3, "
        "ecocompute-energy-methodology), every figure as the file had it; the source is "
        "never touched. Each copy is read back by this tool as the format it came from and "
        "checked against the published strict 1.3 schema where its precision allows (not "
        "INT4, FP8). A report already current is copied unchanged. One line per file; "
        "exit 1 when any was not upgraded.",
    )
    p.add_argument("paths", nargs="+", metavar="REPORT_OR_FOLDER")
    p.add_argument("--output_dir", "--output-dir", metavar="DIR", required=True)
    p.set_defaults(handler=_cmd_upgrade)


def _cmd_upgrade(args: argparse.Namespace) -> int:
    """0 every file upgraded or already current; 1 some were not; 3 the copies were
    written but the lines saying so could not be printed."""
    from ecocompute.report.upgrade import upgrade_reports

    results = upgrade_reports(args.paths, args.output_dir)
    text = "\n".join(r.line() for r in results)
    written = [r.target for r in results if r.target is not None]
    status = 0 if all(r.ok for r in results) else 1
    if not written:
        print(text)
        return status
    return print_after_write(text, written) or status


# -- aggregate, plot, check ------------------------------------------------------------


def add_aggregate(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument(
        "--units",
        action="store_true",
        help="also each GPU unit's own delta, the random-effects pool across units with the "
        "between-unit spread and a prediction interval for a unit not yet measured, and the "
        "same per board part or VBIOS where they separate the units",
    )
    p.set_defaults(handler=_cmd_aggregate)


def _cmd_aggregate(args: argparse.Namespace) -> int:
    """Skipped files on stderr; no valid report: exit 1; the CSV written before the table
    is printed, so that a stdout that fails afterwards is told apart (exit 3)."""
    from ecocompute.pooling.aggregate import aggregate, render_table, write_csv

    reports = _read_reports(args)
    if not reports:
        print("ecocompute: error: no valid energy.json report found", file=sys.stderr)
        return 1
    table = aggregate(reports, units=args.units)
    text = render_table(table)
    if args.output is None:
        print(text)
        return 0
    target = write_csv(table, args.output)
    print(f"wrote {target}", file=sys.stderr)
    return print_after_write(text, [str(target)])


def _read_reports(args: argparse.Namespace) -> list[Report]:
    """The reports under args.paths; the files that are not valid ones listed on stderr."""
    from ecocompute.pooling.aggregate import read_reports_for, render_invalid

    reports, invalid = read_reports_for(args.paths, args.output)
    if invalid:
        print(render_invalid(invalid), file=sys.stderr)
    return reports


def add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot",
        help="delta vs FP16 against model size, with the published curve",
        description="Plot one card's reports of the quantized formats (folders searched "
        "recursively), one panel per format (NF4, INT8 and its other kernels, INT4, FP8): "
        "delta vs FP16 against model size on a log axis, the published curve of the "
        "card's arch class (solid where fitted, dashed beyond; borrowed curves say so), "
        "a break-even line, 95% intervals, filled markers where n >= 2 units. PNG, or "
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
    p.add_argument(
        "--power_trace",
        "--power-trace",
        action="store_true",
        help="draw one report's whole-run power trace (power_trace.csv beside it): its "
        "phases' edges and the measured windows shaded",
    )
    p.set_defaults(handler=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> int:
    """Skipped files and reports left out on stderr, then the picture; exit 3 when it was
    written but the line saying so could not be printed."""
    from ecocompute.plots.files import require_matplotlib
    from ecocompute.plots.size_plot import plot_reports

    require_matplotlib()
    if args.power_trace:
        from ecocompute.plots.trace_plot import plot_power_trace

        if len(args.paths) != 1 or args.card is not None:
            raise InputError("power_trace", " ".join(args.paths), "draws one report, no --card")
        path = plot_power_trace(args.paths[0], args.output)
    else:
        from ecocompute.plots.size_plot import left_out

        reports = _read_reports(args)
        for r in reports:
            if (why := left_out(r)) is not None:
                print(f"{printable(str(r.path))}: left out of the plot: {why}", file=sys.stderr)
        try:
            path = plot_reports(reports, args.output, card=args.card)
        except InputError as exc:
            if exc.field != "PATH":
                raise
            raise InputError("PATH", " ".join(args.paths), exc.allowed) from None  # as given
    return print_after_write(f"wrote {path}", [str(path)])


def add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="grade a measured report against the published figures (exit 0/1/2)",
        description="Grade one measured report: its FP16 energy against the published FP16 "
        "anchor of the same size (within 5%), only when that anchor was measured on the "
        "report's own card (tolerance k x the published CV bound, 2%); and its delta "
        "vs FP16 against the site's anchors of the same size where there are any, else the "
        "published fitted curve of its own arch class (tolerance k x "
        "the curve's residual spread: RMS of the published single-card points where there "
        "are any, else a 10 pp project default, named in the output). Borrowed curves or "
        "anchors (Hopper borrows Ampere's) are never graded against, nor is a derived "
        "report (circular). Exit 0: within; 1: outside; 2: not gradeable or invalid.",
    )
    p.add_argument("report", metavar="REPORT", help="an energy.json file")
    p.add_argument(
        "--k", default=None, help="tolerance in units of the spread, a positive number (default: 2)"
    )
    p.add_argument(
        "--curves",
        metavar="FILE|URL",
        default=None,
        help="a curves.json in the site's format to grade against (a file, or an http(s) "
        "URL such as https://quantenergy.tech/curves.json); default: the copy this tool ships",
    )
    p.set_defaults(handler=_cmd_check)


CHECK_EXIT = {"within": 0, "outside": 1, "not gradeable": 2}  # by Verdict's value


def _cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 within, 1 outside, 2 not gradeable (or not a valid report)."""
    from ecocompute.pooling.check import check_file, load_curves, parse_k, render_check
    from ecocompute.results.collect import Invalid

    k = parse_k(args.k)
    curves = None if args.curves is None else load_curves(args.curves)
    checked = check_file(args.report, k, curves)
    if isinstance(checked, Invalid):
        for problem in checked.problems:
            print(f"{checked.path}: INVALID {problem}", file=sys.stderr)
        print("ecocompute check: not gradeable: not a valid report (exit 2)", file=sys.stderr)
        return CHECK_EXIT["not gradeable"]
    status = CHECK_EXIT[checked.verdict.value]
    print(render_check(checked, status))
    return status
