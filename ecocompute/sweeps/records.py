"""A sweep's run records (sweep.json's runs[]): shared by the sequential sweep
(sweep.py) and the fleet sweep (fleet.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ecocompute.errors import ReportInvalid
from ecocompute.params import RunParams
from ecocompute.results.record import Report, to_record


def new_record(params: RunParams) -> dict[str, Any]:
    """A run's record before it has answered (the fleet sweep shares it)."""
    return {
        "model_name": params.model_name,
        "precision": params.precision,
        "batch_size": params.batch_size,
        "status": "failed",
        "error": None,
        "report": None,
    }


def relative(path: Path, root: Path) -> str:
    """path as seen from root (with ../ where it lies outside), so that root / the
    result finds the file again."""
    return os.path.relpath(path.resolve(), root.resolve())


def written_record(path: Path, doc: dict[str, Any]) -> Report:
    """The record of a report this sweep has just written: validated as it was written
    (report/write.py), so it is read, not checked again. Raises ReportInvalid if the
    reader refuses it, which would be a bug of the writer."""
    record, problems = to_record(path, doc)
    if record is None:
        raise ReportInvalid(problems)
    return record


def run_fields(r: Report, root: Path) -> dict[str, Any]:
    return {
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
    }
