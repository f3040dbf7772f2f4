"""The report dict, built in one place from a run's typed outcome (task/).

build_report() is the only function that makes an energy.json document: the envelope
every report shares, then the sections of a measured run or of a published-path run.
"""

from __future__ import annotations

import datetime as _dt
import platform
import socket
from typing import Any

from ecocompute import __version__
from ecocompute.params import RunParams
from ecocompute.published.figures import (
    dataset_dois,
)
from ecocompute.published.site_curves import SITE_FILE
from ecocompute.report.measured_sections import measured_sections
from ecocompute.report.published_sections import published_sections
from ecocompute.report.schema import SCHEMA_VERSION
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.published_path import PublishedRun

BENCHMARK = "ecocompute-llm-decode-energy"


SCOPE = (
    "GPU-package energy as NVML reports it for the GPUs the model occupies; not wall "
    "power, not CPU, DRAM, PSU, cooling or PUE. Not a certified benchmark result."
)


def build_report(outcome: MeasuredRun | PublishedRun, command: list[str] | None) -> dict[str, Any]:
    """The energy.json document for a run (not yet validated or written)."""
    if isinstance(outcome, MeasuredRun):
        sections = measured_sections(outcome)
    else:
        sections = published_sections(outcome)
    return envelope(outcome.params, sections, command)


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


NOTICE = (
    "Not a certified benchmark result. GPU-package energy as NVML reports it (not wall "
    "power); see measurement.scope, results.basis and measurement_source."
)


def provenance(command: list[str] | None) -> dict[str, Any]:
    """1.1's provenance keys, then ours."""
    dois = dataset_dois()
    return {
        "dataset_doi": dois[0],
        "rtx4090_deep_dive_doi": dois[1],
        "paper_ssrn": "not recorded by this tool (see the published page, quantenergy.tech)",
        "code": f"ecocompute {__version__}: an independent implementation",
        "dataset_dois": dois,
        "tool": f"ecocompute {__version__}",
        "reference_data": f"ecocompute/{SITE_FILE}; ecocompute/data/published_reference.json",
        **({"command": command} if command else {}),
    }


def envelope(
    params: RunParams, sections: dict[str, Any], command: list[str] | None
) -> dict[str, Any]:
    """The fields every report shares, around one run's sections."""
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
        "notice": NOTICE,
        "share_url": None,
        "system_under_test": {
            "host": platform.platform(),
            "hostname": socket.gethostname(),  # which machine of a fleet ran it
            **sections["system_under_test"],
        },
        "workload": {
            "model_name": params.model_name,
            "precision": params.precision,
            "batch_size": params.batch_size,
            "context_length": params.context_length,
            "max_new_tokens": params.tokens,
            **sections["workload"],
        },
        "measurement": {
            "sample_rate_hz": int(params.sample_rate_hz),
            "tokens_per_run": params.tokens,
            "iterations": params.iterations,
            "warmup": params.warmup,
            "scope": SCOPE,
            **sections["measurement"],
        },
        "software": sections["software"],
        "measurement_source": sections["measurement_source"],
        **{k: sections[k] for k in ("measurement_source_reason",) if k in sections},
        "results": sections["results"],
        "provenance": provenance(command),
    }
    if sections.get("quality") is not None:
        report["quality"] = sections["quality"]
    return report
