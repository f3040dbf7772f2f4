"""Reports of older formats, upgraded into the report model (report/model.py).

The formats this tool reads besides its own 2.0, each first checked against its own
schema (report/schema.py):
- this tool's 1.2 (ecocompute 0.2), 1.3 (0.3) and 1.4 (0.4-0.5): the same sections as
  2.0 with figures rounded to 3-4 decimals; 1.2 names a few things otherwise;
- the published container's 1.0 and 1.1: one run and no trials, only what the published
  format's facts require.
The upgrade is mechanical: the numbers are the file's; what changes is where they sit
(the three-decimal delta becomes vs_fp16_energy_pct_exact, the idle power an idle
window, fields the model does not hold are dropped after the file's own schema checked
them), and the report says which format it came from (provenance.upgraded_from, or
schema_version for a published report, which names no provenance of this tool). What
our older formats state in other words, format 2.0 and the published 1.3 record as
Protocol v1.1 does (recorded_records): greedy decoding, the generation window.
"""

from __future__ import annotations

import copy
import functools
import math
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from ecocompute.core.json_types import json_copy
from ecocompute.params import nominal_params_b
from ecocompute.published.archs import ARCH_CLASSES, arch_from_product_name
from ecocompute.report.model import DECODING, LEGACY_BENCHMARK, NO_LOCAL_GPU, WINDOW, Report
from ecocompute.report.schema import (
    PUBLISHED_13_SCHEMA,
    PUBLISHED_NEW,
    PUBLISHED_OLD,
    PUBLISHED_SCHEMA,
    load_schema,
)
from ecocompute.report.software import COMPARABILITY_NOTE, DRIVER_UNAVAILABLE, NOT_INSTALLED

# What the published container's validator reads beyond its strict schema (Protocol
# v1.1's records, tools/validate.py at 8778c42): kept when its 1.2/1.3 report has them.
_PROTOCOL_RECORDS = {
    "workload": {"decoding": {"type": "string"}},
    "measurement": {"window": {"type": "string"}},
    "thermal": {"arm_order": {"type": "string"}},
}
_OLD_SOURCE = "published-dataset ("


def upgraded(doc: Mapping[str, Any]) -> Report:
    """The report model of a schema-valid document of an older format. Raises
    pydantic.ValidationError where it cannot be one (the caller says why)."""
    new = json_copy(dict(doc))
    version = str(new.get("schema_version"))
    if version in PUBLISHED_OLD or new.get("benchmark") != LEGACY_BENCHMARK:
        _published(new, version)
    else:
        if version == "ecocompute-energy/1.2":
            _from_12(new)
        _ours(new, version)
    quality = new.get("quality")
    if isinstance(quality, dict):
        quality.setdefault("requested", quality.get("basis") == "measured")
    return Report.model_validate(project(Report, new))


def _ours(doc: dict[str, Any], version: str) -> None:
    res = doc["results"]
    if "vs_fp16_energy_pct_3dp" in res:
        res["vs_fp16_energy_pct_exact"] = res.pop("vs_fp16_energy_pct_3dp")
    elif res.get("vs_fp16_energy_pct") is not None:
        res["vs_fp16_energy_pct_exact"] = res["vs_fp16_energy_pct"]
    source = str(doc.get("measurement_source", ""))
    if source.startswith(NO_LOCAL_GPU) and source != NO_LOCAL_GPU:  # 0.3.0: reason inside
        doc["measurement_source"] = NO_LOCAL_GPU
        doc.setdefault("measurement_source_reason", source[len(NO_LOCAL_GPU) :].strip(" :()"))
    provenance = doc.get("provenance")
    if isinstance(provenance, dict):
        provenance.setdefault("upgraded_from", version)
    if res.get("basis") == "measured":
        precision = str(doc["workload"]["precision"])
        library = (doc["workload"].get("quantization") or {}).get("library")
        for fmt, stats in (res.get("per_format") or {}).items():
            stats.setdefault("format", fmt)
            stats.setdefault("library", library if fmt == precision and library else "torch")
            if stats.get("nvml_indices") is None:
                gpus = (doc.get("system_under_test") or {}).get("gpus") or []
                stats["nvml_indices"] = [g["nvml_index"] for g in gpus][:1] or [0]
        res["idle_window"] = _idle_window(res)
    for (block, key), value in recorded_records(doc).items():
        doc[block][key] = value  # what the file states in other words, as 2.0 records it


def recorded_records(doc: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """The Protocol v1.1 records a measured report of our older formats states in other
    words: greedy decoding in its measurement.decode (1.4's token_choice, 0.3's
    transformers call, 0.2's generate() arguments), the decode window its energies
    integrate in its measurement.method."""
    measurement = doc.get("measurement")
    results = doc.get("results")
    if not isinstance(measurement, dict) or not isinstance(results, dict):
        return {}
    if results.get("basis") != "measured":
        return {}
    found: dict[tuple[str, str], str] = {}
    decode = measurement.get("decode")
    if isinstance(decode, dict) and (
        str(decode.get("token_choice", "")).startswith("greedy:")
        or "do_sample False, num_beams 1" in str(decode.get("decode", ""))
        or (decode.get("do_sample") is False and decode.get("num_beams") == 1)
    ):
        found["workload", "decoding"] = DECODING
    if "decode window" in str(measurement.get("method", "")):
        found["measurement", "window"] = WINDOW
    return found


def _idle_window(res: Mapping[str, Any]) -> dict[str, Any] | None:
    """An idle window (of 1 s) that gives the file's idle powers back: per GPU where the
    file names them (a session's held view), else from each format's idle power on its
    GPUs (a format on one GPU names that GPU's; one over several, their sum), else the
    report's idle power on its first GPU."""
    held = res.get("held_gpus") or {}
    by_gpu = {
        _gpu_index(i): float(w) for i, w in (held.get("idle_window_watts_by_gpu") or {}).items()
    }
    formats = (res.get("per_format") or {}).values()
    per = [s for s in formats if s.get("idle_power_watts") is not None]
    for stats in sorted(per, key=lambda s: len(s.get("nvml_indices") or [0])):
        gpus = [int(i) for i in stats.get("nvml_indices") or [0]]
        unknown = [g for g in gpus if g not in by_gpu]
        if unknown:
            rest = float(stats["idle_power_watts"]) - sum(by_gpu.get(g, 0.0) for g in gpus)
            for g in unknown:
                by_gpu[g] = rest / len(unknown)
    if not by_gpu and res.get("idle_power_watts") is not None:
        first = min((int(i) for s in formats for i in s.get("nvml_indices") or [0]), default=0)
        by_gpu[first] = float(res["idle_power_watts"])
    if not by_gpu:
        return None
    pairs = sorted(by_gpu.items())
    return {
        "duration_s": 1.0,
        "nvml_indices": [i for i, _ in pairs],
        "energy_joules_by_gpu": [max(0.0, w) for _, w in pairs],
    }


def _gpu_index(key: str) -> int:
    """An idle_window_watts_by_gpu key as the NVML index it names (1.4's schema takes any
    string). Raises pydantic.ValidationError, naming it, for a key that names none."""
    if key.isascii() and key.isdigit():
        return int(key)
    why = PydanticCustomError("gpu_index", f"key {key!r} is no GPU's NVML index (0, 1, ...)")
    loc = ("results", "held_gpus", "idle_window_watts_by_gpu")
    raise ValidationError.from_exception_data("Report", [{"type": why, "loc": loc, "input": key}])


def _published(doc: dict[str, Any], version: str) -> None:
    """Only what the published format defines is read: a field of this tool's in a
    published report (trials, an interval, a held view) was checked by no rule of its
    format, so it is dropped, never trusted; the published provenance is free-form and
    not carried. Its 1.2 and 1.3 keep their thermal and power_trace blocks."""
    named = _named_by(_reading_schema(version in PUBLISHED_NEW), doc)
    doc.clear()
    doc.update(named)
    doc.pop("provenance", None)
    sut = doc["system_under_test"]
    arch = sut.get("gpu_arch")
    if arch not in ARCH_CLASSES:  # its 'auto' may record an unknown card by its name
        sut["gpu_arch"] = next(
            (
                a
                for n in (arch, sut.get("gpu"))
                if n and (a := arch_from_product_name(str(n))) != "unknown"
            ),
            "unknown",
        )
    res = doc["results"]
    if res.get("vs_fp16_energy_pct") is not None:
        res.setdefault("vs_fp16_energy_pct_exact", res["vs_fp16_energy_pct"])


@functools.lru_cache(maxsize=2)
def _reading_schema(newer: bool) -> dict[str, Any]:
    """The published schema whose named fields are read: 1.0/1.1's facts, or the strict
    1.2/1.3 schema with the protocol's records beside (made once per process)."""
    if not newer:
        return load_schema(PUBLISHED_SCHEMA)
    out: dict[str, Any] = copy.deepcopy(load_schema(PUBLISHED_13_SCHEMA))
    for block, fields in _PROTOCOL_RECORDS.items():
        out["properties"][block]["properties"].update(fields)
    return out


def _named_by(schema: Mapping[str, Any], value: Any) -> Any:
    """value with, in each object whose schema lists its properties, only those."""
    properties = schema.get("properties")
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return value
    return {k: _named_by(properties[k], v) for k, v in value.items() if k in properties}


# -- ecocompute 0.2's format 1.2 -------------------------------------------------------


def _from_12(doc: dict[str, Any]) -> None:
    """1.2's names and types, as 1.3 writes them."""
    measured = doc["results"].get("basis") == "measured"
    sut = doc["system_under_test"]
    if sut.get("gpu") is None or not sut.get("accelerator_count"):
        sut["local_accelerator_count"] = int(sut.get("accelerator_count") or 0)
        sut["gpu"] = sut.get("gpu") or "none: no local GPU (the figure is derived)"
        sut["accelerator_count"] = max(1, sut["local_accelerator_count"])
    work = doc["workload"]
    if work.get("params_b_source") == "counted from the loaded weights" and work.get("params_b"):
        work["params_b_counted"] = work["params_b"]
        work["params_b"], work["params_b_source"] = nominal_params_b(
            str(work.get("model_name", "")), None, work["params_b"]
        )
    doc["measurement"]["sample_rate_hz"] = round(doc["measurement"]["sample_rate_hz"])
    sw = doc.get("software") or {}
    sw["packages"] = {k: v or NOT_INSTALLED for k, v in (sw.get("packages") or {}).items()}
    sw["nvidia_driver"] = sw.get("nvidia_driver") or DRIVER_UNAVAILABLE
    sw["comparability_note"] = COMPARABILITY_NOTE
    sw.setdefault("reference_pins", {})
    sw.setdefault("differs_from_reference_pins", [])
    if not measured:
        sw.pop("matches_reference_pins", None)
    source = str(doc.get("measurement_source", ""))
    if source.startswith(_OLD_SOURCE) and source.endswith(")"):
        doc["measurement_source"] = NO_LOCAL_GPU
        doc["measurement_source_reason"] = source[len(_OLD_SOURCE) : -1]
    res = doc["results"]
    delta = res.get("vs_fp16_energy_pct")
    res["vs_fp16_energy_pct_3dp"] = None if delta is None else round(delta, 3)
    res["vs_fp16_energy_pct"] = None if delta is None else round(delta, 1)
    if isinstance(doc.get("quality"), dict):
        doc["quality"] = _quality_12(doc["quality"])
    prov = doc.get("provenance")
    if isinstance(prov, dict):  # what 1.3 names apart, 1.2 held in its DOI list and tool
        dois = prov.get("dataset_dois") or []
        if len(dois) >= 2:
            prov.setdefault("dataset_doi", dois[0])
            prov.setdefault("rtx4090_deep_dive_doi", dois[1])
        prov.setdefault("paper_ssrn", "not recorded by this tool (ecocompute 0.2's format 1.2)")
        prov.setdefault(
            "code", f"{prov.get('tool', 'ecocompute 0.2')}: an independent implementation"
        )


def _quality_12(old: Mapping[str, Any]) -> dict[str, Any]:
    basis = old.get("basis")
    requested = basis != "not requested"
    reason = old.get("reason")
    value, fp16 = old.get("perplexity"), old.get("fp16_perplexity")
    measured = basis == "measured" and value is not None and fp16 is not None
    return {
        "metric": "perplexity",
        "basis": "measured" if measured else "unavailable",
        "requested": requested,
        "value": value,
        "fp16_value": fp16,
        "delta_vs_fp16_pct": old.get("delta_vs_fp16_pct"),
        "tokens_evaluated": old.get("tokens_scored"),
        # exactly what the old report implies: perplexity is exp(mean NLL)
        "mean_nll": round(math.log(float(value)), 6) if measured and value else None,
        "fp16_mean_nll": round(math.log(float(fp16)), 6) if measured and fp16 else None,
        "windows": old.get("windows"),
        "seq_len": old.get("seq_len"),
        "corpus": old.get("corpus"),
        "note": reason if not requested else None,
        "error": reason if requested and not measured else None,
    }


# -- projection onto the model ------------------------------------------------------------


def project(model: type[BaseModel], data: Any) -> Any:
    """data with only the fields the model (and its nested models) holds; what the file's
    format holds beyond them was checked by its schema and is not carried."""
    if not isinstance(data, dict):
        return data
    fields = _fields_of(model)
    out = {}
    for name, value in data.items():
        if name in fields:
            inner = fields[name]
            out[name] = value if inner is None else inner(value)
        elif model.model_config.get("extra") == "allow":  # Quantization: the quantizer's own
            out[name] = value
    return out


_Projector = Callable[[object], object]


@functools.cache
def _fields_of(model: type[BaseModel]) -> dict[str, _Projector | None]:
    """Each field of the model with how its value is projected (read once per model: the
    annotations' introspection was most of the time an older report took to read)."""
    return {name: _projector(f.annotation) for name, f in model.model_fields.items()}


def _projector(annotation: Any) -> _Projector | None:
    """How a value of an annotation is projected onto the models it holds: a model, an
    Optional's, a list's items or a dict's values; None where it holds no model."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return functools.partial(project, annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin not in (list, dict):  # a union (Optional) or Annotated: the first model in it
        return next((p for arg in args if (p := _projector(arg)) is not None), None)
    inner = _projector(args[-1])
    if inner is None:
        return None
    if origin is list:
        return lambda value: [inner(v) for v in value] if isinstance(value, list) else value
    return lambda value: (
        {k: inner(v) for k, v in value.items()} if isinstance(value, dict) else value
    )
