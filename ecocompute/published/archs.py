"""GPU architecture class from an NVML product name (published detection rules).

The rules follow the published EcoCompute list (docs/published-figures.md):
blackwell: B100, B200, GB-series, RTX 50x0 · hopper: H100, H200, H800, GH200 ·
ada: L4, L40, L40S, RTX 40x0, RTX 2000/4000/5000/6000 Ada · ampere: A100, A800, A10,
A10G, A16, A2, A30, A40, RTX A-series, RTX 30x0 · turing: T4, T400, T600, T1000,
Quadro/Titan RTX, RTX 20x0 · volta: V100, Titan V. Anything else is "unknown".

--gpu_arch also takes the published container's short names (t4, 4090, 4090d, 5090,
a100, a800) and a few more of the same kind, each standing for one product name.
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


# Short names --gpu_arch accepts, case-insensitive, each standing for one product name
# whose class the rules above decide. The published container accepts t4, 4090, 4090d,
# 5090, a100 and a800; the rest are added only where the name is one product family of
# one generation. Left out on purpose: 4000, 5000, 6000 and titan (Turing Quadro RTX,
# Ada and Blackwell workstation cards share those numbers).
SHORT_NAMES: dict[str, str] = {
    "t4": "Tesla T4",
    "2060": "RTX 2060",
    "2070": "RTX 2070",
    "2080": "RTX 2080",
    "v100": "Tesla V100",
    "a2": "NVIDIA A2",
    "a10": "NVIDIA A10",
    "a10g": "NVIDIA A10G",
    "a16": "NVIDIA A16",
    "a30": "NVIDIA A30",
    "a40": "NVIDIA A40",
    "a100": "NVIDIA A100",
    "a800": "NVIDIA A800",
    "a6000": "RTX A6000",
    "3060": "RTX 3060",
    "3070": "RTX 3070",
    "3080": "RTX 3080",
    "3090": "RTX 3090",
    "l4": "NVIDIA L4",
    "l40": "NVIDIA L40",
    "l40s": "NVIDIA L40S",
    "4060": "RTX 4060",
    "4070": "RTX 4070",
    "4080": "RTX 4080",
    "4090": "RTX 4090",
    "4090d": "RTX 4090 D",
    "h100": "NVIDIA H100",
    "h200": "NVIDIA H200",
    "h800": "NVIDIA H800",
    "gh200": "NVIDIA GH200",
    "5070": "RTX 5070",
    "5080": "RTX 5080",
    "5090": "RTX 5090",
    "b100": "NVIDIA B100",
    "b200": "NVIDIA B200",
}


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
    given; a product name, or a short name (SHORT_NAMES: "4090" is the RTX 4090), is
    mapped through the detection rules, and the name returned is the one given, so the
    report says what the user typed. Raises ValueError for a string that is none of these.
    """
    lowered = choice.strip().lower()
    if lowered == "auto" or lowered in ARCH_CLASSES:
        return lowered, None
    arch = arch_from_product_name(SHORT_NAMES.get(lowered, choice))
    if arch == UNKNOWN:
        raise ValueError(choice)
    return arch, choice.strip()
