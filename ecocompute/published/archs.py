"""GPU architecture class from an NVML product name (published detection rules).

The rules follow the published EcoCompute list (docs/published-figures.md):
blackwell: B100, B200, GB-series, RTX 50x0 · hopper: H100, H200, H800, GH200 ·
ada: L4, L40, L40S, RTX 40x0, RTX 2000/4000/5000/6000 Ada · ampere: A100, A800, A10,
A10G, A16, A2, A30, A40, RTX A-series, RTX 30x0 · turing: T4, T400, T600, T1000,
Quadro/Titan RTX, RTX 20x0 · volta: V100, Titan V. Anything else is "unknown".
"""

from __future__ import annotations

import re

ARCH_CLASSES = ("turing", "ampere", "ada", "hopper", "blackwell", "volta")
UNKNOWN = "unknown"

# Order matters: names that carry their generation in words ("RTX 5000 Ada",
# "RTX PRO 6000 Blackwell") are decided before the number patterns they contain.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (arch, re.compile(pattern))
    for arch, pattern in (
        ("blackwell", r"\bBLACKWELL\b"),
        ("ada", r"\bADA\b"),
        ("blackwell", r"\bG?B(100|200|300)\b|\bGB\d{2,3}\b|RTX\s*50[5-9]0"),
        ("hopper", r"\bG?H(100|200|800)\b"),
        ("ada", r"\bL4\b|\bL40S?\b|RTX\s*40[5-9]0"),
        ("ampere", r"RTX\s*A\d{4}\b|\bA(100|800|10G?|16|2|30|40)\b|RTX\s*30[5-9]0"),
        ("turing", r"\bT(4|400|600|1000)\b|QUADRO\s+RTX|TITAN\s+RTX|RTX\s*20[5-9]0"),
        ("volta", r"\bV100|TITAN\s+V\b"),
    )
)


def arch_from_product_name(name: str) -> str:
    """Arch class for an NVML product name such as "NVIDIA H200"; "unknown" if none fits."""
    upper = name.upper()
    for arch, pattern in _RULES:
        if pattern.search(upper):
            return arch
    return UNKNOWN


def normalise_arch_choice(choice: str) -> tuple[str, str | None]:
    """Interpret a --gpu_arch value.

    Returns (arch_class_or_"auto", product_name_or_None). An arch class is taken as
    given; a product name is mapped through the detection rules. Raises ValueError
    for a string that is neither.
    """
    lowered = choice.strip().lower()
    if lowered == "auto" or lowered in ARCH_CLASSES:
        return lowered, None
    arch = arch_from_product_name(choice)
    if arch == UNKNOWN:
        raise ValueError(choice)
    return arch, choice.strip()
