"""Pairs and their interval as a report writes them, for either view of a session
(the GPUs each model used, or every GPU held): each format's trial against its round's
FP16 trial, by an energy per token that the caller picks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.stats import CI_METHOD, DeltaEstimate, paired_deltas_pct
from ecocompute.task.trials import Trial, rounds_paired


def trials_by_format(trials: Sequence[Trial]) -> dict[Precision, list[Trial]]:
    by_format: dict[Precision, list[Trial]] = {}
    for t in trials:
        by_format.setdefault(t.precision, []).append(t)
    return by_format


def paired_records(
    trials: Sequence[Trial], precision: Precision, per_token: Callable[[Trial], float]
) -> tuple[list[dict[str, Any]], list[float]]:
    """The pair records (FP16 and the format's trial of the same round) and their
    percent deltas; none for FP16 alone."""
    if not precision.quantized:
        return [], []
    rounds = rounds_paired(trials, precision)
    f_vals = [per_token(f) for f, _ in rounds]
    q_vals = [per_token(q) for _, q in rounds]
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
    return pairs, deltas


def interval_fields(delta: DeltaEstimate | None) -> dict[str, Any]:
    """The interval's fields of a results block (all None without an estimate)."""
    return {
        "vs_fp16_ci95_pct": None
        if delta is None or delta.ci95_pct is None
        else [round(delta.ci95_pct[0], 3), round(delta.ci95_pct[1], 3)],
        "ci_method": None if delta is None else CI_METHOD,
        "n_pairs": None if delta is None else delta.n_pairs,
    }
