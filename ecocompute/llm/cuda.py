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
    max_memory_gib: float | None  # cap per GPU for one model's weights; None: free memory

    def devices(self) -> list[CudaDevice]: ...

    def synchronize(self) -> None: ...

    def placement(self) -> dict[str, object]:
        """from_pretrained's placement arguments (device_map, and max_memory where set)."""

    def budgets_bytes(self) -> dict[int, int]:
        """Bytes one model's weights may take on each device (by this accelerator's
        index): its free memory, capped by max_memory_gib where set."""

    def offloaded(self, model: Any) -> list[str]:
        """Modules a loaded model keeps off this accelerator's devices (CPU or disk)."""

    def input_device(self) -> Any:
        """Where prompt tensors go."""

    def memory_mib(self) -> tuple[int, int] | None:
        """(free, total) MiB summed over the visible devices."""

    def occupied(self, model: Any) -> tuple[int, ...]:
        """Indices (this accelerator's) of the devices holding the model's weights."""

    def release(self) -> None:
        """Return freed memory to the device after a model is dropped."""

    def versions(self) -> dict[str, str | None]: ...

    def compute_capability(self) -> tuple[int, int] | None:
        """(major, minor) of the input device; None where it is not a CUDA GPU."""


def _pci_bus_id(props: Any) -> str | None:
    try:
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    except (AttributeError, TypeError, ValueError):
        return None


class CudaAccelerator:
    kind = "cuda"

    def __init__(self, max_memory_gib: float | None = None, torch_module: Any = None) -> None:
        if torch_module is None:
            import torch as torch_module

        self._torch = torch_module
        self.max_memory_gib = max_memory_gib

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

    def placement(self) -> dict[str, object]:
        # One GPU and no cap: everything on it (a model that does not fit is an
        # out-of-memory error). Otherwise fill the GPUs in order up to each one's budget
        # (accelerate's "auto" would spread even a small model over all of them). The
        # budgets name only GPUs: left to itself accelerate would also budget the CPU
        # and put what does not fit there, where its energy is not GPU-package energy.
        if self._torch.cuda.device_count() == 1 and self.max_memory_gib is None:
            return {"device_map": {"": 0}}
        budgets: dict[int | str, int] = {i: b for i, b in self.budgets_bytes().items()}
        return {"device_map": "sequential", "max_memory": budgets}

    def budgets_bytes(self) -> dict[int, int]:
        cap = None if self.max_memory_gib is None else int(self.max_memory_gib * 2**30)
        cuda = self._torch.cuda
        free = {i: int(cuda.mem_get_info(i)[0]) for i in range(cuda.device_count())}
        return free if cap is None else {i: min(cap, b) for i, b in free.items()}

    def offloaded(self, model: Any) -> list[str]:
        device_map = getattr(model, "hf_device_map", None) or {}
        return sorted(
            name
            for name, device in device_map.items()
            if not isinstance(device, int) and not str(device).startswith("cuda")
        )

    def input_device(self) -> Any:
        return self._torch.device("cuda", 0)

    def memory_mib(self) -> tuple[int, int] | None:
        cuda = self._torch.cuda
        each = [cuda.mem_get_info(i) for i in range(cuda.device_count())]
        return sum(f for f, _ in each) // 2**20, sum(t for _, t in each) // 2**20

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

    def compute_capability(self) -> tuple[int, int] | None:
        major, minor = self._torch.cuda.get_device_capability(0)
        return int(major), int(minor)


def cuda_visible_devices() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def open_cuda(nvml_device_count: int, max_memory_gib: float | None = None) -> CudaAccelerator:
    """The measurement stack on this machine's GPUs. Raises AcceleratorUnavailable
    ("stack_missing" or "no_gpu") when the published path has to answer instead."""
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
    return CudaAccelerator(max_memory_gib)
