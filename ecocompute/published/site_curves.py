"""The published site's curves, as the site states them: data/site/curves.json.

The file is the site's own data (byte for byte; data/site/SOURCE.md says where from):
per arch class and format the fitted A, S, Nstar, the range it was fitted over, its
residual spread and anchors; the caps on the saving; which class borrows whose curve;
the FP16 energy anchors. Read here into the typed curves of curves.py, nothing else:
what a figure is made of is decided in figures.py.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from ecocompute.published.curves import Anchors, DeltaCurve

SITE_FILE = "data/site/curves.json"
SITE_CURVES = "the published site's curves (quantenergy.tech, curves.json of 2026-12-01)"


@functools.lru_cache(maxsize=1)
def site_data() -> dict[str, Any]:
    text = resources.files("ecocompute").joinpath(SITE_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def borrowed_by_site(arch: str) -> str | None:
    """The class whose curve the site borrows for arch (hopper: ampere), or None."""
    lender = site_data().get("borrow", {}).get(arch)
    return str(lender) if lender else None


def _cards(gpus: list[str]) -> str:
    """ "RTX 4090 + RTX 4090D" from per-point names that may themselves join two."""
    seen: dict[str, None] = {}
    for gpu in gpus:
        for name in gpu.split(" + "):
            seen.setdefault(name.strip(), None)
    return " + ".join(seen)


def site_anchors(arch: str) -> Anchors | None:
    """The site's FP16 anchors of a class (its own only; never borrowed), or None."""
    entry = site_data().get("fp16_energy", {}).get(arch)
    if entry is None:
        return None
    rows = sorted(entry["anchors"], key=lambda a: float(a["N"]))
    return Anchors(
        arch=arch,
        card=_cards([str(a["gpu"]) for a in rows]),
        points=tuple((float(a["N"]), float(a["e_j1k"])) for a in rows),
        point_cards=tuple(str(a["gpu"]) for a in rows),
    )


def site_curve(arch: str, precision: str) -> DeltaCurve | None:
    """The site's fitted curve of a class's own measurements (never borrowed), or None."""
    entry = site_data().get("curves", {}).get(arch, {}).get(precision)
    if entry is None:
        return None
    cap = site_data().get("s_cap", {}).get(precision)
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
