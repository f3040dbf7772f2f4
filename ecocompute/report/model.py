"""The report as one typed model: what `energy_estimate` writes as energy.json, the one
contract between the run, the file, and every tool that reads reports.

Format 2.0 (`ecocompute_format`), a superset of the published container's 1.1 report:
1.1's fields with 1.1's names and types, plus this tool's. The model is built from a
run (report/build.py), derives its figures from its trials unrounded (report/derive.py),
generates this tool's schema (schema/energy.schema.json, report/schema.py), and every
older format this tool reads is upgraded into it (report/legacy.py). Energy is
GPU-package energy as NVML reports it (not wall power). Units are in the field names.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ecocompute.llm.gguf_checkpoint import CONVERTED_LEAD
from ecocompute.params.model_size import container_params_b, params_b_from_model_name
from ecocompute.report.decode_model import Decode
from ecocompute.report.results_model import (
    Format,
    Index,
    Interval,
    NonNegative,
    OrAbsent,
    Results,
    Strict,
)

FORMAT = "2.0"  # this tool's own format: never one of the published container's versions
# What the published format's readers key on: the container's newest version and its
# benchmark name, so that its strict 1.3 schema takes what we write (docs/formats.md).
SCHEMA_VERSION = "ecocompute-energy/1.3"
BENCHMARK = "ecocompute-energy-methodology"
# The benchmark name of this tool's older formats (its own 1.2, 1.3 and 1.4, ecocompute
# 0.2-0.5): what tells them apart from the container's 1.2 and 1.3 of the same names.
LEGACY_BENCHMARK = "ecocompute-llm-decode-energy"
DECODING = "greedy"  # Protocol v1.1's decoding strategy, as the container records it
WINDOW = "generation"  # the window each energy figure integrates (load, warm-up excluded)
MEASURED_SOURCE = "direct-nvml"
NO_LOCAL_GPU = "ecocompute-dataset (no local GPU)"  # the published container's phrase
ArchClass = Literal["turing", "ampere", "ada", "hopper", "blackwell", "volta", "unknown"]


class BeforeSession(Strict):
    idle_power_watts: NonNegative
    idle_seconds: Annotated[float, Field(gt=0)]
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    memory_used_mib: int | None = None


class Gpu(Strict):
    """One GPU: NVML's four fields; a measured GPU also what tells its unit apart."""

    OMIT_EVERY_NULL = True

    nvml_index: Index
    name: str
    uuid: str
    pci_bus_id: str
    cuda_index: Index | None = None
    power_limit_watts: NonNegative | None = None
    power_limit_default_watts: NonNegative | None = None
    memory_total_mib: int | None = None
    matched_by: str | None = None
    board_part_number: str | None = Field(
        None,
        description="NVML's board part number: on the H200, 692-2G520-0282-000 and -001 "
        "fell in two classes of FP16 power (docs/units.md)",
    )
    vbios_version: str | None = None
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None
    before_session: BeforeSession | None = Field(
        None,
        description="this GPU before the session loaded any model: idle power (energy "
        "counter) and temperatures; memory_used_mib says what was already on it",
    )


CPU_ID_PATTERN = r"^family [0-9]{1,6} model [0-9]{1,6} stepping [0-9]{1,6}$"


class HostCpu(Strict):
    """The host's CPU, as the operating system names it (report/host.py): the eager
    regime's speed follows it."""

    OMIT_EVERY_NULL = True
    model: str | None = Field(None, description="the first processor's model name")
    logical_cpus: Index | None = Field(None, description="logical CPUs the host has")
    usable_cpus: Index | None = Field(
        None, description="logical CPUs this process may run on (its affinity)"
    )
    cpu_id: str | None = Field(
        None,
        pattern=CPU_ID_PATTERN,
        description="the first processor's family, model and stepping numbers (x86), which "
        "tell CPU generations apart where a hypervisor hides the model name",
    )
    clock_mhz: NonNegative | None = Field(
        None, description="the first processor's clock as the operating system reports it"
    )
    hypervisor: bool | None = Field(
        None, description="the CPU says it runs under a hypervisor (its flags), on x86"
    )

    def words(self) -> str | None:
        """ "6/167/1 2600 MHz": what tells one host's CPU from another's where a
        hypervisor gives every one the same name; None without the numbers."""
        if self.cpu_id is None:
            return None
        numbers = "/".join(re.findall(r"[0-9]+", self.cpu_id))  # family, model, stepping
        return numbers if self.clock_mhz is None else f"{numbers} {self.clock_mhz:.0f} MHz"


class SystemUnderTest(Strict):
    host: str | None = None
    hostname: str | None = None
    host_cpu: OrAbsent[HostCpu] = None
    gpu: Annotated[str, Field(min_length=1)] = Field(
        description="the measured GPU's product name; without a local GPU, a phrase saying so"
    )
    gpu_arch: ArchClass
    gpu_arch_source: str | None = None
    accelerator_count: Annotated[int, Field(ge=1)] = Field(
        description="GPUs measured; without a local GPU 1, the published measurement's card"
    )
    local_accelerator_count: OrAbsent[Index] = None
    accelerator_count_note: OrAbsent[str] = None
    gpus: list[Gpu] = Field(default_factory=list)
    cuda_visible_devices: str | None = None
    memory_bandwidth_gbs: OrAbsent[NonNegative] = Field(
        None, description="the first measured GPU's peak memory bandwidth, GB/s (NVML)"
    )

    @property
    def idle_before_w(self) -> float | None:
        """The GPUs' idle power before the session, summed; None unless every GPU
        records it."""
        idle = [g.before_session.idle_power_watts for g in self.gpus if g.before_session]
        return sum(idle) if idle and len(idle) == len(self.gpus) else None


class Quantization(Strict):
    """What made the format: the library and its settings, as the quantizer recorded them;
    in a derived report, only the library its figure is for (nothing ran: no version)."""

    model_config = Strict.model_config | {"extra": "allow"}
    library: str
    library_version: str | None = None
    method: str | None = None


class Workload(Strict):
    model_name: str
    precision: Format
    batch_size: Annotated[int, Field(ge=1)]
    context_length: Annotated[int, Field(ge=1)] | None = None
    max_new_tokens: Annotated[int, Field(ge=1)] | None = None
    params_b: float | None = Field(
        None, description="the nominal size in billions (1.1, not 1.100048)"
    )
    params_b_source: (
        Literal[
            "flag or parameters file", "model name", "preset", "counted from the loaded weights"
        ]
        | None
    ) = None
    params_b_counted: OrAbsent[float] = None
    prompt_tokens: int | None = None
    prompt_source: OrAbsent[Literal["published protocol", "prompt_tokens"]] = Field(
        None,
        description="prompt_tokens: the length was chosen (--prompt_tokens), and reports of "
        "two lengths never pool; absent: the published protocol's prompt",
    )
    weights: Literal["pretrained", "synthetic", "not loaded"] | None = None
    weights_note: OrAbsent[str] = None
    llm_int8_threshold: OrAbsent[float] = None
    quantization: OrAbsent[Quantization] = None
    decoding: OrAbsent[str] = Field(
        None, description="the decoding strategy (greedy: do_sample false), a measured run's"
    )

    @property
    def weights_converted(self) -> bool:
        """Pretrained weights converted from a GGUF file: not the original release."""
        return (self.weights_note or "").startswith(CONVERTED_LEAD)

    @property
    def library(self) -> str | None:
        """The quantization library the report names (None: none named)."""
        return self.quantization.library if self.quantization else None


class Stopping(Strict):
    rule: Literal["fixed", "ci_target"]
    target_ci_pts: float | None
    rounds: Index
    stopped_because: str


class CounterEdges(Strict):
    mode: Literal["interpolated between counter steps", "plain reads", "no counter"]
    step_period_ms: float | None
    fallback_edges: Index


class Session(Strict):
    formats: list[str]
    this_format: str
    siblings: dict[str, str] = Field(description="format -> its report, relative to this one")
    shared_fp16_trials: Literal[True] = True
    rotation: str | None = None
    note: str | None = None
    refused: OrAbsent[dict[str, str]] = Field(
        None,
        description="formats asked for in this session that its decode regime refused while "
        "preparing them (before any measured window), and why: not measured, no report",
    )


class Timing(Strict):
    """Seconds per stage on the host's monotonic clock, outside every measured window."""

    load_s: NonNegative
    prepare_s: NonNegative
    measure_s: NonNegative
    session_s: NonNegative
    reused_models: bool
    measure_cpu_steal_pct: OrAbsent[Annotated[float, Field(ge=0, le=100)]] = Field(
        None,
        description="of the host's CPU time over the measure stage, the share a hypervisor "
        "gave to other guests (steal, /proc/stat): a shared host's, which the eager "
        "regime's speed follows",
    )
    note: str | None = None


class Measurement(Strict):
    method: str
    sample_rate_hz: Annotated[int, Field(ge=1)]
    tokens_per_run: Annotated[int, Field(ge=1)] | None = None
    iterations: Index | None = None
    compiles: OrAbsent[Annotated[int, Field(ge=2)]] = Field(
        None, description="--compiles N: `iterations` rounds under each of N compiles"
    )
    warmup: Index | None = None
    iterations_note: str | None = None
    scope: str | None = None
    energy_source: Literal["nvml_energy_counter", "sampled_power", "none"] | None = None
    power_field: Literal["instant", "average"] | None = None
    order: (
        Literal["interleaved", "rotated", "alternating blocks", "single format", "none"] | None
    ) = None
    order_note: OrAbsent[str] = None
    idle_seconds: OrAbsent[NonNegative] = None
    max_gpu_memory_gib: OrAbsent[float] = None
    min_valid_sample_fraction: OrAbsent[float] = None
    counter_edges: OrAbsent[CounterEdges] = None
    ci_method: OrAbsent[str] = None
    stopping: OrAbsent[Stopping] = None
    session: Session | None = None
    timing: Timing | None = None
    decode: Decode = Field(default_factory=Decode)
    window: OrAbsent[str] = Field(
        None,
        description="what each energy figure integrates: generation (the decode windows; "
        "model load, quantization and warm-up excluded), a measured run's",
    )


class Thermal(Strict):
    """The card's thermal state over the run, as the published container's 1.2 and 1.3
    define it: read from its reports, and written for a measured run of ours from the
    windows' edge temperatures (report/thermal.py says how)."""

    mode: Literal["cold", "steady"]
    basis: Literal["measured", "unavailable"]
    warmup_runs: OrAbsent[Index] = None
    cooldown_s: float | None = None
    temperature_start_c: float | None = None
    temperature_steady_c: float | None = None
    temperature_end_c: float | None = None
    temperature_peak_c: float | None = None
    steady_state_reached: bool | None = None
    arm_order: OrAbsent[str] = None
    note: OrAbsent[str] = None


class PowerTraceFile(Strict):
    """One sidecar trace: a measured format's samples from before its model loaded."""

    OMIT_EVERY_NULL = True
    role: Literal["primary", "fp16_baseline"]
    precision: str | None = None
    file: Annotated[str, Field(min_length=1)]
    samples: Index
    dropped_samples: Index | None = None
    phases: dict[str, NonNegative] | None = Field(
        None,
        description="phase edges, seconds on this file's trace clock: trace_start_s, "
        "load_start_s, model_ready_s, warmup_end_s, measure_start_s, measure_end_s, "
        "quality_start_s, quality_end_s, trace_end_s",
    )


class TraceWindow(Strict):
    """One measured trial's window on the trace's clock (this tool's runs)."""

    trial: Index
    format: Format
    start_s: NonNegative
    end_s: NonNegative


class PowerTrace(Strict):
    """The whole-run power trace (the published container's 1.3 block): raw samples in
    CSV files beside the report. The reported energy does not come from it. This tool's
    runs add each trial's window (windows) and how the trace was read (paused_for)."""

    OMIT_EVERY_NULL = True
    format: Literal["csv"]
    columns: list[str] | None = None
    sample_rate_hz: Annotated[int, Field(ge=1)]
    window: str
    window_note: str | None = None
    note: str | None = None
    files: list[PowerTraceFile]
    nvml_indices: list[Index] | None = None
    windows: list[TraceWindow] | None = None
    paused_for: str | None = None


class Software(Strict):
    """The stack the figures came from. The published format requires none of these
    fields; format 2.0 requires all but matches_reference_pins (COMPLETE)."""

    python: OrAbsent[str] = None
    packages: OrAbsent[dict[str, str]] = Field(
        None, description="installed versions; 'not installed' for one that is not"
    )
    torch_cuda: str | None = None
    nvidia_driver: OrAbsent[str] = Field(None, description="the driver's version, or 'unavailable'")
    comparability_note: OrAbsent[str] = None
    reference_pins: OrAbsent[dict[str, str]] = None
    matches_reference_pins: OrAbsent[bool] = None
    differs_from_reference_pins: OrAbsent[list[str]] = None


class SiteAnchor(Strict):
    """One measured point of the site's curve, as its estimator gave it (N, dE, model,
    gpu, n)."""

    params_b: float
    delta_pct: float
    model: str | None
    gpu: str | None
    n: Index | None


class SiteAnswer(Strict):
    """The site estimator's figure beside its delta: its 95% band, what it rests on
    (measured: the mean of the anchors at that size; interpolated; estimated), the
    curve's crossover and its measured anchors."""

    ci95_pct: Interval | None
    basis: str | None
    confidence: str | None
    crossover_b: float | None
    arch_used: str | None
    anchors: list[SiteAnchor]


class Prefetch(Strict):
    """What --prefetch asked the site's estimator (GET /v1/estimate) and what it said;
    url None: not asked (the size or the class is not known before the run)."""

    api_base: str
    url: str | None
    answered: bool
    predicted_vs_fp16_pct: float | None
    fetched_utc: str | None
    error: str | None
    answer: OrAbsent[SiteAnswer] = None


class Provenance(Strict):
    OMIT_EVERY_NULL = True
    dataset_doi: str
    rtx4090_deep_dive_doi: str
    paper_ssrn: str
    code: str
    dataset_dois: list[str]
    tool: str
    reference_data: str
    command: list[str] | None = None
    upgraded_from: str | None = Field(
        None, description="the format this report was converted from (numbers unchanged)"
    )
    prefetch: Prefetch | None = None


class Corpus(Strict):
    name: str
    bytes: Index
    sha256: str
    source: str | None = None
    license: str | None = None


class Quality(Strict):
    """Perplexity of the format and of FP16 on the corpus, or why there is none."""

    metric: Literal["perplexity"] = "perplexity"
    basis: Literal["measured", "unavailable"]
    requested: OrAbsent[bool] = Field(None, description="whether the run was asked to measure it")
    value: float | None = None
    fp16_value: float | None = None
    delta_vs_fp16_pct: float | None = None
    tokens_evaluated: Index | None = None
    mean_nll: float | None = None
    fp16_mean_nll: float | None = None
    windows: Index | None = None
    seq_len: Index | None = None
    corpus: Corpus | None = None
    note: OrAbsent[str] = None
    delta_note: OrAbsent[str] = None
    error: OrAbsent[str] = None


# What every report this tool writes holds, beyond what older formats required (a report
# upgraded from one of them may lack these; report/legacy.py).
COMPLETE = (
    ("scenario_note",),
    ("timestamp_utc",),
    ("notice",),
    ("software",),
    ("software", "python"),
    ("software", "packages"),
    ("software", "nvidia_driver"),
    ("software", "comparability_note"),
    ("software", "reference_pins"),
    ("software", "differs_from_reference_pins"),
    ("quality", "requested"),
    ("quality", "corpus", "source"),
    ("provenance",),
    ("system_under_test", "host"),
    ("workload", "context_length"),
    ("workload", "max_new_tokens"),
    ("workload", "weights"),
    ("measurement", "tokens_per_run"),
    ("measurement", "iterations"),
    ("measurement", "warmup"),
    ("measurement", "iterations_note"),
    ("measurement", "scope"),
    ("measurement", "energy_source"),
    ("measurement", "order"),
)


class Report(Strict):
    """One energy report. What this tool writes is format 2.0 (ecocompute_format), every
    field of COMPLETE present; the reports of older formats it reads are upgraded into
    this model (report/legacy.py), ecocompute_format absent and provenance.upgraded_from
    naming their format."""

    ecocompute_format: Literal["2.0"] | None = Field(
        None, description="this tool's own format; absent in reports of older formats"
    )
    schema_version: str = Field(description="the published format's version it follows")
    benchmark: str
    follows_mlcommons_energy_reporting_conventions: bool | None = None
    certified_benchmark_result: Literal[False] | None = None
    scenario: Literal["SingleStream", "Offline"]
    scenario_note: str | None = None
    timestamp_utc: str | None = None
    notice: str | None = None
    share_url: str | None = None
    system_under_test: SystemUnderTest
    workload: Workload
    measurement: Measurement
    software: Software | None = None
    measurement_source: str | None = None
    measurement_source_reason: OrAbsent[str] = None
    results: Results
    provenance: Provenance | None = None
    quality: OrAbsent[Quality] = None
    thermal: OrAbsent[Thermal] = None
    power_trace: OrAbsent[PowerTrace] = None

    @property
    def measured(self) -> bool:
        return self.results.basis == "measured"

    @property
    def ours(self) -> bool:
        """Written by this tool (format 2.0, or one of its older formats upgraded)."""
        return self.ecocompute_format is not None or self.benchmark == LEGACY_BENCHMARK

    @property
    def figure_params_b(self) -> float | None:
        """The size its figures are of: the one it records; else, for a figure the
        published container derived, the size that container took (its default 1.1
        where the name states no "...B"); else the size the model's name states."""
        work = self.workload
        if work.params_b is not None:
            return work.params_b
        if not self.ours and not self.measured:
            return container_params_b(work.model_name)
        return params_b_from_model_name(work.model_name)

    @model_validator(mode="after")
    def _complete_and_sourced(self) -> Report:
        if self.ecocompute_format is not None:
            for path in COMPLETE:
                node: object = self
                for key in path:
                    if node is None:  # an optional section that is absent
                        break
                    node = getattr(node, key)
                else:
                    if node is None:
                        raise ValueError(f"{'.'.join(path)}: required in format {FORMAT}")
        if self.ours:
            self._check_source()
        return self

    def _check_source(self) -> None:
        """A measured report says direct-nvml and gives no reason; a derived one holds
        exactly the published container's phrase, with the reason beside it."""
        if self.measured:
            if self.measurement_source != MEASURED_SOURCE:
                raise ValueError(
                    f"basis measured, but measurement_source {self.measurement_source!r}"
                )
            if self.measurement_source_reason is not None:
                raise ValueError("a measured report gives no measurement_source_reason")
            return
        if self.measurement_source != NO_LOCAL_GPU:
            raise ValueError(f"a derived report's measurement_source is {NO_LOCAL_GPU!r}")
        if self.measurement_source_reason is None:
            raise ValueError("a derived report says why in measurement_source_reason")
        if self.software is not None and self.software.matches_reference_pins:
            raise ValueError("a derived report ran no measurement stack to match pins")
