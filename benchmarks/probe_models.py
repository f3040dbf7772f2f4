"""Models and a greedy decode for the GPU probe scripts (imported by them; they run as
`python benchmarks/<script>.py`, so this folder is on sys.path)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ecocompute.llm.cuda import CudaAccelerator
from ecocompute.llm.loading import ModelBackend


def load_models(
    model_name: str, precisions: Sequence[str] = ("FP16", "NF4")
) -> tuple[CudaAccelerator, dict[str, Any], tuple[Any, Any]]:
    """(accelerator, {precision: model}, (input ids, attention mask)) for one prompt."""
    accel = CudaAccelerator()
    backend = ModelBackend()
    checkpoint = backend.checkpoint(model_name, accel)
    models = {p: backend.load(checkpoint, p, accel).model for p in precisions}
    return accel, models, backend.prompt(checkpoint, 1, accel)


def greedy(model: Any, prompt: tuple[Any, Any], tokens: int) -> None:
    """The protocol's decode: exactly `tokens` new tokens, greedy, batch 1."""
    ids, mask = prompt
    model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=tokens,
        min_new_tokens=tokens,
        do_sample=False,
    )


def windows_under_polling(
    accel: CudaAccelerator,
    models: dict[str, Any],
    prompt: tuple[Any, Any],
    tokens: int,
    n_windows: int,
    poll_once: Callable[[], Any],
    edge_mj: Callable[[], int] | None = None,
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Decode windows FP16, NF4, FP16, ... back to back while a thread calls poll_once()
    about every millisecond (from 1 s before the first window to 1 s after the last).

    Each model is warmed once first. edge_mj, if given, is read just outside each
    window (before t0, after t1) and recorded as e0_mj / e1_mj. Returns (the values
    poll_once returned, the windows)."""
    for model in models.values():
        greedy(model, prompt, tokens)
    polls: list[Any] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            polls.append(poll_once())
            time.sleep(0.001)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    windows = []
    time.sleep(1.0)
    for k in range(n_windows):
        precision = "FP16" if k % 2 == 0 else "NF4"
        accel.synchronize()
        e0 = edge_mj() if edge_mj else None
        t0 = time.monotonic()
        greedy(models[precision], prompt, tokens)
        accel.synchronize()
        t1 = time.monotonic()
        window: dict[str, Any] = {"precision": precision, "t0": t0, "t1": t1}
        line = f"window {k}: {precision} {t1 - t0:.2f} s"
        if edge_mj is not None and e0 is not None:
            e1 = edge_mj()
            window.update(e0_mj=e0, e1_mj=e1)
            line += f", counter {(e1 - e0) / 1000:.1f} J"
        windows.append(window)
        print(line, flush=True)
    time.sleep(1.0)
    stop.set()
    thread.join()
    return polls, windows
