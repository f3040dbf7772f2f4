"""A measured trial's readings as the report's raw records (report/derive.py derives
the rest): its window, its GPUs' state over it, and with the phases apart its prefill
window."""

from __future__ import annotations

import dataclasses

from ecocompute.monitor.conditions import WindowConditions as Window
from ecocompute.monitor.meter import WindowReading
from ecocompute.report import derive
from ecocompute.report.inputs import WindowReadings
from ecocompute.report.results_model import Trial as TrialRecord
from ecocompute.report.results_model import WindowConditions
from ecocompute.task.trials import Trial


def _window(c: Window) -> WindowConditions:
    """A GPU's state over a window, as the report records it (its power limit aside:
    the GPU's own record holds that)."""
    fields = {
        k: list(v) if isinstance(v, tuple) else v  # its tuples as lists: strict otherwise
        for k, v in dataclasses.asdict(c).items()
        if k != "power_limit_w"
    }
    return WindowConditions.model_validate(fields, strict=True)


def _readings(r: WindowReading) -> WindowReadings:
    return {
        "duration_s": r.duration_s,
        "energy_joules": r.energy_j,
        "energy_source": "nvml_energy_counter" if r.counter_j is not None else "sampled_power",
        "counter_energy_joules": r.counter_j,
        "sampled_energy_joules": r.sampled_j,
        "samples": r.samples,
        "dropped_samples": r.dropped,
        "per_gpu_energy_joules": r.per_gpu_j,
    }


def trial_record(t: Trial, held: bool) -> TrialRecord:
    idle = None
    if held:
        idle = () if t.left_idle is None else t.left_idle.per_gpu_j
    return derive.trial(
        index=t.index,
        pair=t.pair,
        format=str(t.precision),  # type: ignore[arg-type]
        tokens=t.tokens,
        **_readings(t.reading),
        slot=t.slot,
        idle_gpus_energy_joules=idle,
        conditions=[_window(c) for c in t.reading.conditions],
        prefill=None
        if (p := t.prefill) is None
        else derive.prefill_window(
            prefills=p.prefills, prompt_tokens=p.prompt_tokens, **_readings(p.reading)
        ),
        compile=t.compile,
    )
