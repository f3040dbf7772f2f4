"""--prefetch: ask the site's estimator for its predicted delta before measuring.

Best effort: one HTTP GET with a short timeout, standard library only, before anything
is loaded or measured (never inside a measured window). Any failure (offline, refused,
timed out, an HTTP error, an answer without a number) is one line on stderr and the run
goes on; the report records what was asked and what came back.

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
import http.client
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

from ecocompute import __version__
from ecocompute.published.archs import normalise_arch_choice

TIMEOUT_S = 3.0
MAX_ANSWER_BYTES = 64 * 1024  # an estimate is a few hundred bytes
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
    one is expected."""
    if not isinstance(answer, dict):
        return None
    places = [answer] + [answer[k] for k in NESTED_KEYS if isinstance(answer.get(k), dict)]
    for place in places:
        for key in PREDICTION_KEYS:
            value = place.get(key)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and math.isfinite(value):
                return float(value)
    return None


def prefetch(api_base: str, inputs: EstimateInputs, *, timeout_s: float = TIMEOUT_S) -> Prefetched:
    """Ask the estimator; never raises for a network or answer problem (see error)."""
    url = estimate_url(api_base, inputs)

    def failed(why: str, *, answered: bool = True) -> Prefetched:
        return Prefetched(api_base, url, answered, None, None, why)

    request = urllib.request.Request(
        url,
        headers={"Accept": "application/json", "User-Agent": f"ecocompute/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:  # before URLError: it is one
        exc.close()
        return failed(f"HTTP {exc.code} {exc.reason}")
    except urllib.error.URLError as exc:
        return failed(_reason(exc.reason), answered=False)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # timeouts are OSErrors
        return failed(_reason(exc), answered=False)
    if len(body) > MAX_ANSWER_BYTES:
        return failed(f"answered more than {MAX_ANSWER_BYTES // 1024} KiB; not an estimate")
    try:
        answer = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return failed("answered, but not with JSON")
    predicted = prediction_in(answer)
    if predicted is None:
        return failed("answered without a predicted delta vs FP16")
    fetched = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Prefetched(api_base, url, True, predicted, fetched, None)


def _reason(exc: object) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)[:200]


def skipped_line(result: Prefetched) -> str:
    """The one stderr line when there is no prediction."""
    what = "gave no prediction" if result.answered else "unreachable"
    return f"prefetch: {result.api_base} {what} ({result.error}); going on without it"


def answered_line(result: Prefetched) -> str:
    return (
        f"prefetch: the site's estimator ({result.api_base}) predicts "
        f"{result.predicted_vs_fp16_pct:+.1f}% energy per token vs FP16"
    )
