"""torchao: INT4 weight-only (groups of 128, tinygemm tile packing, bfloat16 compute),
FP8 (float8 e4m3 weights per row, activations quantized to float8 per row at run time)
and INT8 weight-only (per row). The checkpoint loads in bfloat16, then torchao's
quantize_() replaces each linear layer's weight in memory.

The output layer (lm_head) stays in bfloat16, as bitsandbytes keeps it in float16, so
that the formats compare the same layers. A layer whose shape the kernel refuses
(INT4 needs in_features to be a multiple of the group size) is left in bfloat16 by
torchao; the record counts such layers and the report says so. A model with no layer
quantized is refused.

The library is reached through `library()` only, so tests can hand in a stand-in.
"""

from __future__ import annotations

from typing import Any

from ecocompute.core import packages
from ecocompute.core.precision import Precision
from ecocompute.errors import one_line
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.quantizers.base import Quantizer

GROUP_SIZE = 128
# What a report says of each format's torchao config, beside what its table row says.
_RECORDED: dict[Precision, dict[str, object]] = {
    Precision.INT4: {
        "config": "Int4WeightOnlyConfig",
        "group_size": GROUP_SIZE,
        "packing": "tile_packed_to_4d (tinygemm)",
    },
    Precision.FP8: {
        "config": "Float8DynamicActivationFloat8WeightConfig",
        "weight_dtype": "float8_e4m3fn",
        "activation_dtype": "float8_e4m3fn (dynamic, per row)",
    },
    Precision.INT8: {"config": "Int8WeightOnlyConfig"},
}


def _version_tuple(text: str) -> tuple[int, ...]:
    pieces = text.split("+")[0].split(".")[:3]
    return tuple(int("".join(c for c in piece if c.isdigit()) or 0) for piece in pieces)


class Torchao(Quantizer):
    @staticmethod
    def library() -> Any:
        import torchao.quantization

        return torchao.quantization

    # -- before loading ------------------------------------------------------------
    def preflight(self, accelerator: Accelerator) -> None:
        spec = self.spec
        version = packages.installed_version("torchao")
        if version is None:
            raise self.refuse("torchao is not installed (pip install torchao, or the [gpu] extra)")
        if spec.min_library_version and _version_tuple(version) < _version_tuple(
            spec.min_library_version
        ):
            raise self.refuse(f"torchao {version} is older than {spec.min_library_version}")
        if spec.needs_cuda and accelerator.kind != "cuda":
            raise self.refuse(f"{spec.needs}; this run has no CUDA GPU")
        capability = accelerator.compute_capability()
        if spec.min_compute_capability is not None and (
            capability is None or capability < spec.min_compute_capability
        ):
            need = ".".join(map(str, spec.min_compute_capability))
            have = "unknown" if capability is None else ".".join(map(str, capability))
            raise self.refuse(f"it needs compute capability {need} or newer, this GPU has {have}")
        try:
            lib = self.library()
            import torch

            layer = torch.nn.Sequential(torch.nn.Linear(256, 256, bias=False))
            layer = layer.to(device=accelerator.input_device(), dtype=torch.bfloat16)
            lib.quantize_(layer, self.config(lib))
            x = torch.randn(4, 256, dtype=torch.bfloat16, device=accelerator.input_device())
            y = layer(x)
            accelerator.synchronize()
            if not bool(torch.isfinite(y).all()):
                raise RuntimeError("non-finite result")
        except Exception as exc:  # any failure of the library is the preflight's answer
            raise self.refuse(f"torchao {version} preflight failed ({one_line(exc)})") from None

    def config(self, lib: Any) -> Any:
        """torchao's config object for this format."""
        precision = self.spec.precision
        if precision is Precision.INT4:
            return lib.Int4WeightOnlyConfig(
                group_size=GROUP_SIZE,
                int4_packing_format="tile_packed_to_4d",
                set_inductor_config=False,
            )
        if precision is Precision.FP8:
            return lib.Float8DynamicActivationFloat8WeightConfig(
                granularity=lib.PerRow(), set_inductor_config=False
            )
        if precision is Precision.INT8:
            return lib.Int8WeightOnlyConfig(set_inductor_config=False)
        raise KeyError(precision)  # the table offers no other torchao format

    def load_arguments(self) -> dict[str, object]:
        import torch

        return {"dtype": torch.bfloat16, "quantization_config": None}

    # -- after loading -----------------------------------------------------------------
    def finish(self, model: Any) -> dict[str, Any]:
        """quantize_() every linear layer but the output layer; count what it did."""
        self.quantize_block(model, model.get_output_embeddings())
        return self.tally(model)

    def quantize_block(self, block: Any, head: Any) -> None:
        """quantize_() the block's linear layers but the output layer, in place."""
        lib = self.library()
        try:
            lib.quantize_(block, self.config(lib), filter_fn=lambda m, _fqn: _is_linear(m, head))
        except Exception as exc:
            raise self.refuse(f"torchao quantize_ failed ({one_line(exc)})") from None

    def tally(self, model: Any) -> dict[str, Any]:
        """Layers quantized and skipped (refusing a model with none quantized)."""
        linears = _linears(model, model.get_output_embeddings())
        skipped = [(name, tuple(m.weight.shape)) for name, m in linears if not _quantized(m)]
        done = len(linears) - len(skipped)
        if done == 0:
            raise self.refuse(
                f"torchao quantized none of the model's {len(linears)} linear layers "
                f"(shapes it refused, e.g. {skipped[0][1] if skipped else 'none'})"
            )
        record: dict[str, Any] = {"layers_quantized": done, "layers_linear": len(linears)}
        if skipped:
            shapes = sorted({shape for _, shape in skipped})
            grouped = self.spec.precision is Precision.INT4
            record["layers_skipped_note"] = (
                f"{len(skipped)} of {len(linears)} linear layers kept in bfloat16: the kernel "
                f"refused their shapes (out, in) {', '.join(map(str, shapes[:4]))}"
                + (f" (in_features not a multiple of {GROUP_SIZE})" if grouped else "")
            )
        return record

    def check(self, model: Any) -> None:
        head = model.get_output_embeddings()
        if not any(_quantized(m) for _, m in _linears(model, head)):
            raise self.refuse("the model holds no torchao-quantized layer after quantize_()")

    def record(self) -> dict[str, Any] | None:
        return {
            "library": "torchao",
            "library_version": packages.installed_version("torchao"),
            "method": self.spec.method,
            "compute_dtype": self.spec.compute_dtype,
            "granularity": self.spec.granularity,
            "output_layer": "kept in bfloat16 (as bitsandbytes keeps it in float16)",
            **_RECORDED[self.spec.precision],
        }


def _is_linear(module: Any, head: Any) -> bool:
    import torch

    return isinstance(module, torch.nn.Linear) and module is not head


def _linears(model: Any, head: Any) -> list[tuple[str, Any]]:
    return [(name, m) for name, m in model.named_modules() if _is_linear(m, head)]


def _quantized(module: Any) -> bool:
    """A torchao tensor subclass in place of the plain weight."""
    import torch

    weight = module.weight
    return type(weight) not in (torch.nn.Parameter, torch.Tensor)
