"""The prompt every decode of a run starts from, and whether a prompt of that length fits.

Without --prompt_tokens, the published protocol's prompt: 12 seeded random ids for
synthetic weights, a fixed English instruction for real ones. With --prompt_tokens N:
N seeded random ids (synthetic weights: their values do not matter, only the length),
or the first N tokens of the published quality corpus (real weights: a text the model
reads as text), the same for every row of the batch.

A length is refused in one line (InputError naming prompt_tokens) where prompt + new
tokens exceed the model's context (max_position_embeddings), the corpus holds fewer
than N tokens, or the static KV caches of the resident formats, with the prefill's
working memory, would not fit in the GPUs' free memory. torch is imported inside
functions.
"""

from __future__ import annotations

from typing import Any

from ecocompute.errors import InputError

PROMPT_TEXT = (
    "Write a short, practical explanation of how a city can reduce the energy its "
    "public transport uses, with three concrete examples."
)
SYNTHETIC_PROMPT_TOKENS = 12  # the published protocol's prompt length on random models
PROMPT_SEED = 1234
# Beside the caches: the prefill's activations, held a layer at a time (the MLP's
# intermediate, the attention's projections and the residual stream), with this margin
# for the allocator's fragmentation and the libraries' workspaces.
PREFILL_MARGIN = 2.0
BYTES_16_BIT = 2


def describe(weights: str, prompt_tokens: int | None) -> str:
    """The report's words for where the ids of the prompt a run of these weights and
    length uses came from."""
    if weights == "synthetic":
        return f"{prompt_tokens or SYNTHETIC_PROMPT_TOKENS} seeded random token ids"
    if prompt_tokens is None:  # its length is the tokenizer's
        return "a fixed English instruction (ecocompute.llm.loading.PROMPT_TEXT)"
    return (
        f"the first {prompt_tokens} tokens of the published quality corpus "
        "(eval_text.txt, sha256 22ac091a...5504)"
    )


def random_ids(vocab_size: int, prompt_tokens: int) -> Any:
    """(1, prompt_tokens) seeded random ids, never the first 3 (special) ids."""
    import torch

    generator = torch.Generator().manual_seed(PROMPT_SEED)
    return torch.randint(3, vocab_size, (1, prompt_tokens), generator=generator)


def corpus_ids(tokenizer: Any, prompt_tokens: int, text: str) -> Any:
    """(1, prompt_tokens): the first prompt_tokens tokens of `text`, tokenized without
    special tokens as the quality probe does. Raises InputError where it holds fewer."""
    import torch

    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < prompt_tokens:
        raise InputError(
            "prompt_tokens",
            prompt_tokens,
            f"the published quality corpus holds {len(ids)} tokens for this tokenizer; "
            f"give at most {len(ids)}",
        )
    return torch.tensor([ids[:prompt_tokens]], dtype=torch.long)


def check_context(model_name: str, max_positions: int | None, prompt: int, tokens: int) -> None:
    """Prompt + new tokens within the model's context (where its config states one)."""
    if max_positions is not None and prompt + tokens > max_positions:
        raise InputError(
            "prompt_tokens",
            prompt,
            f"the prompt and {tokens} new tokens ({prompt + tokens}) exceed {model_name}'s "
            f"context of {max_positions} positions (max_position_embeddings); give at most "
            f"{max_positions - tokens}",
        )


def kv_cache_mib(config: Any, batch_size: int, cache_len: int) -> float:
    """MiB of one format's static KV cache: keys and values of every layer, 16-bit."""
    layers = int(config.num_hidden_layers)
    heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
    head_dim = int(
        getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    )
    return 2 * layers * heads * head_dim * cache_len * batch_size * BYTES_16_BIT / 2**20


def check_memory(
    model_name: str,
    config: Any,
    *,
    batch_size: int,
    prompt: int,
    tokens: int,
    formats: int,
    free_mib: float | None,
) -> None:
    """Every resident format's static cache and one prefill's working memory within
    the GPUs' free memory (the models already loaded). Unknown free memory: no check."""
    if free_mib is None:
        return
    caches = formats * kv_cache_mib(config, batch_size, prompt + tokens)
    # the prefill's working memory: one layer's activations at a time, with PREFILL_MARGIN
    per_token = 4 * int(config.hidden_size) + 3 * int(config.intermediate_size)
    need = caches + PREFILL_MARGIN * batch_size * prompt * per_token * BYTES_16_BIT / 2**20
    if need > free_mib:
        raise InputError(
            "prompt_tokens",
            prompt,
            f"{formats} static KV cache(s) of {prompt} + {tokens} tokens at batch "
            f"{batch_size} and the prefill need about {need:,.0f} MiB beside {model_name}'s "
            f"weights, {free_mib:,.0f} MiB free; give a shorter prompt, a smaller batch or "
            "fewer formats",
        )
