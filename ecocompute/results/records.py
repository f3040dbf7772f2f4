"""A sweep's run records (sweep.json's runs[]): shared by the sequential sweep
(sweep.py) and the fleet sweep (fleet.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ecocompute.params import RunParams
from ecocompute.results.collect import Report


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


def run_fields(r: Report, root: Path) -> dict[str, Any]:
    res = r.results
    return {
        "report": relative(r.path, root),
        "params_b": r.params_b,
        "basis": r.basis,
        "vs_fp16_energy_pct": r.delta_pct,
        "vs_fp16_ci95_pct": list(r.ci95_pct) if r.ci95_pct else None,
        "n_pairs": r.n_pairs,
        "verdict": res.get("verdict"),
        "batch_size": r.doc["workload"].get("batch_size"),
        "session_s": (r.doc["measurement"].get("timing") or {}).get("session_s"),
    }
