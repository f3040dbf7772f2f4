"""What the sections of a measured and of a published-path report share: the source
labels, the order notes, a GPU as a report lists it, LLM.int8()'s threshold."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.formats.table import BITSANDBYTES
from ecocompute.params import RunParams
from ecocompute.task.hardware import GpuRecord

MEASURED_SOURCE = "direct-nvml"

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

# measurement_source of every derived report, exactly the published container's phrase
# (its consumers match it); why the run took the published path is beside it, in
# measurement_source_reason.
NO_LOCAL_GPU = "ecocompute-dataset (no local GPU)"
EAGER_NOTE = (
    "the published figures are eager generate() measurements (the published protocol); "
    "no published figure covers the graphs or compiled regimes"
)


def gpu_dict(gpu: GpuRecord) -> dict[str, Any]:
    """A GPU as the report lists it; a published-path record carries NVML's four fields."""
    record = asdict(gpu)
    record["power_limit_watts"] = record.pop("power_limit_w")
    record["power_limit_default_watts"] = record.pop("power_limit_default_w")
    if gpu.cuda_index is None:
        return {k: record[k] for k in ("nvml_index", "name", "uuid", "pci_bus_id")}
    return record


def int8_threshold(params: RunParams) -> dict[str, Any]:
    """LLM.int8()'s threshold, for a bitsandbytes INT8 run."""
    if params.precision is Precision.INT8 and params.spec().library == BITSANDBYTES:
        return {"llm_int8_threshold": params.llm_int8_threshold}
    return {}
