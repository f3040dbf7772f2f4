"""One typed record per report, whatever its format: everything validate, aggregate,
plot, check and sweep read of a report, made here (to_record) and nowhere else.

Formats: 1.3 (ours), 1.2 (ecocompute 0.2, converted by upgrade.py first), 1.0 and 1.1
(the published container's: one run, no trials, so n = 1 and no interval). A document
has passed its format's checks (report/checks.py) before it gets here. to_record then
reads every field a consumer uses, checks its type and vocabulary, and refuses the
report, saying why, where it cannot make a record of it; nothing downstream reads the
raw document. From a published-format report only the fields of that format are read:
fields of ours in such a file (an interval, trials, a verdict) are never used, so a
malformed one cannot be either.

Kinds: "measured" (basis measured: NVML read a GPU in the run), "derived" (a figure
from reference data), "illustrative" (a published-format report that says it is not
a real measurement, as the container's example of a measured report does): never
listed, fitted or graded as a measurement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.stats import t_quantile
from ecocompute.formats.table import format_key
from ecocompute.published.archs import ARCH_CLASSES, arch_from_product_name
from ecocompute.published.curves import DeltaCurve
from ecocompute.report.labels import local_gpu
from ecocompute.report.schema import PUBLISHED_FORMATS
from ecocompute.report.software import (
    DRIVER_UNAVAILABLE,
    STACK_PACKAGES,
    stack_in_words,
    version_of,
)
from ecocompute.results.reader import Reader

MEASURED, DERIVED, ILLUSTRATIVE = "measured", "derived", "illustrative"
BASES = ("measured", "interpolated", "extrapolated", "unavailable")
OURS = "ecocompute"
# how the published container's illustrative example says what it is
_ILLUSTRATIVE = re.compile(r"\billustrative\b|not a real measurement", re.IGNORECASE)
_NO_LOCAL_GPU = "no local GPU"


def software_fingerprint(software: Mapping[str, Any]) -> str:
    """A short, readable label of the stack that produced a report, e.g.
    "py3.12.3 torch2.11.0 tf5.17.0 bnb0.50.2 cu13.0 drv580.159.04". Packages that were
    not installed are left out (a published-path report may have none of them)."""
    installed = dict(software.get("packages") or {})
    parts = [f"py{software.get('python', '?')}"]
    for name, short in STACK_PACKAGES:
        version = version_of(installed, name)
        if version:
            parts.append(f"{short}{version}")
    if software.get("torch_cuda"):
        parts.append(f"cu{software['torch_cuda']}")
    if software.get("nvidia_driver") not in (None, DRIVER_UNAVAILABLE):
        parts.append(f"drv{software['nvidia_driver']}")
    return " ".join(parts)


def software_title(software: Mapping[str, Any]) -> str:
    """The same stack in words, for a plot title."""
    return ", ".join(stack_in_words(dict(software))) or f"Python {software.get('python', '?')}"


@dataclass(frozen=True)
class Report:
    """One readable report: what the result tools use of it, typed."""

    path: Path
    format: str  # its schema_version
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
    batch_size: int = 1  # sequences decoded at once
    regime: str = "eager"  # the decode regime of a measurement
    weights: str | None = None  # pretrained | synthetic (ours), None where not said
    library: str | None = None  # the library that made the format (ours: quantization)
    format_key: str = ""  # the precision, with the library where not its default
    throughput_tokens_per_s: float | None = None  # the format's, measured
    fp16_throughput_tokens_per_s: float | None = None
    session_s: float | None = None  # the session's seconds on its machine (measured)
    # which unit(s) of the card measured it, and what tells units apart (measured, ours)
    unit: str | None = None  # the measured GPUs' NVML UUIDs, joined by "+"
    board_part: str | None = None
    vbios: str | None = None
    idle_before_w: float | None = None  # the GPUs' idle power before the session
    delta_se_pct: float | None = None  # the standard error of delta_pct
    throttled_windows: int | None = None

    @property
    def measured(self) -> bool:
        return self.kind == MEASURED

    @property
    def quantized(self) -> bool:
        return self.precision != Precision.FP16

    @property
    def from_published_container(self) -> bool:
        """Written by the published EcoCompute container (1.0 or 1.1): one run, no
        trials, so n = 1 and no interval."""
        return self.format in PUBLISHED_FORMATS

    @property
    def format_name(self) -> str:
        return self.format.rsplit("/", 1)[-1]

    @property
    def format_label(self) -> str:
        """The format as tables name it: INT8-torchao where not the default library."""
        return self.format_key or self.precision


def to_record(path: Path, doc: Mapping[str, Any]) -> tuple[Report | None, list[str]]:
    """(the record of a checked document, []) or (None, why no record can be made)."""
    r = Reader(doc)
    version = r.text("schema_version", required=True) or "?"
    published = version in PUBLISHED_FORMATS
    basis = r.choice("results", "basis", allowed=BASES) or "unavailable"
    precision = r.text("workload", "precision", required=True) or "?"
    model = r.text("workload", "model_name", required=True) or "?"
    gpu = r.text("system_under_test", "gpu")
    source = r.text("measurement_source") or ("not given" if published else "?")
    kind = _kind(r, published, basis, source)
    arch = _arch(r.text("system_under_test", "gpu_arch"), gpu)
    delta_field = "vs_fp16_energy_pct" if published else "vs_fp16_energy_pct_3dp"
    delta = r.number("results", delta_field)
    if delta is None:
        delta = r.number("results", "vs_fp16_energy_pct")
    ours: dict[str, Any] = {} if published else _ours_only(r, precision, basis)
    software = r.obj("software")
    reason = None if published else r.text("measurement_source_reason")
    record = Report(
        path=path,
        format=version,
        origin=f"published container, format {version.rsplit('/', 1)[-1]}" if published else OURS,
        kind=kind,
        basis=basis,
        arch=arch,
        card=_card(r, doc, published, kind, gpu, arch),
        model=model,
        params_b=r.number("workload", "params_b"),
        precision=precision,
        protocol=_protocol(r, published, kind),
        fingerprint=software_fingerprint(software) if software else _no_software(version),
        software_title=software_title(software) if software else _no_software(version),
        source=source if reason is None else f"{source}: {reason}",
        energy_per_token_mj=r.number("results", "energy_per_token_mj"),
        fp16_energy_per_token_mj=r.number("results", "fp16_energy_per_token_mj"),
        delta_pct=delta if precision != Precision.FP16 else None,
        batch_size=r.integer("workload", "batch_size", minimum=1) or 1,
        **ours,
    )
    return (None, r.problems) if r.problems else (record, [])


def _kind(r: Reader, published: bool, basis: str, source: str) -> str:
    if basis != "measured":
        return DERIVED
    if not published:
        return MEASURED  # our schema: measured means measurement_source direct-nvml
    note = r.text("results", "note") or ""
    if _ILLUSTRATIVE.search(source) or _ILLUSTRATIVE.search(note):
        return ILLUSTRATIVE
    if _NO_LOCAL_GPU in source:
        r.problems.append(
            f"$.results.basis: 'measured', but measurement_source says {source!r}: "
            "a figure no local GPU measured is not a measurement"
        )
    return MEASURED


def _arch(arch: str | None, gpu: str | None) -> str:
    """The report's arch class; a published report may name the card there instead
    (its 'auto' records an unknown card by name), which is then read as a name."""
    if arch in ARCH_CLASSES:
        return str(arch)
    for name in (arch, gpu):
        found = arch_from_product_name(name) if name else "unknown"
        if found != "unknown":
            return found
    return "unknown"


def _card(
    r: Reader, doc: Mapping[str, Any], published: bool, kind: str, gpu: str | None, arch: str
) -> str:
    if kind != DERIVED:
        return gpu or "unnamed GPU"
    if published:  # the container writes the published card it stands for as the gpu
        return f"no GPU [{arch}, published {gpu}]" if gpu else f"no GPU [{arch}]"
    here = local_gpu(doc)
    ref = r.text("results", "reference_card")
    stand_in = f"published {ref}" if ref else "no published card"
    return f"{here or 'no GPU'} [{arch}, {stand_in}]"


def _protocol(r: Reader, published: bool, kind: str) -> str:
    """New tokens per run, batch size, the decode regime of a measurement, and for a
    measurement over several GPUs their number."""
    tokens = None if published else r.integer("workload", "max_new_tokens", minimum=1)
    if tokens is None:
        tokens = r.integer("measurement", "tokens_per_run", minimum=1)
    batch = r.integer("workload", "batch_size", minimum=1)
    text = f"{'?' if tokens is None else tokens} tok, batch {'?' if batch is None else batch}"
    if kind != MEASURED:
        return text
    regime = None if published else r.text("measurement", "decode", "regime")
    if regime not in (None, "eager"):
        text += f", {regime}"
    gpus = r.integer("system_under_test", "accelerator_count", minimum=1) or 1
    return f"{text}, {gpus} GPUs" if gpus > 1 else text


def _ours_only(r: Reader, precision: str, basis: str) -> dict[str, Any]:
    """The fields only our formats have: interval, pairs, verdict, trial CV, curve."""
    stats = r.obj("results", "per_format").get(precision)
    cv = None
    if isinstance(stats, Mapping):
        cv = r.number("results", "per_format", precision, "cv_pct")
    elif stats is not None:
        r.problems.append(f"$.results.per_format.{precision}: not an object")
    library = r.text("workload", "quantization", "library")
    return {
        "ci95_pct": r.interval("results", "vs_fp16_ci95_pct"),
        "n_pairs": r.integer("results", "n_pairs"),
        "verdict": r.text("results", "verdict"),
        "trial_cv_pct": cv,
        "curve": _curve(r) if basis != "measured" else None,
        "regime": r.text("measurement", "decode", "regime") or "eager",
        "weights": r.text("workload", "weights"),
        "library": library,
        "format_key": format_key(precision, library),
        "throughput_tokens_per_s": _throughput(r, precision),
        "fp16_throughput_tokens_per_s": _throughput(r, "FP16"),
        "session_s": r.number("measurement", "timing", "session_s"),
        **_unit_fields(r, basis),
    }


def _unit_fields(r: Reader, basis: str) -> dict[str, Any]:
    """The unit a measured report ran on (its GPUs' UUIDs), what tells it apart, and the
    delta's standard error (from its interval and pairs, or the between-compile model's
    own where the report pooled several compiles)."""
    if basis != "measured":
        return {}
    gpus = r.doc.get("system_under_test", {}).get("gpus") or []
    gpus = [g for g in gpus if isinstance(g, Mapping)]
    uuids = [str(g["uuid"]) for g in gpus if isinstance(g.get("uuid"), str)]
    parts = {str(g["board_part_number"]) for g in gpus if g.get("board_part_number")}
    vbios = {str(g["vbios_version"]) for g in gpus if g.get("vbios_version")}
    idle = [
        g["before_session"]["idle_power_watts"]
        for g in gpus
        if isinstance(g.get("before_session"), Mapping)
        and isinstance(g["before_session"].get("idle_power_watts"), (int, float))
    ]
    throttled = r.integer("results", "conditions", "throttled_windows")
    return {
        "unit": "+".join(uuids) if uuids else None,
        "board_part": "+".join(sorted(parts)) if parts else None,
        "vbios": "+".join(sorted(vbios)) if vbios else None,
        "idle_before_w": float(sum(idle)) if idle and len(idle) == len(gpus) else None,
        "delta_se_pct": _delta_se(r),
        "throttled_windows": throttled,
    }


def _delta_se(r: Reader) -> float | None:
    se = r.number("results", "between_compiles", "se_pct")
    if se is not None:
        return se if se > 0 else None
    ci = r.interval("results", "vs_fp16_ci95_pct")
    n = r.integer("results", "n_pairs", minimum=0)
    if ci is None or n is None or n < 2 or ci[1] <= ci[0]:
        return None
    return (ci[1] - ci[0]) / 2.0 / t_quantile(0.975, n - 1)


def _throughput(r: Reader, precision: str) -> float | None:
    if not isinstance(r.obj("results", "per_format").get(precision), Mapping):
        return None
    return r.number("results", "per_format", precision, "throughput_tokens_per_s")


def _curve(r: Reader) -> DeltaCurve | None:
    """The curve a derived report says gave its delta (results.reference_curve)."""
    if not r.obj("results", "reference_curve"):
        return None
    where = ("results", "reference_curve")
    a, s, nstar = (r.number(*where, k) for k in ("A", "S", "Nstar"))
    fitted = r.interval(*where, "fitted_range_b")
    arch, precision = r.text(*where, "arch"), r.text(*where, "precision")
    if a is None or s is None or nstar is None or nstar <= 0 or fitted is None:
        r.problems.append("$.results.reference_curve: not a complete curve (A, S, Nstar, range)")
        return None
    return DeltaCurve(
        arch=arch or "?",
        precision=precision or "?",
        a_pct=a,
        s_pct=s,
        nstar_b=nstar,
        fitted_range_b=fitted,
        borrowed_from=r.text(*where, "borrowed_from"),
        origin=r.text(*where, "origin") or "published",
        s_cap_pct=r.number(*where, "s_cap_pct"),
    )


def _no_software(version: str) -> str:
    return f"software not recorded (format {version.rsplit('/', 1)[-1]})"
