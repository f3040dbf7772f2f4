"""One typed record per report, whatever its format: what validate, aggregate, plot,
check and sweep read of a report, made here from the report model (to_record) and
nowhere else.

Every format this tool reads is first read into the report model (report/read.py: this
tool's 2.0 as it is, older formats upgraded); the record is a flat view of that model.
A published-format report (1.0, 1.1) holds one run and no trials: n = 1, no interval.

Kinds: "measured" (basis measured: NVML read a GPU in the run), "derived" (a figure
from reference data), "illustrative" (a published-format report that says it is not a
real measurement, as the container's example of a measured report does): never
listed, fitted or graded as a measurement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.printable import printable
from ecocompute.core.stats import se_of_t_interval
from ecocompute.published.curves import DeltaCurve
from ecocompute.published.figures import is_project_card
from ecocompute.report.decode_model import Compiler, Decode
from ecocompute.report.labels import format_label, local_gpu
from ecocompute.report.model import FORMAT, Software
from ecocompute.report.model import Report as ReportModel
from ecocompute.report.read import parse_report
from ecocompute.report.results_model import Phases, Results
from ecocompute.report.schema import PUBLISHED_FORMATS
from ecocompute.report.software import (
    DRIVER_UNAVAILABLE,
    STACK_PACKAGES,
    stack_in_words,
    version_of,
)

MEASURED, DERIVED, ILLUSTRATIVE = "measured", "derived", "illustrative"
OURS = "ecocompute"
# how the published container's illustrative example says what it is
_ILLUSTRATIVE = re.compile(r"\billustrative\b|not a real measurement", re.IGNORECASE)
_NO_LOCAL_GPU = "no local GPU"


def software_fingerprint(software: Software | Mapping[str, Any]) -> str:
    """A short, readable label of the stack that produced a report, e.g.
    "py3.12.3 torch2.11.0 tf5.17.0 bnb0.50.2 cu13.0 drv580.159.04". Packages that were
    not installed are left out (a published-path report may have none of them)."""
    sw = software.model_dump() if isinstance(software, Software) else dict(software)
    installed = dict(sw.get("packages") or {})
    parts = [f"py{sw.get('python', '?')}"]
    parts += [f"{short}{v}" for name, short in STACK_PACKAGES if (v := version_of(installed, name))]
    if sw.get("torch_cuda"):
        parts.append(f"cu{sw['torch_cuda']}")
    if sw.get("nvidia_driver") not in (None, DRIVER_UNAVAILABLE):
        parts.append(f"drv{sw['nvidia_driver']}")
    return " ".join(parts)


def software_title(software: Software | Mapping[str, Any]) -> str:
    """The same stack in words, for a plot title."""
    sw = software.model_dump() if isinstance(software, Software) else dict(software)
    words = stack_in_words(sw.get("packages") or {}, sw.get("nvidia_driver"))
    return ", ".join(words) or f"Python {sw.get('python', '?')}"


@dataclass(frozen=True)
class Report:
    """One readable report: what the result tools use of it, typed."""

    path: Path
    format: str  # its format: "2.0" (this tool's), or the schema_version it was written as
    origin: str  # "ecocompute", or "published container, format 1.1"
    kind: str  # measured | derived | illustrative
    basis: str
    arch: str
    card: str  # the GPU measured; for a figure without one, what it stands for
    model: str
    params_b: float | None
    precision: str
    protocol: str  # tokens per run, batch, regime and GPUs: reports of two never pool
    fingerprint: str  # the software stack, short
    software_title: str  # the software stack, in words
    source: str  # measurement_source, with its reason where the report gives one
    energy_per_token_mj: float | None
    fp16_energy_per_token_mj: float | None
    delta_pct: float | None  # vs FP16 in percent; None for FP16 itself or no figure
    ci95_pct: tuple[float, float] | None = None
    n_pairs: int | None = None
    verdict: str | None = None
    trial_cv_pct: float | None = None  # within-report trial CV of its format's energy
    curve: DeltaCurve | None = None  # a derived figure: the curve that gave it
    reference_card: str | None = None  # a derived figure: the card whose figures gave it
    batch_size: int = 1  # sequences decoded at once
    regime: str = "eager"  # the decode regime of a measurement
    compile_notes: tuple[str, ...] = ()  # how its compile departs from the regime's own
    weights: str | None = None  # pretrained | synthetic (ours), None where not said
    library: str | None = None  # the library that made the format (ours: quantization)
    format_key: str = ""  # the precision, with the library where not its default
    throughput_tokens_per_s: float | None = None  # the format's, measured
    fp16_throughput_tokens_per_s: float | None = None
    session_s: float | None = None  # the session's seconds on its machine (measured)
    # which unit(s) of the card measured it, and what tells units apart (measured, ours)
    unit: str | None = None  # the measured GPUs' NVML UUIDs, sorted, joined by "+"
    board_part: str | None = None
    vbios: str | None = None
    idle_before_w: float | None = None  # the GPUs' idle power before the session
    host_cpu: str | None = None  # the host's CPU numbers and clock (eager follows the host)
    delta_se_pct: float | None = None  # the standard error of delta_pct
    # the Student t degrees of freedom of ci95_pct: compiles - 1 over --compiles N, whose
    # interval pools compiles, else pairs - 1
    interval_df: int | None = None
    throttled_windows: int | None = None
    # what sweeps read of the report beyond the figures (ours only): its phases and its
    # decode record; never the whole model, which a large folder's worker processes would
    # otherwise pickle back, trials and all, for every report
    phases: Phases | None = None
    decode: Decode | None = None
    max_new_tokens: int | None = None  # new tokens per run (any format's: check refuses 4)
    prompt_tokens: int | None = None  # a prompt length chosen (--prompt_tokens), else None

    @property
    def measured(self) -> bool:
        return self.kind == MEASURED

    @property
    def quantized(self) -> bool:
        return self.precision != Precision.FP16

    @property
    def from_published_container(self) -> bool:
        """Written by the published EcoCompute container (1.0 to 1.3): one run, no
        trials, so n = 1 and no interval. (This tool's own older 1.2 and 1.3 share those
        names; its origin tells them apart.)"""
        return self.origin != OURS and self.format in PUBLISHED_FORMATS

    @property
    def format_name(self) -> str:
        return self.format.rsplit("/", 1)[-1]

    @property
    def format_label(self) -> str:
        """The format as tables name it: INT8-torchao where not the default library."""
        return self.format_key or self.precision


def to_record(
    path: Path, report: ReportModel | Mapping[str, Any]
) -> tuple[Report | None, list[str]]:
    """(the record of a report, []) or (None, why no record can be made). A document is
    read into the model first (report/read.py)."""
    if not isinstance(report, ReportModel):
        model, problems = parse_report(dict(report))
        if model is None:
            return None, problems
        report = model
    published = report.schema_version in PUBLISHED_FORMATS and not report.ours
    res, work, sut = report.results, report.workload, report.system_under_test
    source = report.measurement_source or ("not given" if published else "?")
    kind = DERIVED
    if res.basis == "measured":
        kind = MEASURED
        if published and (_ILLUSTRATIVE.search(source) or _ILLUSTRATIVE.search(res.note or "")):
            kind = ILLUSTRATIVE
        elif published and _NO_LOCAL_GPU in source:
            return None, [
                f"$.results.basis: 'measured', but measurement_source says {source!r}: a figure "
                "no local GPU measured is not a measurement"
            ]
    delta = res.vs_fp16_energy_pct_exact
    if delta is None:
        delta = res.vs_fp16_energy_pct
    reason = report.measurement_source_reason
    software = report.software
    version = FORMAT if report.ecocompute_format else report.schema_version
    record = Report(
        path=path,
        format=version,
        origin=f"published container, format {version.rsplit('/', 1)[-1]}" if published else OURS,
        kind=kind,
        basis=res.basis,
        arch=sut.gpu_arch,
        # the strings a table prints, with control characters escaped: a name holding ESC[2K
        # would otherwise redraw a terminal's line as a row with other figures
        card=printable(_card(report, published, kind)),
        model=printable(work.model_name),
        # where the report gives no size, the one its figure is of (report/model.py)
        params_b=report.figure_params_b,
        precision=work.precision,
        protocol=_protocol(report, published, kind),
        fingerprint=printable(
            software_fingerprint(software) if software else _no_software(version)
        ),
        software_title=printable(software_title(software) if software else _no_software(version)),
        source=printable(source if reason is None else f"{source}: {reason}"),
        energy_per_token_mj=res.energy_per_token_mj,
        fp16_energy_per_token_mj=res.fp16_energy_per_token_mj,
        delta_pct=delta if work.precision != Precision.FP16 else None,
        batch_size=work.batch_size,
        max_new_tokens=_tokens_per_run(report, published),
        reference_card=res.reference_card,
        **({} if published else _ours_only(report)),
    )
    return record, []


def _card(report: ReportModel, published: bool, kind: str) -> str:
    sut, res = report.system_under_test, report.results
    if kind != DERIVED:
        return sut.gpu or "unnamed GPU"
    if published:  # the container writes the published card it stands for as the gpu
        return (
            f"no GPU [{sut.gpu_arch}, published {sut.gpu}]"
            if sut.gpu
            else f"no GPU [{sut.gpu_arch}]"
        )
    here = local_gpu(report)
    whose = "this project's" if is_project_card(res.reference_card) else "published"
    stand_in = f"{whose} {res.reference_card}" if res.reference_card else "no published card"
    return f"{here or 'no GPU'} [{sut.gpu_arch}, {stand_in}]"


def _protocol(report: ReportModel, published: bool, kind: str) -> str:
    """New tokens per run, batch size, the decode regime of a measurement, and for a
    measurement over several GPUs their number."""
    work, meas = report.workload, report.measurement
    tokens = _tokens_per_run(report, published)
    text = f"{'?' if tokens is None else tokens} tok, batch {work.batch_size}"
    if kind != MEASURED:
        return text
    decode = meas.decode
    if not published:  # the published formats record none of these
        text += f", {decode.regime}"  # eager too: three regimes give three answers
        text += "".join(f" ({note})" for note in _compile_notes(decode.compiler))
        if work.prompt_source == "prompt_tokens":
            text += f", prompt {work.prompt_tokens}"
        if decode.phases == "apart":
            text += ", phases apart"
    gpus = report.system_under_test.accelerator_count
    return f"{text}, {gpus} GPUs" if gpus > 1 else text


def _tokens_per_run(report: ReportModel, published: bool) -> int | None:
    """New tokens per run: the workload's (ours), else the measurement's (the published
    container's formats say it there only)."""
    tokens = None if published else report.workload.max_new_tokens
    return report.measurement.tokens_per_run if tokens is None else tokens


def _compile_notes(compiler: Compiler | None) -> tuple[str, ...]:
    """How a compile departs from the compiled regime's own (none for any other regime)."""
    return () if compiler is None else compiler.notes()


def _ours_only(report: ReportModel) -> dict[str, Any]:
    """The fields only our formats have: interval, pairs, verdict, trial CV, curve, the
    unit it ran on."""
    res, work = report.results, report.workload
    stats = res.per_format.get(work.precision)
    fp16 = res.per_format.get("FP16")
    ci = res.vs_fp16_ci95_pct
    fields: dict[str, Any] = {
        "ci95_pct": None if ci is None else (ci[0], ci[1]),
        "n_pairs": res.n_pairs,
        "interval_df": _interval_df(res),
        "verdict": res.verdict,
        "trial_cv_pct": None if stats is None else stats.cv_pct,
        "curve": None
        if res.basis == "measured" or res.reference_curve is None
        else res.reference_curve.delta_curve(),
        "regime": report.measurement.decode.regime,
        "compile_notes": _compile_notes(report.measurement.decode.compiler),
        "weights": work.weights,
        "library": work.library,
        "format_key": format_label(report),
        "throughput_tokens_per_s": None if stats is None else stats.throughput_tokens_per_s,
        "fp16_throughput_tokens_per_s": None if fp16 is None else fp16.throughput_tokens_per_s,
        "session_s": report.measurement.timing.session_s if report.measurement.timing else None,
        "phases": res.phases,
        "decode": report.measurement.decode,
        "prompt_tokens": work.prompt_tokens if work.prompt_source == "prompt_tokens" else None,
    }
    if res.basis == "measured":
        gpus = report.system_under_test.gpus
        parts = {g.board_part_number for g in gpus if g.board_part_number}
        vbios = {g.vbios_version for g in gpus if g.vbios_version}
        fields.update(
            unit=printable("+".join(sorted(g.uuid for g in gpus))) or None,
            board_part=printable("+".join(sorted(parts))) or None,
            vbios=printable("+".join(sorted(vbios))) or None,
            idle_before_w=report.system_under_test.idle_before_w,
            host_cpu=None
            if (cpu := report.system_under_test.host_cpu) is None or (words := cpu.words()) is None
            else printable(words),
            delta_se_pct=_delta_se(ci, fields["interval_df"]),
            throttled_windows=None if res.conditions is None else res.conditions.throttled_windows,
        )
    return fields


def _interval_df(res: Results) -> int | None:
    """The degrees of freedom of the headline interval: over --compiles N it pools the
    compiles (N - 1), else the pairs (pairs - 1)."""
    if res.between_compiles is not None:
        return res.between_compiles.compiles - 1
    return None if res.n_pairs is None else res.n_pairs - 1


def _delta_se(ci: list[float] | None, df: int | None) -> float | None:
    """The standard error behind a Student-t 95% interval of df degrees of freedom (over
    --compiles N, compiles - 1: read as pairs - 1, it came out about 4 times too large
    and a compiled report weighed a sixteenth of its due in a pool of units)."""
    se = se_of_t_interval(ci, df)
    return se if se is not None and se > 0 else None


def _no_software(version: str) -> str:
    return f"software not recorded (format {version.rsplit('/', 1)[-1]})"
