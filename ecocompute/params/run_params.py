"""The run parameters: one frozen dataclass, filled from a YAML file and/or flags.

Defaults live here and nowhere else (the published protocol: batch 1, 256 new tokens,
10 measured iterations, 2 warm-ups, 10 Hz, context 2048). Every value passes through
one validator, so a bad flag and a bad YAML key get the same one-line error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.formats.table import AUTO, FormatSpec, spec_for
from ecocompute.params.model_size import MAX_PARAMS_B
from ecocompute.published.archs import ARCH_CLASSES

PRECISIONS = tuple(p.value for p in Precision)
MAX_PARAMETERS_BYTES = 1024 * 1024  # a parameters file is a few hundred bytes
MAX_QUALITY_TEXT_BYTES = 16 * 2**20
SAMPLE_RATE_RANGE_HZ = (1, 100)
# Upper bounds far beyond any real run, so that no user value can overflow the
# arithmetic of a run or a report (a report holds no number above 1e15:
# report/numbers.py). 1e5 B is 100 trillion parameters; 2**20 GiB is a pebibyte.
MAX_COUNT = 10**9
UPPER_BOUNDS: dict[str, float] = {
    "params_b": MAX_PARAMS_B,
    "llm_int8_threshold": 1e6,
    "idle_seconds": 86_400.0,
    "max_gpu_memory_gib": float(2**20),
    "ci_target_pts": 1e6,
    "max_minutes": 1e6,
    **{
        name: MAX_COUNT
        for name in (
            "batch_size",
            "context_length",
            "tokens",
            "iterations",
            "warmup",
            "quality_seq_len",
            "max_rounds",
        )
    },
}
DECODE_REGIMES = ("eager", "graphs", "compiled")
SITE = "https://quantenergy.tech"  # the published EcoCompute site


def _f(default: Any, help: str, *, yaml: bool = True) -> Any:
    return field(default=default, metadata={"help": help, "yaml": yaml})


@dataclass(frozen=True)
class RunParams:
    """Everything that decides what a run does. Units are in the names."""

    model_name: str = _f(
        "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        "Hugging Face id, local checkpoint folder, or synthetic:<preset>",
    )
    params_b: float | None = _f(
        None,
        "model size in billions of parameters (published path; default: read from the "
        "model name, and counted from the weights when measured)",
    )
    precision: Precision = _f(  # noqa: RUF009 - a field(), and Precision is immutable
        Precision.NF4,
        "format(s) to compare with FP16: FP16, NF4, INT8, INT4 or FP8, or several "
        "comma-separated (NF4,INT4,FP8: one session, one FP16 baseline, one report each)",
    )
    formats: tuple[Precision, ...] = _f(
        (),
        "every quantized format of a session of several (from --precision A,B,...; "
        "empty for one format)",
        yaml=False,
    )
    backend: str = _f(
        AUTO,
        "library that makes the quantized format(s): auto (NF4, INT8: bitsandbytes; "
        "INT4, FP8: torchao), bitsandbytes or torchao",
    )
    batch_size: int = _f(1, "sequences decoded at once (the published protocol uses 1)")
    gpu_arch: str = _f(
        "auto",
        "auto (from NVML), an arch class (" + ", ".join(ARCH_CLASSES) + "), a product "
        "name such as 'RTX 4090', or a short name such as 4090, a800, t4, h200",
    )
    context_length: int = _f(2048, "context window the prompt plus new tokens must fit in")
    tokens: int = _f(256, "new tokens generated per decode run (min_new_tokens = max)")
    iterations: int = _f(
        10, "measured decode runs per format (the minimum when --ci_target_pts is set)"
    )
    warmup: int = _f(2, "unmeasured warm-up decode runs per format")
    sample_rate_hz: int = _f(10, "power sampler rate, a whole number of Hz from 1 to 100")
    quality_probe: bool = _f(True, "score perplexity of FP16 and the quantized model")
    quality_seq_len: int = _f(
        1024, "tokens per perplexity window (as published; capped at the model's context)"
    )
    quality_text: str | None = _f(
        None,
        "a UTF-8 text file to score instead of the published corpus (its name, size and "
        "sha256 go in the report; default: the published corpus, sha256 22ac091a...5504)",
    )
    llm_int8_threshold: float = _f(
        6.0, "LLM.int8() outlier threshold (0.0 = the pure INT8 variant)"
    )
    idle_seconds: float = _f(5.0, "seconds of idle power read with the models resident")
    max_gpu_memory_gib: float | None = _f(
        None,
        "cap on each GPU's memory for one model's weights (GiB); a model larger than the "
        "cap spreads over the next GPU(s), and the energy of every GPU it occupies is "
        "summed (default: each GPU's free memory)",
    )
    decode: str = _f(
        "eager",
        "decode regime: eager (generate(), the published protocol), graphs (static KV "
        "cache, the one-token step captured as a CUDA graph and replayed per token) or "
        "compiled (the same step compiled by torch.compile first, then captured; the "
        "compile, a minute or more per format, is before any measured window)",
    )
    ci_target_pts: float | None = _f(
        None,
        "stop on precision: after --iterations rounds, keep running paired rounds until "
        "the 95% interval of the delta is at most this many points wide on each side "
        "(or --max_rounds / --max_minutes is reached); stops on the width only, never "
        "on the verdict (default: a fixed --iterations)",
    )
    max_rounds: int = _f(60, "with --ci_target_pts: at most this many paired rounds")
    max_minutes: float = _f(
        30.0, "with --ci_target_pts: start no new round after this many minutes of trials"
    )
    # The published container's website flags: they change nothing that is measured.
    share: bool = _f(
        False,
        "after the run, put a link that overlays this result on the site's curve in "
        "energy.json (share_url) and share_url.txt, and print it; nothing is sent",
    )
    site: str = _f(SITE, "the site --share links to")
    prefetch: bool = _f(
        False,
        "before measuring, ask the site's estimator (<api_base>/v1/estimate) for its "
        "predicted delta vs FP16 (best effort, 3 s; offline the run goes on without it)",
    )
    api_base: str = _f(SITE + "/api", "the site's API, asked by --prefetch")
    output_dir: str = _f("outputs", "folder for energy.json", yaml=False)
    dry_run: bool = _f(False, "skip the GPU: report the published figure", yaml=False)
    quiet: bool = _f(False, "no progress lines on stderr", yaml=False)

    @property
    def scenario(self) -> str:
        return "SingleStream" if self.batch_size == 1 else "Offline"

    @property
    def session_formats(self) -> tuple[Precision, ...]:
        """The quantized formats this run measures against its FP16 baseline, in the
        order given (empty for FP16 alone)."""
        if self.formats:
            return self.formats
        return (self.precision,) if self.precision.quantized else ()

    def spec(self, precision: Precision | None = None) -> FormatSpec:
        """The format (precision and library) this run uses for `precision` (default:
        its own precision)."""
        return spec_for(self.precision if precision is None else precision, self.backend)


FIELDS = {f.name: f for f in dataclasses.fields(RunParams)}
YAML_KEYS = tuple(name for name, f in FIELDS.items() if f.metadata["yaml"])
DEFAULTS = RunParams()


def help_for(name: str) -> str:
    return str(FIELDS[name].metadata["help"])
