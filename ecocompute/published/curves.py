"""The two formulas of the reference figures, once, and the typed curves they run on.

- FP16 energy per token between measured anchors: linear in log(params)-log(energy),
  the nearest segment extended outside the measured range;
- the fitted delta of a quantized format vs FP16:
  dE%(N) = A - S * x / (1 + x), x = N / Nstar, N in billions of parameters, with the
  site's cap: never below -s_cap (its bound on what fewer weight bytes can save).

Anything that plots, checks or fits against a curve calls these instead of repeating them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ORIGIN_PUBLISHED = "published"
ORIGIN_PROJECT = "project"


def delta_pct(params_b: float, a_pct: float, s_pct: float, nstar_b: float) -> float:
    """dE%(N) = A - S * x / (1 + x), x = N / Nstar. Negative means quantization saves."""
    x = params_b / nstar_b
    return a_pct - s_pct * x / (1.0 + x)


@dataclass(frozen=True)
class Anchors:
    """FP16 energy per token measured at a few sizes of one arch class."""

    arch: str
    card: str  # every card behind the anchors, e.g. "RTX 4090 + RTX 4090D"
    points: tuple[tuple[float, float], ...]  # (params_b, fp16 mJ per token), ascending
    origin: str = ORIGIN_PUBLISHED
    # the cards behind each point (same order as points); empty: card for every point
    point_cards: tuple[str, ...] = ()

    @property
    def range_b(self) -> tuple[float, float]:
        return self.points[0][0], self.points[-1][0]

    def covers(self, params_b: float) -> bool:
        lo, hi = self.range_b
        return lo <= params_b <= hi

    def card_at(self, i: int) -> str:
        return self.point_cards[i] if self.point_cards else self.card

    def energy_per_token_mj(self, params_b: float) -> float:
        """FP16 mJ/token by linear interpolation in log(params)-log(energy).

        Outside the measured range the nearest segment is extended (extrapolation);
        the caller labels that via covers().
        """
        if params_b <= 0:
            raise ValueError(f"params_b must be positive, got {params_b}")
        pts = self.points
        if len(pts) == 1:
            return pts[0][1]
        i = 0
        while i < len(pts) - 2 and params_b > pts[i + 1][0]:
            i += 1
        (n0, e0), (n1, e1) = pts[i], pts[i + 1]
        slope = (math.log(e1) - math.log(e0)) / (math.log(n1) - math.log(n0))
        return math.exp(math.log(e0) + slope * (math.log(params_b) - math.log(n0)))


@dataclass(frozen=True)
class DeltaCurve:
    """A fitted delta curve: the site's (published) or this project's own."""

    arch: str
    precision: str
    a_pct: float
    s_pct: float
    nstar_b: float
    fitted_range_b: tuple[float, float]
    borrowed_from: str | None = None
    origin: str = ORIGIN_PUBLISHED
    used_up_to_b: float | None = None  # not used above this size (None: used everywhere)
    s_cap_pct: float | None = None  # the delta never goes below -s_cap (None: no cap)
    resid_std_pct: float | None = None  # the fit's residual spread, as its source gives it
    n_anchors: int = 0  # the measured points the fit was made on

    def delta_pct(self, params_b: float) -> float:
        """Energy per token vs FP16 in percent at params_b billion parameters."""
        value = delta_pct(params_b, self.a_pct, self.s_pct, self.nstar_b)
        return value if self.s_cap_pct is None else max(value, -self.s_cap_pct)

    def covers(self, params_b: float) -> bool:
        lo, hi = self.fitted_range_b
        return lo <= params_b <= hi

    def usable_at(self, params_b: float) -> bool:
        return self.used_up_to_b is None or params_b <= self.used_up_to_b

    def capped_at(self, params_b: float) -> bool:
        """Whether the cap, not the formula, gives the figure at this size."""
        raw = delta_pct(params_b, self.a_pct, self.s_pct, self.nstar_b)
        return self.s_cap_pct is not None and raw < -self.s_cap_pct
