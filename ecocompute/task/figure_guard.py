"""A published-path figure must be a possible one before it becomes a report.

The reference curves are fitted over a range of sizes and extended beyond it. Far
enough out, an extension can stop describing anything physical: a delta curve below
-100% (a negative energy per token; the site's curves are capped above that, at -75%
for NF4 and -50% for INT8, but a curve without a cap is not), or FP16 anchors extended
far beyond their sizes towards an absurd energy. Such a figure comes from the user's
--params_b, not from a fault of the run: bad input, exit 2, naming the field.
"""

from __future__ import annotations

import math

from ecocompute.core.limits import MAX_MAGNITUDE
from ecocompute.errors import InputError
from ecocompute.published.figures import PublishedFigure


def check_possible(figure: PublishedFigure, params_b: float) -> None:
    """Raises InputError (params_b) when the figure's energies are not finite,
    negative or absurdly large."""
    energies = {
        "FP16": figure.fp16_energy_per_token_mj,
        figure.precision: figure.energy_per_token_mj,
    }
    for label, energy_mj in energies.items():
        if energy_mj is None:
            continue
        if not math.isfinite(energy_mj) or energy_mj < 0 or energy_mj > MAX_MAGNITUDE:
            delta = figure.vs_fp16_energy_pct
            shown = f"{energy_mj:.4g} mJ/token" + (
                f" ({delta:+.1f}% vs FP16)" if delta is not None and label != "FP16" else ""
            )
            raise InputError(
                "params_b",
                params_b,
                f"is beyond where the published {figure.arch} figures can be extended: at "
                f"this size they give {label} {shown}, not a possible energy; no figure "
                "can be claimed for it",
            )
