"""The measured path: from an open NVML session to a MeasuredRun, or CannotMeasure.

Order of a run: CUDA devices matched to NVML -> power telemetry supported (before any
model is loaded) -> bitsandbytes preflight (before any download) -> load FP16 and the
quantized format -> one or two protocol phases (estimate/protocol.py) -> quality probe
after the samplers stop. Anything that makes this machine unmeasurable raises
CannotMeasure (with what was known of the hardware); estimate/run.py decides what then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.errors import CannotMeasure, MeasurementRefused, TelemetryUnavailable
from ecocompute.estimate.hardware import Hardware, cuda_hardware, known, nvml_hardware
from ecocompute.estimate.machine import Machine
from ecocompute.estimate.protocol import (
    IdleWindow,
    Instruments,
    PhasePlan,
    PhaseResult,
    Resident,
    Stopping,
    StoppingRecord,
    run_phase,
)
from ecocompute.estimate.quality import QualityOutcome, ScoreSheet
from ecocompute.estimate.trials import Trial
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.decode import make_decoder
from ecocompute.llm.loading import Checkpoint, LoadedModel, ModelBackend, count_parameters
from ecocompute.llm.memory import OutOfMemoryNamed, out_of_memory_named
from ecocompute.monitor.meter import EnergyMeter
from ecocompute.params import RunParams
from ecocompute.precision import Precision
from ecocompute.progress import Progress
from ecocompute.published.archs import arch_from_product_name
from ecocompute.telemetry.base import Capabilities, GpuTelemetry
from ecocompute.telemetry.mapping import DeviceMappingError, DeviceMatch, match_devices

# Expected memory of the quantized copy relative to the FP16 one (embeddings and the
# head stay in float16, so small models quantize less well), plus working room: used
# only to decide whether both copies fit for interleaving.
_FOOTPRINT_RATIO = {Precision.NF4: 0.5, Precision.INT8: 0.75}
_HEADROOM_MIB = 4096

INTERLEAVED = "interleaved"
ALTERNATING = "alternating blocks"
SINGLE = "single format"


@dataclass(frozen=True)
class MeasuredRun:
    """Everything a measured report says, decided; report/ turns it into JSON."""

    params: RunParams
    hardware: Hardware  # the GPUs a meter read, NVML order
    arch: str
    power_field: str | None  # None where the GPUs disagree
    counter: bool  # every window read the NVML energy counter
    counter_edges: dict[str, Any]
    versions: Mapping[str, str | None]  # torch, cuda
    checkpoint: Checkpoint
    params_count: int
    prompt_tokens: int
    order: str  # INTERLEAVED, ALTERNATING or SINGLE
    trials: tuple[Trial, ...]
    idle: IdleWindow | None
    format_gpus: Mapping[Precision, tuple[int, ...]]  # NVML indices each format sums
    decode: Mapping[str, Any]  # the decode regime's record
    stopping: StoppingRecord
    quality: QualityOutcome

    @property
    def rounds(self) -> int:
        return self.stopping.rounds


@dataclass(frozen=True)
class Session:
    """A measurement in progress on matched, power-capable GPUs."""

    params: RunParams
    progress: Progress
    accelerator: Accelerator
    backend: ModelBackend
    matches: Sequence[DeviceMatch]
    caps: Mapping[int, Capabilities]
    instruments: Instruments


def measure(params: RunParams, progress: Progress, machine: Machine) -> MeasuredRun:
    """Measure this run on this machine's GPU(s). Raises CannotMeasure (the published
    path answers), InputError or RunError."""
    try:
        telemetry = machine.open_telemetry()
    except TelemetryUnavailable:
        if params.dry_run:  # the reason is the flag, whatever NVML would have said
            raise CannotMeasure("dry_run", "--dry_run") from None
        raise
    try:
        session = _open_session(params, progress, machine, telemetry)
        hardware = cuda_hardware(telemetry, session.matches)
        oom = out_of_memory_named(params.model_name, None, "measuring", session.accelerator)
        with known(hardware), oom:
            return _run(session, telemetry)
    finally:
        telemetry.close()


def _open_session(
    params: RunParams, progress: Progress, machine: Machine, telemetry: GpuTelemetry
) -> Session:
    """CUDA matched to NVML, power telemetry checked; nothing loaded yet."""
    with known(nvml_hardware(telemetry)):
        if params.dry_run:
            raise CannotMeasure("dry_run", "--dry_run")
        accelerator = machine.open_accelerator(len(telemetry.devices()), params.max_gpu_memory_gib)
        try:
            matches = match_devices(accelerator.devices(), telemetry.devices())
        except DeviceMappingError as exc:
            raise MeasurementRefused(str(exc)) from None
        if not matches:
            raise CannotMeasure("no_gpu", "no GPU found by CUDA (it lists 0 devices)")
    with known(cuda_hardware(telemetry, matches)):
        caps = {m.nvml.index: telemetry.capabilities(m.nvml.index) for m in matches}
        first = matches[0].nvml
        if not caps[first.index].power:
            raise CannotMeasure("power_unsupported", f"power telemetry unsupported on {first.name}")
    instruments = Instruments(telemetry, accelerator.synchronize, caps, params.sample_rate_hz)
    return Session(params, progress, accelerator, machine.backend, matches, caps, instruments)


def _run(s: Session, telemetry: GpuTelemetry) -> MeasuredRun:
    p = s.params
    s.backend.preflight(p.precision, s.accelerator, p.llm_int8_threshold)
    checkpoint = s.backend.checkpoint(p.model_name, s.accelerator)
    prompt = s.backend.prompt(checkpoint, p.batch_size, s.accelerator)
    fp16 = _load(s, checkpoint, Precision.FP16)
    params_count = count_parameters(fp16.model)
    sheet = ScoreSheet(p, checkpoint, s.backend, s.accelerator, s.progress)
    phases, order, decode = _phases(s, checkpoint, fp16, prompt, sheet)
    meters = {fmt: meter for phase in phases for fmt, meter in phase.meters.items()}
    used = _used_gpus(s.matches, meters)
    power_fields = {s.caps[m.nvml.index].power_field for m in used}
    return MeasuredRun(
        params=p,
        hardware=cuda_hardware(telemetry, used),
        arch=arch_from_product_name(used[0].nvml.name),
        power_field=power_fields.pop() if len(power_fields) == 1 else None,
        counter=all(meter.use_counter for meter in meters.values()),
        counter_edges=_edges_record(list(meters.values())),
        versions=s.accelerator.versions(),
        checkpoint=checkpoint,
        params_count=params_count,
        prompt_tokens=int(prompt[0].shape[-1]),
        order=order,
        trials=tuple(t for phase in phases for t in phase.trials),
        idle=phases[0].idle,
        format_gpus={fmt: meter.indices for fmt, meter in meters.items()},
        decode=decode,
        stopping=_stopping_record(p, phases),
        quality=sheet.outcome(),
    )


def _phases(
    s: Session,
    checkpoint: Checkpoint,
    fp16: LoadedModel,
    prompt: tuple[Any, Any],
    sheet: ScoreSheet,
) -> tuple[list[PhaseResult], str, Mapping[str, Any]]:
    """Both formats resident and interleaved where they fit, else one block each. Each
    phase's models are scored once its sampler has stopped."""
    p = s.params
    if not p.precision.quantized:
        first = _phase(s, [fp16], prompt, idle=True)
        sheet.score({Precision.FP16: fp16.model})
        return [first.result], SINGLE, first.decode
    if _both_fit(s, fp16):
        quant = _load(s, checkpoint, p.precision)
        both = _phase(s, [fp16, quant], prompt, idle=True)
        sheet.score({Precision.FP16: fp16.model, p.precision: quant.model})
        return [both.result], INTERLEAVED, both.decode
    s.progress("FP16 and the quantized copy do not fit together: alternating blocks")
    first = _phase(s, [fp16], prompt, idle=True)
    sheet.score({Precision.FP16: fp16.model})
    del fp16
    s.accelerator.release()
    quant = _load(s, checkpoint, p.precision)
    second = _phase(s, [quant], prompt, idle=False, first_index=len(first.result.trials))
    sheet.score({p.precision: quant.model})
    return [first.result, second.result], ALTERNATING, first.decode


@dataclass(frozen=True)
class _Phase:
    result: PhaseResult
    decode: Mapping[str, Any]


def _phase(
    s: Session,
    loaded: Sequence[LoadedModel],
    prompt: tuple[Any, Any],
    *,
    idle: bool,
    first_index: int = 0,
) -> _Phase:
    p = s.params
    residents = []
    record: Mapping[str, Any] = {}
    for model in loaded:
        decoder = make_decoder(
            model.model,
            prompt[0],
            prompt[1],
            p.tokens,
            p.decode,
            label=str(model.precision),
            capture=s.accelerator.kind == "cuda",  # the CPU stand-in steps it eagerly
        )
        if p.decode != "eager":
            s.progress(f"{model.precision}: preparing the {p.decode} decode (capture, check)")
        with out_of_memory_named(p.model_name, model.precision, "preparing", s.accelerator):
            decoder.prepare()
        record = decoder.record()
        named = OutOfMemoryNamed(decoder, p.model_name, model.precision, s.accelerator)
        residents.append(Resident(model.precision, named, _nvml_indices(s, model)))
    adaptive = p.ci_target_pts is not None and len(loaded) > 1
    stopping = Stopping(
        rounds=p.iterations,
        target_pts=p.ci_target_pts if adaptive else None,
        max_rounds=p.max_rounds,
        max_s=p.max_minutes * 60.0,
    )
    plan = PhasePlan(
        stopping=stopping,
        expected_tokens=p.tokens * p.batch_size,
        warmup=p.warmup,
        idle_seconds=p.idle_seconds if idle else 0.0,
        first_index=first_index,
        paired=p.precision.quantized,
    )
    return _Phase(run_phase(s.instruments, residents, plan, s.progress), record)


def _load(s: Session, checkpoint: Checkpoint, precision: Precision) -> LoadedModel:
    s.progress(f"loading {s.params.model_name} at {precision}")
    loaded = s.backend.load(checkpoint, precision, s.accelerator, s.params.llm_int8_threshold)
    s.progress(f"{precision} loaded: {loaded.footprint_mib:,.0f} MiB on device(s) {loaded.devices}")
    return loaded


def _both_fit(s: Session, fp16: LoadedModel) -> bool:
    memory = s.accelerator.memory_mib()
    if memory is None:
        return False
    needed = fp16.footprint_mib * _FOOTPRINT_RATIO[s.params.precision] + _HEADROOM_MIB
    return memory[0] >= needed


def _nvml_indices(s: Session, loaded: LoadedModel) -> tuple[int, ...]:
    """NVML indices of the GPUs holding the model; all must report power."""
    by_cuda = {m.cuda_index: m.nvml.index for m in s.matches}
    indices = tuple(by_cuda[i] for i in loaded.devices if i in by_cuda)
    if not indices:
        raise MeasurementRefused(
            f"the {loaded.precision} model is on no GPU that NVML can read "
            f"(devices {loaded.devices})"
        )
    for i in indices:
        if not s.caps[i].power:
            raise MeasurementRefused(f"power telemetry unsupported on NVML GPU {i}")
    return indices


def _stopping_record(p: RunParams, phases: Sequence[PhaseResult]) -> StoppingRecord:
    """How the run stopped; with alternating blocks no pair exists until the second
    block, so a target cannot be followed there and the count is fixed (said so)."""
    if len(phases) == 1:
        return phases[0].stopping
    record = phases[-1].stopping
    if p.ci_target_pts is None:
        return record
    return StoppingRecord(
        "fixed",
        p.ci_target_pts,
        record.rounds,
        "alternating blocks: the formats did not fit together, so no pair exists until the "
        "second block and --ci_target_pts could not be followed; fixed --iterations",
    )


def _used_gpus(
    matches: Sequence[DeviceMatch], meters: Mapping[Precision, EnergyMeter]
) -> list[DeviceMatch]:
    """The GPUs measured: those any meter read, in NVML order."""
    read = {i for meter in meters.values() for i in meter.indices}
    return sorted((m for m in matches if m.nvml.index in read), key=lambda m: m.nvml.index)


def _edges_record(meters: Sequence[EnergyMeter]) -> dict[str, Any]:
    """How the counter was read at window edges: the least precise meter's mode, with
    every meter's fallback edges counted."""
    records = [meter.edges_record() for meter in meters]
    worst = max(records, key=lambda r: r["mode"] != "interpolated between counter steps")
    return {**worst, "fallback_edges": sum(int(r["fallback_edges"]) for r in records)}
