"""The report: assembled from a run's pieces, validated against the schema, written
atomically. An invalid report raises ReportInvalid and nothing is written."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
from importlib import resources
from pathlib import Path
from typing import Any

from ecocompute import __version__
from ecocompute.errors import ReportInvalid
from ecocompute.params import RunParams
from ecocompute.published.figures import dataset_dois
from ecocompute.report.atomic import write_text_atomic

SCHEMA_VERSION = "ecocompute-energy/1.2"
REPORT_NAME = "energy.json"
BENCHMARK = "ecocompute-llm-decode-energy"
MEASURED_SOURCE = "direct-nvml"
SCOPE = (
    "GPU-package energy as NVML reports it for the GPUs the model occupies; not wall "
    "power, not CPU, DRAM, PSU, cooling or PUE. Not a certified benchmark result."
)


ENERGY_SCHEMA = "energy.schema.json"


@functools.lru_cache(maxsize=4)
def load_schema(name: str = ENERGY_SCHEMA) -> dict[str, Any]:
    """A schema shipped in the wheel (ecocompute/schema/), or the checkout's top-level copy."""
    shipped = resources.files("ecocompute").joinpath(f"schema/{name}")
    if shipped.is_file():
        text = shipped.read_text()
    else:
        text = (Path(__file__).resolve().parents[2] / "schema" / name).read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_errors(document: object, name: str) -> list[str]:
    """Every violation of schema `name` as "json.path: message"; empty when valid."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema(name))
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        path = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        problems.append(f"{path}: {error.message}")
    return problems


def validation_errors(document: object) -> list[str]:
    """Every energy-report schema violation; empty when valid."""
    return schema_errors(document, ENERGY_SCHEMA)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fallback_source(reason: str) -> str:
    """measurement_source of a report derived from the published dataset."""
    return f"published-dataset ({reason})"


def assemble(
    params: RunParams,
    *,
    system_under_test: dict[str, Any],
    workload: dict[str, Any],
    measurement: dict[str, Any],
    software: dict[str, Any],
    measurement_source: str,
    results: dict[str, Any],
    quality: dict[str, Any] | None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """The common envelope around one run's sections."""
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "benchmark": BENCHMARK,
        "follows_mlcommons_energy_reporting_conventions": True,
        "certified_benchmark_result": False,
        "scenario": params.scenario,
        "scenario_note": (
            f"Nominal MLPerf-style label for batch {params.batch_size}; the run is not "
            "driven by MLPerf LoadGen."
        ),
        "timestamp_utc": utc_now(),
        "system_under_test": {"host": platform.platform(), **system_under_test},
        "workload": {
            "model_name": params.model_name,
            "precision": params.precision,
            "batch_size": params.batch_size,
            "context_length": params.context_length,
            "max_new_tokens": params.tokens,
            **workload,
        },
        "measurement": {
            "sample_rate_hz": params.sample_rate_hz,
            "tokens_per_run": params.tokens,
            "iterations": params.iterations,
            "warmup": params.warmup,
            "scope": SCOPE,
            **measurement,
        },
        "software": software,
        "measurement_source": measurement_source,
        "results": results,
        "provenance": {
            "dataset_dois": dataset_dois(),
            "tool": f"ecocompute {__version__}",
            "reference_data": "ecocompute/data/published_reference.json",
            **({"command": command} if command else {}),
        },
    }
    if quality is not None:
        report["quality"] = quality
    return report


def write_report(
    report: dict[str, Any], output_dir: str | os.PathLike[str], *, create_dir: bool = True
) -> Path:
    """Validate, then write <output_dir>/energy.json atomically (temp file + rename).

    create_dir False: do not recreate an output folder that existed at the start of the
    run and has vanished since (see atomic.atomic_path).
    Raises ReportInvalid (nothing written) or RunError (the folder could not take the
    file; the temp file is removed and any earlier energy.json is left untouched).
    """
    problems = validation_errors(report)
    if problems:
        raise ReportInvalid(problems)
    text = json.dumps(report, indent=2, sort_keys=False) + "\n"
    return write_text_atomic(Path(output_dir) / REPORT_NAME, text, create_dir=create_dir)
