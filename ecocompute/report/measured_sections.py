"""A measured report's sections: the card, the workload, the protocol, the trials and
their statistics, the session and its timing."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.rounding import rounded
from ecocompute.core.stats import CI_METHOD
from ecocompute.formats.table import BITSANDBYTES
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION
from ecocompute.params import RunParams, nominal_params_b
from ecocompute.report.conditions_block import before_session_record
from ecocompute.report.decode_block import decode_block
from ecocompute.report.labels import format_gpus_note
from ecocompute.report.quality_block import quality_section
from ecocompute.report.section_parts import (
    MEASURED_SOURCE,
    ORDER_NOTES,
    gpu_dict,
    int8_threshold,
)
from ecocompute.report.software import software_block
from ecocompute.report.trial_results import results_block
from ecocompute.task.hardware import Hardware
from ecocompute.task.outcome import MeasuredRun, Session
from ecocompute.telemetry.base import POWER_FIELD_INSTANT


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
            "gpus": [
                {
                    **gpu_dict(g),
                    "before_session": before_session_record(run.before.get(g.nvml_index)),
                }
                for g in hardware.gpus
            ],
            "cuda_visible_devices": hardware.cuda_visible_devices,
            "memory_bandwidth_gbs": rounded(run.bandwidth_gbs, 1),
        },
        "workload": {
            **_sizes(p, run.params_count),
            "prompt_tokens": run.prompt_tokens,
            "weights": weights,
            "weights_note": run.checkpoint.weights_note,
            **int8_threshold(p),
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
        "siblings": {other: f"../{other}/energy.json" for other in session.formats if other != key},
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
