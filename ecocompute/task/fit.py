"""Whether the formats of a run fit on the GPU(s) together, decided before they load.

Each format's expected memory relative to FP16 is the format table's footprint_ratio
(embeddings and the head stay 16-bit, so small models quantize less well); the working
room beside the models covers activations and caches.
"""

from __future__ import annotations

from collections.abc import Sequence

from ecocompute.errors import RunError
from ecocompute.formats.table import FormatSpec
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.loading import LoadedModel

_HEADROOM_MIB = 4096


def both_fit(accelerator: Accelerator, fp16: LoadedModel, spec: FormatSpec) -> bool:
    """FP16 and one quantized copy fit together (else: alternating blocks)."""
    memory = accelerator.memory_mib()
    if memory is None:
        return False
    return memory[0] >= fp16.footprint_mib * spec.footprint_ratio + _HEADROOM_MIB


def check_all_fit(
    accelerator: Accelerator, model_name: str, fp16: LoadedModel, specs: Sequence[FormatSpec]
) -> None:
    """A session of several formats keeps them all resident: refuse in one line, with
    what would fit, before loading any of them."""
    memory = accelerator.memory_mib()
    free = None if memory is None else memory[0]
    needs = [fp16.footprint_mib * spec.footprint_ratio for spec in specs]
    if free is not None and sum(needs) + _HEADROOM_MIB <= free:
        return
    fits: list[str] = []
    room = float((free or 0) - _HEADROOM_MIB)
    for spec, need in zip(specs, needs, strict=True):
        if need <= room:
            fits.append(spec.key)
            room -= need
    keys = ", ".join(spec.key for spec in specs)
    have = "unknown" if free is None else f"{free:,} MiB"
    raise RunError(
        f"FP16 and {keys} of {model_name} do not fit on the GPU(s) together "
        f"(about {sum(needs) + _HEADROOM_MIB:,.0f} MiB needed beside FP16, {have} free); "
        f"a session keeps every format resident. What would fit beside FP16: "
        f"{', '.join(fits) or 'none'}; run the others in their own session. Nothing was "
        "written."
    )
