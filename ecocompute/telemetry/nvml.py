"""NVML (nvidia-ml-py) behind the GpuTelemetry interface.

The only module that imports pynvml. NVML is initialised once, in open_nvml(), and
every NVML error is translated here into the project's own exceptions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from ecocompute.errors import TelemetryUnavailable
from ecocompute.telemetry.base import (
    POWER_FIELD_AVERAGE,
    POWER_FIELD_INSTANT,
    BoardInfo,
    Capabilities,
    ClockSample,
    EdgeState,
    GpuDevice,
    GpuTelemetry,
    TelemetryNotSupported,
    TelemetryReadError,
)

log = logging.getLogger(__name__)

_FIELD_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT, milliwatts
# A capability's probe: tried again after an error other than NOT_SUPPORTED (a timeout
# once is no proof a GPU lacks its energy counter), once per GPU, before any window
PROBE_ATTEMPTS = 3
PROBE_PAUSE_S = 0.05
_FIELD_MEMORY_TEMP = 82  # NVML_FI_DEV_MEMORY_TEMP, degrees C
# Cumulative nanoseconds the clocks were held down, per reason (nvml.h: the
# NVML_FI_DEV_CLOCKS_EVENT_REASON_* fields; SW_POWER_CAP is NVML_FI_DEV_PERF_POLICY_POWER).
_THROTTLE_FIELDS = {
    "power_cap": 74,
    "sw_thermal": 269,
    "hw_thermal": 270,
    "hw_power_brake": 271,
}


def normalise_pci_bus_id(bus_id: str) -> str:
    """NVML says "00000000:65:00.0", CUDA "0000:65:00.0": compare on one form."""
    parts = bus_id.strip().lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    if len(parts) != 3:
        return bus_id.strip().lower()
    domain, bus, device_function = parts
    try:
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{device_function}"
    except ValueError:
        return bus_id.strip().lower()


def _decode(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def no_gpu_on_this_machine() -> bool:
    """True when nothing suggests an NVIDIA driver or device is present."""
    return not (os.path.exists("/proc/driver/nvidia") or os.path.exists("/dev/nvidiactl"))


class NvmlTelemetry(GpuTelemetry):
    def __init__(self, pynvml: Any) -> None:
        """Enumerates the devices once (raises NVMLError: open_nvml translates it)."""
        self._nv = pynvml
        self._handles = [
            pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
        ]
        self._devices = [self._describe(i, handle) for i, handle in enumerate(self._handles)]
        self._caps: dict[int, Capabilities] = {}

    # -- errors ----------------------------------------------------------------
    def _translate(self, exc: Exception, what: str) -> Exception:
        nv = self._nv
        if isinstance(exc, nv.NVMLError) and exc.value == nv.NVML_ERROR_NOT_SUPPORTED:
            return TelemetryNotSupported(f"{what}: not supported")
        return TelemetryReadError(f"{what}: {exc}")

    # -- interface ---------------------------------------------------------------
    def _describe(self, index: int, handle: Any) -> GpuDevice:
        nv = self._nv
        return GpuDevice(
            index=index,
            name=_decode(nv.nvmlDeviceGetName(handle)),
            uuid=_decode(nv.nvmlDeviceGetUUID(handle)),
            pci_bus_id=normalise_pci_bus_id(_decode(nv.nvmlDeviceGetPciInfo(handle).busId)),
        )

    def devices(self) -> list[GpuDevice]:
        return list(self._devices)

    def driver_version(self) -> str | None:
        try:
            return _decode(self._nv.nvmlSystemGetDriverVersion())
        except self._nv.NVMLError:
            return None

    def power_limit_mw(self, index: int) -> int | None:
        try:
            return int(self._nv.nvmlDeviceGetEnforcedPowerLimit(self._handles[index]))
        except self._nv.NVMLError:
            return None

    def memory_mib(self, index: int) -> tuple[int, int] | None:
        try:
            info = self._nv.nvmlDeviceGetMemoryInfo(self._handles[index])
        except self._nv.NVMLError:
            return None
        return int(info.free) // 2**20, int(info.total) // 2**20

    def memory_bandwidth_gbs(self, index: int) -> float | None:
        """Bus width (bits) x the maximum memory clock (MHz) x 2 transfers per clock
        (HBM and GDDR are double data rate), in GB/s."""
        try:
            handle = self._handles[index]
            width_bits = int(self._nv.nvmlDeviceGetMemoryBusWidth(handle))
            clock_mhz = int(self._nv.nvmlDeviceGetMaxClockInfo(handle, self._nv.NVML_CLOCK_MEM))
        except (self._nv.NVMLError, AttributeError):
            return None
        if width_bits <= 0 or clock_mhz <= 0:
            return None
        return width_bits / 8 * clock_mhz * 1e6 * 2 / 1e9

    def capabilities(self, index: int) -> Capabilities:
        """What the GPU offers, probed once: each read tried PROBE_ATTEMPTS times where
        it fails otherwise than NOT_SUPPORTED, so that one transient error (a timeout)
        does not decide the session's energy source or power field."""
        if index not in self._caps:
            handle = self._handles[index]
            field = None
            if self._offers(lambda: self._read_instant_mw(index), index, "instant power"):
                field = POWER_FIELD_INSTANT
            elif self._offers(lambda: self._nv.nvmlDeviceGetPowerUsage(handle), index, "power"):
                field = POWER_FIELD_AVERAGE
            counter = self._offers(
                lambda: self._nv.nvmlDeviceGetTotalEnergyConsumption(handle), index, "energy"
            )
            self._caps[index] = Capabilities(field is not None, field, counter)
        return self._caps[index]

    def _offers(self, read: Callable[[], object], index: int, what: str) -> bool:
        nv = self._nv
        for attempt in range(PROBE_ATTEMPTS):
            if attempt:
                time.sleep(PROBE_PAUSE_S)
            try:
                if read() is not None:
                    return True
            except nv.NVMLError as exc:
                log.debug("GPU %d: %s unreadable: %s", index, what, exc)
                if exc.value == nv.NVML_ERROR_NOT_SUPPORTED:
                    return False  # not offered: no second try
        return False

    def board(self, index: int) -> BoardInfo:
        nv, handle = self._nv, self._handles[index]
        return BoardInfo(
            board_part_number=self._text(nv.nvmlDeviceGetBoardPartNumber, handle),
            vbios_version=self._text(nv.nvmlDeviceGetVbiosVersion, handle),
            power_limit_default_mw=self._int(nv.nvmlDeviceGetPowerManagementDefaultLimit, handle),
            max_sm_clock_mhz=self._int(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            max_memory_clock_mhz=self._int(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM),
        )

    def edge_state(self, index: int) -> EdgeState:
        nv, handle = self._nv, self._handles[index]
        ids = [_FIELD_MEMORY_TEMP, *_THROTTLE_FIELDS.values()]
        values = self._fields(index, ids)
        memory_temp = values.get(_FIELD_MEMORY_TEMP)
        throttle = {
            name: int(values[fid]) for name, fid in _THROTTLE_FIELDS.items() if fid in values
        }
        if "power_cap" not in throttle:  # older drivers: the violation counter instead
            try:
                status = nv.nvmlDeviceGetViolationStatus(handle, nv.NVML_PERF_POLICY_POWER)
                throttle["power_cap"] = int(status.violationTime)
            except (nv.NVMLError, AttributeError):
                pass
        return EdgeState(
            temperature_c=self._int(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU),
            memory_temperature_c=None if memory_temp is None else float(memory_temp),
            throttle_ns=throttle,
        )

    def clock_sample(self, index: int) -> ClockSample | None:
        nv, handle = self._nv, self._handles[index]
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        sample = ClockSample(
            sm_clock_mhz=self._int(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
            memory_clock_mhz=self._int(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_MEM),
            clock_events=None if reasons_fn is None else self._int(reasons_fn, handle),
        )
        if sample == ClockSample():
            return None
        return sample

    def _text(self, fn: Any, *args: Any) -> str | None:
        try:
            value = _decode(fn(*args)).strip()
        except (self._nv.NVMLError, AttributeError, UnicodeDecodeError):
            return None
        return value or None

    def _int(self, fn: Any, *args: Any) -> int | None:
        try:
            return int(fn(*args))
        except (self._nv.NVMLError, AttributeError, TypeError, ValueError):
            return None

    def _fields(self, index: int, ids: list[int]) -> dict[int, float]:
        """The field values NVML returns successfully, by field id (the rest left out)."""
        nv = self._nv
        try:
            values = nv.nvmlDeviceGetFieldValues(self._handles[index], ids)
        except (nv.NVMLError, AttributeError):
            return {}
        out = {}
        for fid, value in zip(ids, values, strict=False):
            number = self._field_number(value)
            if number is not None:
                out[fid] = number
        return out

    def _field_number(self, value: Any) -> float | None:
        nv = self._nv
        if value.nvmlReturn != nv.NVML_SUCCESS:
            return None
        kinds = {
            nv.NVML_VALUE_TYPE_DOUBLE: "dVal",
            nv.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
            nv.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
            nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
            nv.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
            nv.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
        }
        attr = kinds.get(value.valueType)
        return None if attr is None else getattr(value.value, attr)

    def _read_instant_mw(self, index: int) -> int | None:
        nv = self._nv
        try:
            (value,) = nv.nvmlDeviceGetFieldValues(self._handles[index], [_FIELD_POWER_INSTANT])
        except (nv.NVMLError, AttributeError):
            return None
        if value.nvmlReturn != nv.NVML_SUCCESS:
            return None
        kinds = {
            nv.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
            nv.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
            nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
            nv.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
            nv.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
        }
        attr = kinds.get(value.valueType)
        return None if attr is None else int(getattr(value.value, attr))

    def power_mw(self, index: int) -> int:
        field = self.capabilities(index).power_field
        if field is None:
            raise TelemetryNotSupported(f"GPU {index} power: not supported")
        if field == POWER_FIELD_INSTANT:
            reading = self._read_instant_mw(index)
            if reading is None:
                raise TelemetryReadError(f"GPU {index} instant power: read failed")
            return reading
        try:
            return int(self._nv.nvmlDeviceGetPowerUsage(self._handles[index]))
        except self._nv.NVMLError as exc:
            raise self._translate(exc, f"GPU {index} power") from None

    def energy_mj(self, index: int) -> int:
        try:
            return int(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handles[index]))
        except self._nv.NVMLError as exc:
            raise self._translate(exc, f"GPU {index} energy counter") from None

    def close(self) -> None:
        with contextlib.suppress(self._nv.NVMLError):
            self._nv.nvmlShutdown()


def open_nvml() -> NvmlTelemetry:
    """Initialise NVML once. Raises TelemetryUnavailable with a reason code.

    Codes: "no_gpu" (no driver or device on this machine, or NVML lists none) and
    "nvml_unavailable" (a driver seems present but NVML cannot be used).
    """
    try:
        import pynvml
    except ImportError as exc:
        raise TelemetryUnavailable(
            "nvml_unavailable", f"NVML unavailable: nvidia-ml-py not importable: {exc}"
        ) from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        if no_gpu_on_this_machine():
            raise TelemetryUnavailable(
                "no_gpu",
                f"no GPU found: no NVIDIA driver or device on this machine (NVML: {exc})",
            ) from None
        raise TelemetryUnavailable("nvml_unavailable", f"NVML unavailable: {exc}") from None
    try:
        telemetry = NvmlTelemetry(pynvml)
    except pynvml.NVMLError as exc:
        pynvml.nvmlShutdown()
        raise TelemetryUnavailable("nvml_unavailable", f"NVML unavailable: {exc}") from None
    if not telemetry.devices():
        telemetry.close()
        raise TelemetryUnavailable("no_gpu", "no GPU found: NVML lists 0 devices")
    return telemetry
