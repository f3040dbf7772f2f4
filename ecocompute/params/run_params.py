"""The run parameters: one frozen pydantic model. Defaults, help, types, ranges and the
rules that tie fields together live here and nowhere else (the published protocol:
batch 1, 256 new tokens, 10 measured iterations, 2 warm-ups, 10 Hz, context 2048).

Every way in is this model: keyword arguments typed (RunParams(...), the Python API),
flags and YAML values read as their field's type first (from_text; text_values.py). So a
bad flag, a bad YAML key and a bad keyword argument get the same one-line InputError
(one_line words pydantic's refusals; a rule here raises its own). Paths (the model,
the quality text, the output folder) are taken exactly as given; other text is stripped.

A pydantic dataclass rather than a BaseModel (as vLLM's configs are): dataclasses.replace()
keeps working where one run's parameters are derived from another's (a format of a
session, a point of a sweep), and checks the result again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NamedTuple, get_args

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo
from pydantic_core import ArgsKwargs

from ecocompute.core.precision import Precision
from ecocompute.core.printable import is_text
from ecocompute.errors import InputError
from ecocompute.formats.table import (
    AUTO,
    BACKENDS,
    LLM_INT8_THRESHOLD,
    FormatSpec,
    libraries_for,
    spec_for,
)
from ecocompute.params.model_size import name_size_b, params_b_problem
from ecocompute.params.path_checks import UNEXPANDED, check_http_url
from ecocompute.params.text_values import read_as, session_formats
from ecocompute.published.archs import ARCH_CLASSES, SHORT_NAMES, normalise_arch_choice

# Upper bounds far beyond any real run, so that no user value can overflow the
# arithmetic of a run or a report (a report holds no number above 1e15:
# report/numbers.py). 1e5 B is 100 trillion parameters; 2**20 GiB is a pebibyte.
MAX_COUNT = 10**9
SITE = "https://quantenergy.tech"  # the published EcoCompute site
# The site's estimator, as its API's README (hongping-zh/quant-energy api/README.md) and
# the published container (DEFAULT_API_BASE in its entrypoint) name it.
API_BASE = "https://ecocompute-estimator.zhanghongping1982.workers.dev"
NOT_IN_YAML = ("formats", "output_dir", "dry_run", "quiet")
STRIPPED = (
    "backend",
    "gpu_arch",
    "decode",
    "phases",
    "compile_batch",
    "compile_scope",
    "compile_mode",
    "site",
    "api_base",
)  # text, not a path
POSITIVE = "must be a positive whole number"
MAX_COMPILES = 8  # each compile of a 7B model's step takes a minute or more on an H200
# The token check's default near tie (--near_tie_std): two tokens whose eager logits
# differ by at most this fraction of the logits' standard deviation; rounding, not a wrong
# capture or compile, may choose between them.
NEAR_TIE_STD_FRACTION = 0.05
# The compiled regime's own inductor mode; a compile in another mode is another regime's
# measurement as far as pooling goes (docs/validation/h200-compile-mode: on two H200s the
# default mode's FP16 step spent 11-16% less energy a token than max-autotune's).
COMPILE_MODE = "max-autotune-no-cudagraphs"
# --compile_batch, --compile_scope, --compile_mode: one vocabulary for RunParams and the
# compiled decoder that takes them (llm/compiled.py), so mypy holds every caller to it
CompileBatch = Literal["static", "dynamic"]
CompileScope = Literal["step", "layer"]
CompileMode = Literal["max-autotune-no-cudagraphs", "default"]
# Typed values only (text is read before: from_text), no NaN or infinity, no unknown name.
_CONFIG = ConfigDict(strict=True, allow_inf_nan=False, extra="forbid")


class Says(NamedTuple):
    """How a field words a value outside its range: below its lower bound, and above
    its upper one (default: "must be at most <bound>")."""

    low: str
    high: str | None = None


def one_line(exc: ValidationError) -> InputError:
    """pydantic's first refusal, in the order the fields are declared, as the project's
    one-line InputError, `invalid <field> <value>: <allowed>` (exit 2), in the words the
    command line has always used. The value shown is the one given, never pydantic's
    rendering of it."""
    order = list(FIELDS)

    def place(error: Any) -> int:
        loc = error["loc"]
        return order.index(loc[0]) if loc and loc[0] in order else len(order)

    error = min(exc.errors(include_url=False), key=place)
    name = str(error["loc"][0]) if error["loc"] else "parameters"
    return InputError(name, error["input"], _allowed(error, FIELDS.get(name)))


def _allowed(error: Any, field: FieldInfo | None) -> str:
    kind, value, ctx = error["type"], error["input"], error.get("ctx") or {}
    yes_no = isinstance(value, bool)
    if kind.startswith("int_"):
        return "expected a whole number" + (", not true/false" if yes_no else "")
    if kind.startswith("float_") or kind == "finite_number":
        return "expected a number, not true/false" if yes_no else "expected a finite number"
    if kind.startswith("bool_"):
        return "expected true or false"
    if kind.startswith("string_") or (kind == "literal_error" and not isinstance(value, str)):
        return "expected a non-empty string"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        return "not a run parameter"
    if field is None:
        return str(error["msg"])
    if kind == "literal_error":
        return "allowed: " + ", ".join(map(str, get_args(field.annotation)))
    says = next((m for m in field.metadata if isinstance(m, Says)), None)
    if kind == "less_than_equal":
        return says.high if says and says.high else f"must be at most {ctx['le']:g}"
    if kind in ("greater_than", "greater_than_equal") and says:
        return says.low
    return str(error["msg"])


def _as_given(value: object, info: ValidationInfo) -> str:
    """A path, exactly as given: never stripped, and bytes that are not UTF-8 kept as
    the lone surrogates Python reads them as (pydantic's own str refuses those)."""
    if not isinstance(value, str) or not value:
        raise InputError(str(info.field_name), value, "expected a non-empty string")
    return value


AsGiven = Annotated[str, PlainValidator(_as_given)]


class Flag(NamedTuple):
    """How the command line sets a field: --<name> (and --<name-with-dashes>) followed by
    a value shown as `metavar`, or, without one, a switch (--<name>; --no_<name> for a
    field that is on by default); `also`: other spellings, shown first."""

    metavar: str | None = None
    also: tuple[str, ...] = ()
    help: str | None = None  # a switch's own, where it is not the field's


def _f(
    default: Any,
    help: str,
    says: str | None = None,
    above: str | None = None,
    *,
    flag: str | Flag | None = None,
    **bounds: Any,
) -> Any:
    """A field: its one default, its help text, its flag (a metavar, or a Flag; None: no
    flag), its range, and how a value outside it is refused (says: below the lower
    bound; above: above the upper one, by default "must be at most <bound>")."""
    field = Field(default, description=help, **bounds)
    field.metadata += [Says(says, above)] if says else []
    field.metadata += [Flag(flag) if isinstance(flag, str) else flag] if flag else []
    return field


@dataclass(frozen=True, kw_only=True, config=_CONFIG)
class RunParams:
    """Everything that decides what a run does. Units are in the names."""

    # fmt: off
    model_name: AsGiven = _f("TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        "Hugging Face id, local checkpoint folder, or synthetic:<preset>",
        flag=Flag("ID", ("--model",)))
    params_b: float | None = _f(None,
        "model size in billions of parameters (published path; default: read from the "
        "model name, and counted from the weights when measured)", flag="B")
    precision: Precision = _f(Precision.NF4,
        "format(s) to compare with FP16: FP16, NF4, INT8, INT4 or FP8, or several "
        "comma-separated (NF4,INT4,FP8: one session, one FP16 baseline, one report each)",
        flag="{FP16,NF4,INT8,INT4,FP8}[,...]")
    formats: tuple[Precision, ...] = _f((),
        "every quantized format of a session of several (from --precision A,B,...; "
        "empty for one format)")
    backend: str = _f(AUTO,
        "library that makes the quantized format(s): auto (NF4, INT8: bitsandbytes; "
        "INT4, FP8: torchao), bitsandbytes or torchao", flag="{auto,bitsandbytes,torchao}")
    batch_size: int = _f(1, "sequences decoded at once (the published protocol uses 1)",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    gpu_arch: str = _f("auto",
        "auto (from NVML), an arch class (" + ", ".join(ARCH_CLASSES) + "), a product "
        "name such as 'RTX 4090', or a short name such as 4090, a800, t4, h200", flag="ARCH")
    context_length: int = _f(2048, "context window the prompt plus new tokens must fit in",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    tokens: int = _f(256, "new tokens generated per decode run (min_new_tokens = max)",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    prompt_tokens: int | None = _f(None,
        "prompt length in tokens: seeded random ids for synthetic weights, the first N "
        "tokens of the published quality corpus for real weights; the static cache is "
        "sized prompt + new tokens (default: the published protocol's prompt, 12 random "
        "ids or a fixed English instruction)", POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    phases: Literal["together", "apart"] = _f("together",
        "together: each trial is one window over the prefill and the decode (the "
        "published protocol); apart (graphs and compiled): each trial measures the "
        "prefill and the decode in two windows, and the report gives prefill energy per "
        "prompt token, decode energy per generated token and the workload's combined "
        "figure, each with its own paired delta", flag="{together,apart}")
    prefill_window_s: float = _f(1.0,
        "with --phases apart: the shortest prefill window; where one prefill is shorter, "
        "each window holds as many prefills as fill it (counted in the report)",
        "must be a positive number of seconds", gt=0, le=3600.0, flag="S")
    iterations: int = _f(10,
        "measured decode runs per format (the minimum when --ci_target_pts is set)",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    warmup: int = _f(2, "unmeasured warm-up decode runs per format",
        "must be 0 or more", ge=0, le=MAX_COUNT, flag="N")
    sample_rate_hz: int = _f(10, "power sampler rate, a whole number of Hz from 1 to 100",
        "must be within 1..100 Hz", "must be within 1..100 Hz", ge=1, le=100, flag="HZ")
    quality_probe: bool = _f(True, "score perplexity of FP16 and the quantized model",
        flag=Flag(help="skip the perplexity probe"))
    quality_seq_len: int = _f(1024,
        "tokens per perplexity window (as published; capped at the model's context)",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    quality_text: AsGiven | None = _f(None,
        "a UTF-8 text file to score instead of the published corpus (its name, size and "
        "sha256 go in the report; default: the published corpus, sha256 22ac091a...5504)",
        flag="FILE")
    llm_int8_threshold: float = _f(LLM_INT8_THRESHOLD,
        "LLM.int8() outlier threshold (0.0 = the pure INT8 variant)",
        "must be 0 or more", ge=0, le=1e6, flag="X")
    idle_seconds: float = _f(5.0, "seconds of idle power read with the models resident",
        "must be 0 or more seconds", ge=0, le=86_400.0, flag="S")
    max_gpu_memory_gib: float | None = _f(None,
        "cap on each GPU's memory for one model's weights (GiB); a model larger than the "
        "cap spreads over the next GPU(s), and the energy of every GPU it occupies is "
        "summed (default: each GPU's free memory)",
        "must be a positive GiB", gt=0, le=float(2**20), flag="GIB")
    decode: Literal["eager", "graphs", "compiled"] = _f("eager",
        "decode regime: eager (generate(), the published protocol), graphs (static KV "
        "cache, the one-token step captured as a CUDA graph and replayed per token) or "
        "compiled (the same step compiled by torch.compile first, then captured; the "
        "compile, a minute or more per format, is before any measured window)",
        flag="{eager,graphs,compiled}")
    compiles: int = _f(1,
        "with --decode compiled: compile every format this many times, each from an empty "
        "inductor cache, and measure --iterations rounds under each compile; the delta's "
        "interval then spans compiles (random effects over the compiles' paired deltas)",
        f"must be a whole number from 1 to {MAX_COMPILES}",
        f"must be a whole number from 1 to {MAX_COMPILES}", gt=0, le=MAX_COMPILES, flag="N")
    compile_batch: CompileBatch = _f("static",
        "with --decode compiled: static (the step compiled for this batch size, shapes "
        "fixed) or dynamic (the batch dimension compiled as a symbol: batch 1 gets a graph "
        "of its own, every batch of 2 or more shares one, so a sweep over batch sizes "
        "compiles each format twice instead of once per size)", flag="{static,dynamic}")
    compile_scope: CompileScope = _f("step",
        "with --decode compiled: step (the whole one-token step compiled as one graph) or "
        "layer (each decoder layer compiled on its own, the rest of the step eager, all "
        "of it captured as one CUDA graph: regional compilation, whose layers after the "
        "first load their graph from inductor's cache, a shorter compile)",
        flag="{step,layer}")
    compile_mode: CompileMode = _f(
        COMPILE_MODE,
        "with --decode compiled: inductor's mode; max-autotune-no-cudagraphs times candidate "
        "kernels for every matmul and fused kernel (the longer compile), default takes "
        "inductor's heuristics and cuBLAS (a shorter compile, perhaps slower kernels); the "
        "CUDA graph is the tool's own in both", flag="{max-autotune-no-cudagraphs,default}")
    near_tie_std: float = _f(NEAR_TIE_STD_FRACTION,
        "with --decode graphs or compiled: the token check's near tie. Where the regime's "
        "decode parts from the eager step, the two tokens' eager logits may lie at most "
        "this fraction of the logits' standard deviation apart (a rounding difference); "
        "any wider parting refuses the format. Formats that quantize activations (FP8, "
        "LLM.int8()) round further from their eager step when compiled; a wider tie is a "
        "stated choice, recorded in the report's token_check; it also passes more broken "
        "steps, whose first parting may be a close call (docs/method.md)",
        "must be a number above 0", gt=0, le=1, flag="FRACTION")
    ci_target_pts: float | None = _f(None,
        "stop on precision: after --iterations rounds, keep running paired rounds until "
        "the 95% interval of the delta is at most this many points wide on each side "
        "(or --max_rounds / --max_minutes is reached); stops on the width only, never "
        "on the verdict (default: a fixed --iterations)",
        "must be a positive number", gt=0, le=1e6, flag="PTS")
    max_rounds: int = _f(60, "with --ci_target_pts: at most this many paired rounds",
        POSITIVE, gt=0, le=MAX_COUNT, flag="N")
    max_minutes: float = _f(30.0,
        "with --ci_target_pts: start no new round after this many minutes of trials",
        "must be a positive number of minutes", gt=0, le=1e6, flag="MIN")
    output_dir: AsGiven = _f("outputs", "folder for energy.json", flag="DIR")
    # The published container's website flags: they change nothing that is measured.
    share: bool = _f(False,
        "after the run, put a link that overlays this result on the site's curve in "
        "energy.json (share_url) and share_url.txt, and print it; nothing is sent",
        flag=Flag())
    site: str = _f(SITE, "the site --share links to", flag="URL")
    prefetch: bool = _f(False,
        "before measuring, ask the site's estimator (<api_base>/v1/estimate) for its "
        "predicted delta vs FP16 (best effort, 3 s; offline the run goes on without it)",
        flag=Flag())
    api_base: str = _f(API_BASE, "the site's estimator API, asked by --prefetch", flag="URL")
    power_trace: bool = _f(False,
        "a measured run also traces power from before the model loads to the end "
        "(power_trace.csv, power_trace_fp16.csv beside energy.json, with the phases' edges; "
        "the reported energy is unchanged); the published path has nothing to trace",
        flag=Flag())
    dry_run: bool = _f(False, "skip the GPU: report the published figure", flag=Flag())
    quiet: bool = _f(False, "no progress lines on stderr", flag=Flag(also=("-q",)))
    # fmt: on

    @property
    def compile_notes(self) -> tuple[str, ...]:
        """How this run's compile departs from the compiled regime's own (none for any
        other regime): the words that keep its reports and units apart from others'."""
        if self.decode != "compiled":
            return ()
        return compile_notes(self.compile_mode, self.compile_batch, self.compile_scope)

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

    def spec(self, precision: Precision | str | None = None) -> FormatSpec:
        """The format (precision and library, with this run's settings of it) this run
        uses for `precision` (default: its own precision; "INT8" as Precision.INT8).
        Raises InputError for a precision no format has."""
        if isinstance(precision, str) and not isinstance(precision, Precision):
            try:
                precision = Precision(precision.upper())
            except ValueError:
                allowed = ", ".join(str(p) for p in Precision)
                raise InputError("precision", precision, f"allowed: {allowed}") from None
        chosen = self.precision if precision is None else precision
        return spec_for(chosen, self.backend, llm_int8_threshold=self.llm_int8_threshold)

    # -- how values come in --------------------------------------------------------------
    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            raise one_line(exc) from None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: ArgsKwargs) -> ArgsKwargs:
        """Text other than a path is stripped (and refused when blank); precision
        "NF4,INT4" (or a list) is a session: the first is the precision, all of them the
        session's formats."""
        given = dict(data.kwargs or {})
        for name in [n for n in STRIPPED if n in given]:
            if type(value := given[name]) is str:
                if not value.strip():
                    raise InputError(name, value, "expected a non-empty string")
                given[name] = value.strip()
        if "precision" in given:
            chosen = session_formats(given["precision"])
            given["precision"] = chosen[0]
            if len(chosen) > 1:
                given["formats"] = chosen
        return ArgsKwargs((), given)

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
        if value.startswith("~"):  # taken as given, as --output_dir is (path_checks.py)
            raise InputError("model_name", value, f"{UNEXPANDED}, or ./{value} for that folder")
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
            allowed = (
                f"allowed: auto, {', '.join(ARCH_CLASSES)}, a known NVIDIA product name such "
                f"as 'RTX 4090' or 'NVIDIA H200', or a short name: {', '.join(SHORT_NAMES)}"
            )
            raise InputError("gpu_arch", value, allowed) from None
        return value

    @field_validator("site", "api_base")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        check_http_url(str(info.field_name), value)
        return value

    # -- the rules that tie fields together ----------------------------------------------
    @model_validator(mode="after")
    def _together(self) -> RunParams:
        if self.params_b is None:
            name_size_b(self.model_name)  # a size the name states is checked as --params_b is
        if self.formats and (len(self.formats) < 2 or self.formats[0] is not self.precision):
            why = "is a session's, set by precision (NF4,INT4 or a list)"
            raise InputError("formats", self.formats, why)
        session_formats(self.formats or self.precision)  # FP16, or one twice
        for precision in self.session_formats:
            if self.backend != AUTO and self.backend not in libraries_for(precision):
                offered = " or ".join(libraries_for(precision))
                why = f"{self.backend} does not make {precision} ({offered} does)"
                raise InputError("backend", self.backend, why)
        one_at_a_time = [n for n in ("share", "prefetch", "power_trace") if getattr(self, n)]
        if len(self.session_formats) > 1 and one_at_a_time:
            raise InputError(
                one_at_a_time[0],
                True,
                "works with one --precision at a time (a session of several writes a report "
                "per format; share, prefetch or trace each format's run on its own)",
            )
        if self.ci_target_pts is not None and not self.precision.quantized:
            raise InputError(
                "ci_target_pts",
                self.ci_target_pts,
                "needs a quantized --precision (NF4, INT8, INT4 or FP8): it targets the "
                "delta vs FP16",
            )
        if self.ci_target_pts is not None and self.max_rounds < self.iterations:
            at_least = f"must be at least --iterations ({self.iterations})"
            raise InputError("max_rounds", self.max_rounds, at_least)
        if self.compiles > 1:
            for wrong, why in (
                (self.decode != "compiled", "needs --decode compiled (only a compile varies)"),
                (
                    not self.precision.quantized,
                    "needs a quantized --precision: it spans the delta vs FP16 over compiles",
                ),
                (
                    self.ci_target_pts is not None,
                    "takes a fixed --iterations per compile, not --ci_target_pts",
                ),
                (
                    self.iterations < 2,
                    "needs --iterations 2 or more (each compile's delta needs its own "
                    "standard error)",
                ),
            ):
                if wrong:
                    raise InputError("compiles", self.compiles, why)
        if self.tokens >= self.context_length:
            room = f"must leave room for the prompt in context_length {self.context_length}"
            raise InputError("tokens", self.tokens, room)
        if (
            self.prompt_tokens is not None
            and self.prompt_tokens + self.tokens > self.context_length
        ):
            room = (
                f"the prompt and {self.tokens} new tokens ({self.prompt_tokens + self.tokens}) "
                f"must fit in context_length {self.context_length}"
            )
            raise InputError("prompt_tokens", self.prompt_tokens, room)
        if self.phases == "apart" and self.decode == "eager":
            raise InputError(
                "phases",
                self.phases,
                "needs --decode graphs or compiled (eager generate() runs its own prefill "
                "inside the decode; its trials measure both together)",
            )
        for name, has in (
            ("compile_batch", "shapes to keep dynamic"),
            ("compile_scope", "layers compiled"),
            ("compile_mode", "a compile mode"),
        ):
            if self.decode != "compiled" and (value := getattr(self, name)) != FIELDS[name].default:
                why = f"needs --decode compiled (only a compiled step has {has})"
                raise InputError(name, value, why)
        if self.near_tie_std != NEAR_TIE_STD_FRACTION and self.decode == "eager":
            why = "needs --decode graphs or compiled (only a replayed step is checked)"
            raise InputError("near_tie_std", self.near_tie_std, why)
        if self.phases == "apart" and self.tokens < 2:
            why = "needs --tokens 2 or more (the first new token is the prefill's)"
            raise InputError("phases", self.phases, why)
        self._no_setting_without_effect()
        return self

    def _no_setting_without_effect(self) -> None:
        """A setting given where nothing reads it is refused, as a compile option without
        --decode compiled is: the run would say nothing of it, and measure without it.
        (Not the INT8 threshold: a session's formats are each run from a copy of these
        parameters holding one format, which must keep the session's settings.)"""
        for name, unused, why in (
            ("prefill_window_s", self.phases != "apart", "needs --phases apart"),
            ("max_rounds", self.ci_target_pts is None, "only with --ci_target_pts"),
            ("max_minutes", self.ci_target_pts is None, "only with --ci_target_pts"),
        ):
            if unused and (value := getattr(self, name)) != FIELDS[name].default:
                raise InputError(name, value, why)


FIELDS: dict[str, FieldInfo] = RunParams.__pydantic_fields__  # type: ignore[attr-defined]
YAML_KEYS = tuple(name for name in FIELDS if name not in NOT_IN_YAML)
DEFAULTS = RunParams()


def from_text(values: Mapping[str, object]) -> RunParams:
    """RunParams from flags and YAML values (text, or YAML's scalars), each read as its
    field's type first (text_values.py). Raises InputError."""
    kinds = {name: field.annotation for name, field in FIELDS.items()}
    read: Mapping[str, Any] = {k: read_as(k, kinds.get(k), v) for k, v in values.items()}
    return RunParams(**read)


def flag_for(name: str) -> Flag | None:
    """How the command line sets field `name` (None: it does not)."""
    return next((m for m in FIELDS[name].metadata if isinstance(m, Flag)), None)


def compile_notes(mode: str, batch_dim: str | None, scope: str | None) -> tuple[str, ...]:
    """How a compile departs from the compiled regime's own (max-autotune, the whole step
    compiled for its batch size): a dynamic batch, layers compiled on their own, another
    mode of inductor's. Reports whose notes differ never pool, and units stand beside a
    measured run only where their notes are its own."""
    notes = ["dynamic batch"] if batch_dim == "dynamic" else []
    if scope == "layer":
        notes.append("layers compiled")
    if mode != COMPILE_MODE:
        notes.append(f"mode {mode}")
    return tuple(notes)
