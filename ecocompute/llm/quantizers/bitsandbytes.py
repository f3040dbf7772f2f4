"""bitsandbytes: NF4 (4-bit NormalFloat) and LLM.int8(), quantized by transformers'
BitsAndBytesConfig as the checkpoint loads; a model built in memory is quantized block
by block with the layers and parameters transformers' own integration makes
(transformers/integrations/bitsandbytes.py: Linear4bit with Params4bit, quantized where
it lies; Linear8bitLt with Int8Params, quantized on the way from the CPU, one tensor at a
time), with the settings of load_arguments(). LLM.int8()'s outlier threshold is held by
its quantizer (from its format's row), as BitsAndBytesConfig holds it in transformers."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ecocompute.core import packages
from ecocompute.errors import RunError, one_line
from ecocompute.formats.table import FormatSpec
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.quantizers.base import Quantizer


def stack_versions(accelerator: Accelerator) -> str:
    v = accelerator.versions()
    bnb = packages.installed_version("bitsandbytes") or "not installed"
    return f"torch {v.get('torch')}, CUDA {v.get('cuda')}, bitsandbytes {bnb}"


class Bitsandbytes(Quantizer):
    """What NF4 and LLM.int8() share; each format's own pieces are its subclass's."""

    layer_name: str  # the bitsandbytes layer that must stand in place of torch.nn.Linear

    def preflight(self, accelerator: Accelerator) -> None:
        precision = self.spec.precision
        try:
            import bitsandbytes as bnb
            import torch
        except Exception as exc:  # ImportError, or a CUDA-setup error raised at import
            raise RunError(
                f"{precision} needs bitsandbytes, which could not be imported ({exc}); "
                f"{stack_versions(accelerator)}. Install it with `pip install bitsandbytes` "
                "(or the [gpu] extra), or run --precision FP16."
            ) from None
        device = accelerator.input_device()
        try:
            x = torch.randn(16, 64, dtype=torch.float16, device=device)
            y = self._tiny_op(bnb, x)
            accelerator.synchronize()
            if not bool(torch.isfinite(y).all()):
                raise RuntimeError("non-finite result")
        except Exception as exc:  # any failure of the kernel is the preflight's answer
            raise RunError(
                f"bitsandbytes {precision} preflight failed on this GPU ({one_line(exc)}); "
                f"{stack_versions(accelerator)}. "
                "Its kernels may not support this torch/CUDA build; nothing was loaded."
            ) from None

    def load_arguments(self) -> dict[str, object]:
        import torch

        return {"dtype": torch.float16, "quantization_config": self._config()}

    def quantize_block(self, block: Any, head: Any) -> None:
        """Each torch.nn.Linear of the block but the output layer becomes this format's
        bitsandbytes layer, holding the block's own weights quantized."""
        import torch

        for name, module in list(block.named_modules()):
            if name and type(module) is torch.nn.Linear and module is not head:
                layer = self._layer(module)
                if module.bias is not None:
                    layer.bias = torch.nn.Parameter(module.bias.data, requires_grad=False)
                block.set_submodule(name, layer)

    def check(self, model: Any) -> None:
        precision, layer = self.spec.precision, self.layer_name
        if not any(type(m).__name__ == layer for m in model.modules()):
            raise RunError(
                f"the {precision} load returned a model without bitsandbytes {layer} layers, "
                f"so it is not {precision}; refusing to report its energy as {precision}. "
                "Check the bitsandbytes and transformers versions; nothing was written."
            )

    def _recorded(self, **own: object) -> dict[str, Any]:
        version = packages.installed_version("bitsandbytes")
        return {"library": "bitsandbytes", "library_version": version, **own}

    # each format's own: one small product on x's device, transformers' config, and a
    # torch.nn.Linear's weights in its bitsandbytes layer (without the bias)
    @abstractmethod
    def _tiny_op(self, bnb: Any, x: Any) -> Any: ...

    @abstractmethod
    def _config(self) -> Any: ...

    @abstractmethod
    def _layer(self, linear: Any) -> Any: ...


class Nf4(Bitsandbytes):
    layer_name = "Linear4bit"

    def _tiny_op(self, bnb: Any, x: Any) -> Any:
        import torch

        weight = torch.randn(64, 64, dtype=torch.float16, device=x.device)
        packed, state = bnb.functional.quantize_4bit(weight, quant_type="nf4")
        return bnb.matmul_4bit(x, packed.t(), quant_state=state)

    def _config(self) -> Any:
        import torch
        from transformers import BitsAndBytesConfig

        return BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float16
        )

    def _layer(self, linear: Any) -> Any:
        import bitsandbytes as bnb
        import torch

        weight = linear.weight.data
        layer = bnb.nn.Linear4bit(
            linear.in_features, linear.out_features, linear.bias is not None,
            compute_dtype=torch.float16, compress_statistics=False, quant_type="nf4",
            device="meta",
        )  # fmt: skip
        quantized: Any = bnb.nn.Params4bit(
            weight, requires_grad=False, compress_statistics=False, quant_type="nf4",
            module=layer,
        )  # fmt: skip
        layer.weight = quantized.to(weight.device)  # quantized where it lies
        return layer

    def record(self) -> dict[str, Any] | None:
        return self._recorded(
            method="nf4", quant_type="nf4", compute_dtype="float16", double_quant=False,
            granularity=self.spec.granularity,
        )  # fmt: skip


class LlmInt8(Bitsandbytes):
    """LLM.int8(): int8 weights per row, input columns above the outlier threshold in
    float16 (threshold 0.0: the pure INT8 variant)."""

    layer_name = "Linear8bitLt"

    def __init__(self, spec: FormatSpec) -> None:
        super().__init__(spec)
        assert spec.llm_int8_threshold is not None  # its row always holds one
        self.threshold = spec.llm_int8_threshold

    def _tiny_op(self, bnb: Any, x: Any) -> Any:
        layer = bnb.nn.Linear8bitLt(
            64, 64, bias=False, has_fp16_weights=False, threshold=self.threshold
        )
        return layer.to(x.device)(x)

    def _config(self) -> Any:
        from transformers import BitsAndBytesConfig

        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=self.threshold)

    def _layer(self, linear: Any) -> Any:
        import bitsandbytes as bnb

        weight = linear.weight.data
        layer = bnb.nn.Linear8bitLt(
            linear.in_features, linear.out_features, linear.bias is not None,
            has_fp16_weights=False, threshold=self.threshold, device="meta",
        )  # fmt: skip
        quantized: Any = bnb.nn.Int8Params(
            weight.to("cpu"), requires_grad=False, has_fp16_weights=False
        )
        layer.weight = quantized.to(weight.device)  # quantized on its way from the CPU
        return layer

    def record(self) -> dict[str, Any] | None:
        return self._recorded(
            method="LLM.int8()", llm_int8_threshold=self.threshold, compute_dtype="float16",
            granularity=self.spec.granularity,
        )  # fmt: skip
