"""The published EcoCompute anchors and fitted curves, and the estimate built from them.

The figures live in data/published_reference.json (with their DOIs); the two formulas
live here, once: log-log interpolation of the FP16 anchors, and the fitted delta curve
dE%(N) = A - S * x / (1 + x), x = N / Nstar. Anything that plots or checks against the
published curve calls these functions instead of repeating them.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ecocompute.precision import Precision

BASIS_INTERPOLATED = "interpolated"
BASIS_EXTRAPOLATED = "extrapolated"
BASIS_UNAVAILABLE = "unavailable"


@functools.lru_cache(maxsize=1)
def published() -> dict[str, Any]:
    """The published figures, as shipped in the package."""
    text = resources.files("ecocompute").joinpath("data/published_reference.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def dataset_dois() -> list[str]:
    return [source["doi"] for source in published()["sources"]]


def headline() -> dict[str, str]:
    """The published headline card: {"arch": ..., "card": ...}."""
    return dict(published()["headline"])


@dataclass(frozen=True)
class Anchors:
    arch: str
    card: str
    points: tuple[tuple[float, float], ...]  # (params_b, fp16 mJ per token), ascending

    @property
    def range_b(self) -> tuple[float, float]:
        return self.points[0][0], self.points[-1][0]

    def covers(self, params_b: float) -> bool:
        lo, hi = self.range_b
        return lo <= params_b <= hi

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
    arch: str
    precision: str
    a_pct: float
    s_pct: float
    nstar_b: float
    fitted_range_b: tuple[float, float]
    borrowed_from: str | None = None

    def delta_pct(self, params_b: float) -> float:
        """Energy per token vs FP16 in percent at params_b billion parameters."""
        return delta_pct(params_b, self.a_pct, self.s_pct, self.nstar_b)

    def covers(self, params_b: float) -> bool:
        lo, hi = self.fitted_range_b
        return lo <= params_b <= hi


def delta_pct(params_b: float, a_pct: float, s_pct: float, nstar_b: float) -> float:
    """dE%(N) = A - S * x / (1 + x), x = N / Nstar. Negative means quantization saves."""
    x = params_b / nstar_b
    return a_pct - s_pct * x / (1.0 + x)


def _source_arch(arch: str) -> tuple[str, str | None]:
    borrowed = published().get("borrowed_curves", {}).get(arch)
    return (borrowed["from"], arch) if borrowed else (arch, None)


def anchors_for(arch: str) -> Anchors | None:
    """FP16 anchors for an arch class (Hopper borrows Ampere's); None where none exist."""
    source, _ = _source_arch(arch)
    entry = published()["fp16_anchors_mj_per_token"].get(source)
    if entry is None:
        return None
    points = tuple(sorted((float(n), float(e)) for n, e in entry["points"]))
    return Anchors(arch=source, card=entry["card"], points=points)


def curve_for(arch: str, precision: str) -> DeltaCurve | None:
    """The fitted delta curve, or None where the dataset has none (never invented)."""
    source, borrower = _source_arch(arch)
    entry = published()["delta_curves_pct"].get(source, {}).get(precision)
    if entry is None:
        return None
    lo, hi = entry["fitted_range_b"]
    return DeltaCurve(
        arch=source,
        precision=precision,
        a_pct=float(entry["A"]),
        s_pct=float(entry["S"]),
        nstar_b=float(entry["Nstar"]),
        fitted_range_b=(float(lo), float(hi)),
        borrowed_from=source if borrower else None,
    )


@dataclass(frozen=True)
class PublishedFigure:
    """A figure derived from the published dataset. Never a measurement."""

    arch: str
    precision: str
    params_b: float
    basis: str
    fp16_energy_per_token_mj: float | None
    energy_per_token_mj: float | None
    vs_fp16_energy_pct: float | None
    reference_card: str | None
    note: str


def published_figure(arch: str, params_b: float, precision: str) -> PublishedFigure:
    """The published figure for one arch class, size and format."""
    anchors = anchors_for(arch)
    borrowed = published().get("borrowed_curves", {}).get(arch)

    def unavailable(why: str) -> PublishedFigure:
        return PublishedFigure(
            arch,
            precision,
            params_b,
            BASIS_UNAVAILABLE,
            None,
            None,
            None,
            anchors.card if anchors else None,
            why,
        )

    if anchors is None:
        return unavailable(
            f"the published dataset has no FP16 measurements for arch class '{arch}', "
            "so no figure is claimed"
        )
    curve = None
    if precision != Precision.FP16:
        curve = curve_for(arch, precision)
        if curve is None:
            return unavailable(
                f"the published dataset has no fitted {precision} curve for arch class "
                f"'{arch}', so no delta vs FP16 is claimed"
            )

    fp16_mj = anchors.energy_per_token_mj(params_b)
    inside = anchors.covers(params_b) and (curve is None or curve.covers(params_b))
    lo, hi = anchors.range_b
    parts = [
        f"FP16 {fp16_mj:.2f} mJ/token from the published {anchors.card} anchors "
        f"({lo:g}-{hi:g}B, log-log interpolation)"
    ]
    if curve is None:
        delta = 0.0
        quant_mj = fp16_mj
    else:
        delta = curve.delta_pct(params_b)
        quant_mj = fp16_mj * (1.0 + delta / 100.0)
        clo, chi = curve.fitted_range_b
        parts.append(
            f"{precision} {delta:+.1f}% from the fitted {curve.arch} curve "
            f"A={curve.a_pct:g}, S={curve.s_pct:g}, N*={curve.nstar_b:g}B "
            f"(fitted over {clo:g}-{chi:g}B)"
        )
    if borrowed:
        basis = BASIS_EXTRAPOLATED
        parts.append(
            f"arch '{arch}' has no measured curve: Ampere's ({anchors.card}) is borrowed, "
            "so this is an extrapolation to another architecture"
        )
    elif inside:
        basis = BASIS_INTERPOLATED
    else:
        basis = BASIS_EXTRAPOLATED
        parts.append(f"{params_b:g}B lies outside the measured range: extrapolated")
    return PublishedFigure(
        arch=arch,
        precision=precision,
        params_b=params_b,
        basis=basis,
        fp16_energy_per_token_mj=fp16_mj,
        energy_per_token_mj=quant_mj,
        vs_fp16_energy_pct=delta,
        reference_card=anchors.card,
        note="; ".join(parts),
    )
