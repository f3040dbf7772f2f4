"""The measurement path: from an open NVML session to a report with basis "measured".

Order of a run: measurement stack present (task.py) -> CUDA devices matched to NVML -> power
telemetry supported (before any model is loaded) -> bitsandbytes preflight (before any
download) -> load FP16 and the quantized format -> idle power -> warm-ups -> measured
trials, interleaved when both fit -> statistics -> quality probe after the samplers
stop. A refused measurement falls back to the published reference, labelled so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ecocompute.errors import MeasurementRefused
from ecocompute.estimate.published_path import FallbackReason, KnownHardware, reference_report
from ecocompute.estimate.results_block import format_gpus_note, results_block
from ecocompute.estimate.trials import Arm, Trial, run_trials, warm_up
from ecocompute.llm.cuda import Accelerator, cuda_visible_devices
from ecocompute.llm.loading import (
    Checkpoint,
    LoadedModel,
    ModelBackend,
    count_parameters,
    out_of_memory,
    quantization_record,
)
from ecocompute.llm.quality_probe import (
    not_requested,
    quality_from_scores,
    score_models,
    unavailable,
)
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION, EnergyMeter, WindowReading
from ecocompute.monitor.sampler import PowerSampler
from ecocompute.params import RunParams
from ecocompute.progress import Progress
from ecocompute.published.archs import arch_from_product_name
from ecocompute.report.document import MEASURED_SOURCE, assemble
from ecocompute.report.software import software_block
from ecocompute.stats import CI_METHOD
from ecocompute.telemetry.base import POWER_FIELD_INSTANT, Capabilities, GpuTelemetry
from ecocompute.telemetry.mapping import DeviceMappingError, DeviceMatch, match_devices
from ecocompute.units import mw_to_w

log = logging.getLogger(__name__)

# Expected memory of the quantized copy relative to the FP16 one (embeddings and the
# head stay in float16, so small models quantize less well), plus working room: used
# only to decide whether both copies fit for interleaving.
_FOOTPRINT_RATIO = {"NF4": 0.5, "INT8": 0.75}
_HEADROOM_MIB = 4096


def measure_or_fall_back(
    params: RunParams,
    progress: Progress,
    telemetry: GpuTelemetry,
    hardware: KnownHardware,
    accelerator: Accelerator,
    backend: ModelBackend,
    *,
    command: list[str] | None = None,
) -> dict[str, Any]:
    try:
        matches = match_devices(accelerator.devices(), telemetry.devices())
    except DeviceMappingError as exc:
        return reference_report(params, FallbackReason.measurement_failed(exc), hardware)
    if not matches:
        reason = FallbackReason("no_gpu", "no GPU found by CUDA (it lists 0 devices)")
        return reference_report(params, reason, hardware)
    visible = visible_hardware(telemetry, matches)
    caps = {m.nvml.index: telemetry.capabilities(m.nvml.index) for m in matches}
    if not caps[matches[0].nvml.index].power:
        card = matches[0].nvml.name
        progress(f"power telemetry unsupported on {card}: reference path")
        return reference_report(
            params,
            FallbackReason("power_unsupported", f"power telemetry unsupported on {card}"),
            visible,
        )
    run = Measurement(params, progress, telemetry, accelerator, backend, matches, caps)
    try:
        return run.report(command)
    except MeasurementRefused as exc:
        progress(f"measurement refused: {exc}")
        return reference_report(params, FallbackReason.measurement_failed(exc), visible)


def visible_hardware(telemetry: GpuTelemetry, matches: list[DeviceMatch]) -> KnownHardware:
    """The GPUs this process's CUDA uses, as the reference report describes them."""
    return KnownHardware(
        gpu_name=matches[0].nvml.name,
        accelerator_count=len(matches),
        nvidia_driver=telemetry.driver_version(),
        gpus=tuple(gpu_record(telemetry, m) for m in matches),
    )


def gpu_record(telemetry: GpuTelemetry, m: DeviceMatch) -> dict[str, Any]:
    limit = telemetry.power_limit_mw(m.nvml.index)
    memory = telemetry.memory_mib(m.nvml.index)
    return {
        "nvml_index": m.nvml.index,
        "cuda_index": m.cuda_index,
        "name": m.nvml.name,
        "uuid": m.nvml.uuid,
        "pci_bus_id": m.nvml.pci_bus_id,
        "power_limit_watts": None if limit is None else mw_to_w(limit),
        "memory_total_mib": None if memory is None else memory[1],
        "matched_by": m.matched_by,
    }


@dataclass
class Measurement:
    params: RunParams
    progress: Progress
    telemetry: GpuTelemetry
    accelerator: Accelerator
    backend: ModelBackend
    matches: list[DeviceMatch]
    caps: dict[int, Capabilities]
    trials: list[Trial] = field(default_factory=list)
    idle: WindowReading | None = None
    scores: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    quality_error: str | None = None
    prompt_tokens: int | None = None
    arms: list[Arm] = field(default_factory=list)  # every format, every phase
    idle_meter: EnergyMeter | None = None

    # -- devices -----------------------------------------------------------------
    def nvml_indices(self, loaded: LoadedModel) -> list[int]:
        """NVML indices of the GPUs holding the model; all must report power."""
        by_cuda = {m.cuda_index: m.nvml.index for m in self.matches}
        indices = [by_cuda[i] for i in loaded.devices if i in by_cuda]
        if not indices:
            raise MeasurementRefused(
                f"the {loaded.precision} model is on no GPU that NVML can read "
                f"(devices {loaded.devices})"
            )
        for i in indices:
            if not self.caps[i].power:
                raise MeasurementRefused(f"power telemetry unsupported on NVML GPU {i}")
        return indices

    def edges_record(self) -> dict[str, Any]:
        records = [arm.meter.edges_record() for arm in self.arms]
        worst = max(records, key=lambda r: r["mode"] != "interpolated between counter steps")
        return {**worst, "fallback_edges": sum(int(r["fallback_edges"]) for r in records)}

    def used(self) -> list[DeviceMatch]:
        """The GPUs measured: those any meter read, in NVML order."""
        measured = {i for arm in self.arms for i in arm.meter.indices}
        return [
            m for m in sorted(self.matches, key=lambda m: m.nvml.index) if m.nvml.index in measured
        ]

    def counter_everywhere(self) -> bool:
        return all(arm.meter.use_counter for arm in self.arms)

    def format_gpus(self) -> dict[str, tuple[int, ...]]:
        """NVML indices each format's energy sums (the GPUs its model occupies)."""
        return {arm.precision: arm.meter.indices for arm in self.arms}

    # -- models ------------------------------------------------------------------
    def load(self, checkpoint: Checkpoint, precision: str) -> LoadedModel:
        self.progress(f"loading {self.params.model_name} at {precision}")
        loaded = self.backend.load(
            checkpoint, precision, self.accelerator, self.params.llm_int8_threshold
        )
        self.progress(
            f"{precision} loaded: {loaded.footprint_mib:,.0f} MiB on device(s) {loaded.devices}"
        )
        return loaded

    def both_fit(self, fp16: LoadedModel) -> bool:
        memory = self.accelerator.memory_mib()
        if memory is None:
            return False
        needed = fp16.footprint_mib * _FOOTPRINT_RATIO[self.params.precision] + _HEADROOM_MIB
        return memory[0] >= needed

    def arm(
        self,
        loaded: LoadedModel,
        prompt: tuple[Any, Any],
        sampler: PowerSampler,
        indices: list[int],
    ) -> Arm:
        import torch
        from transformers import GenerationConfig

        ids, mask = prompt
        model = loaded.model
        pad, eos = model.config.pad_token_id, model.config.eos_token_id
        config = GenerationConfig(
            max_new_tokens=self.params.tokens,
            min_new_tokens=self.params.tokens,
            do_sample=False,
            num_beams=1,
            use_cache=True,
            pad_token_id=pad if pad is not None else eos,
            eos_token_id=eos,
        )
        prompt_len = ids.shape[-1]

        def generate() -> Any:
            try:
                return model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
            except torch.cuda.OutOfMemoryError as exc:  # name the format that ran out
                raise out_of_memory(
                    self.params.model_name, loaded.precision, "running", self.accelerator, exc
                ) from None

        def new_tokens(output: Any) -> int:
            return int(output.shape[-1] - prompt_len) * int(output.shape[0])

        return Arm(loaded.precision, generate, new_tokens, self.meter(indices, sampler))

    def meter(self, indices: list[int], sampler: PowerSampler) -> EnergyMeter:
        """A meter over these GPUs (NVML indices), not yet calibrated."""
        return EnergyMeter(
            self.telemetry,
            indices,
            sampler,
            self.accelerator.synchronize,
            use_counter=all(self.caps[i].energy_counter for i in indices),
        )

    def meter_over_all(
        self, arms: list[Arm], indices: list[int], sampler: PowerSampler
    ) -> EnergyMeter:
        """A calibrated meter over every GPU of the phase, for idle power: each format
        then subtracts the idle of the GPUs it occupies. An arm's own meter when one
        already covers them all (the usual case: one GPU)."""
        for arm in arms:
            if arm.meter.indices == tuple(indices):
                return arm.meter
        meter = self.meter(indices, sampler)
        meter.calibrate()
        return meter

    def idle_power_by_gpu(self) -> dict[int, float] | None:
        """Idle watts per NVML index, from the idle window."""
        if self.idle is None or self.idle_meter is None:
            return None
        return {
            i: j / self.idle.duration_s
            for i, j in zip(self.idle_meter.indices, self.idle.per_gpu_j, strict=True)
        }

    # -- the protocol --------------------------------------------------------------
    def run_phase(self, loaded: list[LoadedModel], prompt: tuple[Any, Any], *, idle: bool) -> None:
        """Sampler on for: idle window, warm-ups, measured trials; off on return."""
        p = self.params
        per_model = [self.nvml_indices(m) for m in loaded]
        indices = sorted({i for model_indices in per_model for i in model_indices})
        sampler = PowerSampler(
            lambda i: mw_to_w(self.telemetry.power_mw(i)), indices, p.sample_rate_hz
        )
        with sampler:
            arms = [
                self.arm(m, prompt, sampler, model_indices)
                for m, model_indices in zip(loaded, per_model, strict=True)
            ]
            for arm in arms:
                arm.meter.calibrate()
            self.arms.extend(arms)
            if idle and p.idle_seconds > 0:
                self.idle_meter = self.meter_over_all(arms, indices, sampler)
                self.progress(f"idle power: {p.idle_seconds:g} s with the model(s) resident")
                self.idle = self.idle_meter.idle(p.idle_seconds)
                self.progress(f"idle: {self.idle.energy_j / self.idle.duration_s:.1f} W")
            warm_up(arms, p.warmup, self.progress)
            run_trials(
                arms,
                p.iterations,
                p.tokens * p.batch_size,
                self.progress,
                trials=self.trials,
                number_pairs=p.quantized,
            )

    def score(self, checkpoint: Checkpoint, models: dict[str, Any]) -> None:
        """Perplexity of models; only ever called with every sampler stopped."""
        p = self.params
        if not p.quality_probe or checkpoint.weights == "synthetic" or self.quality_error:
            return
        self.progress(f"quality probe (samplers stopped): {', '.join(models)}")
        try:
            tokenizer = self.backend.tokenizer(checkpoint)
            self.scores.update(
                score_models(models, tokenizer, p.quality_seq_len, self.accelerator.input_device())
            )
        except Exception as exc:  # optional probe: reported as unavailable, never fatal
            self.quality_error = f"{type(exc).__name__}: {str(exc)[:300]}"

    def quality(self, checkpoint: Checkpoint) -> dict[str, Any]:
        if not self.params.quality_probe:
            return not_requested()
        if checkpoint.weights == "synthetic":
            return unavailable("synthetic weights: perplexity of random weights is meaningless")
        if self.quality_error or "FP16" not in self.scores:
            return unavailable(self.quality_error or "not scored")
        return quality_from_scores(self.scores, self.params.quality_seq_len)

    def measure(self, checkpoint: Checkpoint) -> tuple[int, str]:
        """Load, run the protocol, score; returns (parameter count, trial order)."""
        p = self.params
        prompt = self.backend.prompt(checkpoint, p.batch_size, self.accelerator)
        self.prompt_tokens = int(prompt[0].shape[-1])
        fp16 = self.load(checkpoint, "FP16")
        params_count = count_parameters(fp16.model)
        if not p.quantized:
            self.run_phase([fp16], prompt, idle=True)
            self.score(checkpoint, {"FP16": fp16.model})
            return params_count, "single format"
        if self.both_fit(fp16):
            quant = self.load(checkpoint, p.precision)
            self.run_phase([fp16, quant], prompt, idle=True)
            self.score(checkpoint, {"FP16": fp16.model, p.precision: quant.model})
            return params_count, "interleaved"
        self.progress("FP16 and the quantized copy do not fit together: alternating blocks")
        self.run_phase([fp16], prompt, idle=True)
        self.score(checkpoint, {"FP16": fp16.model})
        del fp16
        self.accelerator.release()
        quant = self.load(checkpoint, p.precision)
        self.run_phase([quant], prompt, idle=False)
        self.score(checkpoint, {p.precision: quant.model})
        return params_count, "alternating blocks"

    def report(self, command: list[str] | None) -> dict[str, Any]:
        import torch

        p = self.params
        self.backend.preflight(p.precision, self.accelerator, p.llm_int8_threshold)
        try:
            checkpoint = self.backend.checkpoint(p.model_name, self.accelerator)
            params_count, order = self.measure(checkpoint)
        except torch.cuda.OutOfMemoryError as exc:  # loads and decodes say which format
            raise out_of_memory(p.model_name, None, "measuring", self.accelerator, exc) from None
        return self.assemble(checkpoint, params_count, order, command)

    # -- the report ----------------------------------------------------------------
    def assemble(
        self, checkpoint: Checkpoint, params_count: int, order: str, command: list[str] | None
    ) -> dict[str, Any]:
        p = self.params
        used = self.used()
        names = sorted({m.nvml.name for m in used})
        counter = self.counter_everywhere()
        power_fields = {self.caps[m.nvml.index].power_field for m in used}
        power_field = power_fields.pop() if len(power_fields) == 1 else None
        versions = self.accelerator.versions()
        n_trials = len(self.trials)
        note = (
            f"Measured on this machine: GPU-package energy of {', '.join(names)} "
            f"(GPU {', '.join(str(m.nvml.index) for m in used)} by NVML index) from "
            f"{'the NVML energy counter' if counter else 'integrated NVML power samples'}, "
            f"{n_trials} trials ({p.iterations} per format, {order}), {p.tokens} new tokens "
            f"each at batch {p.batch_size}, after {p.warmup} warm-ups per format; "
            f"{checkpoint.weights} weights; torch {versions.get('torch')}."
        )
        if checkpoint.weights == "synthetic" and p.precision == "INT8":
            note += " Synthetic weights understate the INT8 outlier-path penalty."
        format_gpus = self.format_gpus()
        if len(set(format_gpus.values())) > 1:
            note += " " + format_gpus_note(format_gpus)
        results = results_block(
            p.precision, self.trials, self.idle, note, format_gpus, self.idle_power_by_gpu()
        )
        arch = arch_from_product_name(used[0].nvml.name)
        return assemble(
            p,
            system_under_test={
                "gpu": " + ".join(names),
                "gpu_arch": arch,
                "gpu_arch_source": f"NVML product name '{used[0].nvml.name}'",
                "accelerator_count": len(used),
                "gpus": [gpu_record(self.telemetry, m) for m in used],
                "cuda_visible_devices": cuda_visible_devices(),
            },
            workload={
                "params_b": round(params_count / 1e9, 6),
                "params_b_source": "counted from the loaded weights",
                "prompt_tokens": self.prompt_tokens,
                "weights": checkpoint.weights,
                "weights_note": checkpoint.weights_note,
                **({"llm_int8_threshold": p.llm_int8_threshold} if p.precision == "INT8" else {}),
                "quantization": quantization_record(p.precision, p.llm_int8_threshold),
            },
            measurement={
                "method": method_text(counter, power_field, p.sample_rate_hz),
                "iterations_note": (
                    f"{p.iterations} measured decode runs per format after {p.warmup} "
                    f"warm-ups; each run is one trial; pairs are FP16 and {p.precision} "
                    "trials of the same round."
                ),
                "energy_source": "nvml_energy_counter" if counter else "sampled_power",
                "power_field": power_field,
                "order": order,
                "order_note": ORDER_NOTES[order],
                "idle_seconds": p.idle_seconds,
                "max_gpu_memory_gib": p.max_gpu_memory_gib,
                "min_valid_sample_fraction": MIN_VALID_SAMPLE_FRACTION,
                "counter_edges": self.edges_record(),
                "ci_method": CI_METHOD if p.quantized else None,
                "decode": {
                    "do_sample": False,
                    "num_beams": 1,
                    "min_new_tokens": p.tokens,
                    "max_new_tokens": p.tokens,
                    "batch_size": p.batch_size,
                    "prompt": "12 seeded random token ids"
                    if checkpoint.weights == "synthetic"
                    else "a fixed English instruction (ecocompute.llm.loading.PROMPT_TEXT)",
                },
            },
            software=software_block(
                torch_cuda=versions.get("cuda"), nvidia_driver=self.telemetry.driver_version()
            ),
            measurement_source=MEASURED_SOURCE,
            results=results,
            quality=self.quality(checkpoint),
            command=command,
        )


ORDER_NOTES = {
    "interleaved": "FP16 and the quantized model were resident together; trials ran FP16, "
    "Q, FP16, Q ... so drift in clocks, temperature and host load falls on both.",
    "alternating blocks": "the two formats did not fit on the GPU(s) together: all FP16 "
    "trials ran, then all quantized trials; drift between the blocks is not cancelled.",
    "single format": "FP16 alone was requested and measured.",
}


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
