"""The view of every GPU a session held (results.held_gpus) follows from the report's
trials (part of report/consistency.py's checks).

Its GPUs are GPUs the report lists, and include every format's own; each format's idle
GPUs are the held ones it does not occupy; each trial's held energy is its own plus its
idle GPUs' (one figure per idle GPU), and its held energy per token that over its
tokens; each format's figures in this view recompute from its trials (count, mean,
total, the idle GPUs' energy per token and power over its trials' durations, and their
power in the idle window, from the idle window's per-GPU figures, which add up to each
format's idle power and to the report's); its headline figures are its formats'; its
pairs, interval and verdict follow from the trials' held energy per token by the
headline's own checks (consistency_pairs.py). Trial fields of this view without the
view are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.consistency_formats import FP16, by_format
from ecocompute.report.consistency_pairs import pair_problems
from ecocompute.report.tolerance import (
    HALF_3DP,
    HALF_J,
    HALF_MJ,
    HALF_PCT,
    HALF_S,
    close,
    number,
    numbers_of,
    quotient_range,
    within,
)

WHERE = "$.results.held_gpus"
TRIAL_KEYS = ("held_energy_joules", "held_energy_per_token_mj", "idle_gpus_energy_joules")
Trials = Sequence[Mapping[str, Any]]


def held_problems(doc: Mapping[str, Any], res: Mapping[str, Any], precision: str) -> list[str]:
    trials = [t for t in res.get("trials") or [] if isinstance(t, Mapping)]
    held = res.get("held_gpus")
    if not isinstance(held, Mapping):
        return [
            f"$.results.trials[{k}].{key}: present, but the report has no results.held_gpus"
            for k, t in enumerate(trials)
            for key in TRIAL_KEYS
            if key in t
        ]
    if precision == FP16:
        return [f"{WHERE}: present, but FP16 alone holds one model on its GPUs"]
    per_format = res.get("per_format") or {}
    indices = [i for i in held.get("nvml_indices") or [] if isinstance(i, int)]
    problems = _gpus(doc, per_format, indices)
    idle_of = {
        fmt: [i for i in indices if i not in (stats.get("nvml_indices") or [])]
        for fmt, stats in per_format.items()
        if isinstance(stats, Mapping)
    }
    problems += _trials(trials, idle_of)
    problems += _formats(held, trials, idle_of)
    problems += _idle_window(held, res, per_format, indices)
    for key, fmt in (("energy_per_token_mj", precision), ("fp16_energy_per_token_mj", FP16)):
        source = (held.get("per_format") or {}).get(fmt) or {}
        if held.get(key) != source.get("energy_per_token_mj"):
            problems.append(
                f"{WHERE}.{key}: {held.get(key)!r}, but its per_format.{fmt}."
                f"energy_per_token_mj is {source.get('energy_per_token_mj')!r}"
            )
    return problems + pair_problems(
        doc,
        held,
        trials,
        precision,
        where=WHERE,
        trial_key="held_energy_per_token_mj",
        fields=[("vs_fp16_energy_pct", HALF_PCT)],
    )


def _gpus(doc: Mapping[str, Any], per_format: Mapping[str, Any], indices: list[int]) -> list[str]:
    sut = doc.get("system_under_test") or {}
    known = {g.get("nvml_index") for g in sut.get("gpus") or [] if isinstance(g, Mapping)}
    problems = []
    if known and not set(indices) <= known:
        problems.append(
            f"{WHERE}.nvml_indices: {indices}, but the report lists GPUs {sorted(known, key=str)}"
        )
    for fmt, stats in per_format.items():
        own = stats.get("nvml_indices") if isinstance(stats, Mapping) else None
        if isinstance(own, list) and not set(own) <= set(indices):
            problems.append(
                f"{WHERE}.nvml_indices: {indices}, but {fmt} occupies GPUs {own}, which the "
                "session held"
            )
    return problems


def _trials(trials: Trials, idle_of: Mapping[str, list[int]]) -> list[str]:
    """Each trial's held energy: its own plus one figure per GPU it left idle."""
    problems = []
    for k, t in enumerate(trials):
        where = f"$.results.trials[{k}]"
        missing = [key for key in TRIAL_KEYS if key not in t]
        if missing:
            problems.append(f"{where}.{missing[0]}: missing, but the report has held_gpus")
            continue
        idle = t["idle_gpus_energy_joules"]
        expected = idle_of.get(str(t.get("format")))
        values = [number(x) for x in idle] if isinstance(idle, list) else [None]
        if expected is not None and len(values) != len(expected):
            problems.append(
                f"{where}.idle_gpus_energy_joules: {len(values)} figure(s), but its format "
                f"left GPUs {expected} idle"
            )
            continue
        energy, held = number(t.get("energy_joules")), number(t["held_energy_joules"])
        if energy is None or held is None or None in values:
            continue
        summed = energy + math.fsum(v for v in values if v is not None)
        if not close(held, summed, HALF_J * (len(values) + 2)):
            problems.append(
                f"{where}.held_energy_joules: {held:g}, but its energy and its idle GPUs' "
                f"add up to {summed:.4f} J"
            )
        tokens, per_token = t.get("tokens"), number(t["held_energy_per_token_mj"])
        if isinstance(tokens, int) and tokens > 0 and per_token is not None:
            want = 1000.0 * held / tokens
            if not close(per_token, want, HALF_MJ + 1000.0 * HALF_J / tokens):
                problems.append(
                    f"{where}.held_energy_per_token_mj: {per_token:g}, but {held:g} J over "
                    f"{tokens} tokens is {want:.3f}"
                )
    return problems


def _formats(
    held: Mapping[str, Any], trials: Trials, idle_of: Mapping[str, list[int]]
) -> list[str]:
    """Each format's figures in this view, from its trials."""
    problems = []
    stats_of = held.get("per_format") or {}
    grouped = by_format(trials)
    if set(stats_of) != set(grouped):
        problems.append(
            f"{WHERE}.per_format: formats {sorted(stats_of)}, but its trials are of "
            f"{sorted(grouped)}"
        )
    for fmt, stats in stats_of.items():
        mine = grouped.get(fmt, [])
        where = f"{WHERE}.per_format.{fmt}"
        if not isinstance(stats, Mapping) or not mine:
            continue
        if stats.get("n_trials") != len(mine):
            problems.append(f"{where}.n_trials: {stats.get('n_trials')!r}, but {len(mine)} trials")
        if fmt in idle_of and stats.get("idle_nvml_indices") != idle_of[fmt]:
            problems.append(
                f"{where}.idle_nvml_indices: {stats.get('idle_nvml_indices')!r}, but the "
                f"session's GPUs it does not occupy are {idle_of[fmt]}"
            )
        problems += _sums(where, stats, mine)
    return problems


def _sums(where: str, stats: Mapping[str, Any], mine: Trials) -> list[str]:
    problems = []
    n = len(mine)
    per_token, joules = (
        numbers_of(mine, "held_energy_per_token_mj"),
        numbers_of(mine, "held_energy_joules"),
    )
    for key, values, combine, tolerance in (
        ("energy_per_token_mj", per_token, lambda v: math.fsum(v) / n, 2 * HALF_MJ),
        ("total_energy_joules", joules, math.fsum, HALF_MJ + HALF_J * n),
    ):
        said = number(stats.get(key))
        if said is not None and values is not None and not close(said, combine(values), tolerance):
            problems.append(f"{where}.{key}: {said:g}, but its trials give {combine(values):.3f}")
    idle = [t.get("idle_gpus_energy_joules") for t in mine]
    durations, tokens = numbers_of(mine, "duration_s"), [t.get("tokens") for t in mine]
    if not all(isinstance(x, list) for x in idle) or durations is None:
        return problems
    if not all(isinstance(c, int) and c > 0 for c in tokens):
        return problems
    count = max((len(x) for x in idle if isinstance(x, list)), default=0)
    idle_j = [math.fsum(number(v) or 0.0 for v in x) for x in idle if isinstance(x, list)]
    each = [1000.0 * j / c for j, c in zip(idle_j, tokens, strict=True) if isinstance(c, int)]
    said = number(stats.get("idle_gpus_energy_per_token_mj"))
    half = HALF_MJ + 1000.0 * HALF_J * max(count, 1) / min(c for c in tokens if isinstance(c, int))
    if said is not None and not close(said, math.fsum(each) / n, half):
        problems.append(
            f"{where}.idle_gpus_energy_per_token_mj: {said:g}, but its trials' idle GPUs give "
            f"{math.fsum(each) / n:.3f}"
        )
    watts = number(stats.get("idle_gpus_power_watts"))
    span = quotient_range(math.fsum(idle_j), HALF_J * count * n, math.fsum(durations), HALF_S * n)
    if watts is not None and span is not None and not within(watts, *span, HALF_3DP):
        problems.append(
            f"{where}.idle_gpus_power_watts: {watts:g}, but its trials' idle GPUs drew "
            f"{span[0]:.3f}..{span[1]:.3f} W"
        )
    return problems


def _idle_window(
    held: Mapping[str, Any],
    res: Mapping[str, Any],
    per_format: Mapping[str, Any],
    indices: list[int],
) -> list[str]:
    """The idle window's per-GPU power adds up to each format's and the report's idle
    power, and gives each format's idle GPUs' idle-window power."""
    by_gpu = held.get("idle_window_watts_by_gpu")
    stats_of = held.get("per_format") or {}
    if not isinstance(by_gpu, Mapping):
        return [
            f"{WHERE}.per_format.{fmt}.idle_gpus_idle_window_watts: {s.get('idle_gpus_idle_window_watts')!r}, but the report has no idle window"  # noqa: E501
            for fmt, s in stats_of.items()
            if isinstance(s, Mapping) and s.get("idle_gpus_idle_window_watts") is not None
        ]
    if sorted(by_gpu) != sorted(str(i) for i in indices):
        return [f"{WHERE}.idle_window_watts_by_gpu: GPUs {sorted(by_gpu)}, but it held {indices}"]
    watts = {int(k): number(v) for k, v in by_gpu.items()}
    problems = []
    checks: list[tuple[str, Any, list[int]]] = [
        ("$.results.idle_power_watts", res.get("idle_power_watts"), indices)
    ]
    for fmt, stats in per_format.items():
        if isinstance(stats, Mapping) and isinstance(stats.get("nvml_indices"), list):
            own = stats["nvml_indices"]
            checks.append(
                (f"$.results.per_format.{fmt}.idle_power_watts", stats.get("idle_power_watts"), own)
            )
            idle = [i for i in indices if i not in own]
            said = (stats_of.get(fmt) or {}).get("idle_gpus_idle_window_watts")
            checks.append((f"{WHERE}.per_format.{fmt}.idle_gpus_idle_window_watts", said, idle))
    for where, said, gpus in checks:
        value = number(said)
        parts = [watts.get(i) for i in gpus]
        if value is None or None in parts:
            continue
        total = math.fsum(p for p in parts if p is not None)
        if not close(value, total, HALF_3DP * (len(gpus) + 1)):
            problems.append(
                f"{where}: {value:g}, but the idle window's GPUs {gpus} drew {total:.3f} W"
            )
    return problems
