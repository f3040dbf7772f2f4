"""Which software ran, and how it differs from the pins of the container image.

Versions come from installed package metadata, never from importing the packages,
so the published path stays free of torch.
"""

from __future__ import annotations

import functools
import platform
import re
from typing import Any

from ecocompute import packages
from ecocompute.report.packaged import packaged_text

# The packages whose versions change what is measured, as their distributions are named.
REPORTED_PACKAGES = (
    "ecocompute",
    "torch",
    "transformers",
    "accelerate",
    "bitsandbytes",
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


def package_versions() -> dict[str, str | None]:
    return {name: packages.installed_version(name) for name in REPORTED_PACKAGES}


def parse_lock(text: str) -> dict[str, str]:
    """{canonical name: version} from a pip-compile/uv lock; hashes and options ignored."""
    pins = {}
    for line in text.splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[canonical(match.group(1))] = match.group(2)
    return pins


@functools.lru_cache(maxsize=1)
def image_pins() -> dict[str, str]:
    """The container image lock's pins for REPORTED_PACKAGES (empty if none is shipped)."""
    text = packaged_text(LOCK_NAME)
    if text is None:
        return {}
    pins = parse_lock(text)
    wanted = {canonical(n) for n in REPORTED_PACKAGES}
    return {name: version for name, version in sorted(pins.items()) if name in wanted}


def _public(version: str) -> str:
    """Drop a local build tag: torch "2.11.0+cu130" is release 2.11.0."""
    return version.split("+", 1)[0]


def pin_differences(installed: dict[str, str | None], pins: dict[str, str]) -> list[str]:
    """One line per reported package that differs from its pin."""
    by_name = {canonical(k): v for k, v in installed.items()}
    out = []
    for name, pinned in sorted(pins.items()):
        have = by_name.get(name)
        if have is None:
            out.append(f"{name}: not installed (reference {pinned})")
        elif _public(have) != _public(pinned):
            out.append(f"{name}: {have} (reference {pinned})")
    return out


def software_block(*, torch_cuda: str | None, nvidia_driver: str | None) -> dict[str, Any]:
    """The report's software section."""
    packages = package_versions()
    pins = image_pins()
    differs = pin_differences(packages, pins) if pins else ["no reference lock shipped"]
    return {
        "python": platform.python_version(),
        "packages": packages,
        "torch_cuda": torch_cuda,
        "nvidia_driver": nvidia_driver,
        "reference_pins": pins,
        "matches_reference_pins": bool(pins) and not differs,
        "differs_from_reference_pins": differs,
    }


# The packages that decide what is measured, with short names for fingerprints.
STACK_PACKAGES = (("torch", "torch"), ("transformers", "tf"), ("bitsandbytes", "bnb"))


def stack_in_words(software: dict[str, Any]) -> list[str]:
    """A report's measurement stack as "name version" parts (installed packages only),
    then the driver: ["torch 2.11.0", "transformers 5.17.0", ..., "driver 580.159.04"]."""
    packages = software.get("packages") or {}
    parts = [f"{name} {packages[name]}" for name, _ in STACK_PACKAGES if packages.get(name)]
    if software.get("nvidia_driver"):
        parts.append(f"driver {software['nvidia_driver']}")
    return parts
