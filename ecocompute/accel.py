"""The compute side of a measurement: which devices this process's CUDA uses, how to
synchronize them, where models go. The real one is CUDA through torch; tests use a
CPU stand-in with the same methods."""

from __future__ import annotations

import os
from typing import Any, Protocol

from ecocompute.errors import AcceleratorUnavailable
from ecocompute.telemetry.mapping import CudaDevice


class Accelerator(Protocol):
    kind: str  # "cuda" for real measurements

    def devices(self) -> list[CudaDevice]: ...

    def synchronize(self) -> None: ...

    def device_map(self) -> Any:
        """What from_pretrained's device_map gets."""

    def input_device(self) -> Any:
        """Where prompt tensors go."""

    def memory_mib(self) -> tuple[int, int] | None:
        """(free, total) MiB summed over the visible devices."""

    def occupied(self, model: Any) -> tuple[int, ...]:
        """Indices (this accelerator's) of the devices holding the model's weights."""

    def release(self) -> None:
        """Return freed memory to the device after a model is dropped."""

    def versions(self) -> dict[str, str | None]: ...


def _pci_bus_id(props: Any) -> str | None:
    try:
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    except (AttributeError, TypeError, ValueError):
        return None


class CudaAccelerator:
    kind = "cuda"

    def __init__(self) -> None:
        import torch

        self._torch = torch

    def devices(self) -> list[CudaDevice]:
        torch = self._torch
        out = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            uuid = getattr(props, "uuid", None)
            out.append(CudaDevice(i, props.name, str(uuid) if uuid else None, _pci_bus_id(props)))
        return out

    def synchronize(self) -> None:
        torch = self._torch
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)

    def device_map(self) -> Any:
        # One GPU: everything on it. Several: fill them in order, so a model that fits on
        # one GPU stays there (accelerate's "auto" would spread it across all of them).
        return {"": 0} if self._torch.cuda.device_count() == 1 else "sequential"

    def input_device(self) -> Any:
        return self._torch.device("cuda", 0)

    def memory_mib(self) -> tuple[int, int] | None:
        torch = self._torch
        free = total = 0
        for i in range(torch.cuda.device_count()):
            f, t = torch.cuda.mem_get_info(i)
            free += f
            total += t
        return free // 2**20, total // 2**20

    def occupied(self, model: Any) -> tuple[int, ...]:
        found = {
            t.device.index
            for t in (*model.parameters(), *model.buffers())
            if t.device.type == "cuda"
        }
        return tuple(sorted(i for i in found if i is not None))

    def release(self) -> None:
        import gc

        gc.collect()
        self._torch.cuda.empty_cache()

    def versions(self) -> dict[str, str | None]:
        return {"torch": self._torch.__version__, "cuda": self._torch.version.cuda}


def cuda_visible_devices() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def open_cuda(nvml_device_count: int) -> CudaAccelerator:
    """The measurement stack on this machine's GPUs. Raises AcceleratorUnavailable
    ("stack_missing" or "no_gpu") when the reference path has to answer instead."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise AcceleratorUnavailable(
            "stack_missing",
            f"measurement stack not installed ({exc.name} missing; install ecocompute[gpu])",
        ) from None
    if not torch.cuda.is_available():
        raise AcceleratorUnavailable(
            "no_gpu",
            f"no GPU found by CUDA (CUDA_VISIBLE_DEVICES={cuda_visible_devices()!r}; NVML "
            f"lists {nvml_device_count})",
        )
    return CudaAccelerator()
