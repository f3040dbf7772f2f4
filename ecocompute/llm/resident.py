"""Models kept loaded across a sweep's points of the same model (its batch axis): the
batch sizes of one model are separate sessions (each with its own idle window,
warm-ups, regime preparation and rounds) that share the loaded models, so a sweep
over four batch sizes loads each format once, not four times. Each report says
whether its models were reused (measurement.timing.reused_models)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ecocompute.formats.table import FormatSpec
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.loading import Checkpoint, LoadedModel, ModelBackend


class ResidentModels(ModelBackend):
    """A backend that keeps what it loaded until a point of another model asks."""

    def __init__(self, inner: ModelBackend) -> None:
        self.inner = inner
        self.kept: dict[tuple[str, FormatSpec], LoadedModel] = {}
        self.checkpoints: dict[str, Checkpoint] = {}

    def preflight(self, spec: FormatSpec, accelerator: Accelerator) -> None:
        self.inner.preflight(spec, accelerator)

    def checkpoint(self, model_name: str, accelerator: Accelerator) -> Checkpoint:
        if model_name not in self.checkpoints:
            self.checkpoints[model_name] = self.inner.checkpoint(model_name, accelerator)
        return self.checkpoints[model_name]

    def load(
        self, checkpoint: Checkpoint, spec: FormatSpec, accelerator: Accelerator
    ) -> LoadedModel:
        key = (checkpoint.location, spec)  # the format with its settings (LLM.int8()'s threshold)
        if key in self.kept:
            return dataclasses.replace(self.kept[key], reused=True)
        if any(k[0] != checkpoint.location for k in self.kept):
            self.clear(accelerator)  # another model: let the last one's go first
        loaded = self.inner.load(checkpoint, spec, accelerator)
        self.kept[key] = loaded
        return loaded

    def forget(self, loaded: LoadedModel) -> None:
        self.kept = {k: m for k, m in self.kept.items() if m.model is not loaded.model}
        self.inner.forget(loaded)

    def clear(self, accelerator: Accelerator | None = None) -> None:
        self.kept.clear()
        if accelerator is not None:
            accelerator.release()

    def prompt(
        self,
        checkpoint: Checkpoint,
        batch_size: int,
        accelerator: Accelerator,
        prompt_tokens: int | None = None,
    ) -> tuple[Any, Any]:
        return self.inner.prompt(checkpoint, batch_size, accelerator, prompt_tokens)

    def config(self, checkpoint: Checkpoint) -> Any:
        return self.inner.config(checkpoint)

    def tokenizer(self, checkpoint: Checkpoint) -> Any:
        return self.inner.tokenizer(checkpoint)
