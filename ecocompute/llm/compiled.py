"""The "compiled" decode regime: the graphs regime's static-cache step compiled with
torch.compile, then captured as one CUDA graph and replayed per token, the way serving
stacks that compile and replay (vLLM) decode.

prepare(), outside every measured window: allocate the static cache (graphs.py), compile
the one-token step once (inductor, mode "max-autotune-no-cudagraphs": inductor tunes its
kernels and leaves CUDA graphs to us; static shapes; fullgraph where dynamo can hold the
whole step, else the same step with its graph breaks, recorded), run it once (that first
call is the compile, timed as compile_s), warm it up and capture it exactly as graphs
does, then check the first tokens against the eager step. The prefill stays eager.

Compiled kernels round differently from eager ones (fused, reordered reductions), so a
greedy decode may part from the eager one where two tokens' logits are all but tied:
the check (graphs.py) lets a row part only at such a near tie.

Inductor's cache: TORCHINDUCTOR_CACHE_DIR, when set before the compile, is used as it
is; otherwise it points at the tool's cache folder (<ECOCOMPUTE_CACHE or
~/.cache/ecocompute>/inductor) while the step is compiled and captured, and is put back
afterwards (as is dynamo's recompile limit), so a second run of the same model, format
and batch loads the compiled graph instead of compiling it, and the caller's process
keeps its own settings. Whether it did is read from inductor's
FX-graph cache counters during this compile (warm: every graph loaded; cold: compiled);
dynamo still traces the step in every process, so a warm compile is faster, not free.

--compile_scope layer compiles each decoder layer on its own instead of the whole step
(regional compilation): the embedding, the final norm, the head and the step's own
bookkeeping run eagerly, and the whole step is still captured as one CUDA graph. The
layers' graphs are alike, so every layer after the first loads its kernels from inductor's
cache: a shorter compile, whose kernels lose only the fusions across layer boundaries.

On the CPU (capture=False) inductor compiles for the CPU and the compiled step runs once
per token without a graph: the record says graph_captured false.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecocompute.core import packages
from ecocompute.core.environment import environment_kept, set_at_start
from ecocompute.core.json_types import JsonObject
from ecocompute.errors import DecodeCaptureFailed, one_line
from ecocompute.llm.graphs import GraphDecoder
from ecocompute.llm.synthetic import tool_cache_root
from ecocompute.params.run_params import COMPILE_MODE, CompileBatch, CompileMode, CompileScope

log = logging.getLogger(__name__)

BACKEND = "inductor"
# The regime's own mode (--compile_mode, whose values RunParams checks, as it checks
# --compile_batch and --compile_scope): it tunes every matmul's kernel and every fused
# kernel's launch settings by timing candidates (most of a compile's time at 7B);
# "default" takes inductor's heuristics and cuBLAS for the matmuls, a shorter compile.
# CUDA graphs stay ours in both (no reduce-overhead).
MODE = COMPILE_MODE
CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
# A session compiles the same step function once per format and a sweep once more per
# batch size; dynamo's default of 8 compiled versions per function would stop a sweep of
# 4 batch sizes x 3 formats (with fullgraph, in an error; without, silently eager).
RECOMPILE_LIMIT = 256
# --compile_scope layer: transformers' layers read their cache slot by layer index, so
# dynamo traces every layer, one graph per layer, per batch size, per format, in a
# sweep's one process (every layer after the first loads its kernels from inductor's
# FX-graph cache instead of compiling them).
LAYER_RECOMPILE_LIMIT = 8192


@dataclass(frozen=True)
class Compiled:
    """What one format's compile did. Seconds on the host's monotonic clock."""

    compile_s: float  # the first call(s) of the compiled step: tracing, compiling, a step
    fullgraph: bool  # dynamo held the whole step in one graph
    graph_break: str | None  # why fullgraph failed, where it did
    dynamo_graphs: int  # graphs dynamo compiled (0: reused from earlier in this process)
    cache_hits: int  # inductor FX-graph cache: graphs loaded
    cache_misses: int  # graphs compiled afresh
    cache_bypasses: int  # graphs inductor would not cache

    @property
    def cache(self) -> str:
        """Whether inductor's cache was warm: cold, warm, partly warm, bypassed, or not
        consulted (dynamo reused a graph compiled earlier in this process)."""
        if self.dynamo_graphs == 0 and not (self.cache_hits or self.cache_misses):
            return "not consulted: compiled earlier in this process"
        if self.cache_hits and not (self.cache_misses or self.cache_bypasses):
            return "warm"
        if self.cache_hits:
            return "partly warm"
        return "cold" if self.cache_misses else "bypassed"


def inductor_cache_dir() -> tuple[str, str]:
    """The folder inductor caches in, and where that choice came from. Sets
    TORCHINDUCTOR_CACHE_DIR to the tool's cache folder (inside environment_kept(), so
    only for a while) unless the user set it: to another folder than inductor's own
    default, or to any folder before the libraries were imported (importing
    transformers' model classes makes inductor write its default there, so that value
    set later says nothing of the user's wish; core/environment.py AT_START)."""
    current = os.environ.get(CACHE_ENV)
    if current is not None and (current != _inductor_default() or set_at_start(CACHE_ENV, current)):
        return current, f"{CACHE_ENV}, set before the run"
    path = str(tool_cache_root() / "inductor")
    os.environ[CACHE_ENV] = path
    return path, "the tool's cache folder (ECOCOMPUTE_CACHE, else ~/.cache/ecocompute)"


TRITON_CACHE_ENV = "TRITON_CACHE_DIR"
FRESH_CACHE_FROM = (
    "an empty folder for this compile (--compiles N), Triton's cache inside it; dynamo "
    "reset and inductor's in-memory caches cleared before each compile's formats"
)


def reset_compiles() -> None:
    """Forget every compile this process holds (dynamo's compiled code, inductor's
    in-memory caches), so that the next torch.compile traces, compiles and autotunes
    afresh (one of --compiles N; each decoder then compiles into an empty folder, as
    torch._inductor.utils.fresh_cache does). Call before any format of the next compile
    is prepared, never while a decoder of the last one may still run."""
    import torch._dynamo

    torch._dynamo.reset()
    try:  # a private module: without it, dynamo's reset and the empty folders remain
        from torch._inductor.utils import clear_caches
    except ImportError:
        return
    clear_caches()


def _recompile_limit(limit: int) -> Any:
    """Dynamo's recompile limits raised to `limit` for a block, then put back."""
    import torch._dynamo

    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    changes = {name: max(int(getattr(config, name)), limit)}
    if hasattr(config, "accumulated_recompile_limit"):  # over every function of a process
        changes["accumulated_recompile_limit"] = max(config.accumulated_recompile_limit, limit)
    return config.patch(changes)


def _inductor_default() -> str | None:
    try:  # a private module: its absence only means no default to recognise
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:
        return None
    return os.path.abspath(default_cache_dir())


class CompiledDecoder(GraphDecoder):
    """The graphs decode with its step compiled by torch.compile before capture."""

    regime = "compiled"
    parts_from_eager = "the compiled step"
    per_format_keys = (
        "kernel_fingerprint",
        "compile_s",
        "fullgraph",
        "graph_break",
        "inductor_cache",
        "fx_graph_cache",
        "dynamo_graphs",
        "token_check",
    )

    def __init__(
        self,
        *args: Any,
        compile_batch: CompileBatch = "static",
        compile_scope: CompileScope = "step",
        compile_mode: CompileMode | None = None,
        fresh_cache_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.compile_mode = compile_mode or MODE  # None: the regime's own
        self.compile_batch = compile_batch
        self.compile_scope = compile_scope
        self._layers: list[tuple[Any, Callable[..., Any]]] = []  # (layer, its compiled call)
        self._fresh_cache_dir = fresh_cache_dir
        self._compiled: Compiled | None = None
        self._cache_dir = ("", "")

    # -- prepare() ------------------------------------------------------------------
    def prepare(self) -> None:
        """The graphs regime's prepare, with inductor's cache folder and dynamo's
        recompile limit set for it alone (compile, warm-up, capture and check); the
        environment is put back afterwards, with what inductor sets itself while it
        compiles (_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR, read as it loads a library)."""
        limit = LAYER_RECOMPILE_LIMIT if self.compile_scope == "layer" else RECOMPILE_LIMIT
        with environment_kept(), _recompile_limit(limit):
            if self._fresh_cache_dir is not None:  # one of --compiles N: an empty cache
                os.environ[CACHE_ENV] = self._fresh_cache_dir
                os.environ[TRITON_CACHE_ENV] = os.path.join(self._fresh_cache_dir, "triton")
                self._cache_dir = (self._fresh_cache_dir, FRESH_CACHE_FROM)
            else:
                self._cache_dir = inductor_cache_dir()
            super().prepare()

    def _build_step(self) -> None:
        """Compile the step and call it once (the compile), timed and synchronized."""
        import torch
        import torch._dynamo

        before = _counts()
        graph_break = None
        started = time.monotonic()
        try:
            try:
                compile_s = self._first_call(fullgraph=True)
            except torch._dynamo.exc.Unsupported as exc:  # a graph break fullgraph refuses
                graph_break = one_line(exc)
                log.info(
                    "%s: fullgraph failed (%s); compiling with graph breaks",
                    self.label,
                    graph_break,
                )
                tried_s = time.monotonic() - started  # the traced part counts too
                compile_s = tried_s + self._first_call(fullgraph=False)
        except torch.OutOfMemoryError:
            raise
        except Exception as exc:  # any compile failure is this format's answer
            why = f"torch.compile ({BACKEND}, {self.compile_mode}) failed: {_reason(exc)}"
            raise DecodeCaptureFailed(self.label, why, self.regime) from exc
        after = _counts()
        deltas = {name: count - before[name] for name, count in after.items()}
        self._compiled = Compiled(compile_s, graph_break is None, graph_break, **deltas)
        log.debug("%s: step compiled in %.1f s (%s)", self.label, compile_s, self._compiled.cache)

    def _first_call(self, *, fullgraph: bool) -> float:
        import torch

        dynamic = self.compile_batch == "dynamic"

        def compile_(function: Callable[..., Any]) -> Callable[..., Any]:
            return torch.compile(
                function,
                backend=BACKEND,
                mode=self.compile_mode,
                fullgraph=fullgraph,
                dynamic=None if dynamic else False,
            )

        if self.compile_scope == "layer":
            compiled = self._layers_compiled(compile_)
        else:
            compiled = compile_(self._step)
        self._prefill()  # the state a step continues from (the prefill is not timed)
        if dynamic:
            self._mark_batch_dynamic()
        self._synchronize()
        started = time.monotonic()
        compiled()
        self._synchronize()
        self._body = compiled
        return time.monotonic() - started

    def _layers_compiled(
        self, compile_: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> Callable[[], None]:
        """The step with each decoder layer compiled on its own (torch.compile of the
        layer's call, as nn.Module.compile does), the compiled calls in place only while
        the step runs: the prefill, the eager check and the margins stay eager."""
        import torch

        layers = getattr(getattr(self.model, "model", None), "layers", None)
        if not isinstance(layers, torch.nn.ModuleList) or len(layers) == 0:
            raise DecodeCaptureFailed(
                self.label,
                "--compile_scope layer needs the model's decoder layers (model.model.layers)",
                self.regime,
            )
        self._layers = [(layer, compile_(layer._call_impl)) for layer in layers]

        def step() -> None:
            for layer, call in self._layers:
                layer._compiled_call_impl = call
            try:
                self._step()
            finally:
                for layer, _ in self._layers:
                    layer._compiled_call_impl = None

        return step

    def _mark_batch_dynamic(self) -> None:
        """The batch dimension of every tensor the step reads or writes with one (the
        prompt, read for its device; the token, position, attended mask and chosen tokens;
        each cache layer's keys and values) compiled as a symbol: one graph for every
        batch size. maybe_mark_dynamic, because dynamo specializes a size of 1: batch 1
        gets a graph of its own, every batch of 2 or more shares one."""
        import torch._dynamo

        tensors = [self.input_ids, self._token, self._position, self._attended, self._chosen]
        for layer in self._cache.layers:
            tensors += [t for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
                        if t is not None]  # fmt: skip
        for tensor in tensors:
            torch._dynamo.maybe_mark_dynamic(tensor, 0)

    def _synchronize(self) -> None:
        import torch

        if self.input_ids.device.type == "cuda":
            torch.cuda.synchronize(self.input_ids.device)

    # -- what the report says -------------------------------------------------------
    def record(self) -> JsonObject:
        import torch

        record = super().record()
        cache_dir, cache_from = self._cache_dir
        record["compiler"] = {
            "backend": BACKEND,
            "mode": self.compile_mode,
            "dynamic": self.compile_batch == "dynamic",
            "batch_dim": self.compile_batch,
            "scope": self.compile_scope,
            "layers_compiled": len(self._layers) if self.compile_scope == "layer" else None,
            "torch": str(torch.__version__),
            "triton": packages.installed_version("triton")
            or packages.installed_version("pytorch-triton"),
            "inductor_cache_dir": cache_dir or None,
            "inductor_cache_dir_from": cache_from or None,
        }
        done = self._compiled
        record["compile_s"] = round(done.compile_s, 3) if done else 0.0
        record["fullgraph"] = done.fullgraph if done else None
        record["graph_break"] = done.graph_break if done else None
        record["inductor_cache"] = done.cache if done else "nothing compiled (one new token)"
        record["fx_graph_cache"] = (
            {"hits": done.cache_hits, "misses": done.cache_misses, "bypasses": done.cache_bypasses}
            if done
            else None
        )
        record["dynamo_graphs"] = done.dynamo_graphs if done else 0
        return record

    def prepared_note(self) -> str | None:
        done = self._compiled
        if done is None:
            return None
        if self.compile_scope == "layer":
            whole = "whole" if done.fullgraph else "with graph breaks"
            shape = (
                f"{len(self._layers)} layers compiled {whole}: {done.dynamo_graphs} graphs, "
                f"{done.cache_hits} loaded from inductor's cache"
            )
        else:
            shape = "one graph" if done.fullgraph else "with graph breaks"
        return (
            f"{self.label}: step compiled in {done.compile_s:.1f} s ({shape}; inductor cache "
            f"{done.cache}); {self._checked_note()}"
        )


def _counts() -> dict[str, int]:
    """Dynamo's and inductor's counters so far, named as Compiled's fields."""
    from torch._dynamo.utils import counters

    inductor = counters["inductor"]
    return {
        "dynamo_graphs": int(counters["stats"]["unique_graphs"]),
        "cache_hits": int(inductor["fxgraph_cache_hit"]),
        "cache_misses": int(inductor["fxgraph_cache_miss"]),
        "cache_bypasses": int(inductor["fxgraph_cache_bypass"]),
    }


def _reason(exc: BaseException) -> str:
    """The first line of what went wrong, looking through dynamo's wrapper of a backend
    failure (whose own first line only says which backend raised)."""
    inner = getattr(exc, "inner_exception", None)
    return one_line(inner if isinstance(inner, BaseException) else exc)
