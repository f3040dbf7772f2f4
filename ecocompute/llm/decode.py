"""Decode regimes: how one decode run of a fixed number of new tokens is executed.

eager: transformers' generate() with a dynamic cache (the published protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REGIMES = ("eager",)


@dataclass
class EagerDecoder:
    model: Any
    input_ids: Any
    attention_mask: Any
    tokens: int
    regime: str = "eager"

    def __post_init__(self) -> None:
        from transformers import GenerationConfig

        config = self.model.config
        pad, eos = config.pad_token_id, config.eos_token_id
        self._config = GenerationConfig(
            max_new_tokens=self.tokens,
            min_new_tokens=self.tokens,
            do_sample=False,
            num_beams=1,
            use_cache=True,
            pad_token_id=pad if pad is not None else eos,
            eos_token_id=eos,
        )

    def prepare(self) -> None:
        """Nothing to prepare: generate() builds its cache per run."""

    def run(self) -> Any:
        return self.model.generate(
            input_ids=self.input_ids,
            attention_mask=self.attention_mask,
            generation_config=self._config,
        )

    def new_tokens(self, output: Any) -> int:
        return int(output.shape[-1] - self.input_ids.shape[-1]) * int(output.shape[0])

    def record(self) -> dict[str, Any]:
        return {
            "regime": "eager",
            "cache": "dynamic (generate's default)",
            "do_sample": False,
            "num_beams": 1,
            "min_new_tokens": self.tokens,
            "max_new_tokens": self.tokens,
        }


def make_decoder(
    model: Any, input_ids: Any, attention_mask: Any, tokens: int, regime: str, *, label: str = ""
) -> EagerDecoder:
    if regime not in REGIMES:
        raise ValueError(f"unknown decode regime {regime!r}; allowed: {', '.join(REGIMES)}")
    return EagerDecoder(model, input_ids, attention_mask, tokens)
