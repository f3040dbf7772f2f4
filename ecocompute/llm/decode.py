"""How one measured decode runs: the decode regimes.

A decode is ONE greedy generation of exactly `tokens` new tokens per row from a fixed
prompt; it is the only thing that runs inside a measured energy window. Three regimes:

- "eager" (the published protocol): transformers' generate() with its dynamic KV cache.
  At batch 1 on a fast GPU the decode is bound by the CPU launching kernels, so most of
  the energy per token is the GPU waiting for Python.
- "graphs": a static KV cache sized prompt + new tokens, an eager prefill, then the
  one-token decode step captured once as a CUDA graph and replayed per token, so the
  CPU launches one graph per token (graphs.py).
- "compiled": the graphs decode with its one-token step compiled by torch.compile
  (inductor) before capture, as serving stacks that compile and replay do (compiled.py).

All three choose tokens the way generate() does with min_new_tokens = max_new_tokens: the
argmax of each row's logits with the end-of-sequence token(s) suppressed, so a decode
always yields `tokens` new tokens. torch and transformers are imported inside functions.
"""

from __future__ import annotations

from typing import Any

from ecocompute.errors import InputError
from ecocompute.llm.decoder import REGIMES, Decoder
from ecocompute.params.run_params import (
    NEAR_TIE_STD_FRACTION,
    CompileBatch,
    CompileMode,
    CompileScope,
)

# How many tokens prepare() decodes twice (eager step vs graph replay) to check that the
# captured graph reproduces the step it captured. Cheap, outside every measured window.
CHECK_TOKENS = 8


class EagerDecoder(Decoder):
    """generate() with the dynamic cache: the published protocol."""

    regime = "eager"

    def __init__(self, model: Any, input_ids: Any, attention_mask: Any, tokens: int, label: str):
        from transformers import GenerationConfig

        super().__init__(input_ids, tokens, label)
        self.model = model
        self.attention_mask = attention_mask
        pad, eos = model.config.pad_token_id, model.config.eos_token_id
        # The published protocol's settings: greedy, one beam, exactly `tokens` new tokens
        # (min = max, so the end-of-sequence token is suppressed until then).
        self.config = GenerationConfig(
            max_new_tokens=tokens,
            min_new_tokens=tokens,
            do_sample=False,
            num_beams=1,
            use_cache=True,
            pad_token_id=pad if pad is not None else eos,
            eos_token_id=eos,
        )
        # generate() fills what its config leaves unset from the model's own generation
        # config, the checkpoint's generation_config.json: a repetition penalty (then not
        # greedy), a max_length (then a warning logged on every call, inside the window).
        # The model's is made neutral (nothing of the checkpoint's but its pad and eos
        # tokens), so eager decodes exactly as graphs and compiled do.
        model.generation_config = GenerationConfig(pad_token_id=pad, eos_token_id=eos)

    def prepare(self) -> None:
        return None  # generate() builds its cache per call; warm-ups are the caller's

    def run(self) -> Any:
        return self.model.generate(
            input_ids=self.input_ids,
            attention_mask=self.attention_mask,
            generation_config=self.config,
        )


def make_decoder(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    tokens: int,
    regime: str,
    *,
    capture: bool = True,
    label: str = "the model",
    check_tokens: int = CHECK_TOKENS,
    fresh_cache_dir: str | None = None,
    compile_batch: CompileBatch = "static",
    compile_scope: CompileScope = "step",
    compile_mode: CompileMode | None = None,
    near_tie_std: float = NEAR_TIE_STD_FRACTION,
) -> Decoder:
    """The decoder for `regime`, not yet prepared.

    input_ids: (batch, prompt_len) long tensor (the prompt repeated per row for batch > 1);
    attention_mask: same shape, or None; label names the format in messages (e.g. "NF4").
    capture=False (graphs, compiled) steps the same static-cache step per token without a
    CUDA graph (the CPU path: tests, and a debugging aid). check_tokens: how many tokens
    prepare() compares with the eager step (0: no check). compile_batch, compile_scope,
    compile_mode (None: compiled.MODE) and near_tie_std are RunParams' --options of those
    names; fresh_cache_dir: an empty folder inductor caches this compile in (one of
    --compiles N; see compiled.reset_compiles()).

    Raises InputError for an unknown regime or tokens < 1.
    """
    if regime not in REGIMES:
        raise InputError("--decode", regime, " or ".join(REGIMES))
    if tokens < 1:
        raise InputError("tokens", tokens, "at least 1")
    # The prompt on the device of the model's input embeddings, where it has them (a model
    # built in memory may sit on a GPU other than the accelerator's input device).
    embeddings = getattr(model, "get_input_embeddings", lambda: None)()
    weight = getattr(embeddings, "weight", None)
    if weight is not None and weight.device != input_ids.device:
        input_ids = input_ids.to(weight.device)
        attention_mask = None if attention_mask is None else attention_mask.to(weight.device)
    if regime == "eager":
        return EagerDecoder(model, input_ids, attention_mask, tokens, label)
    from ecocompute.llm.compiled import CompiledDecoder  # both import decoder.py: local
    from ecocompute.llm.graphs import GraphDecoder

    args = (model, input_ids, attention_mask, tokens, label)
    if regime == "compiled":
        return CompiledDecoder(
            *args,
            capture=capture,
            check_tokens=check_tokens,
            near_tie_std=near_tie_std,
            compile_batch=compile_batch,
            compile_scope=compile_scope,
            compile_mode=compile_mode,
            fresh_cache_dir=fresh_cache_dir,
        )
    return GraphDecoder(
        *args, capture=capture, check_tokens=check_tokens, near_tie_std=near_tie_std
    )
