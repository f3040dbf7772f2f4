"""NvmlTelemetry.capabilities() on a stand-in pynvml (the real module's constants and
error type): only NOT_SUPPORTED means a GPU lacks a reading; one transient error while
probing (a timeout) is tried again, not fixed for the whole session (a review, 2026-12-04:
one TIMEOUT turned the energy counter off and the run's energy into sampled power)."""

from __future__ import annotations

import types

import pytest

pynvml = pytest.importorskip("pynvml")

from ecocompute.telemetry import nvml as nvml_module  # noqa: E402
from ecocompute.telemetry.nvml import NvmlTelemetry  # noqa: E402


def _stand_in(energy_errors: list[int], instant_errors: list[int]) -> types.SimpleNamespace:
    """A pynvml whose energy and instant-power reads raise these errors first, in turn."""
    nv = types.SimpleNamespace(
        **{k: getattr(pynvml, k) for k in dir(pynvml) if k.startswith("NVML_")}
    )
    nv.NVMLError = pynvml.NVMLError
    nv.calls = {"energy": 0, "instant": 0}
    nv.nvmlDeviceGetCount = lambda: 1
    nv.nvmlDeviceGetHandleByIndex = lambda i: i
    nv.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    nv.nvmlDeviceGetUUID = lambda h: b"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"
    nv.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=b"00000000:18:00.0")
    nv.nvmlDeviceGetPowerUsage = lambda h: 340_000

    def energy(h):
        nv.calls["energy"] += 1
        if energy_errors:
            raise pynvml.NVMLError(energy_errors.pop(0))
        return 123_456_789

    def fields(h, ids):
        nv.calls["instant"] += 1
        if instant_errors:
            raise pynvml.NVMLError(instant_errors.pop(0))
        value = types.SimpleNamespace(uiVal=350_000)
        return [
            types.SimpleNamespace(
                nvmlReturn=0, valueType=nv.NVML_VALUE_TYPE_UNSIGNED_INT, value=value
            )
        ]

    nv.nvmlDeviceGetTotalEnergyConsumption = energy
    nv.nvmlDeviceGetFieldValues = fields
    return nv


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch):
    monkeypatch.setattr(nvml_module, "PROBE_PAUSE_S", 0.0)


def test_one_transient_error_is_tried_again():
    timeout = pynvml.NVML_ERROR_TIMEOUT
    nv = _stand_in([timeout], [timeout])
    caps = NvmlTelemetry(nv).capabilities(0)
    assert (caps.energy_counter, caps.power_field) == (True, "instant")
    assert nv.calls == {"energy": 2, "instant": 2}


def test_not_supported_is_final_and_a_lasting_error_gives_up():
    nv = _stand_in([pynvml.NVML_ERROR_NOT_SUPPORTED], [])
    assert NvmlTelemetry(nv).capabilities(0).energy_counter is False
    assert nv.calls["energy"] == 1  # not offered: asked once
    unknown = pynvml.NVML_ERROR_UNKNOWN
    nv = _stand_in([unknown] * 5, [unknown] * 5)
    caps = NvmlTelemetry(nv).capabilities(0)
    assert (caps.energy_counter, caps.power_field) == (False, "average")  # as before
    assert nv.calls == {"energy": 3, "instant": 3}
