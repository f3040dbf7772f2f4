"""A published-path report's sections: the figure from the published dataset (or this
project's H200 measurements), labelled, with the curve that gave it."""

from __future__ import annotations

from typing import Any

from ecocompute.core.rounding import rounded
from ecocompute.published.figures import (
    ORIGIN_PUBLISHED,
    DeltaCurve,
    PublishedFigure,
)
from ecocompute.published.site_curves import SITE_CURVES
from ecocompute.report.section_parts import (
    EAGER_NOTE,
    NO_LOCAL_GPU,
    gpu_dict,
    int8_threshold,
)
from ecocompute.report.software import software_block
from ecocompute.task.published_path import PublishedRun


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
            **({"gpus": [gpu_dict(g) for g in hardware.gpus]} if hardware.gpus else {}),
        },
        "workload": {
            "params_b": run.params_b,
            "params_b_source": run.params_b_source,
            "weights": "not loaded",
            "prompt_tokens": None,
            **int8_threshold(params),
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
            "energy_per_token_mj": rounded(fig.energy_per_token_mj),
            "fp16_energy_per_token_mj": rounded(fig.fp16_energy_per_token_mj),
            "vs_fp16_energy_pct": rounded(fig.vs_fp16_energy_pct, 1),
            "vs_fp16_energy_pct_3dp": rounded(fig.vs_fp16_energy_pct, 3),
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
