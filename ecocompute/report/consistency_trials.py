"""Each trial of a measured report agrees with itself, and the trials with the figures
the report sums from them (part of report/consistency.py's checks).

Per trial: positive energy; its tokens as the protocol asks; energy per token, average
power and throughput equal to energy over tokens, energy over duration and tokens over
duration; its energy is its counter's (or, without a counter, its samples'); the
sampled-vs-counter percentage follows from the two; its per-GPU energies are one per
GPU its format occupies, adding up to its energy. Across trials: no index twice, no
round that repeats another round's measurement (a round copied and re-indexed to
inflate n: real windows never coincide to a tenth of a millisecond and of a
millijoule in every figure), and the report's dropped-sample total and sampled-vs-
counter summary are its trials'.
"""

from __future__ import annotations

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
    pct_range,
    quotient_range,
    within,
)

COUNTER = "nvml_energy_counter"
SAMPLED = "sampled_power"
_NOT_MEASURED = ("index", "pair")  # what a copied round may change


def trial_problems(
    trials: Sequence[Mapping[str, Any]],
    doc: Mapping[str, Any],
    gpus_of: Mapping[str, list[Any]],
) -> list[str]:
    """gpus_of: each format's NVML indices (per_format.<fmt>.nvml_indices), where known."""
    work = doc.get("workload") or {}
    new_tokens, batch = work.get("max_new_tokens"), work.get("batch_size")
    expected = (
        new_tokens * batch if isinstance(new_tokens, int) and isinstance(batch, int) else None
    )
    count = (doc.get("system_under_test") or {}).get("accelerator_count")
    problems = []
    indices = [t.get("index") for t in trials]
    if len(set(map(str, indices))) != len(indices):
        problems.append("$.results.trials: two trials share an index")
    for k, t in enumerate(trials):
        where = f"$.results.trials[{k}]"
        problems += _energy(where, t, expected, new_tokens, batch)
        problems += _rates(where, t)
        problems += _sources(where, t)
        problems += _per_gpu(where, t, gpus_of.get(str(t.get("format"))), count)
    problems += _repeated_rounds(trials)
    return problems + _totals(trials, doc.get("results") or {})


def _energy(
    where: str, t: Mapping[str, Any], expected: int | None, new_tokens: Any, batch: Any
) -> list[str]:
    energy_j, tokens = number(t.get("energy_joules")), t.get("tokens")
    per_token = number(t.get("energy_per_token_mj"))
    if energy_j is None or per_token is None or not isinstance(tokens, int) or tokens < 1:
        return []
    problems = []
    if energy_j <= 0:
        problems.append(
            f"{where}.energy_joules: {energy_j:g} J, but a GPU decoding tokens draws power"
        )
    if expected is not None and tokens != expected:
        problems.append(
            f"{where}.tokens: {tokens}, but the workload generates {new_tokens} new tokens "
            f"x batch {batch} = {expected} per trial"
        )
    if not close(per_token, 1000.0 * energy_j / tokens, HALF_MJ + 1000.0 * HALF_J / tokens):
        problems.append(
            f"{where}.energy_per_token_mj: {per_token:g}, but {energy_j:g} J over {tokens} "
            f"tokens is {1000.0 * energy_j / tokens:.3f} mJ/token"
        )
    return problems


def _rates(where: str, t: Mapping[str, Any]) -> list[str]:
    """Average power and throughput over the trial's own duration."""
    energy_j, duration_s = number(t.get("energy_joules")), number(t.get("duration_s"))
    tokens = number(t.get("tokens"))
    if energy_j is None or duration_s is None:
        return []
    problems = []
    checks = (
        ("avg_power_watts", energy_j, HALF_J, "W from its energy over its duration"),
        ("throughput_tokens_per_s", tokens, 0.0, "tokens/s from its tokens over its duration"),
    )
    for key, numerator, half, words in checks:
        value = number(t.get(key))
        span = None if numerator is None else quotient_range(numerator, half, duration_s, HALF_S)
        if value is not None and span is not None and not within(value, *span, HALF_3DP):
            problems.append(
                f"{where}.{key}: {value:g}, but it is {span[0]:.3f}..{span[1]:.3f} {words}"
            )
    return problems


def _sources(where: str, t: Mapping[str, Any]) -> list[str]:
    """The trial's energy is its counter's (else its samples'), and the sampled-vs-
    counter percentage is the two's."""
    energy_j = number(t.get("energy_joules"))
    counter, sampled = (
        number(t.get("counter_energy_joules")),
        number(t.get("sampled_energy_joules")),
    )
    source = t.get("energy_source")
    problems = []
    primary = counter if source == COUNTER else sampled if source == SAMPLED else None
    if energy_j is not None and primary is not None and not close(energy_j, primary, 0.0):
        problems.append(
            f"{where}.energy_joules: {energy_j:g}, but its {source} reads {primary:g} J"
        )
    if source == SAMPLED and counter is not None:
        problems.append(f"{where}.counter_energy_joules: {counter:g}, but it has no counter")
    pct = number(t.get("sampled_vs_counter_pct"))
    if pct is not None and counter is not None and sampled is not None and counter > HALF_J:
        low, high = pct_range(sampled, counter, HALF_J)
        if not within(pct, low, high, HALF_3DP):
            problems.append(
                f"{where}.sampled_vs_counter_pct: {pct:g}, but its sampled {sampled:g} J vs "
                f"counter {counter:g} J is {100 * (sampled / counter - 1):.3f}%"
            )
    return problems


def _per_gpu(where: str, t: Mapping[str, Any], gpus: list[Any] | None, count: Any) -> list[str]:
    per_gpu = t.get("per_gpu_energy_joules")
    energy_j = number(t.get("energy_joules"))
    if not isinstance(per_gpu, list) or not per_gpu:
        return []
    problems = []
    values = [number(x) for x in per_gpu]
    if energy_j is not None and None not in values:
        total = sum(x for x in values if x is not None)
        if not close(total, energy_j, HALF_J * (len(per_gpu) + 1)):
            problems.append(
                f"{where}.per_gpu_energy_joules: add up to {total:.4f} J, the trial says "
                f"{energy_j:g} J"
            )
    if isinstance(gpus, list) and len(per_gpu) != len(gpus):
        problems.append(
            f"{where}.per_gpu_energy_joules: {len(per_gpu)} GPU(s), but its format occupies "
            f"{len(gpus)} ({gpus})"
        )
    elif isinstance(count, int) and len(per_gpu) > count:
        problems.append(
            f"{where}.per_gpu_energy_joules: {len(per_gpu)} GPU(s), but the report has {count}"
        )
    return problems


def _measurement_of(t: Mapping[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in t.items() if k not in _NOT_MEASURED))


def _repeated_rounds(trials: Sequence[Mapping[str, Any]]) -> list[str]:
    """A round (the trials of one pair) whose every trial repeats another round's."""
    rounds: dict[str, list[str]] = {}
    for t in trials:
        if t.get("pair") is not None:
            rounds.setdefault(str(t.get("pair")), []).append(_measurement_of(t))
    seen: dict[tuple[str, ...], str] = {}
    problems = []
    for pair, measured in rounds.items():
        key = tuple(sorted(measured))
        if key in seen:
            problems.append(
                f"$.results.trials: round {pair} repeats round {seen[key]} figure for figure "
                "(a round counted twice)"
            )
        else:
            seen[key] = pair
    return problems


def _totals(trials: Sequence[Mapping[str, Any]], res: Mapping[str, Any]) -> list[str]:
    """The report's dropped samples and sampled-vs-counter summary are its trials'."""
    problems = []
    dropped = [d for t in trials if isinstance(d := t.get("dropped_samples"), int)]
    total = res.get("dropped_samples")
    if isinstance(total, int) and len(dropped) == len(trials) and total != sum(dropped):
        problems.append(
            f"$.results.dropped_samples: {total}, but its trials dropped {sum(dropped)}"
        )
    known = [number(t.get("sampled_vs_counter_pct")) for t in trials]
    pcts = [x for x in known if x is not None]
    for key, value, half in (
        ("sampled_vs_counter_pct", statistics.fmean(pcts) if pcts else None, 2 * HALF_3DP),
        ("sampled_vs_counter_max_abs_pct", max(map(abs, pcts)) if pcts else None, 2 * HALF_3DP),
    ):
        said = number(res.get(key))
        if said is not None and value is not None and not close(said, value, half):
            problems.append(f"$.results.{key}: {said:g}, but its trials give {value:.3f}")
        if said is not None and value is None and trials:
            problems.append(f"$.results.{key}: {said:g}, but no trial compares the two")
    return problems
