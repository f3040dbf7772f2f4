"""The machine a run measures: NVML, CUDA, the model stack and the power sampler, as
four seams.

this_machine() gives the real ones; tests hand run_energy_estimate() a Machine of
stand-ins (tests/fakes.py), or replace this_machine to drive the whole CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ecocompute.llm.cuda import Accelerator, open_cuda
from ecocompute.llm.loading import ModelBackend
from ecocompute.monitor.sampler import SamplerOpener, open_power_sampler
from ecocompute.telemetry.base import GpuTelemetry
from ecocompute.telemetry.nvml import open_nvml

# (GPUs NVML lists, --max_gpu_memory_gib) -> the accelerator; raises AcceleratorUnavailable
AcceleratorOpener = Callable[[int, float | None], Accelerator]


@dataclass(frozen=True)
class Machine:
    open_telemetry: Callable[[], GpuTelemetry] = open_nvml
    open_accelerator: AcceleratorOpener = open_cuda
    backend: ModelBackend = field(default_factory=ModelBackend)
    open_sampler: SamplerOpener = open_power_sampler  # the power sampler of every phase


def this_machine() -> Machine:
    return Machine()
