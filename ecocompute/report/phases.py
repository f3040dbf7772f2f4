"""The phases apart (--phases apart): each trial's prefill window and decode window, the
prefill's energy per prompt token, the decode's per generated token and the stated
workload's, each with its own paired delta, and the phase that decides the verdict."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ecocompute.core.stats import summarise
from ecocompute.report.inputs import Measured
from ecocompute.report.pairing import FP16, between_compiles, paired_figures, pairs_of
from ecocompute.report.results_model import (
    Format,
    PhaseFigure,
    PhaseFormat,
    Phases,
    Trial,
    WorkloadFigure,
)

PHASES_SCOPE = (
    "Each trial measured two windows, synchronized at both edges and read from the same "
    "counter: first its prefill window (prefills_per_window prefills of the prompt back "
    "to back, the last leaving the cache the decode continues from), then its decode "
    "window (the captured one-token steps alone). prefill: energy per prompt token "
    "(over every prefill of the window and every row); decode: energy per generated "
    "token of the decode window (the headline); workload: energy per generated token of "
    "one sequence of the stated prompt and new tokens, from the same trial's two figures. "
    "Pairs: each format's trial and its round's FP16 trial, in every phase. The prefill "
    "runs eagerly in the graphs and compiled regimes alike (neither captured nor "
    "compiled): only the decode window differs between them. The held-GPU view "
    "(results.held_gpus), where the formats occupy different GPUs, is the decode window's."
)
WORKLOAD_DEFINITION = (
    "per sequence: prompt_tokens x (prefill mJ per prompt token) + (new_tokens - 1) x "
    "(decode mJ per generated token), over new_tokens (the prefill yields the first new "
    "token, the decode steps the rest); each trial's own two figures, each round's pair"
)


def combined_mj_per_token(
    prefill_mj_per_prompt_token: float,
    decode_mj_per_token: float,
    prompt_tokens: int,
    new_tokens: int,
) -> float:
    """Energy per generated token of one sequence of prompt_tokens in and new_tokens out:
    the prefill yields the first new token, the decode steps the other new_tokens - 1."""
    if prompt_tokens < 1 or new_tokens < 1:
        raise ValueError("a workload has at least one prompt token and one new token")
    prefill = prompt_tokens * prefill_mj_per_prompt_token
    return (prefill + (new_tokens - 1) * decode_mj_per_token) / new_tokens


def _prefill_per_token(t: Trial) -> float | None:
    return None if t.prefill is None else t.prefill.energy_per_prompt_token_mj


def _phase_figure(
    m: Measured,
    formats: Mapping[Format, list[Trial]],
    per_token: Callable[[Trial], float | None],
    unit: str | None,
    rate: Callable[[list[Trial]], float | None] = lambda ts: None,
) -> PhaseFigure:
    per: dict[Format, PhaseFormat] = {}
    for fmt, trials in formats.items():
        values = [v for t in trials if (v := per_token(t)) is not None]
        s = summarise(values)
        counts = sorted({t.prefill.prefills for t in trials if t.prefill is not None})
        per[fmt] = PhaseFormat.model_construct(
            n_trials=len(values),
            energy_per_token_mj=s.mean,
            energy_per_token_mj_sd=s.sd,
            cv_pct=s.cv_pct,
            tokens_per_s=rate(trials),
            prefills_per_window=counts if per_token is _prefill_per_token else None,
        )
    quantized = m.precision != FP16
    pairs = pairs_of(m.trials, m.precision, per_token) if quantized else []
    # over --compiles N, pooled across compiles as the headline is: the decode phase is it
    compiles = between_compiles(m.trials, pairs, m.compiles_floor)
    return PhaseFigure.model_construct(unit=unit, per_format=per, **paired_figures(pairs, compiles))


def decided_by(
    prefill_diff_mj: float, decode_diff_mj: float
) -> tuple[str | None, float | None, str]:
    """Which phase decides the workload's verdict: the one carrying the larger share of
    its energy difference against FP16 (per sequence, mJ), that share, and the words."""
    total = abs(prefill_diff_mj) + abs(decode_diff_mj)
    if total == 0.0:
        return None, None, "the two phases spend the same as FP16's"
    phase = "prefill" if abs(prefill_diff_mj) > abs(decode_diff_mj) else "decode"
    share = 100.0 * abs(prefill_diff_mj) / total
    other = "decode" if phase == "prefill" else "prefill"
    agree = (prefill_diff_mj < 0) == (decode_diff_mj < 0)
    carried = share if phase == "prefill" else 100.0 - share
    if agree:
        words = (
            f"both phases point the same way; the {phase} carries {carried:.0f}% of the difference"
        )
    else:
        words = (
            f"the phases disagree; the {phase} outweighs the {other} "
            f"({carried:.0f}% of the difference)"
        )
    return phase, share, words


def phases_of(m: Measured, formats: Mapping[Format, list[Trial]]) -> Phases | None:
    """The phases apart: None where the trials hold no prefill window."""
    if m.prompt_tokens is None or m.new_tokens is None:
        return None
    if not m.trials or any(t.prefill is None for t in m.trials):
        return None
    p_in, n_out = m.prompt_tokens, m.new_tokens

    def workload(t: Trial) -> float | None:
        pre = _prefill_per_token(t)
        return (
            None if pre is None else combined_mj_per_token(pre, t.energy_per_token_mj, p_in, n_out)
        )

    def prefill_rate(ts: list[Trial]) -> float | None:
        windows = [t.prefill for t in ts if t.prefill is not None]
        seconds = math.fsum(w.duration_s for w in windows)
        return sum(w.prefills * w.prompt_tokens for w in windows) / seconds if seconds else None

    def decode_rate(ts: list[Trial]) -> float | None:
        return sum(t.tokens for t in ts) / math.fsum(t.duration_s for t in ts)

    prefill = _phase_figure(m, formats, _prefill_per_token, "mJ per prompt token", prefill_rate)
    decode = _phase_figure(
        m, formats, lambda t: t.energy_per_token_mj, "mJ per generated token", decode_rate
    )
    whole = _phase_figure(m, formats, workload, None)
    phase = share = None
    words = "FP16 alone: no difference to decide"
    if m.precision != FP16:
        pq, pf = prefill.per_format[m.precision], prefill.per_format[FP16]
        dq, df = decode.per_format[m.precision], decode.per_format[FP16]
        diff_prefill = p_in * (pq.energy_per_token_mj - pf.energy_per_token_mj)
        diff_decode = (n_out - 1) * (dq.energy_per_token_mj - df.energy_per_token_mj)
        phase, share, words = decided_by(diff_prefill, diff_decode)
    return Phases.model_construct(
        scope=PHASES_SCOPE,
        prefill=prefill,
        decode=decode,
        workload=WorkloadFigure.model_construct(
            **dict(whole, unit=f"mJ per generated token of {p_in} in, {n_out} out"),
            prompt_tokens=p_in,
            new_tokens=n_out,
            definition=WORKLOAD_DEFINITION,
            decided_by=phase,  # type: ignore[arg-type]
            prefill_share_of_difference_pct=share,
            decided_note=words,
        ),
    )
