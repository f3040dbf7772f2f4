"""--prefetch: ask the site's estimator for its predicted delta before measuring.

Best effort: one HTTP GET with a short deadline for the whole request (bounded_get.py),
standard library only, before anything is loaded or measured (never inside a measured
window). Any failure (offline, refused, timed out, an HTTP error, an answer without a
number) is one line on stderr and the run goes on; the report records what was asked
and what came back.

The answer is untrusted input: at most MAX_ANSWER_BYTES are read, JSON nested deeper
than MAX_ANSWER_DEPTH, an integer of more than MAX_INT_DIGITS digits, NaN, Infinity
or a float that overflows are "not an estimate", a predicted delta outside
PREDICTION_RANGE_PCT is refused as impossible, and anything the server said (an HTTP
reason, an error) reaches the terminal and the report as one printable line.

ASSUMED API SHAPE (the published estimator's exact interface is not documented where
this project can read it; its README says the container "packages the same inputs as
the EcoCompute /v1/estimate API (model_name, precision, batch_size, gpu_arch)"):
  GET <api_base>/v1/estimate?model_name=..&params_b=..&precision=..&batch_size=..&gpu_arch=..
  (params_b and gpu_arch are left out when unknown before the run: --gpu_arch auto is
  only decided by NVML during the run), answered with JSON holding the predicted delta
  vs FP16 in percent under one of PREDICTION_KEYS, at the top level or inside one of
  NESTED_KEYS. Anything else is recorded as "answered without a predicted delta".
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import urllib.parse
from dataclasses import asdict, dataclass
from typing import Any

from ecocompute import __version__
from ecocompute.core.printable import printable
from ecocompute.published.archs import normalise_arch_choice
from ecocompute.published.bounded_get import GetFailed, get_bounded

TIMEOUT_S = 3.0  # for the whole request: connection, headers and body
MAX_ANSWER_BYTES = 64 * 1024  # an estimate is a few hundred bytes
MAX_ANSWER_DEPTH = 16  # an estimate nests two or three levels
MAX_INT_DIGITS = 20
# A delta vs FP16 below -100% would be negative energy; above +10,000% a format would
# spend 100 times FP16's energy per token. Anything outside is no estimate.
PREDICTION_RANGE_PCT = (-100.0, 10_000.0)
MAX_REASON_CHARS = 200
PREDICTION_KEYS = (
    "vs_fp16_energy_pct",
    "predicted_vs_fp16_pct",
    "delta_vs_fp16_pct",
    "vs_fp16_pct",
)
NESTED_KEYS = ("results", "prediction", "estimate")


@dataclass(frozen=True)
class Prefetched:
    """What --prefetch asked and got; its record goes in provenance.prefetch."""

    api_base: str
    url: str
    answered: bool  # whether the site answered at all (an HTTP error is an answer)
    predicted_vs_fp16_pct: float | None  # None when the site did not answer with one
    fetched_utc: str | None  # when the answer arrived; None without an answer
    error: str | None  # why there is no prediction, in words; None when there is one

    def record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EstimateInputs:
    """A run's inputs as the estimator takes them, known before the run."""

    model_name: str
    params_b: float | None  # None: not given and not in the model name
    precision: str
    batch_size: int
    gpu_arch: str  # --gpu_arch as given: auto, a class, a product or a short name


def estimate_url(api_base: str, inputs: EstimateInputs) -> str:
    """The GET request for a run's inputs (see the module docstring)."""
    query: dict[str, str] = {"model_name": inputs.model_name}
    if inputs.params_b is not None:
        query["params_b"] = f"{inputs.params_b:g}"
    query["precision"] = inputs.precision
    query["batch_size"] = str(inputs.batch_size)
    arch, _ = normalise_arch_choice(inputs.gpu_arch)
    if arch != "auto":
        query["gpu_arch"] = arch
    return api_base.rstrip("/") + "/v1/estimate?" + urllib.parse.urlencode(query)


def prediction_in(answer: object) -> float | None:
    """The predicted delta in an answer, or None if it holds no finite number where
    one is expected. Raises ImpossiblePrediction for a number no delta can be."""
    if not isinstance(answer, dict):
        return None
    places = [answer] + [answer[k] for k in NESTED_KEYS if isinstance(answer.get(k), dict)]
    for place in places:
        for key in PREDICTION_KEYS:
            value = place.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                continue
            low, high = PREDICTION_RANGE_PCT
            if not low < value <= high:  # an int of any length compares exactly
                raise ImpossiblePrediction(key)
            return float(value)
    return None


class ImpossiblePrediction(ValueError):
    """A predicted delta outside PREDICTION_RANGE_PCT (or not finite)."""


class NotAnEstimate(ValueError):
    """An answer that is not JSON we read (see the module's docstring)."""


def _refuse(what: str) -> Any:
    raise NotAnEstimate(what)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise NotAnEstimate(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotAnEstimate("a number too large for a float")
    return value


def parse_answer(body: bytes) -> Any:
    """The JSON in an answer, strictly. Raises NotAnEstimate."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotAnEstimate("not UTF-8 text") from None
    try:
        answer = json.loads(text, parse_constant=_refuse, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise NotAnEstimate("JSON nested too deeply") from None
    except json.JSONDecodeError:
        raise NotAnEstimate("not JSON") from None
    if _depth(answer) > MAX_ANSWER_DEPTH:
        raise NotAnEstimate("JSON nested too deeply")
    return answer


def _depth(value: Any) -> int:
    """How deeply value nests (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_ANSWER_DEPTH and isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif depth <= MAX_ANSWER_DEPTH and isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def one_line(text: str) -> str:
    """What a server said, as one printable line of at most MAX_REASON_CHARS: control
    characters (NUL, CR, escape codes) as escapes, runs of whitespace as one space."""
    shown = printable(" ".join(str(text).split()))
    return shown if len(shown) <= MAX_REASON_CHARS else shown[: MAX_REASON_CHARS - 3] + "..."


def prefetch(api_base: str, inputs: EstimateInputs, *, timeout_s: float = TIMEOUT_S) -> Prefetched:
    """Ask the estimator; never raises for a network or answer problem (see error).
    timeout_s bounds the whole request."""
    url = estimate_url(api_base, inputs)

    def failed(why: str, *, answered: bool = True) -> Prefetched:
        return Prefetched(api_base, url, answered, None, None, one_line(why))

    headers = {"Accept": "application/json", "User-Agent": f"ecocompute/{__version__}"}
    try:
        body = get_bounded(url, headers, deadline_s=timeout_s, max_bytes=MAX_ANSWER_BYTES)
    except GetFailed as exc:
        return failed(exc.reason, answered=exc.answered)
    if len(body) > MAX_ANSWER_BYTES:
        return failed(f"answered more than {MAX_ANSWER_BYTES // 1024} KiB; not an estimate")
    try:
        predicted = prediction_in(parse_answer(body))
    except NotAnEstimate as exc:
        return failed(f"answered, but not with JSON an estimate is ({exc})")
    except ImpossiblePrediction as exc:
        return failed(
            f"answered an impossible delta in {exc} (a delta vs FP16 lies within "
            f"{PREDICTION_RANGE_PCT[0]:g}..{PREDICTION_RANGE_PCT[1]:g}%)"
        )
    if predicted is None:
        return failed("answered without a predicted delta vs FP16")
    fetched = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Prefetched(api_base, url, True, predicted, fetched, None)


def skipped_line(result: Prefetched) -> str:
    """The one stderr line when there is no prediction."""
    what = "gave no prediction" if result.answered else "unreachable"
    return f"prefetch: {result.api_base} {what} ({result.error}); going on without it"


def answered_line(result: Prefetched) -> str:
    return (
        f"prefetch: the site's estimator ({result.api_base}) predicts "
        f"{result.predicted_vs_fp16_pct:+.1f}% energy per token vs FP16"
    )
