"""energy_estimate as a plain function: probe, then measure or fall back, then report.

The CLI only parses arguments and calls run_energy_estimate(); tests call it directly.
This module is also where the real machine is chosen: open_nvml, open_cuda and
ModelBackend are looked up here at call time, so a test can replace them (the fakes in
tests/fakes.py) and drive the whole CLI, in-process or in a subprocess.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ecocompute.errors import AcceleratorUnavailable, TelemetryUnavailable
from ecocompute.estimate.published_path import FallbackReason, KnownHardware, reference_report
from ecocompute.llm.cuda import Accelerator, open_cuda
from ecocompute.llm.loading import ModelBackend
from ecocompute.params import RunParams
from ecocompute.progress import Progress
from ecocompute.telemetry.base import GpuTelemetry
from ecocompute.telemetry.nvml import open_nvml

log = logging.getLogger(__name__)

TelemetryOpener = Callable[[], GpuTelemetry]


def describe_hardware(telemetry: GpuTelemetry) -> KnownHardware:
    devices = telemetry.devices()
    return KnownHardware(
        gpu_name=devices[0].name if devices else None,
        accelerator_count=len(devices),
        nvidia_driver=telemetry.driver_version(),
        gpus=tuple(
            {"nvml_index": d.index, "name": d.name, "uuid": d.uuid, "pci_bus_id": d.pci_bus_id}
            for d in devices
        ),
    )


def run_energy_estimate(
    params: RunParams,
    progress: Progress,
    *,
    open_telemetry: TelemetryOpener | None = None,
    command: list[str] | None = None,
    accelerator: Accelerator | None = None,
    backend: ModelBackend | None = None,
) -> dict[str, Any]:
    """Build the run's report (not yet written). Raises InputError or RunError.

    By default NVML, CUDA and bitsandbytes (open_nvml, open_cuda, ModelBackend of this
    module); tests pass stand-ins or replace those names.
    """
    try:
        telemetry = (open_telemetry or open_nvml)()
    except TelemetryUnavailable as exc:
        reason = (
            FallbackReason("dry_run", "--dry_run")
            if params.dry_run
            else FallbackReason(exc.code, exc.reason)
        )
        progress(f"reference path: {reason.text}")
        return reference_report(params, reason, KnownHardware())
    try:
        hardware = describe_hardware(telemetry)
        if params.dry_run:
            progress("reference path: --dry_run")
            return reference_report(params, FallbackReason("dry_run", "--dry_run"), hardware)
        if accelerator is None:
            try:
                accelerator = open_cuda(hardware.accelerator_count, params.max_gpu_memory_gib)
            except AcceleratorUnavailable as exc:
                progress(f"reference path: {exc.reason}")
                return reference_report(params, FallbackReason(exc.code, exc.reason), hardware)
        from ecocompute.estimate.measured_path import measure_or_fall_back

        return measure_or_fall_back(
            params,
            progress,
            telemetry,
            hardware,
            accelerator,
            backend or ModelBackend(),
            command=command,
        )
    finally:
        telemetry.close()
