"""The run parameters: one frozen pydantic model, filled from a YAML file and/or flags,
or from typed values (the Python API).

Defaults, help, types, ranges and the rules that tie fields together live here and
nowhere else (the published protocol: batch 1, 256 new tokens, 10 measured iterations,
2 warm-ups, 10 Hz, context 2048). Every way in passes this model, so a bad flag, a bad
YAML key and a bad keyword argument get the same one-line InputError (refusals.py turns
pydantic's ValidationError into it; a rule here raises it itself).

A pydantic dataclass rather than a BaseModel, as vLLM's configs are: dataclasses.replace()
keeps working where the package derives one run's parameters from another's (one format
of a session, one point of a sweep), and it validates the result again.

Flags and YAML values are text (or YAML's scalars): in that mode (from_text) a value is
first read as its field's type, as text_values.py says; typed values (RunParams(...))
must already be of their field's type. Paths (the model, the quality text, the output
folder) are taken exactly as given; other text is stripped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as _ValidationError
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo
from pydantic_core import ArgsKwargs

from ecocompute.core.precision import Precision
from ecocompute.core.printable import is_text
from ecocompute.errors import InputError
from ecocompute.formats.table import AUTO, BACKENDS, LLM_INT8_THRESHOLD, FormatSpec, spec_for
from ecocompute.params.model_size import name_size_b, params_b_problem
from ecocompute.params.path_checks import check_http_url
from ecocompute.params.refusals import Says, one_line
from ecocompute.params.text_values import TEXT, read_as, session_formats
from ecocompute.published.archs import ARCH_CLASSES, SHORT_NAMES, normalise_arch_choice

MAX_PARAMETERS_BYTES = 1024 * 1024  # a parameters file is a few hundred bytes
# Upper bounds far beyond any real run, so that no user value can overflow the
# arithmetic of a run or a report (a report holds no number above 1e15:
# report/numbers.py). 1e5 B is 100 trillion parameters; 2**20 GiB is a pebibyte.
MAX_COUNT = 10**9
Decode = Literal["eager", "graphs", "compiled"]
DECODE_REGIMES: tuple[str, ...] = get_args(Decode)
SITE = "https://quantenergy.tech"  # the published EcoCompute site
PATHS = ("model_name", "quality_text", "output_dir")  # AsGiven: never stripped
NOT_IN_YAML = ("formats", "output_dir", "dry_run", "quiet")

Count = Annotated[int, Field(gt=0, le=MAX_COUNT), Says("must be a positive whole number")]


def _as_given(value: object, info: ValidationInfo) -> str:
    """A path, exactly as given: never stripped, and bytes that are not UTF-8 kept as
    the lone surrogates Python reads them as (pydantic's own str refuses those)."""
    if not isinstance(value, str) or not value:
        raise InputError(str(info.field_name), value, "expected a non-empty string")
    return value


AsGiven = Annotated[str, PlainValidator(_as_given)]


def _f(default: Any, help: str, *, strict: bool | None = True, **constraints: Any) -> Any:
    """A field: its one default, its help text (the flag's), its constraints."""
    return Field(default, description=help, strict=strict, **constraints)


@dataclass(frozen=True, kw_only=True, config=ConfigDict(extra="forbid"))
class RunParams:
    """Everything that decides what a run does. Units are in the names."""

    model_name: AsGiven = _f(
        "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        "Hugging Face id, local checkpoint folder, or synthetic:<preset>",
        strict=None,
    )
    params_b: float | None = _f(
        None,
        "model size in billions of parameters (published path; default: read from the "
        "model name, and counted from the weights when measured)",
        allow_inf_nan=False,
    )
    precision: Precision = _f(
        Precision.NF4,
        "format(s) to compare with FP16: FP16, NF4, INT8, INT4 or FP8, or several "
        "comma-separated (NF4,INT4,FP8: one session, one FP16 baseline, one report each)",
    )
    formats: tuple[Precision, ...] = _f(
        (),
        "every quantized format of a session of several (from --precision A,B,...; "
        "empty for one format)",
    )
    backend: str = _f(
        AUTO,
        "library that makes the quantized format(s): auto (NF4, INT8: bitsandbytes; "
        "INT4, FP8: torchao), bitsandbytes or torchao",
    )
    batch_size: Count = _f(1, "sequences decoded at once (the published protocol uses 1)")
    gpu_arch: str = _f(
        "auto",
        "auto (from NVML), an arch class (" + ", ".join(ARCH_CLASSES) + "), a product "
        "name such as 'RTX 4090', or a short name such as 4090, a800, t4, h200",
        min_length=1,
    )
    context_length: Count = _f(2048, "context window the prompt plus new tokens must fit in")
    tokens: Count = _f(256, "new tokens generated per decode run (min_new_tokens = max)")
    iterations: Count = _f(
        10, "measured decode runs per format (the minimum when --ci_target_pts is set)"
    )
    warmup: Annotated[int, Says("must be 0 or more")] = _f(
        2, "unmeasured warm-up decode runs per format", ge=0, le=MAX_COUNT
    )
    sample_rate_hz: Annotated[int, Says("must be within 1..100 Hz", "must be within 1..100 Hz")] = (
        _f(10, "power sampler rate, a whole number of Hz from 1 to 100", ge=1, le=100)
    )
    quality_probe: bool = _f(True, "score perplexity of FP16 and the quantized model")
    quality_seq_len: Count = _f(
        1024, "tokens per perplexity window (as published; capped at the model's context)"
    )
    quality_text: AsGiven | None = _f(
        None,
        "a UTF-8 text file to score instead of the published corpus (its name, size and "
        "sha256 go in the report; default: the published corpus, sha256 22ac091a...5504)",
        strict=None,
    )
    llm_int8_threshold: Annotated[float, Says("must be 0 or more")] = _f(
        LLM_INT8_THRESHOLD,
        "LLM.int8() outlier threshold (0.0 = the pure INT8 variant)",
        ge=0,
        le=1e6,
        allow_inf_nan=False,
    )
    idle_seconds: Annotated[float, Says("must be 0 or more seconds")] = _f(
        5.0,
        "seconds of idle power read with the models resident",
        ge=0,
        le=86_400.0,
        allow_inf_nan=False,
    )
    max_gpu_memory_gib: Annotated[float | None, Says("must be a positive GiB")] = _f(
        None,
        "cap on each GPU's memory for one model's weights (GiB); a model larger than the "
        "cap spreads over the next GPU(s), and the energy of every GPU it occupies is "
        "summed (default: each GPU's free memory)",
        gt=0,
        le=float(2**20),
        allow_inf_nan=False,
    )
    decode: Decode = _f(
        "eager",
        "decode regime: eager (generate(), the published protocol), graphs (static KV "
        "cache, the one-token step captured as a CUDA graph and replayed per token) or "
        "compiled (the same step compiled by torch.compile first, then captured; the "
        "compile, a minute or more per format, is before any measured window)",
        strict=None,  # a Literal is matched exactly
    )
    ci_target_pts: Annotated[float | None, Says("must be a positive number")] = _f(
        None,
        "stop on precision: after --iterations rounds, keep running paired rounds until "
        "the 95% interval of the delta is at most this many points wide on each side "
        "(or --max_rounds / --max_minutes is reached); stops on the width only, never "
        "on the verdict (default: a fixed --iterations)",
        gt=0,
        le=1e6,
        allow_inf_nan=False,
    )
    max_rounds: int = _f(60, "with --ci_target_pts: at most this many paired rounds", le=MAX_COUNT)
    max_minutes: Annotated[float, Says("must be a positive number of minutes")] = _f(
        30.0,
        "with --ci_target_pts: start no new round after this many minutes of trials",
        gt=0,
        le=1e6,
        allow_inf_nan=False,
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
    output_dir: AsGiven = _f("outputs", "folder for energy.json", strict=None)
    dry_run: bool = _f(False, "skip the GPU: report the published figure")
    quiet: bool = _f(False, "no progress lines on stderr")

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
        """The format (precision and library, with this run's settings of it) this run
        uses for `precision` (default: its own precision)."""
        chosen = self.precision if precision is None else precision
        return spec_for(chosen, self.backend, llm_int8_threshold=self.llm_int8_threshold)

    # -- how values come in --------------------------------------------------------------
    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except _ValidationError as exc:
            raise one_line(exc, FIELDS) from None

    @model_validator(mode="before")
    @classmethod
    def _sessions(cls, data: Any, info: Any) -> Any:
        """precision="NF4,INT4" (or a list, typed): the first is the precision, all
        of them the session's formats."""
        given = dict(data.kwargs or {}) if isinstance(data, ArgsKwargs) else dict(data)
        if "precision" in given:
            chosen = session_formats(given["precision"], text=info.context is TEXT)
            given["precision"] = chosen[0]
            if len(chosen) > 1:
                given["formats"] = chosen
        return ArgsKwargs((), given) if isinstance(data, ArgsKwargs) else given

    @field_validator("*", mode="before")
    @classmethod
    def _read(cls, value: Any, info: Any) -> Any:
        name = info.field_name
        if name in ("precision", "formats"):  # read by _sessions
            return value
        if info.context is TEXT:
            value = read_as(name, _KINDS[name], value)
        if isinstance(value, str) and name not in PATHS:
            return value.strip()
        return value

    # -- one field's rules ---------------------------------------------------------------
    @field_validator("model_name")
    @classmethod
    def _model_name(cls, value: str) -> str:
        if not value.strip():
            raise InputError("model_name", value, "expected a non-empty string")
        if not is_text(value):
            raise InputError(
                "model_name",
                value,
                "holds bytes that are not UTF-8 text; a report names its model in text: "
                "rename the folder (or link to it under a UTF-8 name)",
            )
        return value

    @field_validator("params_b")
    @classmethod
    def _params_b(cls, value: float | None) -> float | None:
        if value is not None and (why := params_b_problem(value)) is not None:
            raise InputError("params_b", value, why)
        return value

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str) -> str:
        if value not in (AUTO, *BACKENDS):
            raise InputError("backend", value, "allowed: " + ", ".join((AUTO, *BACKENDS)))
        return value

    @field_validator("gpu_arch")
    @classmethod
    def _gpu_arch(cls, value: str) -> str:
        try:
            normalise_arch_choice(value)
        except ValueError:
            raise InputError(
                "gpu_arch",
                value,
                "allowed: auto, " + ", ".join(ARCH_CLASSES) + ", a known NVIDIA product "
                "name such as 'RTX 4090' or 'NVIDIA H200', or a short name: "
                + ", ".join(SHORT_NAMES),
            ) from None
        return value

    @field_validator("site", "api_base")
    @classmethod
    def _url(cls, value: str, info: Any) -> str:
        check_http_url(info.field_name, value)
        return value

    # -- the rules that tie fields together ----------------------------------------------
    @model_validator(mode="after")
    def _together(self) -> RunParams:
        if self.params_b is None:
            name_size_b(self.model_name)  # a size the name states is checked as --params_b is
        if self.formats and (len(self.formats) < 2 or self.formats[0] is not self.precision):
            raise InputError(
                "formats", self.formats, "is a session's, set by precision (NF4,INT4 or a list)"
            )
        session_formats(self.formats or self.precision, text=False)  # FP16, or one twice
        for precision in self.session_formats:
            self.spec(precision)  # raises: this backend does not make it
        if len(self.session_formats) > 1 and (self.share or self.prefetch):
            raise InputError(
                "share" if self.share else "prefetch",
                True,
                "works with one --precision at a time (a session of several writes a report "
                "per format; share or prefetch each format's run on its own)",
            )
        if self.ci_target_pts is not None:
            if not self.precision.quantized:
                raise InputError(
                    "ci_target_pts",
                    self.ci_target_pts,
                    "needs a quantized --precision (NF4, INT8, INT4 or FP8): it targets the "
                    "delta vs FP16",
                )
            if self.max_rounds < self.iterations:
                raise InputError(
                    "max_rounds",
                    self.max_rounds,
                    f"must be at least --iterations ({self.iterations})",
                )
        if self.tokens >= self.context_length:
            raise InputError(
                "tokens",
                self.tokens,
                f"must leave room for the prompt in context_length {self.context_length}",
            )
        return self


FIELDS: dict[str, FieldInfo] = RunParams.__pydantic_fields__  # type: ignore[attr-defined]
_KINDS = {name: field.annotation for name, field in FIELDS.items()}
YAML_KEYS = tuple(name for name in FIELDS if name not in NOT_IN_YAML)
DEFAULTS = RunParams()
_FROM_TEXT = TypeAdapter(RunParams)


def from_text(values: Mapping[str, object]) -> RunParams:
    """RunParams from flags and YAML values (text, or YAML's scalars), each read as its
    field's type first (text_values.py). Raises InputError."""
    params: RunParams = _FROM_TEXT.validate_python(values, context=TEXT)
    return params


def help_for(name: str) -> str:
    return str(FIELDS[name].description)
