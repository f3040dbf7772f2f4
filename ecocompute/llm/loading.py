"""Loading the same checkpoint at FP16 and at each quantized format (each library's part
is one module of llm/quantizers/).

torch, transformers and the quantization libraries are imported inside the functions:
the published path never loads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.core.precision import Precision
from ecocompute.errors import RunError, one_line
from ecocompute.formats.table import FP16_SPEC, FormatSpec, spec_for
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.gguf_checkpoint import origin_note
from ecocompute.llm.library_messages import library_messages_to_debug
from ecocompute.llm.memory import out_of_memory_named
from ecocompute.llm.placement import DoesNotFit
from ecocompute.llm.prompt import PROMPT_TEXT, SYNTHETIC_PROMPT_TOKENS, corpus_ids, random_ids
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.llm.quantizers.base import Quantizer
from ecocompute.llm.synthetic import (
    IN_MEMORY_NOTE,
    PRESETS,
    WEIGHTS_NOTE,
    is_synthetic,
    materialise,
    preset_for,
)


@dataclass(frozen=True)
class Checkpoint:
    """Where from_pretrained loads from, and what kind of weights it holds."""

    model_name: str
    location: str  # hub id or folder
    weights: str  # "pretrained" | "synthetic"
    weights_note: str | None
    in_memory: bool = False  # built on the GPU(s) for each format, never on disk


@dataclass
class LoadedModel:
    precision: Precision
    model: Any
    devices: tuple[int, ...]  # accelerator indices holding its weights
    footprint_mib: float  # its parameters and buffers as stored (weight_bytes)
    spec: FormatSpec = FP16_SPEC
    quantization: JsonObject | None = None  # what the report says of its format
    reused: bool = False  # already resident from an earlier session (a sweep's point)


def resolve_checkpoint(model_name: str, accelerator: Accelerator) -> Checkpoint:
    if is_synthetic(model_name):
        try:
            _, preset = preset_for(model_name)
        except KeyError:
            raise RunError(
                f"unknown synthetic preset in '{model_name}'; presets: "
                + ", ".join(f"synthetic:{p}" for p in PRESETS)
            ) from None
        if preset.in_memory:
            return Checkpoint(model_name, f"memory:{model_name}", "synthetic", IN_MEMORY_NOTE, True)
        init_device = "cuda:0" if accelerator.kind == "cuda" else "cpu"
        folder = materialise(model_name, init_device)
        return Checkpoint(model_name, str(folder), "synthetic", WEIGHTS_NOTE)
    # a folder made from a GGUF file says so (package, file, sha256, round trip)
    return Checkpoint(model_name, model_name, "pretrained", origin_note(model_name))


def _not_found(checkpoint: Checkpoint, exc: Exception) -> RunError:
    name = checkpoint.model_name
    first_line = str(exc).splitlines()[0][:200] if str(exc) else ""
    path_like = name.startswith(("/", "./", "../")) or name.count("/") > 1 or "\\" in name
    if path_like and not Path(name).is_dir():
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
    checkpoint: Checkpoint, spec: FormatSpec | Precision, accelerator: Accelerator
) -> LoadedModel:
    """Load one format (a Precision: its default library's, at its row's settings):
    from_pretrained, then the library's in-memory step where it has one; or, for a
    preset built in memory, build it on the GPU(s) at the format. Raises RunError on a
    missing model, out-of-memory, a model that does not fit or a format refused."""
    if not isinstance(spec, FormatSpec):
        spec = spec_for(spec)
    quantizer = quantizer_for(spec)
    precision = spec.precision
    if checkpoint.in_memory:
        model, done = _built(checkpoint, spec, quantizer, accelerator)
    else:
        model, done = _loaded(checkpoint, quantizer, accelerator)
    quantizer.check(model)
    model.eval()
    record = quantizer.record()
    return LoadedModel(
        precision,
        model,
        accelerator.occupied(model),
        weight_bytes(model) / 2**20,
        spec=spec,
        quantization=None if record is None else {**record, **done},
    )


def _built(
    checkpoint: Checkpoint,
    spec: FormatSpec,
    quantizer: Quantizer,
    accelerator: Accelerator,
) -> tuple[Any, JsonObject]:
    """A synthetic model built in GPU memory (llm/in_memory.py), quantized as it is built."""
    from ecocompute.llm.in_memory import build

    name, precision = checkpoint.model_name, spec.precision
    try:
        with (
            library_messages_to_debug(),
            out_of_memory_named(name, precision, "building", accelerator),
        ):
            model = build(name, spec, accelerator)
            return model, quantizer.tally(model)
    except DoesNotFit as exc:
        accelerator.release()
        raise does_not_fit(name, precision, accelerator, str(exc)) from None


def _loaded(
    checkpoint: Checkpoint,
    quantizer: Quantizer,
    accelerator: Accelerator,
) -> tuple[Any, JsonObject]:
    """from_pretrained, then the library's in-memory step where it has one."""
    from transformers import AutoModelForCausalLM

    precision = quantizer.spec.precision
    is_local = Path(checkpoint.location).is_dir()
    try:
        with (
            library_messages_to_debug(),  # one voice: our error, not accelerate's warning too
            out_of_memory_named(checkpoint.model_name, precision, "loading", accelerator),
        ):
            model = AutoModelForCausalLM.from_pretrained(
                checkpoint.location,
                **quantizer.load_arguments(),
                **accelerator.placement(),
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
    with (
        library_messages_to_debug(),
        out_of_memory_named(checkpoint.model_name, precision, "quantizing", accelerator),
    ):
        return model, quantizer.finish(model)


def weight_bytes(model: Any) -> int:
    """Bytes of the model's parameters and buffers as stored: a quantized tensor
    subclass counts its packed data and scales, not its logical shape at 16 bits, and a
    bitsandbytes parameter its scales too, which it keeps beside its data (NF4's absmax
    and, double-quantized, their own; LLM.int8()'s per-row SCB), each tensor once."""
    seen: set[int] = set()
    total = 0
    for tensor in (*model.parameters(), *model.buffers()):
        for part in (tensor, *_scales_beside(tensor)):
            if id(part) not in seen:
                seen.add(id(part))
                total += _stored_bytes(part)
    return total


def _scales_beside(tensor: Any) -> list[Any]:
    """The tensors a bitsandbytes parameter keeps outside its data: Params4bit's
    quant_state (absmax, its code, a nested state's), Int8Params' SCB."""
    found = [getattr(tensor, "SCB", None)]
    state = getattr(tensor, "quant_state", None)
    while state is not None:
        found += [getattr(state, name, None) for name in ("absmax", "code", "offset")]
        state = getattr(state, "state2", None)
    return [t for t in found if hasattr(t, "element_size") and hasattr(t, "numel")]


def _stored_bytes(tensor: Any) -> int:
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is not None:
        names, _ = flatten()
        return sum(_stored_bytes(getattr(tensor, name)) for name in names)
    return int(tensor.numel()) * int(tensor.element_size())


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
    checkpoint: Checkpoint,
    batch_size: int,
    accelerator: Accelerator,
    prompt_tokens: int | None = None,
) -> tuple[Any, Any]:
    """(input_ids, attention_mask) on the input device; a fixed prompt for each run:
    the published protocol's (prompt_tokens None), or prompt_tokens seeded random ids
    (synthetic weights) or the first prompt_tokens tokens of the published quality
    corpus (real weights; InputError where it holds fewer): llm/prompt.py."""
    import torch

    if checkpoint.weights == "synthetic":
        _, preset = preset_for(checkpoint.model_name)
        ids = random_ids(preset.vocab_size, prompt_tokens or SYNTHETIC_PROMPT_TOKENS)
    elif prompt_tokens is None:
        ids = load_tokenizer(checkpoint)(PROMPT_TEXT, return_tensors="pt")["input_ids"]
    else:
        from ecocompute.llm.quality_probe import corpus_text

        ids = corpus_ids(load_tokenizer(checkpoint), prompt_tokens, corpus_text())
    try:
        ids = ids.repeat(batch_size, 1).to(accelerator.input_device())
    except (MemoryError, RuntimeError) as exc:  # the host's allocator: not a bug
        if not isinstance(exc, MemoryError) and "allocate" not in str(exc):
            raise
        raise RunError(
            f"the prompts of a batch of {batch_size:,} do not fit in memory ({ids.shape[1]} "
            "tokens each); use a smaller --batch_size; no report was written"
        ) from None
    return ids, torch.ones_like(ids)


def model_config(checkpoint: Checkpoint) -> Any:
    """The architecture's numbers (layers, heads, hidden and intermediate sizes,
    max_position_embeddings) before any weights load: a synthetic preset's, else the
    checkpoint's config.json (AutoConfig; a RunError where it cannot be read)."""
    if checkpoint.weights == "synthetic":
        return preset_for(checkpoint.model_name)[1]
    from transformers import AutoConfig

    local = Path(checkpoint.location).is_dir()
    return _read(checkpoint, "model config", AutoConfig.from_pretrained, local_files_only=local)


def load_tokenizer(checkpoint: Checkpoint) -> Any:
    from transformers import AutoTokenizer

    return _read(checkpoint, "tokenizer", AutoTokenizer.from_pretrained)


def _read(
    checkpoint: Checkpoint, part: str, from_pretrained: Callable[..., Any], **kwargs: object
) -> Any:
    """The checkpoint's `part` (its config, its tokenizer), or a RunError in one line: no
    such folder or hub id, or one that holds no `part` transformers can load (a
    config.json of no model type it knows, no tokenizer it can make: the user's input,
    once an internal error that stopped a sweep)."""
    try:
        return from_pretrained(checkpoint.location, trust_remote_code=False, **kwargs)
    except OSError as exc:
        raise _not_found(checkpoint, exc) from None
    except ValueError as exc:
        raise RunError(
            f"model '{checkpoint.model_name}' could not be loaded: it holds no {part} "
            f"transformers can load ({one_line(exc)}). Pass a checkpoint "
            "folder (config.json, weights and tokenizer files) or a synthetic:<preset>; "
            "nothing was written."
        ) from None


def preflight(spec: FormatSpec, accelerator: Accelerator) -> None:
    """A tiny op of the format on this device before loading anything big (and before
    any download). Raises RunError naming the format, the library and why."""
    quantizer_for(spec).preflight(accelerator)


class ModelBackend:
    """The model side of a measurement as one object, so a test can replace a piece
    (e.g. a library with no CPU kernels) without touching the protocol."""

    preflight = staticmethod(preflight)
    checkpoint = staticmethod(resolve_checkpoint)
    prompt = staticmethod(prompt_ids)
    config = staticmethod(model_config)
    tokenizer = staticmethod(load_tokenizer)

    def load(
        self, checkpoint: Checkpoint, spec: FormatSpec, accelerator: Accelerator
    ) -> LoadedModel:
        return load(checkpoint, spec, accelerator)

    def forget(self, loaded: LoadedModel) -> None:
        """The caller is done with this model (a backend that keeps models lets go)."""
        return None
