"""A measured run's trials as the report's results: per-format statistics, pairs, the
interval and the verdict. Pure functions of the trials."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.stats import (
    CI_METHOD,
    DeltaEstimate,
    estimate_delta,
    paired_deltas_pct,
    summarise,
)
from ecocompute.core.units import energy_per_token_mj, pct_change
from ecocompute.report.held_view import held_block, held_trial_fields
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.trials import Trial, rounds_paired


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


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
        "weights_mib": _r(weights, 1),
    }
    if run.params.batch_size != 1 or not weights or not run.bandwidth_gbs:
        return fields
    limit = run.bandwidth_gbs * 1e9 / (weights * 2**20)
    fields["bandwidth_limit_tokens_per_s"] = _r(limit, 1)
    fields["of_bandwidth_limit_pct"] = _r(100.0 * throughput / limit, 1)
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
        "energy_per_token_mj": _r(s.mean),
        "energy_per_token_mj_sd": _r(s.sd),
        "cv_pct": _r(s.cv_pct),
        "throughput_tokens_per_s": _r(tokens / total_s),
        "avg_power_watts": _r(total_j / total_s),
        "energy_above_idle_per_token_mj": _r(above_idle),
        "idle_share_pct": _r(idle_share),
        "total_energy_joules": _r(total_j),
        "tokens_generated": tokens,
        "sampled_energy_per_token_mj": _r(sampled),
        "nvml_indices": list(gpus),
        "idle_power_watts": _r(idle_w),
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
        "counter_energy_joules": _r(r.counter_j, 4),
        "sampled_energy_joules": round(r.sampled_j, 4),
        "sampled_vs_counter_pct": _r(r.sampled_vs_counter_pct),
        "avg_power_watts": round(r.energy_j / r.duration_s, 3),
        "throughput_tokens_per_s": round(t.throughput_tokens_per_s, 3),
        "samples": r.samples,
        "dropped_samples": r.dropped,
        "per_gpu_energy_joules": [round(x, 4) for x in r.per_gpu_j],
        **({} if t.slot is None else {"slot": t.slot}),
        **(held_trial_fields(t) if held else {}),
    }


def paired(
    trials: Sequence[Trial], precision: Precision
) -> tuple[list[dict[str, Any]], DeltaEstimate | None]:
    """The pairs (FP16 and the format's trial of the same round) and their estimate."""
    if not precision.quantized:
        return [], None
    rounds = rounds_paired(trials, precision)
    f_vals = [f.energy_per_token_mj for f, _ in rounds]
    q_vals = [q.energy_per_token_mj for _, q in rounds]
    deltas = paired_deltas_pct(f_vals, q_vals)
    pairs = [
        {
            "pair": fp16.pair,
            "fp16_energy_per_token_mj": round(f, 3),
            "energy_per_token_mj": round(q, 3),
            "delta_pct": round(d, 3),
        }
        for (fp16, _), f, q, d in zip(rounds, f_vals, q_vals, deltas, strict=True)
    ]
    return pairs, estimate_delta(deltas)


def results_block(run: MeasuredRun, note: str) -> dict[str, Any]:
    """The report's results for a measured run (basis "measured")."""
    precision = run.params.precision
    idle_by_gpu = None if run.idle is None else run.idle.power_by_gpu_w()
    by_format: dict[Precision, list[Trial]] = {}
    for t in run.trials:
        by_format.setdefault(t.precision, []).append(t)
    per_format = {}
    for fmt, ts in by_format.items():
        stats = format_stats(
            ts, format_idle_w(run.format_gpus[fmt], idle_by_gpu), run.format_gpus[fmt]
        )
        stats.update(bandwidth_fields(run, fmt, stats["throughput_tokens_per_s"]))
        per_format[fmt] = stats
    target = per_format[precision]
    fp16 = per_format[Precision.FP16]
    pairs, delta = paired(run.trials, precision)
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
        "vs_fp16_ci95_pct": None
        if delta is None or delta.ci95_pct is None
        else [round(delta.ci95_pct[0], 3), round(delta.ci95_pct[1], 3)],
        "ci_method": None if delta is None else CI_METHOD,
        "n_pairs": None if delta is None else delta.n_pairs,
        "idle_power_watts": None if run.idle is None else _r(run.idle.power_w),
        "vs_fp16_above_idle_pct": _above_idle_delta(precision, *above),
        "sampled_vs_counter_pct": _r(statistics.fmean(known)) if known else None,
        "sampled_vs_counter_max_abs_pct": _r(max(abs(x) for x in known)) if known else None,
        "dropped_samples": sum(t.reading.dropped for t in run.trials),
        "per_format": per_format,
        "pairs": pairs,
        "trials": [trial_record(t, bool(run.held_gpus)) for t in run.trials],
        **({"held_gpus": held} if (held := held_block(run)) is not None else {}),
    }


def _above_idle_delta(
    precision: Precision, quantized_mj: float | None, fp16_mj: float | None
) -> float | None:
    """Energy above idle per token, the format vs FP16 in percent (a ratio of the two
    formats' means, not a paired estimate); None without an idle window or for FP16."""
    if not precision.quantized or quantized_mj is None or fp16_mj is None or fp16_mj <= 0:
        return None
    return _r(pct_change(quantized_mj, fp16_mj))
