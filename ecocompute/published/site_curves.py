"""The published site's curves, as the site states them: data/site/curves.json.

The file is the site's own data (byte for byte; data/site/SOURCE.md says where from):
per arch class and format the fitted A, S, Nstar, the range it was fitted over, its
residual spread and anchors; the caps on the saving; which class borrows whose curve;
the FP16 energy anchors. Read here into the typed curves of curves.py, nothing else:
what a figure is made of is decided in figures.py.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ecocompute.published.curves import Anchors, DeltaCurve
from ecocompute.published.reference_data import packaged_json

SITE_FILE = "data/site/curves.json"
SITE_CURVES = "the published site's curves (quantenergy.tech, curves.json of 2026-12-01)"


def site_data() -> dict[str, Any]:
    return packaged_json(SITE_FILE)


@dataclass(frozen=True)
class CurvesFile:
    """A curves.json in the site's format: the packaged copy (packaged()) or one given
    (check --curves FILE|URL, read by curves_from_text). Its document stays inside: the
    functions below read it into typed curves."""

    where: str  # the file or URL it came from, in words
    document: Mapping[str, Any]


def packaged() -> CurvesFile:
    return CurvesFile(f"ecocompute/{SITE_FILE} ({SITE_CURVES})", site_data())


def curves_from_text(text: str, where: str) -> CurvesFile:
    """A curves.json given as text: the site's format, each curve's A, S, Nstar, n_min,
    n_max and resid_std finite numbers, anchors N and dE. A curve without n_min and
    n_max (the published container's check_regression reads none) is taken as fitted
    over its anchors' sizes, which is what the site's own n_min and n_max are. Raises
    ValueError saying what is wrong."""
    try:
        document = json.loads(text, parse_constant=_no_constant, parse_int=_int_or_inf)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise ValueError(f"{where} is not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("curves"), dict):
        raise ValueError(f"{where} is not a curves.json: no 'curves' object")
    for arch, by_format in document["curves"].items():
        if not isinstance(by_format, dict):
            raise ValueError(f"{where}: curves.{arch} is not an object")
        for fmt, entry in by_format.items():
            try:
                anchors = entry.get("anchors") or []
                sizes = [float(a["N"]) for a in anchors]
                if not all(math.isfinite(v) for v in sizes + [float(a["dE"]) for a in anchors]):
                    raise ValueError
                if sizes and "n_min" not in entry and "n_max" not in entry:
                    entry["n_min"], entry["n_max"] = min(sizes), max(sizes)
                for key in ("A", "S", "Nstar", "n_min", "n_max"):
                    if not math.isfinite(float(entry[key])):
                        raise ValueError
                spread = entry.get("resid_std")  # none: check's named default spread
                if float(entry["Nstar"]) <= 0 or (
                    spread is not None and not 0 <= float(spread) < math.inf
                ):
                    raise ValueError
            except (KeyError, TypeError, ValueError, AttributeError):
                raise ValueError(
                    f"{where}: curves.{arch}.{fmt} lacks a finite A, S, Nstar > 0, n_min, "
                    "n_max, resid_std >= 0 or an anchor's N and dE"
                ) from None
    _check_caps_and_anchors(document, where)
    return CurvesFile(where, document)


def _check_caps_and_anchors(document: Mapping[str, object], where: str) -> None:
    """s_cap: a finite bound >= 0 per format; borrow: the lending class's name per class;
    fp16_energy: each class's anchors of a size > 0, an energy and a card. Raises
    ValueError saying which is wrong."""
    caps = document.get("s_cap", {})
    if not isinstance(caps, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf
        for v in caps.values()
    ):
        raise ValueError(f"{where}: s_cap is not a finite bound >= 0 per format")
    borrow = document.get("borrow", {})
    if not isinstance(borrow, dict) or not all(isinstance(v, str) for v in borrow.values()):
        raise ValueError(f"{where}: borrow is not a class name per class")
    if selfish := sorted(k for k, v in borrow.items() if k == v):
        # its own measured curve would be called borrowed, and never graded
        raise ValueError(f"{where}: borrow lends {selfish[0]} its own curve")
    energy = document.get("fp16_energy", {})
    if not isinstance(energy, dict):
        raise ValueError(f"{where}: fp16_energy is not an object")
    for arch, entry in energy.items():
        try:
            for a in entry["anchors"]:
                n, e = float(a["N"]), float(a["e_j1k"])
                if not (0 < n < math.inf and 0 < e < math.inf) or not isinstance(a["gpu"], str):
                    raise ValueError
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError(
                f"{where}: fp16_energy.{arch} lacks anchors of a size N > 0, an energy "
                "e_j1k > 0 and a card (gpu)"
            ) from None


def _int_or_inf(text: str) -> int | float:
    """A JSON integer, or inf where no float holds it (400 digits): the checks refuse it
    as any number that is not finite, and no float() of it overflows after the read."""
    value = float(text)
    return int(text) if math.isfinite(value) else value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a curve holds")


def _data(curves: CurvesFile | None) -> Mapping[str, Any]:
    return site_data() if curves is None else curves.document


def borrowed_by_site(arch: str, curves: CurvesFile | None = None) -> str | None:
    """The class whose curve the site borrows for arch (hopper: ampere), or None."""
    lender = _data(curves).get("borrow", {}).get(arch)
    return str(lender) if lender else None


def _cards(gpus: list[str]) -> str:
    """ "RTX 4090 + RTX 4090D" from per-point names that may themselves join two."""
    return " + ".join(dict.fromkeys(name.strip() for gpu in gpus for name in gpu.split(" + ")))


def site_anchors(arch: str, curves: CurvesFile | None = None) -> Anchors | None:
    """The site's FP16 anchors of a class (its own only; never borrowed), or None."""
    entry = _data(curves).get("fp16_energy", {}).get(arch)
    if entry is None:
        return None
    rows = sorted(entry["anchors"], key=lambda a: float(a["N"]))
    return Anchors(
        arch=arch,
        card=_cards([str(a["gpu"]) for a in rows]),
        points=tuple((float(a["N"]), float(a["e_j1k"])) for a in rows),
        point_cards=tuple(str(a["gpu"]) for a in rows),
    )


def site_curve(arch: str, precision: str, curves: CurvesFile | None = None) -> DeltaCurve | None:
    """The site's fitted curve of a class's own measurements (never borrowed), or None."""
    entry = _data(curves).get("curves", {}).get(arch, {}).get(precision)
    if entry is None:
        return None
    cap = _data(curves).get("s_cap", {}).get(precision)
    return DeltaCurve(
        arch=arch,
        precision=precision,
        a_pct=float(entry["A"]),
        s_pct=float(entry["S"]),
        nstar_b=float(entry["Nstar"]),
        fitted_range_b=(float(entry["n_min"]), float(entry["n_max"])),
        s_cap_pct=None if cap is None else float(cap),
        resid_std_pct=None if entry.get("resid_std") is None else float(entry["resid_std"]),
        n_anchors=len(entry.get("anchors") or []),
    )


def curve_cards(curve: DeltaCurve, curves: CurvesFile | None = None) -> str | None:
    """The cards behind the anchors the site fitted this curve on ("RTX 4090" for Ada
    INT8, not its FP16 anchors' two cards), where it is the site's curve; else None."""
    site = site_curve(curve.arch, curve.precision, curves)
    shape = (curve.a_pct, curve.s_pct, curve.nstar_b)
    if site is None or (site.a_pct, site.s_pct, site.nstar_b) != shape:
        return None
    anchors = _data(curves)["curves"][curve.arch][curve.precision].get("anchors") or []
    return _cards([str(a.get("gpu", "?")) for a in anchors]) or None


@dataclass(frozen=True)
class SiteAnchorPoint:
    """One measured delta of the site's curve: dE% at N billion, on a card, n sessions."""

    params_b: float
    delta_pct: float
    gpu: str
    model: str
    n: int | None


@dataclass(frozen=True)
class AnchorFigure:
    """The site's figure at a size its dataset measured: the mean of the anchors there,
    and its band as the site's estimator gives it (its 95%: 1.96 sigma, sigma the larger
    of half the fit's residual spread, at least 1 pt, and half the anchors' spread; the
    low edge never below the cap on the saving)."""

    arch: str
    precision: str
    params_b: float
    points: tuple[SiteAnchorPoint, ...]
    mean_pct: float
    band_pct: tuple[float, float]


SITE_Z = 1.96  # the site's band: 1.96 sigma
SITE_MIN_RESID_PCT = 2.0  # the site never takes a fit's residual spread below 2 pts
SITE_SAME_SIZE_B = 1e-6  # a size the site treats as an anchor's


def site_anchor_figure(
    arch: str, precision: str, params_b: float, curves: CurvesFile | None = None
) -> AnchorFigure | None:
    """The site's figure where its dataset measured this class at this size (its own
    curve's anchors, never a borrowed one's), or None."""
    entry = _data(curves).get("curves", {}).get(arch, {}).get(precision)
    if entry is None:
        return None
    points = tuple(
        SiteAnchorPoint(
            params_b=float(a["N"]),
            delta_pct=float(a["dE"]),
            gpu=str(a.get("gpu", "?")),
            model=str(a.get("model", "?")),
            n=int(a["n"]) if isinstance(a.get("n"), int) else None,
        )
        for a in entry.get("anchors") or []
        if abs(float(a["N"]) - params_b) < SITE_SAME_SIZE_B
    )
    if not points:
        return None
    deltas = [pt.delta_pct for pt in points]
    mean = sum(deltas) / len(deltas)
    resid = max(float(entry.get("resid_std") or 0.0), SITE_MIN_RESID_PCT)
    sigma = max(resid * 0.5, (max(deltas) - min(deltas)) / 2.0)
    cap = _data(curves).get("s_cap", {}).get(precision)
    low = mean - SITE_Z * sigma
    if cap is not None:
        low = max(low, -float(cap))
    return AnchorFigure(arch, precision, params_b, points, mean, (low, mean + SITE_Z * sigma))
