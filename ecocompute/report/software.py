"""Which software ran, and how it differs from the pins of the container image.

Versions come from installed package metadata, never from importing the packages,
so the published path stays free of torch.
"""

from __future__ import annotations

import functools
import platform
import re
from collections.abc import Mapping
from typing import Any

from ecocompute import __version__
from ecocompute.core import packages
from ecocompute.report.schema import packaged_text

# The packages whose versions change what is measured, as their distributions are named.
REPORTED_PACKAGES = (
    "ecocompute",
    "torch",
    "transformers",
    "accelerate",
    "bitsandbytes",
    "torchao",
    "nvidia-ml-py",
    "safetensors",
    "tokenizers",
    "numpy",
    "jsonschema",
    "PyYAML",
)

LOCK_NAME = "requirements.lock.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


NOT_INSTALLED = "not installed"  # 1.1 writes every package version as a string
DRIVER_UNAVAILABLE = "unavailable"
COMPARABILITY_NOTE = (
    "Compare energy per token only between reports of the same protocol (tokens per run, "
    "batch, decode regime), the same software stack and the same card; the delta vs FP16 "
    "is comparable more widely, and perplexity deltas only where the corpus sha256 agrees."
)


def package_versions() -> dict[str, str]:
    """Installed versions; ecocompute's is the code's own (__version__, as provenance.tool
    says it), not the metadata of an install that may be older than the code that ran."""
    found = {name: packages.installed_version(name) or NOT_INSTALLED for name in REPORTED_PACKAGES}
    return {**found, "ecocompute": __version__}


def release(version: object) -> str:
    """A version's release, its local build tag aside: torch 2.11.0+cu130 is 2.11.0."""
    return str(version).split("+", 1)[0]


def version_of(installed: Mapping[str, Any], name: str) -> str | None:
    """A package's version in a report's packages block; None when it was not installed
    (older reports write null, 1.1 and newer 'not installed')."""
    version = installed.get(name)
    return None if not version or version == NOT_INSTALLED else str(version)


@functools.lru_cache(maxsize=1)
def image_pins() -> dict[str, str]:
    """The container image lock's pins for REPORTED_PACKAGES, {canonical name: version}
    (empty if none is shipped); the lock's hashes and options are ignored."""
    wanted = {canonical(n) for n in REPORTED_PACKAGES}
    pins = {}
    for line in (packaged_text(LOCK_NAME) or "").splitlines():
        match = _PIN.match(line.strip())
        if match and canonical(match.group(1)) in wanted:
            pins[canonical(match.group(1))] = match.group(2)
    return dict(sorted(pins.items()))


def pin_differences(installed: dict[str, str], pins: dict[str, str]) -> list[str]:
    """One line per reported package that differs from its pin."""
    by_name = {canonical(k): version_of(installed, k) for k in installed}
    out = []
    for name, pinned in sorted(pins.items()):
        have = by_name.get(name)
        if have is None:
            out.append(f"{name}: not installed (reference {pinned})")
        elif release(have) != release(pinned):
            out.append(f"{name}: {have} (reference {pinned})")
    return out


def software_block(
    *, torch_cuda: str | None, nvidia_driver: str | None, measured: bool
) -> dict[str, Any]:
    """The report's software section. matches_reference_pins is true only of a measured
    run on the pins: a published-path report ran no measurement stack (as in 1.1's dry
    runs), so it claims no match, and says false beside the differences it lists (the
    published Protocol v1.1, 4.5.3: a difference listed, matches_reference_pins false)."""
    installed = package_versions()
    pins = image_pins()
    differs = pin_differences(installed, pins) if pins else ["no reference lock shipped"]
    matches = bool(pins) and not differs
    return {
        "python": platform.python_version(),
        "packages": installed,
        "torch_cuda": torch_cuda,
        "nvidia_driver": nvidia_driver or DRIVER_UNAVAILABLE,
        "comparability_note": COMPARABILITY_NOTE,
        "reference_pins": pins,
        **({"matches_reference_pins": matches} if measured or differs else {}),
        "differs_from_reference_pins": differs,
    }


# The packages that decide what is measured, with short names for fingerprints.
STACK_PACKAGES = (
    ("torch", "torch"),
    ("transformers", "tf"),
    ("bitsandbytes", "bnb"),
    ("torchao", "ao"),
)


def stack_in_words(packages: Mapping[str, str], nvidia_driver: str | None) -> list[str]:
    """A report's measurement stack as "name version" parts (installed packages only),
    then the driver: ["torch 2.11.0", "transformers 5.17.0", ..., "driver 580.159.04"]."""
    parts = [
        f"{name} {version_of(packages, name)}"
        for name, _ in STACK_PACKAGES
        if version_of(packages, name)
    ]
    if nvidia_driver and nvidia_driver != DRIVER_UNAVAILABLE:
        parts.append(f"driver {nvidia_driver}")
    return parts
