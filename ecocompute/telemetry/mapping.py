"""Which NVML device is each GPU this process's CUDA uses.

CUDA numbers the devices it can see (after CUDA_VISIBLE_DEVICES, and by default in
"fastest first" order); NVML numbers every device on the host in PCI order. With
CUDA_VISIBLE_DEVICES=1, cuda:0 is NVML's GPU 1, and that is the one to measure. The
match is by UUID, else by PCI bus id; a device that matches neither is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecocompute.telemetry.base import GpuDevice
from ecocompute.telemetry.nvml import normalise_pci_bus_id


@dataclass(frozen=True)
class CudaDevice:
    """A GPU as this process's CUDA runtime sees it."""

    index: int  # cuda:<index>
    name: str
    uuid: str | None
    pci_bus_id: str | None


@dataclass(frozen=True)
class DeviceMatch:
    cuda_index: int
    nvml: GpuDevice
    matched_by: str  # "uuid" or "pci_bus_id"


class DeviceMappingError(Exception):
    """A CUDA device has no NVML counterpart."""


def normalise_uuid(uuid: str) -> str:
    """NVML says "GPU-5f8e...", torch "5f8e...": compare without the prefix."""
    text = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def match_devices(cuda: list[CudaDevice], nvml: list[GpuDevice]) -> list[DeviceMatch]:
    by_uuid = {normalise_uuid(d.uuid): d for d in nvml}
    by_pci = {normalise_pci_bus_id(d.pci_bus_id): d for d in nvml}
    matches = []
    for dev in cuda:
        if (dev.uuid or "").strip().lower().startswith("mig-") or " MIG " in f" {dev.name} ":
            # a MIG instance shares its GPU's bus id, but NVML's counter and power are the
            # whole GPU's, every instance's work included: not this instance's energy
            raise DeviceMappingError(
                f"cuda:{dev.index} ({dev.name}, uuid {dev.uuid}) is a MIG instance: NVML's "
                "energy counter and power are its whole GPU's, other instances' work "
                "included, so its energy cannot be measured; use a whole GPU"
            )
        if dev.uuid and normalise_uuid(dev.uuid) in by_uuid:
            matches.append(DeviceMatch(dev.index, by_uuid[normalise_uuid(dev.uuid)], "uuid"))
        elif dev.pci_bus_id and normalise_pci_bus_id(dev.pci_bus_id) in by_pci:
            nv = by_pci[normalise_pci_bus_id(dev.pci_bus_id)]
            matches.append(DeviceMatch(dev.index, nv, "pci_bus_id"))
        else:
            raise DeviceMappingError(
                f"cuda:{dev.index} ({dev.name}, uuid {dev.uuid}, bus {dev.pci_bus_id}) matches "
                "no NVML device; cannot tell which GPU to measure"
            )
    return matches
