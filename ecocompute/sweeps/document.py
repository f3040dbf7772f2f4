"""sweep.json as one typed model (pydantic v2): a sweep is built as a Sweep, written from
it, read back through it, and schema/sweep.schema.json is generated from it (a test fails
when the committed file and the model differ; regenerate with
`python -m ecocompute.sweeps.document`).

A file holds the keys its writer set and no others: a field that was never given (a
fleet's placement on a sequential run, a fitted curve's parameters on a skipped fit) is
left out, not written as null, so a file read and written again is the same file.
Percentages are energy per token vs FP16; sizes are billions of parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import GenerateJsonSchema

from ecocompute.boundary.atomic import file_identity, write_text_atomic
from ecocompute.core.json_types import JsonObject
from ecocompute.errors import ReportInvalid
from ecocompute.report.files import SWEEP_NAME, read_document
from ecocompute.report.numbers import dumps_strict
from ecocompute.report.read import sweep_problems
from ecocompute.report.schema import SWEEP_SCHEMA

PLOT_NAME = "sweep.png"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema" / SWEEP_SCHEMA

OK, FAILED, CANCELLED = "ok", "failed", "cancelled"
CrossoverStatus = Literal["within measured range", "extrapolated", "none in range"]
WITHIN: Final = "within measured range"
EXTRAPOLATED: Final = "extrapolated"
NONE_IN_RANGE: Final = "none in range"

Precision = Literal["FP16", "NF4", "INT8", "INT4", "FP8"]
Quantized = Literal["NF4", "INT8", "INT4", "FP8"]
Pair = Annotated[list[float], Field(min_length=2, max_length=2)]
OpenPair = Annotated[list[float | None], Field(min_length=2, max_length=2)]  # null: open end
Seconds = Annotated[float, Field(ge=0)]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


FORMAT_LABEL = (
    "the format as tables name it, where the precision alone does not (INT8-torchao, "
    "INT8 (threshold 0)): another kernel, never one curve with the precision's default"
)


def format_label_field(label: str | None, precision: str) -> dict[str, str]:
    """format_label as a record or fit holds it: only where it is not the precision."""
    return {} if label is None or label == precision else {"format_label": label}


class RunRecord(_Part):
    """One point's format: how its run ended and what its report says."""

    model_name: str
    precision: Precision
    format_label: str | None = Field(None, description=FORMAT_LABEL)
    status: Literal["ok", "failed", "cancelled"] = Field(
        description="cancelled: a fleet sweep was interrupted (Ctrl-C, SIGTERM) before the "
        "run finished"
    )
    error: str | None = None
    report: str | None = Field(None, description="its energy.json, relative to sweep.json")
    params_b: float | None = None
    basis: str | None = None
    vs_fp16_energy_pct: float | None = None
    vs_fp16_ci95_pct: Pair | None = None
    n_pairs: int | None = None
    verdict: str | None = None
    batch_size: Annotated[int, Field(ge=1)] | None = None
    session_s: Seconds | None = Field(
        None,
        description="seconds the point's session took on its machine (loading, preparing, "
        "measuring), from its report",
    )
    host: str | None = Field(
        None, description="fleet sweep: host name of the worker that ran (or last tried) the run"
    )
    gpu: str | None = Field(None, description="fleet sweep: that worker's CUDA_VISIBLE_DEVICES")
    worker: str | None = Field(None, description="fleet sweep: the Dask worker's name (or address)")
    attempts: Annotated[int, Field(ge=0)] | None = Field(
        None, description="fleet sweep: attempts that started (a failed first is retried once)"
    )
    attempt_errors: list[str] | None = Field(
        None, description="fleet sweep: why each failed attempt failed"
    )
    elapsed_s: Seconds | None = Field(None, description="wall time of the run")
    started_unix_s: float | None = Field(
        None, description="fleet sweep: when the run's process started, on its worker's clock"
    )
    ended_unix_s: float | None = Field(
        None, description="fleet sweep: when it ended, on its worker's clock"
    )


class FitPoint(_Part):
    """A measured point a size fit used."""

    model_name: str
    params_b: float
    delta_pct: float
    se_pct: float | None
    ci95_pct: Pair | None
    report: str


class FitParameters(_Part):
    """dE%(N) = A - S * x / (1 + x), x = N / Nstar (N in billions)."""

    A: float
    S: float
    Nstar: float


class SizeCrossover(_Part):
    """Where a fitted size curve crosses zero, and its bootstrap interval."""

    status: CrossoverStatus
    params_b: float | None
    search_range_b: Pair
    search_range_rule: str
    note: str | None = None
    fitted_curve_crossover_b: float | None = None
    ci95_b: OpenPair | None = None
    ci_method: str | None = None
    ci_note: str | None = None
    resamples_crossing_in_range: float | None = None


class CurveFit(_Part):
    """A size fit: fitted (its parameters, crossover and notes) or skipped (why)."""

    status: Literal["fitted", "skipped"]
    reason: str | None = None
    formula: str | None = None
    parameters: FitParameters | None = None
    n_points: int | None = None
    dof: int | None = None
    chi2: float | None = None
    reduced_chi2: float | None = None
    weighting: str | None = None
    measured_range_b: Pair | None = None
    crossover: SizeCrossover | None = None
    notes: list[str] | None = None

    @property
    def fitted(self) -> bool:
        return self.status == "fitted"


class PublishedCurve(_Part):
    """The published curve of the card's arch class, with its own crossover."""

    arch: str
    card: str | None = None
    A: float | None = None
    S: float | None = None
    Nstar: float | None = None
    fitted_range_b: Pair | None = None
    crossover_b: float | None = None
    borrowed_for: str | None = None
    note: str | None = None
    crossover_note: str | None = None


class _FormatPart(_Part):
    precision: Quantized
    format_label: str | None = Field(None, description=FORMAT_LABEL)
    points: list[FitPoint]
    left_out: list[str] = Field(default_factory=list)


class Fit(CurveFit, _FormatPart):
    """One format's size fit over the measured points (derived ones are left out)."""

    published_curve: PublishedCurve | None = None


class PhaseDelta(_Part):
    """One phase's paired delta vs FP16 at a point (its report's results.phases)."""

    delta_pct: float
    ci95_pct: Pair | None = None
    verdict: str | None = None


class PointPhases(_Part):
    """A point measured with its phases apart: each phase's delta, the stated workload's
    combined one, and the phase that decides the workload's verdict."""

    prompt_tokens: int
    new_tokens: int
    prefill: PhaseDelta
    decode: PhaseDelta
    workload: PhaseDelta
    decided_by: str | None = None


class BatchPoint(_Part):
    """One batch size's measured delta (one session's report): its headline (with the
    phases apart, the decode window's), and with the phases apart each phase's."""

    batch_size: Annotated[int, Field(ge=1)]
    delta_pct: float
    ci95_pct: Pair | None = None
    n_pairs: int | None = None
    interval_df: int | None = Field(
        None,
        description="the Student t degrees of freedom of ci95_pct: compiles - 1 over "
        "--compiles N (the interval pools compiles); absent: n_pairs - 1",
    )
    verdict: str | None = None
    throughput_tokens_per_s: float | None = None
    fp16_throughput_tokens_per_s: float | None = None
    report: str | None = None
    phases: PointPhases | None = None


class Draws(_Part):
    n: int
    no_crossing_beyond: int
    no_crossing_below: int


class BatchCrossover(_Part):
    """The batch size where a format's delta changes sign (log2-linear between the two
    measured sizes), with a parametric-bootstrap 95% interval whose ends are null where
    open (ci95_text says below or beyond)."""

    batch_sizes: list[int] = Field(default_factory=list)
    batch_size: float | None
    status: Literal["inside", "outside", "one batch size", "repeated batch size"]
    ci95: OpenPair | None = None
    draws: Draws | None = None
    note: str | None = None
    ci95_text: str | None = None
    ci_note: str | None = None
    between_batch_sizes: Pair | None = Field(
        None,
        description="the measured batch sizes either side of the crossover: between them "
        "it is interpolated (log2-linear), so its interval holds the points' noise, not "
        "the shape of the curve between two sizes far apart",
    )


class BatchAxisEntry(_Part):
    """One model and format over the batch axis."""

    model_name: str
    precision: str
    points: list[BatchPoint]
    crossover: BatchCrossover
    map: str


class Sweep(_Part):
    """ecocompute-sweep/1.0: one card's energy_estimate runs over several model sizes, and
    the fit of dE%(N) = A - S x/(1+x), x = N/Nstar, to its measured points, with the
    crossover size where dE% = 0. Each run's full record is its own energy.json
    (runs[].report, relative to this file). Percent values are energy per token vs FP16;
    sizes are billions of parameters. With a batch axis (sweep --batch_sizes), batch_axis
    and map say per format where the delta changes sign against the batch size."""

    model_config = ConfigDict(title="EcoCompute sweep summary")

    schema_version: Literal["ecocompute-sweep/1.0"] = "ecocompute-sweep/1.0"
    timestamp_utc: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")]
    tool: str
    command: list[str] | None = None
    card: str | None
    gpu_arch: str | None
    software: str | None = Field(description="software fingerprint of the measured runs")
    protocol: str | None
    scope: str
    runs: list[RunRecord]
    fits: list[Fit]
    plot: str | None = Field(description="the plot, relative to this file")
    plot_note: str | None = None
    batch_axis: list[BatchAxisEntry] | None = None
    map: list[str] | None = Field(
        None, description="the batch axis in words, one phrase per model and format"
    )
    decode_note: str | None = Field(
        None,
        description="where the points' reports answer another decode regime than the one "
        "asked for (the published path's figures are eager's), which and why; and what a "
        "derived point's run asked that no published figure follows (--prompt_tokens, "
        "--phases apart: not applied)",
    )
    units_note: str | None = Field(
        None,
        description="where the measured points come from more than one GPU unit: which "
        "unit measured which points (a change between two units' points holds their "
        "difference too)",
    )
    batch_axis_note: str | None = Field(
        None,
        description="why a sweep over several batch sizes has no batch axis (no format "
        "was measured: the published figures are batch 1 only)",
    )

    @property
    def failed(self) -> list[RunRecord]:
        """The runs that did not finish (failed, or cancelled by an interrupt)."""
        return [r for r in self.runs if r.status != OK]

    def document(self) -> JsonObject:
        """The JSON document: its format, and the fields that were set, none made up."""
        return {"schema_version": self.schema_version, **self.model_dump(exclude_unset=True)}


def write_sweep(sweep: Sweep, folder: Path) -> Path:
    """<folder>/sweep.json, checked as `validate` checks it (schema, finite numbers: no
    NaN in a fit), then written atomically. Raises ReportInvalid, RunError."""
    doc = sweep.document()
    problems = sweep_problems(doc)
    if problems:
        raise ReportInvalid(problems)
    return write_text_atomic(folder / SWEEP_NAME, dumps_strict(doc, indent=2) + "\n")


def read_sweep(path: str | Path) -> Sweep:
    """A sweep.json read back as a Sweep (checked as `validate` checks it first). Raises
    ReportInvalid with every reason."""
    doc, problems = read_document(path)
    problems = problems if doc is None else sweep_problems(doc)
    if problems:
        raise ReportInvalid(problems)
    return Sweep.model_validate(doc)


def sweep_leaves(output_dir: str, folders: Sequence[str] = ("",)) -> Callable[[], str]:
    """What a sweep has written when it fails, in words, told from the files themselves:
    it writes each point's energy.json as it goes and sweep.json at the end, so a failure
    after its first point must not say that nothing was written (cli.main appends these
    words to a sweep's failure line). Call before the sweep starts; the result, called
    after a failure, says whether sweep.json was replaced meanwhile (a new file has a new
    identity). folders: where under output_dir the sweep writes its sweep.json (a
    prompt-length axis: one each)."""
    targets = [Path(output_dir) / folder / SWEEP_NAME for folder in folders]
    before = [file_identity(t) for t in targets]

    def words() -> str:
        now = [file_identity(t) for t in targets]
        pairs = list(zip(targets, before, now, strict=True))
        written = [str(t) for t, b, n in pairs if n is not None and n != b]
        removed = [str(t) for t, b, n in pairs if b is not None and n is None]
        if written:
            return (
                f"{', '.join(written)} {'was' if len(written) == 1 else 'were'} written, as "
                "was the energy.json of every point that finished"
            )
        text = "no sweep.json was written; the energy.json of every point that finished stands"
        if removed:  # the sweep measured its points again: the old summary would contradict
            text += (
                f" (the earlier {', '.join(removed)} was removed when the sweep began: "
                "`ecocompute sweep --fit_only` writes one from the reports)"
            )
        return text

    return words


class _Plain(GenerateJsonSchema):
    """No title per field, and no defaults: a default is the model's business, and a
    validator that fills them in (fastjsonschema does) would change the document."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> Any:
        return self.generate_inner(schema["schema"])


def schema_text() -> str:
    """schema/sweep.schema.json, as the model generates it."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://ecocompute.example/schema/{SWEEP_SCHEMA}",
        **Sweep.model_json_schema(schema_generator=_Plain),
    }
    return json.dumps(schema, indent=2) + "\n"


if __name__ == "__main__":  # regenerate the committed schema
    SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
