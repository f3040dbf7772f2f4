"""The one interface every piece of GPU telemetry goes through.

The real implementation is NVML (nvml.py); tests use a fake with scripted traces.
Vendor error codes are translated into the two exceptions below in the adapter,
so callers catch meaning, not NVML numbers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class BoardInfo:
    """What tells one unit of a card model from another, read once per session. Any
    field is None where the device does not report it."""

    board_part_number: str | None = None
    vbios_version: str | None = None
    power_limit_default_mw: int | None = None
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None


# Clock-event ("throttle") reasons by the names a report uses, with NVML's bit for each
# (nvmlClocksEventReason*, nvml.h). Those in THROTTLE_REASONS slow the clocks against the
# workload's will; the others are ordinary (idle, clocks set by the applications API).
CLOCK_EVENT_BITS: Mapping[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks": 0x2,
    "power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "hw_power_brake": 0x80,
    "display_clocks": 0x100,
}
THROTTLE_REASONS = ("power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")


def clock_event_names(mask: int) -> tuple[str, ...]:
    """The reason names set in an NVML clock-event bitmask, in CLOCK_EVENT_BITS order."""
    return tuple(name for name, bit in CLOCK_EVENT_BITS.items() if mask & bit)


@dataclass(frozen=True)
class EdgeState:
    """A GPU's state just outside a window's edge: temperatures, and NVML's cumulative
    clock-event counters (nanoseconds the clocks were held down, per reason, where the
    driver counts them; a window's share is the difference of its two edges)."""

    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    throttle_ns: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ClockSample:
    """One read of a GPU's clocks and its current clock-event reasons (a bitmask)."""

    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    clock_events: int | None = None


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

    def board(self, index: int) -> BoardInfo:
        """Board part number, VBIOS and the like; the default reports none."""
        return BoardInfo()

    def edge_state(self, index: int) -> EdgeState:
        """Temperatures and cumulative clock-event counters, read at a window's edges
        (outside it); the default reports none. Never raises: a reading that fails is
        left out."""
        return EdgeState()

    def clock_sample(self, index: int) -> ClockSample | None:
        """Clocks and current clock-event reasons, read by the sampler beside power;
        None where the device reports none (the default). Never raises."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the library; the default does nothing."""
