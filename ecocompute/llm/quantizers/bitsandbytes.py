"""bitsandbytes: NF4 (4-bit NormalFloat) and LLM.int8(), quantized by transformers'
BitsAndBytesConfig as the checkpoint loads; a model built in memory is quantized block
by block with the layers and parameters transformers' own integration makes
(transformers/integrations/bitsandbytes.py: Linear4bit with Params4bit, quantized where
it lies; Linear8bitLt with Int8Params, quantized on the way from the CPU, one tensor at a
time), with the settings of load_arguments()."""

from __future__ import annotations

from typing import Any

from ecocompute.core import packages
from ecocompute.core.precision import Precision
from ecocompute.errors import RunError, one_line
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.quantizers.base import Quantizer

# The bitsandbytes layer each format must have put in place of torch.nn.Linear.
_LAYER = {Precision.NF4: "Linear4bit", Precision.INT8: "Linear8bitLt"}


def stack_versions(accelerator: Accelerator) -> str:
    v = accelerator.versions()
    bnb = packages.installed_version("bitsandbytes") or "not installed"
    return f"torch {v.get('torch')}, CUDA {v.get('cuda')}, bitsandbytes {bnb}"


class Bitsandbytes(Quantizer):
    def preflight(self, accelerator: Accelerator, llm_int8_threshold: float) -> None:
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
            if precision is Precision.NF4:
                weight = torch.randn(64, 64, dtype=torch.float16, device=device)
                packed, state = bnb.functional.quantize_4bit(weight, quant_type="nf4")
                y = bnb.matmul_4bit(x, packed.t(), quant_state=state)
            else:
                layer = bnb.nn.Linear8bitLt(
                    64, 64, bias=False, has_fp16_weights=False, threshold=llm_int8_threshold
                ).to(device)
                y = layer(x)
            accelerator.synchronize()
            if not bool(torch.isfinite(y).all()):
                raise RuntimeError("non-finite result")
        except Exception as exc:  # any failure of the kernel is the preflight's answer
            raise RunError(
                f"bitsandbytes {precision} preflight failed on this GPU ({one_line(exc)}); "
                f"{stack_versions(accelerator)}. "
                "Its kernels may not support this torch/CUDA build; nothing was loaded."
            ) from None

    def load_arguments(self, llm_int8_threshold: float) -> dict[str, Any]:
        import torch
        from transformers import BitsAndBytesConfig

        if self.spec.precision is Precision.NF4:
            config = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=torch.float16,
            )
        else:
            config = BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=llm_int8_threshold)
        return {"dtype": torch.float16, "quantization_config": config}

    def quantize_block(self, block: Any, head: Any, llm_int8_threshold: float) -> None:
        """Each torch.nn.Linear of the block but the output layer becomes this format's
        bitsandbytes layer, holding the block's own weights quantized."""
        import torch

        for name, module in list(block.named_modules()):
            if name and type(module) is torch.nn.Linear and module is not head:
                block.set_submodule(name, self._layer(module, llm_int8_threshold))

    def _layer(self, linear: Any, llm_int8_threshold: float) -> Any:
        import bitsandbytes as bnb
        import torch

        weight = linear.weight.data
        shape = (linear.in_features, linear.out_features, linear.bias is not None)
        layer: Any
        quantized: Any
        if self.spec.precision is Precision.NF4:
            layer = bnb.nn.Linear4bit(
                *shape, compute_dtype=torch.float16, compress_statistics=False,
                quant_type="nf4", device="meta",
            )  # fmt: skip
            quantized = bnb.nn.Params4bit(
                weight, requires_grad=False, compress_statistics=False, quant_type="nf4",
                module=layer,
            )  # fmt: skip
            layer.weight = quantized.to(weight.device)  # quantized where it lies
        else:
            layer = bnb.nn.Linear8bitLt(
                *shape, has_fp16_weights=False, threshold=llm_int8_threshold, device="meta"
            )
            quantized = bnb.nn.Int8Params(
                weight.to("cpu"), requires_grad=False, has_fp16_weights=False
            )
            layer.weight = quantized.to(weight.device)  # quantized on its way from the CPU
        if linear.bias is not None:
            layer.bias = torch.nn.Parameter(linear.bias.data, requires_grad=False)
        return layer

    def check(self, model: Any) -> None:
        precision = self.spec.precision
        layer = _LAYER[precision]
        if not any(type(m).__name__ == layer for m in model.modules()):
            raise RunError(
                f"the {precision} load returned a model without bitsandbytes {layer} layers, "
                f"so it is not {precision}; refusing to report its energy as {precision}. "
                "Check the bitsandbytes and transformers versions; nothing was written."
            )

    def record(self, llm_int8_threshold: float) -> dict[str, Any] | None:
        version = packages.installed_version("bitsandbytes")
        if self.spec.precision is Precision.NF4:
            return {
                "library": "bitsandbytes",
                "library_version": version,
                "method": "nf4",
                "quant_type": "nf4",
                "compute_dtype": "float16",
                "double_quant": False,
                "granularity": self.spec.granularity,
            }
        return {
            "library": "bitsandbytes",
            "library_version": version,
            "method": "LLM.int8()",
            "llm_int8_threshold": llm_int8_threshold,
            "compute_dtype": "float16",
            "granularity": self.spec.granularity,
        }
