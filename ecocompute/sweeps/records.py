"""A sweep's point records (sweep.json's runs[]), as the sequential sweep (run.py), a fit
of reports already written (sweep.py) and the fleet (fleet/) make them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ecocompute.core.json_types import JsonObject
from ecocompute.errors import ReportInvalid
from ecocompute.formats.table import format_key
from ecocompute.params import RunParams
from ecocompute.report.model import Report as ReportModel
from ecocompute.results.record import Report, to_record
from ecocompute.sweeps.document import FAILED, OK, RunRecord, format_label_field


def new_record(
    params: RunParams,
    *,
    error: str | None = None,
    status: str = FAILED,
    more: Mapping[str, object] | None = None,
) -> RunRecord:
    """A point's record before it has answered (failed, with why, until it does), with
    `more` (the fleet's placement) beside it."""
    spec, precision = params.spec(), str(params.precision)
    label = format_key(precision, spec.library, spec.llm_int8_threshold)
    return RunRecord.model_validate(
        {
            "model_name": params.model_name,
            "precision": precision,
            **format_label_field(label, precision),
            "batch_size": params.batch_size,
            "status": status,
            "error": error,
            "report": None,
            **(more or {}),
        }
    )


def answered(
    model_name: str,
    precision: str,
    r: Report,
    root: Path,
    more: Mapping[str, object] | None = None,
) -> RunRecord:
    """The record of a point whose report r is written (under root), with `more` (the
    time it took, the fleet's placement) beside it."""
    return RunRecord.model_validate(
        {
            "model_name": model_name,
            "precision": precision,
            **format_label_field(r.format_label, precision),
            "status": OK,
            "error": None,
            "report": relative(r.path, root),
            "params_b": r.params_b,
            # an illustrative report says basis measured; it is never listed as one
            "basis": r.basis if r.kind != "illustrative" else "illustrative (not a measurement)",
            "vs_fp16_energy_pct": r.delta_pct,
            "vs_fp16_ci95_pct": list(r.ci95_pct) if r.ci95_pct else None,
            "n_pairs": r.n_pairs,
            "verdict": r.verdict,
            "batch_size": r.batch_size,
            "session_s": r.session_s,
            **(more or {}),
        }
    )


def relative(path: Path, root: Path) -> str:
    """path as seen from root (with ../ where it lies outside), so that root / the
    result finds the file again."""
    return os.path.relpath(path.resolve(), root.resolve())


def written_record(path: Path, doc: ReportModel | JsonObject) -> Report:
    """The record of a report this sweep has just written: validated as it was written
    (report/write.py), so it is read, not checked again. Raises ReportInvalid if the
    reader refuses it, which would be a bug of the writer."""
    record, problems = to_record(path, doc)
    if record is None:
        raise ReportInvalid(problems)
    return record
