"""synthetic:<preset> models: real architectures with random weights, no download.

The architecture numbers are those of each model's public config.json on the Hugging
Face hub (hidden size, intermediate size, layers, heads, key-value heads, vocabulary,
context, RoPE base, norm epsilon, tied embeddings). A preset is built from a config with
random weights, saved with save_pretrained, and loaded back through from_pretrained like
any checkpoint, so the FP16/NF4/INT8 loading path is the one real models take.

The 70B presets are larger than the disk of the machine that measures them (~138 GB at
FP16 against the 2-GPU H200 machine's 128 GB): they are built directly in GPU memory,
seeded, at each format, and never saved (in_memory; llm/in_memory.py). Their special
token ids are not the checkpoints' (the prompt is random ids, and the end-of-sequence
token is suppressed until the last new token either way).

Random weights have no activation outliers, so LLM.int8()'s outlier path (threshold
6.0) is barely exercised: synthetic weights understate the INT8 penalty of real
checkpoints. Reports say so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX = "synthetic:"
SEED = 0

WEIGHTS_NOTE = (
    "synthetic: random weights in the model's public architecture (no download). Energy "
    "per token depends on the architecture, not the weights' values, but random weights "
    "have no activation outliers, so LLM.int8()'s outlier path is barely exercised and the "
    "INT8 penalty of real checkpoints is understated; perplexity is meaningless."
)


IN_MEMORY_NOTE = (
    f"synthetic, built in memory: seeded random weights (seed {SEED}, one generator per "
    "tensor) in the model's public architecture, drawn directly on the GPU(s) at each "
    "format's dtype and quantized there block by block; never saved to disk, never whole "
    "in host memory. Energy per token depends on the architecture, not the weights' "
    "values, but random weights have no activation outliers (LLM.int8()'s outlier path is "
    "barely exercised) and perplexity is meaningless."
)


@dataclass(frozen=True)
class Preset:
    family: str  # transformers model_type
    source: str  # the public checkpoint whose config.json gave these numbers
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    max_position_embeddings: int
    rope_theta: float
    rms_norm_eps: float
    tie_word_embeddings: bool
    sliding_window: int | None = None
    in_memory: bool = False  # built on the GPU(s) per format, never saved (in_memory.py)


PRESETS: dict[str, Preset] = {
    "smollm2-135m": Preset("llama", "HuggingFaceTB/SmolLM2-135M",
                           576, 1536, 30, 9, 3, 49152, 8192, 100000.0, 1e-5, True),
    "smollm2-360m": Preset("llama", "HuggingFaceTB/SmolLM2-360M",
                           960, 2560, 32, 15, 5, 49152, 8192, 100000.0, 1e-5, True),
    "tinyllama-1.1b": Preset("llama", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
                             2048, 5632, 22, 32, 4, 32000, 2048, 10000.0, 1e-5, False),
    "qwen2.5-0.5b": Preset("qwen2", "Qwen/Qwen2.5-0.5B",
                           896, 4864, 24, 14, 2, 151936, 32768, 1000000.0, 1e-6, True),
    "qwen2.5-1.5b": Preset("qwen2", "Qwen/Qwen2.5-1.5B",
                           1536, 8960, 28, 12, 2, 151936, 32768, 1000000.0, 1e-6, True),
    "qwen2.5-3b": Preset("qwen2", "Qwen/Qwen2.5-3B",
                         2048, 11008, 36, 16, 2, 151936, 32768, 1000000.0, 1e-6, True),
    "llama-2-7b": Preset("llama", "meta-llama/Llama-2-7b-hf",
                         4096, 11008, 32, 32, 32, 32000, 4096, 10000.0, 1e-5, False),
    "mistral-7b": Preset("mistral", "mistralai/Mistral-7B-v0.1",
                         4096, 14336, 32, 32, 8, 32000, 32768, 10000.0, 1e-5, False, 4096),
    "llama-2-13b": Preset("llama", "meta-llama/Llama-2-13b-hf",
                          5120, 13824, 40, 40, 40, 32000, 4096, 10000.0, 1e-5, False),
    # Built in memory: 80 layers, grouped-query attention (8 key-value heads); rope_theta
    # is absent from Llama-2-70b-hf's config.json (transformers' default, 10000).
    "llama-2-70b": Preset("llama", "meta-llama/Llama-2-70b-hf",
                          8192, 28672, 80, 64, 8, 32000, 4096, 10000.0, 1e-5, False,
                          in_memory=True),
    "llama-3-70b": Preset("llama", "meta-llama/Meta-Llama-3-70B",
                          8192, 28672, 80, 64, 8, 128256, 8192, 500000.0, 1e-5, False,
                          in_memory=True),
    # Not a real model: a few hundred thousand parameters, for tests and smoke runs.
    "tiny-test": Preset("llama", "none (test architecture)",
                        64, 128, 2, 4, 2, 512, 4096, 10000.0, 1e-5, False),
    # The same idea built in memory, with layers that outweigh the embeddings as a large
    # model's do (so that a quantized copy is a third of the FP16 one).
    "tiny-in-memory": Preset("llama", "none (test architecture, built in memory)",
                             64, 256, 4, 4, 2, 128, 4096, 10000.0, 1e-5, False,
                             in_memory=True),
}  # fmt: skip


def is_synthetic(model_name: str) -> bool:
    return model_name.startswith(PREFIX)


def preset_for(model_name: str) -> tuple[str, Preset]:
    """The preset named by synthetic:<preset>. Raises KeyError with the known names."""
    name = model_name[len(PREFIX) :].strip().lower()
    if name not in PRESETS:
        raise KeyError(name)
    return name, PRESETS[name]


def build_config(preset: Preset) -> Any:
    from transformers import AutoConfig

    extra: dict[str, Any] = {}
    if preset.sliding_window is not None:
        extra["sliding_window"] = preset.sliding_window
    return AutoConfig.for_model(
        preset.family,
        hidden_size=preset.hidden_size,
        intermediate_size=preset.intermediate_size,
        num_hidden_layers=preset.num_hidden_layers,
        num_attention_heads=preset.num_attention_heads,
        num_key_value_heads=preset.num_key_value_heads,
        vocab_size=preset.vocab_size,
        max_position_embeddings=preset.max_position_embeddings,
        rope_theta=preset.rope_theta,
        rms_norm_eps=preset.rms_norm_eps,
        tie_word_embeddings=preset.tie_word_embeddings,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        **extra,
    )


def tool_cache_root() -> Path:
    """The tool's cache folder: $ECOCOMPUTE_CACHE, else ~/.cache/ecocompute (or under
    $XDG_CACHE_HOME); never the working directory."""
    env = os.environ.get("ECOCOMPUTE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base if env else base / "ecocompute"


def cache_root() -> Path:
    """Where synthetic checkpoints are kept."""
    return tool_cache_root() / "synthetic"


def materialise(model_name: str, init_device: str) -> Path:
    """A saved checkpoint folder for synthetic:<preset>, built once and reused.

    Weights are initialised on init_device (a GPU makes billions of parameters quick),
    seeded, in float16, then saved with save_pretrained.
    """
    import torch

    from ecocompute.llm.library_messages import library_messages_to_debug

    with library_messages_to_debug():  # torchao logs while transformers imports it
        import transformers
        from transformers import AutoModelForCausalLM

    name, preset = preset_for(model_name)
    folder = cache_root() / f"{name}-seed{SEED}-transformers{transformers.__version__}"
    if (folder / "config.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        torch.manual_seed(SEED)
        with library_messages_to_debug(), torch.device(init_device):
            model = AutoModelForCausalLM.from_config(build_config(preset), dtype=torch.float16)
            model.save_pretrained(staging)
        del model
        try:
            os.replace(staging, folder)
        except OSError:
            if not (folder / "config.json").is_file():  # not a concurrent builder's result
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return folder
