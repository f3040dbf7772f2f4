"""The reference path: a report derived from the published dataset, never a measurement.

Taken when there is no usable GPU, when NVML or power telemetry is unavailable, on
--dry_run, or when an on-device measurement was refused; measurement_source says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ecocompute.errors import InputError
from ecocompute.params import RunParams, params_b_from_model_name
from ecocompute.published.archs import arch_from_product_name, normalise_arch_choice
from ecocompute.published.figures import estimate, published
from ecocompute.report.document import assemble, fallback_source
from ecocompute.report.software import software_block


@dataclass(frozen=True)
class FallbackReason:
    # no_gpu | nvml_unavailable | power_unsupported | dry_run | measurement_failed |
    # stack_missing (the schema lists them)
    code: str
    text: str

    @classmethod
    def measurement_failed(cls, why: object) -> FallbackReason:
        """An on-device measurement was started and refused (the label reports carry)."""
        return cls("measurement_failed", f"on-device measurement failed: {why}")


@dataclass(frozen=True)
class KnownHardware:
    """What the environment probe learnt before the reference path was chosen."""

    gpu_name: str | None = None
    accelerator_count: int = 0
    nvidia_driver: str | None = None
    gpus: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ResolvedArch:
    arch: str
    source: str  # how it was decided, for the report and the summary
    headline_default: bool = False


def resolve_arch(choice: str, gpu_name: str | None) -> ResolvedArch:
    arch, product = normalise_arch_choice(choice)
    if product is not None:
        return ResolvedArch(arch, f"--gpu_arch product name '{product}'")
    if arch != "auto":
        return ResolvedArch(arch, "--gpu_arch")
    if gpu_name is not None:
        return ResolvedArch(arch_from_product_name(gpu_name), f"NVML product name '{gpu_name}'")
    headline = published()["headline"]
    return ResolvedArch(
        headline["arch"],
        f"no GPU detected: the published headline card {headline['card']} "
        f"({headline['arch']}) is used; pass --gpu_arch to choose another",
        headline_default=True,
    )


def resolve_params_b(params: RunParams) -> tuple[float, str]:
    if params.params_b is not None:
        return params.params_b, "flag or parameters file"
    from_name = params_b_from_model_name(params.model_name)
    if from_name is None:
        raise InputError(
            "params_b",
            None,
            f"no size found in model name '{params.model_name}'; pass --params_b "
            "(billions of parameters, e.g. --params_b 1.1)",
        )
    return from_name, "model name"


def reference_report(
    params: RunParams, reason: FallbackReason, hardware: KnownHardware
) -> dict[str, Any]:
    """The full report for the reference path."""
    params_b, params_b_source = resolve_params_b(params)
    arch = resolve_arch(params.gpu_arch, hardware.gpu_name)
    ref = estimate(arch.arch, params_b, params.precision)

    note = ref.note
    if arch.headline_default and ref.basis != "unavailable":
        note = f"{arch.source}. {note}"
    note = (
        f"Derived from the published EcoCompute dataset, not measured on this machine "
        f"({reason.text}). {note}."
    )
    results: dict[str, Any] = {
        "total_energy_joules": None,
        "tokens_generated": 0,
        "energy_per_token_mj": _r(ref.energy_per_token_mj),
        "fp16_energy_per_token_mj": _r(ref.fp16_energy_per_token_mj),
        "vs_fp16_energy_pct": _r(ref.vs_fp16_energy_pct, 2),
        "avg_power_watts": None,
        "throughput_tokens_per_s": None,
        "basis": ref.basis,
        "note": note,
        "fallback_reason": reason.code,
        "reference_card": ref.reference_card,
        "verdict": None,
        "vs_fp16_ci95_pct": None,
        "trials": [],
    }
    return assemble(
        params,
        system_under_test={
            "gpu": hardware.gpu_name,
            "gpu_arch": arch.arch,
            "gpu_arch_source": arch.source,
            "accelerator_count": hardware.accelerator_count,
            **({"gpus": list(hardware.gpus)} if hardware.gpus else {}),
        },
        workload={
            "params_b": params_b,
            "params_b_source": params_b_source,
            "weights": "not loaded",
            "prompt_tokens": None,
            **(
                {"llm_int8_threshold": params.llm_int8_threshold}
                if params.precision == "INT8"
                else {}
            ),
        },
        measurement={
            "method": (
                "none in this run: figure derived from the published EcoCompute dataset "
                "(NVML power at 10 Hz integrated over the decode loop, batch 1, 256 tokens, "
                "10 iterations after 2 warm-ups, n = 2 per configuration)"
            ),
            "iterations_note": (
                "No decode ran. tokens_per_run, iterations and warmup record the requested "
                "protocol; the published figures followed the published protocol."
            ),
            "energy_source": "none",
            "power_field": None,
            "order": "none",
        },
        software=software_block(torch_cuda=None, nvidia_driver=hardware.nvidia_driver),
        measurement_source=fallback_source(reason.text),
        results=results,
        quality={
            "basis": "unavailable" if params.quality_probe else "not requested",
            "reason": "no model was loaded on the reference path"
            if params.quality_probe
            else "--no_quality_probe",
        },
    )


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
