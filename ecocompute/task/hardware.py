"""What the environment probe learns about this machine's GPUs, as typed records.

NVML lists every GPU of the host; this process's CUDA uses some of them (after
CUDA_VISIBLE_DEVICES). A report describes the GPUs it measured, or, on the published
path, what the probe had found before it stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ecocompute.core.units import mw_to_w
from ecocompute.errors import CannotMeasure
from ecocompute.llm.cuda import cuda_visible_devices
from ecocompute.telemetry.base import GpuTelemetry
from ecocompute.telemetry.mapping import DeviceMatch


@dataclass(frozen=True)
class GpuRecord:
    """One GPU as a report lists it. cuda_index and what follows it are known only for
    GPUs this process's CUDA uses."""

    nvml_index: int
    name: str
    uuid: str
    pci_bus_id: str
    cuda_index: int | None = None
    power_limit_w: float | None = None
    memory_total_mib: int | None = None
    matched_by: str | None = None
    # what tells units of one card model apart (None where NVML does not say)
    board_part_number: str | None = None
    vbios_version: str | None = None
    power_limit_default_w: float | None = None
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None


@dataclass(frozen=True)
class Hardware:
    """The GPUs the probe found (all of NVML's, or the ones this process's CUDA uses)."""

    gpus: tuple[GpuRecord, ...] = ()
    nvidia_driver: str | None = None
    cuda_visible_devices: str | None = None

    @property
    def gpu_name(self) -> str | None:
        """The first GPU's product name (what arch detection reads)."""
        return self.gpus[0].name if self.gpus else None

    @property
    def names(self) -> str | None:
        """Every distinct product name, joined: "NVIDIA H200" or "A + B"."""
        return " + ".join(sorted({g.name for g in self.gpus})) if self.gpus else None


def nvml_hardware(telemetry: GpuTelemetry) -> Hardware:
    """Every GPU NVML lists (before CUDA has been asked which ones this process uses)."""
    return Hardware(
        gpus=tuple(GpuRecord(d.index, d.name, d.uuid, d.pci_bus_id) for d in telemetry.devices()),
        nvidia_driver=telemetry.driver_version(),
    )


def cuda_hardware(telemetry: GpuTelemetry, matches: Sequence[DeviceMatch]) -> Hardware:
    """The GPUs this process's CUDA uses, matched to NVML, with their limits."""
    return Hardware(
        gpus=tuple(gpu_record(telemetry, m) for m in matches),
        nvidia_driver=telemetry.driver_version(),
        cuda_visible_devices=cuda_visible_devices(),
    )


def gpu_record(telemetry: GpuTelemetry, m: DeviceMatch) -> GpuRecord:
    limit_mw = telemetry.power_limit_mw(m.nvml.index)
    memory = telemetry.memory_mib(m.nvml.index)
    board = telemetry.board(m.nvml.index)
    default_mw = board.power_limit_default_mw
    return GpuRecord(
        nvml_index=m.nvml.index,
        name=m.nvml.name,
        uuid=m.nvml.uuid,
        pci_bus_id=m.nvml.pci_bus_id,
        cuda_index=m.cuda_index,
        power_limit_w=None if limit_mw is None else mw_to_w(limit_mw),
        memory_total_mib=None if memory is None else memory[1],
        matched_by=m.matched_by,
        board_part_number=board.board_part_number,
        vbios_version=board.vbios_version,
        power_limit_default_w=None if default_mw is None else mw_to_w(default_mw),
        max_sm_clock_mhz=board.max_sm_clock_mhz,
        max_memory_clock_mhz=board.max_memory_clock_mhz,
    )


@contextlib.contextmanager
def known(hardware: Hardware) -> Iterator[None]:
    """A CannotMeasure leaving the block carries what the probe knew by then (unless an
    inner block already attached something more precise)."""
    try:
        yield
    except CannotMeasure as exc:
        if exc.hardware is None:
            exc.hardware = hardware
        raise
