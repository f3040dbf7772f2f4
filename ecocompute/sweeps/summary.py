"""sweep.json: the document built from the run records and the reports they name,
validated and written atomically, with its plot."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ecocompute import __version__
from ecocompute.errors import InputError, ReportInvalid
from ecocompute.report.atomic import write_text_atomic
from ecocompute.report.build import SCOPE, utc_now
from ecocompute.report.checks import sweep_problems
from ecocompute.report.numbers import dumps_strict
from ecocompute.report.schema import SWEEP_SCHEMA_VERSION
from ecocompute.results.collect import Report, read_one
from ecocompute.sweeps import fits as sweep_fits  # missing_fit_stack at call time (tests)
from ecocompute.sweeps.fits import (
    batch_axis,
    fit_entry,
    skipped_fit,
)
from ecocompute.sweeps.plan import SWEEP_FORMATS
from ecocompute.sweeps.records import relative as _relative

SWEEP_NAME = "sweep.json"
PLOT_NAME = "sweep.png"


def one_of(values: set[str], what: str) -> str | None:
    if len(values) > 1:
        raise InputError(
            what,
            None,
            f"the measured reports disagree ({'; '.join(sorted(values))}); a sweep fits one "
            "card, one software stack and one protocol: fit them separately",
        )
    return next(iter(values), None)


def across_batches(protocol: str, batches: Sequence[int]) -> str:
    """The protocol with the batch size left out where the sweep has a batch axis."""
    if len(batches) < 2:
        return protocol
    return re.sub(r"batch \d+", "batch " + ",".join(map(str, batches)), protocol)


def summarise(
    records: list[dict[str, Any]],
    output_dir: Path,
    *,
    command: list[str] | None = None,
    n_boot: int | None = None,
) -> tuple[dict[str, Any], list[Report]]:
    """The sweep document (not yet written) and the reports it was built from."""
    reports = []
    for rec in records:
        if rec["status"] == "ok" and rec["report"]:
            one = read_one(output_dir / rec["report"])
            if isinstance(one, Report):
                reports.append(one)
    measured = [r for r in reports if r.measured and r.quantized]
    batches = sorted({r.batch_size for r in reports})
    card = one_of({r.card for r in measured}, "card")
    software = one_of({r.fingerprint for r in measured}, "software")
    protocol = one_of({across_batches(r.protocol, batches) for r in measured}, "protocol")
    arch = measured[0].arch if measured else (reports[0].arch if reports else None)
    if not measured and reports:
        card = reports[0].card

    missing = sweep_fits.missing_fit_stack()
    formats = sorted({r.precision for r in reports if r.quantized}, key=SWEEP_FORMATS.index)
    if len(batches) > 1:
        fits = [skipped_fit(fmt, arch, batches) for fmt in formats]
    else:
        fits = [fit_entry(fmt, reports, output_dir, arch, missing, n_boot) for fmt in formats]
    axis = batch_axis(reports, output_dir, formats, n_boot) if len(batches) > 1 else []

    doc: dict[str, Any] = {
        "schema_version": SWEEP_SCHEMA_VERSION,
        "timestamp_utc": utc_now(),
        "tool": f"ecocompute {__version__}",
        **({"command": command} if command else {}),
        "card": card,
        "gpu_arch": arch,
        "software": software,
        "protocol": protocol,
        "scope": SCOPE,
        "runs": records,
        "fits": fits,
        "plot": None,
    }
    if axis:
        doc["batch_axis"] = axis
        doc["map"] = [entry["map"] for entry in axis]
    return doc, reports


def write_sweep(doc: dict[str, Any], output_dir: Path) -> Path:
    """Validate (schema, finite numbers: no NaN in a fit), then write atomically."""
    problems = sweep_problems(doc)
    if problems:
        raise ReportInvalid(problems)
    return write_text_atomic(output_dir / SWEEP_NAME, dumps_strict(doc, indent=2) + "\n")


def add_plot(doc: dict[str, Any], reports: list[Report], output_dir: Path, name: str) -> None:
    """Draw the sweep's plot into doc["plot"]; a missing matplotlib or nothing to plot
    is a note, not a failure (the numbers are in sweep.json)."""
    if "matplotlib" in sweep_fits.missing_fit_stack():
        doc["plot_note"] = "no plot: matplotlib is not installed (pip install 'ecocompute[plot]')"
        return
    from ecocompute.plots.size_plot import plot_reports

    fits = {f["precision"]: f for f in doc["fits"] if f.get("status") == "fitted"}
    try:
        if doc.get("batch_axis"):
            from ecocompute.plots.batch_plot import plot_batch_axis

            path = plot_batch_axis(reports, output_dir / name)
        else:
            path = plot_reports(reports, output_dir / name, fits=fits)
    except InputError as exc:
        doc["plot_note"] = f"no plot: {exc}"
        return
    doc["plot"] = _relative(path, output_dir)
