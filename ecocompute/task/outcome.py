"""What a measured run hands to the report: MeasuredRun, typed, every figure decided.

A session of several formats is one MeasuredRun holding every trial; for_format() gives
each format's own run (FP16's trials and that format's), from which its report is built:
each report is complete alone and names its siblings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.core.precision import Precision
from ecocompute.llm.loading import Checkpoint
from ecocompute.monitor.meter import EdgesRecord
from ecocompute.monitor.trace import TraceRecord
from ecocompute.params import RunParams
from ecocompute.task.hardware import Hardware
from ecocompute.task.protocol import GpuBefore, IdleWindow, StoppingRecord
from ecocompute.task.quality import QualityOutcome
from ecocompute.task.timing import Timing
from ecocompute.task.trials import Trial

INTERLEAVED = "interleaved"
ROTATED = "rotated"
ALTERNATING = "alternating blocks"
SINGLE = "single format"


@dataclass(frozen=True)
class Session:
    """A session of several formats against one FP16 baseline."""

    formats: tuple[str, ...]  # the format keys measured, in the order given (NF4, INT4,
    # ...); each report lies in <output_dir>/<key>/
    # formats the regime refused while preparing them (before any window), and why: the
    # session measured the others (task/measured_path.py)
    refused: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class MeasuredRun:
    """Everything a measured report says, decided; report/ turns it into JSON."""

    params: RunParams
    hardware: Hardware  # the GPUs a meter read, NVML order
    arch: str
    power_field: str | None  # None where the GPUs disagree
    counter: bool  # every window read the NVML energy counter
    counter_edges: EdgesRecord
    versions: Mapping[str, str | None]  # torch, cuda
    checkpoint: Checkpoint
    params_count: int
    prompt_tokens: int
    order: str  # INTERLEAVED, ROTATED, ALTERNATING or SINGLE
    trials: tuple[Trial, ...]
    idle: IdleWindow | None
    format_gpus: Mapping[Precision, tuple[int, ...]]  # NVML indices each format sums
    decode: Mapping[str, Any]  # the decode regime's record, the same for every format
    stopping: StoppingRecord
    quality: QualityOutcome
    quantization: Mapping[Precision, JsonObject | None] = dataclasses.field(default_factory=dict)
    weights_mib: Mapping[Precision, float] = dataclasses.field(default_factory=dict)
    bandwidth_gbs: float | None = None  # the card's peak memory bandwidth (NVML)
    session: Session | None = None
    timing: Timing | None = None
    # what the regime's preparation did per format (the compiled regime: its compile)
    decode_per_format: Mapping[Precision, Mapping[str, Any]] = dataclasses.field(
        default_factory=dict
    )
    # --compiles N: per compile (in order), what each format's compile did, and the empty
    # inductor cache folder it compiled into; empty for one compile
    decode_per_compile: tuple[Mapping[Precision, Mapping[str, Any]], ...] = ()
    compile_cache_dirs: tuple[str, ...] = ()
    # Every GPU the session's models held, where the formats occupy different ones (one
    # phase): each trial then also read the GPUs its format left idle (Trial.left_idle).
    held_gpus: tuple[int, ...] = ()
    # each measured GPU before the session's models were loaded (NVML index -> record)
    before: Mapping[int, GpuBefore] = dataclasses.field(default_factory=dict)
    # the phases apart: each format's prefills per prefill window, and the seconds of
    # one prefill (timed outside every window) the count was chosen from
    prefills: Mapping[Precision, int] = dataclasses.field(default_factory=dict)
    prefill_s: Mapping[Precision, float] = dataclasses.field(default_factory=dict)
    # --power_trace: the whole run's power, from before the first load (monitor/trace.py)
    power_trace: TraceRecord | None = None

    @property
    def rounds(self) -> int:
        return self.stopping.rounds

    def for_format(self, precision: Precision) -> MeasuredRun:
        """This format's own run: FP16's trials and its own (same rounds, same indices),
        the params of a run of this format alone, its quality scores."""
        keep = {Precision.FP16, precision}
        quality = self.quality
        if quality.scores:
            scores = {p: s for p, s in quality.scores.items() if p in keep}
            quality = dataclasses.replace(quality, scores=scores)
        return dataclasses.replace(
            self,
            params=dataclasses.replace(self.params, precision=precision, formats=()),
            trials=tuple(t for t in self.trials if t.precision in keep),
            format_gpus={p: g for p, g in self.format_gpus.items() if p in keep},
            quantization={p: q for p, q in self.quantization.items() if p in keep},
            weights_mib={p: w for p, w in self.weights_mib.items() if p in keep},
            decode_per_format={p: d for p, d in self.decode_per_format.items() if p in keep},
            decode_per_compile=tuple(
                {p: d for p, d in block.items() if p in keep} for block in self.decode_per_compile
            ),
            prefills={p: n for p, n in self.prefills.items() if p in keep},
            prefill_s={p: n for p, n in self.prefill_s.items() if p in keep},
            quality=quality,
        )
