"""Where CudaAccelerator asks from_pretrained to put a model, with a stand-in torch."""

from __future__ import annotations

import types

import pytest

from ecocompute.llm.cuda import CudaAccelerator

GIB = 2**30


def fake_torch(free_gib: list[float]) -> types.SimpleNamespace:
    cuda = types.SimpleNamespace(
        device_count=lambda: len(free_gib),
        mem_get_info=lambda i: (int(free_gib[i] * GIB), int(141 * GIB)),
    )
    return types.SimpleNamespace(cuda=cuda)


def test_one_gpu_without_a_cap_takes_the_whole_model():
    accel = CudaAccelerator(torch_module=fake_torch([100.0]))
    assert accel.placement() == {"device_map": {"": 0}}


def test_several_gpus_fill_in_order_with_budgets_for_gpus_only():
    """No "cpu" budget: accelerate would otherwise put what does not fit in host RAM."""
    accel = CudaAccelerator(torch_module=fake_torch([100.0, 50.0]))
    placement = accel.placement()
    assert placement["device_map"] == "sequential"
    assert placement["max_memory"] == {0: 100 * GIB, 1: 50 * GIB}


@pytest.mark.parametrize(("free", "expected"), [([100.0], [1.5]), ([100.0, 1.0], [1.5, 1.0])])
def test_a_cap_bounds_each_gpu_by_the_smaller_of_cap_and_free(free, expected):
    accel = CudaAccelerator(max_memory_gib=1.5, torch_module=fake_torch(free))
    placement = accel.placement()
    assert placement["device_map"] == "sequential"
    assert placement["max_memory"] == {i: int(g * GIB) for i, g in enumerate(expected)}


def test_offloaded_names_the_modules_off_the_gpus():
    accel = CudaAccelerator(torch_module=fake_torch([1.0]))
    spread = types.SimpleNamespace(
        hf_device_map={"model.embed_tokens": 0, "model.layers.0": 1, "lm_head": "cpu", "x": "disk"}
    )
    assert accel.offloaded(spread) == ["lm_head", "x"]
    assert accel.offloaded(types.SimpleNamespace(hf_device_map={"": 0})) == []
    assert accel.offloaded(types.SimpleNamespace(hf_device_map={"a": "cuda:1"})) == []
    assert accel.offloaded(object()) == []
