"""A measured run's trials as the report's results: per-format statistics, pairs, the
interval and the verdict. Pure functions of the trials."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.rounding import rounded
from ecocompute.core.stats import (
    estimate_delta,
    summarise,
)
from ecocompute.core.units import energy_per_token_mj, pct_change
from ecocompute.report.conditions_block import conditions_block, trial_conditions_fields
from ecocompute.report.held_view import held_block, held_trial_fields
from ecocompute.report.pairing import interval_fields, paired_records, trials_by_format
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.trials import Trial


def format_idle_w(gpus: Sequence[int], idle_by_gpu: Mapping[int, float] | None) -> float | None:
    """Idle watts of the GPUs a format occupies; None where one of them was not read."""
    if idle_by_gpu is None or any(i not in idle_by_gpu for i in gpus):
        return None
    return sum(idle_by_gpu[i] for i in gpus)


def bandwidth_fields(run: MeasuredRun, precision: Precision, throughput: float) -> dict[str, Any]:
    """At batch 1, the format's throughput against the memory-bandwidth limit: the
    card's peak bandwidth over the bytes of its weights (every token reads them once)."""
    weights = run.weights_mib.get(precision)
    fields: dict[str, Any] = {
        "format": run.params.spec(precision).key,
        "library": run.params.spec(precision).library,
        "weights_mib": rounded(weights, 1),
    }
    if run.params.batch_size != 1 or not weights or not run.bandwidth_gbs:
        return fields
    limit = run.bandwidth_gbs * 1e9 / (weights * 2**20)
    fields["bandwidth_limit_tokens_per_s"] = rounded(limit, 1)
    fields["of_bandwidth_limit_pct"] = rounded(100.0 * throughput / limit, 1)
    return fields


def format_stats(
    trials: Sequence[Trial], idle_w: float | None, gpus: Sequence[int]
) -> dict[str, Any]:
    per_token = [t.energy_per_token_mj for t in trials]
    s = summarise(per_token)
    total_j = sum(t.reading.energy_j for t in trials)
    total_s = sum(t.reading.duration_s for t in trials)
    tokens = sum(t.tokens for t in trials)
    above_idle = idle_share = None
    if idle_w is not None:
        above_idle = statistics.fmean(
            energy_per_token_mj(t.reading.energy_j - idle_w * t.reading.duration_s, t.tokens)
            for t in trials
        )
        idle_share = 100.0 * idle_w * total_s / total_j if total_j > 0 else None
    sampled = statistics.fmean(energy_per_token_mj(t.reading.sampled_j, t.tokens) for t in trials)
    return {
        "n_trials": len(trials),
        "energy_per_token_mj": rounded(s.mean),
        "energy_per_token_mj_sd": rounded(s.sd),
        "cv_pct": rounded(s.cv_pct),
        "throughput_tokens_per_s": rounded(tokens / total_s),
        "avg_power_watts": rounded(total_j / total_s),
        "energy_above_idle_per_token_mj": rounded(above_idle),
        "idle_share_pct": rounded(idle_share),
        "total_energy_joules": rounded(total_j),
        "tokens_generated": tokens,
        "sampled_energy_per_token_mj": rounded(sampled),
        "nvml_indices": list(gpus),
        "idle_power_watts": rounded(idle_w),
    }


def trial_record(t: Trial, held: bool = False) -> dict[str, Any]:
    """held: the report also gives every held GPU's view (report/held_view.py)."""
    r = t.reading
    return {
        "index": t.index,
        "pair": t.pair,
        "format": t.precision,
        "duration_s": round(r.duration_s, 4),
        "tokens": t.tokens,
        "energy_joules": round(r.energy_j, 4),
        "energy_per_token_mj": round(t.energy_per_token_mj, 3),
        "energy_source": "nvml_energy_counter" if r.counter_j is not None else "sampled_power",
        "counter_energy_joules": rounded(r.counter_j, 4),
        "sampled_energy_joules": round(r.sampled_j, 4),
        "sampled_vs_counter_pct": rounded(r.sampled_vs_counter_pct),
        "avg_power_watts": round(r.energy_j / r.duration_s, 3),
        "throughput_tokens_per_s": round(t.throughput_tokens_per_s, 3),
        "samples": r.samples,
        "dropped_samples": r.dropped,
        "per_gpu_energy_joules": [round(x, 4) for x in r.per_gpu_j],
        **({} if t.slot is None else {"slot": t.slot}),
        **(held_trial_fields(t) if held else {}),
        **trial_conditions_fields(t),
    }


def results_block(run: MeasuredRun, note: str) -> dict[str, Any]:
    """The report's results for a measured run (basis "measured")."""
    precision = run.params.precision
    idle_by_gpu = None if run.idle is None else run.idle.power_by_gpu_w()
    by_format = trials_by_format(run.trials)
    per_format = {}
    for fmt, ts in by_format.items():
        stats = format_stats(
            ts, format_idle_w(run.format_gpus[fmt], idle_by_gpu), run.format_gpus[fmt]
        )
        stats.update(bandwidth_fields(run, fmt, stats["throughput_tokens_per_s"]))
        per_format[fmt] = stats
    target = per_format[precision]
    fp16 = per_format[Precision.FP16]
    pairs, deltas = paired_records(run.trials, precision, lambda t: t.energy_per_token_mj)
    delta = estimate_delta(deltas) if precision.quantized else None
    known = [x for x in (t.reading.sampled_vs_counter_pct for t in run.trials) if x is not None]
    above = [
        target.get("energy_above_idle_per_token_mj"),
        fp16.get("energy_above_idle_per_token_mj"),
    ]
    return {
        "total_energy_joules": target["total_energy_joules"],
        "tokens_generated": target["tokens_generated"],
        "energy_per_token_mj": target["energy_per_token_mj"],
        "fp16_energy_per_token_mj": fp16["energy_per_token_mj"],
        "vs_fp16_energy_pct": 0.0 if delta is None else round(delta.mean_pct, 1),
        "vs_fp16_energy_pct_3dp": 0.0 if delta is None else round(delta.mean_pct, 3),
        "avg_power_watts": target["avg_power_watts"],
        "throughput_tokens_per_s": target["throughput_tokens_per_s"],
        "basis": "measured",
        "note": note,
        "fallback_reason": None,
        "reference_card": None,
        "verdict": None if delta is None else delta.verdict,
        **interval_fields(delta),
        "idle_power_watts": None if run.idle is None else rounded(run.idle.power_w),
        "vs_fp16_above_idle_pct": _above_idle_delta(precision, *above),
        "sampled_vs_counter_pct": rounded(statistics.fmean(known)) if known else None,
        "sampled_vs_counter_max_abs_pct": rounded(max(abs(x) for x in known)) if known else None,
        "dropped_samples": sum(t.reading.dropped for t in run.trials),
        "per_format": per_format,
        "pairs": pairs,
        "trials": [trial_record(t, bool(run.held_gpus)) for t in run.trials],
        **({"held_gpus": held} if (held := held_block(run, by_format)) is not None else {}),
        **({"conditions": c} if (c := conditions_block(by_format)) is not None else {}),
    }


def _above_idle_delta(
    precision: Precision, quantized_mj: float | None, fp16_mj: float | None
) -> float | None:
    """Energy above idle per token, the format vs FP16 in percent (a ratio of the two
    formats' means, not a paired estimate); None without an idle window or for FP16."""
    if not precision.quantized or quantized_mj is None or fp16_mj is None or fp16_mj <= 0:
        return None
    return rounded(pct_change(quantized_mj, fp16_mj))
