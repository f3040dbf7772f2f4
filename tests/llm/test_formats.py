"""The format table and each library's refusals, at the library seam (torchao's INT4
and FP8 have no CPU kernels here: a stand-in library answers for them), and torchao's
INT8 weight-only on real CPU tensors."""

from __future__ import annotations

import functools
import types

import pytest

from ecocompute.core.precision import Precision
from ecocompute.errors import InputError, RunError
from ecocompute.formats.table import (
    BITSANDBYTES,
    DEFAULT_LIBRARY,
    FORMATS,
    TORCHAO,
    libraries_for,
    spec_for,
)
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.llm.quantizers.torchao import Torchao
from ecocompute.params import resolve

from ..fakes import CpuAccelerator


class GpuLike(CpuAccelerator):
    """The CPU stand-in claiming to be a CUDA card of a given compute capability."""

    kind = "cuda"

    def __init__(self, capability: tuple[int, int] | None) -> None:
        super().__init__()
        self.capability = capability

    def compute_capability(self) -> tuple[int, int] | None:
        return self.capability


@functools.cache
def marked() -> type:
    """A tensor subclass standing in for torchao's quantized tensors."""
    import torch

    class Marked(torch.Tensor):
        pass

    return Marked


def fake_torchao(quantize=None):
    """A stand-in for torchao.quantization: configs are records, quantize_ does what
    `quantize` says (default: replace every chosen layer's weight with a marker)."""
    import torch

    Marked = marked()

    def default(model, config, filter_fn=None):
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and (
                filter_fn is None or filter_fn(module, name)
            ):
                module.weight = torch.nn.Parameter(
                    module.weight.detach().as_subclass(Marked), requires_grad=False
                )

    return types.SimpleNamespace(
        quantize_=quantize or default,
        Int4WeightOnlyConfig=lambda **kw: ("int4", kw),
        Float8DynamicActivationFloat8WeightConfig=lambda **kw: ("fp8", kw),
        Int8WeightOnlyConfig=lambda **kw: ("int8", kw),
        PerRow=lambda: "per-row",
    )


def torchao_quantizer(precision, lib, monkeypatch, version="0.18.0"):
    monkeypatch.setattr(
        "ecocompute.llm.quantizers.torchao.packages.installed_version",
        lambda name: version if name == "torchao" else None,
    )
    q = quantizer_for(spec_for(precision))
    assert isinstance(q, Torchao)
    monkeypatch.setattr(q, "library", lambda: lib)
    return q


def test_the_table_names_every_format_once_with_what_it_needs():
    keys = [spec.key for spec in FORMATS]
    assert keys == ["FP16", "NF4", "INT8", "INT4", "FP8", "INT8-torchao"]
    assert libraries_for(Precision.INT8) == (BITSANDBYTES, TORCHAO)
    assert spec_for(Precision.INT4).library == TORCHAO
    assert spec_for(Precision.FP8).min_compute_capability == (8, 9)
    assert spec_for(Precision.INT8, TORCHAO).compute_dtype == "bfloat16"
    assert [spec.published for spec in FORMATS] == [True, True, True, False, False, False]
    assert [DEFAULT_LIBRARY[p] for p in Precision] == [
        "torch",
        BITSANDBYTES,
        BITSANDBYTES,
        TORCHAO,
        TORCHAO,  # FP16 NF4 INT8 INT4 FP8
    ]
    with pytest.raises(InputError, match="torchao does not make NF4; bitsandbytes does"):
        spec_for(Precision.NF4, TORCHAO)


def test_the_command_line_takes_a_list_of_formats_and_a_library():
    p = resolve(None, {"precision": "nf4,INT4,fp8"})
    assert p.precision is Precision.NF4
    assert p.session_formats == (Precision.NF4, Precision.INT4, Precision.FP8)
    assert resolve(None, {"precision": "INT8", "backend": "torchao"}).spec().key == "INT8-torchao"
    assert resolve(None, {"precision": "FP16"}).session_formats == ()
    with pytest.raises(InputError, match="share"):
        resolve(None, {"precision": "NF4,INT4", "share": True})


def test_llm_int8s_threshold_is_held_by_its_format_and_quantizer():
    from ecocompute.llm.quantizers.bitsandbytes import LlmInt8

    assert spec_for(Precision.INT8).llm_int8_threshold == 6.0  # the library's default
    assert spec_for(Precision.NF4).llm_int8_threshold is None  # no other format has one
    assert spec_for(Precision.INT8, TORCHAO, llm_int8_threshold=0.0).llm_int8_threshold is None
    params = resolve(None, {"precision": "INT8", "llm_int8_threshold": "0"})
    quantizer = quantizer_for(params.spec())
    assert isinstance(quantizer, LlmInt8) and quantizer.threshold == 0.0
    assert quantizer.record()["llm_int8_threshold"] == 0.0
    assert resolve(None, {"precision": "NF4"}).spec() == spec_for(Precision.NF4)


def test_int4_refuses_without_cuda(monkeypatch):
    q = torchao_quantizer(Precision.INT4, fake_torchao(), monkeypatch)
    with pytest.raises(RunError, match=r"^INT4 \(torchao .*\) cannot run here: .*CUDA GPU"):
        q.preflight(CpuAccelerator())


@pytest.mark.parametrize(
    ("capability", "ok"),
    [((8, 0), False), ((8, 6), False), ((8, 9), True), ((9, 0), True), (None, False)],
)
def test_fp8_needs_compute_capability_8_9(monkeypatch, capability, ok):
    q = torchao_quantizer(Precision.FP8, fake_torchao(), monkeypatch)
    if ok:
        q.preflight(GpuLike(capability))  # the stand-in library's tiny op runs
    else:
        with pytest.raises(RunError, match=r"needs compute capability 8\.9 or newer"):
            q.preflight(GpuLike(capability))


def test_a_missing_or_old_torchao_is_one_line(monkeypatch):
    q = torchao_quantizer(Precision.INT4, fake_torchao(), monkeypatch, version=None)
    with pytest.raises(RunError, match="torchao is not installed"):
        q.preflight(GpuLike((9, 0)))
    q = torchao_quantizer(Precision.INT4, fake_torchao(), monkeypatch, version="0.12.0")
    with pytest.raises(RunError, match=r"torchao 0\.12\.0 is older than 0\.18\.0"):
        q.preflight(GpuLike((9, 0)))


def test_a_library_that_fails_its_tiny_op_is_named(monkeypatch):
    def broken(model, config, filter_fn=None):
        raise RuntimeError("no kernel image is available\nsecond line")

    q = torchao_quantizer(Precision.FP8, fake_torchao(broken), monkeypatch)
    with pytest.raises(
        RunError, match=r"preflight failed \(RuntimeError: no kernel image is available\)"
    ):
        q.preflight(GpuLike((9, 0)))


def _two_layer_model(in_features: int):
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(in_features, 256, bias=False)
            self.down = torch.nn.Linear(256, 64, bias=False)
            self.lm_head = torch.nn.Linear(64, 32, bias=False)

        def get_output_embeddings(self):
            return self.lm_head

    return Tiny()


def test_layers_the_kernel_refuses_are_counted_and_said(monkeypatch):
    import torch

    def int4_like(model, config, filter_fn=None):  # skips in_features not multiple of 128
        for name, m in model.named_modules():
            if isinstance(m, torch.nn.Linear) and filter_fn(m, name) and m.in_features % 128 == 0:
                m.weight = torch.nn.Parameter(
                    m.weight.detach().as_subclass(marked()), requires_grad=False
                )

    q = torchao_quantizer(Precision.INT4, fake_torchao(int4_like), monkeypatch)
    model = _two_layer_model(576)
    done = q.finish(model)
    assert done["layers_quantized"] == 1 and done["layers_linear"] == 2  # lm_head not counted
    assert "1 of 2 linear layers kept in bfloat16" in done["layers_skipped_note"]
    assert (
        "(256, 576)" in done["layers_skipped_note"]
        and "multiple of 128" in done["layers_skipped_note"]
    )
    assert type(model.lm_head.weight) is torch.nn.Parameter  # the output layer stays
    q.check(model)


def test_a_model_with_no_layer_quantized_is_refused(monkeypatch):
    q = torchao_quantizer(Precision.INT4, fake_torchao(lambda *a, **k: None), monkeypatch)
    with pytest.raises(RunError, match="quantized none of the model's 2 linear layers"):
        q.finish(_two_layer_model(576))


@pytest.mark.slow
def test_torchao_int8_weight_only_on_real_cpu_tensors(tmp_path, monkeypatch):
    """The shipped loader, the real torchao: every linear layer but the head becomes an
    int8 tensor, the stored bytes shrink, and the static-cache decode runs."""
    pytest.importorskip("torchao")
    import torch

    from ecocompute.llm.decode import make_decoder
    from ecocompute.llm.loading import load, prompt_ids, resolve_checkpoint

    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    accelerator = CpuAccelerator()
    checkpoint = resolve_checkpoint("synthetic:tiny-test", accelerator)
    spec = spec_for(Precision.INT8, TORCHAO)
    quantizer_for(spec).preflight(accelerator)
    fp16 = load(checkpoint, Precision.FP16, accelerator)
    int8 = load(checkpoint, spec, accelerator)
    assert int8.spec is spec and int8.quantization is not None
    assert (
        int8.quantization["library"] == "torchao"
        and int8.quantization["config"] == "Int8WeightOnlyConfig"
    )
    assert int8.quantization["layers_quantized"] == int8.quantization["layers_linear"] == 14
    proj = int8.model.model.layers[0].self_attn.q_proj.weight
    assert type(proj).__name__ == "Int8Tensor"
    assert type(int8.model.get_output_embeddings().weight) is torch.nn.Parameter
    assert int8.footprint_mib < fp16.footprint_mib
    ids, mask = prompt_ids(checkpoint, 2, accelerator)
    decoder = make_decoder(int8.model, ids, mask, 5, "graphs", capture=False, label="INT8")
    decoder.prepare()
    out = decoder.run()
    assert tuple(out.shape) == (2, ids.shape[-1] + 5)


def test_weight_bytes_count_the_scales_bitsandbytes_keeps_beside_its_data():
    """NF4's absmax (a float32 per 64 weights: an eighth more than the packed data) and
    LLM.int8()'s per-row SCB live outside bitsandbytes' parameters: weights_mib left them
    out, about 11% low for NF4 (a review, 2026-12-04)."""
    pytest.importorskip("bitsandbytes")
    import torch

    from ecocompute.llm.loading import weight_bytes

    nf4 = quantizer_for(spec_for(Precision.NF4))._layer(
        torch.nn.Linear(256, 256, bias=False).half()
    )
    state = nf4.weight.quant_state
    data = nf4.weight.numel() * nf4.weight.element_size()
    scales = state.absmax.numel() * state.absmax.element_size()
    assert weight_bytes(nf4) >= data + scales and scales == data // 8
    int8 = quantizer_for(spec_for(Precision.INT8))._layer(
        torch.nn.Linear(256, 256, bias=False).half()
    )
    scb = int8.weight.SCB.numel() * int8.weight.SCB.element_size()
    assert weight_bytes(int8) == int8.weight.numel() * int8.weight.element_size() + scb
