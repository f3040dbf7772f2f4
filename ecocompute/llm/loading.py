"""Loading the same checkpoint at FP16, NF4 (bitsandbytes 4-bit) and INT8 (LLM.int8()).

torch, transformers and bitsandbytes are imported inside the functions: the published
path never loads them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute import packages
from ecocompute.errors import RunError
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.gguf_checkpoint import origin_note
from ecocompute.llm.library_messages import library_messages_to_debug
from ecocompute.llm.memory import out_of_memory_named
from ecocompute.llm.synthetic import PRESETS, WEIGHTS_NOTE, is_synthetic, materialise, preset_for
from ecocompute.precision import Precision

log = logging.getLogger(__name__)

PROMPT_TEXT = (
    "Write a short, practical explanation of how a city can reduce the energy its "
    "public transport uses, with three concrete examples."
)
SYNTHETIC_PROMPT_TOKENS = 12  # the published protocol's prompt length on random models


@dataclass(frozen=True)
class Checkpoint:
    """Where from_pretrained loads from, and what kind of weights it holds."""

    model_name: str
    location: str  # hub id or folder
    weights: str  # "pretrained" | "synthetic"
    weights_note: str | None


@dataclass
class LoadedModel:
    precision: Precision
    model: Any
    devices: tuple[int, ...]  # accelerator indices holding its weights
    footprint_mib: float


def resolve_checkpoint(model_name: str, accelerator: Accelerator) -> Checkpoint:
    if is_synthetic(model_name):
        try:
            preset_for(model_name)
        except KeyError:
            raise RunError(
                f"unknown synthetic preset in '{model_name}'; presets: "
                + ", ".join(f"synthetic:{p}" for p in PRESETS)
            ) from None
        init_device = "cuda:0" if accelerator.kind == "cuda" else "cpu"
        folder = materialise(model_name, init_device)
        return Checkpoint(model_name, str(folder), "synthetic", WEIGHTS_NOTE)
    location = str(Path(model_name).expanduser()) if model_name.startswith("~") else model_name
    # a folder made from a GGUF file says so (package, file, sha256, round trip)
    return Checkpoint(model_name, location, "pretrained", origin_note(location))


def quantization_config(precision: Precision, llm_int8_threshold: float) -> Any:
    if not precision.quantized:
        return None
    import torch
    from transformers import BitsAndBytesConfig

    if precision is Precision.NF4:
        return BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch.float16,
        )
    return BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=llm_int8_threshold)


def quantization_record(precision: Precision, llm_int8_threshold: float) -> dict[str, Any] | None:
    """What the report says about how the weights were quantized."""
    if precision is Precision.NF4:
        return {
            "library": "bitsandbytes",
            "quant_type": "nf4",
            "compute_dtype": "float16",
            "double_quant": False,
        }
    if precision is Precision.INT8:
        return {
            "library": "bitsandbytes",
            "method": "LLM.int8()",
            "llm_int8_threshold": llm_int8_threshold,
        }
    return None


def _looks_like_a_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name.count("/") > 1 or "\\" in name


def _not_found(checkpoint: Checkpoint, exc: Exception) -> RunError:
    name = checkpoint.model_name
    first_line = str(exc).splitlines()[0][:200] if str(exc) else ""
    if _looks_like_a_path(name) and not Path(name).expanduser().is_dir():
        what = f"model '{name}' could not be loaded: no such folder (and not a hub id)"
    else:
        what = (
            f"model '{name}' could not be loaded: not a local folder, and the Hugging Face "
            f"hub has no such id or cannot be reached ({type(exc).__name__}: {first_line})"
        )
    return RunError(
        f"{what}. Pass a local checkpoint folder, or a synthetic:<preset> (e.g. "
        "synthetic:tinyllama-1.1b) that needs no download; nothing was written."
    )


def load(
    checkpoint: Checkpoint,
    precision: Precision,
    accelerator: Accelerator,
    llm_int8_threshold: float,
) -> LoadedModel:
    """Load one format. Raises RunError on a missing model or out-of-memory."""
    import torch
    from transformers import AutoModelForCausalLM

    is_local = Path(checkpoint.location).is_dir()
    try:
        with (
            library_messages_to_debug(),  # one voice: our error, not accelerate's warning too
            out_of_memory_named(checkpoint.model_name, precision, "loading", accelerator),
        ):
            model = AutoModelForCausalLM.from_pretrained(
                checkpoint.location,
                dtype=torch.float16,
                **accelerator.placement(),
                quantization_config=quantization_config(precision, llm_int8_threshold),
                trust_remote_code=False,
                local_files_only=is_local,
            )
    except OSError as exc:
        raise _not_found(checkpoint, exc) from None
    except ValueError as exc:
        # transformers refuses a placement that spills onto the CPU or disk (for example
        # a quantized model, or disk offload without a folder).
        if any(word in str(exc).lower() for word in ("offload", "cpu or the disk", "dispatch")):
            raise does_not_fit(checkpoint.model_name, precision, accelerator, str(exc)) from None
        raise
    offloaded = accelerator.offloaded(model)
    if offloaded:
        del model
        accelerator.release()
        raise does_not_fit(
            checkpoint.model_name,
            precision,
            accelerator,
            f"{len(offloaded)} module(s) placed off the GPU(s), e.g. {offloaded[0]}",
        )
    check_quantized(model, precision)
    model.eval()
    footprint = float(model.get_memory_footprint()) / 2**20
    return LoadedModel(precision, model, accelerator.occupied(model), footprint)


# The bitsandbytes layer each format must have put in place of torch.nn.Linear.
_QUANTIZED_LAYER = {Precision.NF4: "Linear4bit", Precision.INT8: "Linear8bitLt"}


def check_quantized(model: Any, precision: Precision) -> None:
    """Refuse a model that is not in the format it is labelled with: its numbers would
    be reported as that format's. Raises RunError."""
    layer = _QUANTIZED_LAYER.get(precision)
    if layer is None:
        return
    if not any(type(m).__name__ == layer for m in model.modules()):
        raise RunError(
            f"the {precision} load returned a model without bitsandbytes {layer} layers, so "
            f"it is not {precision}; refusing to report its energy as {precision}. Check the "
            "bitsandbytes and transformers versions; nothing was written."
        )


def does_not_fit(
    model_name: str, precision: Precision, accelerator: Accelerator, detail: str
) -> RunError:
    """The error for a model that would only load partly on the GPUs: what spills onto
    the CPU or disk is not GPU-package energy, so such a run is refused."""
    cap = accelerator.max_memory_gib
    within = "" if cap is None else f" within --max_gpu_memory_gib {cap:g} per GPU"
    first_line = detail.splitlines()[0][:160] if detail else ""
    return RunError(
        f"{model_name} at {precision} does not fit on this process's GPU(s){within} "
        f"({first_line}). Offloading to the CPU or disk is not measured: energy spent "
        "there is not GPU-package energy. Use more GPUs (CUDA_VISIBLE_DEVICES), a "
        "larger --max_gpu_memory_gib or a smaller model; no report was written."
    )


def count_parameters(model: Any) -> int:
    """Parameters of an unquantized model (shared tensors counted once)."""
    return sum(p.numel() for p in model.parameters())


def prompt_ids(
    checkpoint: Checkpoint, batch_size: int, accelerator: Accelerator
) -> tuple[Any, Any]:
    """(input_ids, attention_mask) on the input device; a fixed prompt for each run."""
    import torch

    if checkpoint.weights == "synthetic":
        _, preset = preset_for(checkpoint.model_name)
        generator = torch.Generator().manual_seed(1234)
        ids = torch.randint(3, preset.vocab_size, (1, SYNTHETIC_PROMPT_TOKENS), generator=generator)
    else:
        ids = load_tokenizer(checkpoint)(PROMPT_TEXT, return_tensors="pt")["input_ids"]
    ids = ids.repeat(batch_size, 1).to(accelerator.input_device())
    return ids, torch.ones_like(ids)


def load_tokenizer(checkpoint: Checkpoint) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(checkpoint.location, trust_remote_code=False)
    except OSError as exc:
        raise _not_found(checkpoint, exc) from None


def stack_versions(accelerator: Accelerator) -> str:
    v = accelerator.versions()
    bnb = packages.installed_version("bitsandbytes") or "not installed"
    return f"torch {v.get('torch')}, CUDA {v.get('cuda')}, bitsandbytes {bnb}"


def preflight(precision: Precision, accelerator: Accelerator, llm_int8_threshold: float) -> None:
    """Run a tiny bitsandbytes op of the requested kind on this GPU before loading anything
    big (and before any download). Raises RunError naming the versions."""
    if not precision.quantized:
        return
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
        first_line = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise RunError(
            f"bitsandbytes {precision} preflight failed on this GPU ({type(exc).__name__}: "
            f"{first_line}); {stack_versions(accelerator)}. "
            "Its kernels may not support this torch/CUDA build; nothing was loaded."
        ) from None


class ModelBackend:
    """The model side of a measurement as one object, so a test can replace a piece
    (e.g. bitsandbytes, which has no CPU kernels here) without touching the protocol."""

    def preflight(self, precision: Precision, accelerator: Accelerator, threshold: float) -> None:
        preflight(precision, accelerator, threshold)

    def checkpoint(self, model_name: str, accelerator: Accelerator) -> Checkpoint:
        return resolve_checkpoint(model_name, accelerator)

    def load(
        self,
        checkpoint: Checkpoint,
        precision: Precision,
        accelerator: Accelerator,
        threshold: float,
    ) -> LoadedModel:
        return load(checkpoint, precision, accelerator, threshold)

    def prompt(
        self, checkpoint: Checkpoint, batch_size: int, accelerator: Accelerator
    ) -> tuple[Any, Any]:
        return prompt_ids(checkpoint, batch_size, accelerator)

    def tokenizer(self, checkpoint: Checkpoint) -> Any:
        return load_tokenizer(checkpoint)
