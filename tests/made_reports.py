"""Measured reports for the result tools' tests: copies of a committed H200 report
(docs/validation) with the fields a test cares about rewritten. Every one stays valid:
against the schema, and against its own arithmetic (report/consistency.py), because
its trials, pairs, per-format figures, interval and verdict are made together from the
figures asked for. The numbers are made up, the structure is real.

How the trials are made: every FP16 trial at fp16_mj; the quantized trial of pair i at
fp16_mj x (1 + d_i / 100), with d_i = delta + s e_i, e = (+1, -1, +1, ...) (a last 0
when n is odd), so the mean delta is delta, and s is chosen so that the paired t
interval is delta +- half_ci exactly (before the writer's rounding to 3 decimals).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import statistics
from pathlib import Path
from typing import Any

from ecocompute.core.stats import t_quantile, verdict_for
from ecocompute.params.model_size import params_b_from_model_name
from ecocompute.published.figures import delta_pct
from ecocompute.report.thermal import thermal_of

from .conftest import REPO

MEASURED = REPO / "docs" / "validation" / "h200-issue3" / "tinyllama-nf4" / "energy.json"
TRIAL_S = 5.0  # each made trial lasts about 5 s: trial k lasts 5 s + k ms


def trial_s(index: int) -> float:
    """No two windows of a real measurement last the same to a tenth of a millisecond
    (a round that repeats another figure for figure is a forgery: report/consistency)."""
    return TRIAL_S + 0.001 * index


@functools.lru_cache(maxsize=1)
def _base() -> dict[str, Any]:
    return json.loads(MEASURED.read_text())


def pair_deltas(delta: float, half_ci: float | None, n_pairs: int) -> list[float]:
    """n_pairs deltas whose mean is delta and whose paired t 95% interval is
    delta +- half_ci (one delta when half_ci is None: no interval)."""
    if half_ci is None:
        return [delta]
    if n_pairs < 2:
        raise ValueError("an interval needs two pairs or more")
    signs = [1.0 if i % 2 == 0 else -1.0 for i in range(n_pairs)]
    if n_pairs % 2:
        signs[-1] = 0.0
    sd_signs = statistics.stdev(signs)
    spread = half_ci * math.sqrt(n_pairs) / (t_quantile(0.975, n_pairs - 1) * sd_signs)
    return [delta + spread * e for e in signs]


def _trial(
    base: dict[str, Any],
    index: int,
    pair: int | None,
    fmt: str,
    mj: float,
    tokens: int,
    gpus: list[int],
) -> dict[str, Any]:
    energy_j = mj * tokens / 1000.0
    share = energy_j / len(gpus)
    duration_s = trial_s(index)
    return {
        **base,
        "index": index,
        "pair": pair,
        "format": fmt,
        "duration_s": duration_s,
        "tokens": tokens,
        "energy_joules": round(energy_j, 4),
        "energy_per_token_mj": round(mj, 3),
        "energy_source": "nvml_energy_counter",
        "counter_energy_joules": round(energy_j, 4),
        "sampled_energy_joules": round(energy_j, 4),
        "sampled_vs_counter_pct": 0.0,
        "avg_power_watts": round(energy_j / duration_s, 3),
        "throughput_tokens_per_s": round(tokens / duration_s, 3),
        "samples": 50,
        "dropped_samples": 0,
        "per_gpu_energy_joules": [round(share, 4) for _ in gpus],
    }


def _format_stats(
    base: dict[str, Any], trials: list[dict[str, Any]], gpus: list[int], per_token: list[float]
) -> dict[str, Any]:
    total_j = sum(mj * t["tokens"] / 1000.0 for mj, t in zip(per_token, trials, strict=True))
    total_s = sum(t["duration_s"] for t in trials)
    tokens = sum(t["tokens"] for t in trials)
    mean = statistics.fmean(per_token)
    sd = statistics.stdev(per_token) if len(per_token) > 1 else None
    return {
        **base,
        "n_trials": len(trials),
        "energy_per_token_mj": round(mean, 3),
        "energy_per_token_mj_sd": None if sd is None else round(sd, 3),
        "cv_pct": None if sd is None else round(100 * sd / mean, 3),
        "throughput_tokens_per_s": round(tokens / total_s, 3),
        "avg_power_watts": round(total_j / total_s, 3),
        "total_energy_joules": round(total_j, 3),
        "tokens_generated": tokens,
        "sampled_energy_per_token_mj": round(mean, 3),  # the samples agree with the counter
        "nvml_indices": gpus,
        # no idle window is made up: the figures that derive from one are not recorded
        "idle_power_watts": None,
        "energy_above_idle_per_token_mj": None,
        "idle_share_pct": None,
    }


def measured(
    *,
    params_b: float = 1.1,
    delta: float = 20.0,
    half_ci: float | None = 5.0,
    n_pairs: int = 10,
    fp16_mj: float = 2400.0,
    model: str | None = None,
    precision: str = "NF4",
    gpu: str = "NVIDIA H200",
    arch: str = "hopper",
    torch: str = "2.11.0",
    tokens: int = 256,
    gpus: int = 1,
    unit: str | None = None,
) -> dict[str, Any]:
    """A measured report of these figures (half_ci None: one pair, no interval), on the
    GPU unit(s) named GPU-<unit>-<i>: reports of one unit pool as one. By default the
    unit follows from the figures: reports of other figures are other units (as
    replicates on other cards), the same figures the same unit."""
    if unit is None:
        figures = (params_b, delta, half_ci, n_pairs, fp16_mj, model, precision, gpu, arch)
        unit = (
            "made" + hashlib.sha256(repr((figures, torch, tokens, gpus)).encode()).hexdigest()[:8]
        )
    doc = copy.deepcopy(_base())
    sut, work, meas, res = (
        doc["system_under_test"],
        doc["workload"],
        doc["measurement"],
        doc["results"],
    )
    gpu_base = sut["gpus"][0]
    sut["gpus"] = [
        {**gpu_base, "name": gpu, "nvml_index": i, "cuda_index": i, "uuid": f"GPU-{unit}-{i}"}
        for i in range(gpus)
    ]
    sut["gpu"], sut["gpu_arch"], sut["accelerator_count"] = gpu, arch, gpus
    work["model_name"] = model or f"synthetic:made-{params_b:g}b"
    if params_b_from_model_name(work["model_name"]) != params_b:  # a size its name does not state
        work["params_b_source"] = "flag or parameters file"
    work["params_b"], work["precision"], work["max_new_tokens"] = params_b, precision, tokens
    meas["tokens_per_run"] = tokens
    meas["decode"]["min_new_tokens"] = meas["decode"]["max_new_tokens"] = tokens
    doc["software"]["packages"]["torch"] = torch

    trial_base = res["trials"][0]
    stats_base = res["per_format"]["FP16"]
    all_gpus = list(range(gpus))
    if precision == "FP16":
        n = n_pairs
        fp16_trials = [
            _trial(trial_base, i, None, "FP16", fp16_mj, tokens, all_gpus) for i in range(n)
        ]
        res["trials"] = fp16_trials
        res["per_format"] = {
            "FP16": _format_stats(stats_base, fp16_trials, all_gpus, [fp16_mj] * n)
        }
        res["pairs"] = []
        res.update(vs_fp16_energy_pct=0.0, vs_fp16_ci95_pct=None, verdict=None, n_pairs=None)
        res["vs_fp16_energy_pct_3dp"] = 0.0
        res["vs_fp16_above_idle_pct"] = None
    else:
        deltas = pair_deltas(delta, half_ci, n_pairs)
        n = len(deltas)
        quantized = [fp16_mj * (1 + d / 100.0) for d in deltas]
        trials = []
        for k, q in enumerate(quantized):
            trials.append(_trial(trial_base, 2 * k, k, "FP16", fp16_mj, tokens, all_gpus))
            trials.append(_trial(trial_base, 2 * k + 1, k, precision, q, tokens, [0]))
        res["trials"] = trials
        res["per_format"] = {
            "FP16": _format_stats(stats_base, trials[0::2], all_gpus, [fp16_mj] * n),
            precision: _format_stats(stats_base, trials[1::2], [0], quantized),
        }
        res["pairs"] = [
            {
                "pair": k,
                "fp16_energy_per_token_mj": round(fp16_mj, 3),
                "energy_per_token_mj": round(q, 3),
                "delta_pct": round(d, 3),
            }
            for k, (q, d) in enumerate(zip(quantized, deltas, strict=True))
        ]
        ci = None if half_ci is None else [delta - half_ci, delta + half_ci]
        res.update(
            vs_fp16_energy_pct=round(delta, 1),  # one decimal, as 1.1
            vs_fp16_energy_pct_3dp=delta,  # what the tools read (not rounded here)
            vs_fp16_ci95_pct=ci,
            verdict=verdict_for(None if ci is None else (ci[0], ci[1])),
            n_pairs=n,
        )
    meas["iterations"] = n
    target = res["per_format"][precision]
    res["energy_per_token_mj"] = target["energy_per_token_mj"]
    res["fp16_energy_per_token_mj"] = res["per_format"]["FP16"]["energy_per_token_mj"]
    res["total_energy_joules"] = target["total_energy_joules"]
    res["tokens_generated"] = target["tokens_generated"]
    res["avg_power_watts"] = target["avg_power_watts"]
    res["idle_power_watts"] = res["vs_fp16_above_idle_pct"] = None  # no idle window made up
    res["throughput_tokens_per_s"] = target["throughput_tokens_per_s"]
    res["dropped_samples"] = 0
    res["sampled_vs_counter_pct"] = res["sampled_vs_counter_max_abs_pct"] = 0.0
    return doc


def on_curve(n: float, a: float, s: float, nstar: float, **kw: Any) -> dict[str, Any]:
    return measured(params_b=n, delta=round(delta_pct(n, a, s, nstar), 4), **kw)


def write(doc: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "energy.json"
    path.write_text(json.dumps(doc))
    return path


# --- format 2.0: reports made from any trials by the writer's own derivation -----------


@functools.lru_cache(maxsize=1)
def _v2_base() -> str:
    """A measured NF4 report of format 2.0 (the CPU stand-ins), whose results are
    replaced."""
    from .fakes import FakeTelemetry, small_nf4_report

    doc = small_nf4_report(open_telemetry=FakeTelemetry, idle_seconds="0.5", sample_rate_hz="50")
    return json.dumps(doc)


def made_trial(index, pair, fmt, energies, duration_s, tokens, *, idle=None, counter=True,
               sampled_ratio=1.001, dropped=0):  # fmt: skip
    """A trial as the writer derives it from its readings (report/derive.py)."""
    from ecocompute.report import derive

    total = sum(energies)
    sampled = total * sampled_ratio
    return derive.trial(
        index=index,
        pair=pair,
        format=fmt,
        duration_s=duration_s,
        tokens=tokens,
        energy_joules=total if counter else sampled,
        energy_source="nvml_energy_counter" if counter else "sampled_power",
        counter_energy_joules=total if counter else None,
        sampled_energy_joules=sampled,
        samples=max(1, int(10 * duration_s)),
        dropped_samples=dropped,
        per_gpu_energy_joules=energies if counter else [sampled / len(energies)] * len(energies),
        idle_gpus_energy_joules=idle,
    )


def v2_document(
    results, precision: str, tokens: int, gpus: int = 1, base: str | None = None
) -> dict[str, Any]:
    """A whole report of format 2.0 around these results (from derive.derive_results),
    in base (a measured report's JSON; default _v2_base())."""
    doc = json.loads(base if base is not None else _v2_base())
    doc["results"] = results.model_dump(mode="json")
    # the thermal block derives from the trials too (report/thermal.py)
    doc["thermal"] = thermal_of(
        results.trials, doc["measurement"]["warmup"], doc["measurement"]["order"]
    ).model_dump(mode="json")
    rounds = len(results.pairs) if precision != "FP16" else len(results.trials)
    doc["measurement"]["iterations"] = doc["measurement"]["stopping"]["rounds"] = rounds
    doc["workload"]["precision"] = precision
    doc["workload"]["max_new_tokens"] = doc["measurement"]["tokens_per_run"] = tokens
    doc["measurement"]["decode"]["tokens_per_row"] = tokens
    doc["workload"]["quantization"] = None
    gpu = doc["system_under_test"]["gpus"][0]
    doc["system_under_test"]["gpus"] = [
        {**gpu, "nvml_index": i, "cuda_index": i, "uuid": f"GPU-{i}", "before_session": None}
        for i in range(gpus)
    ]
    doc["system_under_test"]["accelerator_count"] = gpus
    return json.loads(json.dumps(doc))


def v2_measured(readings, precision: str, tokens: int, idle_w=None, gpus: int = 1) -> dict:
    """A whole report of format 2.0 of these readings ((energy J, duration s, options)
    per trial; for a quantized format (FP16's, its own) per round), derived by the
    writer's own code."""
    from ecocompute.report import derive
    from ecocompute.report.results_model import IdleWindow

    def one(index, pair, fmt, reading):
        energy, duration, extra = reading
        return made_trial(index, pair, fmt, [energy / gpus] * gpus, duration, tokens, **extra)

    trials = []
    if precision != "FP16":
        for k, (f, q) in enumerate(readings):
            trials += [one(2 * k, k, "FP16", f), one(2 * k + 1, k, precision, q)]
    else:
        trials = [one(k, None, "FP16", r) for k, r in enumerate(readings)]
    window = None
    if idle_w is not None:
        window = IdleWindow(
            duration_s=2.0, nvml_indices=list(range(gpus)), energy_joules_by_gpu=[2 * idle_w] * gpus
        )
    facts = {
        f: derive.FormatFacts(f, "torch" if f == "FP16" else "bitsandbytes", tuple(range(gpus)))
        for f in {"FP16", precision}
    }
    inputs = derive.Measured(precision, tuple(trials), facts, window, 1, None)
    return v2_document(derive.derive_results(inputs, "made"), precision, tokens, gpus)


def v2_on_figures(
    *,
    params_b: float,
    delta: float,
    half_ci: float = 1.0,
    n_pairs: int = 3,
    model: str = "synthetic:made",
    precision: str = "NF4",
    fp16_j: float = 600.0,
    tokens: int = 4,
) -> dict:
    """A measured report of format 2.0 whose paired delta is `delta` (its interval
    half-width half_ci), for a model of params_b: the writer's own arithmetic over
    readings made to give those figures."""
    readings = [
        ((fp16_j, trial_s(2 * k), {}), (fp16_j * (1 + d / 100), trial_s(2 * k + 1), {}))
        for k, d in enumerate(pair_deltas(delta, half_ci, n_pairs))
    ]
    doc = v2_measured(readings, precision, tokens)
    doc["workload"].update(model_name=model, params_b=params_b)
    return doc
