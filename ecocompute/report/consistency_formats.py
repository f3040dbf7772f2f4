"""A measured report's per-format figures and headline follow from its trials (part of
report/consistency.py's checks).

One entry per format with trials, each recomputed from that format's trials: their
number (one per round), tokens, total energy, mean energy per token and its spread (sd,
CV), throughput and average power over their summed durations, energy above idle and
the idle share (from the format's idle power), and the sampled energy per token. The
headline figures are the report's format's, copied. Written for any number of formats:
each is checked on its own, against its own trials.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.tolerance import (
    HALF_3DP,
    HALF_J,
    HALF_MJ,
    HALF_S,
    close,
    number,
    numbers_of,
    quotient_range,
    within,
)

FP16 = "FP16"
Trials = Sequence[Mapping[str, Any]]


def by_format(trials: Trials) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for t in trials:
        out.setdefault(str(t.get("format")), []).append(t)
    return out


def format_problems(
    trials: Trials, per_format: Mapping[str, Any], formats: set[str], doc: Mapping[str, Any]
) -> list[str]:
    """formats: the formats the report's workload measured (FP16 and the quantized)."""
    problems = []
    grouped = by_format(trials)
    if set(grouped) != formats:
        problems.append(
            f"$.results.trials: formats {sorted(grouped)}, but a "
            f"{'+'.join(sorted(formats - {FP16})) or FP16} report holds trials of {sorted(formats)}"
        )
    if set(per_format) != set(grouped):
        problems.append(
            f"$.results.per_format: formats {sorted(per_format)}, but its trials are of "
            f"{sorted(grouped)}"
        )
    measurement = doc.get("measurement") or {}
    rounds = (measurement.get("stopping") or {}).get("rounds", measurement.get("iterations"))
    sut = doc.get("system_under_test") or {}
    known_gpus = {g.get("nvml_index") for g in sut.get("gpus") or [] if isinstance(g, Mapping)}
    for fmt, stats in per_format.items():
        if not isinstance(stats, Mapping):
            continue
        mine = grouped.get(fmt, [])
        where = f"$.results.per_format.{fmt}"
        n = stats.get("n_trials")
        if n != len(mine):
            problems.append(
                f"{where}.n_trials: {n!r}, but the report holds {len(mine)} {fmt} trial(s)"
            )
        if isinstance(rounds, int) and len(mine) != rounds:
            problems.append(
                f"{where}: {len(mine)} trial(s), but the measurement ran {rounds} round(s)"
            )
        indices = stats.get("nvml_indices")
        if isinstance(indices, list) and known_gpus and not set(indices) <= known_gpus:
            problems.append(
                f"{where}.nvml_indices: {indices}, but the report lists GPUs "
                f"{sorted(known_gpus, key=str)}"
            )
        if mine:
            problems += _sums(where, stats, mine) + _spread(where, stats, mine)
            problems += _rates(where, stats, mine) + _idle(where, stats, mine)
    return problems


def _sums(where: str, stats: Mapping[str, Any], mine: Trials) -> list[str]:
    """Tokens, total energy, mean energy per token and sampled energy per token."""
    problems = []
    tokens = sum(t.get("tokens", 0) for t in mine if isinstance(t.get("tokens"), int))
    if "tokens_generated" in stats and stats["tokens_generated"] != tokens:
        problems.append(
            f"{where}.tokens_generated: {stats['tokens_generated']!r}, but its trials "
            f"generated {tokens}"
        )
    energies = numbers_of(mine, "energy_joules")
    total = number(stats.get("total_energy_joules"))
    if total is not None and energies is not None:
        summed = math.fsum(energies)
        if not close(total, summed, HALF_MJ + HALF_J * len(mine)):
            problems.append(
                f"{where}.total_energy_joules: {total:g}, but its trials add up to {summed:.3f} J"
            )
    per_token = numbers_of(mine, "energy_per_token_mj")
    mean = number(stats.get("energy_per_token_mj"))
    if mean is not None and per_token is not None:
        recomputed = math.fsum(per_token) / len(per_token)
        if not close(mean, recomputed, 2 * HALF_MJ):
            problems.append(
                f"{where}.energy_per_token_mj: {mean:g}, but the mean of its trials is "
                f"{recomputed:.3f}"
            )
    sampled = numbers_of(mine, "sampled_energy_joules")
    said = number(stats.get("sampled_energy_per_token_mj"))
    counts = _tokens(mine)
    if said is not None and sampled is not None and counts is not None:
        each = [1000.0 * s / c for s, c in zip(sampled, counts, strict=True)]
        recomputed = math.fsum(each) / len(each)
        if not close(said, recomputed, HALF_MJ + 1000.0 * HALF_J / min(counts)):
            problems.append(
                f"{where}.sampled_energy_per_token_mj: {said:g}, but its trials' samples give "
                f"{recomputed:.3f}"
            )
    return problems


def _tokens(trials: Trials) -> list[int] | None:
    """Each trial's tokens; None unless every one is a positive whole number."""
    counts = [c for t in trials if isinstance(c := t.get("tokens"), int) and c > 0]
    return counts if len(counts) == len(trials) else None


def _spread(where: str, stats: Mapping[str, Any], mine: Trials) -> list[str]:
    """sd and CV of the trials' energy per token (each trial's rounded by +-HALF_MJ:
    the sample sd moves by at most HALF_MJ * sqrt(n / (n - 1)))."""
    per_token = numbers_of(mine, "energy_per_token_mj")
    sd, cv = number(stats.get("energy_per_token_mj_sd")), number(stats.get("cv_pct"))
    if per_token is None or len(per_token) < 2:
        if len(mine) == 1 and (sd is not None or cv is not None):
            return [f"{where}.energy_per_token_mj_sd: {sd!r}, but one trial has no spread"]
        return []
    n = len(per_token)
    mean = math.fsum(per_token) / n
    spread = statistics.stdev(per_token)
    wiggle = HALF_MJ * math.sqrt(n / (n - 1))
    problems = []
    if sd is not None and not within(sd, spread - wiggle, spread + wiggle, HALF_MJ):
        problems.append(
            f"{where}.energy_per_token_mj_sd: {sd:g}, but its trials' sd is {spread:.3f}"
        )
    if cv is not None and abs(mean) > HALF_MJ:
        low = 100.0 * max(spread - wiggle, 0.0) / (abs(mean) + HALF_MJ)
        high = 100.0 * (spread + wiggle) / (abs(mean) - HALF_MJ)
        if not within(cv, low, high, HALF_3DP):
            problems.append(
                f"{where}.cv_pct: {cv:g}, but its trials' CV is {100 * spread / abs(mean):.3f}%"
            )
    return problems


def _rates(where: str, stats: Mapping[str, Any], mine: Trials) -> list[str]:
    """Throughput and average power over the trials' summed durations."""
    durations = numbers_of(mine, "duration_s")
    energies = numbers_of(mine, "energy_joules")
    if durations is None:
        return []
    total_s, n = math.fsum(durations), len(mine)
    tokens = sum(t.get("tokens", 0) for t in mine if isinstance(t.get("tokens"), int))
    problems = []
    for key, numerator, half, words in (
        ("throughput_tokens_per_s", float(tokens), 0.0, "tokens/s"),
        (
            "avg_power_watts",
            None if energies is None else math.fsum(energies),
            HALF_J * n,
            "W",
        ),
    ):
        value = number(stats.get(key))
        span = None if numerator is None else quotient_range(numerator, half, total_s, HALF_S * n)
        if value is not None and span is not None and not within(value, *span, HALF_3DP):
            problems.append(
                f"{where}.{key}: {value:g}, but its trials give "
                f"{span[0]:.3f}..{span[1]:.3f} {words}"
            )
    return problems


def _idle(where: str, stats: Mapping[str, Any], mine: Trials) -> list[str]:
    """Energy above idle per token and the idle share, from the format's idle power."""
    idle_w = number(stats.get("idle_power_watts"))
    durations, energies = numbers_of(mine, "duration_s"), numbers_of(mine, "energy_joules")
    counts = _tokens(mine)
    if idle_w is None or durations is None or energies is None or counts is None:
        return []
    problems = []
    above = number(stats.get("energy_above_idle_per_token_mj"))
    if above is not None:
        idle_lo = max(idle_w - HALF_3DP, 0.0)
        lows, highs = [], []
        for e, d, c in zip(energies, durations, counts, strict=True):
            lows.append(1000.0 * ((e - HALF_J) - (idle_w + HALF_3DP) * (d + HALF_S)) / c)
            highs.append(1000.0 * ((e + HALF_J) - idle_lo * max(d - HALF_S, 0.0)) / c)
        low, high = math.fsum(lows) / len(lows), math.fsum(highs) / len(highs)
        if not within(above, low, high, HALF_MJ):
            problems.append(
                f"{where}.energy_above_idle_per_token_mj: {above:g}, but its trials less "
                f"{idle_w:g} W idle give {low:.3f}..{high:.3f}"
            )
    share = number(stats.get("idle_share_pct"))
    total_s, total_j, n = math.fsum(durations), math.fsum(energies), len(mine)
    if share is not None and total_j - HALF_J * n > 0:
        low = 100.0 * max(idle_w - HALF_3DP, 0.0) * (total_s - HALF_S * n) / (total_j + HALF_J * n)
        high = 100.0 * (idle_w + HALF_3DP) * (total_s + HALF_S * n) / (total_j - HALF_J * n)
        if not within(share, low, high, HALF_3DP):
            problems.append(
                f"{where}.idle_share_pct: {share:g}, but {idle_w:g} W over its trials' "
                f"{total_s:.4f} s of {total_j:.4f} J is {100 * idle_w * total_s / total_j:.3f}%"
            )
    return problems


def headline_problems(res: Mapping[str, Any], per_format: Mapping[str, Any], fmt: str) -> list[str]:
    """The headline figures are the report's format's (and FP16's) per-format ones."""
    problems = []
    copies = (
        ("energy_per_token_mj", fmt, "energy_per_token_mj"),
        ("fp16_energy_per_token_mj", FP16, "energy_per_token_mj"),
        ("total_energy_joules", fmt, "total_energy_joules"),
        ("tokens_generated", fmt, "tokens_generated"),
        ("avg_power_watts", fmt, "avg_power_watts"),
        ("throughput_tokens_per_s", fmt, "throughput_tokens_per_s"),
    )
    for key, source_fmt, source in copies:
        stats = per_format.get(source_fmt)
        if not isinstance(stats, Mapping) or source not in stats:
            continue
        if res.get(key) != stats[source]:
            problems.append(
                f"$.results.{key}: {res.get(key)!r}, but per_format.{source_fmt}.{source} is "
                f"{stats[source]!r}"
            )
    return problems + _above_idle_delta(res, per_format, fmt)


def _above_idle_delta(res: Mapping[str, Any], per_format: Mapping[str, Any], fmt: str) -> list[str]:
    said = number(res.get("vs_fp16_above_idle_pct"))
    q = number((per_format.get(fmt) or {}).get("energy_above_idle_per_token_mj"))
    f = number((per_format.get(FP16) or {}).get("energy_above_idle_per_token_mj"))
    if said is None or q is None or f is None or f <= 0 or fmt == FP16:
        return []
    recomputed = 100.0 * (q - f) / f  # the writer divides the two rounded figures
    if not close(said, recomputed, HALF_3DP):
        return [
            f"$.results.vs_fp16_above_idle_pct: {said:g}, but per_format's energies above idle "
            f"give {recomputed:.3f}%"
        ]
    return []
