"""Several fake GPUs of a given memory on the CPU, for the in-memory builder and the
sessions whose formats occupy different GPUs: each fake GPU's budget is its capacity
less what the models placed on it hold (capped by --max_gpu_memory_gib), and a model
occupies the fake GPUs its plan (hf_device_map) names. The tensors all live on the CPU.
Not shipped in the package.

The rehearsal's scale (benchmarks/fewer_gpus_h200x2.sh, REHEARSAL=1): synthetic:tiny-
in-memory is ~525 KB at FP16; with a cap of 0.00041 GiB (~430 KB) per model and 800 KB
per fake GPU, FP16 spans both, NF4 goes whole to one and LLM.int8() to the other, as
the 70B at FP16 (128 GiB), NF4 and INT4 (~37 GiB each) do on two H200s (140 GiB) with
--max_gpu_memory_gib 72.
"""

from __future__ import annotations

from typing import Any

from .fakes import CpuAccelerator, fake_devices

REHEARSAL_CAPACITY_BYTES = 800_000


def block_bytes(module: Any) -> int:
    from ecocompute.llm.loading import weight_bytes

    return weight_bytes(module)


class FakeGpus(CpuAccelerator):
    def __init__(
        self,
        count: int = 2,
        capacity_bytes: int = REHEARSAL_CAPACITY_BYTES,
        max_memory_gib: float | None = None,
        sync_s: float = 0.0,
    ) -> None:
        super().__init__(devices=fake_devices(count), sync_s=sync_s)
        self.count = count
        self.capacity_bytes = capacity_bytes
        self.max_memory_gib = max_memory_gib
        self.held: dict[int, dict[int, int]] = {}  # id(model) -> device -> bytes

    def _used(self) -> dict[int, int]:
        used = dict.fromkeys(range(self.count), 0)
        for per_device in self.held.values():
            for i, n in per_device.items():
                used[i] += n
        return used

    def budgets_bytes(self) -> dict[int, int]:
        cap = None if self.max_memory_gib is None else int(self.max_memory_gib * 2**30)
        free = {i: self.capacity_bytes - n for i, n in self._used().items()}
        return {i: f if cap is None else min(cap, f) for i, f in free.items()}

    def occupied(self, model: Any) -> tuple[int, ...]:
        plan = getattr(model, "hf_device_map", None) or {"": 0}
        if id(model) not in self.held:
            per_device: dict[int, int] = {}
            for name, device in plan.items():
                module = model.get_submodule(name) if name else model
                per_device[device] = per_device.get(device, 0) + block_bytes(module)
            self.held[id(model)] = per_device
        return tuple(sorted(set(plan.values())))

    # memory_mib() stays the CPU stand-in's (100,000 MiB free): the session's fit check
    # counts MiB with 4 GiB of headroom, a scale these fake GPUs of a few hundred KB are
    # not at; what fits where is the in-memory plan's answer, within budgets_bytes().
