"""The measured path: from an open NVML session to a MeasuredRun, or CannotMeasure.

Order of a run: CUDA devices matched to NVML -> power telemetry supported (before any
model is loaded) -> each format's preflight (before any download) -> load FP16 and the
quantized format(s) -> one or two protocol phases (task/protocol.py) -> quality
probe after the samplers stop. A session of several formats keeps them all resident
and runs one phase (every model once per round, order rotated); it never alternates.
Anything that makes this machine unmeasurable raises CannotMeasure (with what was known
of the hardware); task/run.py decides what then.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecocompute.boundary.progress import Progress
from ecocompute.core.json_types import JsonObject
from ecocompute.core.precision import Precision
from ecocompute.core.units import mw_to_w
from ecocompute.errors import (
    CannotMeasure,
    DecodeCaptureFailed,
    MeasurementRefused,
    RunError,
    TelemetryUnavailable,
)
from ecocompute.formats.table import FP16_SPEC, FormatSpec
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.decode import make_decoder
from ecocompute.llm.loading import Checkpoint, LoadedModel, ModelBackend, count_parameters
from ecocompute.llm.memory import OutOfMemoryNamed, out_of_memory_named
from ecocompute.llm.prompt import check_context, check_memory
from ecocompute.monitor.meter import EdgesRecord, EnergyMeter
from ecocompute.monitor.trace import WholeRunTrace, summed
from ecocompute.params import RunParams
from ecocompute.published.archs import arch_from_product_name
from ecocompute.task.fit import both_fit, check_all_fit
from ecocompute.task.hardware import cuda_hardware, known, nvml_hardware
from ecocompute.task.machine import Machine
from ecocompute.task.outcome import (
    ALTERNATING,
    INTERLEAVED,
    ROTATED,
    SINGLE,
    MeasuredRun,
    Session,
)
from ecocompute.task.protocol import (
    BEFORE_SESSION_IDLE_S,
    Instruments,
    PhasePlan,
    PhaseResult,
    Resident,
    Stopping,
    StoppingRecord,
    read_before_session,
    run_phase,
)
from ecocompute.task.quality import ScoreSheet
from ecocompute.task.timing import Stopwatch
from ecocompute.telemetry.base import Capabilities, GpuTelemetry
from ecocompute.telemetry.mapping import DeviceMappingError, DeviceMatch, match_devices

# What preparing each regime does, for the progress line before it.
_PREPARES = {
    "graphs": "capture, check",
    "compiled": "torch.compile, a minute or more per format at 7B; then capture, check",
}

__all__ = ["ALTERNATING", "INTERLEAVED", "ROTATED", "SINGLE", "MeasuredRun", "measure"]


@dataclass(frozen=True)
class Bench:
    """A measurement in progress on matched, power-capable GPUs."""

    params: RunParams
    progress: Progress
    accelerator: Accelerator
    backend: ModelBackend
    matches: Sequence[DeviceMatch]
    caps: Mapping[int, Capabilities]
    instruments: Instruments
    clock: Stopwatch = field(default_factory=lambda: Stopwatch())
    trace: WholeRunTrace | None = None  # --power_trace, started before the first load


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
        bench = _open_bench(params, progress, machine, telemetry)
        hardware = cuda_hardware(telemetry, bench.matches)
        oom = out_of_memory_named(params.model_name, None, "measuring", bench.accelerator)
        with known(hardware), oom:
            return _run(bench, telemetry)
    finally:
        telemetry.close()


def _open_bench(
    params: RunParams, progress: Progress, machine: Machine, telemetry: GpuTelemetry
) -> Bench:
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
    instruments = Instruments(
        telemetry, accelerator.synchronize, caps, params.sample_rate_hz, machine.open_sampler
    )
    return Bench(params, progress, accelerator, machine.backend, matches, caps, instruments)


def _run(s: Bench, telemetry: GpuTelemetry) -> MeasuredRun:
    p = s.params
    specs = [p.spec(f) for f in p.session_formats]
    for spec in specs:
        s.backend.preflight(spec, s.accelerator)
    before = read_before_session(
        s.instruments,
        [m.nvml.index for m in s.matches],
        min(BEFORE_SESSION_IDLE_S, p.idle_seconds),
        s.progress,
    )
    if not p.power_trace:
        return _session_run(s, telemetry, before, None)
    trace = WholeRunTrace(
        lambda i: mw_to_w(telemetry.power_mw(i)),
        [m.nvml.index for m in s.matches],
        p.sample_rate_hz,
    )
    trace.start()  # before anything is loaded: the trace spans the whole run
    try:
        return _session_run(dataclasses.replace(s, trace=trace), telemetry, before, trace)
    finally:
        trace.stop()


def _session_run(
    s: Bench,
    telemetry: GpuTelemetry,
    before: Mapping[int, Any],
    trace: WholeRunTrace | None,
) -> MeasuredRun:
    p = s.params
    specs = [p.spec(f) for f in p.session_formats]
    if trace is not None:
        trace.mark("load_start_s")
    checkpoint = s.backend.checkpoint(p.model_name, s.accelerator)
    if p.prompt_tokens is not None:  # before any weights load
        config = s.backend.config(checkpoint)
        limit = getattr(config, "max_position_embeddings", None)
        check_context(p.model_name, limit, p.prompt_tokens, p.tokens)
    prompt = s.backend.prompt(checkpoint, p.batch_size, s.accelerator, p.prompt_tokens)
    fp16 = _load(s, checkpoint, FP16_SPEC)
    params_count = count_parameters(fp16.model)
    sheet = ScoreSheet(p, checkpoint, s.backend, s.accelerator, s.progress)
    held = [fp16]
    del fp16  # _phases holds the only reference: alternating blocks free FP16 before NF4's load
    phases, order, loaded = _phases(s, checkpoint, held, prompt, sheet, specs)
    refused = {fmt: why for phase in phases for fmt, why in phase.refused.items()}
    s.clock.reused = all(m.reused for m in loaded)
    meters = {fmt: meter for ph in phases for fmt, meter in ph.result.meters.items()}
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
        trials=tuple(t for phase in phases for t in phase.result.trials),
        idle=phases[0].result.idle,
        format_gpus={fmt: g for phase in phases for fmt, g in phase.result.gpus.items()},
        held_gpus=phases[0].result.held if len(phases) == 1 or p.compiles > 1 else (),
        decode=phases[0].decode,
        decode_per_format={
            k: v
            for phase in phases[: 1 if p.compiles > 1 else None]
            for k, v in phase.per_format.items()
        },
        decode_per_compile=tuple(ph.per_format for ph in phases) if p.compiles > 1 else (),
        compile_cache_dirs=tuple(ph.cache_dir or "" for ph in phases) if p.compiles > 1 else (),
        stopping=_stopping_record(p, [phase.result for phase in phases]),
        quality=sheet.outcome(),
        quantization={m.precision: m.quantization for m in loaded},
        weights_mib={m.precision: m.footprint_mib for m in loaded},
        bandwidth_gbs=_bandwidth_gbs(telemetry, used),
        session=_session(specs, refused),
        timing=s.clock.timing(),
        before={i: b for i, b in before.items() if i in {m.nvml.index for m in used}},
        prefills={k: v for phase in phases for k, v in phase.result.prefills.items()},
        prefill_s={k: v for phase in phases for k, v in phase.result.prefill_s.items()},
        power_trace=None if trace is None else trace.stop(),
    )


def _session(specs: Sequence[FormatSpec], refused: Mapping[Precision, str]) -> Session | None:
    if len(specs) < 2:
        return None
    keys = tuple(spec.key for spec in specs if spec.precision not in refused)
    return Session(keys, {s.key: refused[s.precision] for s in specs if s.precision in refused})


def _bandwidth_gbs(telemetry: GpuTelemetry, used: Sequence[DeviceMatch]) -> float | None:
    """The first measured GPU's peak memory bandwidth, where NVML reports it."""
    try:
        return telemetry.memory_bandwidth_gbs(used[0].nvml.index)
    except Exception:  # a figure beside the measurement, never a reason to lose it
        return None


def _phases(
    s: Bench,
    checkpoint: Checkpoint,
    held: list[LoadedModel],
    prompt: tuple[Any, Any],
    sheet: ScoreSheet,
    specs: Sequence[FormatSpec],
) -> tuple[list[_Phase], str, list[LoadedModel]]:
    """Every format resident and interleaved where they fit, else (one format only)
    one block each. Each phase's models are scored once its sampler has stopped. held:
    the loaded FP16 model, taken out, so that this frame holds its only reference."""
    fp16 = held.pop()
    if not specs:
        first = _phase(s, [fp16], prompt, idle=True)
        _score(s, sheet, {Precision.FP16: fp16.model})
        return [first], SINGLE, [fp16]
    if len(specs) > 1:
        check_all_fit(s.accelerator, s.params.model_name, fp16, specs)
    if len(specs) > 1 or both_fit(s.accelerator, fp16, specs[0]):
        models = [fp16, *(_load(s, checkpoint, spec) for spec in specs)]
        blocks = _compile_blocks(s, models, prompt, rotate=len(specs) > 1)
        models = [m for m in models if m.precision not in blocks[0].refused]
        _score(s, sheet, {m.precision: m.model for m in models})
        order = ROTATED if len(specs) > 1 else INTERLEAVED
        return blocks, order, models
    if s.params.compiles > 1:
        raise RunError(
            "--compiles needs FP16 and the quantized copy resident together; they do not "
            "fit on this machine (alternating blocks would put a compile between the two "
            "trials of a pair)"
        )
    s.progress("FP16 and the quantized copy do not fit together: alternating blocks")
    first = _phase(s, [fp16], prompt, idle=True)
    _score(s, sheet, {Precision.FP16: fp16.model})
    fp16_kept = _let_go(s, fp16)
    del fp16
    s.accelerator.release()
    quant = _load(s, checkpoint, specs[0])
    second = _phase(s, [quant], prompt, idle=False, first_index=len(first.result.trials))
    _score(s, sheet, {quant.precision: quant.model})
    # Not kept either: a sweep's next point loads FP16 first, which does not fit beside it
    quant_kept = _let_go(s, quant)
    return [first, second], ALTERNATING, [fp16_kept, quant_kept]


def _let_go(s: Bench, loaded: LoadedModel) -> LoadedModel:
    """An alternating block's model, measured: the backend (and a sweep's cache) lets it
    go; what the report says of it (its devices, footprint, quantization) stays."""
    s.backend.forget(loaded)
    return dataclasses.replace(loaded, model=None)


def _compile_blocks(
    s: Bench, models: Sequence[LoadedModel], prompt: tuple[Any, Any], *, rotate: bool
) -> list[_Phase]:
    """The resident formats measured together: one phase, or with --compiles N one per
    compile, each compiling every format afresh (dynamo reset, an empty inductor cache)
    and numbering its rounds on from the last; only the first reads idle power."""
    p = s.params
    if p.compiles == 1:  # a session's format the regime refuses is left out (one compile)
        return [_phase(s, models, prompt, idle=True, rotate=rotate, refusable=rotate)]
    from ecocompute.llm.compiled import reset_compiles

    blocks: list[_Phase] = []
    for k in range(p.compiles):
        s.progress(f"compile {k + 1} of {p.compiles}: every format compiled from an empty cache")
        reset_compiles()
        folder = tempfile.mkdtemp(prefix=f"compile-{k + 1}-", dir=_compiles_root())
        done = [t for b in blocks for t in b.result.trials]
        block = _phase(
            s,
            models,
            prompt,
            idle=k == 0,
            rotate=rotate,
            first_index=len(done),
            fresh_cache_dir=folder,
        )
        first_pair = 1 + max((t.pair for t in done if t.pair is not None), default=-1)
        trials = tuple(
            dataclasses.replace(t, pair=None if t.pair is None else t.pair + first_pair, compile=k)
            for t in block.result.trials
        )
        result = dataclasses.replace(block.result, trials=trials)
        blocks.append(dataclasses.replace(block, result=result, cache_dir=folder))
    return blocks


def _compiles_root() -> str:
    from ecocompute.llm.synthetic import tool_cache_root

    root = tool_cache_root() / "inductor-compiles"
    root.mkdir(parents=True, exist_ok=True)
    return str(root)


def _score(s: Bench, sheet: ScoreSheet, models: Mapping[Precision, Any]) -> None:
    """The quality probe, with every sampler stopped: the trace is paused for it (its
    edges marked), as the protocol's sampler is stopped."""
    if s.trace is None or not sheet.wanted():
        sheet.score(models)
        return
    s.trace.pause()
    s.trace.mark("quality_start_s")
    try:
        sheet.score(models)
    finally:
        s.trace.mark("quality_end_s", last=True)
        s.trace.resume()


@dataclass(frozen=True)
class _Phase:
    result: PhaseResult
    decode: Mapping[str, Any]  # the regime's record, the same for every format
    per_format: Mapping[Precision, Mapping[str, Any]]  # what differs per format (compile)
    cache_dir: str | None = None  # one of --compiles N: the empty folder it compiled into
    refused: Mapping[Precision, str] = field(default_factory=dict)  # left out, and why


def _phase(
    s: Bench,
    loaded: Sequence[LoadedModel],
    prompt: tuple[Any, Any],
    *,
    idle: bool,
    first_index: int = 0,
    rotate: bool = False,
    fresh_cache_dir: str | None = None,
    refusable: bool = False,
) -> _Phase:
    """One protocol phase over these models: each one's decode prepared (outside every
    window), then the rounds. refusable (a session of several formats, one compile): a
    quantized format whose preparation the regime refuses (DecodeCaptureFailed: its
    compile, capture or token check) is left out and the others measured, as long as one
    remains; FP16's refusal, or every format's, stops the run."""
    p = s.params
    if p.prompt_tokens is not None:  # the caches of every resident format, and a prefill
        memory = s.accelerator.memory_mib()
        check_memory(
            p.model_name,
            loaded[0].model.config,
            batch_size=p.batch_size,
            prompt=p.prompt_tokens,
            tokens=p.tokens,
            formats=len(loaded),
            free_mib=None if memory is None else memory[0],
        )
    residents = []
    refused: dict[Precision, DecodeCaptureFailed] = {}
    records: dict[Precision, JsonObject] = {}
    per_format_keys: tuple[str, ...] = ()
    if s.trace is not None:
        s.trace.mark("model_ready_s", last=True)  # every model of the phase loaded
    since = time.monotonic()
    for model in loaded:
        decoder = make_decoder(
            model.model,
            prompt[0],
            prompt[1],
            p.tokens,
            p.decode,
            label=str(model.precision),
            capture=s.accelerator.kind == "cuda",  # the CPU stand-in steps it eagerly
            fresh_cache_dir=fresh_cache_dir,
            compile_batch=p.compile_batch,
            compile_scope=p.compile_scope,
            compile_mode=p.compile_mode,
            near_tie_std=p.near_tie_std,
        )
        if p.decode != "eager":
            s.progress(
                f"{model.precision}: preparing the {p.decode} decode ({_PREPARES[p.decode]})"
            )
        try:
            with out_of_memory_named(p.model_name, model.precision, "preparing", s.accelerator):
                decoder.prepare()
        except DecodeCaptureFailed as exc:
            if not refusable or model.precision == Precision.FP16:
                raise
            refused[model.precision] = exc
            s.progress(f"{model.precision}: not measured, the others go on: {exc.refusal}")
            continue
        note = decoder.prepared_note()
        if note:
            s.progress(note)
        records[model.precision] = decoder.record()
        per_format_keys = decoder.per_format_keys
        named = OutOfMemoryNamed(decoder, p.model_name, model.precision, s.accelerator)
        residents.append(Resident(model.precision, named, _nvml_indices(s, model)))
    s.clock.add("prepare", since)
    if refused and len(residents) < 2:  # FP16 alone: nothing left to pair with
        raise next(iter(refused.values()))
    adaptive = p.ci_target_pts is not None and len(residents) > 1
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
        rotate=rotate,
        prefill_window_s=p.prefill_window_s if p.phases == "apart" else None,
    )
    with s.clock.measuring():
        result = _traced_phase(s, residents, plan)
    shared = {k: v for k, v in next(iter(records.values())).items() if k not in per_format_keys}
    per_format = {
        fmt: {k: record[k] for k in per_format_keys if k in record}
        for fmt, record in records.items()
        if per_format_keys
    }
    return _Phase(result, shared, per_format, refused={f: e.refusal for f, e in refused.items()})


def _traced_phase(s: Bench, residents: Sequence[Resident], plan: PhasePlan) -> PhaseResult:
    """run_phase; with --power_trace its own sampler is paused for the whole phase, which
    the protocol's sampler reads throughout, and those reads fill the trace there."""
    if s.trace is None:
        return run_phase(s.instruments, residents, plan, s.progress)
    s.trace.pause()
    s.trace.mark("protocol_start_s")
    try:
        result = run_phase(s.instruments, residents, plan, s.progress)
    finally:
        s.trace.mark("protocol_end_s", last=True)
        s.trace.resume()
    sampler = next(iter(result.meters.values())).sampler
    s.trace.add_protocol_samples(summed(sampler.traces, sampler.indices))
    return result


def _load(s: Bench, checkpoint: Checkpoint, spec: FormatSpec) -> LoadedModel:
    s.progress(f"loading {s.params.model_name} at {spec.label}")
    since = time.monotonic()
    loaded = s.backend.load(checkpoint, spec, s.accelerator)
    s.clock.add("load", since)
    s.progress(f"{spec.key} loaded: {loaded.footprint_mib:,.0f} MiB on device(s) {loaded.devices}")
    return loaded


def _nvml_indices(s: Bench, loaded: LoadedModel) -> tuple[int, ...]:
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
    if p.compiles > 1:
        rounds = sum(ph.stopping.rounds for ph in phases)
        why = f"{p.iterations} round(s) under each of {p.compiles} compiles"
        return StoppingRecord("fixed", None, rounds, why)
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


def _edges_record(meters: Sequence[EnergyMeter]) -> EdgesRecord:
    """How the counter was read at window edges: the least precise meter's mode, with
    every meter's fallback edges counted."""
    return EdgesRecord.least_precise([meter.edges_record() for meter in meters])
