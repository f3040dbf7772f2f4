"""A synthetic model built directly in accelerator memory: no checkpoint on disk, and
never the whole model in host memory.

For models too large for the disk of the machine that measures them (a 70B model is
~138 GB at FP16; the 2-GPU H200 machine has 128 GB of disk). The architecture comes
from the preset's config on the meta device (no memory); a pure plan (placement.py)
puts each block (decoder layer, embeddings, norm, output layer) on a GPU within its
budget; then block by block, each tensor is allocated on its GPU and filled with
seeded random values, and the block is quantized there by the format's library
(Quantizer.quantize_block) before the next one is built. A quantized model therefore
never exists at 16 bits, beyond one block at a time.

Values: every tensor of two or more dimensions is drawn from N(0, initializer_range)
as transformers initialises Llama-family models (the embedding's padding row zeroed),
norms are ones, biases zeros. Each tensor has its own generator, seeded from the run's
seed and the tensor's name, and is drawn in float32 in chunks of rows fixed by its
shape alone: the same seed gives the same values whatever the format, the device index
or the order of building (on devices of one kind: a CPU and a GPU draw differently),
and the FP16 copy and each quantized copy hold the same weights before quantization
(rounded to the format's 16-bit dtype: float16, or bfloat16 for torchao's).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from ecocompute.errors import RunError
from ecocompute.formats.table import TORCH, FormatSpec
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.placement import Block, plan
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.llm.synthetic import SEED, build_config, preset_for

CHUNK_ELEMENTS = 2**22  # float32 values drawn at a time (16 MiB)
# A quantized weight's bytes: its bits, plus up to an eighth for scales (NF4: one float32
# absmax per 64 weights; torchao INT4: bfloat16 scale and zero per 128; INT8: per row).
SCALE_OVERHEAD = 0.125


def build(
    model_name: str,
    spec: FormatSpec,
    accelerator: Accelerator,
    seed: int = SEED,
) -> Any:
    """The model of synthetic:<preset> at `spec`, built on the accelerator's devices.
    Raises placement.DoesNotFit when it fits on no GPU(s) within their budgets, and
    RunError for a preset that cannot be built this way."""
    import torch

    model, blocks = skeleton(model_name, spec)
    sizes = [size(name, module, model, spec) for name, module in blocks]
    placed = plan(sizes, accelerator.budgets_bytes())
    quantizer = quantizer_for(spec)
    head = model.get_output_embeddings()
    std = float(model.config.initializer_range)
    cuda = accelerator.kind == "cuda"
    for name, module in blocks:
        # the plan's device index (the CPU stand-in's are all the CPU)
        device = torch.device("cuda", placed[name]) if cuda else torch.device("cpu")
        materialise(module, name, device, std, seed)
        quantizer.quantize_block(module, head)
    # Hooks that move activations between the GPUs a model spans (accelerate's, as
    # from_pretrained's device_map sets them); hf_device_map records the plan either way.
    if cuda and len(set(placed.values())) > 1:
        from accelerate import dispatch_model

        skip = getattr(model, "_skip_keys_device_placement", None)
        dispatch_model(model, device_map=dict(placed), skip_keys=skip)
    model.hf_device_map = dict(placed)
    return model.eval()


def skeleton(model_name: str, spec: FormatSpec) -> tuple[Any, list[tuple[str, Any]]]:
    """The preset's model on the meta device at the format's dtype (buffers, a few
    numbers such as RoPE frequencies, on the CPU), and its blocks in order."""
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    name, preset = preset_for(model_name)
    if preset.tie_word_embeddings:
        raise RunError(
            f"synthetic:{name} ties its embeddings to its output layer, which the in-memory "
            "builder does not place; nothing was loaded"
        )
    dtype = quantizer_for(spec).load_arguments()["dtype"]
    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(build_config(preset), dtype=dtype)
    return model, blocks_of(model)


def blocks_of(model: Any) -> list[tuple[str, Any]]:
    """(name, module) of each unit placed whole: a module the model says not to split
    (its decoder layers), else the outermost modules holding tensors of their own."""
    keep_whole = set(getattr(model, "_no_split_modules", None) or ())
    found: list[tuple[str, Any]] = []

    def visit(prefix: str, module: Any) -> None:
        own = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
        if type(module).__name__ in keep_whole or own:
            found.append((prefix, module))
            return
        for child, sub in module.named_children():
            visit(f"{prefix}.{child}" if prefix else child, sub)

    visit("", model)
    return found


def size(name: str, module: Any, model: Any, spec: FormatSpec) -> Block:
    """A block's bytes at the format, and what its build holds beyond them for a moment
    (its linear layers at 16 bits before they are quantized, one float32 chunk)."""
    import torch

    head = model.get_output_embeddings()
    linear = sum(
        m.weight.numel()
        for m in module.modules()
        if isinstance(m, torch.nn.Linear) and m is not head
    )
    tensors = [*module.parameters(), *module.buffers()]
    total = sum(t.numel() for t in tensors)
    largest = max((t.numel() for t in tensors), default=0)
    chunk_bytes = 4 * min(CHUNK_ELEMENTS, largest)
    if spec.library == TORCH or not linear:
        return Block(name, 2 * total, chunk_bytes)
    quantized = math.ceil(linear * spec.bits / 8 * (1 + SCALE_OVERHEAD))
    return Block(name, quantized + 2 * (total - linear), 2 * linear - quantized + chunk_bytes)


def tensor_seed(seed: int, name: str) -> int:
    """A tensor's own seed: the run's seed and the tensor's name, hashed (63 bits)."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def materialise(module: Any, prefix: str, device: Any, std: float, seed: int) -> None:
    """Every parameter of the block allocated on `device` with its seeded values (its
    meta tensor's dtype and shape); its buffers moved there."""
    import torch

    for name, meta in list(module.named_parameters()):
        path, _, attr = name.rpartition(".")
        owner = module.get_submodule(path)
        full = f"{prefix}.{name}" if prefix else name
        value = values(full, tuple(meta.shape), meta.dtype, device, std, seed)
        padding = getattr(owner, "padding_idx", None)
        if isinstance(owner, torch.nn.Embedding) and padding is not None:
            value[padding].zero_()
        owner._parameters[attr] = torch.nn.Parameter(value, requires_grad=False)
    for name, buffer in list(module.named_buffers()):
        path, _, attr = name.rpartition(".")
        module.get_submodule(path)._buffers[attr] = buffer.to(device)


def values(name: str, shape: Sequence[int], dtype: Any, device: Any, std: float, seed: int) -> Any:
    """One tensor's values: N(0, std) for a matrix, ones for a 1-D weight (a norm),
    zeros for a bias; drawn in float32 chunks of rows, then stored at `dtype`."""
    import torch

    out = torch.empty(tuple(shape), dtype=dtype, device=device)
    if len(shape) < 2:
        return out.fill_(1.0 if name.endswith("weight") else 0.0)
    rows = out.view(shape[0], -1)
    step = max(1, CHUNK_ELEMENTS // rows.shape[1])
    generator = torch.Generator(device=device).manual_seed(tensor_seed(seed, name))
    for start in range(0, rows.shape[0], step):
        count = min(step, rows.shape[0] - start)
        chunk = torch.empty((count, rows.shape[1]), dtype=torch.float32, device=device)
        rows[start : start + count].copy_(chunk.normal_(0.0, std, generator=generator))
    return out
