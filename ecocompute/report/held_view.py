"""The second view of a session whose formats occupy different GPUs: energy per token of
every GPU the session held (results.held_gpus), beside the headline's GPUs each model
used (results.per_format). Pure functions of the trials.

FP16 may span GPUs that a quantized copy leaves idle (a 70B model at FP16 over two
H200s, NF4 on one). Each trial read every GPU of the session over its own window: the
GPUs its format occupies (its energy, as in every report) and the ones it left idle,
held by the other formats' weights. Here a trial's energy is the sum of both: the
format that freed a GPU is charged that GPU's idle draw, as if it stayed in the
machine, powered, doing nothing. Pairs, interval and verdict are formed as the
headline's are: each format's trial against its round's FP16 trial.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.rounding import rounded
from ecocompute.core.stats import estimate_delta
from ecocompute.core.units import energy_per_token_mj
from ecocompute.report.pairing import interval_fields, paired_records
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.trials import Trial

USED_GPUS = "used_gpus"  # the summary's lead: the headline, the GPUs each model used
HELD_GPUS = "held_gpus"
DEFINITION = (
    "Energy per token of every GPU the session's models held (nvml_indices), over each "
    "trial's own window: the GPUs its format occupies plus those it left idle (held by "
    "the other formats' weights), all read by NVML in the same window. A format that "
    "needs fewer GPUs is charged the idle draw of the GPUs it freed, as if they stayed "
    "in the machine, powered, doing nothing. Pairs: each format's trial and its round's "
    "FP16 trial, as in the headline."
)
LEAD_REASON = (
    "The summary leads with the GPUs each model used: it is the report's headline, as "
    "in every report (comparable across reports, sweeps and aggregates), and the answer "
    "where a freed GPU serves other work or is not provisioned at all. This view is the "
    "conservative bound, for a freed GPU that stays powered and idle beside the model; "
    "where the two verdicts differ, the summary says so."
)


def held_trial_fields(t: Trial) -> dict[str, Any]:
    """A trial record's fields of this view (only in a report that has it)."""
    idle = () if t.left_idle is None else t.left_idle.per_gpu_j
    return {
        "held_energy_joules": round(t.held_energy_j, 4),
        "held_energy_per_token_mj": round(t.held_energy_per_token_mj, 3),
        "idle_gpus_energy_joules": [round(x, 4) for x in idle],
    }


def left_idle_of(trials: Sequence[Trial]) -> list[float]:
    """Joules of the GPUs each trial left idle (0 where it occupied them all)."""
    return [0.0 if t.left_idle is None else t.left_idle.energy_j for t in trials]


def held_format_stats(
    trials: Sequence[Trial], idle_gpus: Sequence[int], idle_by_gpu: Mapping[int, float] | None
) -> dict[str, Any]:
    """One format in this view: its trials' held energy, and the draw of the GPUs it
    left idle, during its trials and in the idle window."""
    idle_j = left_idle_of(trials)
    total_s = sum(t.reading.duration_s for t in trials)
    window_w = None
    if idle_by_gpu is not None and all(i in idle_by_gpu for i in idle_gpus):
        window_w = sum((idle_by_gpu[i] for i in idle_gpus), 0.0)
    return {
        "n_trials": len(trials),
        "idle_nvml_indices": list(idle_gpus),
        "energy_per_token_mj": rounded(
            statistics.fmean(t.held_energy_per_token_mj for t in trials)
        ),
        "total_energy_joules": rounded(sum(t.held_energy_j for t in trials)),
        "idle_gpus_energy_per_token_mj": rounded(
            statistics.fmean(
                energy_per_token_mj(j, t.tokens) for j, t in zip(idle_j, trials, strict=True)
            )
        ),
        "idle_gpus_power_watts": rounded(sum(idle_j) / total_s),
        "idle_gpus_idle_window_watts": rounded(window_w),
    }


def held_block(
    run: MeasuredRun, by_format: Mapping[Precision, Sequence[Trial]]
) -> dict[str, Any] | None:
    """results.held_gpus; None where every format occupies the same GPUs."""
    if not run.held_gpus:
        return None
    precision = run.params.precision
    idle_by_gpu = None if run.idle is None else run.idle.power_by_gpu_w()
    per_format = {
        fmt: held_format_stats(
            ts, [i for i in run.held_gpus if i not in run.format_gpus[fmt]], idle_by_gpu
        )
        for fmt, ts in by_format.items()
    }
    pairs, deltas = paired_records(run.trials, precision, lambda t: t.held_energy_per_token_mj)
    delta = estimate_delta(deltas) if deltas else None
    return {
        "nvml_indices": list(run.held_gpus),
        "definition": DEFINITION,
        "summary_leads_with": USED_GPUS,
        "summary_lead_reason": LEAD_REASON,
        "idle_window_watts_by_gpu": None
        if idle_by_gpu is None
        else {str(i): round(w, 3) for i, w in sorted(idle_by_gpu.items())},
        "per_format": per_format,
        "energy_per_token_mj": per_format[precision]["energy_per_token_mj"],
        "fp16_energy_per_token_mj": per_format[Precision.FP16]["energy_per_token_mj"],
        "vs_fp16_energy_pct": None if delta is None else round(delta.mean_pct, 3),
        **interval_fields(delta),
        "verdict": None if delta is None else delta.verdict,
        "pairs": pairs,
    }
