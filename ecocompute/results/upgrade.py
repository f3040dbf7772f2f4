"""Reports of the previous format (ecocompute-energy/1.2, written by ecocompute 0.2) in
the current one (1.3): the same numbers, the 1.1 names and types around them.

A mechanical conversion, recorded as provenance.upgraded_from. Every measured figure,
trial and interval stays as it was; what changes is where and how it is written:
quality's field names, the one-decimal delta (the three-decimal one kept beside it),
the nominal size (the counted one kept beside it), strings where 1.1 wants strings.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from ecocompute.params import nominal_params_b
from ecocompute.report.build import NOTICE, provenance
from ecocompute.report.schema import SCHEMA_VERSION
from ecocompute.report.section_parts import NO_LOCAL_GPU
from ecocompute.report.software import COMPARABILITY_NOTE, DRIVER_UNAVAILABLE, NOT_INSTALLED

PREVIOUS = "ecocompute-energy/1.2"
_OLD_SOURCE = "published-dataset ("
_TEXT_FIELDS = ("note", "delta_note", "error")


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """doc in the current format: a 1.2 report converted, anything else unchanged."""
    if doc.get("schema_version") != PREVIOUS:
        return doc
    new = copy.deepcopy(doc)
    measured = new["results"].get("basis") == "measured"
    new["schema_version"] = SCHEMA_VERSION
    new["notice"] = NOTICE
    new["share_url"] = None
    _system(new["system_under_test"])
    _workload(new["workload"])
    new["measurement"]["sample_rate_hz"] = round(new["measurement"]["sample_rate_hz"])
    _software(new["software"], measured)
    source = new["measurement_source"]
    if source.startswith(_OLD_SOURCE) and source.endswith(")"):
        new["measurement_source"] = NO_LOCAL_GPU
        new["measurement_source_reason"] = source[len(_OLD_SOURCE) : -1]
    _results(new["results"])
    if "quality" in new:
        new["quality"] = _quality(new["quality"])
    command = new.get("provenance", {}).get("command")
    new["provenance"] = {
        **provenance(command),
        "tool": doc.get("provenance", {}).get("tool", "ecocompute 0.2"),
        "upgraded_from": PREVIOUS,
    }
    return new


def without_empty_text(doc: dict[str, Any]) -> dict[str, Any]:
    """doc with the quality block's text fields that hold null left out (ecocompute 0.3.0
    wrote them as null, which the published schema refuses: it types them as strings).
    Nothing else changes; a document without such a field is returned as it is."""
    quality = doc.get("quality")
    if not isinstance(quality, dict) or all(quality.get(k, "") is not None for k in _TEXT_FIELDS):
        return doc
    new = copy.deepcopy(doc)
    new["quality"] = {k: v for k, v in quality.items() if v is not None or k not in _TEXT_FIELDS}
    return new


def _system(sut: dict[str, Any]) -> None:
    if sut.get("gpu") is None or not sut.get("accelerator_count"):
        sut["local_accelerator_count"] = int(sut.get("accelerator_count") or 0)
        sut["gpu"] = sut.get("gpu") or "none: no local GPU (the figure is derived)"
        sut["accelerator_count"] = max(1, sut["local_accelerator_count"])


def _workload(work: dict[str, Any]) -> None:
    counted = work.get("params_b")
    if work.get("params_b_source") != "counted from the loaded weights":
        return
    if counted is None:
        return
    work["params_b_counted"] = counted
    model_name = str(work.get("model_name", ""))
    work["params_b"], work["params_b_source"] = nominal_params_b(model_name, None, counted)


def _software(sw: dict[str, Any], measured: bool) -> None:
    sw["packages"] = {k: v or NOT_INSTALLED for k, v in (sw.get("packages") or {}).items()}
    sw["nvidia_driver"] = sw.get("nvidia_driver") or DRIVER_UNAVAILABLE
    sw["comparability_note"] = COMPARABILITY_NOTE
    if not measured:
        sw.pop("matches_reference_pins", None)


def _results(res: dict[str, Any]) -> None:
    delta = res.get("vs_fp16_energy_pct")
    res["vs_fp16_energy_pct_3dp"] = None if delta is None else round(delta, 3)
    res["vs_fp16_energy_pct"] = None if delta is None else round(delta, 1)


def _quality(old: dict[str, Any]) -> dict[str, Any]:
    basis = old.get("basis")
    requested = basis != "not requested"
    reason = old.get("reason")
    value, fp16 = old.get("perplexity"), old.get("fp16_perplexity")
    measured = basis == "measured" and value is not None and fp16 is not None
    nll: tuple[float | None, float | None] = (None, None)
    if value is not None and fp16 is not None and measured:
        nll = (round(math.log(float(value)), 6), round(math.log(float(fp16)), 6))
    block = {
        "metric": "perplexity",
        "basis": "measured" if measured else "unavailable",
        "requested": requested,
        "value": value,
        "fp16_value": fp16,
        "delta_vs_fp16_pct": old.get("delta_vs_fp16_pct"),
        "tokens_evaluated": old.get("tokens_scored"),
        # exactly what the old report implies: perplexity is exp(mean NLL)
        "mean_nll": nll[0],
        "fp16_mean_nll": nll[1],
        "windows": old.get("windows"),
        "seq_len": old.get("seq_len"),
        "corpus": old.get("corpus"),
        "note": reason if not requested else None,
        "delta_note": None,
        "error": reason if requested and not measured else None,
    }
    # a text field with nothing to say is left out (the published schema: never null)
    return {k: v for k, v in block.items() if v is not None or k not in _TEXT_FIELDS}
