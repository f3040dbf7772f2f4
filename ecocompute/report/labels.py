"""Short phrases that several outputs share, written once: a card with its arch class,
a list of GPUs, which format sits on which GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ecocompute.formats.table import format_key

if TYPE_CHECKING:
    from ecocompute.report.model import Report

# The lead of a derived report's note where no figure is claimed (basis unavailable);
# the summary reads what follows it as the reason.
NO_FIGURE_LEAD = "No figure is claimed, and none was measured on this machine"
UUID_TAIL = 12  # characters of the UUID's last group: enough to tell units apart


def card_with_arch(card: str | None, arch: str | None) -> str:
    """ "NVIDIA H200 [hopper]"; a label that already names its class is left alone."""
    text = card or "no GPU detected"
    if arch is None or f"[{arch}" in text:
        return text
    return f"{text} [{arch}]"


def format_label(report: Report) -> str:
    """The format as tables name it (formats/table.py format_key): INT8-torchao, or
    LLM.int8() at another threshold, never a bare INT8 for either."""
    work = report.workload
    return format_key(work.precision, work.library, work.llm_int8_threshold)


def gpu_list(indices: Sequence[int]) -> str:
    """ "GPU 0" or "GPUs 0, 1" """
    return f"GPU{'s' if len(indices) > 1 else ''} {', '.join(str(i) for i in indices)}"


def formats_on_gpus(format_gpus: Mapping[Any, Sequence[int]]) -> str:
    """ "FP16 on GPUs 0, 1; NF4 on GPU 0" """
    return "; ".join(f"{fmt} on {gpu_list(gpus)}" for fmt, gpus in format_gpus.items())


def format_gpus_note(format_gpus: Mapping[Any, Sequence[int]], held: bool = False) -> str:
    """Said wherever the formats occupy different GPUs: the comparison then includes
    the whole package power of every GPU a format needs, idle or not; held: the report
    also gives the view of every GPU the session held."""
    note = (
        f"The formats occupy different GPUs ({formats_on_gpus(format_gpus)}): each "
        "format's energy sums every GPU its model occupies, so a format that needs more "
        "GPUs pays for all of them."
    )
    if held:
        note += (
            " results.held_gpus gives the same comparison over every GPU the session held, "
            "each format charged the idle draw of the GPUs it left idle."
        )
    return note


def uuid_tail(uuid: str | None) -> str | None:
    """ "GPU-1af0ae31-...-bebcef2e2e82" -> "bebcef2e2e82" """
    return None if not uuid else uuid.rsplit("-", 1)[-1][-UUID_TAIL:]


def unit_tail(unit: str) -> str:
    """A unit's name for people: its GPUs' UUID tails, joined by "+" as the unit is."""
    return "+".join(uuid_tail(u) or u for u in unit.split("+"))


def local_gpu(report: Report) -> str | None:
    """The GPU of the machine that wrote the report, None when it had none (a derived
    report's gpu field then holds a phrase: its local_accelerator_count says so)."""
    sut = report.system_under_test
    local = sut.local_accelerator_count
    if local is None and "no local GPU" in (report.measurement_source or ""):
        local = 0 if not report.measured else None
    return None if local == 0 else sut.gpu
