"""The run parameters: one frozen dataclass, filled from a YAML file and/or flags.

Defaults live here and nowhere else (the published protocol: batch 1, 256 new tokens,
10 measured iterations, 2 warm-ups, 10 Hz, context 2048). Every value passes through
one validator, so a bad flag and a bad YAML key get the same one-line error.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import stat
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecocompute.errors import InputError
from ecocompute.formats.table import AUTO, BACKENDS, FormatSpec, libraries_for, spec_for
from ecocompute.model_size import MAX_PARAMS_B, name_size_b, params_b_problem
from ecocompute.model_size import nominal_params_b as nominal_params_b  # re-exported
from ecocompute.model_size import params_b_from_model_name as params_b_from_model_name
from ecocompute.precision import Precision
from ecocompute.printable import is_text
from ecocompute.published.archs import ARCH_CLASSES, SHORT_NAMES, normalise_arch_choice
from ecocompute.user_paths import check_creatable, kind_of, lstat_or_none, stat_or_none
from ecocompute.yaml_params import DuplicateKey, TooLongNumber, parameters_loader

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


# --- coercion: one function per kind of value -------------------------------------


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise InputError(name, value, "expected a whole number, not true/false")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InputError(name, value, "expected a whole number")


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise InputError(name, value, "expected a number, not true/false")
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise InputError(name, value, "expected a finite number")
    return number


def _as_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise InputError(name, value, "expected true or false")


def _as_str(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(name, value, "expected a non-empty string")
    return value.strip()


def _as_precision(name: str, value: object) -> Precision:
    text = _as_str(name, value).upper()
    if text not in PRECISIONS:
        raise InputError(name, value, "allowed: " + ", ".join(PRECISIONS))
    return Precision(text)


def _as_precisions(name: str, value: object) -> tuple[Precision, ...]:
    """One precision, or a comma-separated list of quantized ones (a session)."""
    if isinstance(value, Precision):
        return (value,)
    text = _as_str(name, value)
    items = [item.strip() for item in text.split(",")]
    if len(items) == 1:
        return (_as_precision(name, items[0]),)
    if any(not item for item in items):
        raise InputError(name, value, "an empty item in the list; give e.g. NF4,INT4,FP8")
    chosen = tuple(_as_precision(name, item) for item in items)
    if Precision.FP16 in chosen:
        raise InputError(
            name, value, "FP16 is every format's baseline: list only quantized formats"
        )
    if len(set(chosen)) != len(chosen):
        raise InputError(name, value, "lists a format twice")
    return chosen


def _coerce(name: str, value: object) -> object:
    if isinstance(value, TooLongNumber):
        raise InputError(name, str(value), "a number far too long to be this value")
    if name in ("params_b", "max_gpu_memory_gib", "ci_target_pts"):
        return None if value is None else _as_float(name, value)
    if name == "quality_text":
        return None if value is None else _as_str(name, value)
    if name == "precision":
        return _as_precisions(name, value)
    if name == "formats":
        return tuple(value) if isinstance(value, (list, tuple)) else _as_precisions(name, value)
    kind = {int: _as_int, float: _as_float, bool: _as_bool, str: _as_str}
    default = FIELDS[name].default
    return kind[type(default)](name, value)


# --- validation of ranges and choices ---------------------------------------------


def _validate(p: RunParams) -> RunParams:
    if not is_text(p.model_name):
        raise InputError(
            "model_name",
            p.model_name,
            "holds bytes that are not UTF-8 text; a report names its model in text: "
            "rename the folder (or link to it under a UTF-8 name)",
        )
    for name, bound in UPPER_BOUNDS.items():
        value = getattr(p, name)
        if value is not None and value > bound:
            raise InputError(name, value, f"must be at most {bound:g}")
    try:
        normalise_arch_choice(p.gpu_arch)
    except ValueError:
        raise InputError(
            "gpu_arch",
            p.gpu_arch,
            "allowed: auto, " + ", ".join(ARCH_CLASSES) + ", a known NVIDIA product "
            "name such as 'RTX 4090' or 'NVIDIA H200', or a short name: " + ", ".join(SHORT_NAMES),
        ) from None
    for name in ("site", "api_base"):
        check_http_url(name, getattr(p, name))
    for name in ("tokens", "iterations", "batch_size", "context_length", "quality_seq_len"):
        if getattr(p, name) <= 0:
            raise InputError(name, getattr(p, name), "must be a positive whole number")
    if p.params_b is not None and (why := params_b_problem(p.params_b)) is not None:
        raise InputError("params_b", p.params_b, why)
    if p.params_b is None:
        name_size_b(p.model_name)  # a size the name states is checked as --params_b is
    if p.warmup < 0:
        raise InputError("warmup", p.warmup, "must be 0 or more")
    lo, hi = SAMPLE_RATE_RANGE_HZ
    if not lo <= p.sample_rate_hz <= hi:
        raise InputError("sample_rate_hz", p.sample_rate_hz, f"must be within {lo:g}..{hi:g} Hz")
    if p.llm_int8_threshold < 0:
        raise InputError("llm_int8_threshold", p.llm_int8_threshold, "must be 0 or more")
    if p.max_gpu_memory_gib is not None and p.max_gpu_memory_gib <= 0:
        raise InputError("max_gpu_memory_gib", p.max_gpu_memory_gib, "must be a positive GiB")
    if p.idle_seconds < 0:
        raise InputError("idle_seconds", p.idle_seconds, "must be 0 or more seconds")
    if p.quality_text is not None:
        check_quality_text(p.quality_text)
    _validate_formats(p)
    if len(p.session_formats) > 1 and (p.share or p.prefetch):
        raise InputError(
            "share" if p.share else "prefetch",
            True,
            "works with one --precision at a time (a session of several writes a report "
            "per format; share or prefetch each format's run on its own)",
        )
    if p.decode not in DECODE_REGIMES:
        raise InputError("decode", p.decode, "allowed: " + ", ".join(DECODE_REGIMES))
    if p.ci_target_pts is not None:
        if p.ci_target_pts <= 0:
            raise InputError("ci_target_pts", p.ci_target_pts, "must be a positive number")
        if not p.precision.quantized:
            raise InputError(
                "ci_target_pts",
                p.ci_target_pts,
                "needs a quantized --precision (NF4, INT8, INT4 or FP8): it targets the "
                "delta vs FP16",
            )
    if p.ci_target_pts is not None and p.max_rounds < p.iterations:
        raise InputError(
            "max_rounds", p.max_rounds, f"must be at least --iterations ({p.iterations})"
        )
    if p.max_minutes <= 0:
        raise InputError("max_minutes", p.max_minutes, "must be a positive number of minutes")
    if p.tokens >= p.context_length:
        raise InputError(
            "tokens",
            p.tokens,
            f"must leave room for the prompt in context_length {p.context_length}",
        )
    return p


def _validate_formats(p: RunParams) -> None:
    """--backend must be a library, and make every quantized format asked for."""
    if p.backend != AUTO and p.backend not in BACKENDS:
        raise InputError("backend", p.backend, "allowed: " + ", ".join((AUTO, *BACKENDS)))
    for precision in p.session_formats:
        if p.backend != AUTO and p.backend not in libraries_for(precision):
            offered = " or ".join(libraries_for(precision))
            raise InputError(
                "backend", p.backend, f"{p.backend} does not make {precision} ({offered} does)"
            )
        spec_for(precision, p.backend)


# --- the parameters file ----------------------------------------------------------


def read_parameters_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read and check the YAML mapping of parameters. Raises InputError (exit 2)."""
    import yaml  # light, but only the file path needs it

    file = Path(path)
    st = stat_or_none("parameters_file", path)  # a name too long, a NUL byte: InputError
    if st is None or not stat.S_ISREG(st.st_mode):
        what = {"folder": "is a folder", "missing": "does not exist"}.get(
            kind_of(st), "is not a regular file"
        )
        raise InputError("parameters_file", str(path), f"{what}; give a YAML file")
    if st.st_size > MAX_PARAMETERS_BYTES:
        raise InputError(
            "parameters_file",
            str(path),
            f"is larger than {MAX_PARAMETERS_BYTES // 1024} KiB; not a parameters file",
        )
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise InputError("parameters_file", str(path), f"cannot be read ({exc.strerror})") from None
    if not raw.strip():
        raise InputError("parameters_file", str(path), "is empty; expected a YAML mapping")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("parameters_file", str(path), "is not text (binary?)") from None
    if "\x00" in text:
        raise InputError("parameters_file", str(path), "is not text (binary?)")
    try:
        data = yaml.load(text, Loader=parameters_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise InputError("parameters_file", str(path), f"is not valid YAML{at}") from None
    except RecursionError:
        raise InputError(
            "parameters_file", str(path), "is nested too deeply to be a parameters file"
        ) from None
    except DuplicateKey as exc:
        raise InputError("parameters_file", str(path), f"{exc}; give each key once") from None
    if data is None:
        raise InputError("parameters_file", str(path), "holds no parameters")
    if not isinstance(data, Mapping):
        raise InputError(
            "parameters_file",
            str(path),
            f"must be a mapping of key: value, got a YAML {type(data).__name__}",
        )
    for key in data:
        if not isinstance(key, str) or key not in YAML_KEYS:
            close = difflib.get_close_matches(str(key), YAML_KEYS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise InputError(
                "parameters_file key", key, hint + "known keys: " + ", ".join(YAML_KEYS)
            )
    return dict(data)


def resolve(parameters_file: str | None, flags: Mapping[str, object]) -> RunParams:
    """Defaults <- parameters file <- flags, then validated. Raises InputError."""
    values: dict[str, object] = {}
    if parameters_file is not None:
        values.update(read_parameters_file(parameters_file))
    values.update({k: v for k, v in flags.items() if v is not None})
    unknown = set(values) - set(FIELDS)
    if unknown:  # a programming error in the CLI, not user input
        raise KeyError(f"not run parameters: {sorted(unknown)}")
    coerced = {name: _coerce(name, value) for name, value in values.items()}
    if "precision" in coerced:  # one precision, or a session of several
        chosen = coerced["precision"]
        assert isinstance(chosen, tuple)
        coerced["precision"] = chosen[0]
        coerced["formats"] = chosen if len(chosen) > 1 else ()
    return _validate(dataclasses.replace(DEFAULTS, **coerced))  # type: ignore[arg-type]


def check_quality_text(path: str) -> None:
    """--quality_text must be a readable UTF-8 text file of reasonable size."""
    file = Path(path)
    st = stat_or_none("quality_text", path)  # a name too long, a NUL byte: InputError
    if st is None or not stat.S_ISREG(st.st_mode):
        raise InputError("quality_text", path, "is not a file; give a UTF-8 text file")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError("quality_text", path, f"cannot be read ({exc.strerror})") from None
    if len(data) > MAX_QUALITY_TEXT_BYTES:
        raise InputError("quality_text", path, "is larger than 16 MiB; not a scoring text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("quality_text", path, "is not UTF-8 text") from None
    if len(text.split()) < 2:
        raise InputError("quality_text", path, "holds too little text to score")


def check_http_url(name: str, url: str) -> None:
    """--site and --api_base: an http(s) address of a host, with no spaces, query or
    fragment (a path is appended to it), and no user name or password (never echoed).
    Raises InputError."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:  # refused first, and shown without them: stderr must not hold them
        shown = f"{scheme}://***@{authority.rsplit('@', 1)[1]}{slash}{path}"
        raise InputError(
            name,
            shown,
            "must not carry a user name or password (user:pw@): the site is public, and "
            "the report and stderr would show them",
        )
    if any(c.isspace() or not c.isprintable() for c in url):
        raise InputError(name, url, "must be an http(s) URL without spaces")
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a bad port or bracketed host
        port_ok = False
        parts = urllib.parse.urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise InputError(name, url, "must be an http(s) URL such as https://quantenergy.tech")
    if "?" in url or "#" in url:
        raise InputError(name, url, "must not carry a query or fragment (? or #)")


def check_output_dir(path: str) -> Path:
    """The output folder must be a folder we can write, or creatable. Writes nothing.
    Raises InputError for anything else, including a path the system cannot look up
    (a name too long, a NUL byte, a loop of links)."""
    out = Path(path)
    st = stat_or_none("output_dir", path)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise InputError("output_dir", path, f"is a {_kind_words(st)}; give a folder")
    if st is None and lstat_or_none("output_dir", path) is not None:
        raise InputError("output_dir", path, "is a symbolic link to nothing; give a folder")
    existing = out
    while (found := stat_or_none("output_dir", existing)) is None:
        existing = existing.parent
    if not stat.S_ISDIR(found.st_mode):
        raise InputError("output_dir", path, f"{existing} is a {_kind_words(found)}, not a folder")
    # each missing folder's name, and room for the files it will hold
    check_creatable("output_dir", out, room=len(_LONGEST_NAME_INSIDE) + 1)
    try:  # root ignores permission bits, so try for real; the probe file is removed
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise InputError("output_dir", path, f"cannot be written ({exc.strerror})") from None
    return out


# As long as the longest name written inside an output folder (a report's temp file,
# report/atomic.py): a folder whose path leaves no room for it is refused up front.
_LONGEST_NAME_INSIDE = "." + "x" * 63


def _kind_words(st: os.stat_result) -> str:
    kind = kind_of(st)
    return "file" if kind == "file" else kind
