"""Figures rounded as reports and tables write them; None stays None."""

from __future__ import annotations


def rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
