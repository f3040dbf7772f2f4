"""CUDA devices matched to NVML devices: with CUDA_VISIBLE_DEVICES=1, cuda:0 is NVML GPU 1."""

from __future__ import annotations

import pytest

from ecocompute.telemetry.base import GpuDevice
from ecocompute.telemetry.mapping import (
    CudaDevice,
    DeviceMappingError,
    match_devices,
    normalise_uuid,
)
from ecocompute.telemetry.nvml import normalise_pci_bus_id

NVML = [
    GpuDevice(0, "NVIDIA H200", "GPU-449044e5-bb54-20c8-7b7e-ff74e6f2b5f8", "0000:00:06.0"),
    GpuDevice(1, "NVIDIA H200", "GPU-8c2e34f0-724c-9c09-9797-f67eaba836c8", "0000:00:07.0"),
]


def test_cuda_visible_devices_1_measures_nvml_gpu_1():
    # as torch reported it on the H200 machine with CUDA_VISIBLE_DEVICES=1
    cuda = [CudaDevice(0, "NVIDIA H200", "8c2e34f0-724c-9c09-9797-f67eaba836c8", "0000:00:07.0")]
    (match,) = match_devices(cuda, NVML)
    assert (match.cuda_index, match.nvml.index, match.matched_by) == (0, 1, "uuid")


def test_reordered_devices_follow_uuid_not_index():
    cuda = [
        CudaDevice(0, "NVIDIA H200", "8c2e34f0-724c-9c09-9797-f67eaba836c8", None),
        CudaDevice(1, "NVIDIA H200", "449044e5-bb54-20c8-7b7e-ff74e6f2b5f8", None),
    ]
    assert [m.nvml.index for m in match_devices(cuda, NVML)] == [1, 0]


def test_pci_bus_id_when_uuid_is_missing():
    cuda = [CudaDevice(0, "NVIDIA H200", None, "0000:00:07.0")]
    (match,) = match_devices(cuda, NVML)
    assert (match.nvml.index, match.matched_by) == (1, "pci_bus_id")


def test_unmatched_device_is_an_error_not_a_guess():
    cuda = [CudaDevice(0, "NVIDIA H200", "ffffffff-0000-0000-0000-000000000000", "0000:99:00.0")]
    with pytest.raises(DeviceMappingError, match="matches no NVML device"):
        match_devices(cuda, NVML)


@pytest.mark.parametrize(
    ("name", "uuid"),
    [
        ("NVIDIA H200 MIG 1g.18gb", "MIG-5f8e1a2b-0000-1111-2222-333333333333"),
        ("NVIDIA H200 MIG 3g.71gb", None),  # no UUID: its name says it
        ("NVIDIA H200", "MIG-5f8e1a2b-0000-1111-2222-333333333333"),
    ],
)
def test_a_mig_instance_is_refused_not_matched_to_its_whole_gpu(name, uuid):
    """A MIG instance shares its GPU's PCI bus id, so it matched the whole GPU and was
    measured with the whole GPU's counter, other instances' work included (a review,
    2026-12-05)."""
    cuda = [CudaDevice(0, name, uuid, "0000:00:07.0")]
    with pytest.raises(DeviceMappingError, match="is a MIG instance"):
        match_devices(cuda, NVML)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("00000000:65:00.0", "0000:65:00.0"),
        ("0000:65:00.0", "0000:65:00.0"),
        ("65:00.0", "0000:65:00.0"),
        ("00000001:0A:00.0", "0001:0a:00.0"),
    ],
)
def test_pci_bus_id_forms(raw, normal):
    assert normalise_pci_bus_id(raw) == normal


def test_uuid_forms():
    assert normalise_uuid("GPU-ABC") == normalise_uuid("abc") == "abc"
    assert normalise_uuid("MIG-xyz") == "xyz"
