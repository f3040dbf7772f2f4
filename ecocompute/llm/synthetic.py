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
from dataclasses import dataclass, fields
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


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One architecture, named as transformers' config names each number (and built
    from exactly these; defaults: Llama-2's RoPE base and norm epsilon, untied)."""

    source: str  # the public checkpoint whose config.json gave these numbers
    family: str = "llama"  # transformers model_type
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = False
    sliding_window: int | None = None
    in_memory: bool = False  # built on the GPU(s) per format, never saved (in_memory.py)

    def architecture(self) -> dict[str, object]:
        """The config's numbers (sliding_window only where the model has one)."""
        leave_out = {"source", "family", "in_memory"} | (
            {"sliding_window"} if self.sliding_window is None else set()
        )
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in leave_out}


PRESETS: dict[str, Preset] = {
    "smollm2-135m": Preset(source="HuggingFaceTB/SmolLM2-135M", hidden_size=576,
        intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
        vocab_size=49152, max_position_embeddings=8192, rope_theta=1e5, tie_word_embeddings=True),
    "smollm2-360m": Preset(source="HuggingFaceTB/SmolLM2-360M", hidden_size=960,
        intermediate_size=2560, num_hidden_layers=32, num_attention_heads=15, num_key_value_heads=5,
        vocab_size=49152, max_position_embeddings=8192, rope_theta=1e5, tie_word_embeddings=True),
    "tinyllama-1.1b": Preset(source="TinyLlama/TinyLlama-1.1B-Chat-v1.0", hidden_size=2048,
        intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
        vocab_size=32000, max_position_embeddings=2048),
    "qwen2.5-0.5b": Preset(source="Qwen/Qwen2.5-0.5B", family="qwen2", hidden_size=896,
        intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
        tie_word_embeddings=True),
    "qwen2.5-1.5b": Preset(source="Qwen/Qwen2.5-1.5B", family="qwen2", hidden_size=1536,
        intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
        vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
        tie_word_embeddings=True),
    "qwen2.5-3b": Preset(source="Qwen/Qwen2.5-3B", family="qwen2", hidden_size=2048,
        intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
        rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True),
    "llama-2-7b": Preset(source="meta-llama/Llama-2-7b-hf", hidden_size=4096,
        intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096),
    "mistral-7b": Preset(source="mistralai/Mistral-7B-v0.1", family="mistral", hidden_size=4096,
        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768,
        sliding_window=4096),
    "llama-2-13b": Preset(source="meta-llama/Llama-2-13b-hf", hidden_size=5120,
        intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40,
        num_key_value_heads=40, vocab_size=32000, max_position_embeddings=4096),
    # Built in memory: 80 layers, grouped-query attention (8 key-value heads); rope_theta
    # is absent from Llama-2-70b-hf's config.json (transformers' default, 10000).
    "llama-2-70b": Preset(source="meta-llama/Llama-2-70b-hf", hidden_size=8192,
        intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096, in_memory=True),
    "llama-3-70b": Preset(source="meta-llama/Meta-Llama-3-70B", hidden_size=8192,
        intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=5e5,
        in_memory=True),
    # Not a real model: a few hundred thousand parameters, for tests and smoke runs.
    "tiny-test": Preset(source="none (test architecture)", hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
        max_position_embeddings=4096),
    # The same idea built in memory, with layers that outweigh the embeddings as a large
    # model's do (so that a quantized copy is a third of the FP16 one).
    "tiny-in-memory": Preset(source="none (test architecture, built in memory)", hidden_size=64,
        intermediate_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=128, max_position_embeddings=4096, in_memory=True),
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

    return AutoConfig.for_model(
        preset.family, **preset.architecture(), bos_token_id=1, eos_token_id=2, pad_token_id=0
    )


def tool_cache_root() -> Path:
    """The tool's cache folder: $ECOCOMPUTE_CACHE, else ~/.cache/ecocompute (or under
    $XDG_CACHE_HOME); never the working directory."""
    env = os.environ.get("ECOCOMPUTE_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base if env else base / "ecocompute"


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
    version = transformers.__version__
    folder = tool_cache_root() / "synthetic" / f"{name}-seed{SEED}-transformers{version}"
    if (folder / "config.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        # the caller's random state is theirs (api.py): seed a fork of it, not it
        cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
        with torch.random.fork_rng(devices=cuda), library_messages_to_debug():
            torch.manual_seed(SEED)
            with torch.device(init_device):
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
