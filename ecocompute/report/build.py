"""The report dict, built in one place from a run's typed outcome (task/).

build_report() is the only function that makes an energy.json document: the envelope
every report shares, then the sections of a measured run or of a published-path run.
"""

from __future__ import annotations

import datetime as _dt
import platform
import socket
from dataclasses import asdict
from typing import Any

from ecocompute import __version__
from ecocompute.formats.table import BITSANDBYTES
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION
from ecocompute.params import RunParams, nominal_params_b
from ecocompute.precision import Precision
from ecocompute.published.figures import (
    ORIGIN_PUBLISHED,
    DeltaCurve,
    PublishedFigure,
    dataset_dois,
)
from ecocompute.published.site_curves import SITE_CURVES, SITE_FILE
from ecocompute.report.decode_block import decode_block
from ecocompute.report.labels import format_gpus_note
from ecocompute.report.quality_block import quality_section
from ecocompute.report.schema import SCHEMA_VERSION
from ecocompute.report.software import software_block
from ecocompute.report.trial_results import results_block
from ecocompute.stats import CI_METHOD
from ecocompute.task.hardware import GpuRecord, Hardware
from ecocompute.task.outcome import MeasuredRun, Session
from ecocompute.task.published_path import PublishedRun
from ecocompute.telemetry.base import POWER_FIELD_INSTANT

BENCHMARK = "ecocompute-llm-decode-energy"
MEASURED_SOURCE = "direct-nvml"
SCOPE = (
    "GPU-package energy as NVML reports it for the GPUs the model occupies; not wall "
    "power, not CPU, DRAM, PSU, cooling or PUE. Not a certified benchmark result."
)
ORDER_NOTES = {
    "interleaved": "FP16 and the quantized model were resident together; trials ran FP16, "
    "Q, FP16, Q ... so drift in clocks, temperature and host load falls on both.",
    "rotated": "FP16 and every quantized format of the session were resident together; "
    "each round measured each of them once, in an order rotated by one place from round to "
    "round, so drift and any effect of a trial's place in the round fall on every format.",
    "alternating blocks": "the two formats did not fit on the GPU(s) together: all FP16 "
    "trials ran, then all quantized trials; drift between the blocks is not cancelled.",
    "single format": "FP16 alone was requested and measured.",
}


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
# measurement_source of every derived report, exactly the published container's phrase
# (its consumers match it); why the run took the published path is beside it, in
# measurement_source_reason.
NO_LOCAL_GPU = "ecocompute-dataset (no local GPU)"
EAGER_NOTE = (
    "the published figures are eager generate() measurements (the published protocol); "
    "no published figure covers the graphs or compiled regimes"
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


def _gpu_dict(gpu: GpuRecord) -> dict[str, Any]:
    """A GPU as the report lists it; a published-path record carries NVML's four fields."""
    record = asdict(gpu)
    record["power_limit_watts"] = record.pop("power_limit_w")
    if gpu.cuda_index is None:
        return {k: record[k] for k in ("nvml_index", "name", "uuid", "pci_bus_id")}
    return record


def _int8_threshold(params: RunParams) -> dict[str, Any]:
    """LLM.int8()'s threshold, for a bitsandbytes INT8 run."""
    if params.precision is Precision.INT8 and params.spec().library == BITSANDBYTES:
        return {"llm_int8_threshold": params.llm_int8_threshold}
    return {}


# -- the published path --------------------------------------------------------------


def published_sections(run: PublishedRun) -> dict[str, Any]:
    params, fig, hardware = run.params, run.figure, run.hardware
    note = fig.note
    if run.arch.headline_default and fig.basis != "unavailable":
        note = f"{run.arch.source}. {note}"
    note = f"Derived from {fig.source}, not measured on this machine ({run.reason.text}). {note}."
    if params.decode != "eager":
        note += f" --decode {params.decode} was asked for, but {EAGER_NOTE}: this is eager's."
    return {
        "system_under_test": {
            "gpu": hardware.names or "none: no local GPU (the figure is derived)",
            "gpu_arch": run.arch.arch,
            "gpu_arch_source": run.arch.source,
            "accelerator_count": max(1, len(hardware.gpus)),
            "local_accelerator_count": len(hardware.gpus),
            **(
                {}
                if hardware.gpus
                else {
                    "accelerator_count_note": "no local GPU: 1 is the single card of the "
                    "published measurement the figure comes from (1.1 requires >= 1)"
                }
            ),
            **({"gpus": [_gpu_dict(g) for g in hardware.gpus]} if hardware.gpus else {}),
        },
        "workload": {
            "params_b": run.params_b,
            "params_b_source": run.params_b_source,
            "weights": "not loaded",
            "prompt_tokens": None,
            **_int8_threshold(params),
        },
        "measurement": {
            "method": fig.method,
            "iterations_note": (
                "No decode ran. tokens_per_run, iterations and warmup record the requested "
                "protocol; the published figures followed the published protocol."
            ),
            "energy_source": "none",
            "power_field": None,
            "order": "none",
            "decode": {
                "regime": "eager",
                **({"requested_regime": params.decode} if params.decode != "eager" else {}),
                "note": EAGER_NOTE,
            },
        },
        "software": software_block(
            torch_cuda=None, nvidia_driver=hardware.nvidia_driver, measured=False
        ),
        "measurement_source": NO_LOCAL_GPU,
        "measurement_source_reason": run.reason.text,
        "results": {
            "total_energy_joules": None,
            "tokens_generated": 0,
            "energy_per_token_mj": _r(fig.energy_per_token_mj),
            "fp16_energy_per_token_mj": _r(fig.fp16_energy_per_token_mj),
            "vs_fp16_energy_pct": _r(fig.vs_fp16_energy_pct, 1),
            "vs_fp16_energy_pct_3dp": _r(fig.vs_fp16_energy_pct, 3),
            "avg_power_watts": None,
            "throughput_tokens_per_s": None,
            "basis": fig.basis,
            "note": note,
            "fallback_reason": run.reason.code,
            "reference_card": fig.reference_card,
            "reference_curve": _curve_record(fig),
            "verdict": None,
            "vs_fp16_ci95_pct": None,
            "trials": [],
        },
        # no quality block: the published container writes none on this path
    }


def _curve_record(fig: PublishedFigure) -> dict[str, Any] | None:
    """The curve that gave a derived delta, so that a reader (plot) can draw that very
    curve under the point; None where none did (FP16, a measured point, no figure)."""
    curve: DeltaCurve | None = fig.curve
    if curve is None or fig.vs_fp16_energy_pct is None:
        return None
    return {
        "source": SITE_CURVES if curve.origin == ORIGIN_PUBLISHED else "this project's own fit",
        "origin": curve.origin,
        "arch": curve.arch,
        "precision": curve.precision,
        "A": curve.a_pct,
        "S": curve.s_pct,
        "Nstar": curve.nstar_b,
        "fitted_range_b": list(curve.fitted_range_b),
        "s_cap_pct": curve.s_cap_pct,
        "borrowed_from": curve.borrowed_from,
        "capped": curve.capped_at(fig.params_b),
    }


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


# -- the measured path ---------------------------------------------------------------


def measured_sections(run: MeasuredRun) -> dict[str, Any]:
    p = run.params
    hardware: Hardware = run.hardware
    weights = run.checkpoint.weights
    return {
        "system_under_test": {
            "gpu": hardware.names,
            "gpu_arch": run.arch,
            "gpu_arch_source": f"NVML product name '{hardware.gpu_name}'",
            "accelerator_count": len(hardware.gpus),
            "gpus": [_gpu_dict(g) for g in hardware.gpus],
            "cuda_visible_devices": hardware.cuda_visible_devices,
            "memory_bandwidth_gbs": _r(run.bandwidth_gbs, 1),
        },
        "workload": {
            **_sizes(p, run.params_count),
            "prompt_tokens": run.prompt_tokens,
            "weights": weights,
            "weights_note": run.checkpoint.weights_note,
            **_int8_threshold(p),
            "quantization": run.quantization.get(p.precision),
        },
        "measurement": {
            "method": method_text(run.counter, run.power_field, p.sample_rate_hz),
            "iterations_note": (
                f"{run.rounds} measured decode runs per format after {p.warmup} warm-ups "
                f"(iterations {p.iterations} is the "
                f"{'minimum' if run.stopping.rule == 'ci_target' else 'planned count'}); "
                f"each run is one trial; pairs are FP16 and {p.precision} trials of the "
                "same round."
            ),
            "stopping": asdict(run.stopping),
            "energy_source": "nvml_energy_counter" if run.counter else "sampled_power",
            "power_field": run.power_field,
            "order": run.order,
            "order_note": ORDER_NOTES[run.order],
            "idle_seconds": p.idle_seconds,
            "max_gpu_memory_gib": p.max_gpu_memory_gib,
            "min_valid_sample_fraction": MIN_VALID_SAMPLE_FRACTION,
            "counter_edges": run.counter_edges,
            "ci_method": CI_METHOD if p.precision.quantized else None,
            "session": session_record(run.session, p.spec().key),
            "timing": timing_record(run),
            "decode": decode_block(run),
        },
        "software": software_block(
            torch_cuda=run.versions.get("cuda"), nvidia_driver=hardware.nvidia_driver, measured=True
        ),
        "measurement_source": MEASURED_SOURCE,
        "results": results_block(run, measured_note(run)),
        "quality": quality_section(run.quality),
    }


def session_record(session: Session | None, key: str) -> dict[str, Any] | None:
    """What a report of a session of several formats says of its siblings."""
    if session is None:
        return None
    return {
        "formats": list(session.formats),
        "this_format": key,
        "siblings": {
            other: f"../{session.folders[other]}/energy.json"
            for other in session.formats
            if other != key
        },
        "shared_fp16_trials": True,
        "rotation": "round k measures the models in the order FP16, "
        + ", ".join(session.formats)
        + " rotated by k places; trials[].slot is each trial's place",
        "note": "This report holds the session's FP16 trials and this format's; the sibling "
        "reports hold the same FP16 trials (same indices) with their own format's. Each "
        "delta pairs a format's trial with its round's FP16 trial.",
    }


def timing_record(run: MeasuredRun) -> dict[str, Any] | None:
    t = run.timing
    if t is None:
        return None
    record: dict[str, Any] = {
        "load_s": round(t.load_s, 2),
        "prepare_s": round(t.prepare_s, 2),
        "measure_s": round(t.measure_s, 2),
        "session_s": round(t.load_s + t.prepare_s + t.measure_s, 2),
        "reused_models": t.reused_models,
    }
    notes = []
    if t.reused_models:
        notes.append("the models were already resident from the sweep's previous point")
    if run.session is not None:
        notes.append("the whole session's stages, shared by every format's report")
    if notes:
        record["note"] = "; ".join(notes)
    return record


def measured_note(run: MeasuredRun) -> str:
    p, hardware = run.params, run.hardware
    indices = ", ".join(str(g.nvml_index) for g in hardware.gpus)
    source = "the NVML energy counter" if run.counter else "integrated NVML power samples"
    note = (
        f"Measured on this machine: GPU-package energy of "
        f"{', '.join(sorted({g.name for g in hardware.gpus}))} (GPU {indices} by NVML index) "
        f"from {source}, {len(run.trials)} trials ({run.rounds} per format, {run.order}), "
        f"{p.tokens} new tokens each at batch {p.batch_size} ({run.decode.get('regime')} "
        f"decode), after {p.warmup} warm-ups per format; {run.checkpoint.weights} weights; "
        f"torch {run.versions.get('torch')}."
    )
    if (
        run.checkpoint.weights == "synthetic"
        and p.precision is Precision.INT8
        and p.spec().library == BITSANDBYTES
    ):
        note += " Synthetic weights understate the INT8 outlier-path penalty."
    compute = p.spec().compute_dtype
    if compute != "float16":
        note += (
            f" {p.spec().key} computes in {compute}; the FP16 baseline in float16 (both "
            "decode the same weights)."
        )
    if run.session is not None:
        others = ", ".join(f for f in run.session.formats if f != p.spec().key)
        note += f" One session with {others}: the FP16 trials are shared with their reports."
    if len(set(run.format_gpus.values())) > 1:
        note += " " + format_gpus_note(run.format_gpus, bool(run.held_gpus))
    return note


def method_text(counter: bool, power_field: str | None, rate_hz: float) -> str:
    field_name = (
        "instant power (NVML field 186)"
        if power_field == POWER_FIELD_INSTANT
        else "nvmlDeviceGetPowerUsage (a 1 s average on Ampere and newer)"
    )
    sampled = (
        f"{rate_hz:g} Hz sampling of {field_name}, trapezoidal integration over the same "
        "synchronized window"
    )
    if counter:
        return (
            "NVML total-energy counter (nvmlDeviceGetTotalEnergyConsumption) read at the "
            "edges of each torch.cuda.synchronize()-bracketed decode window, summed over "
            f"the GPUs the model occupies; cross-checked by {sampled}"
        )
    return f"{sampled} (no energy counter on this GPU)"


def _sizes(p: RunParams, params_count: int) -> dict[str, Any]:
    counted_b = round(params_count / 1e9, 6)
    nominal, source = nominal_params_b(p.model_name, p.params_b, counted_b)
    return {"params_b": nominal, "params_b_source": source, "params_b_counted": counted_b}
