"""The "graphs" decode regime: a static KV cache and a CUDA-graph-captured decode step.

Per decode (run()): reset the static cache in place, run the prefill eagerly (its
argmax is the first new token), then replay the captured one-token step tokens - 1
times. Everything a step does happens on the device, inside the graph: the forward
pass, the attention mask for the current position, the argmax (end-of-sequence
suppressed, as generate() does with min_new_tokens = max_new_tokens), writing the next
input token, advancing position and cache slot, and recording the token. The CPU only
launches replays.

Why these choices (a probe on an H200, issue 12): the cache must be reset in place
before every decode, or it keeps its own position across sequences and a replay's
index_copy_ writes out of bounds (device assert); transformers'
generate(cache_implementation="static") was slow for NF4 and torch.compile's
"reduce-overhead" mode failed, so the graph is captured directly with
torch.cuda.CUDAGraph.

The step builds its own 4D attention mask from a device-side slot counter instead of
letting the model build one: transformers' sliding-window cache layer reports its length
as a Python int, which a captured graph would freeze at its capture-time value.

What cannot be captured fails with DecodeCaptureFailed, never a fall back to eager:
LLM.int8() with an outlier threshold > 0 (bitsandbytes finds outlier columns at run
time, a data-dependent shape: the probe hit a device assert, which also poisons the
CUDA context, so it is refused before trying), weights spread over several devices,
and sliding-window layers whose window is shorter than prompt + new tokens.

The check (prepare(), after capture): the replayed decode must choose the eager step's
tokens. The replayed kernels are the eager step's, but not always its rounding: at batch
16 with prompts of 128 and 1,024 tokens on an H200 (issue 32), replays parted from the
eager step at new token 6-8 of 8 for NF4 and FP8 (cuBLAS may choose another algorithm,
another reduction order, on the capture's stream). Where a row parts, the model itself
is asked, eagerly, on the prefix both agree on: a parting where the two tokens' logits
lie within near_tie_std (--near_tie_std, default NEAR_TIE_STD_FRACTION, 0.05) of the
logits' standard deviation is a near tie (recorded in token_check with the regime's
token's rank among the eager logits, and that row is compared no further); any other is
a failure. The check compares tokens, and only each row's first parting: a wrong capture
(a stale mask, position or cache) that first parts at a close call passes it. On
synthetic weights a step whose cache slot never advanced parted first 0.08 of the spread
apart (smollm2-135m) and one whose position never advanced 0.06 apart, and on the tiny
test model 0.0005 of a 0.0078 tie (a review, 2026-12-05): the default tie refuses the
first two, a tie of 0.11 or more (a stated choice) passes them. Comparing the two steps'
logits on one prefix would close that gap; it is not done yet. The compiled regime
(compiled.py) checks its step the same way.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.errors import DecodeCaptureFailed, one_line
from ecocompute.llm import kernel_fingerprint
from ecocompute.llm.decoder import Decoder
from ecocompute.params.run_params import NEAR_TIE_STD_FRACTION

log = logging.getLogger(__name__)

# Eager steps on a side stream before capture, so lazily initialised state (cuBLAS
# handles and workspaces, bitsandbytes buffers) exists before the graph records
# addresses: the warm-up the PyTorch CUDA-graph notes prescribe.
WARMUP_STEPS = 3

_MASK_IMPLEMENTATIONS = ("sdpa", "eager")  # attention that takes a 4D mask as given


class GraphDecoder(Decoder):
    """Static-cache greedy decode; with capture=True the step is a replayed CUDA graph,
    with capture=False the same step runs eagerly per token (testable on the CPU)."""

    regime = "graphs"
    per_format_keys: tuple[str, ...] = ("kernel_fingerprint", "token_check")
    parts_from_eager = "the replayed graph"  # what the check compares with the eager step

    def __init__(
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        tokens: int,
        label: str,
        *,
        capture: bool,
        check_tokens: int,
        near_tie_std: float = NEAR_TIE_STD_FRACTION,
    ) -> None:
        super().__init__(input_ids, tokens, label)
        self.near_tie_std = near_tie_std
        self.model = model
        self.attention_mask = attention_mask
        self.capture = capture
        self.check_tokens = check_tokens
        self.cache_len = self.prompt_len + tokens
        self._graph: Any = None
        self._body: Callable[[], None] = self._step
        self._ready = False
        self._scope: Any = None  # the model's device as a context (prepare())
        self._fingerprint = kernel_fingerprint.unavailable(
            "no CUDA graph captured (the CPU stand-in steps eagerly)"
        )
        # each row that parted at a near tie: row, new token (1-based), the two tokens'
        # eager logits apart (float32), the tolerance, and the regime's token's rank among
        # the eager step's logits (1: its own choice)
        self._ties: list[JsonObject] = []
        self._checked = 0

    # -- outside measured windows --------------------------------------------------
    def prepare(self) -> None:
        """Allocate the static cache and buffers; build the step (a subclass may compile
        it); with capture, warm up and capture it; then check the first tokens. Raises
        DecodeCaptureFailed naming the format and the first line of what went wrong; an
        out-of-memory error passes through for the caller to name."""
        import torch

        # The model's GPU as the current device (replays launch on its stream), or nothing
        # to do on the CPU: made once, a context run() enters again in every window.
        device = self.input_ids.device
        cuda = device.type == "cuda"
        self._scope = torch.cuda.device(device) if cuda else contextlib.nullcontext()
        try:
            with torch.no_grad(), self._scope:
                self._allocate()
                if self.capture:
                    self._refuse_uncapturable_layers()
                if self.tokens > 1:  # one new token is the prefill's: no step to build
                    if self.capture:
                        self._refuse_uncapturable_placement()  # before any compile
                    self._build_step()
                    if self.capture:
                        self._capture()
                if self.check_tokens > 0 and self.tokens > 1:
                    self._check(min(self.check_tokens, self.tokens))
        except (DecodeCaptureFailed, torch.OutOfMemoryError):
            raise
        except Exception as exc:  # any capture failure is this format's answer
            raise DecodeCaptureFailed(self.label, one_line(exc), self.regime) from exc
        self._ready = True

    def _build_step(self) -> None:
        """Make self._body, the step that is warmed up, captured and (without capture)
        stepped: here the eager step itself; the compiled regime compiles it."""
        self._body = self._step

    def record(self) -> JsonObject:
        """The regime's record, and whether the step really was captured (False only on
        a CPU stand-in, where the same static-cache step runs eagerly)."""
        return {
            **super().record(),
            "graph_captured": self._graph is not None,
            "kernel_fingerprint": self._fingerprint,
            "token_check": {
                "tokens_checked": self._checked,
                "rows": self.batch,
                "near_tie_std": self.near_tie_std,
                "rows_parted_at_a_near_tie": len(self._ties),
                "first_near_tie": self._ties[0] if self._ties else None,
            },
        }

    def prepared_note(self) -> str | None:
        return f"{self.label}: {self._checked_note()}" if self._ties else None

    def _checked_note(self) -> str:
        """Whether the step was captured, and what the check found."""
        ties = f", {len(self._ties)} row(s) parted at a near tie" if self._ties else ""
        captured = "captured" if self._graph is not None else "not captured"
        return f"{captured}, first {self._checked} tokens checked{ties}"

    # -- inside measured windows ------------------------------------------------------
    def run(self) -> Any:
        """One decode: (batch, prompt_len + tokens) ids. Needs prepare()."""
        with self._prepared("run"):
            return self._decode(self._advance(), self.tokens - 1)

    def run_prefills(self, count: int) -> None:
        """`count` prefills of the prompt back to back (each resets the cache and runs
        the prompt): a prefill window's work. The last leaves the state run_decode()
        continues from. Needs prepare()."""
        with self._prepared("run_prefills"):
            for _ in range(count):
                self._prefill()

    def run_decode(self) -> Any:
        """The decode steps after the last prefill (tokens - 1 replays): a decode
        window's work. Output as run()'s: (batch, prompt_len + tokens) ids."""
        with self._prepared("run_decode"):
            return self._steps(self._advance(), self.tokens - 1)

    @contextlib.contextmanager
    def _prepared(self, method: str) -> Iterator[None]:
        """Without gradients, on the model's device; refused before prepare()."""
        import torch

        if not self._ready:
            raise RuntimeError(f"GraphDecoder.{method}() before prepare()")
        with torch.no_grad(), self._scope:
            yield

    # -- the decode ------------------------------------------------------------------
    def _advance(self) -> Callable[[], None]:
        """What moves the decode on by one token: a replay, or the (uncaptured) body."""
        return self._body if self._graph is None else self._graph.replay

    def _decode(self, advance: Callable[[], None], steps: int) -> Any:
        self._prefill()
        return self._steps(advance, steps)

    def _steps(self, advance: Callable[[], None], steps: int) -> Any:
        import torch

        for _ in range(steps):
            advance()
        return torch.cat((self.input_ids, self._chosen[:, : steps + 1]), dim=-1)

    def _allocate(self) -> None:
        import torch
        from transformers import StaticCache
        from transformers.cache_utils import StaticLayer, StaticSlidingWindowLayer

        config = self.model.config
        cache = StaticCache(config=config, max_cache_len=self.cache_len)
        for i, layer in enumerate(cache.layers):
            supported = (StaticLayer, StaticSlidingWindowLayer)
            if not isinstance(layer, StaticLayer) or type(layer) not in supported:
                raise DecodeCaptureFailed(
                    self.label,
                    f"cache layer {i} is a {type(layer).__name__}; only full and "
                    "sliding-window attention layers are supported",
                    self.regime,
                )
            if layer.max_cache_len < self.cache_len:
                # Once full, a sliding-window layer rolls its cache: a branch taken on
                # the host, which a captured graph cannot follow.
                raise DecodeCaptureFailed(
                    self.label,
                    f"prompt + new tokens ({self.cache_len}) exceed the model's sliding "
                    f"window ({layer.max_cache_len})",
                    self.regime,
                )
        implementation = getattr(config, "_attn_implementation", None)
        if implementation not in _MASK_IMPLEMENTATIONS:
            raise DecodeCaptureFailed(
                self.label,
                f"attention implementation {implementation!r} is not supported "
                f"(supported: {', '.join(_MASK_IMPLEMENTATIONS)})",
                self.regime,
            )
        self._cache = cache
        device = self.input_ids.device
        batch, tokens = self.batch, self.tokens
        mask = self.attention_mask
        mask = torch.ones_like(self.input_ids) if mask is None else mask
        self._prompt_mask = mask.to(device=device, dtype=torch.long)
        # Positions as generate() derives them: count of attended tokens so far.
        positions = self._prompt_mask.cumsum(-1) - 1
        self._prompt_positions = positions.masked_fill(self._prompt_mask == 0, 0)
        attended = torch.ones((batch, tokens), dtype=torch.bool, device=device)
        self._attended = torch.cat((self._prompt_mask.bool(), attended), dim=-1)
        self._kv_index = torch.arange(self.cache_len, device=device)
        self._token = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self._position = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self._slot = torch.zeros((), dtype=torch.long, device=device)  # cache slot fed next
        self._step_index = torch.zeros((1,), dtype=torch.long, device=device)
        self._chosen = torch.zeros((batch, tokens), dtype=torch.long, device=device)
        self._mask_values: tuple[Any, Any] | None = None
        if implementation == "eager":  # eager attention adds the mask to its scores
            dtype = self.model.get_input_embeddings().weight.dtype
            self._mask_values = (
                torch.zeros((), dtype=dtype, device=device),
                torch.full((), torch.finfo(dtype).min, dtype=dtype, device=device),
            )
        # the end-of-sequence id(s), on the output layer's device (where logits are)
        eos = config.eos_token_id
        head = self.model.get_output_embeddings()
        self._eos: Any = None
        if eos is not None:
            ids = [eos] if isinstance(eos, int) else list(eos)
            head_device = head.weight.device if head is not None else self.model.device
            self._eos = torch.tensor(ids, dtype=torch.long, device=head_device)
        # generate() asks the prefill for the last position's logits only, when it can
        self._keeps_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters

    def _choose(self, logits: Any) -> Any:
        """Each row's next token from (batch, q, vocab) logits: argmax of the last
        position in float32, end-of-sequence suppressed (as generate() does)."""
        import torch

        scores = logits[:, -1, :].to(dtype=torch.float32, copy=True)
        if self._eos is not None:
            scores.index_fill_(-1, self._eos.to(scores.device), float("-inf"))
        return scores.argmax(dim=-1).to(self.input_ids.device)

    def _prefill(self) -> None:
        """Reset the cache in place and run the prompt: the first new token, and the
        state the step (or the graph) continues from."""
        self._cache.reset()
        extra = {"logits_to_keep": 1} if self._keeps_logits else {}
        out = self.model(
            input_ids=self.input_ids,
            attention_mask=self._prompt_mask,
            position_ids=self._prompt_positions,
            past_key_values=self._cache,
            use_cache=True,
            **extra,
        )
        chosen = self._choose(out.logits)
        self._token.copy_(chosen[:, None])
        self._position.copy_(self._prompt_positions[:, -1:] + 1)
        self._slot.fill_(self.prompt_len)
        self._step_index.zero_()
        self._chosen[:, 0].copy_(chosen)

    def _step(self) -> None:
        """One token, on the device only (no host reads): the body the graph captures."""
        import torch

        visible = (self._kv_index <= self._slot) & self._attended  # (batch, cache_len)
        mask = visible[:, None, None, :]
        if self._mask_values is not None:
            mask = torch.where(mask, *self._mask_values)
        out = self.model(
            input_ids=self._token,
            attention_mask=mask,
            position_ids=self._position,
            past_key_values=self._cache,
            use_cache=True,
        )
        chosen = self._choose(out.logits)
        self._token.copy_(chosen[:, None])
        self._position.add_(1)
        self._slot.add_(1)
        self._step_index.add_(1)
        self._chosen.index_copy_(1, self._step_index, chosen[:, None])

    def _refuse_uncapturable_layers(self) -> None:
        """Refuse, before any capture, what is known not to capture: LLM.int8() layers
        with an outlier threshold > 0 (outlier columns found at run time: data-dependent
        shapes; on an H200 the attempt ended in a device assert that poisons the CUDA
        context)."""
        for name, module in self.model.named_modules():
            if type(module).__name__ != "Linear8bitLt":
                continue
            threshold = float(getattr(getattr(module, "state", None), "threshold", 0.0) or 0.0)
            if threshold > 0:
                raise DecodeCaptureFailed(
                    self.label,
                    f"LLM.int8() with outlier threshold {threshold:g} ({name}) finds outlier "
                    "columns at run time, shapes a CUDA graph cannot capture; threshold 0.0 "
                    "captures",
                    self.regime,
                )

    def _refuse_uncapturable_placement(self) -> None:
        """Before anything is built: one graph is captured on one CUDA device."""
        device = self.input_ids.device
        if device.type != "cuda":
            raise RuntimeError(
                f"CUDA graph capture needs a CUDA device; the inputs are on {device}"
            )
        devices = {str(p.device) for p in self.model.parameters()}
        if len(devices) > 1:
            raise DecodeCaptureFailed(
                self.label,
                f"its weights span {len(devices)} devices ({', '.join(sorted(devices))}); "
                "one graph is captured on one GPU",
                self.regime,
            )

    def _capture(self) -> None:
        import torch

        device = self.input_ids.device
        self._prefill()  # allocates the cache tensors whose addresses the graph keeps
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(min(WARMUP_STEPS, self.tokens - 1)):
                self._body()
        torch.cuda.current_stream(device).wait_stream(side)
        graph = kernel_fingerprint.kept_graph()
        # captured on a stream of the model's GPU (prepare() made it the current device):
        # a model built in memory may sit on a GPU other than the first
        with torch.cuda.graph(graph, stream=side):
            self._body()
        if hasattr(graph, "instantiate"):
            graph.instantiate()  # a kept graph is instantiated here, never in a window
        torch.cuda.synchronize(device)  # a capture error surfaces here, not in a window
        self._graph = graph
        self._fingerprint = kernel_fingerprint.of_graph(graph)
        log.debug("%s: %s decode step captured as a CUDA graph", self.label, self.regime)

    def _check(self, tokens: int) -> None:
        """The regime's decode (replays, or the compiled step stepped on the CPU) must
        choose the eager step's tokens for the first `tokens` new tokens; a row may part
        only at a near tie. Outside any window."""
        stepped = self._decode(self._step, tokens - 1)
        other = self._decode(self._advance(), tokens - 1)
        self._checked, self._ties = tokens, []
        for row in range(self.batch):
            parted = (stepped[row] != other[row]).nonzero().flatten()
            if len(parted) == 0:
                continue
            at = int(parted[0])
            new_token = at - self.prompt_len + 1
            eager_id, other_id = int(stepped[row, at]), int(other[row, at])
            margin, tolerance, rank = self._margin(row, stepped[row, :at], eager_id, other_id)
            if not abs(margin) <= tolerance:
                raise DecodeCaptureFailed(
                    self.label,
                    f"{self.parts_from_eager} chose other tokens than the eager step (row "
                    f"{row}, from new token {new_token} of the {tokens} checked; their "
                    f"logits are {margin:.3g} apart, beyond a near tie's {tolerance:.3g} "
                    f"(--near_tie_std {self.near_tie_std:g}); its token was the eager "
                    f"step's choice {rank})",
                    self.regime,
                    parted=True,
                )
            self._ties.append(
                {
                    "row": row,
                    "new_token": new_token,
                    "logits_apart": round(margin, 6),
                    "tolerance": round(tolerance, 6),
                    "rank": rank,
                }
            )
            log.info(
                "%s: row %d parts from eager at a near tie (new token %d)",
                self.label,
                row,
                new_token,
            )

    def _margin(
        self, row: int, prefix: Any, eager_id: int, other_id: int
    ) -> tuple[float, float, int]:
        """The eager model's logit of eager_id minus other_id after `prefix` (one row,
        one plain forward), the near-tie tolerance for that row's logits, and other_id's
        rank among them (1: the largest)."""
        import torch

        mask = torch.ones_like(prefix)[None]
        mask[0, : self.prompt_len] = self._prompt_mask[row]
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
        out = self.model(input_ids=prefix[None], attention_mask=mask, position_ids=positions)
        logits = out.logits[0, -1].to(torch.float32)
        rank = int((logits > logits[other_id]).sum()) + 1
        if self._eos is not None and other_id in self._eos.tolist():
            return float("inf"), 0.0, rank  # end-of-sequence is never a greedy choice here
        margin = float(logits[eager_id] - logits[other_id])
        return margin, self.near_tie_std * float(logits.std()), rank
