"""What this machine's CUDA and NVML say about its GPUs (for the validation record).

Prints torch's view (name, uuid, PCI ids per cuda index) and NVML's (index, name, uuid,
bus id, power fields, energy counter), and the mapping ecocompute derives.

    python benchmarks/gpu_probe.py
"""

from __future__ import annotations

import os


def main() -> None:
    import torch

    from ecocompute.llm.cuda import CudaAccelerator
    from ecocompute.telemetry.mapping import match_devices
    from ecocompute.telemetry.nvml import open_nvml

    print(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
    print(
        f"torch {torch.__version__} cuda {torch.version.cuda}; devices {torch.cuda.device_count()}"
    )
    accel = CudaAccelerator()
    for dev in accel.devices():
        print(f"  cuda:{dev.index} {dev.name} uuid={dev.uuid} pci={dev.pci_bus_id}")
    telemetry = open_nvml()
    print(f"NVML driver {telemetry.driver_version()}")
    for dev in telemetry.devices():
        caps = telemetry.capabilities(dev.index)
        print(
            f"  nvml {dev.index} {dev.name} {dev.uuid} bus={dev.pci_bus_id} caps={caps} "
            f"power={telemetry.power_mw(dev.index) / 1000:.1f} W "
            f"energy={telemetry.energy_mj(dev.index)} mJ "
            f"limit={telemetry.power_limit_mw(dev.index)} mW"
        )
    for m in match_devices(accel.devices(), telemetry.devices()):
        print(f"  cuda:{m.cuda_index} -> nvml {m.nvml.index} ({m.matched_by})")
    telemetry.close()


if __name__ == "__main__":
    main()
