"""How a measured report's decodes ran (measurement.decode): the regime, what its
preparation did per format (the compiled regime's compile, the kernels it chose), and
with --compiles N each compile's record. Part of the report model (report/model.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ecocompute.llm.compiled import CompiledDecoder
from ecocompute.params.run_params import compile_notes
from ecocompute.report.results_model import Format, Index, NonNegative, OrAbsent, Strict

Regime = Literal["eager", "graphs", "compiled"]


Dims = Annotated[list[Index], Field(min_length=3, max_length=3)]  # x, y, z


class KernelLaunch(Strict):
    """One distinct launch of a captured step, and how many times the step makes it."""

    function: str
    grid: Dims | None
    block: Dims | None
    shared_mem_bytes: Index | None
    count: Annotated[int, Field(ge=1)]


class KernelFingerprint(Strict):
    sha256: str | None
    kernels: Index | None = None
    distinct_functions: Index | None = None
    source: str
    launches: OrAbsent[list[KernelLaunch]] = None  # none in reports before they were listed


class FormatDecode(Strict):
    """What the regime's preparation did for one format (the compiled regime's compile)."""

    OMIT_NULL = CompiledDecoder.per_format_keys  # its fields: what a decoder records per format

    kernel_fingerprint: KernelFingerprint | None = None
    compile_s: NonNegative | None = None
    fullgraph: bool | None = None
    graph_break: str | None = None
    inductor_cache: str | None = None
    fx_graph_cache: dict[str, int] | None = None
    dynamo_graphs: Index | None = None
    token_check: dict[str, Any] | None = None


class CompileBlock(Strict):
    """One of --compiles N: every format compiled afresh, then its rounds measured."""

    compile: Index
    inductor_cache_dir: str
    per_format: dict[Format, FormatDecode]


class Compiler(Strict):
    backend: str
    mode: str
    dynamic: bool | None = None
    batch_dim: Literal["static", "dynamic"] | None = Field(
        None,
        description="static: compiled for this batch size; dynamic: the batch dimension a "
        "symbol, one graph for every batch of 2 or more (batch 1 its own)",
    )
    scope: Literal["step", "layer"] | None = Field(
        None,
        description="step: the whole one-token step compiled as one graph; layer: each "
        "decoder layer compiled on its own (regional compilation), the rest eager",
    )
    layers_compiled: int | None = None
    torch: str
    triton: str | None = None
    inductor_cache_dir: str | None = None
    inductor_cache_dir_from: str | None = None

    def notes(self) -> tuple[str, ...]:
        """How this compile departs from the compiled regime's own (run_params.compile_notes)."""
        return compile_notes(self.mode, self.batch_dim, self.scope)


class Decode(Strict):
    """How each decode ran. A derived report says the regime of the published figures
    (eager), and requested_regime when the run asked for another."""

    OMIT_EVERY_NULL = True

    regime: Regime = "eager"
    requested_regime: Regime | None = None
    requested_compile_notes: list[str] | None = Field(
        None,
        description="how the compile a no-GPU run asked for departs from the compiled "
        "regime's own (e.g. 'mode default'); the units beside it (regime_units) are of it",
    )
    note: str | None = None
    cache: str | None = None
    decode: str | None = None
    prefill: str | None = None
    captured: str | None = None
    graph_replays_per_decode: Index | None = None
    tokens_per_row: int | None = None
    token_choice: str | None = None
    graph_captured: bool | None = None
    batch_size: int | None = None
    prompt: str | None = None
    compiler: Compiler | None = None
    compile_s: NonNegative | None = None
    compile_note: str | None = None
    per_format: dict[Format, FormatDecode] | None = None
    compiles: list[CompileBlock] | None = Field(
        None,
        description="--compiles N: what each compile did (per_format above is the first's)",
    )
    phases: Literal["together", "apart"] | None = Field(
        None,
        description="apart: each trial measured its prefill and its decode in two windows "
        "(results.phases); absent or together: one window over both",
    )
    prefills_note: str | None = None
