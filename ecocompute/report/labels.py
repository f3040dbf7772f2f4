"""Short phrases that several outputs share, written once: a card with its arch class,
a list of GPUs, which format sits on which GPUs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The lead of a derived report's note where no figure is claimed (basis unavailable);
# the summary reads what follows it as the reason.
NO_FIGURE_LEAD = "No figure is claimed, and none was measured on this machine"


def card_with_arch(card: str | None, arch: str | None) -> str:
    """ "NVIDIA H200 [hopper]"; a label that already names its class is left alone."""
    text = card or "no GPU detected"
    if arch is None or f"[{arch}" in text:
        return text
    return f"{text} [{arch}]"


def local_gpu(report: Mapping[str, Any]) -> str | None:
    """The GPU of the machine that wrote the report, None when it had none. Where no
    GPU was found, 1.1's gpu field holds a phrase instead: this format's
    local_accelerator_count says so, and a 1.1 report's measurement_source."""
    sut = report["system_under_test"]
    local = sut.get("local_accelerator_count")
    if local is None and "no local GPU" in str(report.get("measurement_source", "")):
        local = 0 if report["results"].get("basis") != "measured" else None
    return None if local == 0 else sut.get("gpu")


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
