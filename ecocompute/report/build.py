"""The report, built in one place from a run's typed outcome (task/): a measured run's
readings become the raw records and report/derive.py derives the rest; a published-path
run's figure comes with the curve that gave it. build_report() is the only function
that makes a report; it is not yet checked or written (report/write.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
from typing import TypedDict

from ecocompute import __version__
from ecocompute.core.precision import Precision
from ecocompute.core.stats import CI_METHOD
from ecocompute.formats.table import BITSANDBYTES
from ecocompute.llm.prompt import describe as describe_prompt
from ecocompute.llm.quality_probe import corpus_record
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION
from ecocompute.params import RunParams, nominal_params_b
from ecocompute.params.path_checks import quality_text_problem
from ecocompute.published.figures import dataset_dois
from ecocompute.published.site_curves import SITE_FILE
from ecocompute.report import derive
from ecocompute.report.decode_model import Decode
from ecocompute.report.host import this_host
from ecocompute.report.labels import NO_FIGURE_LEAD, format_gpus_note
from ecocompute.report.model import (
    BENCHMARK,
    DECODING,
    FORMAT,
    MEASURED_SOURCE,
    NO_LOCAL_GPU,
    SCHEMA_VERSION,
    WINDOW,
    BeforeSession,
    Corpus,
    CounterEdges,
    Gpu,
    Measurement,
    Provenance,
    Quality,
    Quantization,
    Report,
    Session,
    Software,
    Stopping,
    SystemUnderTest,
    Timing,
    Workload,
)
from ecocompute.report.pairing import CI_METHOD_COMPILES
from ecocompute.report.references import (
    EAGER_NOTE,
    beside_unit,
    card_model_units,
    published_decode_note,
    reference_anchors,
    reference_curve,
    reference_units,
    software_departures,
    units_disagreement,
    units_model,
)
from ecocompute.report.results_model import Format, IdleWindow, Results
from ecocompute.report.software import software_block
from ecocompute.report.thermal import thermal_of
from ecocompute.report.trace_block import trace_block
from ecocompute.report.trial_records import trial_record
from ecocompute.task.hardware import GpuRecord
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.published_path import PublishedRun
from ecocompute.telemetry.base import POWER_FIELD_INSTANT

SCOPE = (
    "GPU-package energy as NVML reports it for the GPUs the model occupies; not wall "
    "power, not CPU, DRAM, PSU, cooling or PUE. Not a certified benchmark result."
)
NOTICE = (
    "Not a certified benchmark result. GPU-package energy as NVML reports it (not wall "
    "power); see measurement.scope, results.basis and measurement_source."
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


def build_report(outcome: MeasuredRun | PublishedRun, command: list[str] | None) -> Report:
    if isinstance(outcome, MeasuredRun):
        return measured_report(outcome, command)
    return published_report(outcome, command)


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(command: list[str] | None) -> Provenance:
    dois = dataset_dois()
    return Provenance(
        dataset_doi=dois[0],
        rtx4090_deep_dive_doi=dois[1],
        paper_ssrn="not recorded by this tool (see the published page, quantenergy.tech)",
        code=f"ecocompute {__version__}: an independent implementation",
        dataset_dois=list(dois),
        tool=f"ecocompute {__version__}",
        reference_data=f"ecocompute/{SITE_FILE}; ecocompute/data/published_reference.json",
        command=command or None,
    )


def _envelope(p: RunParams) -> dict[str, object]:
    """The fields every report shares (model fields, as keyword arguments)."""
    return {
        "ecocompute_format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "benchmark": BENCHMARK,
        "follows_mlcommons_energy_reporting_conventions": True,
        "certified_benchmark_result": False,
        "scenario": p.scenario,
        "scenario_note": f"Nominal MLPerf-style label for batch {p.batch_size}; the run is "
        "not driven by MLPerf LoadGen.",
        "timestamp_utc": utc_now(),
        "notice": NOTICE,
    }


def gpu(g: GpuRecord, before: BeforeSession | None = None) -> Gpu:
    if g.cuda_index is None:  # the published path: NVML's four fields
        return Gpu(nvml_index=g.nvml_index, name=g.name, uuid=g.uuid, pci_bus_id=g.pci_bus_id)
    fields = dataclasses.asdict(g)
    fields["power_limit_watts"] = fields.pop("power_limit_w")
    fields["power_limit_default_watts"] = fields.pop("power_limit_default_w")
    return Gpu.model_validate({**fields, "before_session": before})


class _RunFields(TypedDict):
    """The workload's fields that a run's parameters give, measured or derived alike
    (a TypedDict, so that mypy checks them where they are unpacked into Workload)."""

    model_name: str
    precision: Format
    batch_size: int
    context_length: int | None
    max_new_tokens: int | None
    llm_int8_threshold: float | None


def _run_fields(p: RunParams) -> _RunFields:
    return _RunFields(
        model_name=p.model_name,
        precision=str(p.precision),  # type: ignore[typeddict-item]
        batch_size=p.batch_size,
        context_length=p.context_length,
        max_new_tokens=p.tokens,
        llm_int8_threshold=_int8_threshold(p),
    )


def _int8_threshold(p: RunParams) -> float | None:
    if p.precision is Precision.INT8 and p.spec().library == BITSANDBYTES:
        return p.llm_int8_threshold
    return None


# -- a measured run ---------------------------------------------------------------------


def measured_report(run: MeasuredRun, command: list[str] | None) -> Report:
    p, hw = run.params, run.hardware
    counted_b = round(run.params_count / 1e9, 6)
    nominal, source = nominal_params_b(p.model_name, p.params_b, counted_b)
    before = {
        i: BeforeSession(
            idle_power_watts=b.idle_power_w,
            idle_seconds=b.idle_seconds,
            temperature_c=b.state.temperature_c,
            memory_temperature_c=b.state.memory_temperature_c,
            memory_used_mib=b.memory_used_mib,
        )
        for i, b in run.before.items()
    }
    quantization = run.quantization.get(p.precision)
    results = results_of(run)
    software = Software(
        **software_block(
            torch_cuda=run.versions.get("cuda"), nvidia_driver=hw.nvidia_driver, measured=True
        )
    )
    system = SystemUnderTest(
        **this_host(),
        gpu=hw.names or "unnamed GPU",
        gpu_arch=run.arch,  # type: ignore[arg-type]
        gpu_arch_source=f"NVML product name '{hw.gpu_name}'",
        accelerator_count=len(hw.gpus),
        gpus=[gpu(g, before.get(g.nvml_index)) for g in hw.gpus],
        cuda_visible_devices=hw.cuda_visible_devices,
        memory_bandwidth_gbs=run.bandwidth_gbs,
    )
    units = card_model_units(run, nominal)
    if units is not None and results.vs_fp16_energy_pct_exact is not None:
        beside, _ = beside_unit(
            units,
            results.vs_fp16_energy_pct_exact,
            results.vs_fp16_ci95_pct,
            results.fp16_energy_per_token_mj,
            software_departures(run.arch, software),
            idle_w=system.idle_before_w,  # as the summary's units line reads it
        )
        note = f"{results.note} Between units of this card model: {units.words()}; {beside}."
        results = results.model_copy(update={"reference_units": units, "note": note})
    return Report(
        **_envelope(p),  # type: ignore[arg-type]
        system_under_test=system,
        workload=Workload(
            **_run_fields(p),
            params_b=nominal,
            params_b_source=source,  # type: ignore[arg-type]
            params_b_counted=counted_b,
            prompt_tokens=run.prompt_tokens,
            prompt_source=None if p.prompt_tokens is None else "prompt_tokens",
            weights=run.checkpoint.weights,  # type: ignore[arg-type]
            weights_note=run.checkpoint.weights_note,
            quantization=quantization,  # type: ignore[arg-type]
            decoding=DECODING,
        ),
        measurement=_measurement(run),
        software=software,
        measurement_source=MEASURED_SOURCE,
        results=results,
        provenance=provenance(command),
        quality=quality_of(run),
        thermal=thermal_of(results.trials, p.warmup, run.order),
        power_trace=trace_block(run),
    )


def _measurement(run: MeasuredRun) -> Measurement:
    p = run.params
    key = p.spec().key
    session = None
    if run.session is not None:
        formats = list(run.session.formats)
        session = Session(
            formats=formats,
            this_format=key,
            siblings={f: f"../{f}/energy.json" for f in formats if f != key},
            rotation=f"round k measures the models in the order FP16, {', '.join(formats)} "
            "rotated by k places; trials[].slot is each trial's place",
            note="This report holds the session's FP16 trials and this format's; the sibling "
            "reports hold the same FP16 trials (same indices) with their own format's. Each "
            "delta pairs a format's trial with its round's FP16 trial.",
            refused=dict(run.session.refused) or None,
        )
    timing = None
    if run.timing is not None:
        t = run.timing
        notes = []
        if t.reused_models:
            notes.append("the models were already resident from the sweep's previous point")
        if run.session is not None:
            notes.append("the whole session's stages, shared by every format's report")
        timing = Timing(
            load_s=t.load_s,
            prepare_s=t.prepare_s,
            measure_s=t.measure_s,
            session_s=t.load_s + t.prepare_s + t.measure_s,
            reused_models=t.reused_models,
            measure_cpu_steal_pct=t.measure_cpu_steal_pct,
            note="; ".join(notes) or None,
        )
    edges = run.counter_edges
    return Measurement(
        method=method_text(run.counter, run.power_field, p.sample_rate_hz),
        sample_rate_hz=int(p.sample_rate_hz),
        tokens_per_run=p.tokens,
        iterations=p.iterations,
        compiles=p.compiles if p.compiles > 1 else None,
        warmup=p.warmup,
        iterations_note=(
            f"{run.rounds} measured decode runs per format after {p.warmup} warm-ups "
            + (
                f"(--compiles {p.compiles}: {p.iterations} under each compile, each compile "
                "after its own warm-ups; "
                if p.compiles > 1
                else ""
            )
            + f"(iterations {p.iterations} is the "
            f"{'minimum' if run.stopping.rule == 'ci_target' else 'planned count'}); "
            f"each run is one trial; pairs are FP16 and {p.precision} trials of the same round."
        ),
        scope=SCOPE,
        energy_source="nvml_energy_counter" if run.counter else "sampled_power",
        power_field=run.power_field,  # type: ignore[arg-type]
        order=run.order,  # type: ignore[arg-type]
        order_note=ORDER_NOTES[run.order],
        idle_seconds=p.idle_seconds,
        max_gpu_memory_gib=p.max_gpu_memory_gib,
        min_valid_sample_fraction=MIN_VALID_SAMPLE_FRACTION,
        counter_edges=CounterEdges(
            mode=edges.mode,  # type: ignore[arg-type]
            step_period_ms=edges.step_period_ms,
            fallback_edges=edges.fallback_edges,
        ),
        ci_method=None
        if not p.precision.quantized
        else CI_METHOD_COMPILES
        if p.compiles > 1
        else CI_METHOD,
        stopping=Stopping(
            rule=run.stopping.rule,  # type: ignore[arg-type]
            target_ci_pts=run.stopping.target_ci_pts,
            rounds=run.stopping.rounds,
            stopped_because=run.stopping.stopped_because,
        ),
        session=session,
        timing=timing,
        decode=_decode(run),
        window=WINDOW,
    )


def _decode(run: MeasuredRun) -> Decode:
    p = run.params
    per = run.decode_per_format
    fields = {
        **run.decode,
        "batch_size": p.batch_size,
        "prompt": describe_prompt(run.checkpoint.weights, p.prompt_tokens),
    }
    if p.phases == "apart":
        fields["phases"] = "apart"
        counts = ", ".join(
            f"{f} {n} (one {run.prefill_s[f] * 1000:.1f} ms)" for f, n in run.prefills.items()
        )
        fields["prefills_note"] = (
            f"prefills per prefill window, chosen so that each window lasts at least "
            f"{p.prefill_window_s:g} s (the counter steps every ~100 ms; its edges are "
            f"interpolated): {counts}; timed before the rounds, outside every window"
        )
    if per:
        order = sorted(per, key=lambda fmt: fmt is not Precision.FP16)  # FP16 first
        fields["per_format"] = {str(f): dict(per[f]) for f in order}
        blocks = run.decode_per_compile or (per,)
        seconds = [b[f].get("compile_s") for b in blocks for f in order]
        if all(isinstance(s, (int, float)) for s in seconds):
            fields["compile_s"] = sum(float(s) for s in seconds if s is not None)
            over = f" over {len(blocks)} compiles" if len(blocks) > 1 else ""
            fields["compile_note"] = (
                "seconds compiling the decode step of this report's formats ("
                + ", ".join(str(f) for f in order)
                + f"){over}, each before any measured window; per_format gives each format's"
                + (" (the first compile's; compiles[] every compile's)" if over else "")
            )
        if run.decode_per_compile:
            fields["compiles"] = [
                {
                    "compile": k,
                    "inductor_cache_dir": folder,
                    "per_format": {str(f): dict(block[f]) for f in order},
                }
                for k, (block, folder) in enumerate(
                    zip(run.decode_per_compile, run.compile_cache_dirs, strict=True)
                )
            ]
    return Decode.model_validate(fields)


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


def results_of(run: MeasuredRun) -> Results:
    """The measured results: raw records, then everything derived from them."""
    p = run.params
    held = bool(run.held_gpus)
    idle = None
    if run.idle is not None:
        idle = IdleWindow(
            duration_s=run.idle.reading.duration_s,
            nvml_indices=list(run.idle.nvml_indices),
            energy_joules_by_gpu=list(run.idle.reading.per_gpu_j),
        )
    facts = {  # each format's key, library, GPUs and weights
        str(fmt): derive.FormatFacts(
            p.spec(fmt).key, p.spec(fmt).library, tuple(gpus), run.weights_mib.get(fmt)
        )
        for fmt, gpus in run.format_gpus.items()
    }
    inputs = derive.Measured(
        precision=str(p.precision),  # type: ignore[arg-type]
        trials=tuple(trial_record(t, held) for t in run.trials),
        facts=facts,  # type: ignore[arg-type]
        idle_window=idle,
        batch_size=p.batch_size,
        bandwidth_gbs=run.bandwidth_gbs,
        held_nvml_indices=tuple(run.held_gpus),
        prompt_tokens=run.prompt_tokens,
        new_tokens=p.tokens,
    )
    return derive.derive_results(inputs, measured_note(run))


def measured_note(run: MeasuredRun) -> str:
    p, hw = run.params, run.hardware
    indices = ", ".join(str(g.nvml_index) for g in hw.gpus)
    source = "the NVML energy counter" if run.counter else "integrated NVML power samples"
    each = f" under each of {p.compiles} compiles" if p.compiles > 1 else ""
    note = (
        f"Measured on this machine: GPU-package energy of "
        f"{', '.join(sorted({g.name for g in hw.gpus}))} (GPU {indices} by NVML index) "
        f"from {source}, {len(run.trials)} trials ({run.rounds} per format, {run.order}), "
        f"{p.tokens} new tokens each at batch {p.batch_size} ({run.decode.get('regime')} "
        f"decode), after {p.warmup} warm-ups per format{each}; "
        f"{run.checkpoint.weights} weights; "
        f"torch {run.versions.get('torch')}."
    )
    if run.checkpoint.weights == "synthetic" and _int8_threshold(p) is not None:
        note += " Synthetic weights understate the INT8 outlier-path penalty."
    compute = p.spec().compute_dtype
    if compute != "float16":
        note += (
            f" {p.spec().key} computes in {compute}; the FP16 baseline in float16 (both "
            "decode the same weights)."
        )
    if p.phases == "apart":
        note += (
            " Phases apart: each trial's window is its decode steps alone (tokens - 1 per "
            "row), its prefill measured in a window of its own before it; results.phases "
            "gives the prefill, the decode and the stated workload."
        )
    if run.session is not None:
        others = ", ".join(f for f in run.session.formats if f != p.spec().key)
        note += f" One session with {others}: the FP16 trials are shared with their reports."
    if len(set(run.format_gpus.values())) > 1:
        note += " " + format_gpus_note(run.format_gpus, bool(run.held_gpus))
    return note


def quality_of(run: MeasuredRun) -> Quality:
    q = run.quality
    why = q.unavailable_reason
    if why is not None:  # no score: why in note (not requested) or error (requested)
        return Quality(
            basis="unavailable",
            requested=q.requested,
            corpus=_corpus_if_readable(q.text_path) if q.requested else None,
            note=None if q.requested else why,
            error=why if q.requested else None,
        )
    fp16 = q.scores[Precision.FP16]
    quantized = [f for f in q.scores if f.quantized]
    score = q.scores[quantized[0]] if quantized else fp16
    return Quality(
        basis="measured",
        requested=True,
        value=score.perplexity,
        fp16_value=fp16.perplexity,
        delta_vs_fp16_pct=(score.perplexity / fp16.perplexity - 1.0) * 100.0,
        tokens_evaluated=score.tokens_scored,
        mean_nll=score.mean_nll,
        fp16_mean_nll=fp16.mean_nll,
        windows=score.windows,
        seq_len=q.seq_len,
        corpus=Corpus(**corpus_record(q.text_path)),
        delta_note=(
            "perplexity of the same weights at the quantized format vs FP16, same corpus "
            "and windows; comparable between runs whose corpus sha256 agrees"
            if quantized
            else "FP16 alone: value is the FP16 perplexity"
        ),
    )


def _corpus_if_readable(path: str | None) -> Corpus | None:
    """The corpus a probe was asked for, where it is one: a --quality_text that is not (a
    missing file; a FIFO or device, never opened) loses no measurement."""
    if path is not None and quality_text_problem(path) is not None:
        return None
    with contextlib.suppress(OSError):  # gone since
        return Corpus(**corpus_record(path))
    return None


# -- a published-path run ---------------------------------------------------------------


def published_report(run: PublishedRun, command: list[str] | None) -> Report:
    p, fig, hw = run.params, run.figure, run.hardware
    if fig.basis == "unavailable":  # nothing was derived: say why there is no figure
        note = f"{NO_FIGURE_LEAD} ({run.reason.text}): {fig.note}."
    else:
        arch = f"{run.arch.source}. " if run.arch.headline_default else ""
        note = f"Derived from {fig.source}, not measured on this machine ({run.reason.text}). "
        note += f"{arch}{fig.note}."
    delta = fig.vs_fp16_energy_pct
    units = reference_units(run)
    if units is not None and delta is not None:  # a block stands only beside a delta
        note += f" Between units: {units.words()}; one unit's delta is not the card model's."
        apart = units_disagreement(units, delta, run.params_b)
        if apart is not None:
            note += f" {apart}."
    if p.decode != "eager":
        note += f" --decode {p.decode} was asked for, but {EAGER_NOTE}: this is eager's."
    regime_units = None if run.regime_units is None else units_model(run.regime_units)
    if regime_units is not None:
        note += f" {regime_units.regime_words(delta)}."
    return Report(
        **_envelope(p),  # type: ignore[arg-type]
        system_under_test=SystemUnderTest(
            **this_host(),
            gpu=hw.names or "none: no local GPU (the figure is derived)",
            gpu_arch=run.arch.arch,  # type: ignore[arg-type]
            gpu_arch_source=run.arch.source,
            accelerator_count=max(1, len(hw.gpus)),
            local_accelerator_count=len(hw.gpus),
            accelerator_count_note=None
            if hw.gpus
            else "no local GPU: 1 is the single card of the published measurement the figure "
            "comes from (1.1 requires >= 1)",
            gpus=[gpu(g) for g in hw.gpus],
        ),
        workload=Workload(
            **_run_fields(p),
            params_b=run.params_b,
            params_b_source=run.params_b_source,  # type: ignore[arg-type]
            weights="not loaded",
            # the library the figure is for (INT8-torchao), though nothing was quantized
            quantization=Quantization(library=p.spec().library) if p.precision.quantized else None,
        ),
        measurement=Measurement(
            method=fig.method,
            sample_rate_hz=int(p.sample_rate_hz),
            tokens_per_run=p.tokens,
            iterations=p.iterations,
            warmup=p.warmup,
            iterations_note="No decode ran. tokens_per_run, iterations and warmup record the "
            "requested protocol; the published figures followed the published protocol.",
            scope=SCOPE,
            energy_source="none",
            order="none",
            decode=Decode(
                regime="eager",
                requested_regime=p.decode if p.decode != "eager" else None,
                requested_compile_notes=list(p.compile_notes) or None,
                note=published_decode_note(p),
            ),
        ),
        software=Software(
            **software_block(torch_cuda=None, nvidia_driver=hw.nvidia_driver, measured=False)
        ),
        measurement_source=NO_LOCAL_GPU,
        measurement_source_reason=run.reason.text,
        results=Results(
            basis=fig.basis,  # type: ignore[arg-type]
            note=note,
            fallback_reason=run.reason.code,  # type: ignore[arg-type]
            reference_card=fig.reference_card,
            reference_curve=reference_curve(run),
            reference_anchors=reference_anchors(run),
            reference_units=units,
            regime_units=regime_units,
            energy_per_token_mj=fig.energy_per_token_mj,
            fp16_energy_per_token_mj=fig.fp16_energy_per_token_mj,
            vs_fp16_energy_pct=None if delta is None else round(delta, 1),
            vs_fp16_energy_pct_exact=delta,
        ),
        provenance=provenance(command),
    )
