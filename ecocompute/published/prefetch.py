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

THE SITE'S API (hongping-zh/quant-energy api/worker.js, read at 8681225; its README
gives the live base, params' API_BASE):
  GET <api_base>/v1/estimate?params_b=<B>&arch=<class>&precision=<NF4|INT8>&batch=<n>
answered with JSON holding delta_pct (the predicted delta vs FP16, %), ci ([low, high],
its 95% band: 1.96 sigma), basis (measured: the mean of the anchors measured at that
size; interpolated; estimated: beyond the measured range or a borrowed curve),
anchors (the measured points of the curve: N, dE, model, gpu, n) and crossover_b. It
answers 400 with {"error": ...} without params_b or arch: the job asks with the class
the run will answer for (--gpu_arch auto: the first GPU's NVML name, read before
anything loads; task/run.py arch_before_run), and a run whose size is in neither
--params_b nor the model name does not ask, and says so in one line.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import urllib.parse
from dataclasses import dataclass
from typing import Any

from ecocompute import __version__
from ecocompute.core.json_types import JsonObject
from ecocompute.core.limits import MAX_MAGNITUDE
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
PREDICTION_KEY = "delta_pct"
MAX_ANCHORS = 64  # a curve has a handful; more is not an answer we keep


@dataclass(frozen=True)
class Prefetched:
    """What --prefetch asked and got; its record goes in provenance.prefetch."""

    api_base: str
    url: str | None  # None: not asked (the inputs the site needs are not known yet)
    answered: bool  # whether the site answered at all (an HTTP error is an answer)
    predicted_vs_fp16_pct: float | None  # None when the site did not answer with one
    fetched_utc: str | None  # when the answer arrived; None without an answer
    error: str | None  # why there is no prediction, in words; None when there is one
    answer: SiteEstimate | None = None  # the rest of the site's answer (its band, basis)


@dataclass(frozen=True)
class SiteAnchor:
    """One measured point of the site's curve: dE% at N billion, on a card, n runs."""

    params_b: float
    delta_pct: float
    model: str | None
    gpu: str | None
    n: int | None


@dataclass(frozen=True)
class SiteEstimate:
    """What the site's estimator said beside its delta, each part only where it is of
    the type the worker writes (anything else is left out, never guessed)."""

    ci95_pct: tuple[float, float] | None
    basis: str | None
    confidence: str | None
    crossover_b: float | None
    arch_used: str | None
    anchors: tuple[SiteAnchor, ...]


@dataclass(frozen=True)
class EstimateInputs:
    """A run's inputs as the estimator takes them, known before the run."""

    model_name: str
    params_b: float | None  # None: not given and not in the model name
    precision: str
    batch_size: int
    gpu_arch: str  # --gpu_arch as given: auto, a class, a product or a short name
    # a format the published dataset never measured (INT8-torchao): the site's figure of
    # its precision is another library's, so it is not asked (formats/table.py published)
    unpublished_format: str | None = None


def not_askable(inputs: EstimateInputs) -> str | None:
    """Why the site cannot be asked before the run (it needs a size and a class of a
    format it has figures for), or None when it can."""
    if inputs.unpublished_format is not None:
        return (
            f"the site's figures are bitsandbytes NF4 and LLM.int8() only; "
            f"{inputs.unpublished_format} was never measured there"
        )
    if inputs.params_b is None:
        return "the model's size is not known before the run (pass --params_b)"
    if normalise_arch_choice(inputs.gpu_arch)[0] == "auto":
        return "--gpu_arch auto is decided from NVML during the run (pass --gpu_arch to ask)"
    return None


def estimate_url(api_base: str, inputs: EstimateInputs) -> str:
    """The GET request for a run's inputs, as the site's worker reads them. Raises
    ValueError where not_askable says why there is none."""
    why = not_askable(inputs)
    if why is not None:
        raise ValueError(why)
    arch, _ = normalise_arch_choice(inputs.gpu_arch)
    query = {
        "params_b": f"{inputs.params_b:g}",
        "arch": arch,
        "precision": inputs.precision,
        "batch": str(inputs.batch_size),
    }
    return api_base.rstrip("/") + "/v1/estimate?" + urllib.parse.urlencode(query)


def _finite(value: object) -> float | None:
    """A JSON number, and finite (a bool is no number): else None. An int stays one:
    float() of a long one could overflow."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _number(value: object) -> float | None:
    """A number the report can hold: finite, and no larger than any report's figure
    (a larger one would fail the report's own check after the measurement): else None."""
    number = _finite(value)
    return None if number is None or abs(number) > MAX_MAGNITUDE else float(number)


def _in_range(value: float, key: str) -> float:
    low, high = PREDICTION_RANGE_PCT
    if not low < value <= high:
        raise ImpossiblePrediction(key)
    return value


def prediction_in(answer: object) -> float | None:
    """The predicted delta (delta_pct) in an answer, or None if it holds no finite
    number there. Raises ImpossiblePrediction for a number no delta can be."""
    if not isinstance(answer, dict):
        return None
    value = _finite(answer.get(PREDICTION_KEY))
    return None if value is None else float(_in_range(value, PREDICTION_KEY))


def estimate_in(answer: JsonObject) -> SiteEstimate:
    """The rest of the site's answer, each part kept only where it has the worker's type;
    the band's edges are deltas, so they are held to the same range."""
    ci = answer.get("ci")
    band = None
    if isinstance(ci, list) and len(ci) == 2:
        low, high = (_number(v) for v in ci)
        if low is not None and high is not None and low <= high:
            band = (_in_range(low, "ci"), _in_range(high, "ci"))
    anchors = []
    raw = answer.get("anchors")
    for item in raw[:MAX_ANCHORS] if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        size, delta = _number(item.get("N")), _number(item.get("dE"))
        if size is None or delta is None or size <= 0:
            continue
        n = item.get("n")
        n = n if isinstance(n, int) and not isinstance(n, bool) else None
        anchors.append(
            SiteAnchor(
                params_b=size,
                delta_pct=_in_range(delta, "anchors"),
                model=_text(item.get("model")),
                gpu=_text(item.get("gpu")),
                n=n if n is not None and 0 <= n <= MAX_MAGNITUDE else None,
            )
        )
    crossover = _number(answer.get("crossover_b"))
    return SiteEstimate(
        ci95_pct=band,
        basis=_text(answer.get("basis")),
        confidence=_text(answer.get("confidence")),
        crossover_b=crossover if crossover is not None and crossover > 0 else None,
        arch_used=_text(answer.get("arch_used")),
        anchors=tuple(anchors),
    )


def _text(value: object) -> str | None:
    return one_line(value) if isinstance(value, str) and value.strip() else None


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
    why = not_askable(inputs)
    if why is not None:
        return Prefetched(api_base, None, False, None, None, one_line(why))
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
        answer = parse_answer(body)
        predicted = prediction_in(answer)
        estimate = estimate_in(answer) if predicted is not None else None
    except NotAnEstimate as exc:
        return failed(f"answered, but not with JSON an estimate is ({exc})")
    except ImpossiblePrediction as exc:
        return failed(
            f"answered an impossible delta in {exc} (a delta vs FP16 lies within "
            f"{PREDICTION_RANGE_PCT[0]:g}..{PREDICTION_RANGE_PCT[1]:g}%)"
        )
    if predicted is None:
        said = answer.get("error") if isinstance(answer, dict) else None
        return failed(
            "answered without a predicted delta vs FP16"
            + (f": {said}" if isinstance(said, str) else "")
        )
    fetched = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Prefetched(api_base, url, True, predicted, fetched, None, estimate)


def skipped_line(result: Prefetched) -> str:
    """The one stderr line when there is no prediction."""
    if result.url is None:
        return f"prefetch: not asked: {result.error}; going on without it"
    what = "gave no prediction" if result.answered else "unreachable"
    return f"prefetch: {result.api_base} {what} ({result.error}); going on without it"


def answered_line(result: Prefetched) -> str:
    line = (
        f"prefetch: the site's estimator ({result.api_base}) predicts "
        f"{result.predicted_vs_fp16_pct:+.1f}% energy per token vs FP16"
    )
    site = result.answer
    if site is not None and site.ci95_pct is not None:
        line += f" [{site.ci95_pct[0]:+.1f}, {site.ci95_pct[1]:+.1f}]"
    if site is not None and site.basis is not None:
        line += f", basis {site.basis}"
    return line
