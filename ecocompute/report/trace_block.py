"""--power_trace in a report: the power_trace block (the published container's 1.3
format, plus each trial's window) and the CSV text of its files.

Both files hold the same samples on one clock: FP16 and the quantized format were
measured interleaved in one session, so one trace holds both; each file's phases
bracket its own format's windows (measure_start_s, measure_end_s), as the container's
two separate runs do, and `windows` lists every trial's window.
"""

from __future__ import annotations

from ecocompute.monitor.trace import TraceRecord
from ecocompute.report.model import WINDOW, PowerTrace, PowerTraceFile, TraceWindow
from ecocompute.task.outcome import MeasuredRun

PRIMARY_FILE = "power_trace.csv"
FP16_FILE = "power_trace_fp16.csv"
COLUMNS = ("t_s", "power_w")
_MARKS = (
    "trace_start_s",
    "load_start_s",
    "model_ready_s",
    "protocol_start_s",
    "protocol_end_s",
    "quality_start_s",
    "quality_end_s",
    "trace_end_s",
)
PAUSED_FOR = (
    "the trace's own sampler is paused for every protocol phase (idle window, warm-ups, "
    "measured trials: there the trace holds the protocol sampler's own reads, the 10 Hz "
    "cross-check that runs there anyway) and for the quality probe (no samples between "
    "quality_start_s and quality_end_s): it adds no read inside any measured window"
)


def trace_csv(record: TraceRecord) -> str:
    """t_s (seconds on the trace's clock), power_w (watts, summed over its GPUs)."""
    lines = [",".join(COLUMNS)]
    lines += [
        f"{record.to_trace_s(t):.4f},{w:.3f}"
        for t, w in zip(record.times_s, record.powers_w, strict=True)
    ]
    return "\n".join(lines) + "\n"


def trace_files(run: MeasuredRun) -> dict[str, str]:
    """file name -> CSV text, for the files the block names."""
    record = run.power_trace
    if record is None:
        return {}
    text = trace_csv(record)
    names = [PRIMARY_FILE, FP16_FILE] if run.params.precision.quantized else [PRIMARY_FILE]
    return dict.fromkeys(names, text)


def trace_block(run: MeasuredRun) -> PowerTrace | None:
    record = run.power_trace
    if record is None:
        return None
    marks = {k: round(record.to_trace_s(v), 4) for k, v in record.marks.items() if k in _MARKS}
    trials = [t for t in run.trials if t.precision in (run.params.precision, "FP16")]
    windows = [
        TraceWindow(
            trial=t.index,
            format=str(t.precision),  # type: ignore[arg-type]
            start_s=round(record.to_trace_s(t.reading.start_s), 4),
            end_s=round(record.to_trace_s(t.reading.end_s), 4),
        )
        for t in trials
    ]
    first = min((w.start_s for w in windows), default=None)

    def file(role: str, name: str, fmt: str) -> PowerTraceFile:
        own = [w for w in windows if w.format == fmt]
        phases = dict(marks)
        if first is not None:
            phases["warmup_end_s"] = first
        if own:
            phases["measure_start_s"] = min(w.start_s for w in own)
            phases["measure_end_s"] = max(w.end_s for w in own)
        return PowerTraceFile(
            role=role,  # type: ignore[arg-type]
            precision=fmt,
            file=name,
            samples=len(record.times_s),
            dropped_samples=record.dropped,
            phases=dict(sorted(phases.items(), key=lambda kv: kv[1])),
        )

    precision = str(run.params.precision)
    files = [file("primary", PRIMARY_FILE, precision)]
    shared = ""  # what the note says of a quantized run's two files
    if run.params.precision.quantized:
        files.append(file("fp16_baseline", FP16_FILE, "FP16"))
        shared = (
            f". FP16 and {precision} ran interleaved in one session: both files hold the "
            "same samples"
        )
    return PowerTrace(
        format="csv",
        columns=list(COLUMNS),
        sample_rate_hz=round(record.rate_hz),
        window=WINDOW,
        window_note=(
            "reported energy = each trial's synchronized decode window read from the NVML "
            "energy counter (or the protocol sampler's integral where there is none), summed "
            "over the trials; measure_start_s and measure_end_s bracket this file's format's "
            "trials, windows lists each one (model load, preparation and warm-up excluded, "
            "idle power not subtracted). The trace spans the whole run from before the first "
            "model loads, so other windows can be re-cut from it"
        ),
        note=(
            f"NVML GPU-package power of NVML GPU(s) {', '.join(map(str, record.nvml_indices))} "
            f"(summed per read), t_s seconds on the trace's own clock{shared}; the reported "
            "energy does not come from this trace."
        ),
        files=files,
        nvml_indices=list(record.nvml_indices),
        windows=windows,
        paused_for=PAUSED_FOR,
    )
