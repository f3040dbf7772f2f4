"""Seconds a measured run spent per stage, on the host's monotonic clock, outside every
measured window: what a session costs in GPU time."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    load_s: float  # loading (and quantizing) the models; 0 for models reused
    prepare_s: float  # preparing the regimes (compile, capture and token check)
    measure_s: float  # idle window, warm-ups and every round
    reused_models: bool  # the models were already resident (a sweep's earlier point)


class Stopwatch:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"load": 0.0, "prepare": 0.0, "measure": 0.0}
        self.reused = False

    def add(self, stage: str, since: float) -> None:
        self.seconds[stage] += time.monotonic() - since

    def timing(self) -> Timing:
        s = self.seconds
        return Timing(s["load"], s["prepare"], s["measure"], self.reused)
