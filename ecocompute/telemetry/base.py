"""The one interface every piece of GPU telemetry goes through.

The real implementation is NVML (nvml.py); tests use a fake with scripted traces.
Vendor error codes are translated into the two exceptions below in the adapter,
so callers catch meaning, not NVML numbers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

POWER_FIELD_INSTANT = "instant"  # NVML field 186: the card's current power draw
POWER_FIELD_AVERAGE = "average"  # nvmlDeviceGetPowerUsage: a 1 s average on Ampere+


class TelemetryNotSupported(Exception):
    """The device does not offer this reading at all (NVML NOT_SUPPORTED)."""


class TelemetryReadError(Exception):
    """A reading that is normally offered failed this time."""


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as the telemetry layer enumerates it."""

    index: int  # the telemetry layer's own index (NVML's), not CUDA's
    name: str
    uuid: str
    pci_bus_id: str  # normalised "0000:65:00.0", lower case


@dataclass(frozen=True)
class Capabilities:
    """What a device can report; decided once, before any model is loaded."""

    power: bool
    power_field: str | None  # POWER_FIELD_INSTANT or POWER_FIELD_AVERAGE
    energy_counter: bool


class GpuTelemetry(ABC):
    """Read-only access to a host's GPUs. Never changes clocks, limits or modes."""

    @abstractmethod
    def devices(self) -> list[GpuDevice]:
        """Every GPU the driver reports, in the telemetry layer's order."""

    @abstractmethod
    def driver_version(self) -> str | None: ...

    @abstractmethod
    def power_limit_mw(self, index: int) -> int | None:
        """Enforced power limit in milliwatts, or None where not reported."""

    @abstractmethod
    def capabilities(self, index: int) -> Capabilities: ...

    @abstractmethod
    def power_mw(self, index: int) -> int:
        """Current power in milliwatts, from the field capabilities() named.

        Raises TelemetryNotSupported or TelemetryReadError.
        """

    @abstractmethod
    def energy_mj(self, index: int) -> int:
        """Energy counter in millijoules since the driver loaded (Volta and newer).

        Raises TelemetryNotSupported or TelemetryReadError.
        """

    @abstractmethod
    def memory_mib(self, index: int) -> tuple[int, int] | None:
        """(free, total) device memory in MiB, or None where not reported."""

    def memory_bandwidth_gbs(self, index: int) -> float | None:
        """Peak memory bandwidth in GB/s (10^9 bytes per second), or None where not
        reported; the default reports none."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the library; the default does nothing."""
