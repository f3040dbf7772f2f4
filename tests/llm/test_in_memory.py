"""Issue 22, item 1: a synthetic model built directly in accelerator memory (never on
disk, never whole in host memory), on the CPU: its shapes are the preset's config, its
seeding is reproducible, each format is quantized from memory by its library (and the
quantizer's check holds), and its placement over several devices follows a budget per
device (fake GPUs where real ones are needed)."""

from __future__ import annotations

import pytest

from ecocompute.core.precision import Precision
from ecocompute.errors import RunError
from ecocompute.formats.table import FP16_SPEC, spec_for
from ecocompute.llm.in_memory import blocks_of, build, size, skeleton, tensor_seed
from ecocompute.llm.loading import ModelBackend, resolve_checkpoint
from ecocompute.llm.placement import Block, DoesNotFit, plan, reserve_bytes
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.llm.synthetic import PRESETS, SEED

from ..fake_gpus import FakeGpus
from ..fakes import CpuAccelerator

TINY = "synthetic:tiny-in-memory"
NF4 = spec_for(Precision.NF4)
INT8 = spec_for(Precision.INT8)
INT8_TORCHAO = spec_for(Precision.INT8, "torchao")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _shapes(model) -> dict[str, tuple[int, ...]]:
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def test_the_70b_presets_are_their_public_configs():
    """Counted on the meta device (no memory): Llama-2-70B has 68,976,648,192
    parameters and Meta-Llama-3-70B 70,553,706,496, as their model cards round to 69B
    and 70.6B; the layer shapes follow hidden 8192, MLP 28672, 64 heads, 8 KV heads."""
    expected = {"llama-2-70b": 68_976_648_192, "llama-3-70b": 70_553_706_496}
    for name, count in expected.items():
        model, blocks = skeleton(f"synthetic:{name}", FP16_SPEC)
        assert PRESETS[name].in_memory
        assert sum(p.numel() for p in model.parameters()) == count
        shapes = _shapes(model)
        assert shapes["model.layers.79.self_attn.q_proj.weight"] == (8192, 8192)
        assert shapes["model.layers.79.self_attn.k_proj.weight"] == (1024, 8192)
        assert shapes["model.layers.0.mlp.down_proj.weight"] == (8192, 28672)
        vocab = 32000 if name == "llama-2-70b" else 128256
        assert shapes["lm_head.weight"] == (vocab, 8192)
        assert [b for b, _ in blocks][:2] == ["model.embed_tokens", "model.layers.0"]
        assert len(blocks) == 80 + 4  # layers, embeddings, norm, rotary, output layer
        assert {p.device.type for p in model.parameters()} == {"meta"}
    assert PRESETS["llama-3-70b"].rope_theta == 500000.0
    assert not PRESETS["tinyllama-1.1b"].in_memory  # smaller presets keep save/load


def test_the_built_model_has_the_configs_shapes_on_the_device():
    model = build(TINY, FP16_SPEC, CpuAccelerator())
    reference, _ = skeleton(TINY, FP16_SPEC)
    assert _shapes(model) == _shapes(reference)
    preset = PRESETS["tiny-in-memory"]
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers) == (preset.hidden_size, 4)
    assert config.num_key_value_heads == preset.num_key_value_heads
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert {str(p.dtype) for p in model.parameters()} == {"torch.float16"}
    assert model.model.rotary_emb.inv_freq.device.type == "cpu"
    assert float(model.model.norm.weight.float().min()) == 1.0  # norms are ones
    assert float(model.model.embed_tokens.weight[0].abs().max()) == 0.0  # padding row
    std = float(model.model.layers[0].mlp.up_proj.weight.float().std())
    assert 0.018 < std < 0.022  # N(0, initializer_range 0.02)


def test_same_seed_same_weights_other_seed_other_weights():
    import torch

    accelerator = CpuAccelerator()
    first = build(TINY, FP16_SPEC, accelerator, seed=SEED).state_dict()
    again = build(TINY, FP16_SPEC, accelerator, seed=SEED).state_dict()
    other = build(TINY, FP16_SPEC, accelerator, seed=SEED + 1).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    random = [k for k in first if first[k].dim() >= 2]
    assert random and not any(torch.equal(first[k], other[k]) for k in random)
    assert tensor_seed(0, "a.weight") != tensor_seed(0, "b.weight") != tensor_seed(1, "b.weight")


def test_nf4_is_quantized_from_memory_with_the_fp16_copys_weights():
    import bitsandbytes as bnb
    import torch

    accelerator = CpuAccelerator()
    fp16 = build(TINY, FP16_SPEC, accelerator)
    nf4 = build(TINY, NF4, accelerator)
    quantizer_for(NF4).check(nf4)  # Linear4bit layers in place of torch.nn.Linear
    layers = [m for m in nf4.modules() if type(m).__name__ == "Linear4bit"]
    assert len(layers) == 4 * 7  # every linear layer but the output layer
    assert type(nf4.lm_head) is torch.nn.Linear and nf4.lm_head.weight.dtype == torch.float16
    weight = nf4.model.layers[2].mlp.down_proj.weight
    assert weight.bnb_quantized and weight.quant_state.quant_type == "nf4"
    restored = bnb.functional.dequantize_4bit(weight.data, weight.quant_state).float()
    reference = fp16.model.layers[2].mlp.down_proj.weight.float()
    error = float((restored - reference).norm() / reference.norm())
    assert error < 0.15  # NF4's rounding of the same weights, not other weights (~1.4)
    ids = torch.randint(3, 128, (1, 12))
    assert bool(torch.isfinite(nf4(ids).logits).all())


def test_llm_int8_and_torchao_quantize_from_memory_too():
    import torch

    accelerator = CpuAccelerator()
    int8 = build(TINY, INT8, accelerator)
    quantizer_for(INT8).check(int8)
    assert int8.model.layers[0].self_attn.q_proj.weight.dtype == torch.int8
    assert int8.model.layers[0].self_attn.q_proj.state.threshold == 6.0
    pure = build(TINY, spec_for(Precision.INT8, llm_int8_threshold=0.0), accelerator)
    assert pure.model.layers[0].mlp.down_proj.state.threshold == 0.0  # the format's setting
    torchao = build(TINY, INT8_TORCHAO, accelerator)
    quantizer = quantizer_for(INT8_TORCHAO)
    quantizer.check(torchao)
    assert quantizer.tally(torchao) == {"layers_quantized": 28, "layers_linear": 28}
    assert torchao.lm_head.weight.dtype == torch.bfloat16  # kept, as from_pretrained keeps it


def test_the_plan_puts_a_model_that_fits_whole_on_the_roomiest_gpu():
    blocks = [Block(f"b{k}", 100, 10) for k in range(5)]  # 500 bytes, 10 reserved
    assert set(plan(blocks, {0: 600, 1: 700}).values()) == {1}
    assert set(plan(blocks, {0: 700, 1: 700}).values()) == {0}  # a tie: the lower index


def test_the_plan_spreads_what_fits_no_single_gpu_in_order_within_each_budget():
    blocks = [Block(f"b{k}", 100, 10) for k in range(5)]
    placed = plan(blocks, {0: 330, 1: 400})  # rooms 320 and 390
    assert placed == {"b0": 0, "b1": 0, "b2": 0, "b3": 1, "b4": 1}
    with pytest.raises(DoesNotFit, match=r"500 bytes|MiB of weights"):
        plan(blocks, {0: 250, 1: 250})  # rooms 240 + 240: 200 + 200 placed, 100 left
    assert reserve_bytes(blocks) == 10


def test_fp16_spreads_over_two_fake_gpus_and_nf4_sits_whole_on_one():
    gpus = FakeGpus(max_memory_gib=0.00041)
    fp16 = build(TINY, FP16_SPEC, gpus)
    model, blocks = skeleton(TINY, FP16_SPEC)
    budget = int(0.00041 * 2**30)
    sizes = {name: size(name, module, model, FP16_SPEC) for name, module in blocks}
    reserve = reserve_bytes(list(sizes.values()))
    assert gpus.occupied(fp16) == (0, 1)
    for device in (0, 1):
        on_it = [n for n, d in fp16.hf_device_map.items() if d == device]
        assert sum(sizes[n].stored_bytes for n in on_it) <= budget - reserve
    order = list(fp16.hf_device_map.values())
    assert order == sorted(order)  # in index order, as accelerate's "sequential"
    nf4 = build(TINY, NF4, gpus)
    assert gpus.occupied(nf4) == (0,)  # GPU 0 keeps more room after FP16's first half
    int8 = build(TINY, INT8, gpus)
    assert gpus.occupied(int8) == (1,)  # the roomiest GPU once NF4 is on GPU 0


def test_an_in_memory_preset_never_touches_the_disk_and_loads_through_the_backend(tmp_path):
    backend = ModelBackend()
    accelerator = CpuAccelerator()
    checkpoint = resolve_checkpoint(TINY, accelerator)
    assert checkpoint.in_memory and checkpoint.weights == "synthetic"
    assert "built in memory" in (checkpoint.weights_note or "")
    loaded = backend.load(checkpoint, NF4, accelerator)
    assert loaded.precision is Precision.NF4 and loaded.quantization["method"] == "nf4"
    assert not (tmp_path / "cache").exists()  # nothing saved, unlike the other presets
    assert [b for b, _ in blocks_of(loaded.model)][-1] == "lm_head"


def test_a_model_that_fits_on_no_gpu_is_refused_in_one_line():
    gpus = FakeGpus(max_memory_gib=0.0001)  # ~107 KB per GPU for a 525 KB model
    checkpoint = resolve_checkpoint(TINY, gpus)
    with pytest.raises(RunError, match=r"does not fit .*within --max_gpu_memory_gib") as err:
        ModelBackend().load(checkpoint, FP16_SPEC, gpus)
    assert "\n" not in str(err.value) and "Offloading to the CPU or disk is not measured" in str(
        err.value
    )


def test_a_tied_preset_is_refused_by_the_in_memory_builder(monkeypatch):
    import dataclasses

    tied = dataclasses.replace(PRESETS["tiny-in-memory"], tie_word_embeddings=True)
    monkeypatch.setitem(PRESETS, "tiny-in-memory", tied)
    with pytest.raises(RunError, match="ties its embeddings"):
        build(TINY, FP16_SPEC, CpuAccelerator())
